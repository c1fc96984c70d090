// The CPU network (see network.hpp): one LayerOp per row of model/'s architecture table, run in
// table order forward and in reverse order backward.
//
// Activations: one per table row (N x C x H x W, the network's layout and type), except that a
// ReLU shares its input's storage: fused into the batch norm before it where there is one (fp32:
// oneDNN's normalization_flags::fuse_norm_relu; bf16: our kernels), in place after a residual add.
// On our bf16 kernels a residual block's last batch norm, its add and the ReLU after it run as one
// pass (cpu::ResidualRelu), and that batch norm's own output has no storage.
#include "executor/cpu/network.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <numbers>
#include <stdexcept>

#include "executor/arena.hpp"
#include "executor/bf16.hpp"
#include "executor/cpu/huge_pages.hpp"
#include "executor/optimizer.hpp"
#include "model/errors.hpp"
#include "model/workload.hpp"

namespace epochcast {

namespace {

using cpu::Activation;
using cpu::DataType;
using cpu::Layout;

/// Validates what the CPU backend can run; returns its compute type.
DataType check_spec(const NetworkSpec& spec) {
    if (spec.batch < 1)
        throw InputError("batch " + std::to_string(spec.batch) + " is invalid; use at least 1 image per rank");
    if (spec.threads < 1)
        throw InputError("thread count " + std::to_string(spec.threads) + " is invalid; use at least 1");
    if (spec.precision == Precision::amp) {
        throw InputError("--precision fp16 (amp) is a GPU precision; the CPU backend runs fp32 or bf16");
    }
    if (spec.precision == Precision::bf16 && !cpu::cpu_has_native_bf16()) {
        throw InputError(
            "--precision bf16 needs a CPU with native bf16 (AVX512-BF16 or AMX); this CPU's oneDNN ISA is " +
            cpu::cpu_isa_name() + "; use --precision fp32");
    }
    return spec.precision == Precision::bf16 ? DataType::bf16 : DataType::fp32;
}

/// Number of table rows that read each row's output.
std::vector<int> consumer_counts(const Architecture& architecture) {
    std::vector<int> counts(architecture.layers.size(), 0);
    for (const Layer& layer : architecture.layers) {
        for (int input : layer.inputs) {
            if (input >= 0) ++counts[static_cast<std::size_t>(input)];
        }
    }
    return counts;
}

class CpuNetwork final : public Network {
public:
    CpuNetwork(const NetworkSpec& spec, Layout layout)
        : layout_(layout),
          architecture_(spec.architecture),
          batch_(spec.batch),
          type_(check_spec(spec)),
          precision_(spec.precision),
          context_(spec.threads) {
        lay_out_arenas();
        initialise_values(spec.seed);
        build_layers(layout);
        weights_of_layer_.assign(architecture_.layers.size(), nullptr);
        for (Step& step : steps_) weights_of_layer_[static_cast<std::size_t>(step.layer)] = step.op->weights();
        for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) it->op->bind_backward(context_);
        context_.finalize();
        parameters_updated();
    }

    const std::vector<ParameterTensor>& parameters() const override { return parameters_; }
    std::int64_t parameter_elements() const override { return static_cast<std::int64_t>(values_.size()); }
    float* values() override { return values_.data(); }
    float* gradients() override { return gradients_.data(); }
    float* momentum() override { return momentum_.data(); }
    const std::vector<StateTensor>& state() const override { return state_; }

    bool optimizer_step(double lr) override {
        // Layer by layer, each layer's working copies refreshed from its master weights while
        // the step has them in the cache (a ResNet-50 layer holds at most 9.4 MB of fp32).
        for (std::size_t t = 0; t < parameters_.size();) {
            const int layer = parameters_[t].layer;
            const std::int64_t first = parameters_[t].offset;
            std::int64_t end = first;
            for (; t < parameters_.size() && parameters_[t].layer == layer; ++t) end += parameters_[t].elements;
            step_range(first, end - first, lr);
            if (cpu::Weights* weights = weights_of_layer_[static_cast<std::size_t>(layer)]) weights->refresh(context_);
        }
        return true;
    }

