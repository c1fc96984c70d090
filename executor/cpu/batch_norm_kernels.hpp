// Our own bf16 batch normalisation (training mode) for nChw16c tensors, with the ReLU that follows
// it, or the residual add and ReLU that follow it, fused in (executor/cpu/batch_norm_kernels.cpp).
//
// Why: batch norm, ReLU and the residual add are memory-bound. At 224 px, batch 16, bf16, oneDNN
// 2.6 runs them as separate passes over the tensors (their time a step: docs/performance.md),
// and its bf16 batch norm with the fused ReLU
// computes a wrong backward pass (tests/executor/test_cpu_layers.cpp), so in bf16 nothing was
// fused. Ours, in passes over an activation-sized tensor (R read, W written):
//   batch norm + ReLU:        forward 2R+W (statistics; then t -> y), backward 4R+W (sums; then dx)
//   batch norm + add + ReLU:  forward 3R+W,                          backward 5R+2W
// against at least 4R+2W and 6R+2W (batch norm + ReLU), 5R+3W and 6R+2W (+ add) for oneDNN's
// separate primitives. The statistics take one pass (sums of x and x^2); the backward of the plain ReLU recomputes its
// gate from x instead of reading y; after the residual add it reads y and writes the gated dy in place, which is also
// the shortcut's gradient.
//
// Notation: x is the batch norm's input, M = N x H x W values per channel, mean and inv_std =
// 1 / sqrt(variance + epsilon) the batch statistics (biased variance), x_hat = (x - mean) inv_std,
// t = gamma x_hat + beta [+ shortcut], y = t or relu(t). Backward, with g = dy gated by the ReLU:
//   dbeta = sum g,   dgamma = sum g x_hat,   dx = gamma inv_std (g - dbeta / M - x_hat dgamma / M).
// Sums run in fp32 within a stretch of pixels and in fp64 across them.
#pragma once

#include <cstdint>

namespace epochcast::cpu {

/// N x C x H x W bf16 tensors (raw bits) in nChw16c: for each image, C / 16 rows of H x W pixels
/// of 16 channels.
struct BatchNormGeometry {
    int batch = 0;     ///< N
    int channels = 0;  ///< C, a multiple of 16
    int pixels = 0;    ///< H x W
};

/// True when this CPU has AVX512-BF16 and N, H x W and C are positive, C a multiple of 16.
bool batch_norm_applies(const BatchNormGeometry& geometry);

/// Per-channel fp32 values of one batch norm, C each (gamma and beta: the parameters).
struct BatchNormChannels {
    const float* mean = nullptr;
    const float* inv_std = nullptr;
    const float* gamma = nullptr;
    const float* beta = nullptr;
};

/// mean[c] and the biased variance[c] of x over its M values per channel.
void batch_norm_statistics_bf16(const BatchNormGeometry& geometry, const std::uint16_t* x, float* mean, float* variance,
                                int threads);

/// y = bf16(t) or bf16(relu(t)), t = x * scale + shift [+ shortcut] with scale = gamma inv_std and
/// shift = beta - mean scale (fp32, per channel). shortcut may be null (no add); y may be x.
void batch_norm_forward_bf16(const BatchNormGeometry& geometry, const std::uint16_t* x,
                             const BatchNormChannels& channels, const std::uint16_t* shortcut, bool relu,
                             std::uint16_t* y, int threads);

/// The ReLU after the batch norm, whose gradient gates dy in the backward pass.
enum class ReluGate {
    none,       ///< no ReLU: g = dy
    recompute,  ///< relu(x * scale + shift) (no add): g = dy where that t > 0, recomputed from x as the forward did
    output,     ///< relu(... + shortcut): g = dy where y > 0, and dy is overwritten with g
};

/// dgamma[c] = sum g x_hat and dbeta[c] = sum g (fp32). y: the forward's output (ReluGate::output only).
void batch_norm_backward_sums_bf16(const BatchNormGeometry& geometry, const std::uint16_t* x, std::uint16_t* dy,
                                   const BatchNormChannels& channels, ReluGate gate, const std::uint16_t* y,
                                   float* dgamma, float* dbeta, int threads);

/// dx = gamma inv_std (g - dbeta / M - x_hat dgamma / M), bf16, from the sums above. gate: none
/// or recompute (after ReluGate::output, dy already holds g: pass none). dx may be dy.
void batch_norm_backward_data_bf16(const BatchNormGeometry& geometry, const std::uint16_t* x, const std::uint16_t* dy,
                                   const BatchNormChannels& channels, ReluGate gate, const float* dgamma,
                                   const float* dbeta, std::uint16_t* dx, int threads);

}  // namespace epochcast::cpu
