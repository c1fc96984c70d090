// The CUDA network (see network.hpp): one LayerOp per row of model/'s architecture table, run in
// table order forward and in reverse order backward on one stream, as the CPU network is.
//
// Activations: one per table row (N x C x H x W, NHWC, working type), except that a ReLU works in
// place on its input's storage. Gradients of activations are allocated by the first layer in
// backward order that writes them; later writers add (GradientSink, cuDNN's beta = 1).
#include "executor/cuda/network.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "executor/arena.hpp"
#include "executor/cuda/check.hpp"
#include "executor/cuda/layers.hpp"
#include "executor/cuda/synthetic.hpp"
#include "executor/loader.hpp"
#include "executor/loss_scaler.hpp"
#include "executor/optimizer.hpp"
#include "model/errors.hpp"

namespace epochcast {

namespace {

using cuda::Activation;
using cuda::DataType;

DataType check_spec(const NetworkSpec& spec) {
    if (spec.batch < 1)
        throw InputError("batch " + std::to_string(spec.batch) + " is invalid; use at least 1 image per rank");
    if (spec.precision == Precision::bf16) {
        throw InputError("--precision bf16 is the CPU backend's; the CUDA backend runs fp32 or fp16 (amp)");
    }
    return spec.precision == Precision::amp ? DataType::fp16 : DataType::fp32;
}

/// Page-locked host memory (the staging buffers of uploads and read-backs).
class PinnedBuffer {
public:
    explicit PinnedBuffer(std::size_t bytes) { EPOCHCAST_CUDA_CHECK(cudaMallocHost(&data_, bytes)); }
    ~PinnedBuffer() { (void)cudaFreeHost(data_); }
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    template <typename T>
    T* as() const {
        return static_cast<T*>(data_);
    }

private:
    void* data_ = nullptr;
};

/// Page-locked host memory for a BatchLoader's batches (Network::batch_memory): the decode
/// threads write the images where the upload copies them from, with no staging copy between.
/// It remembers what it gave out, so that an upload can tell such a batch from other memory.
class PinnedBatchMemory final : public HostMemory {
public:
    void* allocate(std::size_t bytes) override {
        void* data = nullptr;
        EPOCHCAST_CUDA_CHECK(cudaMallocHost(&data, bytes));
        std::lock_guard lock(mutex_);
        given_[static_cast<const std::byte*>(data)] = bytes;
        return data;
    }

    void release(void* data) noexcept override {
        {
            std::lock_guard lock(mutex_);
            given_.erase(static_cast<const std::byte*>(data));
        }
        (void)cudaFreeHost(data);
    }

    /// True when [data, data + bytes) lies inside one allocation.
    bool holds(const void* data, std::size_t bytes) const {
        const auto* first = static_cast<const std::byte*>(data);
        std::lock_guard lock(mutex_);
        auto after = given_.upper_bound(first);
        if (after == given_.begin()) return false;
        const auto& [begin, size] = *std::prev(after);
        return std::less_equal<const std::byte*>()(first + bytes, begin + size);
    }

private:
    mutable std::mutex mutex_;
    std::map<const std::byte*, std::size_t> given_;  ///< allocation -> bytes
};

/// EPOCHCAST_CUDA_PROFILE=1: where a step's GPU time goes. CUDA events recorded on the stream
/// between the calls of a step (the input, each layer's forward, the loss, each layer's backward
/// calls, the optimizer); the time from one mark to the next is the earlier mark's, summed over
/// every step after the first (which holds one-time set-up) and printed, per kind of call and for
/// the slowest calls, when the network is destroyed. The marks wait for each step's end, so a
/// profiled run overlaps less than a plain one: its figures are for reading, not for reporting.
class StepProfile {
public:
    StepProfile() {
        const char* value = std::getenv("EPOCHCAST_CUDA_PROFILE");
        enabled_ = value != nullptr && std::string(value) == "1";
    }
    ~StepProfile() {
        for (Mark& mark : marks_) (void)cudaEventDestroy(mark.event);
    }
    StepProfile(const StepProfile&) = delete;
    StepProfile& operator=(const StepProfile&) = delete;

    bool enabled() const { return enabled_; }

