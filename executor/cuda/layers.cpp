#include "executor/cuda/layers.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "executor/cuda/check.hpp"

namespace epochcast::cuda {

void throw_call_error(const char* library, const char* call, const std::string& what, const char* file, int line) {
    throw RunError(std::string(library) + " call failed: " + call + ": " + what + " (" + file + ":" +
                   std::to_string(line) + ")");
}

int visible_gpus() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();  // no driver or no device: clear the sticky error, report none
        return 0;
    }
    return count;
}

namespace {

/// Workspace one convolution algorithm may ask for; larger ones are passed over.
constexpr std::size_t kWorkspaceLimitBytes = std::size_t{1} << 30;

const float kOne = 1.0f;
const float kZero = 0.0f;

cudaDataType_t cublas_type(DataType type) { return type == DataType::fp16 ? CUDA_R_16F : CUDA_R_32F; }

/// The first of cuDNN's results (fastest first when measured, most promising first from the
/// heuristics) that ran or would run, within the workspace limit; null when none.
template <typename Perf>
const Perf* first_usable(const Perf* results, int returned) {
    for (int i = 0; i < returned; ++i) {
        if (results[i].status == CUDNN_STATUS_SUCCESS && results[i].memory <= kWorkspaceLimitBytes) return &results[i];
    }
    return nullptr;
}

/// One direction's algorithm for one convolution shape: from the context's table when a layer of
/// the same shape chose already, else measured (cuDNN's find, which times every algorithm with
/// memory it allocates itself) or, with EPOCHCAST_CUDNN_ALGO=heuristic or when nothing measured
/// ran, the heuristics' first choice. `find` and `heuristic` fill Perf results as cuDNN's
/// cudnnFind.../cudnnGet..._v7 calls do.
template <typename Perf, int kCount, typename Find, typename Heuristic>
ChosenAlgorithm choose_algorithm(Context& context, const std::string& key, const char* what, Find find,
                                 Heuristic heuristic) {
    if (const ChosenAlgorithm* known = context.chosen_algorithm(key)) return *known;
    Perf results[kCount];
    int returned = 0;
    const Perf* usable = nullptr;
    bool measured = false;
    if (context.measure_algorithms()) {
        // An algorithm whose memory cuDNN could not allocate comes back failed and is passed over.
        if (find(kCount, &returned, results) == CUDNN_STATUS_SUCCESS) usable = first_usable(results, returned);
        (void)cudaGetLastError();  // a failed allocation inside find is not this program's error
        measured = usable != nullptr;
    }
    if (usable == nullptr) {
        EPOCHCAST_CUDNN_CHECK(heuristic(kCount, &returned, results));
        usable = first_usable(results, returned);
    }
    if (usable == nullptr) {
        throw RunError(std::string("cuDNN offers no ") + what + " algorithm for this convolution within " +
                       std::to_string(kWorkspaceLimitBytes >> 20) + " MiB of workspace");
    }
    const ChosenAlgorithm chosen{static_cast<int>(usable->algo), usable->mathType, usable->memory, measured};
    context.remember_algorithm(key, chosen);
    return chosen;
}

/// The shape a convolution's algorithm depends on: x, the filter, the window and the type.
std::string convolution_key(const char* direction, const Activation& x, const WeightView& w, Window window,
                            DataType type) {
    std::string key = direction;
    for (const int value : {x.n, x.c, x.h, x.w, w.o, w.k, window.stride, window.padding, static_cast<int>(type)}) {
        key += ' ';
        key += std::to_string(value);
    }
    return key;
}

/// True when `variable` is unset or `when_unset`, false when it is `other`; anything else is bad input.
bool environment_choice(const char* variable, const std::string& when_unset, const std::string& other) {
    const char* value = std::getenv(variable);
    if (value == nullptr || value == when_unset) return true;
    if (value == other) return false;
    throw InputError(std::string(variable) + " is '" + value + "': use " + when_unset + " (the default) or " + other);
}

cudnnConvolutionDescriptor_t make_convolution(Window window, DataType type) {
    cudnnConvolutionDescriptor_t descriptor = nullptr;
    EPOCHCAST_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&descriptor));
    // fp32 accumulation for both types (CUDNN_DATA_FLOAT compute type).
    EPOCHCAST_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(descriptor, window.padding, window.padding, window.stride,
                                                          window.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                                          CUDNN_DATA_FLOAT));
    // fp16: tensor cores; fp32: FMA only, so that no TF32 rounding creeps in.
    EPOCHCAST_CUDNN_CHECK(
        cudnnSetConvolutionMathType(descriptor, type == DataType::fp16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
    return descriptor;
}

}  // namespace

