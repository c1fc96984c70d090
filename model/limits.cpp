#include "model/limits.hpp"

#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "model/errors.hpp"
#include "model/resnet.hpp"
#include "model/storage.hpp"
#include "model/text_io.hpp"

namespace epochcast {
namespace {

/// "<flag> <value> is more than the <limit> <unit> epochcast models".
[[noreturn]] void beyond_limit(std::string_view flag, const std::string& value, double limit, std::string_view unit) {
    throw InputError(std::string(flag) + " " + value + " is more than the " + format_count(limit) + " " +
                     std::string(unit) + " epochcast models");
}

/// A count that must lie in [lowest, highest]: below, "<flag> must be at least <lowest> (got N)".
void check_count(std::string_view flag, std::int64_t value, std::int64_t lowest, std::int64_t highest,
                 std::string_view unit) {
    if (value < lowest) {
        throw InputError(std::string(flag) + " must be at least " + std::to_string(lowest) + " (got " +
                         std::to_string(value) + ")");
    }
    if (value > highest) beyond_limit(flag, std::to_string(value), static_cast<double>(highest), unit);
}

}  // namespace

void check_scenario_limits(const Scenario& scenario) {
    check_count("--nodes", scenario.nodes, 1, kMaxNodes, "nodes");
    if (scenario.gpus_per_node != 0)
        check_count("--gpus-per-node", scenario.gpus_per_node, 1, kMaxGpusPerNode, "GPUs per node");
    if (scenario.global_batch != 0) {
        check_count("--global-batch", scenario.global_batch, 1, kMaxGlobalBatch, "images per iteration");
    } else {
        check_count("--batch-per-gpu", scenario.batch_per_gpu, 1, kMaxBatchPerGpu, "images per GPU");
    }
    if (scenario.image_size > kMaxImageSizePx) {
        beyond_limit("--image-size", std::to_string(scenario.image_size), kMaxImageSizePx, "px");
    }
    check_count("--classes", scenario.classes, 1, kMaxClasses, "classes");
    check_count("--dataset-images", scenario.dataset_images, 1, kMaxDatasetImages, "images");
    if (scenario.target_top1_percent == 0) {
        if (!std::isfinite(scenario.epochs)) {
            throw InputError("--epochs must be a finite number (got " + shortest(scenario.epochs) + ")");
        }
        if (!(scenario.epochs > 0))
            throw InputError("--epochs must be positive (got " + shortest(scenario.epochs) + ")");
        if (scenario.epochs > kMaxEpochs) beyond_limit("--epochs", shortest(scenario.epochs), kMaxEpochs, "epochs");
    }
    if (scenario.efa_adapters < -1) {
        throw InputError("--efa-adapters must be 0 or more (got " + std::to_string(scenario.efa_adapters) + ")");
    }
    if (scenario.efa_adapters > kMaxEfaAdapters) {
        beyond_limit("--efa-adapters", std::to_string(scenario.efa_adapters), kMaxEfaAdapters, "adapters per node");
    }
    check_count("--ps-nodes", scenario.ps_nodes, 0, kMaxNodes, "server nodes");
    if (!(scenario.fusion_threshold_MiB >= 0) || !std::isfinite(scenario.fusion_threshold_MiB)) {
        throw InputError("the fusion threshold must be positive (0: the framework's bucket)");
    }
    check_spot_limits(scenario);
    check_run_cost_limits(scenario);
    check_scenario_flags(scenario);
}

namespace {

/// The parameter servers' flags: with --strategy ps only; dedicated servers need a count and an
/// instance, co-located ones no count.
void check_parameter_server_flags(const Scenario& scenario) {
    if (scenario.strategy != Strategy::ps) {
        if (scenario.ps_nodes != 0 || scenario.ps_colocated || !scenario.ps_instance.empty()) {
            throw InputError("--ps-nodes, --ps-instance and --ps-colocated go with --strategy ps (strategy is " +
                             std::string(to_string(scenario.strategy)) + ")");
        }
        return;
    }
    if (scenario.ps_colocated && scenario.ps_nodes > 0) {
        throw InputError("--ps-colocated puts one server on each worker: leave out --ps-nodes");
    }
    if (scenario.ps_colocated) return;
    if (scenario.ps_nodes < 1) {
        throw InputError(
            "--strategy ps needs parameter servers: --ps-nodes N (at least 1) with --ps-instance, "
            "or --ps-colocated");
    }
    if (scenario.ps_instance.empty()) {
        throw InputError("--strategy ps with --ps-nodes needs --ps-instance (e.g. m4.16xlarge)");
    }
}

}  // namespace

void check_scenario_flags(const Scenario& scenario) {
    check_parameter_server_flags(scenario);
    if (scenario.compiled && scenario.framework != Framework::pytorch) {
        throw InputError("--compile is PyTorch's torch.compile: it needs --framework pytorch (framework is " +
                         std::string(to_string(scenario.framework)) + ")");
    }
    if (scenario.compiled && scenario.stack != SoftwareStack::current) {
        throw InputError("--compile is PyTorch 2's torch.compile: the legacy stack (2017-2018) had none");
    }
    if (scenario.storage != Store::fsx_lustre &&
        (scenario.storage_tib != 0 || scenario.storage_tier_MBps_per_TiB != 0)) {
        throw InputError("--storage-tib and --storage-tier go with --storage fsx-lustre (got --storage " +
                         std::string(to_string(scenario.storage)) + ")");
    }
    if (scenario.spot_elastic) {
        if (scenario.pricing != Pricing::spot) throw InputError("--elastic-spot needs --pricing spot");
        if (scenario.nodes < kElasticSpotMinNodes) {
            throw InputError("--elastic-spot needs " + std::to_string(kElasticSpotMinNodes) +
                             " nodes or more: a run on one node has none to go on without");
        }
        if (scenario.strategy == Strategy::ps && !scenario.ps_colocated) {
            throw InputError("--elastic-spot needs no dedicated parameter servers: each one must stay");
        }
    }
}

void check_run_cost_limits(const Scenario& scenario) {
    if (!(scenario.storage_tib >= 0) || !std::isfinite(scenario.storage_tib)) {
        throw InputError("--storage-tib must be a positive number of TiB (got " + shortest(scenario.storage_tib) + ")");
    }
    if (scenario.storage_tib > kMaxStorageTiB) {
        beyond_limit("--storage-tib", shortest(scenario.storage_tib), kMaxStorageTiB, "TiB");
    }
    if (!(scenario.storage_tier_MBps_per_TiB >= 0) || !std::isfinite(scenario.storage_tier_MBps_per_TiB)) {
        throw InputError("--storage-tier must be a throughput tier in MB/s per TiB (got " +
                         shortest(scenario.storage_tier_MBps_per_TiB) + ")");
    }
    check_count("--eval-images", scenario.eval_images, 0, kMaxEvalImages, "evaluation images");
    if (scenario.eval_every_epochs) {
        check_count("--eval-every", *scenario.eval_every_epochs, 0, kMaxEvalEveryEpochs, "epochs between evaluations");
    }
    if (scenario.startup_s != -1 && !(scenario.startup_s >= 0 && scenario.startup_s <= kMaxCheckpointIntervalS)) {
        throw InputError("--startup must be a duration of 0 to 3650d (got " + shortest(scenario.startup_s) + " s)");
    }
}

void check_given_spot_rate(double rate) {
    if (!(rate >= 0 && rate <= kMaxSpotInterruptionsPerNodeHour)) {
        throw InputError("--spot-interruptions-per-node-hour must be 0 to " +
                         shortest(kMaxSpotInterruptionsPerNodeHour) + " (got " + shortest(rate) + ")");
    }
}

void check_spot_limits(const Scenario& scenario) {
    const double rate = scenario.spot_interruptions_per_node_hour;
    if (rate != -1) check_given_spot_rate(rate);
    if (!(scenario.checkpoint_interval_s >= 0 && scenario.checkpoint_interval_s <= kMaxCheckpointIntervalS)) {
        throw InputError("--checkpoint-every must be a positive duration of at most 3650d (got " +
                         shortest(scenario.checkpoint_interval_s) + " s)");
    }
    if (!(scenario.spot_replacement_wait_s >= 0 && scenario.spot_replacement_wait_s <= kMaxCheckpointIntervalS)) {
        throw InputError("--spot-replacement-wait must be a duration of 0 to 3650d (got " +
                         shortest(scenario.spot_replacement_wait_s) + " s)");
    }
}

namespace {

/// Throws InfeasibleError naming the first of `figures` that `p` gives as no finite,
/// non-negative number.
template <std::size_t N>
void check_figures(const Prediction& p, const PredictionFigure (&figures)[N]) {
    for (const PredictionFigure& figure : figures) {
        const double value = figure.get(p);
        if (std::isfinite(value) && value >= 0) continue;
        const std::string name = figure.name;
        if (name == "interval_low" || name == "interval_high") {
            throw InfeasibleError("the calibration's uncertainty gives no finite throughput band for this scenario (" +
                                  name + " " + shortest(value) + ")");
        }
        throw InfeasibleError("the model gives " + name + " " + shortest(value) +
                              " for this scenario, not a finite, non-negative figure");
    }
}

}  // namespace

void check_prediction(const Prediction& p) {
    // Every sweep row passes here: the two lists in turn, with nothing allocated.
    check_figures(p, kPredictionFigures);
    check_figures(p, kRunCostFigures);
    if (!(p.throughput_images_per_s > 0)) throw InfeasibleError("the model gives no throughput for this scenario");
    if (!(p.interval.low <= p.throughput_images_per_s && p.throughput_images_per_s <= p.interval.high)) {
        throw InfeasibleError("the calibration's uncertainty gives a throughput band (" + shortest(p.interval.low) +
                              " - " + shortest(p.interval.high) + " img/s) that does not hold the throughput");
    }
}

}  // namespace epochcast
