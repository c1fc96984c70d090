// What epochcast accepts: a scenario's limits and the consistency of its flags, checked once, up
// front, before anything is looked up in the catalog or the calibration (CostModel::resolve's
// first step); and a prediction's figures, checked last, before they reach a user. Every refusal
// is an InputError (InfeasibleError for a prediction) naming the flag and the limit.
#pragma once

#include "model/prediction.hpp"
#include "model/scenario.hpp"

namespace epochcast {

/// Refuse a scenario past the limits epochcast models (model/scenario.hpp, docs/model.md "Limits")
/// or below their floor, before any product is formed: nodes 1..kMaxNodes, GPUs per node 0 (all)
/// or 1..kMaxGpusPerNode, batch per GPU 1..kMaxBatchPerGpu (unless a global batch is set), global
/// batch 0 (none) or 1..kMaxGlobalBatch, image size up to kMaxImageSizePx, classes 1..kMaxClasses,
/// dataset images 1..kMaxDatasetImages, epochs finite in (0, kMaxEpochs] (unless a target is set),
/// EFA adapters -1 (all), 0 or up to kMaxEfaAdapters, server nodes 0..kMaxNodes. Throws InputError
/// naming the CLI flag and the limit ("--nodes 2147483647 is more than the 100,000 nodes epochcast
/// models"). Then check_spot_limits(), check_run_cost_limits() and check_scenario_flags().
/// resolve() calls it first.
void check_scenario_limits(const Scenario& scenario);

/// The flags that only go together (the consistency of a scenario, before any look-up): the
/// parameter servers' flags with --strategy ps (and dedicated servers with their instance and
/// count, co-located ones without a count), the store's size and tier with --storage fsx-lustre,
/// and --elastic-spot with spot pricing, at least kElasticSpotMinNodes nodes and no dedicated
/// servers. InputError naming the flags. check_scenario_limits() calls it.
void check_scenario_flags(const Scenario& scenario);

/// The spot fields' limits: an interruption rate of -1 (the catalog's) or 0..kMaxSpotInterruptionsPerNodeHour
/// per node-hour, a checkpoint interval and a replacement wait of 0..kMaxCheckpointIntervalS seconds.
/// InputError naming the flag. check_scenario_limits() calls it.
void check_spot_limits(const Scenario& scenario);

/// An interruption rate the user gives (--spot-interruptions-per-node-hour, a sweep spec's
/// spot_interruptions_per_node_hour), which cannot be the catalog's -1: 0 to
/// kMaxSpotInterruptionsPerNodeHour per node-hour. InputError naming the flag otherwise.
void check_given_spot_rate(double rate);

/// The limits of the run's costs around its iterations: --storage-tib finite and 0 (the store's
/// default) to kMaxStorageTiB, --storage-tier finite and not negative, --eval-images 0..kMaxEvalImages,
/// --eval-every 0..kMaxEvalEveryEpochs, a start-up of -1 (the calibration's) or 0 to ten years.
/// InputError naming the flag. check_scenario_limits() calls it.
void check_run_cost_limits(const Scenario& scenario);

/// Refuse a prediction with a figure of kPredictionFigures that is not a finite, non-negative
/// number, no throughput, or a band that does not hold the throughput: throws InfeasibleError
/// naming the figure. The last check before a prediction reaches a user (CostModel::checked_predict).
void check_prediction(const Prediction& prediction);

}  // namespace epochcast