    /// From here on, GPU time belongs to `label` (grouped under `group` in the summary).
    void mark(cudaStream_t stream, std::string_view label, std::string_view group) {
        if (!enabled_) return;
        if (next_ == marks_.size()) {
            Mark mark{std::string(label), std::string(group), nullptr, 0.0};
            EPOCHCAST_CUDA_CHECK(cudaEventCreate(&mark.event));
            marks_.push_back(mark);
        }
        EPOCHCAST_CUDA_CHECK(cudaEventRecord(marks_[next_].event, stream));
        ++next_;
    }

    /// Called as the next step begins (and at the end): adds the finished step's intervals.
    void end_step() {
        if (!enabled_ || next_ == 0) return;
        EPOCHCAST_CUDA_CHECK(cudaEventSynchronize(marks_[next_ - 1].event));
        if (steps_seen_++ > 0) {
            for (std::size_t k = 0; k + 1 < next_; ++k) {
                float ms = 0;
                EPOCHCAST_CUDA_CHECK(cudaEventElapsedTime(&ms, marks_[k].event, marks_[k + 1].event));
                marks_[k].total_ms += ms;
            }
            ++steps_counted_;
        }
        next_ = 0;
    }

    void report(std::ostream& out) {
        end_step();
        if (!enabled_ || steps_counted_ == 0) return;
        const double steps = static_cast<double>(steps_counted_);
        double total = 0;
        std::map<std::string, double> by_group;
        for (const Mark& mark : marks_) {
            total += mark.total_ms;
            by_group[mark.group] += mark.total_ms;
        }
        out << "cuda profile: " << steps_counted_ << " steps after the first, " << std::fixed << std::setprecision(2)
            << total / steps << " ms of GPU time a step\n";
        std::vector<std::pair<double, std::string>> groups;
        for (const auto& [group, ms] : by_group) groups.emplace_back(ms, group);
        std::sort(groups.rbegin(), groups.rend());
        for (const auto& [ms, group] : groups) {
            out << "cuda profile: group " << std::setw(9) << ms / steps << " ms " << std::setw(5) << 100.0 * ms / total
                << " %  " << group << "\n";
        }
        std::vector<const Mark*> slowest;
        for (const Mark& mark : marks_) slowest.push_back(&mark);
        std::sort(slowest.begin(), slowest.end(),
                  [](const Mark* a, const Mark* b) { return a->total_ms > b->total_ms; });
        for (std::size_t k = 0; k < std::min<std::size_t>(25, slowest.size()); ++k) {
            out << "cuda profile: call  " << std::setw(9) << slowest[k]->total_ms / steps << " ms " << std::setw(5)
                << 100.0 * slowest[k]->total_ms / total << " %  " << slowest[k]->label << "\n";
        }
    }

private:
    struct Mark {
        std::string label;
        std::string group;
        cudaEvent_t event;
        double total_ms;
    };
    bool enabled_ = false;
    std::vector<Mark> marks_;
    std::size_t next_ = 0;
    std::int64_t steps_seen_ = 0;
    std::int64_t steps_counted_ = 0;
};

/// One tensor's working -> master gradient conversion: O x K x K x I -> O x I x K x K (K = 1 and
/// O = 1 for everything but convolution weights, a plain copy).
struct Conversion {
    std::int64_t offset = 0;
    int o = 1, i = 0, k = 1;
};

class CudaNetwork final : public Network, public cuda::DeviceGradients {
public:
    explicit CudaNetwork(const NetworkSpec& spec)
        : architecture_(spec.architecture),
          batch_(spec.batch),
          type_(check_spec(spec)),
          context_(spec.device, type_),
          parameters_(parameter_layout(architecture_)),
          elements_(layout_elements(parameters_)),
          image_bytes_(sizeof(float) * static_cast<std::size_t>(batch_) * 3 * architecture_.image_size *
                       architecture_.image_size),
          staging_{PinnedBuffer(image_bytes_), PinnedBuffer(image_bytes_)},
          label_staging_{PinnedBuffer(sizeof(std::int32_t) * batch_), PinnedBuffer(sizeof(std::int32_t) * batch_)},
          read_back_(sizeof(float) * batch_ + 2 * sizeof(int)),
          scaler_(spec.initial_loss_scale) {
        allocate_arenas(spec.seed);
        build_layers();
        for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) it->op->bind_backward(context_);
        context_.finalize();
        for (cudaEvent_t& event : staged_)
            EPOCHCAST_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
        EPOCHCAST_CUDA_CHECK(cudaEventCreateWithFlags(&loss_ready_, cudaEventDisableTiming));
        parameters_updated();
        context_.synchronize();
    }

