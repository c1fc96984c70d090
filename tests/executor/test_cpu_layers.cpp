// Each oneDNN layer of executor/cpu/layers.hpp, forward and backward, against a plain fp64
// reference written here, on random inputs; in fp32 and bf16, in both activation layouts.
//
// Error measure: max |actual - reference| / rms(reference) over a tensor. Tolerances:
//   fp32: 1e-5 for sums of up to ~600 products (fp32 rounding ~6e-8 per operation, growing
//         with the square root of the terms); 1e-6 for element-wise layers.
//   bf16: inputs and weights rounded to 8 significant bits (relative error up to 2^-9 = 0.2%
//         each), outputs rounded again. Since the measure divides the largest error by the rms,
//         an element of 4 rms rounded twice already gives 1.6e-2: 2e-2 for element-wise layers
//         (measured up to 1.1e-2), 4e-2 for sums of products (measured up to 2.8e-2, for the
//         backward-data of the 1x1 stride-2 convolution whose dx is zero at 3/4 of the pixels,
//         which lowers the rms).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "executor/cpu/layers.hpp"
#include "model/errors.hpp"

namespace epochcast::cpu {
namespace {

constexpr int kThreads = 2;

struct Variant {
    DataType type;
    Layout layout;
};

std::string variant_name(const ::testing::TestParamInfo<Variant>& info) {
    return std::string(info.param.type == DataType::bf16 ? "bf16" : "fp32") +
           (info.param.layout == Layout::nhwc ? "_nhwc" : "_blocked");
}

/// Plain N x C x H x W dims and fp64 values.
struct Tensor {
    int n = 0, c = 0, h = 0, w = 0;
    std::vector<double> data;
    Tensor(int n_, int c_, int h_, int w_) : n(n_), c(c_), h(h_), w(w_), data(std::size_t(n_) * c_ * h_ * w_, 0.0) {}
    double& at(int in, int ic, int ih, int iw) { return data[((std::size_t(in) * c + ic) * h + ih) * w + iw]; }
    double at(int in, int ic, int ih, int iw) const { return data[((std::size_t(in) * c + ic) * h + ih) * w + iw]; }
    Shape shape() const { return Shape{c, h, w}; }
    std::vector<float> floats() const { return std::vector<float>(data.begin(), data.end()); }
};

Tensor random_tensor(int n, int c, int h, int w, std::uint64_t seed) {
    Tensor t(n, c, h, w);
    std::mt19937_64 generator(seed);
    std::normal_distribution<double> normal;
    // Rounded to fp32, so that the fp64 reference sees exactly the values the layer sees.
    for (double& value : t.data) value = static_cast<float>(normal(generator));
    return t;
}

std::vector<float> random_vector(std::size_t count, std::uint64_t seed, double scale = 1.0) {
    std::mt19937_64 generator(seed);
    std::normal_distribution<double> normal(0.0, scale);
    std::vector<float> values(count);
    for (float& value : values) value = static_cast<float>(normal(generator));
    return values;
}

/// max |actual - reference| / rms(reference).
template <typename Actual>
double relative_error(const Actual& actual, const std::vector<double>& reference) {
    EXPECT_EQ(actual.size(), reference.size());
    double max_difference = 0, sum_squares = 0;
    for (std::size_t i = 0; i < reference.size(); ++i) {
        max_difference = std::max(max_difference, std::abs(double(actual[i]) - reference[i]));
        sum_squares += reference[i] * reference[i];
    }
    const double rms = std::sqrt(sum_squares / double(reference.size()));
    return max_difference / std::max(rms, 1e-30);
}

class CpuLayer : public ::testing::TestWithParam<Variant> {
protected:
    void SetUp() override {
        if (GetParam().type == DataType::bf16 && !cpu_has_native_bf16()) {
            GTEST_SKIP() << "no native bf16 on this CPU (oneDNN ISA " << cpu_isa_name() << ")";
        }
    }
    DataType type() const { return GetParam().type; }
    bool bf16() const { return GetParam().type == DataType::bf16; }
    /// Tolerance for sums of products and for element-wise layers (see the header comment).
    double sum_tolerance() const { return bf16() ? 4e-2 : 1e-5; }
    double elementwise_tolerance() const { return bf16() ? 2e-2 : 1e-6; }

