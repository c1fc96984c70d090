// Each oneDNN layer of executor/cpu/layers.hpp, forward and backward, against a plain fp64
// reference (tests/executor/layer_reference.hpp), on random inputs; in fp32 and bf16, in both activation layouts.
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

#include <string>
#include <vector>

#include "executor/bf16.hpp"
#include "executor/cpu/layers.hpp"
#include "model/errors.hpp"
#include "tests/executor/layer_reference.hpp"

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

using reference::relative_error;
using reference::Tensor;
using reference::random_tensor;
using reference::random_vector;

Shape shape_of(const Tensor& t) { return Shape{t.c, t.h, t.w}; }

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

struct ConvolutionCase {
    Window window;
    int in_channels, out_channels, side;
};

/// Which of the layer's work our own kernels (kernels.hpp) did.
struct OwnKernels {
    bool weight_gradient = false;    ///< the 1x1 or 3x3 weight gradient
    std::size_t working_copies = 0;  ///< bf16 working copies refreshed by Bf16WorkingCopies
};

OwnKernels check_convolution(Context& context, const ConvolutionCase& c, double tolerance, DataType type,
                             Layout layout, bool accumulate) {
    const int batch = 2;
    const int out_side = (c.side + 2 * c.window.padding - c.window.kernel) / c.window.stride + 1;
    const Tensor x = random_tensor(batch, c.in_channels, c.side, c.side, 1);
    const Tensor dy = random_tensor(batch, c.out_channels, out_side, out_side, 2);
    // Kaiming-like scale keeps y of order 1.
    std::vector<float> w = random_vector(std::size_t(c.out_channels) * c.in_channels * c.window.kernel * c.window.kernel,
                                         3, 1.0 / std::sqrt(c.in_channels * c.window.kernel * c.window.kernel));
    std::vector<float> dw(w.size(), -1.0f);
    Activation xa = make_activation(context, activation_desc(batch, shape_of(x), type, layout));
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

    reference::ConvolutionReference r = reference::convolve(x, w, c.out_channels, c.window, dy);
    if (accumulate) {
        for (std::size_t i = 0; i < r.dx.data.size(); ++i) r.dx.data[i] += previous.data[i];
    }
    EXPECT_LT(relative_error(read_plain(context, ya.value), r.y.data), tolerance) << "forward";
    EXPECT_LT(relative_error(read_plain(context, xa.diff), r.dx.data), tolerance) << "backward data";
    EXPECT_LT(relative_error(dw, r.dw), tolerance) << "backward weights";
    return {conv.own_weight_gradient(), conv.weights()->own_copies()};
}

TEST_P(CpuLayer, Convolution3x3Stride1) {
    const OwnKernels own =
        check_convolution(context_, {{3, 1, 1}, 16, 32, 14}, sum_tolerance(), type(), GetParam().layout, false);
    // With nChw16c activations, both bf16 copies (forward, backward-data) are refreshed by our
    // writer on a CPU with AVX512-BF16 (the kernels' ISA, which conv1x1_weight_gradient_applies
    // also asks for); fp32 copies never are. (With NHWC oneDNN picks other layouts for some.)
    const bool ours = bf16() && conv1x1_weight_gradient_applies(Conv1x1Geometry{2, 16, 32, 196});
    if (!ours || GetParam().layout == Layout::blocked) {
        EXPECT_EQ(own.working_copies, ours ? 2u : 0u) << "bf16 working copies refreshed by our writer";
    }
    EXPECT_EQ(own.weight_gradient, ours && GetParam().layout == Layout::blocked)
        << "the own 3x3 weight-gradient kernel serves bf16 nChw16c, and only that";
}

TEST_P(CpuLayer, Convolution3x3Stride2) {
    const OwnKernels own =
        check_convolution(context_, {{3, 2, 1}, 32, 16, 10}, sum_tolerance(), type(), GetParam().layout, false);
    EXPECT_FALSE(own.weight_gradient) << "strided 3x3 convolutions stay on oneDNN";
}