    ~CudaNetwork() override {
        try {
            profile_.report(std::cerr);
        } catch (const std::exception&) {  // a failed read of the events: no profile, nothing else lost
        }
        (void)cudaStreamSynchronize(context_.stream());
        for (cudaEvent_t event : staged_) (void)cudaEventDestroy(event);
        (void)cudaEventDestroy(loss_ready_);
    }

    const std::vector<ParameterTensor>& parameters() const override { return parameters_; }
    std::int64_t parameter_elements() const override { return elements_; }
    float* values() override { return values_; }
    float* gradients() override { return gradients_; }
    float* momentum() override { return momentum_; }
    const std::vector<StateTensor>& state() const override { return state_; }
    bool device_arenas() const override { return true; }

    void download_state() override {
        EPOCHCAST_CUDA_CHECK(cudaMemcpyAsync(running_host_.data(), running_, running_host_.size() * sizeof(float),
                                             cudaMemcpyDeviceToHost, context_.stream()));
        context_.synchronize();
    }

    void upload_state() override {
        EPOCHCAST_CUDA_CHECK(cudaMemcpyAsync(running_, running_host_.data(), running_host_.size() * sizeof(float),
                                             cudaMemcpyHostToDevice, context_.stream()));
        context_.synchronize();
    }

    void read(Arena arena, std::int64_t offset, std::int64_t count, float* host) override {
        EPOCHCAST_CUDA_CHECK(cudaMemcpyAsync(host, arena_pointer(arena) + offset, sizeof(float) * count,
                                             cudaMemcpyDeviceToHost, context_.stream()));
        context_.synchronize();
    }

    void write(Arena arena, std::int64_t offset, std::int64_t count, const float* host) override {
        EPOCHCAST_CUDA_CHECK(cudaMemcpyAsync(arena_pointer(arena) + offset, host, sizeof(float) * count,
                                             cudaMemcpyHostToDevice, context_.stream()));
        context_.synchronize();
    }

    double train_step(const float* images, const std::int32_t* labels,
                      const std::function<void(int layer)>& layer_ready) override {
        profile_.end_step();
        profile_.mark(context_.stream(), "input (upload, NHWC)", "input");
        upload_batch(images, labels);
        return forward_backward(layer_ready);
    }

    HostMemory* batch_memory() override { return &batch_memory_; }

    bool generate_synthetic_batches(int classes, int image_size, std::uint64_t seed) override {
        if (classes != architecture_.classes || image_size != architecture_.image_size) {
            throw InputError("synthetic batches of " + std::to_string(classes) + " classes at " +
                             std::to_string(image_size) + " px for a network of " +
                             std::to_string(architecture_.classes) + " classes at " +
                             std::to_string(architecture_.image_size) + " px");
        }
        EPOCHCAST_CUDA_CHECK(cudaSetDevice(context_.device()));
        synthetic_ = std::make_unique<cuda::SyntheticBatches>(classes, image_size, seed, batch_);
        return true;
    }

    double train_step_generated(std::int64_t position, const std::function<void(int layer)>& layer_ready) override {
        if (!synthetic_) {
            throw RunError(
                "train_step_generated before generate_synthetic_batches: the CUDA network has no generator yet");
        }
        profile_.end_step();
        profile_.mark(context_.stream(), "input (generated, NHWC)", "input");
        // On the compute stream, so the previous step is done reading device_images_ and labels.
        synthetic_->fill(position, batch_, device_images_, device_labels_, context_.stream());
        images_to_input();
        return forward_backward(layer_ready);
    }

    bool optimizer_step(double lr) override {
        profile_.mark(context_.stream(), "optimizer (and the host until the next step)", "optimizer");
        if (type_ == DataType::fp16) {
            int* overflow_host = reinterpret_cast<int*>(read_back_.as<float>() + batch_) + 1;
            EPOCHCAST_CUDA_CHECK(
                cudaMemcpyAsync(overflow_host, overflow_, sizeof(int), cudaMemcpyDeviceToHost, context_.stream()));
            context_.synchronize();
            if (!scaler_.update(*overflow_host != 0)) return false;
        }
        cuda::sgd_nesterov(values_, gradients_, momentum_, decay_mask_, elements_, static_cast<float>(lr),
                           static_cast<float>(kMomentum), static_cast<float>(kWeightDecay), context_.stream());
        parameters_updated();
        return true;
    }

