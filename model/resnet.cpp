// The ResNet architecture table (see resnet.hpp): one row per layer, in forward order.
//
// Naming scheme (torchvision's module names, plus explicit names for the layers torchvision
// applies functionally or through one shared module):
//
//   stem:   "conv1", "bn1", "relu", "maxpool"
//   block:  "layer{S}.{B}.conv{K}", "layer{S}.{B}.bn{K}"     K = 1..2 (basic) or 1..3 (bottleneck)
//           "layer{S}.{B}.relu{K}"   the ReLU that follows bn{K}; for the last K it follows the
//                                    residual add instead (it is the block's output)
//           "layer{S}.{B}.downsample.0" / ".1"   1x1 convolution with the block's stride + its BN,
//                                    only where the shortcut changes shape
//           "layer{S}.{B}.add"       residual branch + shortcut
//   head:   "avgpool", "fc"
//
// Order inside a block: conv1, bn1, relu1, conv2, bn2, [relu2, conv3, bn3,] [downsample.0,
// downsample.1,] add, relu{last}. Every input index is smaller than the layer's own index.
#include "model/resnet.hpp"

#include <array>
#include <numeric>
#include <stdexcept>

#include "model/errors.hpp"
#include "model/text_io.hpp"

namespace epochcast {

namespace {

/// Depth configuration of one ResNet variant.
struct Variant {
    std::string_view name;
    bool bottleneck;  ///< bottleneck blocks (1x1, 3x3, 1x1, expansion 4) vs basic (3x3, 3x3)
    std::array<int, 4> blocks_per_stage;
};

constexpr std::array<Variant, 5> kVariants{{
    {"resnet18", false, {2, 2, 2, 2}},
    {"resnet34", false, {3, 4, 6, 3}},
    {"resnet50", true, {3, 4, 6, 3}},
    {"resnet101", true, {3, 4, 23, 3}},
    {"resnet152", true, {3, 8, 36, 3}},
}};

constexpr int kImageChannels = 3;
constexpr int kStemChannels = 64;  ///< conv1 output channels and stage-1 width
constexpr int kBottleneckExpansion = 4;

/// Output side of a convolution or pooling: floor((in + 2p - k) / s) + 1.
int output_side(int input_side, int kernel, int stride, int padding) {
    return (input_side + 2 * padding - kernel) / stride + 1;
}

/// Appends layers to a table, filling in shapes, parameters and MACs; returns indices.
class TableBuilder {
public:
    explicit TableBuilder(std::vector<Layer>& layers) : layers_(layers) {}

    /// Output shape of a producer (-1 is the image).
    Shape shape_of(int producer) const { return producer < 0 ? image_ : layers_.at(producer).output; }

    void set_image(Shape image) { image_ = image; }
    void set_stage(int stage) { stage_ = stage; }

    /// Convolution without bias: weights = out_ch x in_ch x k x k; MACs = out_elems x in_ch x k x k.
    int convolution(std::string name, int input, int out_channels, int kernel, int stride, int padding) {
        const Shape in = shape_of(input);
        const int side_h = output_side(in.height, kernel, stride, padding);
        const int side_w = output_side(in.width, kernel, stride, padding);
        Layer layer = make(std::move(name), LayerKind::convolution, {input}, Shape{out_channels, side_h, side_w});
        layer.kernel = kernel;
        layer.stride = stride;
        layer.padding = padding;
        const std::int64_t per_output = std::int64_t{in.channels} * kernel * kernel;
        layer.parameters = std::int64_t{out_channels} * per_output;
        layer.forward_macs = layer.output.elements() * per_output;
        return push(std::move(layer));
    }

    /// Batch normalisation: gamma and beta per channel (running statistics are not learnable).
    int batch_norm(std::string name, int input, bool zero_init_gamma = false) {
        const Shape in = shape_of(input);
        Layer layer = make(std::move(name), LayerKind::batch_norm, {input}, in);
        layer.parameters = 2 * std::int64_t{in.channels};
        layer.zero_init_gamma = zero_init_gamma;
        return push(std::move(layer));
    }

