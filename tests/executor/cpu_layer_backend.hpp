// The CPU backend's layers (executor/cpu/layers.hpp) behind the conformance suite's LayerBackend
// (tests/executor/layer_backends.hpp), with what only the CPU has: which of the layer's work our
// own kernels (executor/cpu/kernels.hpp) did, and the fused batch norms.
//
// Tolerances (relative_error: max |actual - reference| / rms(reference) over a tensor):
//   fp32: 1e-5 for sums of up to ~600 products (fp32 rounding ~6e-8 per operation, growing
//         with the square root of the terms); 1e-6 for element-wise layers.
//   bf16: inputs and weights rounded to 8 significant bits (relative error up to 2^-9 = 0.2%
//         each), outputs rounded again. Since the measure divides the largest error by the rms,
//         an element of 4 rms rounded twice already gives 1.6e-2: 2e-2 for element-wise layers
//         (measured up to 1.1e-2), 4e-2 for sums of products (measured up to 2.8e-2, for the
//         backward-data of the 1x1 stride-2 convolution whose dx is zero at 3/4 of the pixels,
//         which lowers the rms; max pooling's dx measured 3.4e-2).
//   The softmax cross-entropy is fp32 whatever the layers' type: 1e-6 (fp32 exp, fp64 sums).
#pragma once

#include <cstddef>
#include <string>

#include "executor/cpu/layers.hpp"
#include "tests/executor/layer_backends.hpp"

namespace epochcast::testing {

/// Which of a layer's work our own kernels did.
struct OwnKernels {
    bool weight_gradient = false;                ///< the 1x1 or 3x3 weight gradient
    std::size_t working_copies = 0;              ///< bf16 working copies refreshed by Bf16WorkingCopies
    std::string implementation;                  ///< oneDNN's forward implementation
    bool relaid = false;                         ///< the primitives computed in other layouts than the activations'
    std::string weight_gradient_implementation;  ///< oneDNN's weight-gradient implementation, "" for ours
};

class CpuLayerBackend final : public LayerBackend {
public:
    CpuLayerBackend(cpu::DataType type, cpu::Layout layout) : type_(type), layout_(layout) {}

    std::string skip_reason() const override;
    double sum_tolerance() const override { return bf16() ? 4e-2 : 1e-5; }
    double elementwise_tolerance() const override { return bf16() ? 2e-2 : 1e-6; }
    double softmax_tolerance() const override { return 1e-6; }
    double batch_norm_epsilon() const override { return cpu::BatchNorm::kEpsilon; }
    /// In bf16 the inputs rounded to bf16, as the layer sees them: a ReLU's gate must then agree
    /// with the reference's everywhere (an element near 0 whose gate flips moves dx by a whole dy).
    Tensor as_seen(Tensor t) const override;

    ConvolutionOutputs convolution(const ConvolutionCase& c, const ConvolutionInputs& in) override;
    BatchNormOutputs batch_norm(const BatchNormInputs& in) override {
        return batch_norm(in, cpu::BatchNorm::Then::nothing);
    }
    /// The batch norm followed by `then` (nothing or relu: add_relu needs ResidualRelu). Between
    /// backward_parameters and backward_inputs gamma and beta are negated in the arena, as an
    /// overlapped exchange may update them: dx must still come from the values the forward pass used.
    BatchNormOutputs batch_norm(const BatchNormInputs& in, cpu::BatchNorm::Then then);
    LayerOutputs relu(const Tensor& x, const Tensor& dy) override;
    LayerOutputs max_pool(const Tensor& x, LayerWindow window, const Tensor& dy) override;
    LayerOutputs global_average_pool(const Tensor& x, const Tensor& dy) override;
    AddOutputs residual_add(const reference::AddInputs& in) override;
    FullyConnectedOutputs fully_connected(const reference::FullyConnectedInputs& in) override;
    SoftmaxOutputs softmax_cross_entropy(const std::vector<float>& logits, const std::vector<std::int32_t>& labels,
                                         int classes) override;

    cpu::DataType type() const { return type_; }
    cpu::Layout layout() const { return layout_; }
    bool bf16() const { return type_ == cpu::DataType::bf16; }
    /// What our own kernels did in the last convolution() and batch_norm().
    OwnKernels last_convolution_kernels() const { return last_convolution_; }
    bool last_batch_norm_on_own_kernels() const { return last_batch_norm_own_; }

private:
    LayerOutputs run_one_input(cpu::Context& context, cpu::LayerOp& layer, cpu::Activation& xa, cpu::Activation& ya,
                               const Tensor& x, const Tensor& dy);
    cpu::Activation activation(const cpu::Context& context, const Shape& shape, int batch) const;

    cpu::DataType type_;
    cpu::Layout layout_;
    OwnKernels last_convolution_;
    bool last_batch_norm_own_ = false;
};

}  // namespace epochcast::testing
