#include "executor/optimizer.hpp"

#include <algorithm>

namespace epochcast {

double LearningRateSchedule::at(std::int64_t step) const {
    if (step < warmup_steps) {
        const double start = std::min(kWarmupStartLr, peak_lr / 10);
        const double fraction = static_cast<double>(step) / static_cast<double>(warmup_steps);
        return start + (peak_lr - start) * fraction;
    }
    const double decay_steps = static_cast<double>(std::max<std::int64_t>(total_steps - warmup_steps, 1));
    const double progress = std::clamp(static_cast<double>(step - warmup_steps) / decay_steps, 0.0, 1.0);
    return peak_lr * (1 - progress) * (1 - progress);
}

double default_worker_lr(int batch_per_worker) { return 0.1 * batch_per_worker / kReferenceBatch; }

void sgd_nesterov_step(float* weights, const float* gradients, float* momentum, const float* decay_mask,
                       std::int64_t count, double lr, double momentum_factor, double weight_decay) {
    const float mu = static_cast<float>(momentum_factor);
    const float wd = static_cast<float>(weight_decay);
    const float rate = static_cast<float>(lr);
    for (std::int64_t i = 0; i < count; ++i) {
        const float d = gradients[i] + wd * decay_mask[i] * weights[i];
        const float v = mu * momentum[i] + d;
        momentum[i] = v;
        weights[i] -= rate * (d + mu * v);
    }
}

}  // namespace epochcast
