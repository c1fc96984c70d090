// Our own bf16 batch-norm kernels (executor/cpu/batch_norm_kernels.hpp) against plain fp64
// arithmetic on the same bf16 values, on shapes that reach every path: more pixels than one
// fp32 stretch (256) with a remainder that is not a multiple of the unrolling, several images and
// channel blocks, more threads than blocks. The layer tests (test_layer_conformance.cpp and
// test_cpu_layers.cpp) check them again inside BatchNorm and ResidualRelu against the fp64 layer
// reference.
//
// Tolerances:
//   statistics: fp32 sums of 64 values per lane, then fp64: 1e-5 relative (mean) and 1e-4
//     (variance, also with a mean 500 times the deviation, where E[x^2] - mean^2 cancels);
//   outputs rounded to bf16 (nearest even): |y - y_ref| <= 2^-8 |y_ref| per element, plus 1e-6 of
//     the rms for fp32 arithmetic before the rounding;
//   gradient sums: 1e-5 of the sum of |terms|.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "executor/bf16.hpp"
#include "executor/cpu/batch_norm_kernels.hpp"
#include "executor/cpu/kernels.hpp"
#include "tests/executor/layer_reference.hpp"

namespace epochcast::cpu {
namespace {

/// An N x C x P tensor in nChw16c bf16 bits, read back by logical index.
struct Blocked {
    BatchNormGeometry g;
    std::vector<std::uint16_t> bits;
    explicit Blocked(const BatchNormGeometry& geometry)
        : g(geometry), bits(std::size_t(geometry.batch) * geometry.channels * geometry.pixels) {}
    std::size_t index(int n, int c, int p) const { return reference::nchw16c_index(n, c, p, g.channels, g.pixels); }
    double at(int n, int c, int p) const { return from_bf16_bits(bits[index(n, c, p)]); }
};

/// Values mean + deviation x normal, each channel shifted by c / 8 too, rounded to bf16.
Blocked random_blocked(const BatchNormGeometry& g, unsigned seed, double mean = 0.0, double deviation = 1.0) {
    Blocked t(g);
    std::mt19937 engine(seed);
    std::normal_distribution<double> normal;
    for (int n = 0; n < g.batch; ++n)
        for (int c = 0; c < g.channels; ++c)
            for (int p = 0; p < g.pixels; ++p)
                t.bits[t.index(n, c, p)] =
                    to_bf16_bits(static_cast<float>(mean + c / 8.0 + deviation * normal(engine)));
    return t;
}

/// Per-channel values for the kernels: statistics of x (fp64), random gamma and beta.
struct Channels {
    std::vector<float> mean, inv_std, gamma, beta;
    BatchNormChannels view() const { return {mean.data(), inv_std.data(), gamma.data(), beta.data()}; }
};

Channels channels_of(const Blocked& x, unsigned seed) {
    const BatchNormGeometry& g = x.g;
    Channels ch;
    std::mt19937 engine(seed);
    std::normal_distribution<float> normal;
    const double values = double(g.batch) * g.pixels;
    for (int c = 0; c < g.channels; ++c) {
        double sum = 0, squares = 0;
        for (int n = 0; n < g.batch; ++n)
            for (int p = 0; p < g.pixels; ++p) sum += x.at(n, c, p);
        const double mean = sum / values;
        for (int n = 0; n < g.batch; ++n)
            for (int p = 0; p < g.pixels; ++p) squares += std::pow(x.at(n, c, p) - mean, 2);
        ch.mean.push_back(static_cast<float>(mean));
        ch.inv_std.push_back(static_cast<float>(1.0 / std::sqrt(squares / values + 1e-5)));
        ch.gamma.push_back(normal(engine));
        ch.beta.push_back(normal(engine));
    }
    return ch;
}

/// The forward's t for one element, in fp64 from the fp32 per-channel values.
double pre_activation(const Channels& ch, const Blocked& x, int n, int c, int p) {
    return ch.gamma[c] * (x.at(n, c, p) - ch.mean[c]) * ch.inv_std[c] + ch.beta[c];
}

double rms_of(const std::vector<double>& values) {
    double sum = 0;
    for (double v : values) sum += v * v;
    return std::sqrt(sum / std::max<std::size_t>(values.size(), 1));
}

/// Every element of `actual` within bf16 rounding of `expected` (logical order n, c, p).
void expect_rounded(const Blocked& actual, const std::vector<double>& expected, const char* what) {
    const BatchNormGeometry& g = actual.g;
    const double floor = 1e-6 * rms_of(expected);
    int wrong = 0;
    for (int n = 0; n < g.batch; ++n)
        for (int c = 0; c < g.channels; ++c)
            for (int p = 0; p < g.pixels; ++p) {
                const double want = expected[(std::size_t(n) * g.channels + c) * g.pixels + p];
                const double got = actual.at(n, c, p);
                if (std::abs(got - want) > std::ldexp(std::abs(want), -8) + floor && wrong++ < 5) {
                    ADD_FAILURE() << what << " at n " << n << " c " << c << " p " << p << ": " << got << " against "
                                  << want;
                }
            }
    EXPECT_EQ(wrong, 0) << what;
}

class CpuBatchNormKernels : public ::testing::Test {
protected:
    void SetUp() override {
        if (!cpu_has_avx512_bf16()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
    }
    // 3 images, 3 channel blocks, 301 pixels: one full fp32 stretch and a remainder of 45,
    // which is 1 past a multiple of the statistics' 4-way unrolling.
    const BatchNormGeometry g{3, 48, 301};
};

TEST_F(CpuBatchNormKernels, StatisticsMatchFp64AlsoWithAMeanLargeAgainstTheDeviation) {
    for (const auto& [mean, deviation] : {std::pair{0.0, 1.0}, std::pair{1000.0, 2.0}}) {
        const Blocked x = random_blocked(g, 1, mean, deviation);
        const Channels want = channels_of(x, 2);
        std::vector<float> got_mean(g.channels, -1.0f), got_variance(g.channels, -1.0f);
        batch_norm_statistics_bf16(g, x.bits.data(), got_mean.data(), got_variance.data(), 2);
        for (int c = 0; c < g.channels; ++c) {
            const double variance = 1.0 / (double(want.inv_std[c]) * want.inv_std[c]) - 1e-5;
            EXPECT_NEAR(got_mean[c], want.mean[c], 1e-5 * std::abs(want.mean[c]) + 1e-6) << "mean, channel " << c;
            EXPECT_NEAR(got_variance[c], variance, 1e-4 * variance) << "variance, channel " << c << " at mean " << mean;
        }
    }
}

TEST_F(CpuBatchNormKernels, ForwardNormalisesAddsTheShortcutAndAppliesTheRelu) {
    const Blocked x = random_blocked(g, 3), shortcut = random_blocked(g, 4);
    const Channels ch = channels_of(x, 5);
    for (const bool with_shortcut : {false, true}) {
        for (const bool relu : {false, true}) {
            Blocked y(g);
            batch_norm_forward_bf16(g, x.bits.data(), ch.view(), with_shortcut ? shortcut.bits.data() : nullptr, relu,
                                    y.bits.data(), 2);
            std::vector<double> want;
            for (int n = 0; n < g.batch; ++n)
                for (int c = 0; c < g.channels; ++c)
                    for (int p = 0; p < g.pixels; ++p) {
                        double t = pre_activation(ch, x, n, c, p) + (with_shortcut ? shortcut.at(n, c, p) : 0.0);
                        want.push_back(relu ? std::max(t, 0.0) : t);
                    }
            expect_rounded(y, want, with_shortcut ? (relu ? "add + relu" : "add") : (relu ? "relu" : "plain"));
        }
    }
}

TEST_F(CpuBatchNormKernels, ForwardMayWriteOverItsInput) {
    Blocked x = random_blocked(g, 6);
    const Blocked original = x;
    const Channels ch = channels_of(x, 7);
    Blocked separate(g);
    batch_norm_forward_bf16(g, original.bits.data(), ch.view(), nullptr, true, separate.bits.data(), 2);
    batch_norm_forward_bf16(g, x.bits.data(), ch.view(), nullptr, true, x.bits.data(), 2);
    EXPECT_EQ(x.bits, separate.bits);
}

/// The backward pass of every gate against fp64: the sums, dx, and (ReluGate::output) the gated dy
/// written back.
void check_backward(const BatchNormGeometry& g, ReluGate gate, int threads) {
    const Blocked x = random_blocked(g, 8), shortcut = random_blocked(g, 9), dy_in = random_blocked(g, 10);
    const Channels ch = channels_of(x, 11);
    // The forward output the output gate reads: relu(t + shortcut).
    Blocked y(g);
    batch_norm_forward_bf16(g, x.bits.data(), ch.view(), shortcut.bits.data(), true, y.bits.data(), threads);
    auto passed = [&](int n, int c, int p) {
        if (gate == ReluGate::none) return true;
        if (gate == ReluGate::recompute) return pre_activation(ch, x, n, c, p) > 0;
        return y.at(n, c, p) > 0;
    };
    std::vector<double> dgamma(g.channels, 0.0), dbeta(g.channels, 0.0), scale(g.channels, 0.0);
    const double values = double(g.batch) * g.pixels;
    for (int c = 0; c < g.channels; ++c) {
        for (int n = 0; n < g.batch; ++n)
            for (int p = 0; p < g.pixels; ++p) {
                const double grad = passed(n, c, p) ? dy_in.at(n, c, p) : 0.0;
                dbeta[c] += grad;
                dgamma[c] += grad * (x.at(n, c, p) - ch.mean[c]) * ch.inv_std[c];
                scale[c] += std::abs(grad) * (1 + std::abs(x.at(n, c, p) - ch.mean[c]) * ch.inv_std[c]);
            }
    }
    Blocked dy = dy_in;
    std::vector<float> got_dgamma(g.channels, -1.0f), got_dbeta(g.channels, -1.0f);
    batch_norm_backward_sums_bf16(g, x.bits.data(), dy.bits.data(), ch.view(), gate,
                                  gate == ReluGate::output ? y.bits.data() : nullptr, got_dgamma.data(),
                                  got_dbeta.data(), threads);
    for (int c = 0; c < g.channels; ++c) {
        EXPECT_NEAR(got_dbeta[c], dbeta[c], 1e-5 * scale[c]) << "dbeta, channel " << c;
        EXPECT_NEAR(got_dgamma[c], dgamma[c], 1e-5 * scale[c]) << "dgamma, channel " << c;
    }
    // dy: unchanged, or (output gate) gated exactly.
    for (int n = 0; n < g.batch; ++n)
        for (int c = 0; c < g.channels; ++c)
            for (int p = 0; p < g.pixels; ++p) {
                const double want = gate == ReluGate::output && !passed(n, c, p) ? 0.0 : dy_in.at(n, c, p);
                ASSERT_EQ(dy.at(n, c, p), want) << "dy at n " << n << " c " << c << " p " << p;
            }

    Blocked dx(g);
    batch_norm_backward_data_bf16(g, x.bits.data(), dy.bits.data(), ch.view(),
                                  gate == ReluGate::recompute ? ReluGate::recompute : ReluGate::none, got_dgamma.data(),
                                  got_dbeta.data(), dx.bits.data(), threads);
    std::vector<double> want;
    for (int n = 0; n < g.batch; ++n)
        for (int c = 0; c < g.channels; ++c)
            for (int p = 0; p < g.pixels; ++p) {
                const double grad = passed(n, c, p) ? dy_in.at(n, c, p) : 0.0;
                const double x_hat = (x.at(n, c, p) - ch.mean[c]) * ch.inv_std[c];
                want.push_back(ch.gamma[c] * ch.inv_std[c] *
                               (grad - double(got_dbeta[c]) / values - x_hat * double(got_dgamma[c]) / values));
            }
    expect_rounded(dx, want, "dx");
}

TEST_F(CpuBatchNormKernels, BackwardWithoutRelu) { check_backward(g, ReluGate::none, 2); }

TEST_F(CpuBatchNormKernels, BackwardRecomputesTheReluGateFromX) { check_backward(g, ReluGate::recompute, 2); }

TEST_F(CpuBatchNormKernels, BackwardGatesByTheOutputAndWritesTheGatedGradientBack) {
    check_backward(g, ReluGate::output, 2);
}

TEST_F(CpuBatchNormKernels, MoreThreadsThanChannelBlocks) {
    check_backward(BatchNormGeometry{2, 16, 7}, ReluGate::recompute, 4);
    check_backward(BatchNormGeometry{1, 32, 1}, ReluGate::output, 3);
}

TEST_F(CpuBatchNormKernels, MisuseIsRefused) {
    const BatchNormGeometry partial{2, 24, 9};
    EXPECT_FALSE(batch_norm_applies(partial));
    EXPECT_FALSE(batch_norm_applies(BatchNormGeometry{0, 16, 9}));
    std::vector<std::uint16_t> buffer(2 * 32 * 9);
    std::vector<float> values(32);
    EXPECT_THROW(batch_norm_statistics_bf16(partial, buffer.data(), values.data(), values.data(), 1), std::logic_error);
    const BatchNormGeometry fine{2, 16, 9};
    const BatchNormChannels ch{values.data(), values.data(), values.data(), values.data()};
    EXPECT_THROW(batch_norm_backward_sums_bf16(fine, buffer.data(), buffer.data(), ch, ReluGate::output, nullptr,
                                               values.data(), values.data(), 1),
                 std::logic_error);
    EXPECT_THROW(batch_norm_backward_data_bf16(fine, buffer.data(), buffer.data(), ch, ReluGate::output, values.data(),
                                               values.data(), buffer.data(), 1),
                 std::logic_error);
}

}  // namespace
}  // namespace epochcast::cpu
