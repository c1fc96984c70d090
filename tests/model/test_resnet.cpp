#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "model/errors.hpp"
#include "model/resnet.hpp"

namespace epochcast {
namespace {

const Layer& layer_named(const Architecture& architecture, const std::string& name) {
    const auto found = std::find_if(architecture.layers.begin(), architecture.layers.end(),
                                    [&](const Layer& layer) { return layer.name == name; });
    if (found == architecture.layers.end()) throw std::out_of_range("no layer named " + name);
    return *found;
}

/// Output of the last layer of a stage (0 stem, 1..4 residual stages, 5 head).
Shape stage_output(const Architecture& architecture, int stage) {
    Shape shape;
    for (const Layer& layer : architecture.layers) {
        if (layer.stage == stage) shape = layer.output;
    }
    return shape;
}

/// The structural checks the executor relies on when it builds the network from the table.
void expect_valid_graph(const Architecture& architecture) {
    const Shape image{3, architecture.image_size, architecture.image_size};
    std::set<std::string> names;
    ASSERT_FALSE(architecture.layers.empty());
    EXPECT_EQ(architecture.layers.back().name, "fc");
    EXPECT_EQ(architecture.layers.back().output, (Shape{architecture.classes, 1, 1}));
    for (int index = 0; index < static_cast<int>(architecture.layers.size()); ++index) {
        const Layer& layer = architecture.layers[static_cast<std::size_t>(index)];
        SCOPED_TRACE(architecture.model + " layer " + std::to_string(index) + " " + layer.name);
        EXPECT_TRUE(names.insert(layer.name).second) << "duplicate name";
        ASSERT_FALSE(layer.inputs.empty());
        EXPECT_EQ(layer.inputs.size(), layer.kind == LayerKind::add ? 2u : 1u);
        for (const int producer : layer.inputs) {
            EXPECT_GE(producer, -1);
            EXPECT_LT(producer, index);
            const Shape produced =
                producer < 0 ? image : architecture.layers[static_cast<std::size_t>(producer)].output;
            if (layer.kind == LayerKind::fully_connected) {
                EXPECT_EQ(produced.elements(), layer.input.elements());
            } else {
                EXPECT_EQ(produced, layer.input);
            }
        }
        if (layer.kind != LayerKind::convolution && layer.kind != LayerKind::fully_connected) {
            EXPECT_EQ(layer.forward_macs, 0);  // MACs are counted over conv and fc only
            if (layer.kind != LayerKind::batch_norm) {
                EXPECT_EQ(layer.parameters, 0);
            }
        }
        if (layer.kind == LayerKind::batch_norm || layer.kind == LayerKind::relu || layer.kind == LayerKind::add) {
            EXPECT_EQ(layer.output, layer.input);
        }
        if (layer.kind == LayerKind::convolution || layer.kind == LayerKind::max_pool ||
            layer.kind == LayerKind::avg_pool) {
            // output side = floor((in + 2p - k) / s) + 1
            EXPECT_EQ(layer.output.height, (layer.input.height + 2 * layer.padding - layer.kernel) / layer.stride + 1);
            EXPECT_EQ(layer.output.width, (layer.input.width + 2 * layer.padding - layer.kernel) / layer.stride + 1);
        }
        if (layer.kind == LayerKind::add) {
            const Shape branch = architecture.layers[static_cast<std::size_t>(layer.inputs[0])].output;
            const int shortcut_index = layer.inputs[1];
            const Shape shortcut = architecture.layers[static_cast<std::size_t>(shortcut_index)].output;
            EXPECT_EQ(branch, shortcut);
            EXPECT_EQ(layer.output, branch);
            // The branch is closed by a zero-initialised BN; the shortcut never is.
            EXPECT_TRUE(architecture.layers[static_cast<std::size_t>(layer.inputs[0])].zero_init_gamma);
            EXPECT_FALSE(architecture.layers[static_cast<std::size_t>(shortcut_index)].zero_init_gamma);
        }
    }
}

TEST(ResNet, KnownModelsInDepthOrder) {
    EXPECT_EQ(resnet_models(),
              (std::vector<std::string>{"resnet18", "resnet34", "resnet50", "resnet101", "resnet152"}));
}

TEST(ResNet, PublishedParameterCounts) {
    EXPECT_EQ(build_resnet("resnet18").parameters(), 11'689'512);
    EXPECT_EQ(build_resnet("resnet34").parameters(), 21'797'672);
    EXPECT_EQ(build_resnet("resnet50").parameters(), 25'557'032);
    EXPECT_EQ(build_resnet("resnet101").parameters(), 44'549'160);
    EXPECT_EQ(build_resnet("resnet152").parameters(), 60'192'808);
}

TEST(ResNet, ResNet50ForwardMacsAt224) {
    // MACs counted over convolutions and the fully connected layer only (BN, ReLU, pooling and
    // adds count 0): conv = output elements x in_channels x k x k, fc = 2048 x 1000. Per image.
    // The commonly quoted "4.1 GMACs" for ResNet-50 (v1.5).
    const Architecture resnet50 = build_resnet("resnet50", 224, 1000);
    EXPECT_EQ(resnet50.forward_macs(), 4'089'184'256);
    EXPECT_EQ(layer_named(resnet50, "conv1").forward_macs, std::int64_t{64} * 112 * 112 * 3 * 7 * 7);
    EXPECT_EQ(layer_named(resnet50, "fc").forward_macs, 2048 * 1000);
    // The other depths, as computed by the same rule (regression figures).
    EXPECT_EQ(build_resnet("resnet18").forward_macs(), 1'814'073'344);
    EXPECT_EQ(build_resnet("resnet34").forward_macs(), 3'663'761'408);
    EXPECT_EQ(build_resnet("resnet101").forward_macs(), 7'801'405'440);
    EXPECT_EQ(build_resnet("resnet152").forward_macs(), 11'513'626'624);
}

TEST(ResNet, ResNet50StageShapesAt224) {
    const Architecture resnet50 = build_resnet("resnet50", 224, 1000);
    EXPECT_EQ(layer_named(resnet50, "conv1").output, (Shape{64, 112, 112}));
    EXPECT_EQ(stage_output(resnet50, 0), (Shape{64, 56, 56}));
    EXPECT_EQ(layer_named(resnet50, "maxpool").output, (Shape{64, 56, 56}));
    EXPECT_EQ(stage_output(resnet50, 1), (Shape{256, 56, 56}));
    EXPECT_EQ(stage_output(resnet50, 2), (Shape{512, 28, 28}));
    EXPECT_EQ(stage_output(resnet50, 3), (Shape{1024, 14, 14}));
    EXPECT_EQ(stage_output(resnet50, 4), (Shape{2048, 7, 7}));
    EXPECT_EQ(layer_named(resnet50, "avgpool").output, (Shape{2048, 1, 1}));
    EXPECT_EQ(layer_named(resnet50, "avgpool").kernel, 7);
    EXPECT_EQ(layer_named(resnet50, "fc").output, (Shape{1000, 1, 1}));
    expect_valid_graph(resnet50);
}

TEST(ResNet, ShapesAtOtherImageSizes) {
    const Architecture at160 = build_resnet("resnet50", 160, 1000);
    EXPECT_EQ(stage_output(at160, 0), (Shape{64, 40, 40}));
    EXPECT_EQ(stage_output(at160, 1), (Shape{256, 40, 40}));
    EXPECT_EQ(stage_output(at160, 2), (Shape{512, 20, 20}));
    EXPECT_EQ(stage_output(at160, 3), (Shape{1024, 10, 10}));
    EXPECT_EQ(stage_output(at160, 4), (Shape{2048, 5, 5}));
    EXPECT_EQ(layer_named(at160, "avgpool").kernel, 5);
    // Parameters do not depend on the image size.
    EXPECT_EQ(at160.parameters(), 25'557'032);
    expect_valid_graph(at160);

    const Architecture at32 = build_resnet("resnet18", 32, 10);
    EXPECT_EQ(layer_named(at32, "conv1").output, (Shape{64, 16, 16}));
    EXPECT_EQ(stage_output(at32, 0), (Shape{64, 8, 8}));
    EXPECT_EQ(stage_output(at32, 1), (Shape{64, 8, 8}));
    EXPECT_EQ(stage_output(at32, 2), (Shape{128, 4, 4}));
    EXPECT_EQ(stage_output(at32, 3), (Shape{256, 2, 2}));
    EXPECT_EQ(stage_output(at32, 4), (Shape{512, 1, 1}));
    EXPECT_EQ(layer_named(at32, "fc").output, (Shape{10, 1, 1}));
    expect_valid_graph(at32);

    // An odd size: every shortcut still matches its branch.
    expect_valid_graph(build_resnet("resnet152", 33, 7));
    expect_valid_graph(build_resnet("resnet34", 299, 1000));
}

TEST(ResNet, EveryModelIsAValidGraph) {
    for (const std::string& model : resnet_models()) {
        expect_valid_graph(build_resnet(model));
    }
}

TEST(ResNet, ClassCountChangesOnlyTheFcParameters) {
    const Architecture thousand = build_resnet("resnet50", 224, 1000);
    const Architecture ten = build_resnet("resnet50", 224, 10);
    EXPECT_EQ(layer_named(ten, "fc").parameters, 2048 * 10 + 10);
    EXPECT_EQ(thousand.parameters() - ten.parameters(), (2048 + 1) * (1000 - 10));
    EXPECT_EQ(build_resnet("resnet18", 224, 1).parameters(), 11'689'512 - (512 + 1) * 999);
}

TEST(ResNet, BlockLayoutNamesAndWiring) {
    const Architecture resnet50 = build_resnet("resnet50");
    // The stem, in order.
    ASSERT_GE(resnet50.layers.size(), 4u);
    EXPECT_EQ(resnet50.layers[0].name, "conv1");
    EXPECT_EQ(resnet50.layers[0].inputs, std::vector<int>{-1});
    EXPECT_EQ(resnet50.layers[1].name, "bn1");
    EXPECT_EQ(resnet50.layers[2].name, "relu");
    EXPECT_EQ(resnet50.layers[3].name, "maxpool");
    EXPECT_EQ(resnet50.layers[3].kernel, 3);
    EXPECT_EQ(resnet50.layers[3].stride, 2);
    EXPECT_EQ(resnet50.layers[3].padding, 1);

    // Stride on the 3x3 (v1.5), downsample where the shape changes, only in block 0.
    EXPECT_EQ(layer_named(resnet50, "layer2.0.conv1").stride, 1);
    EXPECT_EQ(layer_named(resnet50, "layer2.0.conv2").stride, 2);
    EXPECT_EQ(layer_named(resnet50, "layer2.0.conv2").kernel, 3);
    EXPECT_EQ(layer_named(resnet50, "layer2.0.conv2").padding, 1);
    EXPECT_EQ(layer_named(resnet50, "layer2.0.downsample.0").stride, 2);
    EXPECT_EQ(layer_named(resnet50, "layer2.0.downsample.0").kind, LayerKind::convolution);
    EXPECT_EQ(layer_named(resnet50, "layer2.0.downsample.1").kind, LayerKind::batch_norm);
    EXPECT_EQ(layer_named(resnet50, "layer1.0.downsample.0").stride, 1);  // 64 -> 256 channels
    EXPECT_THROW(layer_named(resnet50, "layer2.1.downsample.0"), std::out_of_range);

    // Add: branch (bn3) first, shortcut (downsample.1) second; block output is relu3.
    const auto index_of = [&](const std::string& name) {
        return static_cast<int>(&layer_named(resnet50, name) - resnet50.layers.data());
    };
    EXPECT_EQ(layer_named(resnet50, "layer2.0.add").inputs,
              (std::vector<int>{index_of("layer2.0.bn3"), index_of("layer2.0.downsample.1")}));
    EXPECT_EQ(layer_named(resnet50, "layer2.0.relu3").inputs, std::vector<int>{index_of("layer2.0.add")});
    // Identity shortcut: the previous block's output.
    EXPECT_EQ(layer_named(resnet50, "layer2.1.add").inputs,
              (std::vector<int>{index_of("layer2.1.bn3"), index_of("layer2.0.relu3")}));
    EXPECT_EQ(layer_named(resnet50, "avgpool").inputs, std::vector<int>{index_of("layer4.2.relu3")});

    // Zero-initialised gamma on bn3 of bottlenecks, never on downsample BNs or bn1/bn2.
    EXPECT_TRUE(layer_named(resnet50, "layer3.4.bn3").zero_init_gamma);
    EXPECT_FALSE(layer_named(resnet50, "layer3.0.bn2").zero_init_gamma);
    EXPECT_FALSE(layer_named(resnet50, "layer3.0.downsample.1").zero_init_gamma);
    EXPECT_FALSE(layer_named(resnet50, "bn1").zero_init_gamma);
    int zero_init = 0;
    for (const Layer& layer : resnet50.layers) zero_init += layer.zero_init_gamma ? 1 : 0;
    EXPECT_EQ(zero_init, 3 + 4 + 6 + 3);

    // Basic blocks: conv1 (3x3, strided), conv2, bn2 closes the branch, relu2 is the output.
    const Architecture resnet18 = build_resnet("resnet18");
    EXPECT_EQ(layer_named(resnet18, "layer3.0.conv1").stride, 2);
    EXPECT_EQ(layer_named(resnet18, "layer3.0.conv1").kernel, 3);
    EXPECT_TRUE(layer_named(resnet18, "layer3.0.bn2").zero_init_gamma);
    EXPECT_EQ(layer_named(resnet18, "layer3.0.relu2").output, (Shape{256, 14, 14}));
    EXPECT_THROW(layer_named(resnet18, "layer1.0.downsample.0"), std::out_of_range);
    EXPECT_THROW(layer_named(resnet18, "layer1.0.conv3"), std::out_of_range);
    // 4 stem layers, 7 per basic block (conv1 bn1 relu1 conv2 bn2 add relu2), 2 more for each of
    // the 3 downsampled blocks (layer2.0, layer3.0, layer4.0), 2 head layers.
    EXPECT_EQ(resnet18.layers.size(), 4u + 8u * 7u + 3u * 2u + 2u);
}

TEST(ResNet, LayerParametersFollowTheRules) {
    const Architecture resnet50 = build_resnet("resnet50");
    EXPECT_EQ(layer_named(resnet50, "conv1").parameters, 64 * 3 * 7 * 7);
    EXPECT_EQ(layer_named(resnet50, "bn1").parameters, 2 * 64);
    EXPECT_EQ(layer_named(resnet50, "layer4.0.conv2").parameters, 512 * 512 * 3 * 3);
    EXPECT_EQ(layer_named(resnet50, "layer4.0.downsample.0").parameters, 2048 * 1024);
    EXPECT_EQ(layer_named(resnet50, "fc").parameters, 2048 * 1000 + 1000);
    EXPECT_EQ(layer_named(resnet50, "relu").parameters, 0);
    EXPECT_EQ(layer_named(resnet50, "layer1.0.add").parameters, 0);
    EXPECT_EQ(to_string(LayerKind::batch_norm), "batch_norm");
}

TEST(ResNet, BadInputsThrowActionableErrors) {
    try {
        build_resnet("resnet51");
        FAIL() << "expected InputError";
    } catch (const InputError& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("resnet51"), std::string::npos);
        for (const std::string& known : resnet_models()) EXPECT_NE(message.find(known), std::string::npos);
    }
    try {
        build_resnet("resnet50", 31);
        FAIL() << "expected InputError";
    } catch (const InputError& error) {
        EXPECT_NE(std::string(error.what()).find("32"), std::string::npos);
    }
    EXPECT_THROW(build_resnet("resnet50", 0), InputError);
    EXPECT_THROW(build_resnet("resnet50", 224, 0), InputError);
    EXPECT_THROW(build_resnet("resnet50", 224, -5), InputError);
    EXPECT_NO_THROW(build_resnet("resnet50", 32, 1));
}

}  // namespace
}  // namespace epochcast