    double train_step(const float* images, const std::int32_t* labels,
                      const std::function<void(int layer)>& layer_ready) override {
        omp_set_num_threads(context_.threads());
        image_plain_.set_data_handle(const_cast<float*>(images));
        context_.run(image_reorder_);
        for (Step& step : steps_) step.op->forward(context_);
        const double loss =
            cpu::softmax_cross_entropy(static_cast<const float*>(logits_.get_data_handle()), labels, batch_,
                                       architecture_.classes, static_cast<float*>(logits_grad_.get_data_handle()));
        for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) {
            it->op->backward_parameters(context_);
            if (it->has_parameters) {
                if (bf16_gradients_ != nullptr) {  // what the weights did not publish as bf16: batch norm, fc bias
                    const auto& [begin, end] = rounded_here_[static_cast<std::size_t>(it->layer)];
                    round_to_bf16(gradients_.data() + begin, bf16_gradients_ + begin, end - begin);
                }
                if (layer_ready) layer_ready(it->layer);
            }
            it->op->backward_inputs(context_);
        }
        return loss;
    }

    bool write_gradients_as_bf16(std::uint16_t* arena) override {
        bf16_gradients_ = arena;
        rounded_here_.assign(architecture_.layers.size(), {0, 0});
        for (const ParameterTensor& tensor : parameters_) {
            auto& [begin, end] = rounded_here_[static_cast<std::size_t>(tensor.layer)];
            if (end == 0) begin = tensor.offset;
            end = tensor.offset + tensor.elements;
        }
        for (Step& step : steps_) {  // weights published as bf16 (a reorder, our kernel) start the layer's range
            cpu::Weights* weights = step.op->weights();
            if (weights == nullptr) continue;
            const std::int64_t offset = offset_of_layer_[static_cast<std::size_t>(step.layer)];
            rounded_here_[static_cast<std::size_t>(step.layer)].first += weights->publish_as_bf16(arena + offset);
        }
        return true;
    }

    void parameters_updated() override {
        for (Step& step : steps_) step.op->refresh_parameters(context_);
    }

    void parameters_updated_in(std::int64_t first, std::int64_t count) override {
        for (const ParameterTensor& tensor : parameters_) {
            cpu::Weights* weights = weights_of_layer_[static_cast<std::size_t>(tensor.layer)];
            // A layer's weights are its first tensor (the arena's layer range starts with them).
            if (weights != nullptr && tensor.offset == offset_of_layer_[static_cast<std::size_t>(tensor.layer)] &&
                tensor.offset < first + count && first < tensor.offset + tensor.elements) {
                weights->refresh(context_);
            }
        }
    }

    std::string implementation() const override { return implementation_; }

private:
    struct Step {
        int layer = 0;  ///< table row
        std::unique_ptr<cpu::LayerOp> op;
        bool has_parameters = false;
    };

    /// The SGD step on [first, first + count) of the arenas, split over the context's threads
    /// when it is large enough to pay for the parallel region (a memory-bound pass).
    void step_range(std::int64_t first, std::int64_t count, double lr) {
        constexpr std::int64_t kElementsPerThread = 1 << 16;
        const int team = static_cast<int>(std::clamp<std::int64_t>(count / kElementsPerThread, 1, context_.threads()));
#pragma omp parallel num_threads(team)
        {
            const std::int64_t begin = first + count * omp_get_thread_num() / omp_get_num_threads();
            const std::int64_t end = first + count * (omp_get_thread_num() + 1) / omp_get_num_threads();
            sgd_nesterov_step(values_.data() + begin, gradients_.data() + begin, momentum_.data() + begin, parameters_,
                              begin, end - begin, lr);
        }
    }

