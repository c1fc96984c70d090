#include "executor/bf16.hpp"

namespace epochcast {

// One clone per vector width; the loader picks the widest the CPU runs (GCC's target_clones).
#define EPOCHCAST_VECTOR_CLONES [[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]]

EPOCHCAST_VECTOR_CLONES
void round_to_bf16(const float* in, std::uint16_t* out, std::int64_t count) {
    for (std::int64_t i = 0; i < count; ++i) {
        out[i] = to_bf16_bits(in[i]);
    }
}

EPOCHCAST_VECTOR_CLONES
void add_bf16(const std::uint16_t* in, std::uint16_t* inout, std::int64_t count) {
    for (std::int64_t i = 0; i < count; ++i) {
        inout[i] = to_bf16_bits(from_bf16_bits(in[i]) + from_bf16_bits(inout[i]));
    }
}

#undef EPOCHCAST_VECTOR_CLONES

}  // namespace epochcast
