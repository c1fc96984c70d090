// Every backend's layers against the plain fp64 references (tests/executor/layer_reference.hpp),
// forward and backward, on the same random inputs: convolutions, batch norm in training mode,
// ReLU, pooling, the residual add, fully connected and the softmax cross-entropy. One instance per
// backend, number format and layout (tests/executor/layer_backends.hpp): the CPU's oneDNN layers
// in fp32 and bf16, NHWC and nChw16c; CUDA's cuDNN / cuBLAS layers in fp32 and fp16, which skip
// when the build has no CUDA backend or no GPU is visible. Each backend's tolerances and why are in
// its adapter (cpu_layer_backend.hpp, cuda_layer_backend.cpp). What only one backend has (the
// CPU's own kernels and fused batch norms) is in test_cpu_layers.cpp.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/executor/layer_backends.hpp"

namespace epochcast::testing {
namespace {

using reference::random_tensor;
using reference::random_vector;
using reference::relative_error;

std::string variant_name(const ::testing::TestParamInfo<LayerVariant>& info) { return name_of(info.param); }

class LayerConformance : public ::testing::TestWithParam<LayerVariant> {
protected:
    void SetUp() override {
        REQUIRE_BACKEND(GetParam().backend);
        if (GetParam().backend == Backend::cpu) {
            backend_ = make_cpu_layer_backend(GetParam().type, GetParam().layout);
        } else {
#ifdef EPOCHCAST_WITH_CUDA
            backend_ = make_cuda_layer_backend(GetParam().type);
#endif
        }
        ASSERT_NE(backend_, nullptr);
        if (const std::string why = backend_->skip_reason(); !why.empty()) GTEST_SKIP() << why;
    }
    LayerBackend& backend() { return *backend_; }
    double sum_tolerance() const { return backend_->sum_tolerance(); }
    double elementwise_tolerance() const { return backend_->elementwise_tolerance(); }

    /// Case `c` on this backend against the reference, every output within `sum_tolerance()`.
    void check_convolution(const ConvolutionCase& c, bool accumulate) {
        const ConvolutionInputs in = convolution_inputs(c, accumulate);
        const ConvolutionOutputs out = backend().convolution(c, in);
        reference::ConvolutionReference r = reference::convolve(in.x, in.w, c.out_channels, c.window, in.dy);
        if (in.previous_dx) {
            for (std::size_t i = 0; i < r.dx.data.size(); ++i) r.dx.data[i] += in.previous_dx->data[i];
        }
        EXPECT_LT(relative_error(out.y, r.y.data), sum_tolerance()) << "forward";
        EXPECT_LT(relative_error(out.dx, r.dx.data), sum_tolerance()) << "backward data";
        EXPECT_LT(relative_error(out.dw, r.dw), sum_tolerance()) << "backward weights";
        if (out.overflow_flag) {
            EXPECT_EQ(*out.overflow_flag, 0) << "no overflow flagged";
        }
    }

    /// A one-input layer's y and dx against the reference, each within its tolerance.
    static void expect_close(const LayerOutputs& out, const reference::ForwardBackward& r, double y_tolerance,
                             double dx_tolerance) {
        EXPECT_LT(relative_error(out.y, r.y.data), y_tolerance) << "forward";
        EXPECT_LT(relative_error(out.dx, r.dx.data), dx_tolerance) << "backward data";
    }

