// Check macros for CUDA runtime, cuDNN, cuBLAS and NCCL calls (docs/architecture.md, "Errors"): a failed call
// throws RunError naming the call, the library's own error string, and the file and line.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>

#include "model/errors.hpp"

namespace epochcast::cuda {

[[noreturn]] void throw_call_error(const char* library, const char* call, const std::string& what, const char* file,
                                   int line);

/// GPUs this process can use; 0 when there is no driver or no device (never throws, so that tests
/// and `--backend cuda` can say so cleanly on a machine without a GPU).
int visible_gpus();

}  // namespace epochcast::cuda

#define EPOCHCAST_CUDA_CHECK(call)                                                                              \
    do {                                                                                                        \
        const cudaError_t epochcast_status_ = (call);                                                           \
        if (epochcast_status_ != cudaSuccess)                                                                   \
            ::epochcast::cuda::throw_call_error("CUDA", #call, cudaGetErrorString(epochcast_status_), __FILE__, \
                                                __LINE__);                                                      \
    } while (0)

#define EPOCHCAST_CUDNN_CHECK(call)                                                                               \
    do {                                                                                                          \
        const cudnnStatus_t epochcast_status_ = (call);                                                           \
        if (epochcast_status_ != CUDNN_STATUS_SUCCESS)                                                            \
            ::epochcast::cuda::throw_call_error("cuDNN", #call, cudnnGetErrorString(epochcast_status_), __FILE__, \
                                                __LINE__);                                                        \
    } while (0)

#define EPOCHCAST_CUBLAS_CHECK(call)                                                                                 \
    do {                                                                                                             \
        const cublasStatus_t epochcast_status_ = (call);                                                             \
        if (epochcast_status_ != CUBLAS_STATUS_SUCCESS)                                                              \
            ::epochcast::cuda::throw_call_error("cuBLAS", #call, cublasGetStatusString(epochcast_status_), __FILE__, \
                                                __LINE__);                                                           \
    } while (0)

#define EPOCHCAST_NCCL_CHECK(call)                                                                              \
    do {                                                                                                        \
        const ncclResult_t epochcast_status_ = (call);                                                          \
        if (epochcast_status_ != ncclSuccess)                                                                   \
            ::epochcast::cuda::throw_call_error("NCCL", #call, ncclGetErrorString(epochcast_status_), __FILE__, \
                                                __LINE__);                                                      \
    } while (0)
