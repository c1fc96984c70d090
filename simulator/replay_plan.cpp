#include "simulator/replay_plan.hpp"

#include <algorithm>

namespace epochcast::sim {
namespace {

/// FLOPs per multiply-accumulate.
constexpr double kFlopsPerMac = 2.0;
/// A layer's backward pass computes the data gradient and the weight gradient, each about as
/// costly as its forward pass (docs/model.md, "Workload").
constexpr double kBackwardPerForward = 2.0;

}  // namespace

double gradient_range_bytes(const std::vector<GradientTensor>& gradients, int first, int last) {
    double bytes = 0;
    for (int i = first; i < last; ++i) bytes += gradients[static_cast<std::size_t>(i)].bytes;
    return bytes;
}

ReplayPlan make_replay_plan(const Architecture& architecture, const ResolvedScenario& scenario, Precision precision,
                            double overlap) {
    ReplayPlan plan;
    plan.overlap = std::clamp(overlap, 0.0, 1.0);
    plan.gradients = gradients_in_backward_order(architecture, precision);
    const double batch = scenario.batch_per_gpu;
    const double forward_per_image = kFlopsPerMac * static_cast<double>(architecture.forward_macs());
    const double training_per_image = (1.0 + kBackwardPerForward) * forward_per_image;
    plan.gpu_flops_per_s = training_per_image / scenario.time_per_image_s;
    plan.fixed_flops = scenario.fixed_s * plan.gpu_flops_per_s;
    plan.forward_flops = batch * forward_per_image;

    const double backward_total = kBackwardPerForward * plan.forward_flops;
    const double window_flops = (1.0 - plan.overlap) * backward_total;  // where publishing starts
    const int tensors = static_cast<int>(plan.gradients.size());
    // Gradients whose layer index is above `layer` (in forward order), i.e. ready before that
    // layer's backward pass starts: a prefix of the backward-order list.
    auto ready_before = [&](int layer) {
        int count = 0;
        while (count < tensors && plan.gradients[static_cast<std::size_t>(count)].layer > layer) ++count;
        return count;
    };

    double done = 0;     // backward FLOPs executed so far
    double pending = 0;  // FLOPs of the open segment
    int published = 0;
    bool open = window_flops <= 0;
    for (int index = static_cast<int>(architecture.layers.size()) - 1; index >= 0; --index) {
        const Layer& layer = architecture.layers[static_cast<std::size_t>(index)];
        if (layer.forward_macs == 0) continue;
        const int ready = ready_before(index);
        if (open && ready > published) {
            plan.backward.push_back({pending, ready});
            pending = 0;
            published = ready;
        }
        const double flops = batch * kBackwardPerForward * kFlopsPerMac * static_cast<double>(layer.forward_macs);
        if (!open && done + flops >= window_flops && window_flops < backward_total) {
            // The window opens inside this layer: publish what is ready at that point.
            const double before = window_flops - done;
            plan.backward.push_back({pending + before, ready});
            published = ready;
            pending = flops - before;
            open = true;
        } else {
            pending += flops;
        }
        done += flops;
    }
    plan.backward.push_back({pending, tensors});
    return plan;
}

}  // namespace epochcast::sim
