// The layout of the learnable-tensor arenas every backend shares (executor/network.hpp): which
// tensor sits where, computed from model/'s architecture table alone, so parameter servers and
// checkpoints know the layout without building a network.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/network.hpp"
#include "model/resnet.hpp"

namespace epochcast {

/// Tensors in backward order (fc first, conv1 last); inside a layer weight then bias (batch
/// norm: gamma, beta). Names are torchvision's ("layer1.0.conv1.weight", "bn1.bias", "fc.weight").
std::vector<ParameterTensor> parameter_layout(const Architecture& architecture);

/// Total elements of a layout (the last tensor's offset + elements).
std::int64_t layout_elements(const std::vector<ParameterTensor>& layout);

/// Per-element weight-decay mask of a layout: 1 where decay applies, 0 elsewhere.
std::vector<float> weight_decay_mask(const std::vector<ParameterTensor>& layout);

}  // namespace epochcast