    /// Arena offsets in backward order (model/'s gradients_in_backward_order), names, state.
    void lay_out_arenas() {
        offset_of_layer_.assign(architecture_.layers.size(), -1);
        std::int64_t offset = 0;
        for (const GradientTensor& gradient : gradients_in_backward_order(architecture_, precision_)) {
            const Layer& layer = architecture_.layers[static_cast<std::size_t>(gradient.layer)];
            offset_of_layer_[static_cast<std::size_t>(gradient.layer)] = offset;
            const std::int64_t second = layer.kind == LayerKind::convolution  ? 0
                                        : layer.kind == LayerKind::batch_norm ? layer.output.channels
                                                                              : architecture_.classes;
            const bool weight_decay = layer.kind != LayerKind::batch_norm;
            parameters_.push_back(
                {layer.name + ".weight", gradient.layer, offset, gradient.elements - second, weight_decay});
            if (second > 0) {
                parameters_.push_back(
                    {layer.name + ".bias", gradient.layer, offset + gradient.elements - second, second, false});
            }
            offset += gradient.elements;
        }
        values_.assign(static_cast<std::size_t>(offset), 0.0f);
        gradients_.assign(static_cast<std::size_t>(offset), 0.0f);
        momentum_.assign(static_cast<std::size_t>(offset), 0.0f);

        state_ = running_statistics_layout(architecture_, running_);
    }

    void initialise_values(std::uint64_t seed) {
        const std::vector<float> values = initial_values(architecture_, seed);
        std::copy(values.begin(), values.end(), values_.begin());  // same size: layout_elements
    }

    cpu::ParameterView view_of(std::size_t layer) {
        const std::int64_t offset = offset_of_layer_[layer];
        return {values_.data() + offset, gradients_.data() + offset};
    }

    Activation& new_activation(const Shape& shape, Layout layout) {
        return activations_.emplace_back(
            cpu::make_activation(context_, cpu::activation_desc(batch_, shape, type_, layout)));
    }

    /// The only row that reads row i's output, or -1.
    std::size_t consumer_of(std::size_t i) const {
        for (std::size_t j = i + 1; j < architecture_.layers.size(); ++j) {
            for (int input : architecture_.layers[j].inputs) {
                if (input == static_cast<int>(i)) return j;
            }
        }
        return static_cast<std::size_t>(-1);
    }

    /// What batch norm row i fuses: the ReLU that is its only reader (fp32 on oneDNN, bf16 on our
    /// kernels), or, on our kernels, the residual add whose branch it is (its only reader) with
    /// the ReLU that is the add's only reader.
    cpu::BatchNorm::Then fusion_after_batch_norm(std::size_t i, const Activation& x,
                                                 const std::vector<int>& consumers) const {
        using Then = cpu::BatchNorm::Then;
        const auto& layers = architecture_.layers;
        if (consumers[i] != 1) return Then::nothing;
        const auto only_reader_is_relu = [&](std::size_t row) {
            return row + 1 < layers.size() && consumers[row] == 1 && layers[row + 1].kind == LayerKind::relu &&
                   layers[row + 1].inputs[0] == static_cast<int>(row);
        };
        const dnnl::memory::desc x_desc = x.value.get_desc();
        if (only_reader_is_relu(i)) return cpu::BatchNorm::fuses(x_desc, Then::relu) ? Then::relu : Then::nothing;
        const std::size_t add = consumer_of(i);
        if (add < layers.size() && layers[add].kind == LayerKind::add && layers[add].inputs[0] == static_cast<int>(i) &&
            only_reader_is_relu(add) && cpu::BatchNorm::fuses(x_desc, Then::add_relu)) {
            return Then::add_relu;
        }
        return Then::nothing;
    }

