#pragma once
// bf16 as raw 16-bit words: the rounding the gradient exchange uses (executor/cpu/exchange.hpp) and
// its array forms. The array forms are the all-reduce's arithmetic per step (ResNet-50: 25.6 M
// gradients rounded and summed on every rank), so they are written branch-free for the compiler to
// vectorise and built for AVX-512, AVX2 and plain x86-64 (chosen at load time).

#include <bit>
#include <cstdint>

namespace epochcast {

/// bf16 of a float, rounded to nearest even (NaN stays a quiet NaN), as the raw 16 bits.
inline std::uint16_t to_bf16_bits(float value) {
    const auto bits = std::bit_cast<std::uint32_t>(value);
    const std::uint32_t rounded = (bits + 0x7fffU + ((bits >> 16) & 1U)) >> 16;
    const std::uint32_t quiet_nan = (bits >> 16) | 0x0040U;
    const bool is_nan = (bits & 0x7fffffffU) > 0x7f800000U;
    return static_cast<std::uint16_t>(is_nan ? quiet_nan : rounded);
}

/// The float that bf16 bits stand for (exact).
inline float from_bf16_bits(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

/// out[i] = to_bf16_bits(in[i]) for i < count.
void round_to_bf16(const float* in, std::uint16_t* out, std::int64_t count);

/// inout[i] = bf16(fp32(in[i]) + fp32(inout[i])): a pairwise sum rounded once.
void add_bf16(const std::uint16_t* in, std::uint16_t* inout, std::int64_t count);

}  // namespace epochcast