    std::int64_t skipped_steps() const override { return scaler_.skipped(); }

    void parameters_updated() override {
        for (Step& step : steps_) step.op->refresh_parameters(context_);
    }

    std::string implementation() const override { return implementation_; }

    // ---- DeviceGradients
    void* working_gradients() override { return working_gradients_; }
    DataType working_type() const override { return type_; }
    cudaStream_t compute_stream() const override { return context_.stream(); }
    void defer_gradient_conversion() override { deferred_ = true; }

    void convert_gradients() override {
        EPOCHCAST_CUDA_CHECK(cudaMemsetAsync(overflow_, 0, sizeof(int), context_.stream()));
        const float unscale = 1.0f / loss_scale();
        for (const Step& step : steps_) {
            if (step.has_parameters) convert_layer(step.layer, unscale);
        }
    }

private:
    struct Step {
        int layer = 0;
        std::unique_ptr<cuda::LayerOp> op;
        bool has_parameters = false;
    };

    /// The profile's mark before one call of a layer: "layer2.0.conv1 forward" in group "convolution forward".
    void mark(const Step& step, const char* call) {
        if (!profile_.enabled()) return;
        const Layer& layer = architecture_.layers[static_cast<std::size_t>(step.layer)];
        profile_.mark(context_.stream(),
                      layer.name + " " + call + " " + std::to_string(layer.output.channels) + "x" +
                          std::to_string(layer.output.height) + "x" + std::to_string(layer.output.width),
                      std::string(to_string(layer.kind)) + " " + call);
    }

    float loss_scale() const { return type_ == DataType::fp16 ? static_cast<float>(scaler_.scale()) : 1.0f; }

    float* arena_pointer(Arena arena) const {
        switch (arena) {
            case Arena::values:
                return values_;
            case Arena::gradients:
                return gradients_;
            case Arena::momentum:
                return momentum_;
        }
        return nullptr;
    }

    float* allocate_floats(std::int64_t count) {
        return static_cast<float*>(context_.allocate(sizeof(float) * static_cast<std::size_t>(count)));
    }

    void* working_at(void* arena, std::int64_t offset) const {
        return static_cast<char*>(arena) + offset * cuda::element_bytes(type_);
    }

    /// fp32 arenas, working copies, running statistics (device and host), per-layer conversions.
    void allocate_arenas(std::uint64_t seed) {
        values_ = allocate_floats(elements_);
        gradients_ = allocate_floats(elements_);
        momentum_ = allocate_floats(elements_);
        decay_mask_ = allocate_floats(elements_);
        working_values_ = context_.allocate(static_cast<std::size_t>(elements_) * cuda::element_bytes(type_));
        working_gradients_ = context_.allocate(static_cast<std::size_t>(elements_) * cuda::element_bytes(type_));
        cuda::upload(context_, values_, initial_values(architecture_, seed));
        cuda::upload(context_, decay_mask_, weight_decay_mask(parameters_));

        offset_of_layer_.assign(architecture_.layers.size(), -1);
        conversions_.assign(architecture_.layers.size(), {});
        for (const ParameterTensor& tensor : parameters_) {
            const Layer& layer = architecture_.layers[static_cast<std::size_t>(tensor.layer)];
            std::int64_t& offset = offset_of_layer_[static_cast<std::size_t>(tensor.layer)];
            offset = offset < 0 ? tensor.offset : std::min(offset, tensor.offset);
            Conversion conversion{tensor.offset, 1, static_cast<int>(tensor.elements), 1};
            if (layer.kind == LayerKind::convolution) {
                conversion = Conversion{tensor.offset, layer.output.channels, layer.input.channels, layer.kernel};
            }
            conversions_[static_cast<std::size_t>(tensor.layer)].push_back(conversion);
        }

        state_ = running_statistics_layout(architecture_, running_host_);
        const auto channels = static_cast<std::int64_t>(running_host_.size() / 2);
        running_ = allocate_floats(2 * channels);
        upload_state();

        device_images_ = allocate_floats(static_cast<std::int64_t>(image_bytes_ / sizeof(float)));
        device_labels_ = static_cast<std::int32_t*>(context_.allocate(sizeof(std::int32_t) * batch_));
        losses_ = allocate_floats(batch_);
        logits_ = allocate_floats(std::int64_t{batch_} * architecture_.classes);
        logits_grad_ =
            context_.allocate(static_cast<std::size_t>(batch_) * architecture_.classes * cuda::element_bytes(type_));
        overflow_ = static_cast<int*>(context_.allocate(sizeof(int)));
        bad_label_ = static_cast<int*>(context_.allocate(sizeof(int)));
    }