TEST_P(CpuLayer, Convolution1x1Stride1) {
    // 7 x 7 pixels, 2 images: the own kernel's pairs of terms cross from one image to the next.
    const bool own =
        check_convolution(context_, {{1, 1, 0}, 32, 48, 7}, sum_tolerance(), type(), GetParam().layout, false).weight_gradient;
    const bool expected = bf16() && GetParam().layout == Layout::blocked &&
                          conv1x1_weight_gradient_applies(Conv1x1Geometry{2, 32, 48, 49});
    EXPECT_EQ(own, expected) << "the own 1x1 weight-gradient kernel serves bf16 nChw16c, and only that";
}

TEST_P(CpuLayer, Convolution1x1Stride2) {
    check_convolution(context_, {{1, 2, 0}, 32, 64, 9}, sum_tolerance(), type(), GetParam().layout, false);
}

TEST_P(CpuLayer, ConvolutionAddsToAGradientAlreadyWritten) {
    check_convolution(context_, {{3, 1, 1}, 16, 16, 8}, sum_tolerance(), type(), GetParam().layout, true);
}

// ---------------------------------------------------------------------------------------------
// Batch normalisation, training mode, alone, with the fused ReLU, and with the fused residual
// add and ReLU. In bf16 the reference takes x, dy and the shortcut rounded to bf16 as the layer
// sees them: the ReLU's gate must then agree everywhere (otherwise an element near t = 0 whose
// gate flips moves dx by a whole dy).

Tensor as_bf16(Tensor t) {
    for (double& value : t.data) value = from_bf16_bits(to_bf16_bits(static_cast<float>(value)));
    return t;
}

struct BatchNormInputs {
    static constexpr int batch = 2, channels = 32, side = 6;
    Tensor x, dy, shortcut;
    std::vector<float> gamma_beta = random_vector(2 * channels, 7);
    BatchNormInputs(DataType type)
        : x(random_tensor(batch, channels, side, side, 5)), dy(random_tensor(batch, channels, side, side, 6)),
          shortcut(random_tensor(batch, channels, side, side, 14)) {
        for (double& value : x.data) value = static_cast<float>(3.0 + 2.0 * value);  // mean 3, deviation 2
        if (type == DataType::bf16) {
            x = as_bf16(x);
            dy = as_bf16(dy);
            shortcut = as_bf16(shortcut);
        }
    }
};

/// Returns whether our own kernels ran it.
bool check_batch_norm(Context& context, DataType type, Layout layout, BatchNorm::Then then, double tolerance) {
    const BatchNormInputs in(type);
    const Tensor &x = in.x, &dy = in.dy;
    std::vector<float> gamma_beta = in.gamma_beta;
    std::vector<float> gradient(2 * in.channels, -1.0f);
    std::vector<float> running_mean(in.channels, 0.0f), running_var(in.channels, 1.0f);

    Activation xa = make_activation(context, activation_desc(in.batch, shape_of(x), type, layout));
    Activation ya = make_activation(context, activation_desc(in.batch, shape_of(x), type, layout));
    BatchNorm bn(context, xa, ya, ParameterView{gamma_beta.data(), gradient.data()},
                 RunningStatistics{running_mean.data(), running_var.data()}, then);
    ya.diff = dnnl::memory(ya.value.get_desc(), context.engine());
    bn.bind_backward(context);
    context.finalize();
    write_plain(context, xa.value, x.floats().data());
    write_plain(context, ya.diff, dy.floats().data());
    bn.forward(context);
    bn.backward_parameters(context);
    // Once the layer's parameter gradient is out, an overlapped exchange may update the arena
    // before backward_inputs runs: dx must still come from the values the forward pass used.
    const std::vector<float> used = gamma_beta;
    for (float& value : gamma_beta) value = -value;
    bn.backward_inputs(context);

    const reference::BatchNormReference r = reference::batch_norm(x, used, dy, BatchNorm::kEpsilon, then == BatchNorm::Then::relu);
    EXPECT_LT(relative_error(read_plain(context, ya.value), r.y.data), tolerance) << "forward";
    EXPECT_LT(relative_error(read_plain(context, xa.diff), r.dx.data), tolerance) << "backward data";
    EXPECT_LT(relative_error(gradient, r.dgamma_beta), tolerance) << "backward gamma, beta";
    EXPECT_LT(relative_error(running_mean, r.running_mean), tolerance) << "running mean";
    EXPECT_LT(relative_error(running_var, r.running_variance), tolerance) << "running variance";
    return bn.own_kernels();
}

