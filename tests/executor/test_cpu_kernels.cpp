// The CPU backend's own kernels (executor/cpu/kernels.hpp) against plain fp64 sums of the same
// bf16 values.
//
// Tolerance of the 1x1 weight gradient: its inputs are bf16, whose products are exact in fp32, so
// the only error is fp32 accumulation over k = N x H x W terms (about 6e-8 per addition, growing
// with the square root of the terms when signs are random): 1e-5 of the rms for up to a few
// thousand terms. The layer test (test_layer_conformance.cpp, Convolution1x1Stride1) checks it inside
// the Convolution layer against the fp64 convolution of unrounded values.
//
// The bf16 working copies (Bf16WorkingCopies) must equal oneDNN's reorder bit for bit: both round
// to nearest even with the same instruction, so any difference is a misplaced element.
#include <gtest/gtest.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "executor/bf16.hpp"
#include "executor/cpu/kernels.hpp"
#include "executor/cpu/layers.hpp"
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
                t.bits[reference::nchw16c_index(n, c, p, channels, pixels)] = bits;
                t.plain[(std::size_t(n) * channels + c) * pixels + p] = from_bf16_bits(bits);
            }
        }
    }
    return t;
}

/// A kernel's scratch, 64-byte aligned, filled with stale bytes that must not leak into a result.
using StaleScratch = std::unique_ptr<std::byte, void (*)(void*)>;

StaleScratch stale_scratch(std::size_t bytes) {
    StaleScratch scratch(static_cast<std::byte*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)), std::free);
    std::fill(scratch.get(), scratch.get() + bytes, std::byte{0x7f});
    return scratch;
}

