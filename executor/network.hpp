// The interface every executor backend implements (executor/cpu/ on oneDNN, executor/cuda/ on
// cuDNN + cuBLAS): one ResNet built from model/'s architecture table for a fixed per-rank batch,
// that runs one forward and backward pass and exposes its learnable tensors. The training loop
// (executor/trainer.hpp), the optimizer, the all-reduce, the parameter servers and checkpoints
// sit above this interface and never see a backend's layouts or precisions.
//
// Learnable tensors live in two contiguous fp32 arenas, values and gradients, laid out in the
// order the backward pass finishes them (the order of model/'s gradients_in_backward_order: the
// fc layer first, conv1 last), so a fusion bucket of model/workload.hpp is one contiguous range.
// Inside one layer: weight then bias (batch norm: gamma then beta). Plain layouts: convolution
// weights out x in x kh x kw, fc weight out x in, vectors of channels.
//
// A third arena of the same layout holds the optimizer's momentum, so that the whole SGD step
// runs where the weights are: on the host for the CPU backend, on the GPU for the CUDA backend.
// A backend whose arenas live in device memory (device_arenas()) is read and written by host
// code only through read() / write(), one contiguous range at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "executor/loss_scaler.hpp"
#include "model/resnet.hpp"
#include "model/types.hpp"

namespace epochcast {

class HostMemory;  // executor/loader.hpp

/// What a backend builds.
struct NetworkSpec {
    Architecture architecture;              ///< from build_resnet(model, image_size, classes)
    int batch = 0;                          ///< images per step on this rank, >= 1
    Precision precision = Precision::fp32;  ///< fp32 or bf16 (CPU backend); fp32 or amp (CUDA backend)
    int threads = 1;                        ///< compute threads of this rank (CPU backend), >= 1
    std::uint64_t seed = 1;                 ///< weight initialisation seed; every rank uses the same one
    int device = 0;  ///< GPU index on this node (CUDA backend): the worker's rank among the node's workers
    double initial_loss_scale = LossScaler::kInitialScale;  ///< amp on the CUDA backend: the loss scale's start
};

/// One learnable tensor inside the arenas.
struct ParameterTensor {
    std::string name;  ///< torchvision's: "conv1.weight", "layer1.0.bn1.weight" (gamma), "layer1.0.bn1.bias" (beta),
                       ///< "fc.weight", "fc.bias"
    int layer = 0;     ///< index into Architecture::layers
    std::int64_t offset = 0;    ///< first element in the arenas
    std::int64_t elements = 0;  ///< scalars
    bool weight_decay = true;   ///< false for batch-norm parameters and biases (seed 000)
};

/// Non-learnable state a checkpoint keeps (batch-norm running mean and variance), plain fp32.
struct StateTensor {
    std::string name;  ///< "layer1.0.bn1.running_mean", "layer1.0.bn1.running_var"
    std::int64_t elements = 0;
    float* value = nullptr;  ///< host memory owned by the network
};

/// The three arenas of learnable tensors.
enum class Arena { values, gradients, momentum };

class Network {
public:
    virtual ~Network() = default;

    /// Learnable tensors in arena order (backward order); offsets are increasing and contiguous.
    virtual const std::vector<ParameterTensor>& parameters() const = 0;
    /// Total scalars in each arena (the architecture's parameters()).
    virtual std::int64_t parameter_elements() const = 0;
    /// fp32 master weights, parameter_elements() of them, in this backend's memory (host for the
    /// CPU backend). The optimizer and checkpoints write here, then call parameters_updated().
    virtual float* values() = 0;
    /// fp32 gradient of this rank's mean loss over its batch, same layout as values().
    virtual float* gradients() = 0;
    /// The optimizer's momentum, same layout as values(), zero at construction.
    virtual float* momentum() = 0;
    /// Batch-norm running statistics, in forward order. For a device backend the values are host
    /// copies: download_state() refreshes them, upload_state() sends changes back.
    virtual const std::vector<StateTensor>& state() const = 0;
    virtual void download_state() {}
    virtual void upload_state() {}

