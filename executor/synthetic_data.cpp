// The synthetic dataset (executor/data.hpp's make_synthetic_data): the definition is
// executor/synthetic.hpp's, shared with the CUDA backend's GPU generator; this is the host's side,
// the seeded parameters (class_patterns, image_draw) and the per-pixel loop.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "executor/data.hpp"
#include "executor/seeded_random.hpp"
#include "executor/synthetic.hpp"
#include "model/errors.hpp"

namespace epochcast {
namespace {

void check_classes(int classes) {
    if (classes < 1) throw InputError("synthetic data needs at least 1 class, got " + std::to_string(classes));
}

class SyntheticData final : public DataSource {
public:
    SyntheticData(int classes, int image_size, std::int64_t images_per_epoch, std::uint64_t seed)
        : classes_(classes),
          image_size_(image_size),
          images_per_epoch_(images_per_epoch),
          seed_(seed),
          patterns_(synthetic::class_patterns(classes, seed)) {}

    int classes() const override { return classes_; }
    std::int64_t images() const override { return images_per_epoch_; }
    int image_size() const override { return image_size_; }
    std::string description() const override { return "synthetic"; }

    void fill_into(std::int64_t position, int count, float* images, std::int32_t* labels) const override {
        check_fill_arguments(position, count);
        const std::size_t plane = static_cast<std::size_t>(image_size_) * image_size_;
        for (int i = 0; i < count; ++i) {
            const synthetic::ImageDraw image = synthetic::image_draw(seed_, classes_, image_size_, position + i);
            labels[i] = image.label;
            draw_image(patterns_[image.label], image, images + i * 3 * plane);
        }
    }

private:
    /// One image, 3 x S x S, into `out`: each wave's row and column tables once, then a few
    /// multiply-adds per pixel.
    void draw_image(const synthetic::ClassPattern& pattern, const synthetic::ImageDraw& image, float* out) const {
        const int s = image_size_;
        thread_local std::vector<synthetic::WaveTerms> terms;
        terms.resize(static_cast<std::size_t>(s));
        for (int channel = 0; channel < synthetic::kChannels; ++channel) {
            float* plane = out + static_cast<std::size_t>(channel) * s * s;
            std::fill(plane, plane + static_cast<std::size_t>(s) * s, static_cast<float>(pattern.offset[channel]));
            for (const synthetic::Wave& wave : pattern.waves[channel]) {
                for (int j = 0; j < s; ++j) terms[j] = synthetic::wave_terms(wave, s, image.shift_x, image.shift_y, j);
                for (int y = 0; y < s; ++y) {
                    float* row = plane + static_cast<std::size_t>(y) * s;
                    for (int x = 0; x < s; ++x) row[x] = synthetic::add_wave(row[x], terms[x], terms[y]);
                }
            }
            for (std::int64_t k = 0; k < std::int64_t{s} * s; ++k) {
                plane[k] = synthetic::add_noise(plane[k], image, s, channel, k);
            }
        }
    }

    int classes_;
    int image_size_;
    std::int64_t images_per_epoch_;
    std::uint64_t seed_;
    std::vector<synthetic::ClassPattern> patterns_;
};

}  // namespace

namespace synthetic {

std::vector<ClassPattern> class_patterns(int classes, std::uint64_t seed) {
    check_classes(classes);
    std::vector<ClassPattern> patterns(static_cast<std::size_t>(classes));
    for (int c = 0; c < classes; ++c) {
        Rng rng(hash_of(seed, Stream::class_pattern, static_cast<std::uint64_t>(c)));
        ClassPattern& pattern = patterns[static_cast<std::size_t>(c)];
        for (int channel = 0; channel < kChannels; ++channel) {
            pattern.offset[channel] = rng.uniform(-0.5, 0.5);
            for (Wave& wave : pattern.waves[channel]) {
                wave.cycles_x = static_cast<double>(rng.integer(1, 3)) * (rng.uniform() < 0.5 ? -1 : 1);
                wave.cycles_y = static_cast<double>(rng.integer(0, 3));
                wave.phase = rng.uniform(0, kTwoPi);
            }
        }
    }
    return patterns;
}

ImageDraw image_draw(std::uint64_t seed, int classes, int image_size, std::int64_t position) {
    const auto p = static_cast<std::uint64_t>(position);
    ImageDraw image;
    image.label = static_cast<std::int32_t>(hash_of(seed, Stream::label, p) % static_cast<std::uint64_t>(classes));
    image.noise_state = hash_of(seed, Stream::image, p);
    Rng rng(image.noise_state);
    const double max_shift = kMaxShiftFraction * image_size;
    image.shift_x = rng.uniform(-max_shift, max_shift);
    image.shift_y = rng.uniform(-max_shift, max_shift);
    return image;
}

}  // namespace synthetic

std::unique_ptr<DataSource> make_synthetic_data(int classes, int image_size, std::int64_t images_per_epoch,
                                                std::uint64_t seed) {
    check_classes(classes);
    check_image_size(image_size);
    if (images_per_epoch < 1)
        throw InputError("synthetic data needs a positive epoch length, got " + std::to_string(images_per_epoch));
    return std::make_unique<SyntheticData>(classes, image_size, images_per_epoch, seed);
}

}  // namespace epochcast
