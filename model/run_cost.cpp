#include "model/run_cost.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "model/billing.hpp"
#include "model/cluster.hpp"
#include "model/errors.hpp"
#include "model/iteration.hpp"
#include "model/spot.hpp"
#include "model/storage.hpp"
#include "model/text_io.hpp"

namespace epochcast {

double startup_time_s(const Calibration& calibration, int gpus) {
    const double doublings = gpus > kStartupFlatGpus ? std::log2(static_cast<double>(gpus) / kStartupFlatGpus) : 0.0;
    return calibration.startup_s + calibration.startup_s_per_doubling * doublings;
}

void set_run_schedule(ResolvedScenario& r, const Scenario& scenario, const Calibration& calibration,
                      double checkpoint_bytes) {
    r.dataset_images = static_cast<double>(scenario.dataset_images);
    r.checkpoint_s = checkpoint_bytes / (calibration.checkpoint_write_GBps * 1e9);
    r.startup_s = scenario.startup_s >= 0 ? scenario.startup_s
                                          : startup_time_s(calibration, r.nodes * r.gpus_per_node);  // eq. L1
    r.eval_images = scenario.eval_images;                                                            // eqs. E1, E2
}

double cluster_price_usd_per_hour(const Scenario& scenario, const InstanceSpec& worker, const InstanceSpec* server) {
    auto hourly = [&](const InstanceSpec& spec) {
        if (!spec.priced()) return 0.0;  // a machine you own: no price by the hour (cluster_priced says so)
        const Price* price = spec.price(scenario.pricing);
        if (!price) {
            throw InputError("the catalog has no " + std::string(to_string(scenario.pricing)) + " price for '" +
                             spec.name + "' (it is sold as: " + spec.pricings_text() + ")");
        }
        return price->usd_per_hour;
    };
    return scenario.nodes * hourly(worker) + (server ? scenario.ps_nodes * hourly(*server) : 0.0);
}

bool cluster_priced(const InstanceSpec& worker, const InstanceSpec* server) {
    return worker.priced() && (!server || server->priced());
}

void set_spot(ResolvedScenario& r, const Scenario& scenario, const InstanceSpec& worker, const InstanceSpec* server) {
    r.spot_elastic = scenario.spot_elastic;
    if (scenario.pricing != Pricing::spot) return;
    double rate = scenario.spot_interruptions_per_node_hour;
    if (rate < 0) {
        auto catalog_rate = [](const InstanceSpec& spec) {
            const Price* price = spec.price(Pricing::spot);
            return price && price->interruptions ? price->interruptions->per_node_hour : -1.0;
        };
        rate = catalog_rate(worker);
        if (server && rate >= 0) rate = std::max(rate, catalog_rate(*server));
    }
    if (rate < 0) return;
    r.spot_modelled = true;
    r.spot_interruptions_per_node_hour = rate;
    r.checkpoint_interval_s = scenario.checkpoint_interval_s;
    r.spot_replacement_wait_s = scenario.spot_replacement_wait_s;
}

void set_price(ResolvedScenario& r, const Scenario& scenario, const Cluster& cluster) {
    const InstanceSpec& worker = *cluster.workers.instance;
    r.pricing = scenario.pricing;
    r.cluster_usd_per_hour = cluster_price_usd_per_hour(scenario, worker, cluster.server);
    r.priced = cluster_priced(worker, cluster.server);
    set_spot(r, scenario, worker, cluster.server);
}

void apply_run_costs(const ResolvedScenario& s, Prediction& p) noexcept {
    p.storage = s.storage;
    const int gpus = s.nodes * s.gpus_per_node;
    const double data_s = data_time_s(s.batch_per_gpu, input_images_per_s_per_gpu(s));
    p.evaluation_s = evaluation_pass_s(s.eval_images, gpus, s.batch_per_gpu,
                                       compute_time_s(s.fixed_s, s.time_per_image_s, s.batch_per_gpu), data_s);
    p.evaluations = evaluations(s.epochs, s.eval_every_epochs);
    p.eval_every_epochs = s.eval_every_epochs;
    p.eval_every_from_recipe = s.eval_every_from_recipe;
    p.staging_s = s.staging_s;
    if (s.storage != Store::none) {
        // Eq. F1 at the throughput the GPUs and the loader would reach with no store bound.
        ResolvedScenario unbound = s;
        unbound.storage_images_per_s_per_gpu = std::numeric_limits<double>::infinity();
        const double images_per_s = gpus * s.batch_per_gpu / iteration_times(unbound).iteration_s;
        p.demanded_read_GBps = demanded_read_Bps(images_per_s, s.image_bytes) / 1e9;
    }
    p.storage_read_GBps = std::isfinite(s.storage_deliverable_Bps) ? s.storage_deliverable_Bps / 1e9 : 0.0;

    // The first epoch (eqs. F3, F7): every node reads its shard from the store, its page cache cold;
    // its throughput is the iteration's at the steady rate scaled by eq. D1's ratio of the two (a
    // simulated iteration's too), and never more than eq. D1's with the store at its cold rate.
    p.page_cache_hit_fraction = s.page_cache_hit_fraction;
    p.first_epoch_images_per_s = p.throughput_images_per_s;
    p.first_epoch_bottleneck = p.bottleneck;
    if (s.storage_first_epoch_images_per_s_per_gpu < s.storage_images_per_s_per_gpu) {
        ResolvedScenario cold = s;
        cold.storage_images_per_s_per_gpu = s.storage_first_epoch_images_per_s_per_gpu;
        const IterationTimes warm_times = iteration_times(s);
        const IterationTimes cold_times = iteration_times(cold);
        p.first_epoch_images_per_s =
            std::fmin(p.throughput_images_per_s * warm_times.iteration_s / cold_times.iteration_s,
                      static_cast<double>(gpus) * s.batch_per_gpu / cold_times.iteration_s);
        p.first_epoch_bottleneck =
            named_bottleneck(cold, bottleneck_of(cold_times.compute_s, cold_times.sync_s,
                                                 cold_times.exposed_communication_s, cold_times.data_s));
    }
}

namespace {

/// The money of a run of `time_s` wall time (staging included), `epochs` epochs and `passes`
/// evaluations: the instances for the time they run (all of it but a staging copy made before they
/// start), the store's capacity for all of it (eq. F5), its traffic (eq. F6), one checkpoint an epoch.
struct RunMoney {
    double cluster_usd = 0;
    double storage_usd = 0;
    double transfer_usd = 0;
    double total() const { return cluster_usd + storage_usd + transfer_usd; }
};
RunMoney run_money(const ResolvedScenario& s, double time_s, double epochs, double passes) {
    RunMoney m;
    const double instance_s = s.staging_on_workers ? time_s : time_s - s.staging_s;
    m.cluster_usd = instance_s / 3600.0 * s.cluster_usd_per_hour;
    m.storage_usd = storage_usd(s.storage_capacity_GB, s.storage_usd_per_GB_month, time_s / 3600.0);
    const double checkpoints = s.storage == Store::none ? 0.0 : std::ceil(epochs);
    // What the store serves (eqs. F7, F8): the epochs' worth of training reads that miss the page
    // caches, and every evaluation after the first read at the warm miss share.
    const double miss = 1.0 - s.page_cache_hit_fraction;
    const double epoch_reads = s.storage == Store::none ? 0.0 : cached_epochs_s(epochs, s.nodes, 1.0, miss);
    const double eval_reads = std::fmin(passes, 1.0) + std::fmax(passes - 1.0, 0.0) * miss;
    m.transfer_usd =
        s.staging_usd +
        transfer_usd(epoch_reads * s.storage_read_GB_per_epoch + eval_reads * s.storage_read_GB_per_eval,
                     s.storage_usd_per_GB_read, checkpoints * s.checkpoint_GB, s.storage_usd_per_GB_written,
                     epoch_reads * s.storage_gets_per_epoch + eval_reads * s.storage_gets_per_eval,
                     s.storage_usd_per_1000_get, checkpoints, s.storage_usd_per_1000_put);
    return m;
}

void set_money(Prediction& p, const RunMoney& m) {
    p.cluster_usd = m.cluster_usd;
    p.storage_usd = m.storage_usd;
    p.data_transfer_usd = m.transfer_usd;
    p.cost_usd = m.total();
}

/// The iterations of `epochs` epochs at a steady `throughput` (eq. F8): the first at the first
/// epoch's rate, the next ones at the steady rate as each node's page cache fills. At a throughput
/// band's slow end the first epoch's rate moves with it, as at_throughput() moves it; at the fast
/// end the store holds it.
double epochs_iterations_s(const ResolvedScenario& s, const Prediction& p, double epochs, double throughput) {
    if (p.first_epoch_bottleneck != Bottleneck::storage) return epochs * s.dataset_images / throughput;
    const double first_epoch_images_per_s =
        p.first_epoch_images_per_s * std::fmin(1.0, throughput / p.throughput_images_per_s);
    return cached_epochs_s(epochs, s.nodes, s.dataset_images / first_epoch_images_per_s, s.dataset_images / throughput);
}

/// The cost band of `p`'s time band: the money of its fast end with the fewest epochs and of its
/// slow end with the most (each with its evaluation passes), never narrower than the point.
Interval cost_band(const ResolvedScenario& s, const Prediction& p) {
    const double low =
        run_money(s, p.time_to_train_interval.low, s.epochs_low, evaluations(s.epochs_low, s.eval_every_epochs))
            .total();
    const double high =
        run_money(s, p.time_to_train_interval.high, s.epochs_high, evaluations(s.epochs_high, s.eval_every_epochs))
            .total();
    return {std::min(p.cost_usd, low), std::max(p.cost_usd, high)};
}

}  // namespace

void apply_schedule(const ResolvedScenario& s, Prediction& p) noexcept {
    apply_run_costs(s, p);
    p.checkpoint_s = s.checkpoint_s;
    p.epoch_s = s.dataset_images / p.throughput_images_per_s + s.checkpoint_s;
    // The epochs the store bounds: all of them where it bounds the warm ones too, else those before
    // the page caches are warm (eq. F8's k).
    p.store_bound_epochs = p.bottleneck == Bottleneck::storage ? s.epochs
                           : p.first_epoch_bottleneck == Bottleneck::storage
                               ? store_bound_epochs(s.epochs, s.nodes, s.dataset_images / p.first_epoch_images_per_s,
                                                    s.dataset_images / p.throughput_images_per_s)
                               : 0.0;
    p.startup_s = s.startup_s;
    p.epochs = s.epochs;
    p.epochs_interval = {s.epochs_low, s.epochs_high};
    p.epochs_basis = s.epochs_basis;
    p.epochs_recipe = s.epochs_recipe;
    p.global_batch_beyond_published = s.global_batch_beyond_published;
    p.host_vcpus_per_gpu = s.host_vcpus_per_gpu;
    p.host_vcpus_short = s.host_vcpus_short;
    // Staging, start-up, the epochs and the evaluation passes (eqs. F4, L1, E1, E2)
    p.time_to_train_s = s.staging_s + s.startup_s + epochs_iterations_s(s, p, s.epochs, p.throughput_images_per_s) +
                        s.epochs * s.checkpoint_s + p.evaluations * p.evaluation_s;
    p.memory_per_gpu_GiB = s.memory_per_gpu_bytes / kBytesPerGiB;
    p.memory_headroom_GiB = s.memory_headroom_bytes / kBytesPerGiB;

    p.priced = s.priced;
    p.cluster_usd_per_hour = s.cluster_usd_per_hour;
    p.cost_per_epoch_usd = p.epoch_s / 3600.0 * s.cluster_usd_per_hour;
    set_money(p, run_money(s, p.time_to_train_s, s.epochs, p.evaluations));

    // The run's band: the slow end of the throughput with the most epochs, the fast end with the
    // fewest (a prediction without a band yet, or beyond its ends, keeps its own figure).
    auto time_at = [&](double throughput, double epochs) {
        if (!(throughput > 0)) return p.time_to_train_s;
        return s.staging_s + s.startup_s + epochs_iterations_s(s, p, epochs, throughput) + epochs * s.checkpoint_s +
               evaluations(epochs, s.eval_every_epochs) * p.evaluation_s;
    };
    p.time_to_train_interval = {std::min(p.time_to_train_s, time_at(p.interval.high, s.epochs_low)),
                                std::max(p.time_to_train_s, time_at(p.interval.low, s.epochs_high))};
    p.cost_interval = cost_band(s, p);
    if (s.spot_modelled) apply_spot(s, p);
    apply_bill(s, p);
}

void apply_bill(const ResolvedScenario& s, Prediction& p) noexcept {
    p.pricing = s.pricing;
    // The instances' hours at a run's wall time: all of it but a staging copy made before they start.
    auto instance_hours = [&s](double time_s) {
        return (s.staging_on_workers ? time_s : time_s - s.staging_s) / 3600.0;
    };
    const double hours = instance_hours(p.time_to_train_s);
    p.billed_hours_per_node = std::isfinite(hours) ? billed_hours_per_node(s.pricing, hours) : hours;
    // The store and its traffic are paid by use, the instances as sold: what the share holds beside them.
    auto bill_at = [&](double time_s, double share_usd) {
        const double hours_then = instance_hours(time_s);
        return bill_usd(s.pricing, s.cluster_usd_per_hour, hours_then, share_usd,
                        share_usd - s.cluster_usd_per_hour * hours_then);
    };
    p.bill_usd = bill_usd(s.pricing, s.cluster_usd_per_hour, hours, p.cost_usd, p.storage_usd + p.data_transfer_usd);
    p.bill_interval = {bill_at(p.time_to_train_interval.low, p.cost_interval.low),
                       bill_at(p.time_to_train_interval.high, p.cost_interval.high)};
}

namespace {

/// The money of a spot run that ends at `time_s` after `interruptions` (eqs. X3, X7): run_money's,
/// less `unpaid_node_s` of one node's time for each (the elastic run's wait without the lost node;
/// 0 for the run that waits), plus each replacement's own staging copy (SpotRun::
/// replacement_staging_usd).
RunMoney spot_run_money(const ResolvedScenario& s, const SpotRun& x, double time_s, double epochs, double passes,
                        double interruptions, double unpaid_node_s) {
    RunMoney m = run_money(s, time_s, epochs, passes);
    m.cluster_usd -= interruptions * unpaid_node_s * s.cluster_usd_per_hour / 3600.0 / s.nodes;
    m.transfer_usd += interruptions * x.replacement_staging_usd;
    return m;
}

/// Eq. X7 beside apply_spot's fixed cluster: the same spot run elastic (SpotRun::elastic...), where
/// its cluster can shrink.
void apply_elastic_spot(const ResolvedScenario& s, Prediction& p) noexcept {
    SpotRun& x = p.spot;
    if (s.nodes < 2 || s.ps_nodes > 0) return;  // nothing to shrink to, or servers that must stay
    // One node missing at a time: a node is lost again within the wait for its replacement less
    // often than not (lambda W < 1), which also keeps the cost below the whole cluster's.
    if (!(x.interruptions_per_node_hour / 3600.0 * x.replacement_wait_s < 1.0)) return;
    ResolvedScenario smaller = s;
    smaller.nodes = s.nodes - 1;
    const double smaller_images_per_s =
        static_cast<double>(smaller.nodes) * s.gpus_per_node * s.batch_per_gpu / iteration_times(smaller).iteration_s;
    x.elastic_throughput_ratio = std::min(1.0, smaller_images_per_s / p.throughput_images_per_s);
    x.elastic_loss_per_interruption_s = elastic_loss_per_interruption_s(
        x.restart_s, x.replacement_wait_s, x.checkpoint_interval_s, x.elastic_throughput_ratio);
    const double rate_per_s = x.cluster_interruptions_per_hour / 3600.0;
    const double expected_s =
        spot_expected_time_s(x.checkpointed_work_s, rate_per_s, x.elastic_loss_per_interruption_s);
    if (!std::isfinite(expected_s)) return;
    x.elastic = true;
    x.elastic_expected_interruptions = rate_per_s * expected_s;
    x.elastic_time_to_train_s = s.staging_s + s.startup_s + expected_s;
    // Each lost node is not paid for while the run waits without it (the others are).
    x.elastic_cost_usd = spot_run_money(s, x, x.elastic_time_to_train_s, s.epochs, p.evaluations,
                                        x.elastic_expected_interruptions, x.replacement_wait_s)
                             .total();
}

/// Prices the spot run of `p.spot` whose interruptions each cost `loss_s` of wall time (eqs. X3,
/// X6) and each leave `unpaid_node_s` of one node's time unpaid (the elastic run's wait, eq. X7;
/// 0 when the run waits): its time to train and cost, and their bands from X6's 2.5% quantile at
/// the fast end of the throughput with the fewest epochs and its 97.5% at the slow end with the
/// most, each quantile a + k loss_s with its k interruptions. False where it never finishes.
bool price_spot_run(const ResolvedScenario& s, Prediction& p, double loss_s, double unpaid_node_s) {
    const SpotRun& x = p.spot;
    const double rate_per_s = x.cluster_interruptions_per_hour / 3600.0;
    const double expected_s = spot_expected_time_s(x.checkpointed_work_s, rate_per_s, loss_s);
    if (!std::isfinite(expected_s)) return false;
    const double before_s = s.staging_s + s.startup_s;
    p.time_to_train_s = before_s + expected_s;
    set_money(p,
              spot_run_money(s, x, p.time_to_train_s, s.epochs, p.evaluations, rate_per_s * expected_s, unpaid_node_s));
    auto work_at = [&](double throughput, double epochs) {
        const double work_s = throughput > 0 ? epochs_iterations_s(s, p, epochs, throughput) +
                                                   evaluations(epochs, s.eval_every_epochs) * p.evaluation_s
                                             : x.work_s;
        return checkpointed_work_s(work_s, x.checkpoint_write_s, x.checkpoint_interval_s);
    };
    auto end_of_band = [&](double throughput, double epochs, double probability) {
        const double a = work_at(throughput, epochs);
        const double t = spot_time_quantile_s(a, rate_per_s, loss_s, probability);
        const double interruptions = std::max(0.0, (t - a) / loss_s);
        return std::pair{before_s + t,
                         spot_run_money(s, x, before_s + t, epochs, evaluations(epochs, s.eval_every_epochs),
                                        interruptions, unpaid_node_s)
                             .total()};
    };
    const auto [low_s, low_usd] = end_of_band(p.interval.high, s.epochs_low, 0.025);
    const auto [high_s, high_usd] = end_of_band(p.interval.low, s.epochs_high, 0.975);
    p.time_to_train_interval = {std::min(p.time_to_train_s, low_s), std::max(p.time_to_train_s, high_s)};
    p.cost_interval = {std::min(p.cost_usd, low_usd), std::max(p.cost_usd, high_usd)};
    return true;
}

}  // namespace

void apply_spot(const ResolvedScenario& s, Prediction& p) noexcept {
    SpotRun& x = p.spot;
    x.modelled = true;
    x.interruptions_per_node_hour = s.spot_interruptions_per_node_hour;
    x.cluster_interruptions_per_hour = (s.nodes + s.ps_nodes) * s.spot_interruptions_per_node_hour;
    const double rate_per_s = x.cluster_interruptions_per_hour / 3600.0;
    x.checkpoint_write_s = s.checkpoint_s;
    const double young_s = young_checkpoint_interval_s(s.checkpoint_s, rate_per_s);
    x.recommended_checkpoint_interval_s = std::isfinite(young_s) ? young_s : 0.0;
    // The iterations and the evaluation passes (eqs. E1, E2): both are lost and done again alike.
    x.work_s = epochs_iterations_s(s, p, s.epochs, p.throughput_images_per_s) + p.evaluations * p.evaluation_s;
    // Given, else a checkpoint each epoch as the on-demand run writes them (eq. t_checkpoint), or
    // Young's interval where that is shorter: the spot run never checkpoints less often than its
    // on-demand twin unless told to. An interval past the whole run is one checkpoint, at the end.
    const double default_s = std::min(young_s, x.work_s / s.epochs);
    x.checkpoint_interval_s = std::min(s.checkpoint_interval_s > 0 ? s.checkpoint_interval_s : default_s, x.work_s);
    x.restart_s = s.startup_s;
    // A replacement node that stages the dataset on its own drives (local-nvme) copies it before it
    // joins, as each worker did before training: the wait grows by that copy, its requests are paid.
    x.replacement_wait_s = s.spot_replacement_wait_s + (s.staging_on_workers ? s.staging_s : 0.0);
    x.replacement_staging_usd = s.staging_on_workers ? s.staging_usd / s.nodes : 0.0;
    x.loss_per_interruption_s = loss_per_interruption_s(x.restart_s, x.replacement_wait_s, x.checkpoint_interval_s);
    x.checkpointed_work_s = checkpointed_work_s(x.work_s, x.checkpoint_write_s, x.checkpoint_interval_s);
    x.uninterrupted_time_s = s.staging_s + s.startup_s + x.checkpointed_work_s;
    const double never = std::numeric_limits<double>::infinity();
    const bool waiting_finishes = price_spot_run(s, p, x.loss_per_interruption_s, 0.0);
    x.waiting_time_to_train_s = waiting_finishes ? p.time_to_train_s : never;
    x.waiting_cost_usd = waiting_finishes ? p.cost_usd : never;
    if (waiting_finishes) {
        x.expected_interruptions = rate_per_s * (p.time_to_train_s - s.staging_s - s.startup_s);
        x.expected_lost_work_s = x.expected_interruptions * x.checkpoint_interval_s / 2.0;
        x.expected_downtime_s = x.expected_interruptions * (x.restart_s + x.replacement_wait_s);
    }
    apply_elastic_spot(s, p);
    // Priced elastic (Scenario::spot_elastic): eq. X7's run, which may finish where waiting would
    // not. Each interruption costs d_e, restarts twice and leaves the lost node unpaid through the
    // wait, while the others train on.
    if (s.spot_elastic && x.elastic) {
        x.elastic_priced = price_spot_run(s, p, x.elastic_loss_per_interruption_s, x.replacement_wait_s);
        x.loss_per_interruption_s = x.elastic_loss_per_interruption_s;
        x.expected_interruptions = x.elastic_expected_interruptions;
        x.expected_lost_work_s = x.expected_interruptions * x.checkpoint_interval_s / 2.0;
        x.expected_downtime_s = x.expected_interruptions * 2.0 * x.restart_s;
    }
    x.finishes = waiting_finishes || x.elastic_priced;
    if (!x.finishes) {
        // The run never finishes: checked_predict() refuses it, naming why; the figures say so too.
        p.time_to_train_s = p.cost_usd = never;
        p.time_to_train_interval = {never, never};
        p.cost_interval = {never, never};
        x.expected_interruptions = x.expected_lost_work_s = x.expected_downtime_s = never;
    }
}

void check_spot_run(const ResolvedScenario& scenario, const Prediction& p) {
    if (p.spot.modelled && !p.spot.finishes) {
        const SpotRun& x = p.spot;
        std::string message = "on spot this run never finishes: ";
        message += std::to_string(scenario.nodes + scenario.ps_nodes);
        message += " nodes are interrupted ";
        message += shortest(x.cluster_interruptions_per_hour);
        message += " times an hour and each interruption costs ";
        message += shortest(x.loss_per_interruption_s / 60.0);
        message +=
            " min (restart, replacement wait, half a checkpoint interval of lost work); give fewer nodes, a "
            "shorter --checkpoint-every, ";
        if (x.elastic) {  // going on without the lost node would finish
            message += "--elastic-spot (it would take about " +
                       std::to_string(std::lround(x.elastic_time_to_train_s / 60.0)) + " min), ";
        }
        message += "or --pricing on-demand";
        throw InfeasibleError(message);
    }
    if (scenario.spot_elastic && !p.spot.modelled) {
        throw InfeasibleError(
            "--elastic-spot needs an interruption rate, and the catalog gives none for this instance: give "
            "--spot-interruptions-per-node-hour");
    }
    if (scenario.spot_elastic && !p.spot.elastic_priced) {
        throw InfeasibleError(
            "on spot this run cannot go on elastic: a node is lost again within the wait for its replacement "
            "(" +
            shortest(p.spot.interruptions_per_node_hour) + " interruptions per node-hour, a " +
            shortest(p.spot.replacement_wait_s / 60.0) +
            " min wait), or it would never finish so; leave out "
            "--elastic-spot, or give a shorter --spot-replacement-wait");
    }
}

}  // namespace epochcast
