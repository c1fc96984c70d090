// The run around its iterations, in time and money (docs/model.md, "Time to train and cost",
// "The data", "Evaluation", "Spot interruptions"): what the cluster costs by the hour at its
// pricing, the run's schedule (start-up, epochs, checkpoints, evaluation passes, the store's first
// epoch), its bill (instances, the store's capacity and traffic), and a spot run's interruptions,
// waiting for each replacement or elastic (eqs. X1-X7). The formulas are in model/spot.hpp and
// model/storage.hpp; here they are put together for one resolved scenario.
#pragma once

#include "model/calibration.hpp"
#include "model/catalog.hpp"
#include "model/prediction.hpp"
#include "model/resolved_scenario.hpp"
#include "model/scenario.hpp"

namespace epochcast {

struct Cluster;

/// The GPUs up to which start-up is flat (eq. L1): seed 001 measured "a consistent 1.5 minutes
/// regardless of cluster size" from 8 to 256 V100s.
inline constexpr int kStartupFlatGpus = 256;

/// Eq. L1: launch to first iteration of a cluster of `gpus`: the calibration's start-up, and past
/// kStartupFlatGpus its growth per doubling of the GPUs (MLPerf Training's logged initialisation),
/// in seconds.
double startup_time_s(const Calibration& calibration, int gpus);

/// The run's schedule inputs of a resolved scenario (CostModel::resolve's step, after the cluster):
/// the dataset's images per epoch, one checkpoint's write of `checkpoint_bytes` at the
/// calibration's rate, the start-up (the scenario's, else eq. L1's for its GPUs) and the evaluation
/// pass's images (eqs. E1, E2).
void set_run_schedule(ResolvedScenario& r, const Scenario& scenario, const Calibration& calibration,
                      double checkpoint_bytes);

/// What the cluster costs per hour at the scenario's pricing, in USD: its worker nodes plus its
/// dedicated servers (`server`, nullptr: none). An instance with no price at all (a machine you own)
/// adds 0, and cluster_priced() is false. Throws InputError naming the instance and the pricings it
/// has where an instance with prices is not sold under the scenario's (p5e.48xlarge on-demand).
double cluster_price_usd_per_hour(const Scenario& scenario, const InstanceSpec& worker, const InstanceSpec* server);

/// Every instance of the cluster has a price (false: a cost of it would be a meaningless $0).
bool cluster_priced(const InstanceSpec& worker, const InstanceSpec* server);

/// Spot (eqs. X0-X6): the scenario's interruption rate, else the catalog's band for its workers (with
/// dedicated servers, the higher of theirs and the workers'), the checkpoint interval and the
/// replacement wait; nothing where the pricing is another or no rate is known (spot_modelled false).
void set_spot(ResolvedScenario& r, const Scenario& scenario, const InstanceSpec& worker, const InstanceSpec* server);

/// The money of a resolved scenario (CostModel::resolve's last step): the cluster's price by the
/// hour, whether every instance of it has one, and its spot interruptions (set_spot).
void set_price(ResolvedScenario& r, const Scenario& scenario, const Cluster& cluster);

/// The prediction's evaluation, staging and store figures (eqs. E1, E2, F1-F6) from its resolved
/// scenario and throughput; apply_schedule() calls it before it sums the time and the cost.
void apply_run_costs(const ResolvedScenario& s, Prediction& p) noexcept;

/// Fill the prediction's epoch, startup, time to train, memory and money from its throughput
/// (docs/model.md, "Time to train and cost"); shared by the closed form and the simulator.
void apply_schedule(const ResolvedScenario& s, Prediction& p) noexcept;

/// The bill (eq. H1, model/billing.hpp) of a prediction whose time, share and their bands are set:
/// each instance's billed hours, and what is paid for them, the store and its traffic; apply_schedule()
/// calls it last.
void apply_bill(const ResolvedScenario& s, Prediction& p) noexcept;

/// A spot run's interruptions (docs/model.md, "Spot interruptions", eqs. X1-X7): fills p.spot (with
/// the same run elastic, eq. X7, where its cluster can shrink) and makes the time to train, the cost
/// and their bands the expected run's; infinite where it never finishes (SpotRun::finishes false). apply_schedule()
/// calls it for a resolved spot_modelled scenario.
void apply_spot(const ResolvedScenario& s, Prediction& p) noexcept;

/// Refuse a spot prediction that cannot be given as asked (CostModel::checked_predict): a run that
/// never finishes, naming what each interruption costs and what would finish (--elastic-spot with
/// its time where it would); --elastic-spot without an interruption rate, or where a node is lost
/// again within the wait for its replacement. Throws InfeasibleError.
void check_spot_run(const ResolvedScenario& scenario, const Prediction& p);

}  // namespace epochcast