/// dw[o][i] = sum_{n,p} dy[n][o][p] x[n][i][p], fp64.
std::vector<double> reference_weight_gradient(const Conv1x1Geometry& g, const BlockedTensor& x,
                                              const BlockedTensor& dy) {
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

/// A kernel's gradient run a second time with a bf16 copy requested (dw_bf16) must write the same
/// fp32 values, and a bf16 copy that is each of them rounded to nearest even (round_to_bf16).
template <typename Kernel>
void expect_bf16_copy_is_the_rounded_gradient(const std::vector<float>& dw, Kernel run_with_copy) {
    std::vector<float> again(dw.size(), 1e30f);
    std::vector<std::uint16_t> bf16(dw.size(), 0x7f7f);
    run_with_copy(again.data(), bf16.data());
    std::size_t fp32_differ = 0, bf16_differ = 0;
    for (std::size_t i = 0; i < dw.size(); ++i) {
        fp32_differ += std::bit_cast<std::uint32_t>(again[i]) != std::bit_cast<std::uint32_t>(dw[i]);
        bf16_differ += bf16[i] != to_bf16_bits(dw[i]);
    }
    EXPECT_EQ(fp32_differ, 0u) << "of " << dw.size() << " fp32 values";
    EXPECT_EQ(bf16_differ, 0u) << "of " << dw.size() << " bf16 values";
}

/// Runs the kernel on random tensors; returns max error / rms against fp64. Checks the bf16 copy
/// too (expect_bf16_copy_is_the_rounded_gradient).
double weight_gradient_error(const Conv1x1Geometry& g, int threads) {
    const BlockedTensor x = random_blocked(g.batch, g.in_channels, g.pixels, 11);
    const BlockedTensor dy = random_blocked(g.batch, g.out_channels, g.pixels, 12);
    // Stale values in dw and the scratch must not leak into the result.
    std::vector<float> dw(std::size_t(g.out_channels) * g.in_channels, 1e30f);
    const StaleScratch scratch = stale_scratch(conv1x1_weight_gradient_scratch_bytes(g, threads));
    conv1x1_weight_gradient_bf16(g, x.bits.data(), dy.bits.data(), dw.data(), scratch.get(), threads);
    expect_bf16_copy_is_the_rounded_gradient(dw, [&](float* again, std::uint16_t* bf16) {
        conv1x1_weight_gradient_bf16(g, x.bits.data(), dy.bits.data(), again, scratch.get(), threads, bf16);
    });
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
    EXPECT_THROW(conv1x1_weight_gradient_bf16({2, 24, 32, 49}, nullptr, nullptr, nullptr, nullptr, 1),
                 std::logic_error);
}

// ---------------------------------------------------------------------------------------------
// The 3x3 weight gradient

/// dw[o][i][a][b] = sum_{n,h,w} dy[n][o][h][w] x[n][i][h + a - 1][w + b - 1] (x zero outside), fp64.
std::vector<double> reference_weight_gradient_3x3(const Conv3x3Geometry& g, const BlockedTensor& x,
                                                  const BlockedTensor& dy) {
    const int pixels = g.height * g.width;
    std::vector<double> dw(std::size_t(g.out_channels) * g.in_channels * 9, 0.0);
    for (int n = 0; n < g.batch; ++n) {
        for (int o = 0; o < g.out_channels; ++o) {
            const double* dy_map = dy.plain.data() + (std::size_t(n) * g.out_channels + o) * pixels;
            for (int i = 0; i < g.in_channels; ++i) {
                const double* x_map = x.plain.data() + (std::size_t(n) * g.in_channels + i) * pixels;
                for (int a = 0; a < 3; ++a) {
                    for (int b = 0; b < 3; ++b) {
                        double sum = 0;
                        for (int h = 0; h < g.height; ++h) {
                            const int xh = h + a - 1;
                            if (xh < 0 || xh >= g.height) continue;
                            for (int w = 0; w < g.width; ++w) {
                                const int xw = w + b - 1;
                                if (xw < 0 || xw >= g.width) continue;
                                sum += dy_map[h * g.width + w] * x_map[xh * g.width + xw];
                            }
                        }
                        dw[((std::size_t(o) * g.in_channels + i) * 3 + a) * 3 + b] += sum;
                    }
                }
            }
        }
    }
    return dw;
}

/// Runs the kernel on random tensors (stale values in dw and the scratch); returns max error / rms
/// against fp64. Checks the bf16 copy too.
double weight_gradient_3x3_error(const Conv3x3Geometry& g, int threads) {
    const int pixels = g.height * g.width;
    const BlockedTensor x = random_blocked(g.batch, g.in_channels, pixels, 21);
    const BlockedTensor dy = random_blocked(g.batch, g.out_channels, pixels, 22);
    std::vector<float> dw(std::size_t(g.out_channels) * g.in_channels * 9, 1e30f);
    const StaleScratch scratch = stale_scratch(conv3x3_weight_gradient_scratch_bytes(g, threads));
    conv3x3_weight_gradient_bf16(g, x.bits.data(), dy.bits.data(), dw.data(), scratch.get(), threads);
    expect_bf16_copy_is_the_rounded_gradient(dw, [&](float* again, std::uint16_t* bf16) {
        conv3x3_weight_gradient_bf16(g, x.bits.data(), dy.bits.data(), again, scratch.get(), threads, bf16);
    });
    return reference::relative_error(dw, reference_weight_gradient_3x3(g, x, dy));
}

class CpuConv3x3WeightGradient : public ::testing::Test {
protected:
    void SetUp() override {
        if (!conv3x3_weight_gradient_applies(Conv3x3Geometry{1, 16, 16, 1, 1})) {
            GTEST_SKIP() << "this CPU has no AVX512-BF16";
        }
    }
};

TEST_F(CpuConv3x3WeightGradient, EdgesOfTheMapSeeZeros) {
    // Every tap of a 3 x 3 map, and of a single pixel, crosses an edge for some output pixel.
    EXPECT_LT(weight_gradient_3x3_error({2, 16, 32, 3, 3}, 1), 1e-5);
    EXPECT_LT(weight_gradient_3x3_error({3, 32, 16, 1, 1}, 2), 1e-5);
    // A 1-pixel-high and a 1-pixel-wide map.
    EXPECT_LT(weight_gradient_3x3_error({2, 16, 16, 1, 9}, 2), 1e-5);
    EXPECT_LT(weight_gradient_3x3_error({2, 16, 16, 9, 1}, 2), 1e-5);
}

TEST_F(CpuConv3x3WeightGradient, AnOddNumberOfPaddedPositionsEndsWithAHalfPair) {
    // 5 x 6: 5 rows of 7 padded positions, 35 in all.
    EXPECT_LT(weight_gradient_3x3_error({2, 32, 16, 5, 6}, 2), 1e-5);
    // ResNet-50's last stage at 224 px: 7 x 7, 512 channels.
    EXPECT_LT(weight_gradient_3x3_error({2, 512, 512, 7, 7}, 2), 1e-5);
}

TEST_F(CpuConv3x3WeightGradient, ManyChunksAndImagesAccumulateIntoTheTile) {
    // 56 x 56: 1,596 pairs an image, 13 chunks each, over two images.
    EXPECT_LT(weight_gradient_3x3_error({2, 64, 64, 56, 56}, 2), 1e-5);
    EXPECT_LT(weight_gradient_3x3_error({4, 128, 32, 14, 14}, 2), 1e-5);
}

TEST_F(CpuConv3x3WeightGradient, MoreThreadsThanOutputBlocks) {
    EXPECT_LT(weight_gradient_3x3_error({2, 48, 32, 6, 5}, 3), 1e-5);
}

TEST_F(CpuConv3x3WeightGradient, EachTapIsPlacedAtItsKernelPixel) {
    // One image, one channel block each way, a 3 x 3 map; x at pixel (h, w) is 1 in channel i,
    // dy is 1 at the centre only for channel o: then dW[o][i][a][b] = x[i][a][b], all of which
    // differ, so a tap written to another kernel pixel or channel fails exactly.
    const Conv3x3Geometry g{1, 16, 16, 3, 3};
    std::vector<std::uint16_t> x(16 * 9), dy(16 * 9, 0);
    for (int p = 0; p < 9; ++p) {
        for (int c = 0; c < 16; ++c) x[p * 16 + c] = to_bf16_bits(float(1 + c * 9 + p));
    }
    for (int c = 0; c < 16; ++c) dy[4 * 16 + c] = to_bf16_bits(float(1 + c));  // the centre pixel
    std::vector<float> dw(16 * 16 * 9, -1.0f);
    alignas(64) static std::byte scratch[1 << 20];
    ASSERT_LE(conv3x3_weight_gradient_scratch_bytes(g, 2), sizeof(scratch));
    conv3x3_weight_gradient_bf16(g, x.data(), dy.data(), dw.data(), scratch, 2);
    for (int o = 0; o < 16; ++o) {
        for (int i = 0; i < 16; ++i) {
            for (int t = 0; t < 9; ++t) {
                EXPECT_EQ(dw[(o * 16 + i) * 9 + t], float((1 + o) * (1 + i * 9 + t)))
                    << "o " << o << " i " << i << " tap " << t;
            }
        }
    }
}

TEST(CpuConv3x3WeightGradientGeometry, PreferredOverOneDnnFrom14By14Pixels) {
    if (!conv3x3_weight_gradient_applies({1, 16, 16, 1, 1})) GTEST_SKIP() << "this CPU has no AVX512-BF16";
    EXPECT_TRUE(conv3x3_weight_gradient_preferred({16, 256, 256, 14, 14}));
    EXPECT_TRUE(conv3x3_weight_gradient_preferred({16, 64, 64, 56, 56}));
    EXPECT_FALSE(conv3x3_weight_gradient_preferred({16, 512, 512, 7, 7}));
    EXPECT_FALSE(conv3x3_weight_gradient_preferred({16, 24, 24, 56, 56}));
}

TEST(CpuConv3x3WeightGradientGeometry, ChannelsOutsideWholeBlocksAreNotTaken) {
    EXPECT_FALSE(conv3x3_weight_gradient_applies({2, 24, 32, 7, 7}));
    EXPECT_FALSE(conv3x3_weight_gradient_applies({2, 32, 8, 7, 7}));
    EXPECT_FALSE(conv3x3_weight_gradient_applies({0, 32, 32, 7, 7}));
    EXPECT_FALSE(conv3x3_weight_gradient_applies({2, 32, 32, 0, 7}));
    EXPECT_FALSE(conv3x3_weight_gradient_applies({2, 32, 32, 7, 0}));
    EXPECT_THROW(conv3x3_weight_gradient_bf16({2, 24, 32, 7, 7}, nullptr, nullptr, nullptr, nullptr, 1),
                 std::logic_error);
}

// ---------------------------------------------------------------------------------------------
// Bf16WorkingCopies

using tag = dnnl::memory::format_tag;

/// fp32 weights O x I x K x K: normal values over several binades, and values exactly halfway
/// between two bf16 numbers (ties to even, both ways).
std::vector<float> random_weights(const dnnl::memory::dims& dims, unsigned seed) {
    std::mt19937 engine(seed);
    std::normal_distribution<float> normal(0.0f, 0.05f);
    std::vector<float> values(std::size_t(dims[0] * dims[1] * dims[2] * dims[3]));
    for (std::size_t i = 0; i < values.size(); ++i) {
        values[i] = normal(engine);
        if (i % 7 == 3) {  // a tie: the upper half odd or even, the lower exactly 0x8000
            const std::uint32_t upper = 0x3c00u + static_cast<std::uint32_t>(i % 5);
            values[i] = std::bit_cast<float>(upper << 16 | 0x8000u);
        }
    }
    return values;
}

/// oneDNN's reorder of `values` into bf16 `wanted`, as raw bits.
std::vector<std::uint16_t> onednn_copy(const std::vector<float>& values, const dnnl::memory::dims& dims, tag wanted) {
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    dnnl::memory plain({dims, dnnl::memory::data_type::f32, tag::abcd}, engine, const_cast<float*>(values.data()));
    dnnl::memory copy({dims, dnnl::memory::data_type::bf16, wanted}, engine);
    dnnl::reorder(plain, copy).execute(stream, plain, copy);
    stream.wait();
    const auto* bits = static_cast<const std::uint16_t*>(copy.get_data_handle());
    return std::vector<std::uint16_t>(bits, bits + copy.get_desc().get_size() / sizeof(std::uint16_t));
}

BlockedLayout layout_of(const dnnl::memory::dims& dims, tag wanted) {
    return blocked_layout_of(dnnl::memory::desc(dims, dnnl::memory::data_type::bf16, wanted)).value();
}

class CpuBf16WorkingCopies : public ::testing::Test {
protected:
    void SetUp() override {
        if (!Bf16WorkingCopies::applies(layout_of({16, 16, 1, 1}, tag::ABcd8b16a2b))) {
            GTEST_SKIP() << "no AVX512-BF16 on this CPU";
        }
    }

    /// Every layout oneDNN's bf16 convolutions take here, written together from one master, on
    /// `threads`, against oneDNN's reorder of each.
    static void expect_like_onednn(const dnnl::memory::dims& dims, int threads) {
        const std::vector<float> master = random_weights(dims, static_cast<unsigned>(dims[0] * 31 + dims[1] + dims[2]));
        const tag tags[] = {tag::ABcd8b16a2b, tag::ABcd8a16b2a, tag::BAcd8a16b2a};
        std::vector<std::vector<std::uint16_t>> ours;
        Bf16WorkingCopies copies;
        for (const tag wanted : tags) {
            const BlockedLayout layout = layout_of(dims, wanted);
            ASSERT_TRUE(Bf16WorkingCopies::applies(layout));
            ours.emplace_back(dnnl::memory::desc(dims, dnnl::memory::data_type::bf16, wanted).get_size() / 2, 0xffff);
        }
        for (std::size_t k = 0; k < ours.size(); ++k) copies.add(layout_of(dims, tags[k]), ours[k].data());
        ASSERT_EQ(copies.size(), 3u);
        copies.write(master.data(), threads);
        for (std::size_t k = 0; k < ours.size(); ++k) {
            const std::vector<std::uint16_t> expected = onednn_copy(master, dims, tags[k]);
            ASSERT_EQ(ours[k].size(), expected.size());
            std::size_t wrong = 0, first = expected.size();
            for (std::size_t i = 0; i < expected.size(); ++i) {
                if (ours[k][i] != expected[i] && wrong++ == 0) first = i;
            }
            EXPECT_EQ(wrong, 0u) << "layout " << k << " of " << dims[0] << "x" << dims[1] << "x" << dims[2] << "x"
                                 << dims[3] << ": first difference at element " << first;
        }
    }
};

TEST_F(CpuBf16WorkingCopies, OneByOneKernelsMatchOneDnn) {
    expect_like_onednn({16, 16, 1, 1}, 1);
    expect_like_onednn({64, 256, 1, 1}, 2);
    expect_like_onednn({48, 32, 1, 1}, 3);
}

TEST_F(CpuBf16WorkingCopies, SpatialKernelsMatchOneDnn) {
    expect_like_onednn({32, 16, 3, 3}, 1);
    expect_like_onednn({64, 48, 3, 3}, 2);
    expect_like_onednn({16, 32, 7, 5}, 2);  // rows of I x K x K whose length is not a multiple of 16
}

TEST_F(CpuBf16WorkingCopies, RefreshingAgainFollowsTheMaster) {
    const dnnl::memory::dims dims{32, 32, 3, 3};
    std::vector<float> master = random_weights(dims, 5);
    std::vector<std::uint16_t> ours(master.size());
    Bf16WorkingCopies copies;
    copies.add(layout_of(dims, tag::ABcd8b16a2b), ours.data());
    copies.write(master.data(), 2);
    for (float& value : master) value = -2 * value;
    copies.write(master.data(), 2);
    EXPECT_EQ(ours, onednn_copy(master, dims, tag::ABcd8b16a2b));
}

TEST_F(CpuBf16WorkingCopies, OtherLayoutsAreLeftToOneDnn) {
    EXPECT_FALSE(Bf16WorkingCopies::applies(layout_of({64, 3, 7, 7}, tag::AcdB16a2b)));     // conv1: padded inputs
    EXPECT_FALSE(Bf16WorkingCopies::applies(layout_of({1000, 2048, 1, 1}, tag::aBcd16b)));  // fc
    EXPECT_FALSE(Bf16WorkingCopies::applies(layout_of({64, 64, 3, 3}, tag::ABcd16b16a2b)));
    EXPECT_FALSE(Bf16WorkingCopies::applies(layout_of({24, 32, 1, 1}, tag::ABcd8b16a2b)));  // 24 outputs: padded
    EXPECT_FALSE(Bf16WorkingCopies::applies(layout_of({64, 64, 1, 1}, tag::abcd)));
    Bf16WorkingCopies copies;
    std::vector<std::uint16_t> buffer(64 * 64 * 9);
    EXPECT_THROW(copies.add(layout_of({64, 3, 7, 7}, tag::AcdB16a2b), buffer.data()), std::invalid_argument);
    copies.add(layout_of({64, 64, 1, 1}, tag::ABcd8b16a2b), buffer.data());
    EXPECT_THROW(copies.add(layout_of({64, 64, 3, 3}, tag::ABcd8a16b2a), buffer.data()), std::invalid_argument);
}

}  // namespace
}  // namespace epochcast::cpu
