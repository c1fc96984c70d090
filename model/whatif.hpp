// What-if exploration around one Scenario (issue 8, the GUI's scaling chart and its time-against-
// cost scatter): the same scenario at several cluster sizes, and on every GPU instance type of the
// catalog, each point a plain CostModel prediction, plus the Pareto front of time against cost.
// No formula of its own: every number comes from CostModel::predict.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "model/cost_model.hpp"
#include "model/search.hpp"  // TimeCost, pareto_front

namespace epochcast {

/// The scenario's parameter servers per worker node (0 when there are none or they are co-located):
/// what stays fixed when the cluster grows or shrinks.
double ps_ratio(const Scenario& scenario);

/// Dedicated parameter servers for `nodes` worker nodes at `ratio` servers per worker node:
/// rounded, at least one.
int ps_nodes_for(double ratio, int nodes);

/// Throws InputError "--max-nodes N is more than the 100,000 nodes epochcast models" past kMaxNodes.
void check_max_nodes(int max_nodes);

/// 1, 2, 4, ... up to `limit` (nothing when it is below 1), without overflow for any int limit.
std::vector<int> powers_of_two_up_to(int limit);

/// The scenario on `nodes` worker nodes, its dedicated parameter servers scaled to keep ps_ratio
/// (rounded, at least one). A spot run priced elastic is priced waiting on one node, which has no
/// other node to go on without (Scenario::spot_elastic).
Scenario with_nodes(const Scenario& scenario, int nodes);

/// One point of a scaling curve.
struct ScalingPoint {
    int nodes = 0;                       ///< worker instances
    int gpus = 0;                        ///< worker GPUs
    double throughput_images_per_s = 0;  ///< predicted global throughput
    Interval interval;                   ///< its band, images/s
    double ideal_images_per_s = 0;       ///< gpus x one GPU alone at the same batch (throughput / efficiency)
    double scaling_efficiency = 0;       ///< throughput / ideal
};

/// The scenario at 1, 2, 4, ... worker nodes up to max(max_nodes, the scenario's own), with the
/// scenario's own node count included, in increasing order. Throws what CostModel::resolve throws
/// for the scenario itself (other sizes resolve the same way, parameter servers scaled), and
/// check_max_nodes's error past kMaxNodes. Every point passes check_prediction. With a fixed global
/// batch, a size it cannot be split over has no point; with a target accuracy, a size whose global
/// batch the recipe does not reach it at has none.
std::vector<ScalingPoint> scaling_curve(const CostModel& model, const Scenario& scenario, int max_nodes);

/// One configuration of the scatter across instance types.
struct InstanceOption {
    Scenario scenario;      ///< the base scenario on this instance type and node count
    Prediction prediction;  ///< what the model says about it
};

/// A configuration left out of the scatter and why (no GPU, batch does not fit, ...).
struct SkippedOption {
    std::string instance;
    std::string reason;  ///< the model's message
};

struct InstanceComparison {
    std::vector<InstanceOption> options;  ///< in catalog order, then increasing nodes
    std::vector<SkippedOption> skipped;   ///< one entry per instance type that gave no point at all
};

/// The base scenario on every GPU instance type of the catalog, using all of each instance's GPUs,
/// on 1, 2, 4, ... nodes up to `max_nodes`. A strategy that needs several GPUs per node
/// (hierarchical, tree) becomes ring on one-GPU instances; the EFA choice returns to "all the
/// instance has". Configurations the model rejects are left out; an instance type none of whose
/// sizes resolves is listed in `skipped` with the model's reason (a figure check_prediction refuses
/// included). Throws check_max_nodes's error past kMaxNodes.
InstanceComparison across_instances(const CostModel& model, const Scenario& base, int max_nodes);

/// The prediction as it would read at another throughput (an end of its band): per-GPU throughput
/// and both scaling efficiencies scale with it (their baselines do not change); epoch, time to
/// train and cost follow from it by apply_schedule, as in predict.
Prediction at_throughput(const ResolvedScenario& scenario, const Prediction& prediction,
                         double throughput_images_per_s);

/// The prediction at both ends of its throughput band: `slow` at interval.low (longer, costlier)
/// with the most epochs of the epochs' band, `fast` at interval.high with the fewest.
struct PredictionBand {
    Prediction slow;
    Prediction fast;
};
PredictionBand prediction_band(const ResolvedScenario& scenario, const Prediction& prediction);

}  // namespace epochcast
