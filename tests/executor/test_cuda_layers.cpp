// Each cuDNN / cuBLAS layer of executor/cuda/layers.hpp (and the softmax cross-entropy kernel),
// forward and backward, against the plain fp64 references the CPU layers are checked with
// (tests/executor/layer_reference.hpp), on the same random inputs; in fp32 and fp16. Every test
// skips when no GPU is visible. Written on a machine without a GPU: the tolerances below are
// derived, not yet measured.
//
// Error measure: max |actual - reference| / rms(reference) over a tensor. Tolerances:
//   fp32: 1e-4 for sums of products: FMA math (no TF32), but cuDNN's heuristics may pick Winograd
//         or FFT convolutions, whose transforms round differently from a direct sum (the CPU's
//         direct oneDNN sums meet 1e-5); 1e-6 for element-wise layers.
//   fp16: inputs, weights and outputs rounded to 11 significant bits (relative error up to 2^-11
//         each), sums accumulated in fp32. The CPU test's bf16 figures (2^-8, measured up to 1.1e-2
//         element-wise and 2.8e-2 for sums) scaled by 8 give 1.4e-3 and 3.5e-3: 5e-3 element-wise,
//         1e-2 for sums.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#ifdef EPOCHCAST_WITH_CUDA
#include "executor/cuda/layers.hpp"
#include "tests/executor/layer_reference.hpp"
#include "tests/executor/require_gpu.hpp"
#endif

namespace epochcast::cuda {
namespace {

#ifdef EPOCHCAST_WITH_CUDA

using reference::random_tensor;
using reference::random_vector;
using reference::relative_error;
using reference::Tensor;

std::string type_name(const ::testing::TestParamInfo<DataType>& info) {
    return info.param == DataType::fp16 ? "fp16" : "fp32";
}

class CudaLayer : public ::testing::TestWithParam<DataType> {
protected:
    void SetUp() override {
        REQUIRE_GPU();
        context_ = std::make_unique<Context>(0, GetParam());
    }
    Context& context() { return *context_; }
    bool fp16() const { return GetParam() == DataType::fp16; }
    /// Tolerance for sums of products and for element-wise layers (see the header comment).
    double sum_tolerance() const { return fp16() ? 1e-2 : 1e-4; }
    double elementwise_tolerance() const { return fp16() ? 5e-3 : 1e-6; }

    Activation activation(int n, int c, int h, int w) { return make_activation(context(), n, c, h, w); }
    Activation activation_like(const Tensor& t) { return activation(t.n, t.c, t.h, t.w); }
    /// A device buffer of `count` elements of the working type.
    void* working(std::size_t count) { return context().allocate(count * element_bytes(context().type())); }
    float* floats(std::size_t count) { return static_cast<float*>(context().allocate(count * sizeof(float))); }
    float* uploaded(const std::vector<float>& values) {
        float* device = floats(values.size());
        upload(context(), device, values);
        return device;
    }
    /// A working tensor holding `values` (rounded to the working type).
    void* uploaded_working(const std::vector<float>& values) {
        void* device = working(values.size());
        cast_to_working(uploaded(values), device, context().type(), std::int64_t(values.size()), context().stream());
        context().synchronize();
        return device;
    }
    void write(const Activation& a, void* target, const Tensor& t) { write_nchw(context(), target, t.floats(), a.n, a.c, a.h, a.w); }
    std::vector<float> read(const Activation& a, const void* source) { return read_nchw(context(), source, a.n, a.c, a.h, a.w); }

