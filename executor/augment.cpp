#include "executor/augment.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

namespace epochcast {
namespace {

constexpr double kMinCropArea = 0.08, kMaxCropArea = 1.0;
constexpr double kMinAspect = 3.0 / 4.0, kMaxAspect = 4.0 / 3.0;
constexpr int kCropAttempts = 10;
// torchvision.transforms.Normalize values used by the torchvision ImageNet reference training.
constexpr std::array<float, 3> kImageNetMean{0.485f, 0.456f, 0.406f};
constexpr std::array<float, 3> kImageNetStd{0.229f, 0.224f, 0.225f};

/// Taps of a 1-D resampling: output i reads inputs first[i] .. first[i] + count[i] - 1 with
/// weights[i * max_taps ...].
struct Taps {
    int max_taps = 0;
    std::vector<int> first, count;
    std::vector<float> weights;
};

/// Bilinear (triangle filter) from `in_size` to `out_size` samples, widened by the scale factor
/// when shrinking so that every input pixel contributes (antialiasing, as PIL and torchvision's
/// antialias=True do); weights at the edges are renormalised to sum to 1.
void bilinear_taps(int in_size, int out_size, Taps& taps) {
    const double scale = static_cast<double>(in_size) / out_size;
    const double filter_scale = std::max(scale, 1.0);
    const double support = filter_scale;  // the triangle's half-width is 1 input pixel, scaled
    taps.max_taps = static_cast<int>(std::ceil(support)) * 2 + 1;
    taps.first.assign(out_size, 0);
    taps.count.assign(out_size, 0);
    taps.weights.assign(static_cast<std::size_t>(out_size) * taps.max_taps, 0.0f);
    for (int i = 0; i < out_size; ++i) {
        const double centre = (i + 0.5) * scale;
        const int low = std::max(0, static_cast<int>(centre - support + 0.5));
        const int high = std::min(in_size, static_cast<int>(centre + support + 0.5));
        float* w = &taps.weights[static_cast<std::size_t>(i) * taps.max_taps];
        double total = 0;
        for (int k = low; k < high; ++k) {
            const double t = std::abs((k + 0.5 - centre) / filter_scale);
            const double weight = t < 1 ? 1 - t : 0;
            w[k - low] = static_cast<float>(weight);
            total += weight;
        }
        if (total <= 0) {  // cannot happen for in_size >= 1, but never divide by zero
            w[0] = 1, total = 1;
        }
        for (int k = 0; k < high - low; ++k) w[k] = static_cast<float>(w[k] / total);
        taps.first[i] = low;
        taps.count[i] = std::max(1, high - low);
    }
}

}  // namespace

/// torchvision.transforms.RandomResizedCrop.get_params, with the same draws in the same order.
Crop random_resized_crop(int width, int height, Rng& rng) {
    const double area = static_cast<double>(width) * height;
    const double log_min = std::log(kMinAspect), log_max = std::log(kMaxAspect);
    for (int attempt = 0; attempt < kCropAttempts; ++attempt) {
        const double target_area = area * rng.uniform(kMinCropArea, kMaxCropArea);
        const double aspect = std::exp(rng.uniform(log_min, log_max));
        const int w = static_cast<int>(std::lround(std::sqrt(target_area * aspect)));
        const int h = static_cast<int>(std::lround(std::sqrt(target_area / aspect)));
        if (w > 0 && w <= width && h > 0 && h <= height) {
            const int y = static_cast<int>(rng.integer(0, height - h));
            const int x = static_cast<int>(rng.integer(0, width - w));
            return {x, y, w, h};
        }
    }
    // Fallback: the centre crop of the largest box whose aspect ratio is within bounds.
    const double image_aspect = static_cast<double>(width) / height;
    int w = width, h = height;
    if (image_aspect < kMinAspect) h = std::max(1, static_cast<int>(std::lround(w / kMinAspect)));
    else if (image_aspect > kMaxAspect) w = std::max(1, static_cast<int>(std::lround(h * kMaxAspect)));
    return {(width - w) / 2, (height - h) / 2, w, h};
}

/// Resize `crop` of `pixels` to size x size (horizontal pass, then vertical), flip it if asked,
/// and write the normalised planes into out[3][size][size].
void resize_normalise(const Pixels& pixels, const Crop& crop, int size, bool flip, float* out) {
    thread_local Taps columns, rows;
    thread_local std::vector<float> horizontal;  // crop.height x size x 3
    bilinear_taps(crop.width, size, columns);
    bilinear_taps(crop.height, size, rows);
    horizontal.resize(static_cast<std::size_t>(crop.height) * size * 3);
    const int ch = pixels.channels;
    for (int y = 0; y < crop.height; ++y) {
        const std::uint8_t* row =
            pixels.data.data() + (static_cast<std::size_t>(crop.y + y) * pixels.width + crop.x) * ch;
        float* dst = &horizontal[static_cast<std::size_t>(y) * size * 3];
        for (int x = 0; x < size; ++x) {
            const float* w = &columns.weights[static_cast<std::size_t>(x) * columns.max_taps];
            const std::uint8_t* src = row + static_cast<std::size_t>(columns.first[x]) * ch;
            float r = 0, g = 0, b = 0;
            for (int k = 0; k < columns.count[x]; ++k, src += ch) {
                r += w[k] * src[0];
                g += w[k] * src[1];
                b += w[k] * src[2];
            }
            dst[3 * x] = r, dst[3 * x + 1] = g, dst[3 * x + 2] = b;
        }
    }
    std::array<float, 3> gain{}, bias{};
    for (int c = 0; c < 3; ++c) {
        gain[c] = 1.0f / (255.0f * kImageNetStd[c]);
        bias[c] = -kImageNetMean[c] / kImageNetStd[c];
    }
    const std::size_t plane = static_cast<std::size_t>(size) * size;
    for (int y = 0; y < size; ++y) {
        const float* w = &rows.weights[static_cast<std::size_t>(y) * rows.max_taps];
        const float* src = &horizontal[static_cast<std::size_t>(rows.first[y]) * size * 3];
        for (int x = 0; x < size; ++x) {
            float sum[3] = {0, 0, 0};
            const float* s = src + 3 * x;
            for (int k = 0; k < rows.count[y]; ++k, s += static_cast<std::size_t>(size) * 3) {
                sum[0] += w[k] * s[0];
                sum[1] += w[k] * s[1];
                sum[2] += w[k] * s[2];
            }
            const int out_x = flip ? size - 1 - x : x;
            for (int c = 0; c < 3; ++c)
                out[c * plane + static_cast<std::size_t>(y) * size + out_x] = sum[c] * gain[c] + bias[c];
        }
    }
}

}  // namespace epochcast