bool own_batch_norm_expected(DataType type, Layout layout) {
    return type == DataType::bf16 && layout == Layout::blocked && cpu_has_avx512_bf16() && own_kernels_enabled();
}

TEST_P(CpuLayer, BatchNormTraining) {
    EXPECT_EQ(check_batch_norm(context_, type(), GetParam().layout, BatchNorm::Then::nothing, sum_tolerance()),
              own_batch_norm_expected(type(), GetParam().layout));
}

TEST_P(CpuLayer, BatchNormTrainingWithFusedRelu) {
    if (!BatchNorm::fuses(activation_desc(2, Shape{16, 4, 4}, type(), GetParam().layout), BatchNorm::Then::relu)) {
        // Measured: oneDNN 2.6's bf16 batch norm with fuse_norm_relu gives dx off by 107% of its
        // rms and dgamma by 18% (fp32 and unfused bf16 are right), so bf16 fuses on our kernels only.
        EXPECT_TRUE(bf16());
        GTEST_SKIP() << "bf16 fuses BN+ReLU on our own kernels only (nChw16c, AVX512-BF16); oneDNN 2.6's bf16 fused backward is wrong";
    }
    EXPECT_EQ(check_batch_norm(context_, type(), GetParam().layout, BatchNorm::Then::relu, sum_tolerance()),
              own_batch_norm_expected(type(), GetParam().layout));
}

/// y = relu(bn(x) + shortcut) through BatchNorm(Then::add_relu) + ResidualRelu, against the
/// reference batch norm, add and ReLU; the shortcut's gradient either shared or added to one
/// already written.
void check_residual_relu(Context& context, Layout layout, bool shortcut_written, double tolerance) {
    const BatchNormInputs in(DataType::bf16);
    const Tensor &x = in.x, &dy = in.dy, &s = in.shortcut;
    std::vector<float> gamma_beta = in.gamma_beta;
    std::vector<float> gradient(2 * in.channels, -1.0f);
    std::vector<float> running_mean(in.channels, 0.0f), running_var(in.channels, 1.0f);
    const Tensor earlier = random_tensor(in.batch, in.channels, in.side, in.side, 15);

    const dnnl::memory::desc desc = activation_desc(in.batch, shape_of(x), DataType::bf16, layout);
    Activation xa = make_activation(context, desc), shortcut = make_activation(context, desc);
    Activation ya = make_activation(context, desc);
    Activation bn_output;  // placeholder, as the network builds it
    BatchNorm bn(context, xa, bn_output, ParameterView{gamma_beta.data(), gradient.data()},
                 RunningStatistics{running_mean.data(), running_var.data()}, BatchNorm::Then::add_relu);
    ResidualRelu tail(context, bn, shortcut, ya);
    ya.diff = dnnl::memory(desc, context.engine());
    if (shortcut_written) shortcut.diff = dnnl::memory(desc, context.engine());
    tail.bind_backward(context);
    bn.bind_backward(context);
    context.finalize();
    write_plain(context, xa.value, x.floats().data());
    write_plain(context, shortcut.value, s.floats().data());
    write_plain(context, ya.diff, dy.floats().data());
    if (shortcut_written) write_plain(context, shortcut.diff, earlier.floats().data());
    bn.forward(context);
    tail.forward(context);
    tail.backward_inputs(context);
    bn.backward_parameters(context);
    bn.backward_inputs(context);

    // Reference: t = bn(x) + s, y = relu(t), g = dy where t > 0; the batch norm's backward takes g.
    const reference::BatchNormReference normalised = reference::batch_norm(x, gamma_beta, dy, BatchNorm::kEpsilon, false);
    Tensor y(x.n, x.c, x.h, x.w), g(x.n, x.c, x.h, x.w), shortcut_dx = earlier;
    for (std::size_t i = 0; i < y.data.size(); ++i) {
        const double t = normalised.y.data[i] + s.data[i];
        y.data[i] = std::max(t, 0.0);
        g.data[i] = t > 0 ? dy.data[i] : 0.0;
        shortcut_dx.data[i] = (shortcut_written ? earlier.data[i] : 0.0) + g.data[i];
    }
    const reference::BatchNormReference r = reference::batch_norm(x, gamma_beta, g, BatchNorm::kEpsilon, false);
    EXPECT_LT(relative_error(read_plain(context, ya.value), y.data), tolerance) << "forward";
    EXPECT_LT(relative_error(read_plain(context, xa.diff), r.dx.data), tolerance) << "backward data, branch";
    EXPECT_LT(relative_error(read_plain(context, shortcut.diff), shortcut_dx.data), tolerance) << "backward data, shortcut";
    EXPECT_LT(relative_error(gradient, r.dgamma_beta), tolerance) << "backward gamma, beta";
    EXPECT_LT(relative_error(running_mean, r.running_mean), tolerance) << "running mean";
    EXPECT_LT(relative_error(running_var, r.running_variance), tolerance) << "running variance";
}

