// The layer conformance suite's view of a backend (test_layer_conformance.cpp): each backend's
// layers (executor/cpu/layers.hpp, executor/cuda/layers.hpp) built on one context per call, fed
// the suite's inputs, run forward and backward, and their outputs read back as plain NCHW fp32, so
// that one test compares every backend with the fp64 references (tests/executor/layer_reference.hpp)
// at that backend's tolerances. The adapters: cpu_layer_backend.cpp and cuda_layer_backend.cpp.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tests/executor/backends.hpp"
#include "tests/executor/layer_reference.hpp"

namespace epochcast::testing {

using reference::Tensor;

/// The layers' number format and activation layout a conformance instance runs.
enum class LayerType { fp32, bf16, fp16 };
enum class LayerLayout { nhwc, blocked, native };  ///< native: the backend's only one (CUDA)

struct LayerVariant {
    Backend backend;
    LayerType type;
    LayerLayout layout;
};

/// "cpu_bf16_blocked", "cuda_fp16": the variant's name in test names.
inline std::string name_of(const LayerVariant& v) {
    std::string name = backend_name(v.backend);
    name += v.type == LayerType::fp32 ? "_fp32" : v.type == LayerType::bf16 ? "_bf16" : "_fp16";
    if (v.layout != LayerLayout::native) name += v.layout == LayerLayout::nhwc ? "_nhwc" : "_blocked";
    return name;
}
/// How GoogleTest (and so ctest's test list) shows the parameter: by name, not its bytes.
inline void PrintTo(const LayerVariant& v, std::ostream* os) { *os << name_of(v); }

/// Kernel side, stride and padding, in pixels (the references take any type with these fields).
struct LayerWindow {
    int kernel = 1, stride = 1, padding = 0;
};

struct ConvolutionCase {
    LayerWindow window;
    int in_channels, out_channels, side;
};

/// A convolution's inputs: x, the weights (O x I x K x K), dy, and, when set, what another
/// reader already wrote into dx (the layer must add to it).
struct ConvolutionInputs {
    Tensor x, dy;
    std::vector<float> w;
    std::optional<Tensor> previous_dx;
};

/// The inputs every backend's convolution tests take for case `c` (batch 2): x and dy standard
/// normal, weights at a Kaiming-like scale that keeps y of order 1, and with `accumulate` a dx
/// already written by another reader (a block input read twice).
inline ConvolutionInputs convolution_inputs(const ConvolutionCase& c, bool accumulate) {
    const int batch = 2, k = c.window.kernel;
    const int out_side = (c.side + 2 * c.window.padding - k) / c.window.stride + 1;
    ConvolutionInputs in{reference::random_tensor(batch, c.in_channels, c.side, c.side, 1),
                         reference::random_tensor(batch, c.out_channels, out_side, out_side, 2),
                         reference::random_vector(std::size_t(c.out_channels) * c.in_channels * k * k, 3,
                                                  1.0 / std::sqrt(c.in_channels * k * k)),
                         std::nullopt};
    if (accumulate) in.previous_dx = reference::random_tensor(batch, c.in_channels, c.side, c.side, 4);
    return in;
}

struct ConvolutionOutputs {
    std::vector<float> y, dx, dw;
    std::optional<int> overflow_flag;  ///< where the backend flags non-finite gradients (CUDA): 0 expected
};

/// Batch-norm inputs (training mode): x of mean 3 and deviation 2, dy, gamma then beta.
struct BatchNormInputs {
    static constexpr int batch = 2, channels = 32, side = 6;
    Tensor x, dy, shortcut;
    std::vector<float> gamma_beta = reference::random_vector(2 * channels, 7);
    BatchNormInputs()
        : x(reference::random_tensor(batch, channels, side, side, 5)),
          dy(reference::random_tensor(batch, channels, side, side, 6)),
          shortcut(reference::random_tensor(batch, channels, side, side, 14)) {
        for (double& value : x.data) value = static_cast<float>(3.0 + 2.0 * value);  // mean 3, deviation 2
    }
};

struct BatchNormOutputs {
    std::vector<float> y, dx, dgamma_beta, running_mean, running_var;
    std::optional<std::vector<float>> working_dgamma_beta;  ///< the gradient cast to a working arena (CUDA)
};

/// y and dx of a one-input layer.
struct LayerOutputs {
    std::vector<float> y, dx;
};

struct AddOutputs {
    std::vector<float> y, branch_dx, shortcut_dx;
};

struct FullyConnectedOutputs {
    std::vector<float> logits, dx, dparams;
};

struct SoftmaxOutputs {
    double mean_loss = 0;
    std::vector<float> gradient;
    bool refused = false;  ///< a label outside [0, classes) was refused (thrown or flagged)
};

class LayerBackend {
public:
    virtual ~LayerBackend() = default;
    /// Why this variant cannot run here (on top of the backend's skip_reason), or "".
    virtual std::string skip_reason() const { return ""; }
    /// Tolerances of relative_error for sums of products and for element-wise layers, and for the
    /// softmax cross-entropy's gradient (its loss: 1e-6 relative everywhere).
    virtual double sum_tolerance() const = 0;
    virtual double elementwise_tolerance() const = 0;
    virtual double softmax_tolerance() const = 0;
    /// The batch norm's epsilon, which the reference takes too.
    virtual double batch_norm_epsilon() const = 0;
    /// `t` as the layer sees it, for inputs whose rounding could flip a ReLU's gate (bf16 on the
    /// CPU); unchanged by default.
    virtual Tensor as_seen(Tensor t) const { return t; }

    virtual ConvolutionOutputs convolution(const ConvolutionCase& c, const ConvolutionInputs& in) = 0;
    virtual BatchNormOutputs batch_norm(const BatchNormInputs& in) = 0;
    /// In place, as the network runs it: y shares x's value, with its own gradient.
    virtual LayerOutputs relu(const Tensor& x, const Tensor& dy) = 0;
    virtual LayerOutputs max_pool(const Tensor& x, LayerWindow window, const Tensor& dy) = 0;
    virtual LayerOutputs global_average_pool(const Tensor& x, const Tensor& dy) = 0;
    /// y = a + b; `in.earlier` is already in the shortcut's gradient.
    virtual AddOutputs residual_add(const reference::AddInputs& in) = 0;
    virtual FullyConnectedOutputs fully_connected(const reference::FullyConnectedInputs& in) = 0;
    /// The mean loss and dlogits (scaled by 1 / batch) of `logits` (batch x classes).
    virtual SoftmaxOutputs softmax_cross_entropy(const std::vector<float>& logits,
                                                 const std::vector<std::int32_t>& labels, int classes) = 0;
};

std::unique_ptr<LayerBackend> make_cpu_layer_backend(LayerType type, LayerLayout layout);
#ifdef EPOCHCAST_WITH_CUDA
std::unique_ptr<LayerBackend> make_cuda_layer_backend(LayerType type);
#endif

}  // namespace epochcast::testing
