// The CUDA backend's layers (executor/cuda/layers.hpp, and the softmax cross-entropy kernel of
// kernels.hpp) behind the conformance suite's LayerBackend (tests/executor/layer_backends.hpp).
// Written on a machine without a GPU: the tolerances below are derived, not yet measured.
//
// Tolerances (relative_error: max |actual - reference| / rms(reference) over a tensor):
//   fp32: 1e-4 for sums of products: FMA math (no TF32), but cuDNN's heuristics may pick Winograd
//         or FFT convolutions, whose transforms round differently from a direct sum (the CPU's
//         direct oneDNN sums meet 1e-5); 1e-6 for element-wise layers.
//   fp16: inputs, weights and outputs rounded to 11 significant bits (relative error up to 2^-11
//         each), sums accumulated in fp32. The CPU's bf16 figures (2^-8, measured up to 1.1e-2
//         element-wise and 2.8e-2 for sums) scaled by 8 give 1.4e-3 and 3.5e-3: 5e-3 element-wise,
//         1e-2 for sums.
//   The softmax cross-entropy's gradient is in the working type: the element-wise tolerance.
#ifdef EPOCHCAST_WITH_CUDA

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "executor/cuda/layers.hpp"
#include "tests/executor/layer_backends.hpp"

namespace epochcast::testing {
namespace {

using namespace epochcast::cuda;

/// One context per call (a context is finalised once, after its layers are built).
class CudaLayerBackend final : public LayerBackend {
public:
    explicit CudaLayerBackend(DataType type) : type_(type) {}

    double sum_tolerance() const override { return fp16() ? 1e-2 : 1e-4; }
    double elementwise_tolerance() const override { return fp16() ? 5e-3 : 1e-6; }
    double softmax_tolerance() const override { return elementwise_tolerance(); }
    double batch_norm_epsilon() const override { return BatchNorm::kEpsilon; }