TEST_P(CpuLayer, BatchNormAddReluFused) {
    if (!BatchNorm::fuses(activation_desc(2, Shape{16, 4, 4}, type(), GetParam().layout), BatchNorm::Then::add_relu)) {
        EXPECT_FALSE(own_batch_norm_expected(type(), GetParam().layout));
        GTEST_SKIP() << "the fused batch norm + residual add + ReLU runs on our own kernels only (bf16 nChw16c, AVX512-BF16)";
    }
    check_residual_relu(context_, GetParam().layout, /*shortcut_written=*/false, sum_tolerance());
}

TEST_P(CpuLayer, BatchNormAddReluFusedAddsToAShortcutGradientAlreadyWritten) {
    if (!BatchNorm::fuses(activation_desc(2, Shape{16, 4, 4}, type(), GetParam().layout), BatchNorm::Then::add_relu)) {
        GTEST_SKIP() << "the fused batch norm + residual add + ReLU runs on our own kernels only (bf16 nChw16c, AVX512-BF16)";
    }
    check_residual_relu(context_, GetParam().layout, /*shortcut_written=*/true, sum_tolerance());
}

// ---------------------------------------------------------------------------------------------
// ReLU, in place as the network runs it after a residual add

TEST_P(CpuLayer, ReluInPlace) {
    const Tensor x = random_tensor(2, 16, 5, 5, 8);
    const Tensor dy = random_tensor(2, 16, 5, 5, 9);
    Activation xa = activation(shape_of(x), 2);
    Activation ya{xa.value, dnnl::memory()};
    Relu relu(context_, xa, ya);
    const auto [y_actual, dx_actual] = run(relu, xa, ya, x, dy);
    const reference::ForwardBackward r = reference::relu(x, dy);
    EXPECT_LT(relative_error(y_actual, r.y.data), elementwise_tolerance());
    EXPECT_LT(relative_error(dx_actual, r.dx.data), elementwise_tolerance());
}

// ---------------------------------------------------------------------------------------------
// Pooling

