#include "executor/optimizer.hpp"

#include <algorithm>

#include "executor/bf16.hpp"

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

namespace {

/// The step on `count` consecutive elements that share one decay (wd x mask); `gradient(i)` is
/// element i's gradient, whatever it is read from.
template <typename Gradient>
inline void sgd_nesterov_run(float* weights, Gradient gradient, float* momentum, std::int64_t count, float rate,
                             float mu, float decay) {
    for (std::int64_t i = 0; i < count; ++i) {
        const float d = gradient(i) + decay * weights[i];
        const float v = mu * momentum[i] + d;
        momentum[i] = v;
        weights[i] -= rate * (d + mu * v);
    }
}

/// The step over [first, first + count) of a layout, one run per tensor; `gradient(i)` as above,
/// i counted from `first`.
template <typename Gradient>
inline void sgd_nesterov_layout(float* weights, Gradient gradient, float* momentum,
                                const std::vector<ParameterTensor>& layout, std::int64_t first, std::int64_t count,
                                double lr, double momentum_factor, double weight_decay) {
    const std::int64_t last = first + count;
    for (const ParameterTensor& tensor : layout) {
        const std::int64_t begin = std::max(first, tensor.offset);
        const std::int64_t end = std::min(last, tensor.offset + tensor.elements);
        if (begin >= end) continue;
        const std::int64_t at = begin - first;
        const float decay = tensor.weight_decay ? static_cast<float>(weight_decay) : 0.0f;
        sgd_nesterov_run(
            weights + at, [&](std::int64_t i) { return gradient(at + i); }, momentum + at, end - begin,
            static_cast<float>(lr), static_cast<float>(momentum_factor), decay);
    }
}

}  // namespace

void sgd_nesterov_step(float* weights, const float* gradients, float* momentum, const float* decay_mask,
                       std::int64_t count, double lr, double momentum_factor, double weight_decay) {
    const float wd = static_cast<float>(weight_decay);
    for (std::int64_t begin = 0; begin < count;) {  // runs of equal mask
        std::int64_t end = begin + 1;
        while (end < count && decay_mask[end] == decay_mask[begin]) ++end;
        const float* g = gradients + begin;
        sgd_nesterov_run(
            weights + begin, [g](std::int64_t i) { return g[i]; }, momentum + begin, end - begin,
            static_cast<float>(lr), static_cast<float>(momentum_factor), wd * decay_mask[begin]);
        begin = end;
    }
}

// One clone per vector width, as in executor/bf16.cpp: these are memory-bound passes over 100 MB.
#define EPOCHCAST_VECTOR_CLONES [[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]]

EPOCHCAST_VECTOR_CLONES
void sgd_nesterov_step(float* weights, const float* gradients, float* momentum,
                       const std::vector<ParameterTensor>& layout, std::int64_t first, std::int64_t count, double lr,
                       double momentum_factor, double weight_decay) {
    sgd_nesterov_layout(
        weights, [gradients](std::int64_t i) { return gradients[i]; }, momentum, layout, first, count, lr,
        momentum_factor, weight_decay);
}

EPOCHCAST_VECTOR_CLONES
void sgd_nesterov_step_from_sum(float* weights, const float* sums, int workers, float* momentum,
                                const std::vector<ParameterTensor>& layout, std::int64_t first, std::int64_t count,
                                double lr, double momentum_factor, double weight_decay) {
    const auto divisor = static_cast<float>(workers);
    sgd_nesterov_layout(
        weights, [sums, divisor](std::int64_t i) { return sums[i] / divisor; }, momentum, layout, first, count, lr,
        momentum_factor, weight_decay);
}

EPOCHCAST_VECTOR_CLONES
void sgd_nesterov_step_from_sum(float* weights, const std::uint16_t* sums, int workers, float* momentum,
                                const std::vector<ParameterTensor>& layout, std::int64_t first, std::int64_t count,
                                double lr, double momentum_factor, double weight_decay) {
    const auto divisor = static_cast<float>(workers);
    sgd_nesterov_layout(
        weights, [sums, divisor](std::int64_t i) { return from_bf16_bits(sums[i]) / divisor; }, momentum, layout, first,
        count, lr, momentum_factor, weight_decay);
}

#undef EPOCHCAST_VECTOR_CLONES

}  // namespace epochcast
