// The CPU backend's own kernels (executor/cpu/kernels.cpp): work where oneDNN 2.6 leaves speed on
// the table. Each has a plain C++ reference in the tests (tests/executor/test_cpu_kernels.cpp) and
// is used by executor/cpu/layers.cpp only when applies() says so; oneDNN does everything else.
//
// The weight gradient of a 1x1, stride-1 bf16 convolution. oneDNN's jit_bf16_1x1 backward-weights
// kernel runs at about 40% of this host's bf16 peak on ResNet-50's 56 x 56 layers (2.3x the time of
// the forward pass; docs/performance.md). The gradient is one matrix product,
//   dW[o][i] = sum over k = (n, p) of dY[n][o][p] X[n][i][p],   p a pixel, k running over N x H x W,
// which this kernel computes with AVX512-BF16's dot product of bf16 pairs (vdpbf16ps): each
// instruction adds x[k] y[k] + x[k+1] y[k+1] into 16 fp32 sums, so the operands are repacked,
// chunk by chunk, from oneDNN's nChw16c rows (16 channels of one pixel) into pairs of successive k
// per channel. A chunk is sized to stay in the core's L2 cache; the 16 x 16 output tile stays in
// registers across it, and while it computes, the rows of the next chunk are prefetched into L2
// (without that the kernel was no faster than oneDNN's). Threads take disjoint output rows, so
// no reduction is needed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace epochcast::cpu {

/// A 1x1, stride-1, unpadded convolution over N x C x H x W tensors in nChw16c bf16.
struct Conv1x1Geometry {
    int batch = 0;         ///< N
    int in_channels = 0;   ///< I, a multiple of 16
    int out_channels = 0;  ///< O, a multiple of 16
    int pixels = 0;        ///< H x W
};

/// Whether layers built from now on may use these kernels (default true). False makes oneDNN do
/// everything, for benchmarks that compare the two in one process (bench/cpu_train_bench.cpp).
void set_own_kernels_enabled(bool enabled);
bool own_kernels_enabled();

/// True when this CPU has AVX512-BF16 (the kernel's instruction set) and `geometry` is one the
/// kernel computes: channel counts positive multiples of 16 (no padded channel blocks), N and
/// H x W positive.
bool conv1x1_weight_gradient_applies(const Conv1x1Geometry& geometry);

/// Bytes of scratch conv1x1_weight_gradient_bf16 needs with `threads` threads (64-byte aligned).
std::size_t conv1x1_weight_gradient_scratch_bytes(const Conv1x1Geometry& geometry, int threads);

/// dW = the weight gradient above, fp32, plain O x I (row o holds the I input channels).
///   x:  N x I x H x W bf16 (raw bits), nChw16c: the convolution's input
///   dy: N x O x H x W bf16 (raw bits), nChw16c: the gradient of its output
///   scratch: conv1x1_weight_gradient_scratch_bytes(geometry, threads) bytes, 64-byte aligned
/// Runs on up to `threads` OpenMP threads. Requires conv1x1_weight_gradient_applies(geometry);
/// throws std::logic_error otherwise.
void conv1x1_weight_gradient_bf16(const Conv1x1Geometry& geometry, const std::uint16_t* x, const std::uint16_t* dy,
                                  float* dw, std::byte* scratch, int threads);

}  // namespace epochcast::cpu
