// The CPU backend's own kernels (executor/cpu/kernels.cpp): work where oneDNN 2.6 leaves speed on
// the table. Each has a plain C++ reference in the tests (tests/executor/test_cpu_kernels.cpp) and
// is used by executor/cpu/layers.cpp only when applies() says so; oneDNN does everything else.
//
// The weight gradient of a 1x1, stride-1 bf16 convolution. oneDNN's jit_bf16_1x1 backward-weights
// kernel transposes its source and diff tensors before it multiplies, and on ResNet-50's 56 x 56
// layers is far slower than the forward pass over the same FLOPs (the figures: docs/performance.md,
// "Measurements behind the CPU backend's design"). The gradient is one matrix product,
//   dW[o][i] = sum over k = (n, p) of dY[n][o][p] X[n][i][p],   p a pixel, k running over N x H x W,
// which this kernel computes with AVX512-BF16's dot product of bf16 pairs (vdpbf16ps): each
// instruction adds x[k] y[k] + x[k+1] y[k+1] into 16 fp32 sums, so the operands are repacked,
// chunk by chunk, from oneDNN's nChw16c rows (16 channels of one pixel) into pairs of successive k
// per channel. A chunk is sized to stay in the core's L2 cache; an output tile of 8 rows by 32
// input channels (16 fp32 registers, each dy broadcast feeding two dot products) stays in
// registers across it, and while it computes, the rows of the next chunk are prefetched into L2
// (without that the kernel waits on memory and is no faster than oneDNN's). Threads take disjoint
// output rows, so no reduction is needed. The 3x3 stride-1 weight gradient is nine such products
// over shifted pixels (conv3x3_weight_gradient_bf16).
//
// The refresh of bf16 working weights. After each SGD step, every convolution's fp32 master weights
// (plain O x I x K x K) are rounded to bf16 into the blocked layouts oneDNN's primitives chose
// (ResNet-50: ABcd8b16a2b for forward, ABcd8a16b2a or BAcd8a16b2a for backward-data). oneDNN 2.6's
// reorder is slow at this (most of the whole update at 64 px; docs/performance.md).
// Bf16WorkingCopies writes both copies of a layer from one rounding of its master, with shuffles
// (a generic walk with 16-lane gathers was slower than oneDNN: Zen 4's gathers from 8 rows at a time
// are slow).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace epochcast::cpu {

/// A 1x1, stride-1, unpadded convolution over N x C x H x W tensors in nChw16c bf16.
struct Conv1x1Geometry {
    int batch = 0;         ///< N
    int in_channels = 0;   ///< I, a multiple of 16
    int out_channels = 0;  ///< O, a multiple of 16
    int pixels = 0;        ///< H x W
};

/// True when this CPU has AVX512-F, -BW, -VL and -BF16, the instruction sets of our own kernels.
bool cpu_has_avx512_bf16();

/// Whether layers built from now on may use these kernels and those of batch_norm_kernels.hpp
/// (default true). False makes oneDNN do everything, for benchmarks that compare the two in one
/// process (bench/cpu_train_bench.cpp) and tests that compare their results.
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
///   dw_bf16: when not null, also receives dW rounded to bf16 (nearest even, as round_to_bf16),
///            plain like dw: the tiles round their sums as they store them the last time
/// Runs on up to `threads` OpenMP threads. Requires conv1x1_weight_gradient_applies(geometry);
/// throws std::logic_error otherwise.
void conv1x1_weight_gradient_bf16(const Conv1x1Geometry& geometry, const std::uint16_t* x, const std::uint16_t* dy,
                                  float* dw, std::byte* scratch, int threads, std::uint16_t* dw_bf16 = nullptr);

/// A 3x3, stride-1 convolution padded by one zero pixel on each side (the output has the input's
/// H x W), over N x C x H x W tensors in nChw16c bf16: ResNet's 3x3 convolutions outside the first
/// block of a stage.
struct Conv3x3Geometry {
    int batch = 0;         ///< N
    int in_channels = 0;   ///< I, a multiple of 16
    int out_channels = 0;  ///< O, a multiple of 16
    int height = 0;        ///< H, of the input and the output
    int width = 0;         ///< W, of the input and the output
};

/// True when this CPU has AVX512-BF16 and the channel counts are positive multiples of 16 and N,
/// H and W positive.
bool conv3x3_weight_gradient_applies(const Conv3x3Geometry& geometry);

/// True where conv3x3_weight_gradient_bf16 is not slower than oneDNN 2.6's primitive
/// (docs/performance.md): maps of at least 14 x 14 pixels. A 7 x 7 map gives each tile only
/// 28 pairs between loading and storing its sums, too few to pay for the loads and stores.
bool conv3x3_weight_gradient_preferred(const Conv3x3Geometry& geometry);

