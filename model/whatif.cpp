#include "model/whatif.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/errors.hpp"
#include "model/text_io.hpp"

namespace epochcast {

void check_max_nodes(int max_nodes) {
    if (max_nodes > kMaxNodes) {
        throw InputError("--max-nodes " + std::to_string(max_nodes) + " is more than the " + format_count(kMaxNodes) +
                         " nodes epochcast models");
    }
}

double ps_ratio(const Scenario& scenario) {
    if (scenario.strategy != Strategy::ps || scenario.ps_colocated || scenario.nodes <= 0) return 0.0;
    return static_cast<double>(scenario.ps_nodes) / scenario.nodes;
}

int ps_nodes_for(double ratio, int nodes) { return std::max(1, clamped_count(std::round(ratio * nodes))); }

std::vector<int> powers_of_two_up_to(int limit) {
    std::vector<int> out;
    for (long long n = 1; n <= limit; n *= 2) out.push_back(static_cast<int>(n));
    return out;
}

Scenario with_nodes(const Scenario& scenario, int nodes) {
    Scenario s = scenario;
    const double ratio = ps_ratio(scenario);
    s.nodes = nodes;
    if (ratio > 0) s.ps_nodes = ps_nodes_for(ratio, nodes);
    if (nodes < kElasticSpotMinNodes) s.spot_elastic = false;
    return s;
}

std::vector<ScalingPoint> scaling_curve(const CostModel& model, const Scenario& scenario, int max_nodes) {
    model.resolve(scenario);  // the scenario itself must be valid: its error is the user's to see
    check_max_nodes(max_nodes);
    std::vector<int> sizes = powers_of_two_up_to(std::max(max_nodes, scenario.nodes));
    sizes.push_back(scenario.nodes);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());

    std::vector<ScalingPoint> curve;
    curve.reserve(sizes.size());
    for (const int n : sizes) {
        Prediction p;
        try {
            p = model.checked_predict(with_nodes(scenario, n));
        } catch (const InputError&) {
            // With the global batch fixed, a size it does not divide, or whose per-GPU share does
            // not fit in memory, has no point on the curve; with a target accuracy, neither has a
            // size whose global batch the recipe does not reach the target at.
            if (scenario.global_batch > 0 || scenario.target_top1_percent > 0) continue;
            throw;
        }
        ScalingPoint point;
        point.nodes = p.nodes;
        point.gpus = p.gpus;
        point.throughput_images_per_s = p.throughput_images_per_s;
        point.interval = p.interval;
        point.scaling_efficiency = p.scaling_efficiency;
        point.ideal_images_per_s = p.scaling_efficiency > 0 ? p.throughput_images_per_s / p.scaling_efficiency : 0.0;
        curve.push_back(point);
    }
    return curve;
}

InstanceComparison across_instances(const CostModel& model, const Scenario& base, int max_nodes) {
    check_max_nodes(max_nodes);
    InstanceComparison out;
    for (const InstanceSpec& instance : model.catalog().instances()) {
        if (instance.gpus == 0) continue;  // parameter-server hosts, not workers
        Scenario s = base;
        s.instance = instance.name;
        s.gpus_per_node = 0;
        s.efa_adapters = -1;
        if (instance.gpus == 1 && (s.strategy == Strategy::hierarchical || s.strategy == Strategy::tree)) {
            s.strategy = Strategy::ring;
        }
        std::string reason;
        bool any = false;
        for (const int n : powers_of_two_up_to(std::max(1, max_nodes))) {
            const Scenario sized = with_nodes(s, n);
            try {
                out.options.push_back({sized, model.checked_predict(sized)});
                any = true;
            } catch (const InputError& error) {
                if (reason.empty()) reason = error.what();
            }
        }
        if (!any) out.skipped.push_back({instance.name, reason});
    }
    return out;
}

Prediction at_throughput(const ResolvedScenario& scenario, const Prediction& prediction,
                         double throughput_images_per_s) {
    Prediction p = prediction;
    const double ratio = throughput_images_per_s / prediction.throughput_images_per_s;
    p.throughput_images_per_s = throughput_images_per_s;
    p.per_gpu_images_per_s *= ratio;
    // The efficiencies move with the throughput, never past 1: nothing scales better than its baseline.
    p.scaling_efficiency = std::min(1.0, p.scaling_efficiency * ratio);
    p.node_scaling_efficiency = std::min(1.0, p.node_scaling_efficiency * ratio);
    apply_schedule(scenario, p);
    return p;
}

PredictionBand prediction_band(const ResolvedScenario& scenario, const Prediction& prediction) {
    // The slow end also trains the most epochs of the recipe's band, the fast end the fewest.
    ResolvedScenario longest = scenario;
    longest.epochs = scenario.epochs_high;
    ResolvedScenario shortest = scenario;
    shortest.epochs = scenario.epochs_low;
    return {at_throughput(longest, prediction, prediction.interval.low),
            at_throughput(shortest, prediction, prediction.interval.high)};
}

}  // namespace epochcast