    int relu(std::string name, int input) {
        return push(make(std::move(name), LayerKind::relu, {input}, shape_of(input)));
    }

    int pool(std::string name, LayerKind kind, int input, int kernel, int stride, int padding) {
        const Shape in = shape_of(input);
        Layer layer = make(std::move(name), kind, {input},
                           Shape{in.channels, output_side(in.height, kernel, stride, padding),
                                 output_side(in.width, kernel, stride, padding)});
        layer.kernel = kernel;
        layer.stride = stride;
        layer.padding = padding;
        return push(std::move(layer));
    }

    /// Residual add: the branch first, then the shortcut; both must have the same shape.
    int add(std::string name, int branch, int shortcut) {
        if (!(shape_of(branch) == shape_of(shortcut))) {
            throw std::logic_error("resnet table: residual add '" + name + "' joins tensors of different shapes");
        }
        return push(make(std::move(name), LayerKind::add, {branch, shortcut}, shape_of(branch)));
    }

    /// Fully connected with bias on a flattened input: weights in x out plus out biases.
    int fully_connected(std::string name, int input, int outputs) {
        const std::int64_t in_features = shape_of(input).elements();
        Layer layer = make(std::move(name), LayerKind::fully_connected, {input}, Shape{outputs, 1, 1});
        layer.parameters = in_features * outputs + outputs;
        layer.forward_macs = in_features * outputs;
        return push(std::move(layer));
    }

private:
    Layer make(std::string name, LayerKind kind, std::vector<int> inputs, Shape output) const {
        Layer layer;
        layer.name = std::move(name);
        layer.kind = kind;
        layer.input = shape_of(inputs.front());
        layer.inputs = std::move(inputs);
        layer.output = output;
        layer.stage = stage_;
        return layer;
    }

    int push(Layer layer) {
        layers_.push_back(std::move(layer));
        return static_cast<int>(layers_.size()) - 1;
    }

    std::vector<Layer>& layers_;
    Shape image_;
    int stage_ = 0;
};

/// Appends one residual block reading `input`; returns the index of its output (the final ReLU).
int residual_block(TableBuilder& table, const std::string& prefix, int input, int width, int stride, bool bottleneck) {
    const int in_channels = table.shape_of(input).channels;
    const int out_channels = bottleneck ? width * kBottleneckExpansion : width;

    int branch = input;
    int last_relu_number = 0;
    if (bottleneck) {
        // 1x1 reduce, 3x3 with the block's stride (v1.5 / torchvision), 1x1 expand.
        branch = table.convolution(prefix + "conv1", branch, width, 1, 1, 0);
        branch = table.batch_norm(prefix + "bn1", branch);
        branch = table.relu(prefix + "relu1", branch);
        branch = table.convolution(prefix + "conv2", branch, width, 3, stride, 1);
        branch = table.batch_norm(prefix + "bn2", branch);
        branch = table.relu(prefix + "relu2", branch);
        branch = table.convolution(prefix + "conv3", branch, out_channels, 1, 1, 0);
        branch = table.batch_norm(prefix + "bn3", branch, /*zero_init_gamma=*/true);
        last_relu_number = 3;
    } else {
        branch = table.convolution(prefix + "conv1", branch, width, 3, stride, 1);
        branch = table.batch_norm(prefix + "bn1", branch);
        branch = table.relu(prefix + "relu1", branch);
        branch = table.convolution(prefix + "conv2", branch, out_channels, 3, 1, 1);
        branch = table.batch_norm(prefix + "bn2", branch, /*zero_init_gamma=*/true);
        last_relu_number = 2;
    }

    int shortcut = input;
    if (stride != 1 || in_channels != out_channels) {
        shortcut = table.convolution(prefix + "downsample.0", input, out_channels, 1, stride, 0);
        shortcut = table.batch_norm(prefix + "downsample.1", shortcut);
    }
    const int sum = table.add(prefix + "add", branch, shortcut);
    return table.relu(prefix + "relu" + std::to_string(last_relu_number), sum);
}

std::string known_models_text() {
    std::string text;
    for (const std::string& name : resnet_models()) {
        text += (text.empty() ? "" : ", ") + name;
    }
    return text;
}

}  // namespace

std::string_view to_string(LayerKind kind) {
    switch (kind) {
        case LayerKind::convolution:
            return "convolution";
        case LayerKind::batch_norm:
            return "batch_norm";
        case LayerKind::relu:
            return "relu";
        case LayerKind::max_pool:
            return "max_pool";
        case LayerKind::avg_pool:
            return "avg_pool";
        case LayerKind::add:
            return "add";
        case LayerKind::fully_connected:
            return "fully_connected";
    }
    return "unknown";
}

std::int64_t Architecture::parameters() const {
    return std::accumulate(layers.begin(), layers.end(), std::int64_t{0},
                           [](std::int64_t sum, const Layer& layer) { return sum + layer.parameters; });
}

// MACs counted over convolutions and the fully connected layer only; BN, ReLU, pooling and adds
// are counted as 0 (they are memory-bound, and the roofline covers them through memory traffic).
std::int64_t Architecture::forward_macs() const {
    return std::accumulate(layers.begin(), layers.end(), std::int64_t{0},
                           [](std::int64_t sum, const Layer& layer) { return sum + layer.forward_macs; });
}

const std::vector<std::string>& resnet_models() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> list;
        for (const Variant& variant : kVariants) list.emplace_back(variant.name);
        return list;
    }();
    return names;
}

