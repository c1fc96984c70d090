#include "executor/cuda/synthetic.hpp"

#include <string>

#include "executor/cuda/check.hpp"
#include "executor/cuda/kernels.hpp"

namespace epochcast::cuda {
namespace {

int checked_size(int image_size) {
    if (image_size < 1)
        throw InputError("synthetic data needs an image size of at least 1, got " + std::to_string(image_size));
    return image_size;
}

int checked_capacity(int capacity) {
    if (capacity < 1)
        throw InputError("GPU synthetic batches need a capacity of at least 1, got " + std::to_string(capacity));
    return capacity;
}

}  // namespace

SyntheticBatches::SyntheticBatches(int classes, int image_size, std::uint64_t seed, int capacity)
    : classes_(classes),
      image_size_(checked_size(image_size)),
      seed_(seed),
      capacity_(checked_capacity(capacity)),
      patterns_(sizeof(synthetic::ClassPattern) * static_cast<std::size_t>(classes > 0 ? classes : 0)),
      draws_(sizeof(synthetic::ImageDraw) * static_cast<std::size_t>(capacity)),
      terms_(sizeof(synthetic::WaveTerms) * static_cast<std::size_t>(capacity) * synthetic::kChannels *
             synthetic::kWavesPerChannel * static_cast<std::size_t>(image_size)) {
    const std::vector<synthetic::ClassPattern> patterns = synthetic::class_patterns(classes, seed);  // checks classes
    EPOCHCAST_CUDA_CHECK(cudaMemcpy(patterns_.data(), patterns.data(),
                                    sizeof(synthetic::ClassPattern) * patterns.size(), cudaMemcpyHostToDevice));
    // From pageable memory cudaMemcpy may return before the data lands; kernels run on other streams.
    EPOCHCAST_CUDA_CHECK(cudaDeviceSynchronize());
    host_draws_.reserve(static_cast<std::size_t>(capacity));
    EPOCHCAST_CUDA_CHECK(cudaEventCreateWithFlags(&copied_, cudaEventDisableTiming));
}

SyntheticBatches::~SyntheticBatches() {
    if (copied_) (void)cudaEventDestroy(copied_);
}

void SyntheticBatches::fill(std::int64_t position, int count, float* images, std::int32_t* labels,
                            cudaStream_t stream) {
    if (position < 0) throw InputError("data position must be >= 0, got " + std::to_string(position));
    if (count < 0 || count > capacity_) {
        throw InputError("GPU synthetic batch of " + std::to_string(count) + " images, capacity " +
                         std::to_string(capacity_));
    }
    if (count == 0) return;
    // The previous call's copy of host_draws_ may still be reading it (an asynchronous copy from
    // pageable memory is only documented as "might be synchronous").
    EPOCHCAST_CUDA_CHECK(cudaEventSynchronize(copied_));
    host_draws_.clear();
    for (int i = 0; i < count; ++i)
        host_draws_.push_back(synthetic::image_draw(seed_, classes_, image_size_, position + i));
    EPOCHCAST_CUDA_CHECK(cudaMemcpyAsync(draws_.data(), host_draws_.data(),
                                         sizeof(synthetic::ImageDraw) * host_draws_.size(), cudaMemcpyHostToDevice,
                                         stream));
    EPOCHCAST_CUDA_CHECK(cudaEventRecord(copied_, stream));
    synthetic_images(static_cast<const synthetic::ClassPattern*>(patterns_.data()),
                     static_cast<const synthetic::ImageDraw*>(draws_.data()), count, image_size_,
                     static_cast<synthetic::WaveTerms*>(terms_.data()), images, labels, stream);
}

}  // namespace epochcast::cuda