    /// One LayerOp per table row, forward order; output_[i] is row i's output activation.
    void build_layers(Layout layout) {
        const std::vector<int> consumers = consumer_counts(architecture_);
        image_ = cpu::make_activation(
            context_,
            cpu::activation_desc(batch_, Shape{3, architecture_.image_size, architecture_.image_size}, type_, layout));
        output_.assign(architecture_.layers.size(), nullptr);
        const auto& layers = architecture_.layers;
        for (std::size_t i = 0; i < layers.size(); ++i) {
            const Layer& layer = layers[i];
            Activation& x = layer.inputs[0] < 0 ? image_ : *output_[static_cast<std::size_t>(layer.inputs[0])];
            const cpu::Window window{layer.kernel, layer.stride, layer.padding};
            switch (layer.kind) {
                case LayerKind::convolution: {
                    Activation& y = new_activation(layer.output, layout);
                    auto conv = std::make_unique<cpu::Convolution>(context_, window, x, y, view_of(i), type_,
                                                                   /*input_gradient=*/layer.inputs[0] >= 0);
                    if (implementation_.empty() && layer.kernel == 3) implementation_ = conv->implementation();
                    add_step(i, std::move(conv), y);
                    break;
                }
                case LayerKind::batch_norm: {
                    const cpu::BatchNorm::Then then = fusion_after_batch_norm(i, x, consumers);
                    // With Then::add_relu the ResidualRelu at the add writes the output; the batch
                    // norm's own output is a placeholder (no storage).
                    Activation& y = then == cpu::BatchNorm::Then::add_relu ? activations_.emplace_back()
                                                                           : new_activation(layer.output, layout);
                    const std::int64_t c = layer.output.channels;
                    float* running = running_.data() + running_offset_;
                    running_offset_ += 2 * c;
                    auto bn = std::make_unique<cpu::BatchNorm>(context_, x, y, view_of(i),
                                                               cpu::RunningStatistics{running, running + c}, then);
                    if (then == cpu::BatchNorm::Then::add_relu) residual_branch_[consumer_of(i)] = bn.get();
                    add_step(i, std::move(bn), y);
                    if (then == cpu::BatchNorm::Then::relu)
                        output_[++i] = &y;  // the ReLU row shares the batch norm's output
                    break;
                }
                case LayerKind::relu: {
                    Activation& y = activations_.emplace_back(Activation{x.value, dnnl::memory()});  // in place
                    add_step(i, std::make_unique<cpu::Relu>(context_, x, y), y);
                    break;
                }
                case LayerKind::max_pool:
                case LayerKind::avg_pool: {
                    Activation& y = new_activation(layer.output, layout);
                    const auto algorithm = layer.kind == LayerKind::max_pool
                                               ? dnnl::algorithm::pooling_max
                                               : dnnl::algorithm::pooling_avg_exclude_padding;
                    add_step(i, std::make_unique<cpu::Pooling>(context_, algorithm, window, x, y), y);
                    break;
                }
                case LayerKind::add: {
                    Activation& y = new_activation(layer.output, layout);
                    Activation& shortcut = *output_[static_cast<std::size_t>(layer.inputs[1])];
                    if (const auto fused = residual_branch_.find(i); fused != residual_branch_.end()) {
                        add_step(i, std::make_unique<cpu::ResidualRelu>(context_, *fused->second, shortcut, y), y);
                        output_[++i] = &y;  // the ReLU row shares the fused output
                    } else {
                        add_step(i, std::make_unique<cpu::Add>(context_, x, shortcut, y), y);
                    }
                    break;
                }
                case LayerKind::fully_connected: {
                    const dnnl::memory::desc logits_desc({batch_, architecture_.classes}, dnnl::memory::data_type::f32,
                                                         dnnl::memory::format_tag::nc);
                    logits_ = dnnl::memory(logits_desc, context_.engine());
                    logits_grad_ = dnnl::memory(logits_desc, context_.engine());
                    steps_.push_back(
                        {static_cast<int>(i),
                         std::make_unique<cpu::FullyConnected>(context_, x, logits_, logits_grad_, view_of(i), type_),
                         true});
                    break;
                }
            }
        }
        // Edge: the caller's fp32 NCHW images -> conv1's input (layout and type conv1 chose).
        image_plain_ = dnnl::memory(dnnl::memory::desc(image_.value.get_desc().dims(), dnnl::memory::data_type::f32,
                                                       dnnl::memory::format_tag::nchw),
                                    context_.engine(), DNNL_MEMORY_NONE);
        image_reorder_ = cpu::Call{dnnl::reorder(image_plain_, image_.value),
                                   {{DNNL_ARG_FROM, image_plain_}, {DNNL_ARG_TO, image_.value}}};
        implementation_ = describe(implementation_);
    }