    Activation activation(const Shape& shape, int batch) {
        return make_activation(context_, activation_desc(batch, shape, GetParam().type, GetParam().layout));
    }
    /// Binds y.diff (as the next layer would) and fills it.
    void set_output_gradient(Activation& y, const Tensor& dy) {
        y.diff = dnnl::memory(y.value.get_desc(), context_.engine());
        dy_values_ = dy.floats();
        pending_.push_back({&y.diff, &dy_values_});
    }
    /// After finalize: writes pending gradients.
    void write_pending() {
        for (auto& [memory, values] : pending_) write_plain(context_, *memory, values->data());
    }
    /// One-input layer: binds and fills dy, writes x, runs forward and backward; y and dx, plain.
    std::pair<std::vector<float>, std::vector<float>> run(LayerOp& layer, Activation& xa, Activation& ya,
                                                          const Tensor& x, const Tensor& dy) {
        set_output_gradient(ya, dy);
        layer.bind_backward(context_);
        context_.finalize();
        write_plain(context_, xa.value, x.floats().data());
        write_pending();
        layer.forward(context_);
        layer.backward_parameters(context_);
        layer.backward_inputs(context_);
        return {read_plain(context_, ya.value), read_plain(context_, xa.diff)};
    }

    Context context_{kThreads};
    std::vector<float> dy_values_;
    std::vector<std::pair<dnnl::memory*, std::vector<float>*>> pending_;
};

// ---------------------------------------------------------------------------------------------
// Convolution: y[n,o,i,j] = sum_{c,a,b} x[n,c,i s - p + a, j s - p + b] w[o,c,a,b]

struct ConvolutionReference {
    Tensor y, dx;
    std::vector<double> dw;
};

ConvolutionReference convolve(const Tensor& x, const std::vector<float>& w, int out_channels, Window window,
                              const Tensor& dy) {
    const int k = window.kernel;
    ConvolutionReference r{Tensor(x.n, out_channels, dy.h, dy.w), Tensor(x.n, x.c, x.h, x.w),
                           std::vector<double>(w.size(), 0.0)};
    for (int n = 0; n < x.n; ++n)
        for (int o = 0; o < out_channels; ++o)
            for (int i = 0; i < dy.h; ++i)
                for (int j = 0; j < dy.w; ++j)
                    for (int c = 0; c < x.c; ++c)
                        for (int a = 0; a < k; ++a)
                            for (int b = 0; b < k; ++b) {
                                const int ih = i * window.stride - window.padding + a;
                                const int iw = j * window.stride - window.padding + b;
                                if (ih < 0 || ih >= x.h || iw < 0 || iw >= x.w) continue;
                                const std::size_t wi = ((std::size_t(o) * x.c + c) * k + a) * k + b;
                                r.y.at(n, o, i, j) += x.at(n, c, ih, iw) * w[wi];
                                r.dx.at(n, c, ih, iw) += dy.at(n, o, i, j) * w[wi];
                                r.dw[wi] += dy.at(n, o, i, j) * x.at(n, c, ih, iw);
                            }
    return r;
}

struct ConvolutionCase {
    Window window;
    int in_channels, out_channels, side;
};

void check_convolution(Context& context, const ConvolutionCase& c, double tolerance, DataType type,
                       Layout layout, bool accumulate) {
    const int batch = 2;
    const int out_side = (c.side + 2 * c.window.padding - c.window.kernel) / c.window.stride + 1;
    const Tensor x = random_tensor(batch, c.in_channels, c.side, c.side, 1);
    const Tensor dy = random_tensor(batch, c.out_channels, out_side, out_side, 2);
    // Kaiming-like scale keeps y of order 1.
    std::vector<float> w = random_vector(std::size_t(c.out_channels) * c.in_channels * c.window.kernel * c.window.kernel,
                                         3, 1.0 / std::sqrt(c.in_channels * c.window.kernel * c.window.kernel));
    std::vector<float> dw(w.size(), -1.0f);
    Activation xa = make_activation(context, activation_desc(batch, x.shape(), type, layout));
    Activation ya = make_activation(context, activation_desc(batch, Shape{c.out_channels, out_side, out_side}, type, layout));
    Convolution conv(context, c.window, xa, ya, ParameterView{w.data(), dw.data()}, type, true);
    ya.diff = dnnl::memory(ya.value.get_desc(), context.engine());
    // A tensor another layer already wrote (a block input read twice): this one must add to it.
    const Tensor previous = random_tensor(batch, c.in_channels, c.side, c.side, 4);
    if (accumulate) xa.diff = dnnl::memory(xa.value.get_desc(), context.engine());
    conv.bind_backward(context);
    context.finalize();
    conv.refresh_parameters(context);
    write_plain(context, xa.value, x.floats().data());
    write_plain(context, ya.diff, dy.floats().data());
    if (accumulate) write_plain(context, xa.diff, previous.floats().data());

    conv.forward(context);
    conv.backward_parameters(context);
    conv.backward_inputs(context);

    ConvolutionReference r = convolve(x, w, c.out_channels, c.window, dy);
    if (accumulate) {
        for (std::size_t i = 0; i < r.dx.data.size(); ++i) r.dx.data[i] += previous.data[i];
    }
    EXPECT_LT(relative_error(read_plain(context, ya.value), r.y.data), tolerance) << "forward";
    EXPECT_LT(relative_error(read_plain(context, xa.diff), r.dx.data), tolerance) << "backward data";
    EXPECT_LT(relative_error(dw, r.dw), tolerance) << "backward weights";
}

TEST_P(CpuLayer, Convolution3x3Stride1) {
    check_convolution(context_, {{3, 1, 1}, 16, 32, 9}, sum_tolerance(), type(), GetParam().layout, false);
}

TEST_P(CpuLayer, Convolution3x3Stride2) {
    check_convolution(context_, {{3, 2, 1}, 32, 16, 10}, sum_tolerance(), type(), GetParam().layout, false);
}

TEST_P(CpuLayer, Convolution1x1Stride2) {
    check_convolution(context_, {{1, 2, 0}, 32, 64, 9}, sum_tolerance(), type(), GetParam().layout, false);
}

TEST_P(CpuLayer, ConvolutionAddsToAGradientAlreadyWritten) {
    check_convolution(context_, {{3, 1, 1}, 16, 16, 8}, sum_tolerance(), type(), GetParam().layout, true);
}

// ---------------------------------------------------------------------------------------------
// Batch normalisation, training mode, with and without the fused ReLU

void check_batch_norm(Context& context, DataType type, Layout layout, bool fused_relu,
                      double tolerance) {
    const int batch = 2, channels = 16, side = 6;
    const double n = batch * side * side;
    Tensor x = random_tensor(batch, channels, side, side, 5);
    for (double& value : x.data) value = static_cast<float>(3.0 + 2.0 * value);  // mean 3, deviation 2
    const Tensor dy = random_tensor(batch, channels, side, side, 6);
    std::vector<float> gamma_beta = random_vector(2 * channels, 7);
    std::vector<float> gradient(2 * channels, -1.0f);
    std::vector<float> running_mean(channels, 0.0f), running_var(channels, 1.0f);

    Activation xa = make_activation(context, activation_desc(batch, x.shape(), type, layout));
    Activation ya = make_activation(context, activation_desc(batch, x.shape(), type, layout));
    BatchNorm bn(context, xa, ya, ParameterView{gamma_beta.data(), gradient.data()},
                 RunningStatistics{running_mean.data(), running_var.data()}, fused_relu);
    ya.diff = dnnl::memory(ya.value.get_desc(), context.engine());
    bn.bind_backward(context);
    context.finalize();
    write_plain(context, xa.value, x.floats().data());
    write_plain(context, ya.diff, dy.floats().data());
    bn.forward(context);
    bn.backward_parameters(context);
    bn.backward_inputs(context);

    // Reference: x_hat = (x - mean) / sqrt(var + eps), y = [relu](gamma x_hat + beta);
    // g = dy masked by the ReLU; dbeta = sum g, dgamma = sum g x_hat,
    // dx = gamma / sqrt(var + eps) (g - dbeta / n - x_hat dgamma / n).
    Tensor y(batch, channels, side, side), dx(batch, channels, side, side);
    std::vector<double> dgamma_beta(2 * channels, 0.0), mean(channels, 0.0), var(channels, 0.0);
    for (int c = 0; c < channels; ++c) {
        for (int b = 0; b < batch; ++b)
            for (int i = 0; i < side * side; ++i) mean[c] += x.at(b, c, i / side, i % side) / n;
        for (int b = 0; b < batch; ++b)
            for (int i = 0; i < side * side; ++i) var[c] += std::pow(x.at(b, c, i / side, i % side) - mean[c], 2) / n;
        const double inv_std = 1.0 / std::sqrt(var[c] + BatchNorm::kEpsilon);
        std::vector<double> g;
        for (int b = 0; b < batch; ++b)
            for (int i = 0; i < side * side; ++i) {
                const double x_hat = (x.at(b, c, i / side, i % side) - mean[c]) * inv_std;
                const double pre = gamma_beta[c] * x_hat + gamma_beta[channels + c];
                y.at(b, c, i / side, i % side) = fused_relu ? std::max(pre, 0.0) : pre;
                const double gi = (fused_relu && pre <= 0) ? 0.0 : dy.at(b, c, i / side, i % side);
                dgamma_beta[c] += gi * x_hat;
                dgamma_beta[channels + c] += gi;
            }
        for (int b = 0; b < batch; ++b)
            for (int i = 0; i < side * side; ++i) {
                const double x_hat = (x.at(b, c, i / side, i % side) - mean[c]) * inv_std;
                const double pre = gamma_beta[c] * x_hat + gamma_beta[channels + c];
                const double gi = (fused_relu && pre <= 0) ? 0.0 : dy.at(b, c, i / side, i % side);
                dx.at(b, c, i / side, i % side) =
                    gamma_beta[c] * inv_std * (gi - dgamma_beta[channels + c] / n - x_hat * dgamma_beta[c] / n);
            }
    }
    EXPECT_LT(relative_error(read_plain(context, ya.value), y.data), tolerance) << "forward";
    EXPECT_LT(relative_error(read_plain(context, xa.diff), dx.data), tolerance) << "backward data";
    EXPECT_LT(relative_error(gradient, dgamma_beta), tolerance) << "backward gamma, beta";
    // Running statistics after one step: 0.9 x (0, 1) + 0.1 x (mean, unbiased variance).
    std::vector<double> expected_mean(channels), expected_var(channels);
    for (int c = 0; c < channels; ++c) {
        expected_mean[c] = 0.1 * mean[c];
        expected_var[c] = 0.9 + 0.1 * var[c] * n / (n - 1);
    }
    EXPECT_LT(relative_error(running_mean, expected_mean), tolerance) << "running mean";
    EXPECT_LT(relative_error(running_var, expected_var), tolerance) << "running variance";
}

TEST_P(CpuLayer, BatchNormTraining) {
    check_batch_norm(context_, type(), GetParam().layout, false, sum_tolerance());
}

TEST_P(CpuLayer, BatchNormTrainingWithFusedRelu) {
    if (bf16()) {
        // Measured: oneDNN 2.6's bf16 batch norm with fuse_norm_relu gives dx off by 107% of its
        // rms and dgamma by 18% (fp32 and unfused bf16 are right), so the network fuses in fp32 only.
        GTEST_SKIP() << "fused BN+ReLU is used in fp32 only (oneDNN 2.6's bf16 fused backward is wrong)";
    }
    check_batch_norm(context_, type(), GetParam().layout, true, sum_tolerance());
}

// ---------------------------------------------------------------------------------------------
// ReLU, in place as the network runs it after a residual add

TEST_P(CpuLayer, ReluInPlace) {
    const Tensor x = random_tensor(2, 16, 5, 5, 8);
    const Tensor dy = random_tensor(2, 16, 5, 5, 9);
    Activation xa = activation(x.shape(), 2);
    Activation ya{xa.value, dnnl::memory()};
    Relu relu(context_, xa, ya);
    const auto [y_actual, dx_actual] = run(relu, xa, ya, x, dy);
    Tensor y = x, dx = dy;
    for (std::size_t i = 0; i < x.data.size(); ++i) {
        y.data[i] = std::max(x.data[i], 0.0);
        dx.data[i] = x.data[i] > 0 ? dy.data[i] : 0.0;
    }
    EXPECT_LT(relative_error(y_actual, y.data), elementwise_tolerance());
    EXPECT_LT(relative_error(dx_actual, dx.data), elementwise_tolerance());
}

// ---------------------------------------------------------------------------------------------
// Pooling

TEST_P(CpuLayer, MaxPool3x3Stride2Padding1) {
    const int side = 9, out = 5;  // (9 + 2 - 3) / 2 + 1
    // Each 9 x 9 plane a permutation of (-40 .. 40) / 8: exact in bf16 and without ties, so the
    // reference picks the same maximum as the layer.
    Tensor x(2, 16, side, side);
    std::mt19937_64 generator(10);
    for (std::size_t plane = 0; plane < 2 * 16; ++plane) {
        std::vector<double> values(side * side);
        for (int i = 0; i < side * side; ++i) values[i] = (i - 40) / 8.0;
        std::shuffle(values.begin(), values.end(), generator);
        std::copy(values.begin(), values.end(), x.data.begin() + plane * side * side);
    }
    const Tensor dy = random_tensor(2, 16, out, out, 11);
    Activation xa = activation(x.shape(), 2);
    Activation ya = activation(Shape{16, out, out}, 2);
    Pooling pool(context_, dnnl::algorithm::pooling_max, Window{3, 2, 1}, xa, ya);
    const auto [y_actual, dx_actual] = run(pool, xa, ya, x, dy);
    // The window's maximum (padding never wins); its input receives dy.
    Tensor y(2, 16, out, out), dx(2, 16, side, side);
    for (int n = 0; n < 2; ++n)
        for (int c = 0; c < 16; ++c)
            for (int i = 0; i < out; ++i)
                for (int j = 0; j < out; ++j) {
                    double best = -1e300;
                    int best_h = 0, best_w = 0;
                    for (int a = 0; a < 3; ++a)
                        for (int b = 0; b < 3; ++b) {
                            const int h = 2 * i - 1 + a, w = 2 * j - 1 + b;
                            if (h < 0 || h >= side || w < 0 || w >= side || x.at(n, c, h, w) <= best) continue;
                            best = x.at(n, c, h, w);
                            best_h = h;
                            best_w = w;
                        }
                    y.at(n, c, i, j) = best;
                    dx.at(n, c, best_h, best_w) += dy.at(n, c, i, j);
                }
    EXPECT_LT(relative_error(y_actual, y.data), elementwise_tolerance());
    // An input that wins up to 4 overlapping windows receives a sum (in bf16: rounded per add),
    // and most of dx is 0, which lowers the rms: the tolerance of sums (measured 3.4e-2 in bf16).
    EXPECT_LT(relative_error(dx_actual, dx.data), sum_tolerance());
}

TEST_P(CpuLayer, GlobalAveragePool) {
    const int side = 5;
    const Tensor x = random_tensor(2, 32, side, side, 12);
    const Tensor dy = random_tensor(2, 32, 1, 1, 13);
    Activation xa = activation(x.shape(), 2);
    Activation ya = activation(Shape{32, 1, 1}, 2);
    Pooling pool(context_, dnnl::algorithm::pooling_avg_exclude_padding, Window{side, 1, 0}, xa, ya);
    const auto [y_actual, dx_actual] = run(pool, xa, ya, x, dy);
    Tensor y(2, 32, 1, 1), dx(2, 32, side, side);
    for (int n = 0; n < 2; ++n)
        for (int c = 0; c < 32; ++c)
            for (int i = 0; i < side * side; ++i) {
                y.at(n, c, 0, 0) += x.at(n, c, i / side, i % side) / (side * side);
                dx.at(n, c, i / side, i % side) = dy.at(n, c, 0, 0) / (side * side);
            }
    EXPECT_LT(relative_error(y_actual, y.data), sum_tolerance());
    EXPECT_LT(relative_error(dx_actual, dx.data), elementwise_tolerance());
}

// ---------------------------------------------------------------------------------------------
// Residual add: the gradient reaches both inputs; one already written gets it added.

TEST_P(CpuLayer, ResidualAddPassesTheGradientToBothInputs) {
    const Tensor a = random_tensor(2, 16, 4, 4, 14), b = random_tensor(2, 16, 4, 4, 15);
    const Tensor dy = random_tensor(2, 16, 4, 4, 16), earlier = random_tensor(2, 16, 4, 4, 17);
    Activation branch = activation(a.shape(), 2), shortcut = activation(a.shape(), 2), y = activation(a.shape(), 2);
    Add add(context_, branch, shortcut, y);
    set_output_gradient(y, dy);
    std::vector<float> earlier_values = earlier.floats();
    shortcut.diff = dnnl::memory(shortcut.value.get_desc(), context_.engine());  // written by a later reader
    add.bind_backward(context_);
    context_.finalize();
    write_plain(context_, branch.value, a.floats().data());
    write_plain(context_, shortcut.value, b.floats().data());
    write_plain(context_, shortcut.diff, earlier_values.data());
    write_pending();
    add.forward(context_);
    add.backward_inputs(context_);
    Tensor sum = a, accumulated = dy;
    for (std::size_t i = 0; i < sum.data.size(); ++i) {
        sum.data[i] += b.data[i];
        accumulated.data[i] += earlier.data[i];
    }
    EXPECT_LT(relative_error(read_plain(context_, y.value), sum.data), elementwise_tolerance());
    EXPECT_LT(relative_error(read_plain(context_, branch.diff), dy.data), elementwise_tolerance());
    EXPECT_LT(relative_error(read_plain(context_, shortcut.diff), accumulated.data), elementwise_tolerance());
}

// ---------------------------------------------------------------------------------------------
// Fully connected: logits = x W^T + b; dx = dlogits W, dW = dlogits^T x, db = sum dlogits

TEST_P(CpuLayer, FullyConnected) {
    const int batch = 3, features = 64, classes = 10;
    const Tensor x = random_tensor(batch, features, 1, 1, 18);
    const std::vector<float> dlogits = random_vector(std::size_t(batch) * classes, 19);
    std::vector<float> params = random_vector(std::size_t(classes) * features + classes, 20, 0.125);
    std::vector<float> gradient(params.size(), -1.0f);
    Activation xa = activation(x.shape(), batch);
    const dnnl::memory::desc logits_desc({batch, classes}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nc);
    dnnl::memory logits(logits_desc, context_.engine()), logits_grad(logits_desc, context_.engine());
    FullyConnected fc(context_, xa, logits, logits_grad, ParameterView{params.data(), gradient.data()}, type());
    fc.bind_backward(context_);
    context_.finalize();
    fc.refresh_parameters(context_);
    write_plain(context_, xa.value, x.floats().data());
    write_plain(context_, logits_grad, dlogits.data());
    fc.forward(context_);
    fc.backward_parameters(context_);
    fc.backward_inputs(context_);
    std::vector<double> y(std::size_t(batch) * classes, 0.0), dx(x.data.size(), 0.0), dparams(params.size(), 0.0);
    for (int n = 0; n < batch; ++n)
        for (int k = 0; k < classes; ++k) {
            const double g = dlogits[std::size_t(n) * classes + k];
            y[std::size_t(n) * classes + k] = params[std::size_t(classes) * features + k];
            dparams[std::size_t(classes) * features + k] += g;
            for (int f = 0; f < features; ++f) {
                const double w = params[std::size_t(k) * features + f];
                y[std::size_t(n) * classes + k] += x.at(n, f, 0, 0) * w;
                dx[std::size_t(n) * features + f] += g * w;
                dparams[std::size_t(k) * features + f] += g * x.at(n, f, 0, 0);
            }
        }
    EXPECT_LT(relative_error(read_plain(context_, logits), y), sum_tolerance()) << "forward";
    EXPECT_LT(relative_error(read_plain(context_, xa.diff), dx), sum_tolerance()) << "backward data";
    EXPECT_LT(relative_error(gradient, dparams), sum_tolerance()) << "backward weights and bias";
}

INSTANTIATE_TEST_SUITE_P(Variants, CpuLayer,
                         ::testing::Values(Variant{DataType::fp32, Layout::nhwc}, Variant{DataType::fp32, Layout::blocked},
                                           Variant{DataType::bf16, Layout::nhwc}, Variant{DataType::bf16, Layout::blocked}),
                         variant_name);

// ---------------------------------------------------------------------------------------------
// Softmax cross-entropy (always fp32): loss = mean_n (log sum_k e^{l_nk} - l_n,label),
// dlogits = (softmax - onehot) / N. Tolerance 1e-6 relative (fp32 exp, fp64 sums).

TEST(CpuSoftmaxCrossEntropy, LossAndGradientMatchFp64) {
    const int batch = 3, classes = 7;
    std::vector<float> logits = random_vector(std::size_t(batch) * classes, 21, 3.0);
    logits[5] = 80.0f;  // large logits must not overflow (max subtracted first)
    const std::vector<std::int32_t> labels{4, 0, 6};
    std::vector<float> gradient(logits.size());
    const double loss = softmax_cross_entropy(logits.data(), labels.data(), batch, classes, gradient.data());
    double expected_loss = 0;
    std::vector<double> expected_gradient(logits.size());
    for (int n = 0; n < batch; ++n) {
        double max_logit = -1e300, sum = 0;
        for (int k = 0; k < classes; ++k) max_logit = std::max(max_logit, double(logits[n * classes + k]));
        for (int k = 0; k < classes; ++k) sum += std::exp(double(logits[n * classes + k]) - max_logit);
        expected_loss += (std::log(sum) + max_logit - logits[n * classes + labels[n]]) / batch;
        for (int k = 0; k < classes; ++k) {
            expected_gradient[n * classes + k] =
                (std::exp(double(logits[n * classes + k]) - max_logit) / sum - (k == labels[n] ? 1.0 : 0.0)) / batch;
        }
    }
    EXPECT_NEAR(loss, expected_loss, 1e-6 * expected_loss);
    EXPECT_LT(relative_error(gradient, expected_gradient), 1e-6);
    const std::vector<std::int32_t> bad{4, 7, 0};
    EXPECT_THROW(softmax_cross_entropy(logits.data(), bad.data(), batch, classes, gradient.data()), InputError);
}

}  // namespace
}  // namespace epochcast::cpu
