// The cuDNN / cuBLAS layers the CUDA network is built from (executor/cuda/network.cpp), usable one at
// a time by the tests (tests/executor/test_layer_conformance.cpp, through
// tests/executor/cuda_layer_backend.cpp), as executor/cpu/layers.hpp is for the CPU backend.
//
// Which cuDNN API: the legacy one (cudnnConvolutionForward, cudnnBatchNormalizationForwardTraining,
// ...), present in cuDNN 9 though deprecated. Reasons: every layer here is a single operation that
// the legacy API covers directly with documented alpha/beta blending (beta = 1 accumulates a
// gradient into a tensor another layer already wrote, which the residual connections need); the
// graph API would add an operation graph, engine heuristics and execution plans per layer for no
// fusion we use yet; and this code was written on a machine without a GPU, where the smaller and
// long-documented surface is the one that can be checked by reading. Moving the convolution + batch
// norm + ReLU chains to graph-API fusions is the known next step for speed.
//
// Notation: N batch, C channels, H x W a feature map, O output channels, K kernel side. Activations
// are N x C x H x W stored NHWC (cuDNN's CUDNN_TENSOR_NHWC) in the working type: fp16 for amp
// (tensor-op math, fp32 accumulation), fp32 otherwise (FMA math: no TF32, so fp32 means fp32).
// Master weights, batch-norm parameters and statistics are fp32 in device arenas; convolution and fc
// layers compute with working copies (O x K x K x I for convolutions) refreshed from the masters,
// and write their weight gradients into a working gradient arena of the same layout.
//
// Life of a layer: construct it in forward order, bind_backward() in backward order, then
// Context::finalize() once (the shared workspace), refresh_parameters(), and every step forward()
// / backward_parameters() / backward_inputs(). Everything runs on the context's stream.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "executor/cuda/kernels.hpp"

namespace epochcast::cuda {

/// One device allocation, freed with its owner.
class DeviceBuffer {
public:
    explicit DeviceBuffer(std::size_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    void* data() const { return data_; }
    std::size_t bytes() const { return bytes_; }

private:
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
};

/// A convolution algorithm chosen for one direction of one shape: cuDNN's algorithm number, its
/// math type, the workspace it needs, and whether it was measured (find) or guessed (heuristics).
struct ChosenAlgorithm {
    int algorithm = 0;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
    std::size_t workspace_bytes = 0;
    bool measured = false;
};

/// The GPU, its stream, the cuDNN and cuBLAS handles, every buffer the layers allocate, the
/// convolution workspace they share and the convolution algorithms chosen so far (by shape).
///
/// Two choices come from the environment, for comparing implementations on a GPU (docs/performance.md):
///   EPOCHCAST_CUDNN_ALGO       find (default): each convolution shape's algorithms measured once by
///                              cuDNN's find; heuristic: cuDNN's heuristics' first choice, unmeasured
///   EPOCHCAST_CUDNN_BATCHNORM  persistent (default): fp16 batch norm through cuDNN's Ex calls in
///                              CUDNN_BATCHNORM_SPATIAL_PERSISTENT mode (NHWC kernels); spatial: the
///                              plain calls in CUDNN_BATCHNORM_SPATIAL mode (always so for fp32)
/// Any other value is an InputError naming the variable.
class Context {
public:
    /// Makes `device` current (throws InputError when it does not exist).
    Context(int device, DataType type);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    int device() const { return device_; }
    DataType type() const { return type_; }
    cudnnDataType_t cudnn_type() const { return type_ == DataType::fp16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT; }
    cudaStream_t stream() const { return stream_; }
    cudnnHandle_t cudnn() const { return cudnn_; }
    cublasHandle_t cublas() const { return cublas_; }

    /// A zeroed device buffer of `bytes`, alive as long as the context.
    void* allocate(std::size_t bytes);
    /// A layer will need this much workspace during one call.
    void request_workspace(std::size_t bytes);
    /// Allocates the workspace; call once, after every layer is built.
    void finalize();
    void* workspace() const { return workspace_; }
    std::size_t workspace_bytes() const { return workspace_bytes_; }
    /// Waits for everything enqueued on the stream.
    void synchronize() const;

