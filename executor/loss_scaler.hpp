// Dynamic loss scaling for fp16 training (Micikevicius et al., "Mixed Precision Training", ICLR
// 2018, section 3.2; the schedule of NVIDIA's Apex and PyTorch's GradScaler): the loss is
// multiplied by `scale` before the backward pass so that small gradients survive fp16, and the
// gradients are divided by it before the optimizer. A step whose gradients hold an inf or NaN is
// skipped and the scale halved; after `growth_interval` clean steps in a row it is doubled.
// Pure host logic: the CUDA backend finds the overflow on the GPU and asks this class what to do.
#pragma once

#include <cstdint>

namespace epochcast {

class LossScaler {
public:
    static constexpr double kInitialScale = 32768;         ///< 2^15 (the issue; Apex's dynamic default is 2^16)
    static constexpr std::int64_t kGrowthInterval = 2000;  ///< clean steps before doubling (Apex, GradScaler)
    static constexpr double kMinimumScale = 1;             ///< halving stops here: below 1 the scale only loses range

    explicit LossScaler(double initial_scale = kInitialScale, std::int64_t growth_interval = kGrowthInterval);

    /// The factor the loss is multiplied by for the next backward pass.
    double scale() const { return scale_; }
    /// Records one step's outcome: `overflowed` when its (all-reduced) gradients held an inf or
    /// NaN. Returns true when the step's update must be applied, false when it must be skipped.
    /// Throws RunError when the gradients overflow at the minimum scale already: halving can no
    /// longer help, the loss itself has diverged (a rate too high), and every later step would
    /// be skipped too.
    bool update(bool overflowed);
    /// Steps skipped so far.
    std::int64_t skipped() const { return skipped_; }
    /// Clean steps since the last change of scale.
    std::int64_t clean_steps() const { return clean_steps_; }

private:
    double scale_;
    std::int64_t growth_interval_;
    std::int64_t clean_steps_ = 0;
    std::int64_t skipped_ = 0;
};

}  // namespace epochcast
