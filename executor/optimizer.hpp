// Seed 000's optimizer and schedule: SGD with Nesterov momentum 0.9 and weight decay 1e-4 (none
// on batch-norm parameters and biases); the learning rate scaled linearly with the number of
// workers, raised linearly from 0.001 over the warm-up epochs, then decayed to zero by a
// polynomial of degree 2 (seed 000: "linearly scaled up from 0.001 to 6.4 over 10 epochs ...
// decayed over the next 80 epochs by a polynomial (degree=2) decay scheme"). docs/model.md,
// section "Executor", writes the formulas out.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/network.hpp"

namespace epochcast {

inline constexpr double kMomentum = 0.9;         ///< seed 000
inline constexpr double kWeightDecay = 1e-4;     ///< seed 000
inline constexpr double kWarmupStartLr = 0.001;  ///< seed 000's warm-up starting rate
inline constexpr double kReferenceBatch = 256;   ///< seed 000: lr 0.1 for 256 images on one GPU

/// The learning rate per step.
struct LearningRateSchedule {
    double peak_lr = 0.1;  ///< per-worker rate x workers (linear scaling)
    std::int64_t warmup_steps =
        0;  ///< steps of linear warm-up from kWarmupStartLr (or from peak/10 when peak is smaller)
    std::int64_t total_steps = 1;  ///< the run's length; the rate reaches 0 after it

    /// Rate of step `step` (0-based): warm-up ramp, then peak x (1 - progress)^2.
    double at(std::int64_t step) const;
};

/// Seed 000's default per-worker rate for a batch: 0.1 x batch / 256.
double default_worker_lr(int batch_per_worker);

/// SGD with Nesterov momentum on elements [0, count) of flat fp32 arrays (PyTorch's form):
///   d = g + wd*mask*w;  v = mu*v + d;  w -= lr * (d + mu*v)
/// `decay_mask` is 1 where weight decay applies and 0 elsewhere.
void sgd_nesterov_step(float* weights, const float* gradients, float* momentum, const float* decay_mask,
                       std::int64_t count, double lr, double momentum_factor = kMomentum,
                       double weight_decay = kWeightDecay);

/// The same step on the elements [first, first + count) of arenas laid out as `layout`, with
/// `weights`, `gradients` and `momentum` pointing at element `first`; each tensor's mask is its
/// weight_decay flag, so no per-element mask is read (a sixth of the step's memory traffic).
void sgd_nesterov_step(float* weights, const float* gradients, float* momentum,
                       const std::vector<ParameterTensor>& layout, std::int64_t first, std::int64_t count, double lr,
                       double momentum_factor = kMomentum, double weight_decay = kWeightDecay);

/// The same step from the sum of `workers` ranks' gradients, averaged here (g = sum / workers,
/// the division average_in_place does): the all-reduce applies it to each bucket as it arrives,
/// so the bucket is read once, from the cache. `sums` in fp32, or as bf16 bits (the all-reduce's
/// mixed-precision wire format), widened exactly here.
void sgd_nesterov_step_from_sum(float* weights, const float* sums, int workers, float* momentum,
                                const std::vector<ParameterTensor>& layout, std::int64_t first, std::int64_t count,
                                double lr, double momentum_factor = kMomentum, double weight_decay = kWeightDecay);
void sgd_nesterov_step_from_sum(float* weights, const std::uint16_t* sums, int workers, float* momentum,
                                const std::vector<ParameterTensor>& layout, std::int64_t first, std::int64_t count,
                                double lr, double momentum_factor = kMomentum, double weight_decay = kWeightDecay);

}  // namespace epochcast
