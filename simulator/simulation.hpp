// Discrete-event simulation of data-parallel training with SimGrid (issue 4): the platform is
// built from the catalog, one actor per worker GPU replays the forward pass and the backward pass
// layer by layer, releasing gradients that a collective (ring, hierarchical, tree all-reduce or
// parameter-server push/pull) carries while the rest of the backward pass runs. Where the closed
// form of model/ stops (stragglers, named slow nodes, contention) the simulation takes over.
// docs/model.md, section "Simulation", derives what is simulated and how it compares with predict.
//
// SimGrid's Engine is a process-wide singleton in 3.32 and cannot be re-created (a second Engine
// keeps the first one's clock and refuses configuration), so every call runs its simulation in a
// forked child process and reads the result back through a pipe: the function can be called any
// number of times in one process, and the child's peak memory is measured by the kernel.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/cost_model.hpp"
#include "model/errors.hpp"

namespace epochcast::sim {

/// The caller asked a running simulation to stop (SimulationOptions::cancel); its child process
/// was killed and nothing was written.
class SimulationCancelled : public RunError {
public:
    SimulationCancelled() : RunError("the simulation was cancelled") {}
};

/// HOROVOD_CYCLE_TIME before Horovod 0.21, the seeds' era: every 5 ms the background thread fuses
/// the gradients all ranks have ready (0.21.0 changed the default to 1 ms, release notes #2468).
inline constexpr double kHorovodCycleTimeS = 0.005;

/// The fusion cycle a framework runs its all-reduce on: Horovod's background loop (TensorFlow
/// and MXNet over Horovod) every kHorovodCycleTimeS; PyTorch's DistributedDataParallel and
/// epochcast's executor start a bucket's all-reduce as soon as it is full, with no cycle (0).
double framework_cycle_time_s(Framework framework);

/// Step-granularity collectives are simulated when their point-to-point transfers per bucket stay
/// under this count; above it the coarse form runs (docs/model.md, "Simulation"). Chosen so that
/// 256 GPUs (32 nodes, hierarchical) simulate step by step and 1,024 GPUs coarsely.
inline constexpr long kStepTransfersBudget = 20000;

/// Parameter servers: the step (per-pair) form runs where one release's transfers (intra-node ring
/// rounds, a push and a pull per (node, server) pair) stay under this count; above it the coarse
/// form runs (docs/model.md, "Simulation"). Lower than the all-reduce's budget because SimGrid
/// keeps each actor's detached messages in a list it scans on every completion, so the per-pair
/// form's cost grows with the square of the pairs: 128 GPUs co-located (1,408) run per pair,
/// 256 GPUs (3,840: 2.3 to 4.7 s per iteration per pair, 0.12 s coarse) coarsely.
inline constexpr long kPsStepTransfersBudget = 2000;

/// How finely a collective is simulated.
enum class Granularity {
    automatic,  ///< step where the transfers stay under the budget above, else coarse
    step,       ///< every ring step is a round of transfers (2(n-1) rounds of S/n bytes); parameter
                ///< servers: a push and a pull per (node, server) pair and release
    coarse,     ///< one transfer per rank per phase carrying the phase's bytes, plus its latencies;
                ///< parameter servers: at most nodes + servers - 1 push and pull flows per release
};
std::string_view to_string(Granularity granularity);
Granularity parse_granularity(std::string_view text, std::string_view what = "granularity");

/// SimGrid's network model (docs/model.md, "Simulation").
enum class NetworkModel {
    cm02,  ///< Casanova and Marchal 2002 max-min sharing; with TCP-gamma and cross-traffic off a
           ///< transfer takes latency + bytes / bandwidth, the alpha-beta form of model/ (default)
    lv08,  ///< Velho and Legrand 2009: TCP's RTT-unfair sharing and its bandwidth (0.97) and latency
           ///< (13.01) factors; for contention between flows of different RTTs
};
std::string_view to_string(NetworkModel model);
NetworkModel parse_network_model(std::string_view text, std::string_view what = "network model");

/// How the nodes' NICs reach each other.
enum class TopologyKind {
    star,      ///< one non-blocking switch (the default; what the closed form assumes)
    fat_tree,  ///< two-level leaf-spine tree: racks of `rack_nodes` leaves, each rack's uplink
               ///< aggregated into one link of (its leaves' NIC bandwidth) / oversubscription
};
std::string_view to_string(TopologyKind kind);
TopologyKind parse_topology(std::string_view text, std::string_view what = "--topology");

struct Topology {
    TopologyKind kind = TopologyKind::star;
    int rack_nodes = 16;          ///< leaves (worker nodes, then servers) per rack, >= 1
    double oversubscription = 1;  ///< rack uplink = sum of its NICs / this, >= 1
};

/// A worker node whose GPUs are slower than the rest.
struct SlowNode {
    int node = 0;         ///< worker node index, 0-based
    double factor = 1.0;  ///< its compute time is multiplied by this (1.5 = 50% slower), 1 to kMaxSlowNodeFactor
};

/// Limits of the simulation's options (simulate() refuses values outside them with an InputError
/// naming the flag). Every figure out stays finite inside them.
inline constexpr int kMaxIterations = 1000000;          ///< a full training run of one small node
inline constexpr double kMaxJitter = 1.0;               ///< a coefficient of variation; draws clamp at 0.1
inline constexpr double kMaxSlowNodeFactor = 100.0;     ///< a GPU 100 times slower is a failed one
inline constexpr double kMaxCycleTimeS = 1.0;           ///< Horovod's cycle is 1 to 5 ms
inline constexpr double kMaxOversubscription = 1000.0;  ///< rack uplink at least a thousandth of its NICs

/// The most GPUs simulate() takes: each GPU is an actor whose stack is two memory mappings, and
/// Linux allows 65,530 per process by default (32,768 GPUs aborted after 3 minutes).
inline constexpr long kMaxSimulatedGpus = 16384;
/// simulate() refuses a run whose estimated wall time (estimated_wall_s) exceeds this, in seconds.
inline constexpr double kMaxEstimatedWallS = 3600;

/// --iterations as typed (a number, perhaps "1e3"): throws InputError unless it is a whole number
/// from 1 to kMaxIterations.
int checked_iterations(double iterations);

/// Parse "INDEX:FACTOR" (e.g. "3:1.5"); throws InputError naming `what`.
SlowNode parse_slow_node(std::string_view text, std::string_view what = "--slow-node");

struct SimulationOptions {
    int iterations = 10;               ///< iterations simulated, 1 to kMaxIterations
    std::uint64_t seed = 1;            ///< seed of the jitter draws (std::mt19937_64)
    std::optional<double> jitter;      ///< relative std of one GPU's compute time per iteration, 0 to kMaxJitter;
                                       ///< unset: the calibration's framework sync_jitter
    std::vector<SlowNode> slow_nodes;  ///< named slow nodes
    std::optional<double> overlap;     ///< fraction of the backward pass (at its end) during which
                                       ///< gradients may be communicated, 0..1; unset: the calibration's
    Granularity granularity = Granularity::automatic;
    NetworkModel network_model = NetworkModel::cm02;
    Topology topology;  ///< star (default) or fat-tree
    /// All-reduce fusion cycle, in seconds (0 to kMaxCycleTimeS); unset: the framework's (cycle_time_s below).
    std::optional<double> cycle_time_s;
    std::string timeline_path;  ///< write a Chrome trace-event timeline here ("" for none)