    bool measure_algorithms() const { return measure_algorithms_; }
    bool persistent_batch_norm() const { return persistent_batch_norm_; }
    /// The algorithm chosen earlier for `key` (a direction and shape), or null.
    const ChosenAlgorithm* chosen_algorithm(const std::string& key) const;
    void remember_algorithm(const std::string& key, const ChosenAlgorithm& chosen);

private:
    int device_;
    DataType type_;
    cudaStream_t stream_ = nullptr;
    cudnnHandle_t cudnn_ = nullptr;
    cublasHandle_t cublas_ = nullptr;
    std::deque<DeviceBuffer> buffers_;
    void* workspace_ = nullptr;
    std::size_t workspace_bytes_ = 0;
    bool measure_algorithms_ = true;
    bool persistent_batch_norm_ = true;
    std::map<std::string, ChosenAlgorithm> algorithms_;
};

/// An owned cuDNN tensor descriptor: N x C x H x W, NHWC, of the context's type.
class TensorDescriptor {
public:
    TensorDescriptor(int n, int c, int h, int w, cudnnDataType_t type);
    ~TensorDescriptor();
    TensorDescriptor(const TensorDescriptor&) = delete;
    TensorDescriptor& operator=(const TensorDescriptor&) = delete;
    cudnnTensorDescriptor_t get() const { return descriptor_; }

private:
    cudnnTensorDescriptor_t descriptor_ = nullptr;
};

/// One N x C x H x W tensor of the network (NHWC, working type): its value and its gradient. `diff`
/// stays null until the first layer in backward order binds it.
struct Activation {
    int n = 0, c = 0, h = 0, w = 0;
    void* value = nullptr;
    void* diff = nullptr;
    std::shared_ptr<TensorDescriptor> descriptor;
    std::int64_t elements() const { return std::int64_t(n) * c * h * w; }
};

/// An activation with its value allocated, gradient unbound.
Activation make_activation(Context& context, int n, int c, int h, int w);

/// Where a layer's backward pass writes the gradient of one of its inputs: the first layer in
/// backward order overwrites (beta 0, allocating x.diff), a later one adds (beta 1).
struct GradientSink {
    void* target = nullptr;
    float beta = 0;
    static GradientSink bind(Context& context, Activation& x);
};

/// Square kernel geometry of a convolution or pooling layer.
struct Window {
    int kernel = 1;   ///< side, in pixels
    int stride = 1;   ///< in pixels
    int padding = 0;  ///< zeros on each side, in pixels
};

/// A convolution or fc weight: the fp32 master (O x I x K x K plain), its working copy and the
/// working gradient (O x K x K x I), all device memory.
struct WeightView {
    const float* master = nullptr;
    void* working = nullptr;
    void* working_gradient = nullptr;
    int o = 0, i = 0, k = 1;
    std::int64_t elements() const { return std::int64_t(o) * i * k * k; }
};

class LayerOp {
public:
    virtual ~LayerOp() = default;
    virtual void forward(Context& context) = 0;
    /// Call in backward order, after every consumer of the output has bound its gradient.
    virtual void bind_backward(Context& context) = 0;
    /// Gradient of its parameters into the working gradient arena (nothing for layers without).
    virtual void backward_parameters(Context& /*context*/) {}
    virtual void backward_inputs(Context& context) = 0;
    /// The master values changed: refresh the working copy.
    virtual void refresh_parameters(Context& /*context*/) {}
};

/// Convolution without bias, x: N x I x H x W -> y: N x O x H' x W' (y allocated by the caller).
/// input_gradient = false (the image) skips backward-data.
class Convolution : public LayerOp {
public:
    Convolution(Context& context, Window window, Activation& x, Activation& y, WeightView weights, bool input_gradient);
    ~Convolution() override;
    void forward(Context& context) override;
    void bind_backward(Context& context) override;
    void backward_parameters(Context& context) override;
    void backward_inputs(Context& context) override;
    void refresh_parameters(Context& context) override;
    /// The algorithms chosen, e.g. "fwd 1, bwd-filter 1 (tensor ops, measured)".
    std::string implementation() const;

private:
    Activation& x_;
    Activation& y_;
    WeightView weights_;
    Window window_;
    bool input_gradient_;
    cudnnFilterDescriptor_t filter_ = nullptr;
    cudnnConvolutionDescriptor_t forward_conv_ = nullptr, data_conv_ = nullptr, filter_conv_ = nullptr;
    cudnnConvolutionFwdAlgo_t forward_algo_{};
    cudnnConvolutionBwdDataAlgo_t data_algo_{};
    cudnnConvolutionBwdFilterAlgo_t filter_algo_{};
    bool tensor_ops_ = false;
    bool measured_ = false;  ///< the forward algorithm was measured (find), not guessed
    GradientSink x_grad_;
};

/// Batch normalisation in training mode, y = gamma (x - mean) / sqrt(var + eps) + beta over N x H x W
/// per channel. gamma then beta (C each, fp32) in the values arena; their gradient written fp32
/// into `gradient` (2C, the master gradient arena) and cast into `working_gradient`. Running
/// statistics (device, fp32) updated with momentum 0.1, the variance unbiased (as PyTorch).
class BatchNorm : public LayerOp {
public:
    static constexpr double kEpsilon = 1e-5;
    static constexpr double kMomentum = 0.1;

