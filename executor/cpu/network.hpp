// The CPU backend of executor/network.hpp: a ResNet from model/'s architecture table on oneDNN
// 2.6, in fp32 or bf16 mixed precision (bf16 activations and convolution / fc compute; fp32
// master weights, gradients, batch-norm parameters and statistics, logits and loss).
#pragma once

#include <memory>

#include "executor/cpu/layers.hpp"
#include "executor/network.hpp"

namespace epochcast {

/// Builds the network, allocating every buffer it will use. Weights depend on spec.seed only.
/// Throws InputError for batch < 1, threads < 1, Precision::amp (fp16 is a GPU precision), or
/// bf16 on a CPU without native bf16 (oneDNN would emulate it several times slower).
std::unique_ptr<Network> make_cpu_network(const NetworkSpec& spec);

/// The same with the activation layout chosen by the caller (benchmarks compare layouts);
/// make_cpu_network uses default_layout(spec).
std::unique_ptr<Network> make_cpu_network(const NetworkSpec& spec, cpu::Layout layout);

/// The activation layout make_cpu_network uses: the one oneDNN chooses on this CPU for the
/// network's first 3x3 stride-1 convolution when left to it (cpu::convolution_choice): NHWC
/// where its best kernel is AMX, blocked on AVX-512 without AMX (nChw16c) and below it (nChw8c).
/// Throws as make_cpu_network for a spec it cannot run.
cpu::Layout default_layout(const NetworkSpec& spec);

}  // namespace epochcast