// ---- buffers and context ----------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) EPOCHCAST_CUDA_CHECK(cudaMalloc(&data_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
    if (data_) (void)cudaFree(data_);
}

Context::Context(int device, DataType type) : device_(device), type_(type) {
    const int gpus = visible_gpus();
    if (device < 0 || device >= gpus) {
        // Bad input rather than a failed run, as bf16 on a CPU without it is: the user asked this
        // machine for something it does not have.
        throw InputError("--backend cuda: GPU " + std::to_string(device) + " requested, but " + std::to_string(gpus) +
                         " GPU(s) are visible: run at most one rank per GPU on each node, or --backend cpu");
    }
    measure_algorithms_ = environment_choice("EPOCHCAST_CUDNN_ALGO", "find", "heuristic");
    persistent_batch_norm_ = environment_choice("EPOCHCAST_CUDNN_BATCHNORM", "persistent", "spatial");
    EPOCHCAST_CUDA_CHECK(cudaSetDevice(device));
    EPOCHCAST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    EPOCHCAST_CUDNN_CHECK(cudnnCreate(&cudnn_));
    EPOCHCAST_CUDNN_CHECK(cudnnSetStream(cudnn_, stream_));
    EPOCHCAST_CUBLAS_CHECK(cublasCreate(&cublas_));
    EPOCHCAST_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
}

Context::~Context() {
    if (stream_) (void)cudaStreamSynchronize(stream_);
    buffers_.clear();
    if (cublas_) (void)cublasDestroy(cublas_);
    if (cudnn_) (void)cudnnDestroy(cudnn_);
    if (stream_) (void)cudaStreamDestroy(stream_);
}

void* Context::allocate(std::size_t bytes) {
    DeviceBuffer& buffer = buffers_.emplace_back(bytes);
    if (bytes > 0) EPOCHCAST_CUDA_CHECK(cudaMemsetAsync(buffer.data(), 0, bytes, stream_));
    return buffer.data();
}

const ChosenAlgorithm* Context::chosen_algorithm(const std::string& key) const {
    const auto found = algorithms_.find(key);
    return found == algorithms_.end() ? nullptr : &found->second;
}

void Context::remember_algorithm(const std::string& key, const ChosenAlgorithm& chosen) { algorithms_[key] = chosen; }

void Context::request_workspace(std::size_t bytes) { workspace_bytes_ = std::max(workspace_bytes_, bytes); }

void Context::finalize() {
    workspace_ = allocate(workspace_bytes_);
    synchronize();
}

