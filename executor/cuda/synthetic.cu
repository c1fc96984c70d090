// The GPU side of executor/cuda/synthetic.hpp: the per-pixel loop of the host's synthetic dataset
// (executor/synthetic_data.cpp), one thread per value. Every formula is executor/synthetic.hpp's; this
// file is compiled with --fmad=false (executor/CMakeLists.txt) so that nvcc keeps the host's rounding
// order instead of fusing multiplies and adds.
#include "executor/cuda/kernels.hpp"
#include "executor/cuda/launch.cuh"

namespace epochcast::cuda {
namespace {

using synthetic::kChannels;
using synthetic::kWavesPerChannel;

/// terms[((image * 3 + channel) * waves + wave) * size + j]: the row and column tables of every
/// wave of every image (what the host builds per image before its pixel loop); labels too.
__global__ void synthetic_terms_kernel(const synthetic::ClassPattern* patterns, const synthetic::ImageDraw* draws,
                                       int count, int size, synthetic::WaveTerms* terms, std::int32_t* labels) {
    const std::int64_t total = std::int64_t(count) * kChannels * kWavesPerChannel * size;
    for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < total;
         t += std::int64_t(gridDim.x) * blockDim.x) {
        const int j = int(t % size);
        std::int64_t rest = t / size;
        const int wave = int(rest % kWavesPerChannel);
        rest /= kWavesPerChannel;
        const int channel = int(rest % kChannels);
        const int image = int(rest / kChannels);
        const synthetic::ImageDraw& draw = draws[image];
        terms[t] =
            synthetic::wave_terms(patterns[draw.label].waves[channel][wave], size, draw.shift_x, draw.shift_y, j);
        if (j == 0 && wave == 0 && channel == 0) labels[image] = draw.label;
    }
}

/// One value of images (NCHW): the class's offset, its waves in order, then the noise.
__global__ void synthetic_pixels_kernel(const synthetic::ClassPattern* patterns, const synthetic::ImageDraw* draws,
                                        int count, int size, const synthetic::WaveTerms* terms, float* images) {
    const std::int64_t plane = std::int64_t(size) * size;
    const std::int64_t total = std::int64_t(count) * kChannels * plane;
    for (std::int64_t o = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; o < total;
         o += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t pixel = o % plane;
        const std::int64_t rest = o / plane;
        const int channel = int(rest % kChannels);
        const int image = int(rest / kChannels);
        const int x = int(pixel % size);
        const int y = int(pixel / size);
        const synthetic::ImageDraw& draw = draws[image];
        float value = static_cast<float>(patterns[draw.label].offset[channel]);
        const synthetic::WaveTerms* table =
            terms + (std::int64_t(image) * kChannels + channel) * kWavesPerChannel * size;
        for (int wave = 0; wave < kWavesPerChannel; ++wave) {
            value =
                synthetic::add_wave(value, table[std::int64_t(wave) * size + x], table[std::int64_t(wave) * size + y]);
        }
        images[o] = synthetic::add_noise(value, draw, size, channel, pixel);
    }
}

}  // namespace

void synthetic_images(const synthetic::ClassPattern* patterns, const synthetic::ImageDraw* draws, int count, int size,
                      synthetic::WaveTerms* terms, float* images, std::int32_t* labels, cudaStream_t stream) {
    const std::int64_t term_count = std::int64_t(count) * kChannels * kWavesPerChannel * size;
    synthetic_terms_kernel<<<blocks_for(term_count), kThreads, 0, stream>>>(patterns, draws, count, size, terms,
                                                                            labels);
    EPOCHCAST_LAUNCHED(synthetic_terms_kernel);
    const std::int64_t value_count = std::int64_t(count) * kChannels * size * size;
    synthetic_pixels_kernel<<<blocks_for(value_count), kThreads, 0, stream>>>(patterns, draws, count, size, terms,
                                                                              images);
    EPOCHCAST_LAUNCHED(synthetic_pixels_kernel);
}

}  // namespace epochcast::cuda
