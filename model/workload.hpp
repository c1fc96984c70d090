// Workload figures derived from the architecture table: FLOPs per training image, gradient bytes,
// per-layer gradients in the order backward produces them, Horovod-style fusion buckets, and the
// memory one GPU needs for a batch. Derivations in docs/model.md, section "Workload".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/resnet.hpp"
#include "model/types.hpp"

namespace epochcast {

/// Horovod's default fusion threshold, HOROVOD_FUSION_THRESHOLD = 64 MiB (Horovod docs, "Tensor Fusion").
inline constexpr double kDefaultFusionThresholdBytes = 64.0 * 1024 * 1024;

/// Memory the framework holds on a GPU beyond the model's own tensors, in bytes: the CUDA context,
/// cuDNN's convolution workspace and the caching allocator's slack. ASSUMPTION, not a measured
/// figure: 1.5 GiB, chosen so that ResNet-50 at 224 px, batch 256 per GPU under amp fits a 16 GiB
/// V100 as seed 000 trains it (15.19 GiB in all), while the same batch in fp32 does not
/// (28.59 GiB). Refine when traces report peak memory.
inline constexpr double kFrameworkReserveBytes = 1.5 * 1024 * 1024 * 1024;

/// Numbers the cost model needs per (model, image size, classes); plain values, no allocation.
struct Workload {
    std::int64_t parameters = 0;          ///< learnable scalars (25,557,032 for ResNet-50 at 1000 classes)
    double forward_flops_per_image = 0;   ///< 2 x forward multiply-accumulates, in FLOP
    double training_flops_per_image = 0;  ///< forward + backward (data and weights) = 3 x forward, in FLOP
    double activation_elements_per_image = 0;  ///< elements kept for the backward pass, per image (see activation_bytes_per_image)
    double memory_traffic_elements_per_image = 0;  ///< elements read and written by one training step per image
                                                   ///< (forward + backward, every layer's input and output), for the roofline
};

/// Figures of one architecture.
Workload make_workload(const Architecture& architecture);

/// One learnable tensor's gradient, in the order the backward pass finishes them.
struct GradientTensor {
    int layer = 0;              ///< index into Architecture::layers
    std::int64_t elements = 0;  ///< scalars in the gradient (the layer's parameters)
    double bytes = 0;           ///< elements x gradient_element_bytes(precision)
};

/// Gradients of every layer with parameters, last layer (fc) first, conv1 last.
std::vector<GradientTensor> gradients_in_backward_order(const Architecture& architecture, Precision precision);

/// Total gradient bytes all-reduced or pushed per iteration: parameters x bytes per element.
double gradient_bytes(const Workload& workload, Precision precision);

/// A fusion buffer: consecutive gradients in backward order, sent as one collective.
struct Bucket {
    int first = 0;   ///< index into the backward-order gradient list of the bucket's first tensor
    int count = 0;   ///< number of tensors in the bucket
    double bytes = 0;  ///< sum of their bytes
};

/// Greedy fusion in backward order: a bucket is closed when adding the next tensor would pass
/// threshold_bytes (a tensor larger than the threshold gets a bucket of its own). Throws
/// InputError when threshold_bytes is not positive.
std::vector<Bucket> fusion_buckets(const std::vector<GradientTensor>& gradients,
                                   double threshold_bytes = kDefaultFusionThresholdBytes);

/// Bytes of activations one image keeps for the backward pass at a precision. See docs/model.md
/// for what is counted (each convolution's and BN's output, ReLU in place, pooling and add outputs).
double activation_bytes_per_image(const Workload& workload, Precision precision);

/// Memory one GPU needs to train a batch, in bytes, by part.
struct MemoryEstimate {
    double weights_bytes = 0;      ///< fp32 master weights, plus an fp16/bf16 working copy under amp/bf16
    double gradients_bytes = 0;    ///< one gradient per parameter at the gradient precision
    double optimizer_bytes = 0;    ///< SGD momentum, fp32
    double activations_bytes = 0;  ///< batch x activation_bytes_per_image
    double workspace_bytes = 0;    ///< framework and cuDNN reserve (named constant, docs/model.md)
    double total_bytes() const {
        return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes + workspace_bytes;
    }
};

MemoryEstimate training_memory(const Workload& workload, Precision precision, int batch_per_gpu);

}  // namespace epochcast