    /// Called in the calling thread while the simulation runs, each time GPU 0 finishes the
    /// compute of one more iteration: (iterations done, iterations in all). May be empty.
    std::function<void(int done, int total)> on_progress;
    /// Called in the calling thread once the simulation's child process has been forked, before
    /// any progress: the place to start a thread (a progress printer). A thread started before the
    /// fork could hold an allocator lock the child then waits on forever (seen under ASan, whose
    /// allocator is not fork-safe). May be empty.
    std::function<void()> on_child_started;
    /// When set and it turns true, the child process is killed within about 50 ms and simulate()
    /// throws SimulationCancelled. May be null.
    const std::atomic<bool>* cancel = nullptr;
};

/// Summary statistics of the simulated iteration times, in seconds.
struct Distribution {
    double mean = 0, stdev = 0, min = 0, p50 = 0, p95 = 0, max = 0;
};
Distribution describe(const std::vector<double>& samples);

/// What one simulation measured. Times are means over GPUs and iterations, in seconds.
struct SimulationResult {
    std::vector<double> iteration_s;     ///< per iteration: end of its synchronisation minus the previous one's
    double compute_s = 0;                ///< forward + backward + fixed overhead of one GPU (mean)
    double sync_s = 0;                   ///< the last GPU's compute end minus the mean GPU's (stragglers)
    double exposed_communication_s = 0;  ///< end of the iteration minus the last GPU's compute end
    double communication_s = 0;          ///< time during which gradient traffic was in flight (node 0)
    double data_s = 0;                   ///< input pipeline bound per iteration (eq. D1), a lower bound
    double jitter = 0;                   ///< the jitter that ran
    double overlap = 0;                  ///< the overlap window that ran (fraction of backward)
    Granularity granularity = Granularity::step;  ///< what ran (never automatic)
    NetworkModel network_model = NetworkModel::cm02;
    double buckets_per_iteration = 0;  ///< collectives (or parameter-server push rounds) per iteration
    std::int64_t transfers = 0;        ///< point-to-point transfers simulated
    std::int64_t executions = 0;       ///< compute activities simulated
    double simulated_s = 0;            ///< simulated clock at the end
    double wall_s = 0;                 ///< wall time of the simulation (child process, platform included)
    double peak_memory_MiB = 0;        ///< peak resident memory of the child process
    bool timeline_written = false;
};

/// Resolve `scenario` with `model` (throws its InputError / InfeasibleError), check the options
/// (InputError naming the flag), then simulate `options.iterations` iterations in a child process.
/// Throws RunError when the child fails for another reason.
SimulationResult simulate(const CostModel& model, const Scenario& scenario, const SimulationOptions& options);

/// The wall time simulate(model, scenario, options) is estimated to take, in seconds (within a
/// factor of about 2 on the development machine; docs/performance.md): what it checks against
/// kMaxEstimatedWallS. Throws what simulate() throws for bad input, and simulates nothing.
double estimated_simulation_s(const CostModel& model, const Scenario& scenario, const SimulationOptions& options);

/// A wall time as the limits' messages write it: "12 minutes" below two hours, else "10 hours".
std::string wall_time_text(double seconds);

}  // namespace epochcast::sim
