// Elastic schedules, as in seed 003's Dynamic Training: the number of worker nodes changes between
// epochs while the global batch stays fixed (each GPU's batch is the global batch over the GPUs of
// the phase), and a node lost mid-epoch costs a restart from the last checkpoint (one per epoch).
// Each distinct cluster size is simulated once; the schedule's time and cost are reported against
// the fixed cluster of the scenario for the same epochs. docs/model.md, "Elastic schedules".
//
// File format "epochcast.elastic/1": docs/formats.md, "Elastic schedule". Phases run in order;
// their epochs add up to the run's. A phase's `spot_nodes` are billed at the catalog's spot price,
// the rest at the scenario's pricing (seed 003 pulls in Spot or idle Reserved capacity when there
// is some). A node loss at a fractional epoch (counted from the start of training) removes one
// node for the rest of its phase, a spot node first (the usual reason for a loss is a spot
// interruption).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "model/cost_model.hpp"
#include "simulator/simulation.hpp"

namespace epochcast::sim {

inline constexpr std::string_view kElasticSchema = "epochcast.elastic/1";

struct ElasticPhase {
    double epochs = 0;   ///< epochs trained in this phase, > 0
    int nodes = 0;       ///< worker nodes during the phase, >= 1
    int spot_nodes = 0;  ///< of those, billed at the spot price, 0..nodes
};

struct NodeLoss {
    double epoch = 0;  ///< when the node is lost, in epochs from the start of training
};

struct ElasticSchedule {
    std::vector<ElasticPhase> phases;
    std::vector<NodeLoss> node_losses;  ///< sorted by epoch
    double epochs() const;              ///< sum of the phases' epochs
    /// The same schedule over `total` epochs: every phase and node loss scaled by total / epochs()
    /// (a target accuracy fixes the epochs, docs/model.md "Time to accuracy"; the proportions stay).
    ElasticSchedule scaled_to(double total) const;
};

/// Parse schedule JSON; `origin` names it in errors. Throws InputError naming the origin, the
/// entry (phases[i], node_losses[i]) and the key on malformed JSON, a wrong schema, a missing or
/// mistyped key, a count or epoch out of range, or a loss that would leave a phase without nodes.
ElasticSchedule parse_elastic_schedule(std::string_view json_text, std::string_view origin);

/// Read and parse a file; a missing or unreadable file is an InputError naming the path.
ElasticSchedule read_elastic_schedule(const std::filesystem::path& path);

/// A stretch of training on a constant number of nodes.
struct ElasticSegment {
    double start_epoch = 0;  ///< where it starts, in epochs from the start of training
    double epochs = 0;       ///< epochs it trains (a restart redoes the lost part)
    int nodes = 0;           ///< worker nodes
    int spot_nodes = 0;      ///< of those, billed at the spot price
    int batch_per_gpu = 0;   ///< the global batch over this segment's GPUs, rounded
    int global_batch = 0;    ///< batch_per_gpu x GPUs (the schedule's, within rounding)
    double iteration_s = 0;  ///< simulated mean iteration
    double throughput_images_per_s = 0;
    double epoch_s = 0;       ///< images / throughput + checkpoint
    double time_s = 0;        ///< epochs x epoch_s
    double usd_per_hour = 0;  ///< workers (spot ones at the spot price) and servers
    double cost_usd = 0;
};

/// A node lost mid-epoch: the work since the last checkpoint is lost, the job restarts.
struct ElasticLoss {
    double epoch = 0;        ///< when
    int nodes_after = 0;     ///< nodes left in the phase
    double lost_work_s = 0;  ///< time spent since the last checkpoint, thrown away
    double restart_s = 0;    ///< relaunch on the remaining nodes (the calibration's startup time)
    double cost_usd = 0;     ///< the restart's cost (the lost work is in its segment's cost)
};

struct ElasticReport {
    std::vector<ElasticSegment> segments;
    std::vector<ElasticLoss> losses;
    double epochs = 0;
    double startup_s = 0;
    double time_to_train_s = 0;  ///< startup + segments + restarts
    double cost_usd = 0;
    int fixed_nodes = 0;  ///< the scenario's cluster
    double fixed_time_to_train_s = 0;
    double fixed_cost_usd = 0;
    bool priced =
        true;  ///< false: the instances have no price by the hour (owned): every cost above is 0 and meaningless
};

/// Throws InputError when the simulations of the schedule's cluster sizes (each phase's, one
/// fewer after each of its node losses, and the scenario's) are estimated to take more than
/// kMaxEstimatedWallS together (estimated_simulation_s), before anything is simulated; and what
/// simulate() throws for a size it refuses (InfeasibleError naming the size).
void check_elastic_cost(const CostModel& model, const Scenario& scenario, const SimulationOptions& options,
                        const ElasticSchedule& schedule);

/// Simulate every distinct cluster size of the schedule (and the scenario's fixed cluster) with
/// `options`, keeping the scenario's global batch, after check_elastic_cost. Neither the timeline
/// nor slow nodes apply (node indices of one cluster size mean nothing in another).
ElasticReport simulate_elastic(const CostModel& model, const Scenario& scenario, const SimulationOptions& options,
                               const ElasticSchedule& schedule);

}  // namespace epochcast::sim