void Context::synchronize() const { EPOCHCAST_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

TensorDescriptor::TensorDescriptor(int n, int c, int h, int w, cudnnDataType_t type) {
    EPOCHCAST_CUDNN_CHECK(cudnnCreateTensorDescriptor(&descriptor_));
    EPOCHCAST_CUDNN_CHECK(cudnnSetTensor4dDescriptor(descriptor_, CUDNN_TENSOR_NHWC, type, n, c, h, w));
}

TensorDescriptor::~TensorDescriptor() { (void)cudnnDestroyTensorDescriptor(descriptor_); }

Activation make_activation(Context& context, int n, int c, int h, int w) {
    Activation a;
    a.n = n, a.c = c, a.h = h, a.w = w;
    a.value = context.allocate(static_cast<std::size_t>(a.elements()) * element_bytes(context.type()));
    a.descriptor = std::make_shared<TensorDescriptor>(n, c, h, w, context.cudnn_type());
    return a;
}

GradientSink GradientSink::bind(Context& context, Activation& x) {
    if (x.diff == nullptr) {
        x.diff = context.allocate(static_cast<std::size_t>(x.elements()) * element_bytes(context.type()));
        return GradientSink{x.diff, 0.0f};
    }
    return GradientSink{x.diff, 1.0f};
}

// ---- convolution ------------------------------------------------------------------------------

Convolution::Convolution(Context& context, Window window, Activation& x, Activation& y, WeightView weights,
                         bool input_gradient)
    : x_(x), y_(y), weights_(weights), window_(window), input_gradient_(input_gradient) {
    EPOCHCAST_CUDNN_CHECK(cudnnCreateFilterDescriptor(&filter_));
    EPOCHCAST_CUDNN_CHECK(cudnnSetFilter4dDescriptor(filter_, context.cudnn_type(), CUDNN_TENSOR_NHWC, weights.o,
                                                     weights.i, weights.k, weights.k));
    forward_conv_ = make_convolution(window, context.type());
    data_conv_ = make_convolution(window, context.type());
    filter_conv_ = make_convolution(window, context.type());

    const ChosenAlgorithm chosen = choose_algorithm<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
        context, convolution_key("forward", x, weights, window, context.type()), "forward",
        [&](int count, int* returned, cudnnConvolutionFwdAlgoPerf_t* results) {
            return cudnnFindConvolutionForwardAlgorithm(context.cudnn(), x.descriptor->get(), filter_, forward_conv_,
                                                        y.descriptor->get(), count, returned, results);
        },
        [&](int count, int* returned, cudnnConvolutionFwdAlgoPerf_t* results) {
            return cudnnGetConvolutionForwardAlgorithm_v7(context.cudnn(), x.descriptor->get(), filter_, forward_conv_,
                                                          y.descriptor->get(), count, returned, results);
        });
    forward_algo_ = static_cast<cudnnConvolutionFwdAlgo_t>(chosen.algorithm);
    tensor_ops_ = chosen.math == CUDNN_TENSOR_OP_MATH;
    measured_ = chosen.measured;
    EPOCHCAST_CUDNN_CHECK(cudnnSetConvolutionMathType(forward_conv_, chosen.math));
    context.request_workspace(chosen.workspace_bytes);

    const ChosenAlgorithm filter_chosen =
        choose_algorithm<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
            context, convolution_key("backward-filter", x, weights, window, context.type()), "backward-filter",
            [&](int count, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* results) {
                return cudnnFindConvolutionBackwardFilterAlgorithm(context.cudnn(), x.descriptor->get(),
                                                                   y.descriptor->get(), filter_conv_, filter_, count,
                                                                   returned, results);
            },
            [&](int count, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* results) {
                return cudnnGetConvolutionBackwardFilterAlgorithm_v7(context.cudnn(), x.descriptor->get(),
                                                                     y.descriptor->get(), filter_conv_, filter_, count,
                                                                     returned, results);
            });
    filter_algo_ = static_cast<cudnnConvolutionBwdFilterAlgo_t>(filter_chosen.algorithm);
    EPOCHCAST_CUDNN_CHECK(cudnnSetConvolutionMathType(filter_conv_, filter_chosen.math));
    context.request_workspace(filter_chosen.workspace_bytes);
}

Convolution::~Convolution() {
    (void)cudnnDestroyConvolutionDescriptor(forward_conv_);
    (void)cudnnDestroyConvolutionDescriptor(data_conv_);
    (void)cudnnDestroyConvolutionDescriptor(filter_conv_);
    (void)cudnnDestroyFilterDescriptor(filter_);
}

void Convolution::bind_backward(Context& context) {
    if (!input_gradient_) return;
    x_grad_ = GradientSink::bind(context, x_);
    const ChosenAlgorithm chosen =
        choose_algorithm<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
            context, convolution_key("backward-data", x_, weights_, window_, context.type()), "backward-data",
            [&](int count, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* results) {
                return cudnnFindConvolutionBackwardDataAlgorithm(context.cudnn(), filter_, y_.descriptor->get(),
                                                                 data_conv_, x_.descriptor->get(), count, returned,
                                                                 results);
            },
            [&](int count, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* results) {
                return cudnnGetConvolutionBackwardDataAlgorithm_v7(context.cudnn(), filter_, y_.descriptor->get(),
                                                                   data_conv_, x_.descriptor->get(), count, returned,
                                                                   results);
            });
    data_algo_ = static_cast<cudnnConvolutionBwdDataAlgo_t>(chosen.algorithm);
    EPOCHCAST_CUDNN_CHECK(cudnnSetConvolutionMathType(data_conv_, chosen.math));
    context.request_workspace(chosen.workspace_bytes);
}