    void add_step(std::size_t layer, std::unique_ptr<cpu::LayerOp> op, Activation& y) {
        output_[layer] = &y;
        steps_.push_back({static_cast<int>(layer), std::move(op), offset_of_layer_[layer] >= 0});
    }

    std::string describe(const std::string& convolution_implementation) const {
        const dnnl_version_t* version = dnnl_version();
        return "oneDNN " + std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
               std::to_string(version->patch) + " " + cpu::cpu_isa_name() + ", convolutions " +
               convolution_implementation + " on " + cpu::layout_name(layout_) + ", " +
               (type_ == DataType::bf16 ? "bf16 mixed precision" : "fp32");
    }

    Layout layout_;
    Architecture architecture_;
    int batch_;
    DataType type_;
    Precision precision_;
    cpu::Context context_;
    std::vector<ParameterTensor> parameters_;
    std::vector<std::int64_t> offset_of_layer_;  ///< per table row: first arena element, -1 without parameters
    // The arenas, on huge pages: the all-reduce exchange copies them between ranks (executor/cpu/huge_pages.hpp).
    HugePageVector<float> values_;             ///< parameter_elements() fp32 master weights
    HugePageVector<float> gradients_;          ///< parameter_elements() fp32 gradients
    HugePageVector<float> momentum_;           ///< parameter_elements() fp32 SGD momentum
    std::uint16_t* bf16_gradients_ = nullptr;  ///< write_gradients_as_bf16's arena, or none
    std::vector<std::pair<std::int64_t, std::int64_t>>
        rounded_here_;            ///< per table row: the arena range train_step rounds
    std::vector<float> running_;  ///< per BN in forward order: running mean (C), running var (C)
    std::int64_t running_offset_ = 0;
    std::vector<StateTensor> state_;
    Activation image_;          ///< N x 3 x S x S in conv1's layout and type
    dnnl::memory image_plain_;  ///< N x 3 x S x S fp32 NCHW, the caller's pointer
    cpu::Call image_reorder_;
    std::deque<Activation> activations_;                      ///< stable addresses; the layers hold references
    std::vector<Activation*> output_;                         ///< per table row
    std::map<std::size_t, cpu::BatchNorm*> residual_branch_;  ///< add row -> its branch's batch norm (Then::add_relu)
    dnnl::memory logits_, logits_grad_;                       ///< N x classes fp32
    std::vector<Step> steps_;                                 ///< forward order
    std::vector<cpu::Weights*> weights_of_layer_;  ///< per table row: its layer's working-copy weights, or none
    std::string implementation_;
};

}  // namespace

// oneDNN's own choice for the network's first 3x3 stride-1 convolution, decided on the CPU at run
// time: nChw16c where its best kernels are AVX-512 ones (where our own kernels, which read
// nChw16c, run beside them), nChw8c where they are AVX2 ones, NHWC where they are AMX ones
// (oneDNN 2.6.3's AMX convolutions take channels-last only, so nChw16c would leave an AMX host on
// its AVX-512 kernels). docs/performance.md has the figures.
cpu::Layout default_layout(const NetworkSpec& spec) {
    const DataType type = check_spec(spec);
    for (const Layer& layer : spec.architecture.layers) {
        if (layer.kind == LayerKind::convolution && layer.kernel == 3 && layer.stride == 1 && layer.padding == 1) {
            return cpu::convolution_choice(spec.batch, layer.output.channels, layer.output.height, type).layout;
        }
    }
    return cpu::Layout::blocked;
}

std::unique_ptr<Network> make_cpu_network(const NetworkSpec& spec) {
    return make_cpu_network(spec, default_layout(spec));
}

std::unique_ptr<Network> make_cpu_network(const NetworkSpec& spec, cpu::Layout layout) {
    return std::make_unique<CpuNetwork>(spec, layout);
}

}  // namespace epochcast
