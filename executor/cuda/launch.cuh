// Launch helpers shared by the CUDA backend's kernel files (kernels.cu, synthetic.cu): grid-stride
// loops of kThreads a block, and a launch check that throws RunError as the check macros do.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace epochcast::cuda {

// Defined in layers.cpp (host C++20): RunError with file and line, as the check macros throw.
[[noreturn]] void throw_call_error(const char* library, const char* call, const std::string& what, const char* file,
                                   int line);

constexpr int kThreads = 256;

inline void check_launch(const char* kernel, const char* file, int line) {
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) throw_call_error("CUDA", kernel, cudaGetErrorString(status), file, line);
}
#define EPOCHCAST_LAUNCHED(kernel) ::epochcast::cuda::check_launch(#kernel, __FILE__, __LINE__)

/// Blocks of a grid-stride loop over `count` elements (at least 1, at most 4096).
inline int blocks_for(std::int64_t count) {
    const std::int64_t blocks = (count + kThreads - 1) / kThreads;
    return static_cast<int>(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

}  // namespace epochcast::cuda
