// What one GPU actor replays each iteration, computed once from the architecture table and the
// resolved scenario (no SimGrid here, so it is tested on its own): the host speed, the forward pass
// and the backward pass as segments after each of which a prefix of the gradients (in backward
// order) is published as ready. docs/model.md, section "Simulation".
#pragma once

#include <vector>

#include "model/cost_model.hpp"
#include "model/resnet.hpp"
#include "model/workload.hpp"

namespace epochcast::sim {

/// A stretch of the backward pass: execute `flops`, then gradients [0, publish_prefix) are ready.
struct BackwardSegment {
    double flops = 0;        ///< FLOP to execute on the GPU host
    int publish_prefix = 0;  ///< gradients (backward order) ready at the segment's end
};

struct ReplayPlan {
    std::vector<GradientTensor> gradients;  ///< backward order (fc first, conv1 last)
    double gpu_flops_per_s = 0;             ///< GPU host speed: training FLOPs per image / calibrated time per image
    double fixed_flops = 0;                 ///< the per-iteration fixed overhead (eq. C1) expressed at that speed
    double forward_flops = 0;               ///< batch x forward FLOPs of one image
    std::vector<BackwardSegment> backward;  ///< sums to batch x 2 x forward FLOPs (eq. C2)
    double overlap = 0;                     ///< fraction of the backward pass at its end during which
                                            ///< gradients are published (the rest waits for the window)
};

/// Build the plan. A gradient is ready once every layer with multiply-accumulates at or after its
/// layer (in forward order) has run its backward pass; a layer's backward pass costs
/// 2 x its forward FLOPs (data and weight gradients). Before the overlap window opens, at
/// (1 - overlap) of the backward pass, nothing is published, so that stretch is one segment; after
/// it, one segment per layer with multiply-accumulates.
ReplayPlan make_replay_plan(const Architecture& architecture, const ResolvedScenario& scenario, Precision precision,
                            double overlap);

/// Sum of the gradient bytes of [first, last) in backward order.
double gradient_range_bytes(const std::vector<GradientTensor>& gradients, int first, int last);

}  // namespace epochcast::sim
