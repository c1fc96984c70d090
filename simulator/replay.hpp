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
    double jitter = 0;  ///< relative std of a GPU's compute time per iteration
    std::vector<SlowNode> slow_nodes;
    Granularity granularity = Granularity::step;  ///< step or coarse
    NetworkModel network_model = NetworkModel::cm02;
    Topology topology;
    double cycle_time_s = kHorovodCycleTimeS;
    double fusion_threshold_bytes = kDefaultFusionThresholdBytes;
    double data_s = 0;  ///< input pipeline time per batch (eq. D1)
    /// The step before the first iteration, as if the run were already under way: the first batch
    /// is ready when eq. I1 would have it after such a step (0: the loader starts with the GPUs,
    /// and the first iteration waits a whole data_s).
    double lead_step_s = 0;
    std::string timeline_path;
    /// Called when GPU 0 finishes the compute of iteration `iteration` (0-based); may be empty.
    std::function<void(int iteration)> on_iteration;
};

/// Stack of each SimGrid actor, in KiB (SimGrid's default is 8 MiB of address space per actor, too
/// much for 4,096 GPU actors; ours keep little on the stack).
inline constexpr int kActorStackKiB = 256;

/// The SimGrid actors a simulation of `scenario` creates, at most: one per GPU; for parameter
/// servers two per worker node (its worker and its pull receiver) and two per server (coarse: its
/// server and its pull; step: one), else one communicator.
long actors_of(const ResolvedScenario& scenario);

/// Point-to-point transfers of one bucket's collective at step granularity (to choose the
/// granularity); for parameter servers, of one release (intra-node rings, pushes and pulls).
long step_transfers_per_bucket(const ResolvedScenario& scenario);

/// Transfers one iteration simulates at `granularity` (step or coarse), at most about: buckets (one
/// per backward segment of `plan` that publishes gradients, plus the gradients' cuts at the fusion
/// size; or parameter-server releases, one per backward segment) times the transfers of each. For
/// simulate()'s estimate of its own cost, which must not fall short of it.
double transfers_per_iteration(const ResolvedScenario& scenario, const ReplayPlan& plan, Granularity granularity);

/// One flow of the coarse parameter-server form: worker node `node` pushes `fraction` of each of
/// its releases to server `server`, which sends the same fraction of each aggregated range back.
struct PsFlow {
    int node = 0;
    int server = 0;
    double fraction = 0;
};

/// The coarse form's flows (docs/model.md, "Simulation"): instead of one message per (node, server)
/// pair, at most nodes + servers - 1 flows that load every NIC as the pairs do. Co-located
/// (servers == nodes): node n sends its (M-1)/M off-host share to node n+1. Dedicated servers: the
/// north-west-corner rule splits each node's bytes over consecutive servers so that each server
/// takes nodes/servers of a node's bytes. Each node's fractions sum to its off-host share, each
/// server's to its share of the nodes' bytes.
std::vector<PsFlow> coarse_ps_flows(int nodes, int servers, bool colocated);

/// Run the simulation in this process (creates the Engine; once per process).
SimulationResult run_simulation(const RunInput& input);

}  // namespace epochcast::sim
