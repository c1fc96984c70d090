// Workload figures derived from the architecture table: FLOPs per training image, gradient bytes,
// per-layer gradients in the order backward produces them, Horovod-style fusion buckets, and the
// memory one GPU needs for a batch. Derivations in docs/model.md, section "Workload".
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "model/resnet.hpp"
#include "model/types.hpp"

namespace epochcast {

/// Horovod's default fusion threshold, HOROVOD_FUSION_THRESHOLD = 64 MiB (Horovod docs, "Tensor Fusion").
inline constexpr double kDefaultFusionThresholdBytes = 64.0 * 1024 * 1024;

/// The headroom a GPU keeps beside the training's own tensors (docs/model.md, "Workload", memory):
/// the CUDA context, and the caching allocator's slack as a fraction of the tensors. cuDNN's
/// convolution workspace has no reserve of its own: frameworks pick the algorithms whose workspace
/// fits in what is free (PyTorch's cudnn.benchmark and TensorFlow's autotuner skip the others), so
/// a full GPU costs some speed, not the run.
///
/// The CUDA context of a training process: 781 MiB, what nvidia-smi shows for a PyTorch process that
/// has created its context and loaded the CUDA, cuBLAS and cuDNN kernels before its first tensor
/// (pytorch/pytorch issue #34323). CUDA 11.7's lazy loading makes it smaller; the published runs
/// predate it or do not say.
inline constexpr double kCudaContextBytes = 781.0 * 1024 * 1024;
/// The caching allocator's slack: memory it holds but cannot hand out, as a fraction of the
/// tensors. It rounds every large block up to a multiple of 2 MiB (kRoundLarge in PyTorch's
/// c10/cuda/CUDACachingAllocator.cpp) and splits cached blocks; with the same shapes every
/// iteration it settles after the first. 2%: ResNet-50's 126 kept activation tensors lose at most
/// 2 MiB each to rounding, 252 MiB, 1.8% of the seeds' batch 256 at amp. It is also about the most
/// that keeps every published run feasible: Lambda's ResNet-50 at batch 3328 under amp on a 179 GiB
/// B200 (174.48 GiB of tensors by this upper-end count) trained, which allows at most 2.15%.
inline constexpr double kAllocatorSlackFraction = 0.02;

/// Numbers the cost model needs per (model, image size, classes); plain values, no allocation.
struct Workload {
    std::int64_t parameters = 0;          ///< learnable scalars (25,557,032 for ResNet-50 at 1000 classes)
    double forward_flops_per_image = 0;   ///< 2 x forward multiply-accumulates, in FLOP
    double training_flops_per_image = 0;  ///< forward + backward (data and weights) = 3 x forward, in FLOP
    double activation_elements_per_image =
        0;  ///< elements kept for the backward pass, per image (see activation_bytes_per_image)
    double memory_traffic_elements_per_image =
        0;  ///< elements read and written by one training step per image
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
    int first = 0;     ///< index into the backward-order gradient list of the bucket's first tensor
    int count = 0;     ///< number of tensors in the bucket
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
    double context_bytes = 0;      ///< the CUDA context, kCudaContextBytes
    double slack_bytes = 0;        ///< the allocator's slack, kAllocatorSlackFraction of the tensors
    /// The training's own tensors: weights, gradients, optimizer state and activations.
    double tensors_bytes() const { return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes; }
    /// What the GPU must hold: the tensors and the headroom (context and slack).
    double total_bytes() const { return tensors_bytes() + context_bytes + slack_bytes; }
};

/// The memory of a batch of `batch_per_gpu` images. Throws InputError for a batch below 1.
MemoryEstimate training_memory(const Workload& workload, Precision precision, int batch_per_gpu);

/// The largest batch whose training_memory fits `capacity_bytes` (memory grows linearly with the
/// batch, so it is a division): 0 when not even one image fits, at most INT_MAX.
int largest_batch_that_fits(const Workload& workload, Precision precision, double capacity_bytes);

struct GpuSpec;

/// One GPU's training memory for the batch (eq. M1). Where it exceeds the GPU's memory,
/// `infeasible` becomes why, naming the model, the GiB both ways and the largest batch that fits
/// (untouched where it fits): CostModel::resolve() throws it as an InfeasibleError, and
/// resolve_feasible() returns it, so that a sweep's infeasible row costs no exception.
MemoryEstimate training_memory_on(const Workload& work, const std::string& model, Precision precision,
                                  int batch_per_gpu, const GpuSpec& gpu, std::string& infeasible);

/// A checkpoint holds the fp32 weights and the fp32 momentum: 8 bytes per parameter.
inline constexpr double kCheckpointBytesPerParameter = 8.0;
/// One checkpoint of the workload's model, in bytes.
double checkpoint_bytes(const Workload& workload);

/// The workloads a model asks for, each built once per (model, image size, classes) and kept where
/// it is while the cache lives (the compute-curve room keeps its answers by their addresses). Safe
/// to share between threads and between the CostModels of one catalog.
class Workloads {
public:
    /// The architecture's figures; InputError for an unknown model or a size it cannot take.
    const Workload& get(const std::string& model, int image_size, int classes);

private:
    std::mutex mutex_;
    std::map<std::tuple<std::string, int, int>, Workload> workloads_;
};

}  // namespace epochcast
