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

/// The initial weights every backend starts from, depending on `seed` only: convolutions Kaiming
/// normal, fan_out (std = sqrt(2 / (O K K))); batch norm gamma 1 (0 where the table says
/// zero_init_gamma), beta 0; fc weight and bias uniform(-1/sqrt(in), 1/sqrt(in)). One splitmix64
/// stream per (seed, layer), so the values do not depend on batch, threads or backend.
std::vector<float> initial_values(const Architecture& architecture, std::uint64_t seed);

/// The batch-norm running statistics of an architecture, in forward order: `storage` is resized to
/// hold, per batch norm, its running mean (C, starting at 0) then its running variance (C, starting
/// at 1), and the returned tensors point into it.
std::vector<StateTensor> running_statistics_layout(const Architecture& architecture, std::vector<float>& storage);

/// Per-element weight-decay mask of a layout: 1 where decay applies, 0 elsewhere.
std::vector<float> weight_decay_mask(const std::vector<ParameterTensor>& layout);

}  // namespace epochcast
