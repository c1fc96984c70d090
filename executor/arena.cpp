#include "executor/arena.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "model/errors.hpp"

namespace epochcast {

namespace {

/// torchvision names the stem's batch norm "bn1" and a block's "layer1.0.bn1"; our table uses the
/// same names, so a tensor's name is the layer's plus ".weight" or ".bias".
ParameterTensor tensor(const Layer& layer, int index, const char* suffix, std::int64_t offset, std::int64_t elements,
                       bool decay) {
    ParameterTensor t;
    t.name = layer.name + suffix;
    t.layer = index;
    t.offset = offset;
    t.elements = elements;
    t.weight_decay = decay;
    return t;
}

}  // namespace

std::vector<ParameterTensor> parameter_layout(const Architecture& architecture) {
    std::vector<ParameterTensor> layout;
    std::int64_t offset = 0;
    for (int i = static_cast<int>(architecture.layers.size()) - 1; i >= 0; --i) {
        const Layer& layer = architecture.layers[static_cast<std::size_t>(i)];
        switch (layer.kind) {
            case LayerKind::convolution:
                layout.push_back(tensor(layer, i, ".weight", offset, layer.parameters, true));
                offset += layer.parameters;
                break;
            case LayerKind::batch_norm: {
                const std::int64_t channels = layer.output.channels;
                layout.push_back(tensor(layer, i, ".weight", offset, channels, false));
                layout.push_back(tensor(layer, i, ".bias", offset + channels, channels, false));
                offset += 2 * channels;
                break;
            }
            case LayerKind::fully_connected: {
                const std::int64_t outputs = layer.output.channels;
                const std::int64_t weights = layer.parameters - outputs;
                layout.push_back(tensor(layer, i, ".weight", offset, weights, true));
                layout.push_back(tensor(layer, i, ".bias", offset + weights, outputs, false));
                offset += layer.parameters;
                break;
            }
            default:
                break;
        }
    }
    return layout;
}

std::int64_t layout_elements(const std::vector<ParameterTensor>& layout) {
    return layout.empty() ? 0 : layout.back().offset + layout.back().elements;
}

std::vector<float> weight_decay_mask(const std::vector<ParameterTensor>& layout) {
    std::vector<float> mask(static_cast<std::size_t>(layout_elements(layout)), 0.0f);
    for (const ParameterTensor& t : layout) {
        std::fill_n(mask.begin() + t.offset, t.elements, t.weight_decay ? 1.0f : 0.0f);
    }
    return mask;
}

}  // namespace epochcast

namespace epochcast {

namespace {

float* arena_pointer(Network& network, Arena arena) {
    switch (arena) {
        case Arena::values:
            return network.values();
        case Arena::gradients:
            return network.gradients();
        case Arena::momentum:
            return network.momentum();
    }
    return nullptr;
}

}  // namespace

// Host arenas: plain copies. Device backends override both.
void Network::read(Arena arena, std::int64_t offset, std::int64_t count, float* host) {
    const float* begin = arena_pointer(*this, arena) + offset;
    std::copy(begin, begin + count, host);
}

void Network::write(Arena arena, std::int64_t offset, std::int64_t count, const float* host) {
    std::copy(host, host + count, arena_pointer(*this, arena) + offset);
}

// Backends that make no batches of their own (generate_synthetic_batches is false) never get here.
double Network::train_step_generated(std::int64_t /*position*/, const std::function<void(int layer)>& /*layer_ready*/) {
    throw RunError("train_step_generated: this network (" + implementation() +
                   ") makes no batches of its own; feed train_step from a BatchLoader");
}

}  // namespace epochcast

namespace epochcast {

namespace {

/// Deterministic generator, one stream per (seed, layer): splitmix64 (Steele, Lea, Flood 2014),
/// uniform from the top 53 bits, normal by Box-Muller. Independent of batch and threads.
class Random {
public:
    Random(std::uint64_t seed, int layer) : state_(seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(layer)) {
        next();
    }
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    /// In [0, 1).
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    double uniform(double low, double high) { return low + (high - low) * uniform(); }
    double normal(double standard_deviation) {
        const double u1 = 1.0 - uniform();  // (0, 1]
        const double u2 = uniform();
        return standard_deviation * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    }

private:
    std::uint64_t state_;
};

}  // namespace

std::vector<StateTensor> running_statistics_layout(const Architecture& architecture, std::vector<float>& storage) {
    std::int64_t channels = 0;
    for (const Layer& layer : architecture.layers) {
        if (layer.kind == LayerKind::batch_norm) channels += layer.output.channels;
    }
    storage.assign(static_cast<std::size_t>(2 * channels), 0.0f);
    std::vector<StateTensor> state;
    float* next = storage.data();
    for (const Layer& layer : architecture.layers) {
        if (layer.kind != LayerKind::batch_norm) continue;
        const int c = layer.output.channels;
        state.push_back({layer.name + ".running_mean", c, next});
        std::fill(next + c, next + 2 * c, 1.0f);  // running variance starts at 1
        state.push_back({layer.name + ".running_var", c, next + c});
        next += 2 * c;
    }
    return state;
}

std::vector<float> initial_values(const Architecture& architecture, std::uint64_t seed) {
    const std::vector<ParameterTensor> layout = parameter_layout(architecture);
    std::vector<std::int64_t> offset_of_layer(architecture.layers.size(), -1);
    for (const ParameterTensor& tensor : layout) {
        std::int64_t& offset = offset_of_layer[static_cast<std::size_t>(tensor.layer)];
        offset = offset < 0 ? tensor.offset : std::min(offset, tensor.offset);
    }
    std::vector<float> values(static_cast<std::size_t>(layout_elements(layout)), 0.0f);
    for (std::size_t index = 0; index < architecture.layers.size(); ++index) {
        const Layer& layer = architecture.layers[index];
        if (offset_of_layer[index] < 0) continue;
        float* value = values.data() + offset_of_layer[index];
        Random random(seed, static_cast<int>(index));
        if (layer.kind == LayerKind::convolution) {
            const double deviation = std::sqrt(2.0 / (double(layer.output.channels) * layer.kernel * layer.kernel));
            for (std::int64_t i = 0; i < layer.parameters; ++i) value[i] = static_cast<float>(random.normal(deviation));
        } else if (layer.kind == LayerKind::batch_norm) {
            std::fill(value, value + layer.output.channels, layer.zero_init_gamma ? 0.0f : 1.0f);
        } else {
            const double bound = 1.0 / std::sqrt(static_cast<double>(layer.input.elements()));
            for (std::int64_t i = 0; i < layer.parameters; ++i)
                value[i] = static_cast<float>(random.uniform(-bound, bound));
        }
    }
    return values;
}

}  // namespace epochcast