    /// True when values(), gradients() and momentum() point into device memory, which host code
    /// must reach through read() and write() (the CUDA backend).
    virtual bool device_arenas() const { return false; }
    /// Copies elements [offset, offset + count) of an arena to `host` (waiting for the work that
    /// writes them) or from `host`.
    virtual void read(Arena arena, std::int64_t offset, std::int64_t count, float* host);
    virtual void write(Arena arena, std::int64_t offset, std::int64_t count, const float* host);

    /// One SGD step with Nesterov momentum (executor/optimizer.hpp, decay mask from parameters())
    /// on values() from gradients() (averaged over the workers) and momentum(), at rate `lr`.
    /// Returns false when the backend skipped the step: with fp16 loss scaling (LossScaler), an
    /// overflowed gradient leaves weights and momentum alone. A step taken also refreshes the
    /// working copies (as parameters_updated() does; the CPU backend layer by layer, while each
    /// layer's weights are in the cache).
    virtual bool optimizer_step(double lr) = 0;
    /// Steps skipped so far by optimizer_step.
    virtual std::int64_t skipped_steps() const { return 0; }

    /// One forward and backward pass on this rank's batch.
    ///   images: batch x 3 x image_size x image_size, fp32, NCHW, already normalised
    ///   labels: batch class indices in [0, classes)
    /// Overwrites gradients() with d(mean cross-entropy)/d(weights). `layer_ready(layer)` is called
    /// as soon as all gradients of a layer with parameters are final, in backward order, so the
    /// caller can start that bucket's all-reduce while the rest of the backward pass runs.
    /// Returns the mean cross-entropy loss of the batch (fp32 softmax, fp64 sum).
    virtual double train_step(const float* images, const std::int32_t* labels,
                              const std::function<void(int layer)>& layer_ready) = 0;

    /// Asks the backend to make the batches of make_synthetic_data(classes, image_size, any epoch
    /// length, seed) (executor/data.hpp) itself, where it computes, for train_step_generated:
    /// then the caller decodes and hands over no images. Returns false when the backend cannot (the
    /// default, and the CPU backend's answer: its host batches cost it no copy), and the caller
    /// feeds train_step from a BatchLoader. Throws InputError when classes or image_size are not
    /// the network's (its architecture's classes and image_size).
    virtual bool generate_synthetic_batches(int /*classes*/, int /*image_size*/, std::uint64_t /*seed*/) {
        return false;
    }

    /// Where a BatchLoader feeding train_step should decode its batches: page-locked memory that
    /// the backend copies to its device without staging (the CUDA backend's), or null for plain
    /// memory (the default: the CPU backend reads the images where they are). Owned by the network.
    virtual HostMemory* batch_memory() { return nullptr; }

    /// train_step on the backend's own synthetic batch: the images and labels of global positions
    /// [position, position + batch), as make_synthetic_data's fill(position, batch) gives them (to
    /// float rounding of the pixels), position from data.hpp's batch_position. Needs
    /// generate_synthetic_batches to have returned true; otherwise throws RunError (the default).
    virtual double train_step_generated(std::int64_t position, const std::function<void(int layer)>& layer_ready);

    /// Asks train_step to write every gradient rounded to bf16 (nearest even) into `arena`
    /// (parameter_elements() values, the gradients() layout) instead of into gradients(), which
    /// then goes stale; a layer's part is written before its layer_ready call. It spares the
    /// mixed-precision all-reduce a pass over the fp32 gradients. Returns false when the backend
    /// cannot (the default), and the caller rounds gradients() itself.
    virtual bool write_gradients_as_bf16(std::uint16_t* /*arena*/) { return false; }

    /// The values() arena was changed (optimizer step, checkpoint load, all-reduce of weights):
    /// refresh whatever working copies the backend keeps (bf16 weights, blocked layouts).
    virtual void parameters_updated() = 0;
    /// Only the elements [first, first + count) of values() changed: refresh the working copies
    /// of the tensors they overlap (by default, all of them).
    virtual void parameters_updated_in(std::int64_t /*first*/, std::int64_t /*count*/) { parameters_updated(); }

    /// Human-readable name of the implementations chosen ("oneDNN 2.6 brg:avx512_core_bf16", ...).
    virtual std::string implementation() const = 0;
};

}  // namespace epochcast