void Convolution::forward(Context& context) {
    EPOCHCAST_CUDNN_CHECK(cudnnConvolutionForward(context.cudnn(), &kOne, x_.descriptor->get(), x_.value, filter_,
                                                  weights_.working, forward_conv_, forward_algo_, context.workspace(),
                                                  context.workspace_bytes(), &kZero, y_.descriptor->get(), y_.value));
}

void Convolution::backward_parameters(Context& context) {
    EPOCHCAST_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        context.cudnn(), &kOne, x_.descriptor->get(), x_.value, y_.descriptor->get(), y_.diff, filter_conv_,
        filter_algo_, context.workspace(), context.workspace_bytes(), &kZero, filter_, weights_.working_gradient));
}

void Convolution::backward_inputs(Context& context) {
    if (!input_gradient_) return;
    EPOCHCAST_CUDNN_CHECK(cudnnConvolutionBackwardData(
        context.cudnn(), &kOne, filter_, weights_.working, y_.descriptor->get(), y_.diff, data_conv_, data_algo_,
        context.workspace(), context.workspace_bytes(), &x_grad_.beta, x_.descriptor->get(), x_grad_.target));
}

void Convolution::refresh_parameters(Context& context) {
    master_to_working(weights_.master, weights_.working, context.type(), weights_.o, weights_.i, weights_.k,
                      context.stream());
}

std::string Convolution::implementation() const {
    return "fwd " + std::to_string(static_cast<int>(forward_algo_)) + ", bwd-filter " +
           std::to_string(static_cast<int>(filter_algo_)) + (tensor_ops_ ? " (tensor ops" : " (FMA") +
           (measured_ ? ", measured)" : ", heuristics)");
}

// ---- batch norm -------------------------------------------------------------------------------

BatchNorm::BatchNorm(Context& context, Activation& x, Activation& y, const float* gamma_beta, float* gradient,
                     void* working_gradient, float* running_mean, float* running_variance)
    : x_(x),
      y_(y),
      gamma_beta_(gamma_beta),
      gradient_(gradient),
      working_gradient_(working_gradient),
      running_mean_(running_mean),
      running_variance_(running_variance),
      persistent_(context.persistent_batch_norm() && context.type() == DataType::fp16) {
    mode_ = persistent_ ? CUDNN_BATCHNORM_SPATIAL_PERSISTENT : CUDNN_BATCHNORM_SPATIAL;
    EPOCHCAST_CUDNN_CHECK(cudnnCreateTensorDescriptor(&parameters_));
    EPOCHCAST_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(parameters_, x.descriptor->get(), mode_));
    saved_mean_ = static_cast<float*>(context.allocate(sizeof(float) * static_cast<std::size_t>(x.c)));
    saved_inverse_deviation_ = static_cast<float*>(context.allocate(sizeof(float) * static_cast<std::size_t>(x.c)));
    if (persistent_) {
        std::size_t forward_bytes = 0, backward_bytes = 0;
        EPOCHCAST_CUDNN_CHECK(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
            context.cudnn(), mode_, CUDNN_BATCHNORM_OPS_BN, x.descriptor->get(), nullptr, y.descriptor->get(),
            parameters_, nullptr, &forward_bytes));
        EPOCHCAST_CUDNN_CHECK(cudnnGetBatchNormalizationBackwardExWorkspaceSize(
            context.cudnn(), mode_, CUDNN_BATCHNORM_OPS_BN, x.descriptor->get(), y.descriptor->get(),
            y.descriptor->get(), nullptr, x.descriptor->get(), parameters_, nullptr, &backward_bytes));
        EPOCHCAST_CUDNN_CHECK(cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
            context.cudnn(), mode_, CUDNN_BATCHNORM_OPS_BN, nullptr, x.descriptor->get(), &reserve_bytes_));
        context.request_workspace(std::max(forward_bytes, backward_bytes));
        reserve_ = context.allocate(reserve_bytes_);
        // The persistent kernels load gamma, beta and their gradients 16 bytes at a time: an arena
        // offset that is not a multiple of 4 floats (every tensor after a 10-class fc, say) gave
        // "misaligned address" on an H200. Such a layer works on aligned copies of its own.
        const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
        if (!aligned(gamma_beta_) || !aligned(gamma_beta_ + x.c) || !aligned(gradient_) || !aligned(gradient_ + x.c)) {
            const std::size_t bytes = 2 * sizeof(float) * static_cast<std::size_t>(x.c);
            own_parameters_ = static_cast<float*>(context.allocate(bytes));
            own_gradient_ = static_cast<float*>(context.allocate(bytes));
            refresh_parameters(context);
        }
    }
}

