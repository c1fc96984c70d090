// The CUDA backend's own kernels (executor/cuda/kernels.cu): the element-wise work cuDNN and cuBLAS
// do not cover. Every function enqueues on `stream` and returns at once; pointers are device
// memory. "Working" tensors are of the network's compute type (fp16 for amp, fp32 otherwise).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "executor/synthetic.hpp"

namespace epochcast::cuda {

/// Storage type of activations, working weights and working gradients.
enum class DataType { fp32, fp16 };

/// Bytes of one element of `type`.
inline int element_bytes(DataType type) { return type == DataType::fp16 ? 2 : 4; }

/// images: N x C x H x W fp32 (the caller's layout) -> out: N x H x W x C working (cuDNN's NHWC).
void images_to_nhwc(const float* images, void* out, DataType type, int n, int c, int h, int w, cudaStream_t stream);

/// Master fp32 O x I x K x K (plain) -> working O x K x K x I (cuDNN's NHWC filter), cast.
/// K = 1 and I = elements, O = 1 copies a vector (fc weight rows, biases).
void master_to_working(const float* master, void* working, DataType type, int o, int i, int k, cudaStream_t stream);

/// Working O x K x K x I gradient -> master fp32 O x I x K x K, times `scale` (1 / loss scale).
/// Sets *overflow to 1 when any element is inf or NaN.
void working_to_master(const void* working, float* master, DataType type, int o, int i, int k, float scale,
                       int* overflow, cudaStream_t stream);

/// out[i] = (working) values[i] for i < count (fp32 batch-norm gradients into the working arena).
void cast_to_working(const float* values, void* out, DataType type, std::int64_t count, cudaStream_t stream);

/// y = a + b, count elements of `type`.
void add(const void* a, const void* b, void* y, DataType type, std::int64_t count, cudaStream_t stream);
/// y += x, count elements of `type`.
void accumulate(const void* x, void* y, DataType type, std::int64_t count, cudaStream_t stream);

/// logits (N x classes fp32, row-major) += bias (classes fp32) on every row.
void add_bias(float* logits, const float* bias, int n, int classes, cudaStream_t stream);
/// bias_grad[j] = sum over rows of logits_grad[row][j] (N x classes working) -> classes working.
void bias_gradient(const void* logits_grad, void* bias_grad, DataType type, int n, int classes, cudaStream_t stream);

/// Softmax cross-entropy of each row. logits: N x classes fp32; labels: N in [0, classes).
/// losses (out): N fp32, -log softmax(logits)[label]; logits_grad (out): N x classes working,
/// (softmax - onehot) * grad_scale (grad_scale = loss scale / N for the mean loss).
/// Sets *bad_label to 1 for a label outside [0, classes).
void softmax_cross_entropy(const float* logits, const std::int32_t* labels, int n, int classes, float grad_scale,
                           float* losses, void* logits_grad, DataType type, int* bad_label, cudaStream_t stream);

/// SGD with Nesterov momentum, the formula of executor/optimizer.hpp, on fp32 device arrays.
void sgd_nesterov(float* weights, const float* gradients, float* momentum, const float* decay_mask, std::int64_t count,
                  float lr, float momentum_factor, float weight_decay, cudaStream_t stream);

/// Synthetic images (executor/synthetic.hpp) of `count` positions, in synthetic.cu (built without
/// FMA contraction, so its arithmetic is the host's). patterns: the dataset's class patterns;
/// draws: count per-image parameters; terms: scratch of count x 3 x waves x size entries.
/// images (out): count x 3 x size x size fp32 NCHW; labels (out): count.
void synthetic_images(const synthetic::ClassPattern* patterns, const synthetic::ImageDraw* draws, int count, int size,
                      synthetic::WaveTerms* terms, float* images, std::int32_t* labels, cudaStream_t stream);

}  // namespace epochcast::cuda
