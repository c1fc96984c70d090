// The synthetic dataset's definition (executor/data.hpp, make_synthetic_data), shared by the host
// dataset (executor/synthetic_data.cpp) and the CUDA backend's GPU generator
// (executor/cuda/synthetic.cu), so that both draw the same image for the same (seed, global position).
//
// Each class has, per channel, a constant colour offset and two plane waves with integer
// frequencies (1 to 3 cycles per image across, 0 to 3 down), phases and signs of its own. An image
// is its class's pattern shifted by up to 1/16 of the side in each direction, plus per-pixel noise.
// Variance per value: offsets 1/12 + waves 2 * 0.7^2 / 2 + noise 0.6^2, about 0.93, mean about 0,
// so values are roughly standardised like a normalised photograph.
//
// The host derives the parameters (class_patterns, image_draw: seeded, a few per class or image);
// the per-pixel arithmetic is the inline functions below, compiled for host and device alike. The
// order of every float and double operation is written out here and neither compiler may contract
// it into fused multiply-adds (the host is built without -ffp-contract=fast, synthetic.cu with
// --fmad=false), so a GPU value differs from the host's only where CUDA's double sin/cos (2 ulp)
// and glibc's (< 1 ulp) round to different floats: a few float ulps, far below 1e-5.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#if defined(__CUDACC__)
#define EPOCHCAST_HOST_DEVICE __host__ __device__
#else
#define EPOCHCAST_HOST_DEVICE
#endif

namespace epochcast::synthetic {

constexpr int kChannels = 3;
constexpr int kWavesPerChannel = 2;
constexpr double kWaveAmplitude = 0.7;
constexpr float kNoiseSigma = 0.6f;
constexpr double kMaxShiftFraction = 1.0 / 16.0;
constexpr double kTwoPi = 6.283185307179586;  ///< 2 pi rounded to double (exactly 2 * std::numbers::pi)
constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

/// One plane wave of a class pattern.
struct Wave {
    double cycles_x = 0, cycles_y = 0;  ///< cycles per image side
    double phase = 0;                   ///< radians
};

/// A class's pattern. Plain arrays, so that device code can index them.
struct ClassPattern {
    double offset[kChannels] = {};
    Wave waves[kChannels][kWavesPerChannel] = {};
};

/// What one image (one global position) draws besides its class's pattern.
struct ImageDraw {
    std::int32_t label = 0;           ///< in [0, classes)
    double shift_x = 0, shift_y = 0;  ///< pattern shift, in pixels
    std::uint64_t noise_state = 0;    ///< state of the image's generator: draw i is draw(noise_state, i)
};

/// The class patterns of a dataset, class c at index c (host). Throws InputError for classes < 1.
std::vector<ClassPattern> class_patterns(int classes, std::uint64_t seed);
/// Label, shift and noise generator of the image at global `position` (host).
ImageDraw image_draw(std::uint64_t seed, int classes, int image_size, std::int64_t position);

/// splitmix64's output function (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014).
EPOCHCAST_HOST_DEVICE inline std::uint64_t splitmix64(std::uint64_t z) {
    z += kGolden;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// Draw `index` (from 0) of the splitmix64 generator started at `state`: the generator adds the
/// golden ratio to its state before each output, so any draw is reachable at once.
EPOCHCAST_HOST_DEVICE inline std::uint64_t draw(std::uint64_t state, std::uint64_t index) {
    return splitmix64(state + (index + 1) * kGolden);
}

/// Approximately standard normal from 64 random bits: the Irwin-Hall sum of four 16-bit uniforms,
/// rescaled (variance of four U(0,1) is 1/3). The tails stop at +-3.46.
EPOCHCAST_HOST_DEVICE inline float normal(std::uint64_t bits) {
    const std::uint64_t sum = (bits & 0xffff) + ((bits >> 16) & 0xffff) + ((bits >> 32) & 0xffff) + (bits >> 48);
    return (static_cast<float>(sum) * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
}

/// One wave's contribution separates as sin(a + b) = sin a cos b + cos a sin b: a row table
/// (amplitude sin a, amplitude cos a over x) and a column table (cos b, sin b over y).
struct WaveTerms {
    float sin_x = 0, cos_x = 0;  ///< amplitude * sin a, amplitude * cos a at column j
    float sin_y = 0, cos_y = 0;  ///< sin b, cos b at row j
};

/// The table entries of `wave` at column and row j of an image of side `size` shifted by
/// (shift_x, shift_y) pixels.
EPOCHCAST_HOST_DEVICE inline WaveTerms wave_terms(const Wave& wave, int size, double shift_x, double shift_y, int j) {
    const double step_x = kTwoPi * wave.cycles_x / size;
    const double step_y = kTwoPi * wave.cycles_y / size;
    const double a = step_x * (j + 0.5 + shift_x) + wave.phase;
    const double b = step_y * (j + 0.5 + shift_y);
    WaveTerms terms;
    terms.sin_x = static_cast<float>(kWaveAmplitude * ::sin(a));
    terms.cos_x = static_cast<float>(kWaveAmplitude * ::cos(a));
    terms.sin_y = static_cast<float>(::sin(b));
    terms.cos_y = static_cast<float>(::cos(b));
    return terms;
}

/// `value` plus one wave at the pixel whose column's terms are `x` and row's terms are `y`.
EPOCHCAST_HOST_DEVICE inline float add_wave(float value, const WaveTerms& x, const WaveTerms& y) {
    return value + (x.sin_x * y.cos_y + x.cos_x * y.sin_y);
}

/// `value` plus the noise of pixel `pixel` (y * size + x) of `channel`: draws 0 and 1 were the
/// shifts, then each channel's plane in turn.
EPOCHCAST_HOST_DEVICE inline float add_noise(float value, const ImageDraw& image, int size, int channel,
                                             std::int64_t pixel) {
    const std::uint64_t index =
        2 + static_cast<std::uint64_t>(channel) * size * size + static_cast<std::uint64_t>(pixel);
    return value + kNoiseSigma * normal(draw(image.noise_state, index));
}

}  // namespace epochcast::synthetic