BatchNorm::~BatchNorm() { (void)cudnnDestroyTensorDescriptor(parameters_); }

void BatchNorm::forward(Context& context) {
    if (persistent_) {
        EPOCHCAST_CUDNN_CHECK(cudnnBatchNormalizationForwardTrainingEx(
            context.cudnn(), mode_, CUDNN_BATCHNORM_OPS_BN, &kOne, &kZero, x_.descriptor->get(), x_.value, nullptr,
            nullptr, y_.descriptor->get(), y_.value, parameters_, gamma_beta_, gamma_beta_ + x_.c, kMomentum,
            running_mean_, running_variance_, kEpsilon, saved_mean_, saved_inverse_deviation_, nullptr,
            context.workspace(), context.workspace_bytes(), reserve_, reserve_bytes_));
        return;
    }
    EPOCHCAST_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
        context.cudnn(), mode_, &kOne, &kZero, x_.descriptor->get(), x_.value, y_.descriptor->get(), y_.value,
        parameters_, gamma_beta_, gamma_beta_ + x_.c, kMomentum, running_mean_, running_variance_, kEpsilon,
        saved_mean_, saved_inverse_deviation_));
}

void BatchNorm::bind_backward(Context& context) { x_grad_ = GradientSink::bind(context, x_); }

// One cuDNN call gives dx, dgamma and dbeta; it runs here, backward_inputs has nothing left to do.
void BatchNorm::backward_parameters(Context& context) {
    if (persistent_) {
        EPOCHCAST_CUDNN_CHECK(cudnnBatchNormalizationBackwardEx(
            context.cudnn(), mode_, CUDNN_BATCHNORM_OPS_BN, &kOne, &x_grad_.beta, &kOne, &kZero, x_.descriptor->get(),
            x_.value, y_.descriptor->get(), y_.value, y_.descriptor->get(), y_.diff, nullptr, nullptr,
            x_.descriptor->get(), x_grad_.target, parameters_, scale_bias(), scale_bias() + x_.c, scale_bias_gradient(),
            scale_bias_gradient() + x_.c, kEpsilon, saved_mean_, saved_inverse_deviation_, nullptr, context.workspace(),
            context.workspace_bytes(), reserve_, reserve_bytes_));
        if (own_gradient_ != nullptr) {
            EPOCHCAST_CUDA_CHECK(cudaMemcpyAsync(gradient_, own_gradient_, 2 * sizeof(float) * std::size_t(x_.c),
                                                 cudaMemcpyDeviceToDevice, context.stream()));
        }
    } else {
        EPOCHCAST_CUDNN_CHECK(cudnnBatchNormalizationBackward(
            context.cudnn(), mode_, &kOne, &x_grad_.beta, &kOne, &kZero, x_.descriptor->get(), x_.value,
            y_.descriptor->get(), y_.diff, x_.descriptor->get(), x_grad_.target, parameters_, gamma_beta_, gradient_,
            gradient_ + x_.c, kEpsilon, saved_mean_, saved_inverse_deviation_));
    }
    cast_to_working(gradient_, working_gradient_, context.type(), 2 * std::int64_t{x_.c}, context.stream());
}

void BatchNorm::backward_inputs(Context& /*context*/) {}