    void convert_layer(int layer, float unscale) {
        for (const Conversion& c : conversions_[static_cast<std::size_t>(layer)]) {
            cuda::working_to_master(working_at(working_gradients_, c.offset), gradients_ + c.offset, type_, c.o, c.i,
                                    c.k, unscale, overflow_, context_.stream());
        }
    }

    /// The step on the batch in device_images_ and device_labels_ (conv1's input already made):
    /// forward, loss, backward with layer_ready per finished layer. Returns the mean loss.
    double forward_backward(const std::function<void(int layer)>& layer_ready) {
        for (Step& step : steps_) {
            mark(step, "forward");
            step.op->forward(context_);
        }

        profile_.mark(context_.stream(), "loss", "loss");
        const float scale = loss_scale();
        EPOCHCAST_CUDA_CHECK(cudaMemsetAsync(bad_label_, 0, sizeof(int), context_.stream()));
        cuda::softmax_cross_entropy(logits_, device_labels_, batch_, architecture_.classes,
                                    scale / static_cast<float>(batch_), losses_, logits_grad_, type_, bad_label_,
                                    context_.stream());
        EPOCHCAST_CUDA_CHECK(cudaMemcpyAsync(read_back_.as<float>(), losses_, sizeof(float) * batch_,
                                             cudaMemcpyDeviceToHost, context_.stream()));
        EPOCHCAST_CUDA_CHECK(cudaMemcpyAsync(read_back_.as<float>() + batch_, bad_label_, sizeof(int),
                                             cudaMemcpyDeviceToHost, context_.stream()));
        EPOCHCAST_CUDA_CHECK(cudaEventRecord(loss_ready_, context_.stream()));

        if (!deferred_) EPOCHCAST_CUDA_CHECK(cudaMemsetAsync(overflow_, 0, sizeof(int), context_.stream()));
        for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) {
            mark(*it, "backward-parameters");
            it->op->backward_parameters(context_);
            if (it->has_parameters) {
                if (!deferred_) {
                    profile_.mark(context_.stream(), "gradient conversion", "gradient conversion");
                    convert_layer(it->layer, 1.0f / scale);
                }
                if (profile_.enabled()) profile_.mark(context_.stream(), "gradient ready (all-reduce)", "all-reduce");
                if (layer_ready) layer_ready(it->layer);
            }
            mark(*it, "backward-inputs");
            it->op->backward_inputs(context_);
        }
        profile_.mark(context_.stream(), "end of backward", "host wait");

        // The loss was copied back before the backward pass: wait for that, not for the pass.
        EPOCHCAST_CUDA_CHECK(cudaEventSynchronize(loss_ready_));
        int bad_label = 0;
        std::memcpy(&bad_label, read_back_.as<float>() + batch_, sizeof(int));
        if (bad_label != 0) {
            throw InputError("a label of the batch is outside [0, " + std::to_string(architecture_.classes) + ")");
        }
        double sum = 0;
        for (int b = 0; b < batch_; ++b) sum += read_back_.as<float>()[b];
        return sum / batch_;
    }