    std::unique_ptr<Context> context_;
};

// ---------------------------------------------------------------------------------------------
// Convolution

struct ConvolutionCase {
    Window window;
    int in_channels, out_channels, side;
};

void check_convolution(Context& context, const ConvolutionCase& c, double tolerance, bool accumulate) {
    const int batch = 2;
    const int out_side = (c.side + 2 * c.window.padding - c.window.kernel) / c.window.stride + 1;
    const Tensor x = random_tensor(batch, c.in_channels, c.side, c.side, 1);
    const Tensor dy = random_tensor(batch, c.out_channels, out_side, out_side, 2);
    const int k = c.window.kernel;
    const std::vector<float> w = random_vector(std::size_t(c.out_channels) * c.in_channels * k * k, 3,
                                               1.0 / std::sqrt(c.in_channels * k * k));
    WeightView weights;
    weights.o = c.out_channels, weights.i = c.in_channels, weights.k = k;
    float* master = static_cast<float*>(context.allocate(w.size() * sizeof(float)));
    upload(context, master, w);
    weights.master = master;
    weights.working = context.allocate(w.size() * element_bytes(context.type()));
    weights.working_gradient = context.allocate(w.size() * element_bytes(context.type()));

    Activation xa = make_activation(context, batch, c.in_channels, c.side, c.side);
    Activation ya = make_activation(context, batch, c.out_channels, out_side, out_side);
    Convolution conv(context, c.window, xa, ya, weights, true);
    ya.diff = context.allocate(std::size_t(ya.elements()) * element_bytes(context.type()));
    // A tensor another layer already wrote (a block input read twice): this one must add to it.
    const Tensor previous = random_tensor(batch, c.in_channels, c.side, c.side, 4);
    if (accumulate) xa.diff = context.allocate(std::size_t(xa.elements()) * element_bytes(context.type()));
    conv.bind_backward(context);
    context.finalize();
    conv.refresh_parameters(context);
    write_nchw(context, xa.value, x.floats(), xa.n, xa.c, xa.h, xa.w);
    write_nchw(context, ya.diff, dy.floats(), ya.n, ya.c, ya.h, ya.w);
    if (accumulate) write_nchw(context, xa.diff, previous.floats(), xa.n, xa.c, xa.h, xa.w);

    conv.forward(context);
    conv.backward_parameters(context);
    conv.backward_inputs(context);

    reference::ConvolutionReference r = reference::convolve(x, w, c.out_channels, c.window, dy);
    if (accumulate) {
        for (std::size_t i = 0; i < r.dx.data.size(); ++i) r.dx.data[i] += previous.data[i];
    }
    // The working gradient is O x K x K x I: back to the plain O x I x K x K in fp32.
    float* plain_dw = static_cast<float*>(context.allocate(w.size() * sizeof(float)));
    int* overflow = static_cast<int*>(context.allocate(sizeof(int)));
    working_to_master(weights.working_gradient, plain_dw, context.type(), weights.o, weights.i, weights.k, 1.0f, overflow,
                      context.stream());
    EXPECT_LT(relative_error(read_nchw(context, ya.value, ya.n, ya.c, ya.h, ya.w), r.y.data), tolerance) << "forward";
    EXPECT_LT(relative_error(read_nchw(context, xa.diff, xa.n, xa.c, xa.h, xa.w), r.dx.data), tolerance) << "backward data";
    EXPECT_LT(relative_error(download(context, plain_dw, w.size()), r.dw), tolerance) << "backward weights";
    int flagged = -1;
    context.synchronize();
    EXPECT_EQ(cudaMemcpy(&flagged, overflow, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(flagged, 0) << "no overflow flagged";
}

TEST_P(CudaLayer, Convolution3x3Stride1) {
    check_convolution(context(), {{3, 1, 1}, 16, 32, 9}, sum_tolerance(), false);
}

TEST_P(CudaLayer, Convolution3x3Stride2) {
    check_convolution(context(), {{3, 2, 1}, 32, 16, 10}, sum_tolerance(), false);
}

TEST_P(CudaLayer, Convolution1x1Stride2) {
    check_convolution(context(), {{1, 2, 0}, 32, 64, 9}, sum_tolerance(), false);
}

TEST_P(CudaLayer, Convolution7x7Stride2LikeConv1) {
    check_convolution(context(), {{7, 2, 3}, 3, 16, 16}, sum_tolerance(), false);
}

TEST_P(CudaLayer, ConvolutionAddsToAGradientAlreadyWritten) {
    check_convolution(context(), {{3, 1, 1}, 16, 16, 8}, sum_tolerance(), true);
}

// ---------------------------------------------------------------------------------------------
// Batch normalisation, training mode (the CUDA network runs its ReLU as a separate layer)

TEST_P(CudaLayer, BatchNormTraining) {
    const int batch = 2, channels = 16, side = 6;
    Tensor x = random_tensor(batch, channels, side, side, 5);
    for (double& value : x.data) value = static_cast<float>(3.0 + 2.0 * value);  // mean 3, deviation 2
    const Tensor dy = random_tensor(batch, channels, side, side, 6);
    const std::vector<float> gamma_beta = random_vector(2 * channels, 7);
    float* gradient = floats(2 * channels);
    void* working_gradient = working(2 * channels);
    float* running_mean = uploaded(std::vector<float>(channels, 0.0f));
    float* running_var = uploaded(std::vector<float>(channels, 1.0f));

    Activation xa = activation_like(x), ya = activation_like(x);
    BatchNorm bn(context(), xa, ya, uploaded(gamma_beta), gradient, working_gradient, running_mean, running_var);
    ya.diff = working(std::size_t(ya.elements()));
    bn.bind_backward(context());
    context().finalize();
    write(xa, xa.value, x);
    write(ya, ya.diff, dy);
    bn.forward(context());
    bn.backward_parameters(context());
    bn.backward_inputs(context());

    const double tolerance = sum_tolerance();
    const reference::BatchNormReference r = reference::batch_norm(x, gamma_beta, dy, BatchNorm::kEpsilon, false);
    EXPECT_LT(relative_error(read(ya, ya.value), r.y.data), tolerance) << "forward";
    EXPECT_LT(relative_error(read(xa, xa.diff), r.dx.data), tolerance) << "backward data";
    EXPECT_LT(relative_error(download(context(), gradient, 2 * channels), r.dgamma_beta), tolerance) << "backward gamma, beta";
    EXPECT_LT(relative_error(download_working(context(), working_gradient, 2 * channels), r.dgamma_beta), tolerance)
        << "gamma, beta gradient cast to the working arena";
    EXPECT_LT(relative_error(download(context(), running_mean, channels), r.running_mean), tolerance) << "running mean";
    EXPECT_LT(relative_error(download(context(), running_var, channels), r.running_variance), tolerance) << "running variance";
}

// ---------------------------------------------------------------------------------------------
// ReLU, in place as the network runs it

TEST_P(CudaLayer, ReluInPlace) {
    const Tensor x = random_tensor(2, 16, 5, 5, 8);
    const Tensor dy = random_tensor(2, 16, 5, 5, 9);
    Activation xa = activation_like(x);
    Activation ya = xa;  // same value, its own gradient
    ya.diff = working(std::size_t(ya.elements()));
    Relu relu(context(), xa, ya);
    relu.bind_backward(context());
    context().finalize();
    write(xa, xa.value, x);
    write(ya, ya.diff, dy);
    relu.forward(context());
    relu.backward_inputs(context());
    const reference::ForwardBackward r = reference::relu(x, dy);
    EXPECT_LT(relative_error(read(ya, ya.value), r.y.data), elementwise_tolerance());
    EXPECT_LT(relative_error(read(xa, xa.diff), r.dx.data), elementwise_tolerance());
}

// ---------------------------------------------------------------------------------------------
// Pooling

/// Runs a one-input layer whose output gradient the test binds: y and dx, plain.
std::pair<std::vector<float>, std::vector<float>> run_pooling(Context& context, Pooling& pool, Activation& xa,
                                                              Activation& ya, const Tensor& x, const Tensor& dy) {
    ya.diff = context.allocate(std::size_t(ya.elements()) * element_bytes(context.type()));
    pool.bind_backward(context);
    context.finalize();
    write_nchw(context, xa.value, x.floats(), xa.n, xa.c, xa.h, xa.w);
    write_nchw(context, ya.diff, dy.floats(), ya.n, ya.c, ya.h, ya.w);
    pool.forward(context);
    pool.backward_inputs(context);
    return {read_nchw(context, ya.value, ya.n, ya.c, ya.h, ya.w), read_nchw(context, xa.diff, xa.n, xa.c, xa.h, xa.w)};
}

TEST_P(CudaLayer, MaxPool3x3Stride2Padding1) {
    const int side = 9, out = 5;  // (9 + 2 - 3) / 2 + 1
    const Tensor x = reference::distinct_planes(2, 16, side, 10);
    const Tensor dy = random_tensor(2, 16, out, out, 11);
    Activation xa = activation_like(x), ya = activation(2, 16, out, out);
    Pooling pool(context(), true, Window{3, 2, 1}, xa, ya);
    const auto [y_actual, dx_actual] = run_pooling(context(), pool, xa, ya, x, dy);
    const reference::ForwardBackward r = reference::max_pool(x, Window{3, 2, 1}, dy);
    EXPECT_LT(relative_error(y_actual, r.y.data), elementwise_tolerance());
    // Inputs that win overlapping windows receive sums, and most of dx is 0 (as on the CPU).
    EXPECT_LT(relative_error(dx_actual, r.dx.data), sum_tolerance());
}

TEST_P(CudaLayer, GlobalAveragePool) {
    const int side = 5;
    const Tensor x = random_tensor(2, 32, side, side, 12);
    const Tensor dy = random_tensor(2, 32, 1, 1, 13);
    Activation xa = activation_like(x), ya = activation(2, 32, 1, 1);
    Pooling pool(context(), false, Window{side, 1, 0}, xa, ya);
    const auto [y_actual, dx_actual] = run_pooling(context(), pool, xa, ya, x, dy);
    const reference::ForwardBackward r = reference::global_average_pool(x, dy);
    EXPECT_LT(relative_error(y_actual, r.y.data), sum_tolerance());
    EXPECT_LT(relative_error(dx_actual, r.dx.data), elementwise_tolerance());
}

// ---------------------------------------------------------------------------------------------
// Residual add: the gradient reaches both inputs; one already written gets it added.

TEST_P(CudaLayer, ResidualAddPassesTheGradientToBothInputs) {
    const reference::AddInputs in;
    const Tensor &a = in.a, &b = in.b, &dy = in.dy, &earlier = in.earlier;
    Activation branch = activation_like(a), shortcut = activation_like(a), y = activation_like(a);
    Add add(context(), branch, shortcut, y);
    y.diff = working(std::size_t(y.elements()));
    shortcut.diff = working(std::size_t(shortcut.elements()));  // written by a later reader
    add.bind_backward(context());
    context().finalize();
    write(branch, branch.value, a);
    write(shortcut, shortcut.value, b);
    write(shortcut, shortcut.diff, earlier);
    write(y, y.diff, dy);
    add.forward(context());
    add.backward_inputs(context());
    const reference::AddReference r = reference::residual_add(a, b, dy, earlier);
    EXPECT_LT(relative_error(read(y, y.value), r.y), elementwise_tolerance());
    EXPECT_LT(relative_error(read(branch, branch.diff), r.branch_dx), elementwise_tolerance());
    EXPECT_LT(relative_error(read(shortcut, shortcut.diff), r.shortcut_dx), elementwise_tolerance());
}

// ---------------------------------------------------------------------------------------------
// Fully connected on cuBLAS

TEST_P(CudaLayer, FullyConnected) {
    reference::FullyConnectedInputs in;
    const int batch = in.batch, features = in.features, classes = in.classes;
    const Tensor& x = in.x;
    const std::vector<float>& dlogits = in.dlogits;
    const std::vector<float>& params = in.params;
    const std::size_t weight_elements = std::size_t(classes) * features;
    float* master = uploaded(params);  // W then b, as the arena holds them
    void* working_gradient = working(params.size());

    Activation xa = activation_like(x);
    float* logits = floats(std::size_t(batch) * classes);
    const void* logits_grad = uploaded_working(dlogits);
    WeightView weight;
    weight.master = master, weight.o = classes, weight.i = features, weight.k = 1;
    weight.working = working(weight_elements);
    weight.working_gradient = working_gradient;
    FullyConnected fc(context(), xa, logits, logits_grad, weight, master + weight_elements,
                      static_cast<char*>(working_gradient) + weight_elements * element_bytes(context().type()), classes);
    fc.bind_backward(context());
    context().finalize();
    fc.refresh_parameters(context());
    write(xa, xa.value, x);
    fc.forward(context());
    fc.backward_parameters(context());
    fc.backward_inputs(context());
    const reference::FullyConnectedReference r = reference::fully_connected(x, params, dlogits, classes);
    EXPECT_LT(relative_error(download(context(), logits, r.logits.size()), r.logits), sum_tolerance()) << "forward";
    EXPECT_LT(relative_error(read(xa, xa.diff), r.dx), sum_tolerance()) << "backward data";
    EXPECT_LT(relative_error(download_working(context(), working_gradient, params.size()), r.dparams), sum_tolerance())
        << "backward weights and bias";
}

// ---------------------------------------------------------------------------------------------
// Softmax cross-entropy (kernels.hpp): fp32 logits and losses, the gradient in the working type,
// scaled by grad_scale (1 / N here: the mean loss). Loss within 1e-6 relative (fp32 exp); the
// gradient within the element-wise tolerance.

TEST_P(CudaLayer, SoftmaxCrossEntropy) {
    const int batch = 3, classes = 7;
    std::vector<float> logits = random_vector(std::size_t(batch) * classes, 21, 3.0);
    logits[5] = 80.0f;  // large logits must not overflow (max subtracted first)
    const std::vector<std::int32_t> labels{4, 0, 6};
    const std::vector<std::int32_t> bad_labels{4, 7, 0};
    const reference::SoftmaxReference expected = reference::softmax_cross_entropy(logits, labels, classes);

    auto run = [&](const std::vector<std::int32_t>& host_labels, std::vector<float>* gradient) {
        auto* device_labels = static_cast<std::int32_t*>(context().allocate(sizeof(std::int32_t) * batch));
        // On the context's stream, after the allocation's zeroing (a non-blocking stream).
        EXPECT_EQ(cudaMemcpyAsync(device_labels, host_labels.data(), sizeof(std::int32_t) * batch,
                                  cudaMemcpyHostToDevice, context().stream()),
                  cudaSuccess);
        float* losses = floats(batch);
        void* logits_grad = working(logits.size());
        auto* bad = static_cast<int*>(context().allocate(sizeof(int)));
        softmax_cross_entropy(uploaded(logits), device_labels, batch, classes, 1.0f / batch, losses, logits_grad,
                              context().type(), bad, context().stream());
        *gradient = download_working(context(), logits_grad, logits.size());
        const std::vector<float> per_row = download(context(), losses, batch);
        double mean = 0;
        for (float loss : per_row) mean += double(loss) / batch;
        int flagged = 0;
        context().synchronize();
        EXPECT_EQ(cudaMemcpy(&flagged, bad, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
        return std::pair<double, int>{mean, flagged};
    };
    std::vector<float> gradient;
    const auto [loss, flagged] = run(labels, &gradient);
    EXPECT_NEAR(loss, expected.mean_loss, 1e-6 * expected.mean_loss);
    EXPECT_LT(relative_error(gradient, expected.gradient), elementwise_tolerance());
    EXPECT_EQ(flagged, 0);
    EXPECT_EQ(run(bad_labels, &gradient).second, 1) << "a label outside [0, classes) is flagged";
}

INSTANTIATE_TEST_SUITE_P(Types, CudaLayer, ::testing::Values(DataType::fp32, DataType::fp16), type_name);

#else

TEST(CudaLayer, NotBuilt) { GTEST_SKIP() << "this build has no CUDA backend (EPOCHCAST_WITH_CUDA is off)"; }

#endif

}  // namespace
}  // namespace epochcast::cuda
