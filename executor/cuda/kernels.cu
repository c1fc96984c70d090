// The CUDA backend's element-wise kernels (see kernels.hpp). Grid-stride loops, 256 threads a block;
// each public function dispatches on the working type (float or __half) and checks the launch.
#include <cuda_fp16.h>

#include <cmath>
#include <string>

#include "executor/cuda/kernels.hpp"
#include "executor/cuda/launch.cuh"

namespace epochcast::cuda {

namespace {

__device__ inline float to_float(float x) { return x; }
__device__ inline float to_float(__half x) { return __half2float(x); }
template <typename T>
__device__ inline T from_float(float x);
template <>
__device__ inline float from_float<float>(float x) {
    return x;
}
template <>
__device__ inline __half from_float<__half>(float x) {
    return __float2half_rn(x);
}

template <typename T>
__global__ void images_to_nhwc_kernel(const float* images, T* out, int n, int c, int h, int w) {
    const std::int64_t count = std::int64_t(n) * c * h * w;
    for (std::int64_t o = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; o < count;
         o += std::int64_t(gridDim.x) * blockDim.x) {
        // o indexes NHWC: ((b * h + y) * w + x) * c + ch
        const int ch = int(o % c);
        std::int64_t rest = o / c;
        const int x = int(rest % w);
        rest /= w;
        const int y = int(rest % h);
        const std::int64_t b = rest / h;
        out[o] = from_float<T>(images[((b * c + ch) * h + y) * w + x]);
    }
}

template <typename T>
__global__ void master_to_working_kernel(const float* master, T* working, int o, int i, int kk) {
    const std::int64_t count = std::int64_t(o) * i * kk;
    for (std::int64_t d = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; d < count;
         d += std::int64_t(gridDim.x) * blockDim.x) {
        // d indexes O x (K K) x I; the source is O x I x (K K).
        const int in = int(d % i);
        const std::int64_t rest = d / i;
        const int spatial = int(rest % kk);
        const std::int64_t out = rest / kk;
        working[d] = from_float<T>(master[(out * i + in) * kk + spatial]);
    }
}

template <typename T>
__global__ void working_to_master_kernel(const T* working, float* master, int o, int i, int kk, float scale,
                                         int* overflow) {
    const std::int64_t count = std::int64_t(o) * i * kk;
    for (std::int64_t m = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; m < count;
         m += std::int64_t(gridDim.x) * blockDim.x) {
        // m indexes O x I x (K K); the source is O x (K K) x I.
        const int spatial = int(m % kk);
        const std::int64_t rest = m / kk;
        const int in = int(rest % i);
        const std::int64_t out = rest / i;
        const float value = to_float(working[(out * kk + spatial) * i + in]);
        if (!isfinite(value)) *overflow = 1;
        master[m] = value * scale;
    }
}

template <typename T>
__global__ void cast_kernel(const float* values, T* out, std::int64_t count) {
    for (std::int64_t k = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; k < count;
         k += std::int64_t(gridDim.x) * blockDim.x) {
        out[k] = from_float<T>(values[k]);
    }
}

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* y, std::int64_t count) {
    for (std::int64_t k = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; k < count;
         k += std::int64_t(gridDim.x) * blockDim.x) {
        y[k] = from_float<T>(to_float(a[k]) + to_float(b[k]));
    }
}

__global__ void add_bias_kernel(float* logits, const float* bias, int n, int classes) {
    const std::int64_t count = std::int64_t(n) * classes;
    for (std::int64_t k = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; k < count;
         k += std::int64_t(gridDim.x) * blockDim.x) {
        logits[k] += bias[k % classes];
    }
}

template <typename T>
__global__ void bias_gradient_kernel(const T* logits_grad, T* bias_grad, int n, int classes) {
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < classes; j += gridDim.x * blockDim.x) {
        float sum = 0;
        for (int row = 0; row < n; ++row) sum += to_float(logits_grad[std::int64_t(row) * classes + j]);
        bias_grad[j] = from_float<T>(sum);
    }
}

/// One block per row: max, sum of exponentials, loss and gradient.
template <typename T>
__global__ void softmax_cross_entropy_kernel(const float* logits, const std::int32_t* labels, int classes,
                                             float grad_scale, float* losses, T* logits_grad, int* bad_label) {
    __shared__ float reduce[kThreads];
    const int row = blockIdx.x;
    const float* z = logits + std::int64_t(row) * classes;
    float local_max = -INFINITY;
    for (int j = threadIdx.x; j < classes; j += blockDim.x) local_max = fmaxf(local_max, z[j]);
    reduce[threadIdx.x] = local_max;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) reduce[threadIdx.x] = fmaxf(reduce[threadIdx.x], reduce[threadIdx.x + stride]);
        __syncthreads();
    }
    const float maximum = reduce[0];
    __syncthreads();
    float local_sum = 0;
    for (int j = threadIdx.x; j < classes; j += blockDim.x) local_sum += expf(z[j] - maximum);
    reduce[threadIdx.x] = local_sum;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) reduce[threadIdx.x] += reduce[threadIdx.x + stride];
        __syncthreads();
    }
    const float sum = reduce[0];
    const int label = labels[row];
    const bool valid = label >= 0 && label < classes;
    if (threadIdx.x == 0) {
        if (!valid) *bad_label = 1;
        losses[row] = valid ? logf(sum) - (z[label] - maximum) : 0.0f;
    }
    for (int j = threadIdx.x; j < classes; j += blockDim.x) {
        const float probability = expf(z[j] - maximum) / sum;
        logits_grad[std::int64_t(row) * classes + j] =
            from_float<T>((probability - (j == label ? 1.0f : 0.0f)) * grad_scale);
    }
}

