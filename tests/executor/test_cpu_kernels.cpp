// The CPU backend's own kernels (executor/cpu/kernels.hpp) against plain fp64 sums of the same
// bf16 values.
//
// Tolerance of the 1x1 weight gradient: its inputs are bf16, whose products are exact in fp32, so
// the only error is fp32 accumulation over k = N x H x W terms (about 6e-8 per addition, growing
// with the square root of the terms when signs are random): 1e-5 of the rms for up to a few
// thousand terms. The layer test (test_cpu_layers.cpp, Convolution1x1Stride1) checks it inside
// the Convolution layer against the fp64 convolution of unrounded values.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "executor/bf16.hpp"
#include "executor/cpu/kernels.hpp"
#include "tests/executor/layer_reference.hpp"

namespace epochcast::cpu {
namespace {

constexpr int kBlock = 16;

/// A random N x C x P tensor in nChw16c bf16 (raw bits), and its values as doubles, plain.
struct BlockedTensor {
    std::vector<std::uint16_t> bits;  ///< N x C/16 x P x 16
    std::vector<double> plain;        ///< N x C x P
};

BlockedTensor random_blocked(int batch, int channels, int pixels, unsigned seed) {
    std::mt19937 engine(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    BlockedTensor t{std::vector<std::uint16_t>(std::size_t(batch) * channels * pixels),
                    std::vector<double>(std::size_t(batch) * channels * pixels)};
    for (int n = 0; n < batch; ++n) {
        for (int c = 0; c < channels; ++c) {
            for (int p = 0; p < pixels; ++p) {
                const std::uint16_t bits = to_bf16_bits(normal(engine));
                const std::size_t blocked =
                    ((std::size_t(n) * (channels / kBlock) + c / kBlock) * pixels + p) * kBlock + c % kBlock;
                t.bits[blocked] = bits;
                t.plain[(std::size_t(n) * channels + c) * pixels + p] = from_bf16_bits(bits);
            }
        }
    }
    return t;
}

/// dw[o][i] = sum_{n,p} dy[n][o][p] x[n][i][p], fp64.
std::vector<double> reference_weight_gradient(const Conv1x1Geometry& g, const BlockedTensor& x, const BlockedTensor& dy) {
    std::vector<double> dw(std::size_t(g.out_channels) * g.in_channels, 0.0);
    for (int n = 0; n < g.batch; ++n) {
        for (int o = 0; o < g.out_channels; ++o) {
            const double* dy_row = dy.plain.data() + (std::size_t(n) * g.out_channels + o) * g.pixels;
            for (int i = 0; i < g.in_channels; ++i) {
                const double* x_row = x.plain.data() + (std::size_t(n) * g.in_channels + i) * g.pixels;
                double sum = 0;
                for (int p = 0; p < g.pixels; ++p) sum += dy_row[p] * x_row[p];
                dw[std::size_t(o) * g.in_channels + i] += sum;
            }
        }
    }
    return dw;
}

/// Runs the kernel on random tensors; returns max error / rms against fp64.
double weight_gradient_error(const Conv1x1Geometry& g, int threads) {
    const BlockedTensor x = random_blocked(g.batch, g.in_channels, g.pixels, 11);
    const BlockedTensor dy = random_blocked(g.batch, g.out_channels, g.pixels, 12);
    // Stale values in dw and scratch must not leak into the result.
    std::vector<float> dw(std::size_t(g.out_channels) * g.in_channels, 1e30f);
    const std::size_t scratch_bytes = conv1x1_weight_gradient_scratch_bytes(g, threads);
    std::unique_ptr<std::byte, void (*)(void*)> scratch(
        static_cast<std::byte*>(std::aligned_alloc(64, (scratch_bytes + 63) / 64 * 64)), std::free);
    std::fill(scratch.get(), scratch.get() + scratch_bytes, std::byte{0x7f});
    conv1x1_weight_gradient_bf16(g, x.bits.data(), dy.bits.data(), dw.data(), scratch.get(), threads);
    return reference::relative_error(dw, reference_weight_gradient(g, x, dy));
}

class CpuConv1x1WeightGradient : public ::testing::Test {
protected:
    void SetUp() override {
        if (!conv1x1_weight_gradient_applies(Conv1x1Geometry{1, 16, 16, 1})) {
            GTEST_SKIP() << "this CPU has no AVX512-BF16";
        }
    }
};

TEST_F(CpuConv1x1WeightGradient, PairsThatCrossFromOneImageToTheNextAreSummed) {
    // 7 x 7 pixels: the pair (k = 48, 49) is the last pixel of image 0 and the first of image 1.
    EXPECT_LT(weight_gradient_error({2, 32, 48, 49}, 2), 1e-5);
}

TEST_F(CpuConv1x1WeightGradient, AnOddNumberOfTermsEndsWithAHalfPair) {
    EXPECT_LT(weight_gradient_error({1, 16, 32, 49}, 1), 1e-5);
    EXPECT_LT(weight_gradient_error({3, 48, 16, 5}, 2), 1e-5);
}

TEST_F(CpuConv1x1WeightGradient, ManyChunksAccumulateIntoTheTile) {
    // x read in place (an even 28 x 28 map): 512 input channels give 256 pairs a chunk, and a
    // chunk ends with its image: 392 pairs an image take chunks of 256 and 136, four in all.
    EXPECT_LT(weight_gradient_error({2, 512, 32, 784}, 2), 1e-5);
    // x packed, pairs spanning images (3 x 3, odd): 2,048 input channels give 64 pairs a chunk;
    // 16 x 9 terms are 72 pairs, two chunks.
    EXPECT_LT(weight_gradient_error({16, 2048, 16, 9}, 2), 1e-5);
    // x packed because the map is small (2 x 2: 2 pairs an image): 40 x 4 terms are 80 pairs, two
    // chunks of up to 64.
    EXPECT_LT(weight_gradient_error({40, 2048, 16, 4}, 2), 1e-5);
}

TEST_F(CpuConv1x1WeightGradient, MoreThreadsThanOutputBlocks) {
    EXPECT_LT(weight_gradient_error({2, 64, 16, 36}, 3), 1e-5);
}

TEST_F(CpuConv1x1WeightGradient, SmallSumsAreExactAndPlacedAtTheirChannels) {
    // One image, two pixels: dw[o][i] = 1 x i + 64 o x 1, integers below 1,024,
    // exact in every precision, so each element checks the position it was written to.
    const Conv1x1Geometry g{1, 32, 16, 2};
    std::vector<std::uint16_t> x(std::size_t(g.in_channels) * 2), dy(std::size_t(g.out_channels) * 2);
    auto at = [](int c, int p) { return ((c / kBlock) * 2 + p) * kBlock + c % kBlock; };
    for (int i = 0; i < g.in_channels; ++i) {
        x[at(i, 0)] = to_bf16_bits(float(i));
        x[at(i, 1)] = to_bf16_bits(1.0f);
    }
    for (int o = 0; o < g.out_channels; ++o) {
        dy[at(o, 0)] = to_bf16_bits(1.0f);
        dy[at(o, 1)] = to_bf16_bits(float(64 * o));
    }
    std::vector<float> dw(std::size_t(g.out_channels) * g.in_channels, -1.0f);
    alignas(64) static std::byte scratch[1 << 20];
    ASSERT_LE(conv1x1_weight_gradient_scratch_bytes(g, 2), sizeof(scratch));
    conv1x1_weight_gradient_bf16(g, x.data(), dy.data(), dw.data(), scratch, 2);
    for (int o = 0; o < g.out_channels; ++o) {
        for (int i = 0; i < g.in_channels; ++i) {
            EXPECT_EQ(dw[std::size_t(o) * g.in_channels + i], float(i + 64 * o)) << "o " << o << " i " << i;
        }
    }
}

TEST(CpuConv1x1WeightGradientGeometry, ChannelsOutsideWholeBlocksAreNotTaken) {
    EXPECT_FALSE(conv1x1_weight_gradient_applies({2, 24, 32, 49}));
    EXPECT_FALSE(conv1x1_weight_gradient_applies({2, 32, 8, 49}));
    EXPECT_FALSE(conv1x1_weight_gradient_applies({0, 32, 32, 49}));
    EXPECT_FALSE(conv1x1_weight_gradient_applies({2, 32, 32, 0}));
    EXPECT_THROW(conv1x1_weight_gradient_bf16({2, 24, 32, 49}, nullptr, nullptr, nullptr, nullptr, 1), std::logic_error);
}

}  // namespace
}  // namespace epochcast::cpu
