// Workload figures derived from the architecture table (see workload.hpp).
#include "model/workload.hpp"

#include <climits>
#include <cmath>
#include <string>

#include "model/catalog.hpp"
#include "model/errors.hpp"
#include "model/text_io.hpp"

namespace epochcast {

namespace {

/// Bytes of one fp32 scalar: master weights and SGD momentum are kept in fp32 at every precision.
constexpr double kFp32Bytes = 4;

/// Bytes of the half-precision (fp16/bf16) working copy of each weight under amp and bf16.
constexpr double kHalfBytes = 2;

/// Elements of a layer's output that the backward pass keeps (see make_workload).
bool output_kept_for_backward(LayerKind kind) {
    switch (kind) {
        case LayerKind::convolution:
        case LayerKind::batch_norm:
        case LayerKind::max_pool:
        case LayerKind::avg_pool:
        case LayerKind::add:
        case LayerKind::fully_connected:
            return true;
        case LayerKind::relu:
            return false;  // in place on its producer's output
    }
    return true;
}

}  // namespace

Workload make_workload(const Architecture& architecture) {
    Workload workload;
    workload.parameters = architecture.parameters();

    // FLOPs: one multiply-accumulate is 2 FLOP. MACs are counted over convolutions and the fully
    // connected layer only (Architecture::forward_macs).
    workload.forward_flops_per_image = 2.0 * static_cast<double>(architecture.forward_macs());
    // Backward computes two products per layer, each as large as the forward one: the gradient
    // with respect to the layer's input (data gradient) and with respect to its weights (weight
    // gradient). So backward ~ 2 x forward and a training step ~ 3 x forward.
    workload.training_flops_per_image = 3.0 * workload.forward_flops_per_image;

    // Activations kept for backward, per image, in elements:
    //   the input image (3 x S x S), every convolution's output, every BN's output, the max-pool
    //   output, every residual add's output, the avg-pool output and the fc output (the logits).
    //   ReLUs add nothing: they run in place on their producer's output (a BN's or an add's), and
    //   their backward needs only that tensor.
    // This is an upper-end count for frameworks that keep each layer's output (no recomputation,
    // no fused conv+BN+ReLU kernels).
    double activation_elements = 0;
    if (!architecture.layers.empty()) {
        activation_elements +=
            static_cast<double>(Shape{3, architecture.image_size, architecture.image_size}.elements());
    }
    // Memory traffic per image, in elements, for the roofline:
    //   forward reads each layer's inputs and writes its output once (a residual add reads both of
    //   its inputs); backward reads and writes roughly twice that (it reads the output gradient
    //   and the saved input, writes the input gradient, and for layers with weights does a second
    //   pass for the weight gradient). So each layer costs (input elements + output elements) x 3.
    //   Weight reads are not counted (small beside activations for ResNets at batch >= 32).
    double traffic_elements = 0;
    for (const Layer& layer : architecture.layers) {
        if (output_kept_for_backward(layer.kind)) {
            activation_elements += static_cast<double>(layer.output.elements());
        }
        const double input_elements =
            static_cast<double>(layer.input.elements()) * static_cast<double>(layer.inputs.size());
        traffic_elements += 3.0 * (input_elements + static_cast<double>(layer.output.elements()));
    }
    workload.activation_elements_per_image = activation_elements;
    workload.memory_traffic_elements_per_image = traffic_elements;
    return workload;
}

std::vector<GradientTensor> gradients_in_backward_order(const Architecture& architecture, Precision precision) {
    std::vector<GradientTensor> gradients;
    const double element_bytes = gradient_element_bytes(precision);
    for (int index = static_cast<int>(architecture.layers.size()) - 1; index >= 0; --index) {
        const Layer& layer = architecture.layers[static_cast<std::size_t>(index)];
        if (layer.parameters == 0) continue;
        gradients.push_back(
            GradientTensor{index, layer.parameters, static_cast<double>(layer.parameters) * element_bytes});
    }
    return gradients;
}

double gradient_bytes(const Workload& workload, Precision precision) {
    return static_cast<double>(workload.parameters) * gradient_element_bytes(precision);
}

std::vector<Bucket> fusion_buckets(const std::vector<GradientTensor>& gradients, double threshold_bytes) {
    if (!(threshold_bytes > 0) || !std::isfinite(threshold_bytes)) {
        throw InputError("fusion threshold must be a positive number of bytes, got " + std::to_string(threshold_bytes) +
                         " (Horovod's default is 64 MiB = 67108864)");
    }
    std::vector<Bucket> buckets;
    for (int index = 0; index < static_cast<int>(gradients.size()); ++index) {
        const double bytes = gradients[static_cast<std::size_t>(index)].bytes;
        if (buckets.empty() || buckets.back().bytes + bytes > threshold_bytes) {
            // Close the open bucket (if any) and start a new one with this tensor. A tensor larger
            // than the threshold lands here with an empty bucket of its own.
            buckets.push_back(Bucket{index, 1, bytes});
        } else {
            buckets.back().count += 1;
            buckets.back().bytes += bytes;
        }
    }
    return buckets;
}

double activation_bytes_per_image(const Workload& workload, Precision precision) {
    return workload.activation_elements_per_image * activation_element_bytes(precision);
}

MemoryEstimate training_memory(const Workload& workload, Precision precision, int batch_per_gpu) {
    if (batch_per_gpu < 1) {
        throw InputError("batch per GPU must be at least 1 image, got " + std::to_string(batch_per_gpu));
    }
    const double parameters = static_cast<double>(workload.parameters);
    MemoryEstimate memory;
    memory.weights_bytes = parameters * kFp32Bytes;
    if (family_of(precision) == PrecisionFamily::half) memory.weights_bytes += parameters * kHalfBytes;
    memory.gradients_bytes = parameters * gradient_element_bytes(precision);
    memory.optimizer_bytes = parameters * kFp32Bytes;
    memory.activations_bytes = batch_per_gpu * activation_bytes_per_image(workload, precision);
    memory.context_bytes = kCudaContextBytes;
    memory.slack_bytes = kAllocatorSlackFraction * memory.tensors_bytes();
    return memory;
}

int largest_batch_that_fits(const Workload& workload, Precision precision, double capacity_bytes) {
    // total(b) = (fixed + b x per_image) x (1 + slack) + context <= capacity
    const MemoryEstimate one = training_memory(workload, precision, 1);
    const double per_image = activation_bytes_per_image(workload, precision);
    const double fixed = one.tensors_bytes() - per_image;
    const double batch =
        std::floor(((capacity_bytes - kCudaContextBytes) / (1.0 + kAllocatorSlackFraction) - fixed) / per_image);
    if (!(batch > 0)) return 0;
    return batch >= static_cast<double>(INT_MAX) ? INT_MAX : static_cast<int>(batch);
}

MemoryEstimate training_memory_on(const Workload& work, const std::string& model, Precision precision,
                                  int batch_per_gpu, const GpuSpec& gpu, std::string& infeasible) {
    const MemoryEstimate memory = training_memory(work, precision, batch_per_gpu);
    const double capacity = gpu.memory_gib * kBytesPerGiB;
    if (memory.total_bytes() > capacity) {
        const int fits = largest_batch_that_fits(work, precision, capacity);
        infeasible = "batch " + std::to_string(batch_per_gpu) + " per GPU of " + model + " at " +
                     std::string(to_string(precision)) + " needs " + format_gib(memory.total_bytes()) +
                     " GiB with the CUDA context and the allocator's slack, more than the " + format_gib(capacity) +
                     " GiB of a " + gpu.name +
                     (fits > 0 ? " (the largest batch that fits is " + std::to_string(fits) + ")"
                               : " (not even a batch of 1 fits)");
    }
    return memory;
}

double checkpoint_bytes(const Workload& workload) { return workload.parameters * kCheckpointBytesPerParameter; }

const Workload& Workloads::get(const std::string& model, int image_size, int classes) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto key = std::make_tuple(model, image_size, classes);
    auto found = workloads_.find(key);
    if (found == workloads_.end()) {
        found = workloads_.emplace(key, make_workload(build_resnet(model, image_size, classes))).first;
    }
    return found->second;
}

}  // namespace epochcast