__global__ void sgd_nesterov_kernel(float* weights, const float* gradients, float* momentum, const float* decay_mask,
                                    std::int64_t count, float lr, float mu, float wd) {
    for (std::int64_t k = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; k < count;
         k += std::int64_t(gridDim.x) * blockDim.x) {
        const float d = gradients[k] + wd * decay_mask[k] * weights[k];
        const float v = mu * momentum[k] + d;
        momentum[k] = v;
        weights[k] -= lr * (d + mu * v);
    }
}

}  // namespace

void images_to_nhwc(const float* images, void* out, DataType type, int n, int c, int h, int w, cudaStream_t stream) {
    const int blocks = blocks_for(std::int64_t(n) * c * h * w);
    if (type == DataType::fp16) {
        images_to_nhwc_kernel<<<blocks, kThreads, 0, stream>>>(images, static_cast<__half*>(out), n, c, h, w);
    } else {
        images_to_nhwc_kernel<<<blocks, kThreads, 0, stream>>>(images, static_cast<float*>(out), n, c, h, w);
    }
    EPOCHCAST_LAUNCHED(images_to_nhwc_kernel);
}

void master_to_working(const float* master, void* working, DataType type, int o, int i, int k, cudaStream_t stream) {
    const int blocks = blocks_for(std::int64_t(o) * i * k * k);
    if (type == DataType::fp16) {
        master_to_working_kernel<<<blocks, kThreads, 0, stream>>>(master, static_cast<__half*>(working), o, i, k * k);
    } else {
        master_to_working_kernel<<<blocks, kThreads, 0, stream>>>(master, static_cast<float*>(working), o, i, k * k);
    }
    EPOCHCAST_LAUNCHED(master_to_working_kernel);
}

void working_to_master(const void* working, float* master, DataType type, int o, int i, int k, float scale,
                       int* overflow, cudaStream_t stream) {
    const int blocks = blocks_for(std::int64_t(o) * i * k * k);
    if (type == DataType::fp16) {
        working_to_master_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const __half*>(working), master, o, i,
                                                                  k * k, scale, overflow);
    } else {
        working_to_master_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(working), master, o, i,
                                                                  k * k, scale, overflow);
    }
    EPOCHCAST_LAUNCHED(working_to_master_kernel);
}

void cast_to_working(const float* values, void* out, DataType type, std::int64_t count, cudaStream_t stream) {
    if (type == DataType::fp16) {
        cast_kernel<<<blocks_for(count), kThreads, 0, stream>>>(values, static_cast<__half*>(out), count);
    } else {
        cast_kernel<<<blocks_for(count), kThreads, 0, stream>>>(values, static_cast<float*>(out), count);
    }
    EPOCHCAST_LAUNCHED(cast_kernel);
}

void add(const void* a, const void* b, void* y, DataType type, std::int64_t count, cudaStream_t stream) {
    if (type == DataType::fp16) {
        add_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
            static_cast<const __half*>(a), static_cast<const __half*>(b), static_cast<__half*>(y), count);
    } else {
        add_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
            static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(y), count);
    }
    EPOCHCAST_LAUNCHED(add_kernel);
}

void accumulate(const void* x, void* y, DataType type, std::int64_t count, cudaStream_t stream) {
    add(x, y, y, type, count, stream);
}

void add_bias(float* logits, const float* bias, int n, int classes, cudaStream_t stream) {
    add_bias_kernel<<<blocks_for(std::int64_t(n) * classes), kThreads, 0, stream>>>(logits, bias, n, classes);
    EPOCHCAST_LAUNCHED(add_bias_kernel);
}

void bias_gradient(const void* logits_grad, void* bias_grad, DataType type, int n, int classes, cudaStream_t stream) {
    if (type == DataType::fp16) {
        bias_gradient_kernel<<<blocks_for(classes), kThreads, 0, stream>>>(static_cast<const __half*>(logits_grad),
                                                                           static_cast<__half*>(bias_grad), n, classes);
    } else {
        bias_gradient_kernel<<<blocks_for(classes), kThreads, 0, stream>>>(static_cast<const float*>(logits_grad),
                                                                           static_cast<float*>(bias_grad), n, classes);
    }
    EPOCHCAST_LAUNCHED(bias_gradient_kernel);
}

void softmax_cross_entropy(const float* logits, const std::int32_t* labels, int n, int classes, float grad_scale,
                           float* losses, void* logits_grad, DataType type, int* bad_label, cudaStream_t stream) {
    if (type == DataType::fp16) {
        softmax_cross_entropy_kernel<<<n, kThreads, 0, stream>>>(logits, labels, classes, grad_scale, losses,
                                                                 static_cast<__half*>(logits_grad), bad_label);
    } else {
        softmax_cross_entropy_kernel<<<n, kThreads, 0, stream>>>(logits, labels, classes, grad_scale, losses,
                                                                 static_cast<float*>(logits_grad), bad_label);
    }
    EPOCHCAST_LAUNCHED(softmax_cross_entropy_kernel);
}

void sgd_nesterov(float* weights, const float* gradients, float* momentum, const float* decay_mask, std::int64_t count,
                  float lr, float momentum_factor, float weight_decay, cudaStream_t stream) {
    sgd_nesterov_kernel<<<blocks_for(count), kThreads, 0, stream>>>(weights, gradients, momentum, decay_mask, count, lr,
                                                                    momentum_factor, weight_decay);
    EPOCHCAST_LAUNCHED(sgd_nesterov_kernel);
}

}  // namespace epochcast::cuda