    ConvolutionOutputs convolution(const ConvolutionCase& c, const ConvolutionInputs& in) override {
        Context context(0, type_);
        const int batch = in.x.n, out_side = in.dy.h;
        const std::vector<float>& w = in.w;
        WeightView weights;
        weights.o = c.out_channels, weights.i = c.in_channels, weights.k = c.window.kernel;
        float* master = static_cast<float*>(context.allocate(w.size() * sizeof(float)));
        upload(context, master, w);
        weights.master = master;
        weights.working = context.allocate(w.size() * element_bytes(context.type()));
        weights.working_gradient = context.allocate(w.size() * element_bytes(context.type()));

        Activation xa = make_activation(context, batch, c.in_channels, c.side, c.side);
        Activation ya = make_activation(context, batch, c.out_channels, out_side, out_side);
        Convolution conv(context, Window{c.window.kernel, c.window.stride, c.window.padding}, xa, ya, weights, true);
        ya.diff = context.allocate(std::size_t(ya.elements()) * element_bytes(context.type()));
        if (in.previous_dx) xa.diff = context.allocate(std::size_t(xa.elements()) * element_bytes(context.type()));
        conv.bind_backward(context);
        context.finalize();
        conv.refresh_parameters(context);
        write_nchw(context, xa.value, in.x.floats(), xa.n, xa.c, xa.h, xa.w);
        write_nchw(context, ya.diff, in.dy.floats(), ya.n, ya.c, ya.h, ya.w);
        if (in.previous_dx) write_nchw(context, xa.diff, in.previous_dx->floats(), xa.n, xa.c, xa.h, xa.w);

        conv.forward(context);
        conv.backward_parameters(context);
        conv.backward_inputs(context);

        // The working gradient is O x K x K x I: back to the plain O x I x K x K in fp32.
        float* plain_dw = static_cast<float*>(context.allocate(w.size() * sizeof(float)));
        int* overflow = static_cast<int*>(context.allocate(sizeof(int)));
        working_to_master(weights.working_gradient, plain_dw, context.type(), weights.o, weights.i, weights.k, 1.0f,
                          overflow, context.stream());
        ConvolutionOutputs out{read_nchw(context, ya.value, ya.n, ya.c, ya.h, ya.w),
                               read_nchw(context, xa.diff, xa.n, xa.c, xa.h, xa.w),
                               download(context, plain_dw, w.size()), -1};
        context.synchronize();
        EXPECT_EQ(cudaMemcpy(&*out.overflow_flag, overflow, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
        return out;
    }

    /// gamma, beta and their gradient 8 bytes past a 16-byte boundary, as in a network's arena after
    /// a 10-class fc (offsets of 2 mod 4 floats): the persistent kernels' misaligned case.
    BatchNormOutputs batch_norm(const BatchNormInputs& in) override {
        Context context(0, type_);
        float* gradient = floats(context, 2 * in.channels + 2) + 2;
        void* working_gradient = working(context, 2 * in.channels);
        float* running_mean = uploaded(context, std::vector<float>(in.channels, 0.0f));
        float* running_var = uploaded(context, std::vector<float>(in.channels, 1.0f));
        std::vector<float> gamma_beta(2, 0.0f);
        gamma_beta.insert(gamma_beta.end(), in.gamma_beta.begin(), in.gamma_beta.end());

        Activation xa = activation_like(context, in.x), ya = activation_like(context, in.x);
        BatchNorm bn(context, xa, ya, uploaded(context, gamma_beta) + 2, gradient, working_gradient, running_mean,
                     running_var);
        ya.diff = working(context, std::size_t(ya.elements()));
        bn.bind_backward(context);
        context.finalize();
        write(context, xa, xa.value, in.x);
        write(context, ya, ya.diff, in.dy);
        bn.forward(context);
        bn.backward_parameters(context);
        bn.backward_inputs(context);
        return {read(context, ya, ya.value),
                read(context, xa, xa.diff),
                download(context, gradient, 2 * in.channels),
                download(context, running_mean, in.channels),
                download(context, running_var, in.channels),
                download_working(context, working_gradient, 2 * in.channels)};
    }

    LayerOutputs relu(const Tensor& x, const Tensor& dy) override {
        Context context(0, type_);
        Activation xa = activation_like(context, x);
        Activation ya = xa;  // same value, its own gradient
        ya.diff = working(context, std::size_t(ya.elements()));
        Relu relu(context, xa, ya);
        return run_one_input(context, relu, xa, ya, x, dy);
    }

    LayerOutputs max_pool(const Tensor& x, LayerWindow window, const Tensor& dy) override {
        return pooling(true, Window{window.kernel, window.stride, window.padding}, x, dy);
    }

    LayerOutputs global_average_pool(const Tensor& x, const Tensor& dy) override {
        return pooling(false, Window{x.h, 1, 0}, x, dy);
    }

    AddOutputs residual_add(const reference::AddInputs& in) override {
        Context context(0, type_);
        Activation branch = activation_like(context, in.a), shortcut = activation_like(context, in.a);
        Activation y = activation_like(context, in.a);
        Add add(context, branch, shortcut, y);
        y.diff = working(context, std::size_t(y.elements()));
        shortcut.diff = working(context, std::size_t(shortcut.elements()));  // written by a later reader
        add.bind_backward(context);
        context.finalize();
        write(context, branch, branch.value, in.a);
        write(context, shortcut, shortcut.value, in.b);
        write(context, shortcut, shortcut.diff, in.earlier);
        write(context, y, y.diff, in.dy);
        add.forward(context);
        add.backward_inputs(context);
        return {read(context, y, y.value), read(context, branch, branch.diff), read(context, shortcut, shortcut.diff)};
    }

    FullyConnectedOutputs fully_connected(const reference::FullyConnectedInputs& in) override {
        Context context(0, type_);
        const int batch = in.batch, features = in.features, classes = in.classes;
        const std::vector<float>& params = in.params;
        const std::size_t weight_elements = std::size_t(classes) * features;
        float* master = uploaded(context, params);  // W then b, as the arena holds them
        void* working_gradient = working(context, params.size());

        Activation xa = activation_like(context, in.x);
        float* logits = floats(context, std::size_t(batch) * classes);
        const void* logits_grad = uploaded_working(context, in.dlogits);
        WeightView weight;
        weight.master = master, weight.o = classes, weight.i = features, weight.k = 1;
        weight.working = working(context, weight_elements);
        weight.working_gradient = working_gradient;
        FullyConnected fc(context, xa, logits, logits_grad, weight, master + weight_elements,
                          static_cast<char*>(working_gradient) + weight_elements * element_bytes(context.type()),
                          classes);
        fc.bind_backward(context);
        context.finalize();
        fc.refresh_parameters(context);
        write(context, xa, xa.value, in.x);
        fc.forward(context);
        fc.backward_parameters(context);
        fc.backward_inputs(context);
        return {download(context, logits, std::size_t(batch) * classes), read(context, xa, xa.diff),
                download_working(context, working_gradient, params.size())};
    }

    /// fp32 logits and losses, the gradient in the working type, scaled by grad_scale = 1 / N (the
    /// mean loss); a bad label is flagged.
    SoftmaxOutputs softmax_cross_entropy(const std::vector<float>& logits, const std::vector<std::int32_t>& labels,
                                         int classes) override {
        Context context(0, type_);
        const int batch = static_cast<int>(labels.size());
        auto* device_labels = static_cast<std::int32_t*>(context.allocate(sizeof(std::int32_t) * batch));
        // On the context's stream, after the allocation's zeroing (a non-blocking stream).
        EXPECT_EQ(cudaMemcpyAsync(device_labels, labels.data(), sizeof(std::int32_t) * batch, cudaMemcpyHostToDevice,
                                  context.stream()),
                  cudaSuccess);
        float* losses = floats(context, batch);
        void* logits_grad = working(context, logits.size());
        auto* bad = static_cast<int*>(context.allocate(sizeof(int)));
        cuda::softmax_cross_entropy(uploaded(context, logits), device_labels, batch, classes, 1.0f / batch, losses,
                                    logits_grad, context.type(), bad, context.stream());
        SoftmaxOutputs out;
        out.gradient = download_working(context, logits_grad, logits.size());
        for (float loss : download(context, losses, batch)) out.mean_loss += double(loss) / batch;
        int flagged = 0;
        context.synchronize();
        EXPECT_EQ(cudaMemcpy(&flagged, bad, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
        out.refused = flagged == 1;
        EXPECT_TRUE(flagged == 0 || flagged == 1) << "the bad-label flag is 0 or 1, not " << flagged;
        return out;
    }

private:
    bool fp16() const { return type_ == DataType::fp16; }

    LayerOutputs pooling(bool max, Window window, const Tensor& x, const Tensor& dy) {
        Context context(0, type_);
        Activation xa = activation_like(context, x), ya = activation_like(context, dy);
        Pooling pool(context, max, window, xa, ya);
        ya.diff = working(context, std::size_t(ya.elements()));
        return run_one_input(context, pool, xa, ya, x, dy);
    }

    /// A one-input layer whose output gradient the caller bound: writes x and dy, runs forward and
    /// backward to the inputs; y and dx.
    template <typename Layer>
    static LayerOutputs run_one_input(Context& context, Layer& layer, Activation& xa, Activation& ya, const Tensor& x,
                                      const Tensor& dy) {
        layer.bind_backward(context);
        context.finalize();
        write(context, xa, xa.value, x);
        write(context, ya, ya.diff, dy);
        layer.forward(context);
        layer.backward_inputs(context);
        return {read(context, ya, ya.value), read(context, xa, xa.diff)};
    }

    static Activation activation_like(Context& context, const Tensor& t) {
        return make_activation(context, t.n, t.c, t.h, t.w);
    }
    /// A device buffer of `count` elements of the working type.
    static void* working(Context& context, std::size_t count) {
        return context.allocate(count * element_bytes(context.type()));
    }
    static float* floats(Context& context, std::size_t count) {
        return static_cast<float*>(context.allocate(count * sizeof(float)));
    }
    static float* uploaded(Context& context, const std::vector<float>& values) {
        float* device = floats(context, values.size());
        upload(context, device, values);
        return device;
    }
    /// A working tensor holding `values` (rounded to the working type).
    static void* uploaded_working(Context& context, const std::vector<float>& values) {
        void* device = working(context, values.size());
        cast_to_working(uploaded(context, values), device, context.type(), std::int64_t(values.size()),
                        context.stream());
        context.synchronize();
        return device;
    }
    static void write(Context& context, const Activation& a, void* target, const Tensor& t) {
        write_nchw(context, target, t.floats(), a.n, a.c, a.h, a.w);
    }
    static std::vector<float> read(Context& context, const Activation& a, const void* source) {
        return read_nchw(context, source, a.n, a.c, a.h, a.w);
    }

    DataType type_;
};

}  // namespace

std::unique_ptr<LayerBackend> make_cuda_layer_backend(LayerType type) {
    return std::make_unique<CudaLayerBackend>(type == LayerType::fp16 ? DataType::fp16 : DataType::fp32);
}

}  // namespace epochcast::testing

#endif  // EPOCHCAST_WITH_CUDA
