#include "executor/arena.hpp"

#include <algorithm>
#include <string>

namespace epochcast {

namespace {

/// torchvision names the stem's batch norm "bn1" and a block's "layer1.0.bn1"; our table uses the
/// same names, so a tensor's name is the layer's plus ".weight" or ".bias".
ParameterTensor tensor(const Layer& layer, int index, const char* suffix, std::int64_t offset,
                       std::int64_t elements, bool decay) {
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