TEST_P(CpuLayer, MaxPool3x3Stride2Padding1) {
    const int side = 9, out = 5;  // (9 + 2 - 3) / 2 + 1
    const Tensor x = reference::distinct_planes(2, 16, side, 10);
    const Tensor dy = random_tensor(2, 16, out, out, 11);
    Activation xa = activation(shape_of(x), 2);
    Activation ya = activation(Shape{16, out, out}, 2);
    Pooling pool(context_, dnnl::algorithm::pooling_max, Window{3, 2, 1}, xa, ya);
    const auto [y_actual, dx_actual] = run(pool, xa, ya, x, dy);
    const reference::ForwardBackward r = reference::max_pool(x, Window{3, 2, 1}, dy);
    EXPECT_LT(relative_error(y_actual, r.y.data), elementwise_tolerance());
    // An input that wins up to 4 overlapping windows receives a sum (in bf16: rounded per add),
    // and most of dx is 0, which lowers the rms: the tolerance of sums (measured 3.4e-2 in bf16).
    EXPECT_LT(relative_error(dx_actual, r.dx.data), sum_tolerance());
}

TEST_P(CpuLayer, GlobalAveragePool) {
    const int side = 5;
    const Tensor x = random_tensor(2, 32, side, side, 12);
    const Tensor dy = random_tensor(2, 32, 1, 1, 13);
    Activation xa = activation(shape_of(x), 2);
    Activation ya = activation(Shape{32, 1, 1}, 2);
    Pooling pool(context_, dnnl::algorithm::pooling_avg_exclude_padding, Window{side, 1, 0}, xa, ya);
    const auto [y_actual, dx_actual] = run(pool, xa, ya, x, dy);
    const reference::ForwardBackward r = reference::global_average_pool(x, dy);
    EXPECT_LT(relative_error(y_actual, r.y.data), sum_tolerance());
    EXPECT_LT(relative_error(dx_actual, r.dx.data), elementwise_tolerance());
}

// ---------------------------------------------------------------------------------------------
// Residual add: the gradient reaches both inputs; one already written gets it added.

TEST_P(CpuLayer, ResidualAddPassesTheGradientToBothInputs) {
    const reference::AddInputs in;
    const Tensor &a = in.a, &b = in.b, &dy = in.dy, &earlier = in.earlier;
    Activation branch = activation(shape_of(a), 2), shortcut = activation(shape_of(a), 2), y = activation(shape_of(a), 2);
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
    const reference::AddReference r = reference::residual_add(a, b, dy, earlier);
    EXPECT_LT(relative_error(read_plain(context_, y.value), r.y), elementwise_tolerance());
    EXPECT_LT(relative_error(read_plain(context_, branch.diff), r.branch_dx), elementwise_tolerance());
    EXPECT_LT(relative_error(read_plain(context_, shortcut.diff), r.shortcut_dx), elementwise_tolerance());
}

// ---------------------------------------------------------------------------------------------
// Fully connected: logits = x W^T + b; dx = dlogits W, dW = dlogits^T x, db = sum dlogits

TEST_P(CpuLayer, FullyConnected) {
    reference::FullyConnectedInputs in;
    const int batch = in.batch, classes = in.classes;
    const Tensor& x = in.x;
    const std::vector<float>& dlogits = in.dlogits;
    std::vector<float>& params = in.params;
    std::vector<float> gradient(params.size(), -1.0f);
    Activation xa = activation(shape_of(x), batch);
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
    const reference::FullyConnectedReference r = reference::fully_connected(x, params, dlogits, classes);
    EXPECT_LT(relative_error(read_plain(context_, logits), r.logits), sum_tolerance()) << "forward";
    EXPECT_LT(relative_error(read_plain(context_, xa.diff), r.dx), sum_tolerance()) << "backward data";
    EXPECT_LT(relative_error(gradient, r.dparams), sum_tolerance()) << "backward weights and bias";
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
    const reference::SoftmaxReference expected = reference::softmax_cross_entropy(logits, labels, classes);
    EXPECT_NEAR(loss, expected.mean_loss, 1e-6 * expected.mean_loss);
    EXPECT_LT(relative_error(gradient, expected.gradient), 1e-6);
    const std::vector<std::int32_t> bad{4, 7, 0};
    EXPECT_THROW(softmax_cross_entropy(logits.data(), bad.data(), batch, classes, gradient.data()), InputError);
}

}  // namespace
}  // namespace epochcast::cpu