    /// The caller's batch -> one of two pinned buffers (while the GPU may still read the other)
    /// -> the GPU -> conv1's NHWC input. Images a BatchLoader decoded into batch_memory() are
    /// pinned already and go to the GPU from where they are: the loader keeps them unchanged
    /// until its next batch is asked for, after train_step has waited for the loss, which the
    /// stream computes after this copy.
    void upload_batch(const float* images, const std::int32_t* labels) {
        const int b = next_staging_;
        next_staging_ = 1 - next_staging_;
        EPOCHCAST_CUDA_CHECK(cudaEventSynchronize(staged_[b]));
        const float* from = images;
        if (!batch_memory_.holds(images, image_bytes_)) {
            std::memcpy(staging_[b].as<float>(), images, image_bytes_);
            from = staging_[b].as<float>();
        }
        std::memcpy(label_staging_[b].as<std::int32_t>(), labels, sizeof(std::int32_t) * batch_);
        EPOCHCAST_CUDA_CHECK(
            cudaMemcpyAsync(device_images_, from, image_bytes_, cudaMemcpyHostToDevice, context_.stream()));
        EPOCHCAST_CUDA_CHECK(cudaMemcpyAsync(device_labels_, label_staging_[b].as<std::int32_t>(),
                                             sizeof(std::int32_t) * batch_, cudaMemcpyHostToDevice, context_.stream()));
        EPOCHCAST_CUDA_CHECK(cudaEventRecord(staged_[b], context_.stream()));
        images_to_input();
    }

    /// device_images_ (NCHW fp32) -> conv1's NHWC input in the working type.
    void images_to_input() {
        cuda::images_to_nhwc(device_images_, image_.value, type_, batch_, 3, architecture_.image_size,
                             architecture_.image_size, context_.stream());
    }

    cuda::WeightView weight_view(std::size_t layer, int o, int i, int k) {
        const std::int64_t offset = offset_of_layer_[layer];
        return {values_ + offset, working_at(working_values_, offset), working_at(working_gradients_, offset), o, i, k};
    }

    Activation& new_activation(const Shape& shape) {
        return activations_.emplace_back(
            cuda::make_activation(context_, batch_, shape.channels, shape.height, shape.width));
    }

    void build_layers() {
        image_ = cuda::make_activation(context_, batch_, 3, architecture_.image_size, architecture_.image_size);
        output_.assign(architecture_.layers.size(), nullptr);
        std::string convolution_algorithms;
        const auto& layers = architecture_.layers;
        for (std::size_t i = 0; i < layers.size(); ++i) {
            const Layer& layer = layers[i];
            Activation& x = layer.inputs[0] < 0 ? image_ : *output_[static_cast<std::size_t>(layer.inputs[0])];
            const cuda::Window window{layer.kernel, layer.stride, layer.padding};
            const std::int64_t offset = offset_of_layer_[i];
            switch (layer.kind) {
                case LayerKind::convolution: {
                    Activation& y = new_activation(layer.output);
                    auto conv = std::make_unique<cuda::Convolution>(
                        context_, window, x, y,
                        weight_view(i, layer.output.channels, layer.input.channels, layer.kernel),
                        /*input_gradient=*/layer.inputs[0] >= 0);
                    if (convolution_algorithms.empty() && layer.kernel == 3)
                        convolution_algorithms = conv->implementation();
                    add_step(i, std::move(conv), y);
                    break;
                }
                case LayerKind::batch_norm: {
                    Activation& y = new_activation(layer.output);
                    float* running = running_ + running_offset_;
                    running_offset_ += 2 * layer.output.channels;
                    add_step(i,
                             std::make_unique<cuda::BatchNorm>(context_, x, y, values_ + offset, gradients_ + offset,
                                                               working_at(working_gradients_, offset), running,
                                                               running + layer.output.channels),
                             y);
                    break;
                }
                case LayerKind::relu: {
                    Activation& y = activations_.emplace_back(x);  // in place: x's value and descriptor
                    y.diff = nullptr;
                    add_step(i, std::make_unique<cuda::Relu>(context_, x, y), y);
                    break;
                }
                case LayerKind::max_pool:
                case LayerKind::avg_pool: {
                    Activation& y = new_activation(layer.output);
                    add_step(i,
                             std::make_unique<cuda::Pooling>(context_, layer.kind == LayerKind::max_pool, window, x, y),
                             y);
                    break;
                }
                case LayerKind::add: {
                    Activation& y = new_activation(layer.output);
                    Activation& shortcut = *output_[static_cast<std::size_t>(layer.inputs[1])];
                    add_step(i, std::make_unique<cuda::Add>(context_, x, shortcut, y), y);
                    break;
                }
                case LayerKind::fully_connected: {
                    const int classes = architecture_.classes;
                    const int features = layer.input.channels;
                    const std::int64_t bias_offset = offset + std::int64_t{classes} * features;
                    steps_.push_back({static_cast<int>(i),
                                      std::make_unique<cuda::FullyConnected>(
                                          context_, x, logits_, logits_grad_, weight_view(i, classes, features, 1),
                                          values_ + bias_offset, working_at(working_gradients_, bias_offset), classes),
                                      true});
                    break;
                }
            }
        }
        int version_major = 0;
        EPOCHCAST_CUDA_CHECK(cudaRuntimeGetVersion(&version_major));
        cudaDeviceProp properties{};
        EPOCHCAST_CUDA_CHECK(cudaGetDeviceProperties(&properties, context_.device()));
        const std::size_t cudnn = cudnnGetVersion();
        implementation_ = "cuDNN " + std::to_string(cudnn / 10000) + "." + std::to_string(cudnn / 100 % 100) +
                          " (legacy API) + cuBLAS on " + properties.name + ", 3x3 convolutions " +
                          convolution_algorithms + ", " +
                          (type_ == DataType::fp16 ? "fp16 mixed precision, dynamic loss scaling" : "fp32");
    }

