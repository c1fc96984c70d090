// The CUDA backend of executor/network.hpp: a ResNet from model/'s architecture table on cuDNN 9
// (legacy API, see layers.hpp for why) and cuBLAS, in fp32 or fp16 mixed precision ("amp": fp16
// NHWC activations, working weights and gradients with tensor-op math; fp32 master weights,
// momentum, batch-norm parameters and statistics, logits and loss; dynamic loss scaling).
//
// The arenas of executor/network.hpp live on the GPU (device_arenas() is true), and so does the
// optimizer step. The working gradients (O x K x K x I for convolutions, in the arena's order) are
// what the NCCL exchange (exchange.hpp) all-reduces, in fp16 for amp.
//
// Data: an image folder's batches are decoded by the BatchLoader's threads straight into pinned
// memory the network hands out (batch_memory(): the loader's depth + 1 buffers, 3 in the trainer)
// and copied to the GPU from there; any other caller's batch goes through one of two pinned
// staging buffers.
// With synthetic data the trainer asks for generate_synthetic_batches instead, and
// train_step_generated makes the batch on the GPU (synthetic.hpp): no images cross from the host.
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "executor/cuda/kernels.hpp"
#include "executor/network.hpp"

namespace epochcast {

namespace cuda {

/// What the NCCL exchange needs of the CUDA network beyond Network.
class DeviceGradients {
public:
    virtual ~DeviceGradients() = default;
    /// Working gradients, parameter_elements() of working_type(), device memory, arena order.
    virtual void* working_gradients() = 0;
    virtual DataType working_type() const = 0;
    /// The stream the network computes on.
    virtual cudaStream_t compute_stream() const = 0;
    /// From now on train_step leaves the working gradients unconverted, and convert_gradients()
    /// (called once the all-reduce of the working gradients is enqueued) writes gradients().
    virtual void defer_gradient_conversion() = 0;
    /// Enqueues: gradients() = working gradients / loss scale, plain layouts; notes an overflow.
    virtual void convert_gradients() = 0;
};

}  // namespace cuda

/// Builds the network on GPU spec.device, allocating every buffer it will use. Weights depend on
/// spec.seed only, and are the CPU backend's. Throws InputError for batch < 1, bf16 (a CPU
/// precision here) or a GPU that is not visible; RunError when a CUDA library call fails.
std::unique_ptr<Network> make_cuda_network(const NetworkSpec& spec);

}  // namespace epochcast