    std::unique_ptr<LayerBackend> backend_;
};

// ---------------------------------------------------------------------------------------------
// Convolution: y[n,o,i,j] = sum_{c,a,b} x[n,c,i s - p + a, j s - p + b] w[o,c,a,b]

TEST_P(LayerConformance, Convolution3x3Stride1) { check_convolution({{3, 1, 1}, 16, 32, 14}, false); }

TEST_P(LayerConformance, Convolution3x3Stride2) { check_convolution({{3, 2, 1}, 32, 16, 10}, false); }

// 7 x 7 pixels, 2 images: the CPU's own kernel's pairs of terms cross from one image to the next.
TEST_P(LayerConformance, Convolution1x1Stride1) { check_convolution({{1, 1, 0}, 32, 48, 7}, false); }

TEST_P(LayerConformance, Convolution1x1Stride2) { check_convolution({{1, 2, 0}, 32, 64, 9}, false); }

TEST_P(LayerConformance, Convolution7x7Stride2LikeConv1) { check_convolution({{7, 2, 3}, 3, 16, 16}, false); }

// ResNet's last stage at 32 px: a 3x3 window on a 1 x 1 map, every tap but the centre padding.
TEST_P(LayerConformance, Convolution3x3OnAOneByOneMap) { check_convolution({{3, 1, 1}, 32, 32, 1}, false); }

TEST_P(LayerConformance, ConvolutionAddsToAGradientAlreadyWritten) { check_convolution({{3, 1, 1}, 16, 16, 8}, true); }

// ---------------------------------------------------------------------------------------------
// Batch normalisation, training mode (unfused; the CPU's fused forms are test_cpu_layers.cpp's)

TEST_P(LayerConformance, BatchNormTraining) {
    BatchNormInputs in;
    in.x = backend().as_seen(in.x);
    in.dy = backend().as_seen(in.dy);
    const BatchNormOutputs out = backend().batch_norm(in);
    const double tolerance = sum_tolerance();
    const reference::BatchNormReference r =
        reference::batch_norm(in.x, in.gamma_beta, in.dy, backend().batch_norm_epsilon(), false);
    EXPECT_LT(relative_error(out.y, r.y.data), tolerance) << "forward";
    EXPECT_LT(relative_error(out.dx, r.dx.data), tolerance) << "backward data";
    EXPECT_LT(relative_error(out.dgamma_beta, r.dgamma_beta), tolerance) << "backward gamma, beta";
    if (out.working_dgamma_beta) {
        EXPECT_LT(relative_error(*out.working_dgamma_beta, r.dgamma_beta), tolerance)
            << "gamma, beta gradient cast to the working arena";
    }
    EXPECT_LT(relative_error(out.running_mean, r.running_mean), tolerance) << "running mean";
    EXPECT_LT(relative_error(out.running_var, r.running_variance), tolerance) << "running variance";
}

// ---------------------------------------------------------------------------------------------
// ReLU, in place as the network runs it after a residual add

TEST_P(LayerConformance, ReluInPlace) {
    const Tensor x = random_tensor(2, 16, 5, 5, 8);
    const Tensor dy = random_tensor(2, 16, 5, 5, 9);
    expect_close(backend().relu(x, dy), reference::relu(x, dy), elementwise_tolerance(), elementwise_tolerance());
}

// ---------------------------------------------------------------------------------------------
// Pooling

TEST_P(LayerConformance, MaxPool3x3Stride2Padding1) {
    const int side = 9, out_side = 5;  // (9 + 2 - 3) / 2 + 1
    const Tensor x = reference::distinct_planes(2, 16, side, 10);
    const Tensor dy = random_tensor(2, 16, out_side, out_side, 11);
    // An input that wins up to 4 overlapping windows receives a sum (in bf16: rounded per add),
    // and most of dx is 0, which lowers the rms: dx within the tolerance of sums.
    expect_close(backend().max_pool(x, LayerWindow{3, 2, 1}, dy), reference::max_pool(x, LayerWindow{3, 2, 1}, dy),
                 elementwise_tolerance(), sum_tolerance());
}

TEST_P(LayerConformance, GlobalAveragePool) {
    const int side = 5;
    const Tensor x = random_tensor(2, 32, side, side, 12);
    const Tensor dy = random_tensor(2, 32, 1, 1, 13);
    expect_close(backend().global_average_pool(x, dy), reference::global_average_pool(x, dy), sum_tolerance(),
                 elementwise_tolerance());
}

// ---------------------------------------------------------------------------------------------
// Residual add: the gradient reaches both inputs; one already written gets it added.

TEST_P(LayerConformance, ResidualAddPassesTheGradientToBothInputs) {
    const reference::AddInputs in;
    const AddOutputs out = backend().residual_add(in);
    const reference::AddReference r = reference::residual_add(in.a, in.b, in.dy, in.earlier);
    EXPECT_LT(relative_error(out.y, r.y), elementwise_tolerance());
    EXPECT_LT(relative_error(out.branch_dx, r.branch_dx), elementwise_tolerance());
    EXPECT_LT(relative_error(out.shortcut_dx, r.shortcut_dx), elementwise_tolerance());
}

// ---------------------------------------------------------------------------------------------
// Fully connected: logits = x W^T + b; dx = dlogits W, dW = dlogits^T x, db = sum dlogits

TEST_P(LayerConformance, FullyConnected) {
    const reference::FullyConnectedInputs in;
    const FullyConnectedOutputs out = backend().fully_connected(in);
    const reference::FullyConnectedReference r = reference::fully_connected(in.x, in.params, in.dlogits, in.classes);
    EXPECT_LT(relative_error(out.logits, r.logits), sum_tolerance()) << "forward";
    EXPECT_LT(relative_error(out.dx, r.dx), sum_tolerance()) << "backward data";
    EXPECT_LT(relative_error(out.dparams, r.dparams), sum_tolerance()) << "backward weights and bias";
}

// ---------------------------------------------------------------------------------------------
// Softmax cross-entropy: loss = mean_n (log sum_k e^{l_nk} - l_n,label), dlogits = (softmax -
// onehot) / N. The loss within 1e-6 relative (fp32 exp, fp64 sums); a label outside [0, classes)
// is refused.

TEST_P(LayerConformance, SoftmaxCrossEntropy) {
    const int batch = 3, classes = 7;
    std::vector<float> logits = random_vector(std::size_t(batch) * classes, 21, 3.0);
    logits[5] = 80.0f;  // large logits must not overflow (max subtracted first)
    const std::vector<std::int32_t> labels{4, 0, 6};
    const reference::SoftmaxReference expected = reference::softmax_cross_entropy(logits, labels, classes);
    const SoftmaxOutputs out = backend().softmax_cross_entropy(logits, labels, classes);
    EXPECT_NEAR(out.mean_loss, expected.mean_loss, 1e-6 * expected.mean_loss);
    EXPECT_LT(relative_error(out.gradient, expected.gradient), backend().softmax_tolerance());
    EXPECT_FALSE(out.refused);
    EXPECT_TRUE(backend().softmax_cross_entropy(logits, {4, 7, 0}, classes).refused)
        << "a label outside [0, classes) is refused";
}

INSTANTIATE_TEST_SUITE_P(Backends, LayerConformance,
                         ::testing::Values(LayerVariant{Backend::cpu, LayerType::fp32, LayerLayout::nhwc},
                                           LayerVariant{Backend::cpu, LayerType::fp32, LayerLayout::blocked},
                                           LayerVariant{Backend::cpu, LayerType::bf16, LayerLayout::nhwc},
                                           LayerVariant{Backend::cpu, LayerType::bf16, LayerLayout::blocked},
                                           LayerVariant{Backend::cuda, LayerType::fp32, LayerLayout::native},
                                           LayerVariant{Backend::cuda, LayerType::fp16, LayerLayout::native}),
                         variant_name);

}  // namespace
}  // namespace epochcast::testing
