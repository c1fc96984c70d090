// What the CPU backend's own kernels (kernels.cpp, batch_norm_kernels.cpp) share: the nChw16c
// block, the instruction sets they are compiled for, the split of work over an OpenMP team, and
// the warnings GCC 12's AVX-512 headers raise. Internal to those files; no oneDNN types.
#pragma once

#include <omp.h>

namespace epochcast::cpu::kernel_support {

constexpr int kBlock = 16;  ///< channels per nChw16c block

/// The instruction sets of every vector function of our kernels (callers check
/// cpu_has_avx512_bf16() first).
#define EPOCHCAST_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// GCC 12's AVX-512 headers build some intrinsics from _mm512_undefined_*(), which -Wuninitialized
// reports once inlined (GCC bug 105593); the values are all defined. Wrap code that inlines them.
#define EPOCHCAST_AVX512_WARNINGS_OFF                                                    \
    _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wuninitialized\"") \
        _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#define EPOCHCAST_AVX512_WARNINGS_ON _Pragma("GCC diagnostic pop")

/// Items [begin, end) of `count` for the calling thread of an OpenMP team: contiguous shares
/// whose sizes differ by at most one.
template <typename Int>
struct Share {
    Int begin = 0;
    Int end = 0;
};

template <typename Int>
Share<Int> thread_share(Int count) {
    const Int thread = omp_get_thread_num();
    const Int team = omp_get_num_threads();
    return {count * thread / team, count * (thread + 1) / team};
}

}  // namespace epochcast::cpu::kernel_support