    void add_step(std::size_t layer, std::unique_ptr<cuda::LayerOp> op, Activation& y) {
        output_[layer] = &y;
        steps_.push_back({static_cast<int>(layer), std::move(op), offset_of_layer_[layer] >= 0});
    }

    Architecture architecture_;
    int batch_;
    DataType type_;
    cuda::Context context_;
    std::vector<ParameterTensor> parameters_;
    std::int64_t elements_;
    std::size_t image_bytes_;                     ///< N x 3 x S x S fp32
    PinnedBatchMemory batch_memory_;              ///< batch_memory(): a BatchLoader's batches, uploaded in place
    PinnedBuffer staging_[2];                     ///< the caller's images, double-buffered
    PinnedBuffer label_staging_[2];               ///< the caller's labels, double-buffered
    PinnedBuffer read_back_;                      ///< N losses, the bad-label flag, the overflow flag
    cudaEvent_t staged_[2] = {nullptr, nullptr};  ///< upload from staging_[b] finished
    cudaEvent_t loss_ready_ = nullptr;
    int next_staging_ = 0;
    float* values_ = nullptr;                           ///< fp32 master weights (device)
    float* gradients_ = nullptr;                        ///< fp32 gradients, unscaled (device)
    float* momentum_ = nullptr;                         ///< fp32 SGD momentum (device)
    float* decay_mask_ = nullptr;                       ///< 1 where weight decay applies (device)
    void* working_values_ = nullptr;                    ///< working-type weights, conv O x K x K x I (device)
    void* working_gradients_ = nullptr;                 ///< working-type gradients, scaled by the loss scale (device)
    std::vector<std::int64_t> offset_of_layer_;         ///< per table row: first arena element, -1 without parameters
    std::vector<std::vector<Conversion>> conversions_;  ///< per table row
    float* running_ = nullptr;                          ///< per BN in forward order: mean (C), var (C) (device)
    std::int64_t running_offset_ = 0;
    std::vector<float> running_host_;  ///< host copy, what state() points into
    std::vector<StateTensor> state_;
    float* device_images_ = nullptr;  ///< N x 3 x S x S fp32 NCHW
    std::int32_t* device_labels_ = nullptr;
    std::unique_ptr<cuda::SyntheticBatches>
        synthetic_;                ///< makes the batch on the GPU; null until generate_synthetic_batches
    float* losses_ = nullptr;      ///< N per-image losses
    float* logits_ = nullptr;      ///< N x classes fp32
    void* logits_grad_ = nullptr;  ///< N x classes working, times the loss scale
    int* overflow_ = nullptr;      ///< set when a converted gradient is inf or NaN
    int* bad_label_ = nullptr;
    Activation image_;                    ///< N x 3 x S x S NHWC working
    std::deque<Activation> activations_;  ///< stable addresses; the layers hold references
    std::vector<Activation*> output_;     ///< per table row
    std::vector<Step> steps_;             ///< forward order
    LossScaler scaler_;
    bool deferred_ = false;
    std::string implementation_;
    StepProfile profile_;
};

}  // namespace

std::unique_ptr<Network> make_cuda_network(const NetworkSpec& spec) { return std::make_unique<CudaNetwork>(spec); }

}  // namespace epochcast