void BatchNorm::refresh_parameters(Context& context) {
    if (own_parameters_ == nullptr) return;
    EPOCHCAST_CUDA_CHECK(cudaMemcpyAsync(own_parameters_, gamma_beta_, 2 * sizeof(float) * std::size_t(x_.c),
                                         cudaMemcpyDeviceToDevice, context.stream()));
}

// ---- relu -------------------------------------------------------------------------------------

Relu::Relu(Context& /*context*/, Activation& x, Activation& y) : x_(x), y_(y) {
    EPOCHCAST_CUDNN_CHECK(cudnnCreateActivationDescriptor(&activation_));
    EPOCHCAST_CUDNN_CHECK(
        cudnnSetActivationDescriptor(activation_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
}

Relu::~Relu() { (void)cudnnDestroyActivationDescriptor(activation_); }

void Relu::forward(Context& context) {
    EPOCHCAST_CUDNN_CHECK(cudnnActivationForward(context.cudnn(), activation_, &kOne, x_.descriptor->get(), x_.value,
                                                 &kZero, y_.descriptor->get(), y_.value));
}

void Relu::bind_backward(Context& context) { x_grad_ = GradientSink::bind(context, x_); }

// ReLU's derivative from its output: y > 0 exactly where x > 0, so y serves as x (in place).
void Relu::backward_inputs(Context& context) {
    EPOCHCAST_CUDNN_CHECK(cudnnActivationBackward(context.cudnn(), activation_, &kOne, y_.descriptor->get(), y_.value,
                                                  y_.descriptor->get(), y_.diff, y_.descriptor->get(), y_.value,
                                                  &x_grad_.beta, x_.descriptor->get(), x_grad_.target));
}

// ---- pooling ----------------------------------------------------------------------------------

Pooling::Pooling(Context& /*context*/, bool max, Window window, Activation& x, Activation& y) : x_(x), y_(y) {
    EPOCHCAST_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&pooling_));
    EPOCHCAST_CUDNN_CHECK(cudnnSetPooling2dDescriptor(
        pooling_, max ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, CUDNN_NOT_PROPAGATE_NAN,
        window.kernel, window.kernel, window.padding, window.padding, window.stride, window.stride));
}

Pooling::~Pooling() { (void)cudnnDestroyPoolingDescriptor(pooling_); }

void Pooling::forward(Context& context) {
    EPOCHCAST_CUDNN_CHECK(cudnnPoolingForward(context.cudnn(), pooling_, &kOne, x_.descriptor->get(), x_.value, &kZero,
                                              y_.descriptor->get(), y_.value));
}

void Pooling::bind_backward(Context& context) { x_grad_ = GradientSink::bind(context, x_); }

void Pooling::backward_inputs(Context& context) {
    EPOCHCAST_CUDNN_CHECK(cudnnPoolingBackward(context.cudnn(), pooling_, &kOne, y_.descriptor->get(), y_.value,
                                               y_.descriptor->get(), y_.diff, x_.descriptor->get(), x_.value,
                                               &x_grad_.beta, x_.descriptor->get(), x_grad_.target));
}

// ---- add --------------------------------------------------------------------------------------

Add::Add(Context& /*context*/, Activation& branch, Activation& shortcut, Activation& y)
    : branch_(branch), shortcut_(shortcut), y_(y) {}

void Add::forward(Context& context) {
    add(branch_.value, shortcut_.value, y_.value, context.type(), y_.elements(), context.stream());
}

void Add::bind_backward(Context& /*context*/) {
    for (Activation* input : {&branch_, &shortcut_}) {
        if (input->diff == nullptr) {
            input->diff = y_.diff;  // shares y's gradient: nothing to copy
        } else {
            accumulate_into_.push_back(input->diff);
        }
    }
}

void Add::backward_inputs(Context& context) {
    for (void* target : accumulate_into_) accumulate(y_.diff, target, context.type(), y_.elements(), context.stream());
}

// ---- fully connected --------------------------------------------------------------------------
// Row-major N x C activations are column-major C x N matrices to cuBLAS, W (classes x C row-major)
// is column-major C x classes, logits (N x classes) column-major classes x N:
//   logits = W^T x        (m = classes, n = N, k = C)
//   dx     = W dlogits    (m = C, n = N, k = classes)
//   dW     = x dlogits^T  (m = C, n = classes, k = N)