    BatchNorm(Context& context, Activation& x, Activation& y, const float* gamma_beta, float* gradient,
              void* working_gradient, float* running_mean, float* running_variance);
    ~BatchNorm() override;
    void forward(Context& context) override;
    void bind_backward(Context& context) override;
    void backward_parameters(Context& context) override;
    void backward_inputs(Context& context) override;
    /// Copies gamma and beta into the layer's aligned copy, where it has one.
    void refresh_parameters(Context& context) override;

private:
    const float* scale_bias() const { return own_parameters_ != nullptr ? own_parameters_ : gamma_beta_; }
    float* scale_bias_gradient() const { return own_gradient_ != nullptr ? own_gradient_ : gradient_; }

    Activation& x_;
    Activation& y_;
    const float* gamma_beta_;
    float* gradient_;
    void* working_gradient_;
    float* running_mean_;
    float* running_variance_;
    float* saved_mean_ = nullptr;
    float* saved_inverse_deviation_ = nullptr;
    cudnnTensorDescriptor_t parameters_ = nullptr;  ///< 1 x C x 1 x 1 fp32
    cudnnBatchNormMode_t mode_ = CUDNN_BATCHNORM_SPATIAL;
    bool persistent_ = false;  ///< the Ex calls in SPATIAL_PERSISTENT mode (Context::persistent_batch_norm)
    void* reserve_ = nullptr;  ///< what the Ex forward keeps for the backward pass (persistent only)
    std::size_t reserve_bytes_ = 0;
    float* own_parameters_ = nullptr;  ///< 16-byte aligned gamma, beta where the arena's are not (persistent only)
    float* own_gradient_ = nullptr;    ///< and their gradient, copied to `gradient` after each backward pass
    GradientSink x_grad_;
};

/// ReLU, y = max(x, 0), in place when y.value is x.value (the backward pass reads y).
class Relu : public LayerOp {
public:
    Relu(Context& context, Activation& x, Activation& y);
    ~Relu() override;
    void forward(Context& context) override;
    void bind_backward(Context& context) override;
    void backward_inputs(Context& context) override;

private:
    Activation& x_;
    Activation& y_;
    cudnnActivationDescriptor_t activation_ = nullptr;
    GradientSink x_grad_;
};

/// Max pooling or average pooling (excluding padding). x: N x C x H x W, y: N x C x H' x W'.
class Pooling : public LayerOp {
public:
    Pooling(Context& context, bool max, Window window, Activation& x, Activation& y);
    ~Pooling() override;
    void forward(Context& context) override;
    void bind_backward(Context& context) override;
    void backward_inputs(Context& context) override;

private:
    Activation& x_;
    Activation& y_;
    cudnnPoolingDescriptor_t pooling_ = nullptr;
    GradientSink x_grad_;
};

/// Residual add, y = branch + shortcut. Backward passes y's gradient to both inputs: an input whose
/// gradient nothing has bound yet shares y.diff; otherwise y.diff is added to it.
class Add : public LayerOp {
public:
    Add(Context& context, Activation& branch, Activation& shortcut, Activation& y);
    void forward(Context& context) override;
    void bind_backward(Context& context) override;
    void backward_inputs(Context& context) override;

private:
    Activation& branch_;
    Activation& shortcut_;
    Activation& y_;
    std::vector<void*> accumulate_into_;
};

/// Fully connected layer with bias on cuBLAS: logits = x W^T + b. x: N x C x 1 x 1, W: classes x C
/// (working copy and working gradient), b: classes (fp32 master; its gradient into the working
/// arena). logits: N x classes fp32; logits_grad: N x classes working (given by the caller).
class FullyConnected : public LayerOp {
public:
    FullyConnected(Context& context, Activation& x, float* logits, const void* logits_grad, WeightView weight,
                   const float* bias, void* bias_working_gradient, int classes);
    void forward(Context& context) override;
    void bind_backward(Context& context) override;
    void backward_parameters(Context& context) override;
    void backward_inputs(Context& context) override;
    void refresh_parameters(Context& context) override;

private:
    Activation& x_;
    float* logits_;
    const void* logits_grad_;
    WeightView weight_;
    const float* bias_;
    void* bias_working_gradient_;
    int classes_;
    GradientSink x_grad_;
};

/// Plain fp32 N x C x H x W (NCHW, as the CPU tests hold it) <-> an activation's NHWC working
/// storage. For tests and set-up only (they allocate and synchronise).
void write_nchw(Context& context, void* nhwc, const std::vector<float>& nchw, int n, int c, int h, int w);
std::vector<float> read_nchw(Context& context, const void* nhwc, int n, int c, int h, int w);
/// fp32 device <-> host copies of `count` values (tests and set-up).
void upload(Context& context, float* device, const std::vector<float>& host);
std::vector<float> download(Context& context, const float* device, std::size_t count);
/// A working-type device tensor of `count` elements -> fp32 host values.
std::vector<float> download_working(Context& context, const void* device, std::size_t count);

}  // namespace epochcast::cuda
