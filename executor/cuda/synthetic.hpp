// The synthetic dataset (executor/data.hpp's make_synthetic_data) generated on the GPU, so that a
// CUDA rank training on synthetic data copies no images from the host. The images and labels are
// the host dataset's for the same (seed, position) (executor/synthetic.hpp holds the one
// definition both use): labels equal, pixel values within a few float ulps (test: 1e-5 absolute,
// tests/executor/test_cuda_synthetic.cpp).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "executor/cuda/layers.hpp"
#include "executor/synthetic.hpp"

namespace epochcast::cuda {

class SyntheticBatches {
public:
    /// The batches of make_synthetic_data(classes, image_size, any epoch length, seed), at most
    /// `capacity` images a call, on the current GPU. Throws InputError for classes, image size or
    /// capacity below 1; RunError when a CUDA call fails.
    SyntheticBatches(int classes, int image_size, std::uint64_t seed, int capacity);
    ~SyntheticBatches();
    SyntheticBatches(const SyntheticBatches&) = delete;
    SyntheticBatches& operator=(const SyntheticBatches&) = delete;

    /// Enqueues on `stream` the images of global positions [position, position + count):
    ///   images: count x 3 x image_size x image_size fp32 NCHW, device memory
    ///   labels: count int32 in [0, classes), device memory
    /// The images' parameters are derived on the host and their copy enqueued; the pixels are made
    /// by kernels later. Calls must share one stream (they share a parameter buffer on the device).
    /// Throws InputError for a negative position, or a count below 0 or above the capacity.
    void fill(std::int64_t position, int count, float* images, std::int32_t* labels, cudaStream_t stream);

    int classes() const { return classes_; }
    int image_size() const { return image_size_; }

private:
    int classes_;
    int image_size_;
    std::uint64_t seed_;
    int capacity_;
    DeviceBuffer patterns_;                         ///< classes ClassPattern
    DeviceBuffer draws_;                            ///< capacity ImageDraw
    DeviceBuffer terms_;                            ///< capacity x 3 x waves x image_size WaveTerms (scratch)
    std::vector<synthetic::ImageDraw> host_draws_;  ///< read by the last enqueued copy
    cudaEvent_t copied_ = nullptr;                  ///< recorded after that copy
};

}  // namespace epochcast::cuda
