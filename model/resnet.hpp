// The ResNet architecture table: the single source of truth for layer shapes. The model counts
// FLOPs and gradient bytes from it, the simulator replays its backward pass layer by layer, and
// the executor builds its network from it (no second definition of the network anywhere).
//
// ResNet v1 as the seeds train it (seed 000): in a bottleneck block the stride sits on the 3x3
// convolution, not on the first 1x1 ("v1.5" in NVIDIA's and torchvision's naming). Shapes are per
// image, channels x height x width; the batch dimension is never part of the table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace epochcast {

enum class LayerKind { convolution, batch_norm, relu, max_pool, avg_pool, add, fully_connected };

std::string_view to_string(LayerKind kind);

/// One image's tensor: channels x height x width.
struct Shape {
    int channels = 0;  ///< feature maps
    int height = 0;    ///< rows, in pixels
    int width = 0;     ///< columns, in pixels
    std::int64_t elements() const { return std::int64_t{channels} * height * width; }
    bool operator==(const Shape&) const = default;
};

/// One layer of the network, in forward (topological) order.
struct Layer {
    std::string name;  ///< torchvision-style: "conv1", "layer1.0.conv2", "layer2.0.downsample.0", "fc"
    LayerKind kind = LayerKind::convolution;
    std::vector<int> inputs;      ///< indices of the layers it reads (earlier in the table); -1 is the input image.
                                  ///< Two entries for `add` (the residual branch first, then the shortcut).
    Shape input;                  ///< shape of the (first) input, per image
    Shape output;                 ///< shape of the output, per image
    int kernel = 0;               ///< square kernel side for convolution and pooling, 0 otherwise
    int stride = 1;               ///< stride for convolution and pooling
    int padding = 0;              ///< zero padding on each side for convolution and pooling
    std::int64_t parameters = 0;  ///< learnable scalars: conv weights (no bias), BN gamma and beta, FC weight and bias
    std::int64_t forward_macs = 0;  ///< multiply-accumulates of the forward pass per image (conv and FC only)
    int stage = 0;                  ///< 0 stem (conv1, bn1, relu, maxpool), 1..4 residual stages, 5 head (avgpool, fc)
    bool zero_init_gamma = false;   ///< the BN that closes a residual branch (its gamma starts at 0, seed 000)
};

/// A whole network for one image size and class count.
struct Architecture {
    std::string model;          ///< "resnet18", "resnet34", "resnet50", "resnet101", "resnet152"
    int image_size = 224;       ///< input side in pixels (square, 3 channels)
    int classes = 1000;         ///< outputs of the final fully connected layer
    std::vector<Layer> layers;  ///< forward order; the last is "fc"

    std::int64_t parameters() const;    ///< sum of layers' learnable scalars
    std::int64_t forward_macs() const;  ///< sum of layers' forward multiply-accumulates, per image
};

/// The smallest input side, in pixels: the smallest whose stage-4 map is still at least 1x1.
inline constexpr int kMinImageSizePx = 32;
/// The largest input side epochcast models, in pixels (docs/model.md, "Limits"): a 4096 px image
/// keeps about 17.5 GiB of ResNet-50 activations at amp, so a few at most fit an 80 GB GPU, and
/// every layer's elements per image stay below 2^31.
inline constexpr int kMaxImageSizePx = 4'096;
/// The most classifier outputs epochcast models (ResNet-50's fc then holds 2 x 10^9 parameters).
inline constexpr int kMaxClasses = 1'000'000;

/// The names build_resnet accepts, in depth order.
const std::vector<std::string>& resnet_models();

/// Build the table. Throws InputError for an unknown model name (listing the known ones), an
/// image size below 32 pixels, or a class count below 1.
Architecture build_resnet(std::string_view model, int image_size = 224, int classes = 1000);

}  // namespace epochcast