FullyConnected::FullyConnected(Context& /*context*/, Activation& x, float* logits, const void* logits_grad,
                               WeightView weight, const float* bias, void* bias_working_gradient, int classes)
    : x_(x),
      logits_(logits),
      logits_grad_(logits_grad),
      weight_(weight),
      bias_(bias),
      bias_working_gradient_(bias_working_gradient),
      classes_(classes) {}

void FullyConnected::forward(Context& context) {
    const cudaDataType_t type = cublas_type(context.type());
    EPOCHCAST_CUBLAS_CHECK(cublasGemmEx(context.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, classes_, x_.n, x_.c, &kOne,
                                        weight_.working, type, x_.c, x_.value, type, x_.c, &kZero, logits_, CUDA_R_32F,
                                        classes_, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    add_bias(logits_, bias_, x_.n, classes_, context.stream());
}

void FullyConnected::bind_backward(Context& context) { x_grad_ = GradientSink::bind(context, x_); }

void FullyConnected::backward_parameters(Context& context) {
    const cudaDataType_t type = cublas_type(context.type());
    EPOCHCAST_CUBLAS_CHECK(cublasGemmEx(context.cublas(), CUBLAS_OP_N, CUBLAS_OP_T, x_.c, classes_, x_.n, &kOne,
                                        x_.value, type, x_.c, logits_grad_, type, classes_, &kZero,
                                        weight_.working_gradient, type, x_.c, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    bias_gradient(logits_grad_, bias_working_gradient_, context.type(), x_.n, classes_, context.stream());
}

void FullyConnected::backward_inputs(Context& context) {
    const cudaDataType_t type = cublas_type(context.type());
    EPOCHCAST_CUBLAS_CHECK(cublasGemmEx(context.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, x_.c, x_.n, classes_, &kOne,
                                        weight_.working, type, x_.c, logits_grad_, type, classes_, &x_grad_.beta,
                                        x_grad_.target, type, x_.c, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void FullyConnected::refresh_parameters(Context& context) {
    master_to_working(weight_.master, weight_.working, context.type(), weight_.o, weight_.i, 1, context.stream());
}

// ---- host <-> device, for tests and set-up ----------------------------------------------------

void upload(Context& context, float* device, const std::vector<float>& host) {
    EPOCHCAST_CUDA_CHECK(
        cudaMemcpyAsync(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, context.stream()));
    context.synchronize();
}

std::vector<float> download(Context& context, const float* device, std::size_t count) {
    std::vector<float> host(count);
    context.synchronize();
    EPOCHCAST_CUDA_CHECK(cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost));
    return host;
}

std::vector<float> download_working(Context& context, const void* device, std::size_t count) {
    DeviceBuffer values(count * sizeof(float));
    DeviceBuffer overflow(sizeof(int));
    EPOCHCAST_CUDA_CHECK(cudaMemsetAsync(overflow.data(), 0, sizeof(int), context.stream()));
    working_to_master(device, static_cast<float*>(values.data()), context.type(), 1, static_cast<int>(count), 1, 1.0f,
                      static_cast<int*>(overflow.data()), context.stream());
    return download(context, static_cast<const float*>(values.data()), count);
}

void write_nchw(Context& context, void* nhwc, const std::vector<float>& nchw, int n, int c, int h, int w) {
    DeviceBuffer staging(nchw.size() * sizeof(float));
    upload(context, static_cast<float*>(staging.data()), nchw);
    images_to_nhwc(static_cast<const float*>(staging.data()), nhwc, context.type(), n, c, h, w, context.stream());
    context.synchronize();
}

std::vector<float> read_nchw(Context& context, const void* nhwc, int n, int c, int h, int w) {
    const std::vector<float> stored = download_working(context, nhwc, static_cast<std::size_t>(n) * c * h * w);
    std::vector<float> plain(stored.size());
    for (int b = 0; b < n; ++b)
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x)
                for (int ch = 0; ch < c; ++ch)
                    plain[((std::size_t(b) * c + ch) * h + y) * w + x] =
                        stored[((std::size_t(b) * h + y) * w + x) * c + ch];
    return plain;
}

}  // namespace epochcast::cuda