Architecture build_resnet(std::string_view model, int image_size, int classes) {
    const Variant* variant = nullptr;
    for (const Variant& candidate : kVariants) {
        if (candidate.name == model) variant = &candidate;
    }
    if (variant == nullptr) {
        throw InputError("unknown model '" + std::string(model) + "'; known models: " + known_models_text());
    }
    if (image_size < kMinImageSizePx) {
        throw InputError("image size " + std::to_string(image_size) + " px is too small for " + std::string(model) +
                         "; use at least " + std::to_string(kMinImageSizePx) + " px");
    }
    if (image_size > kMaxImageSizePx) {
        throw InputError("image size " + std::to_string(image_size) + " px is more than the " +
                         format_count(kMaxImageSizePx) + " px epochcast models");
    }
    if (classes < 1) {
        throw InputError("class count " + std::to_string(classes) + " is invalid; use at least 1 class");
    }
    if (classes > kMaxClasses) {
        throw InputError("class count " + std::to_string(classes) + " is more than the " + format_count(kMaxClasses) +
                         " classes epochcast models");
    }

    Architecture architecture;
    architecture.model = std::string(model);
    architecture.image_size = image_size;
    architecture.classes = classes;

    TableBuilder table(architecture.layers);
    table.set_image(Shape{kImageChannels, image_size, image_size});

    // Stem (stage 0): 7x7/2 conv, BN, ReLU, 3x3/2 max pool.
    table.set_stage(0);
    int x = table.convolution("conv1", -1, kStemChannels, 7, 2, 3);
    x = table.batch_norm("bn1", x);
    x = table.relu("relu", x);
    x = table.pool("maxpool", LayerKind::max_pool, x, 3, 2, 1);

    // Residual stages 1..4: widths 64, 128, 256, 512; the first block of stages 2..4 has stride 2.
    for (int stage = 1; stage <= 4; ++stage) {
        table.set_stage(stage);
        const int width = kStemChannels << (stage - 1);
        const int blocks = variant->blocks_per_stage[static_cast<std::size_t>(stage - 1)];
        for (int block = 0; block < blocks; ++block) {
            const int stride = (stage > 1 && block == 0) ? 2 : 1;
            const std::string prefix = "layer" + std::to_string(stage) + "." + std::to_string(block) + ".";
            x = residual_block(table, prefix, x, width, stride, variant->bottleneck);
        }
    }

    // Head (stage 5): global average pool (kernel = the feature map side, so the output is 1x1),
    // then the fully connected classifier.
    table.set_stage(5);
    const int side = table.shape_of(x).height;
    x = table.pool("avgpool", LayerKind::avg_pool, x, side, 1, 0);
    table.fully_connected("fc", x, classes);
    return architecture;
}

}  // namespace epochcast
