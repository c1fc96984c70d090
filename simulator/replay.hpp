// The simulation proper, run inside the child process that simulate() forks (simulation.hpp says
// why): it creates SimGrid's Engine, so it may run at most once per process.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/cost_model.hpp"
#include "simulator/replay_plan.hpp"
#include "simulator/simulation.hpp"

namespace epochcast::sim {

/// Everything one run needs, all checked and resolved (no automatic granularity, no unset option).
struct RunInput {
    ResolvedScenario scenario;
    ReplayPlan plan;
    int iterations = 1;
    std::uint64_t seed = 1;
    double jitter = 0;                   ///< relative std of a GPU's compute time per iteration
    std::vector<SlowNode> slow_nodes;
    Granularity granularity = Granularity::step;  ///< step or coarse
    NetworkModel network_model = NetworkModel::cm02;
    Topology topology;
    double cycle_time_s = kHorovodCycleTimeS;
    double fusion_threshold_bytes = kDefaultFusionThresholdBytes;
    double data_s = 0;                   ///< input pipeline time per batch (eq. D1)
    std::string timeline_path;
    /// Called when GPU 0 finishes the compute of iteration `iteration` (0-based); may be empty.
    std::function<void(int iteration)> on_iteration;
};

/// Point-to-point transfers of one bucket's collective at step granularity (to choose the granularity).
long step_transfers_per_bucket(const ResolvedScenario& scenario);

/// Run the simulation in this process (creates the Engine; once per process).
SimulationResult run_simulation(const RunInput& input);

}  // namespace epochcast::sim