/// Bytes of scratch conv3x3_weight_gradient_bf16 needs with `threads` threads (64-byte aligned):
/// a zero-padded copy of x (about x's size), the nine O x I fp32 tap planes, a chunk per thread.
std::size_t conv3x3_weight_gradient_scratch_bytes(const Conv3x3Geometry& geometry, int threads);

/// The weight gradient of the 3x3 convolution above,
///   dW[o][i][a][b] = sum over n, h, w of dY[n][o][h][w] X[n][i][h + a - 1][w + b - 1]
/// (X zero outside the map), fp32, plain O x I x 3 x 3. Nine 1x1 products over shifted pixels: x is
/// copied once with a zero pixel after each row and a zero row above and below, so that every
/// tap is the 1x1 kernel's tile over x's rows at a constant offset; dy's pairs skip the padding.
///   x:  N x I x H x W bf16 (raw bits), nChw16c;   dy: N x O x H x W bf16 (raw bits), nChw16c
///   scratch: conv3x3_weight_gradient_scratch_bytes(geometry, threads) bytes, 64-byte aligned
///   dw_bf16: when not null, also receives dW rounded to bf16 (nearest even), plain like dw
/// Runs on up to `threads` OpenMP threads. Requires conv3x3_weight_gradient_applies(geometry);
/// throws std::logic_error otherwise.
void conv3x3_weight_gradient_bf16(const Conv3x3Geometry& geometry, const std::uint16_t* x, const std::uint16_t* dy,
                                  float* dw, std::byte* scratch, int threads, std::uint16_t* dw_bf16 = nullptr);

/// A oneDNN blocked memory layout (dnnl_blocking_desc_t) in plain terms, so that the kernels do
/// not depend on oneDNN's headers. The element at logical index (i_0, ..., i_{n-1}) lies at
///   offset0 + sum_d (i_d / B_d) x strides[d] + (its position inside the tile),
/// where B_d is the product of the inner blocks that split dimension d, and the tile position is
/// the mixed-radix number whose digits are the inner blocks, outermost first.
struct BlockedLayout {
    std::vector<std::int64_t> dims;         ///< logical sizes, outermost first (O, I, KH, KW)
    std::vector<std::int64_t> padded_dims;  ///< sizes rounded up to whole blocks (padding holds zeros)
    std::vector<std::int64_t> strides;      ///< per dimension: elements between its consecutive outer blocks
    std::vector<int> inner_blocks;          ///< block sizes, outermost first
    std::vector<int> inner_dims;            ///< the dimension each inner block splits
    std::int64_t offset0 = 0;
};

/// The bf16 working copies of one convolution's weights, in the blocked layouts oneDNN's bf16
/// primitives take on AVX512-BF16 CPUs, refreshed from the plain fp32 master weights together:
/// the master is rounded once into a bf16 scratch ordered K x K x O x I (one O x I matrix per
/// kernel pixel, so that 16 input channels lie side by side), then each 16 x 16 tile is written
/// with shuffles:
///   forward, inner blocks 8b16a2b (pairs of input channels): the tile is a 16 x 8 transpose of
///     32-bit pairs;
///   backward-data, inner blocks 8a16b2a (pairs of output channels): rows o and o + 1
///     interleaved.
class Bf16WorkingCopies {
public:
    /// True when this CPU has AVX512-BF16 and `layout` is a 4-D O x I x K x K layout with O and I
    /// multiples of 16 (no padding) whose inner blocks are 8b16a2b or 8a16b2a.
    static bool applies(const BlockedLayout& layout);
    /// Adds a copy whose buffer is `target`. Throws std::invalid_argument when !applies(layout)
    /// or its sizes differ from the first copy's.
    void add(const BlockedLayout& layout, std::uint16_t* target);
    bool empty() const { return copies_.empty(); }
    std::size_t size() const { return copies_.size(); }
    /// Every copy = bf16(master) (nearest even, vcvtneps2bf16); master: plain O x I x K x K fp32.
    /// On up to `threads` OpenMP threads.
    void write(const float* master, int threads) const;

private:
    struct Copy {
        bool input_pairs = true;                ///< 8b16a2b (else 8a16b2a)
        std::array<std::int64_t, 4> strides{};  ///< between outer blocks of O, I, KH, KW
        std::uint16_t* target = nullptr;
    };
    std::array<std::int64_t, 4> dims_{};  ///< O, I, KH, KW
    std::vector<Copy> copies_;
};

}  // namespace epochcast::cpu
