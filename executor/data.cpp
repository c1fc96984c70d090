// Training data: synthetic class patterns, image folders (JPEG through libturbojpeg, PNG through
// libpng), and the prefetching BatchLoader. See data.hpp for the position contract: every image
// and its augmentation are a pure function of (seed, global position).
#include "executor/data.hpp"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <fstream>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "executor/synthetic.hpp"
#include "model/errors.hpp"

namespace epochcast {
namespace {

// ---------------------------------------------------------------------------------------------
// Seeded randomness. splitmix64 (executor/synthetic.hpp) both hashes (seed, position, stream) into
// a state and steps it.

using synthetic::splitmix64;

/// Independent streams drawn from one seed, so that changing how one is used leaves the others.
enum class Stream : std::uint64_t { label = 1, image = 2, class_pattern = 3, permutation = 4, augment = 5 };

std::uint64_t hash_of(std::uint64_t seed, Stream stream, std::uint64_t value) {
    return splitmix64(splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(stream))) ^ value);
}

class Rng {
public:
    explicit Rng(std::uint64_t state) : state_(state) {}
    std::uint64_t next() {
        state_ += synthetic::kGolden;
        return splitmix64(state_);
    }
    /// Uniform in [0, 1).
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    double uniform(double low, double high) { return low + (high - low) * uniform(); }
    /// Uniform integer in [low, high] (inclusive).
    std::int64_t integer(std::int64_t low, std::int64_t high) {
        return low + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(high - low + 1));
    }
private:
    std::uint64_t state_;
};

void check_fill_arguments(std::int64_t position, int count) {
    if (position < 0) throw InputError("data position must be >= 0, got " + std::to_string(position));
    if (count < 0) throw InputError("data batch count must be >= 0, got " + std::to_string(count));
}

void check_classes(int classes) {
    if (classes < 1) throw InputError("synthetic data needs at least 1 class, got " + std::to_string(classes));
}

/// fp32 values of one image: 3 x S x S.
std::size_t image_values(int image_size) { return std::size_t{3} * image_size * image_size; }

// ---------------------------------------------------------------------------------------------
// Synthetic data: the definition is executor/synthetic.hpp's, shared with the GPU generator.

class SyntheticData final : public DataSource {
public:
    SyntheticData(int classes, int image_size, std::int64_t images_per_epoch, std::uint64_t seed)
        : classes_(classes), image_size_(image_size), images_per_epoch_(images_per_epoch), seed_(seed),
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

// ---------------------------------------------------------------------------------------------
// A seeded permutation of [0, n) evaluated one index at a time: a balanced Feistel network on the
// smallest even number of bits that covers n, cycle-walking until the value falls below n
// (Black and Rogaway, "Ciphers with arbitrary finite domains", CT-RSA 2002). Less than 4 rounds of
// walking on average; no O(n) table per epoch, and safe from any thread.

class EpochPermutation {
public:
    EpochPermutation(std::int64_t n, std::uint64_t seed, std::int64_t epoch) : n_(static_cast<std::uint64_t>(n)) {
        int bits = 2;
        while ((std::uint64_t{1} << bits) < n_) bits += 2;
        half_bits_ = bits / 2;
        mask_ = (std::uint64_t{1} << half_bits_) - 1;
        for (std::size_t r = 0; r < keys_.size(); ++r)
            keys_[r] = hash_of(seed, Stream::permutation, static_cast<std::uint64_t>(epoch) * keys_.size() + r);
    }

    std::int64_t operator()(std::int64_t index) const {
        std::uint64_t x = static_cast<std::uint64_t>(index);
        do x = encrypt(x);
        while (x >= n_);
        return static_cast<std::int64_t>(x);
    }

private:
    std::uint64_t encrypt(std::uint64_t x) const {
        std::uint64_t left = x >> half_bits_, right = x & mask_;
        for (std::uint64_t key : keys_) {
            const std::uint64_t next = left ^ (splitmix64(right ^ key) & mask_);
            left = right;
            right = next;
        }
        return (left << half_bits_) | right;
    }

    std::uint64_t n_;
    int half_bits_ = 1;
    std::uint64_t mask_ = 1;
    std::array<std::uint64_t, 6> keys_{};
};

// ---------------------------------------------------------------------------------------------
// Decoding to 8-bit pixels, row-major, `channels` bytes per pixel (3 for JPEG, 4 for PNG, whose
// alpha is dropped as PIL's convert("RGB") does).

struct Pixels {
    int width = 0, height = 0, channels = 0;
    std::vector<std::uint8_t> data;
};

[[noreturn]] void throw_decode_error(const std::filesystem::path& file, const std::string& why) {
    throw InputError("cannot decode image '" + file.string() + "': " + why);
}

/// Largest side and area an image may claim, checked on its header before any pixel memory is
/// taken (a 2 KB JPEG can claim 30000 x 30000 pixels: 2.7 GB of RGB per decode). 64 megapixels
/// (256 MiB decoded as RGBA) is above a 60-megapixel camera's full-size photograph and some 600
/// times an average ImageNet training image (about 400 x 350).
constexpr std::uint64_t kMaxImageSide = std::uint64_t{1} << 15;
constexpr std::uint64_t kMaxImagePixels = std::uint64_t{1} << 26;

/// Throws the decode error naming `file` when width x height is empty or beyond the caps above.
void check_image_dimensions(const std::filesystem::path& file, std::uint64_t width, std::uint64_t height) {
    if (width == 0 || height == 0 || width > kMaxImageSide || height > kMaxImageSide ||
        width * height > kMaxImagePixels) {
        throw_decode_error(file, "its header claims " + std::to_string(width) + " x " + std::to_string(height) +
                                     " pixels; images of 1 to 32768 pixels a side and at most 64 megapixels are "
                                     "accepted");
    }
}

void read_file(const std::filesystem::path& file, std::vector<std::uint8_t>& bytes) {
    std::ifstream in(file, std::ios::binary | std::ios::ate);
    if (!in) throw InputError("cannot open image '" + file.string() + "': " + std::strerror(errno));
    const std::streamsize size = in.tellg();
    in.seekg(0);
    bytes.resize(static_cast<std::size_t>(std::max<std::streamsize>(size, 0)));
    if (size < 0 || !in.read(reinterpret_cast<char*>(bytes.data()), size))
        throw InputError("cannot read image '" + file.string() + "'");
}

/// One TurboJPEG decompressor per thread, created on first use.
tjhandle jpeg_decompressor() {
    struct Handle {
        tjhandle handle = tjInitDecompress();
        ~Handle() {
            if (handle) tjDestroy(handle);
        }
    };
    thread_local Handle holder;
    if (!holder.handle) throw InputError(std::string("cannot start the JPEG decoder: ") + tjGetErrorStr2(nullptr));
    return holder.handle;
}

/// JPEG through TurboJPEG into RGB. CMYK and YCCK files (Adobe, stored inverted) decode to CMYK
/// and convert as R = C*K/255, G = M*K/255, B = Y*K/255. Fatal errors and a truncated file are
/// errors; other warnings, such as "extraneous bytes before marker", which PIL also accepts, are not.
void decode_jpeg(const std::filesystem::path& file, const std::vector<std::uint8_t>& bytes, Pixels& out) {
    tjhandle tj = jpeg_decompressor();
    int width = 0, height = 0, subsampling = 0, colorspace = 0;
    if (tjDecompressHeader3(tj, bytes.data(), bytes.size(), &width, &height, &subsampling, &colorspace) != 0)
        throw_decode_error(file, tjGetErrorStr2(tj));
    check_image_dimensions(file, static_cast<std::uint64_t>(std::max(width, 0)), static_cast<std::uint64_t>(std::max(height, 0)));
    const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
    const int pixel_format = cmyk ? TJPF_CMYK : TJPF_RGB;
    const int source_channels = cmyk ? 4 : 3;
    out.width = width, out.height = height, out.channels = 3;
    out.data.resize(static_cast<std::size_t>(width) * height * source_channels);
    if (tjDecompress2(tj, bytes.data(), bytes.size(), out.data.data(), width, 0, height, pixel_format, 0) != 0) {
        const std::string why = tjGetErrorStr2(tj);
        // libjpeg's JWRN_JPEG_EOF: the rest of the image would be grey filler; PIL refuses these too.
        if (tjGetErrorCode(tj) == TJERR_FATAL || why.find("Premature end of JPEG file") != std::string::npos)
            throw_decode_error(file, why);
    }
    if (cmyk) {
        const std::size_t pixels = static_cast<std::size_t>(width) * height;
        for (std::size_t i = 0; i < pixels; ++i) {
            const unsigned k = out.data[4 * i + 3];
            for (int c = 0; c < 3; ++c) out.data[3 * i + c] = static_cast<std::uint8_t>(out.data[4 * i + c] * k / 255);
        }
        out.data.resize(pixels * 3);
    }
}

/// PNG through libpng's simplified API into 8-bit RGBA: palette, grey, tRNS and 16-bit files are
/// all expanded by libpng. 16-bit files without gamma information are taken as sRGB (as PIL does)
/// rather than linear.
void decode_png(const std::filesystem::path& file, const std::vector<std::uint8_t>& bytes, Pixels& out) {
    png_image image;
    std::memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size())) throw_decode_error(file, image.message);
    image.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;  // after begin_read, which resets the flags
    image.format = PNG_FORMAT_RGBA;
    try {
        check_image_dimensions(file, image.width, image.height);
    } catch (const InputError&) {
        png_image_free(&image);
        throw;
    }
    out.width = static_cast<int>(image.width), out.height = static_cast<int>(image.height), out.channels = 4;
    out.data.resize(PNG_IMAGE_SIZE(image));
    if (!png_image_finish_read(&image, nullptr, out.data.data(), 0, nullptr)) {
        const std::string why = image.message;
        png_image_free(&image);
        throw_decode_error(file, why);
    }
}

/// Decode by content, not by extension: a PNG saved as .jpg still loads.
void decode_image(const std::filesystem::path& file, const std::vector<std::uint8_t>& bytes, Pixels& out) {
    static constexpr std::array<std::uint8_t, 8> png_signature{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (bytes.size() >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff) return decode_jpeg(file, bytes, out);
    if (bytes.size() >= 8 && std::equal(png_signature.begin(), png_signature.end(), bytes.begin()))
        return decode_png(file, bytes, out);
    throw_decode_error(file, "neither a JPEG nor a PNG file (unrecognised signature)");
}

// ---------------------------------------------------------------------------------------------
// Augmentation: torchvision's RandomResizedCrop(scale=(0.08, 1), ratio=(3/4, 4/3)) and
// RandomHorizontalFlip(0.5), then ToTensor and Normalize with the ImageNet statistics.

struct Crop {
    int x = 0, y = 0, width = 0, height = 0;  ///< in source pixels
};

constexpr double kMinCropArea = 0.08, kMaxCropArea = 1.0;
constexpr double kMinAspect = 3.0 / 4.0, kMaxAspect = 4.0 / 3.0;
constexpr int kCropAttempts = 10;
// torchvision.transforms.Normalize values used by the torchvision ImageNet reference training.
constexpr std::array<float, 3> kImageNetMean{0.485f, 0.456f, 0.406f};
constexpr std::array<float, 3> kImageNetStd{0.229f, 0.224f, 0.225f};

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

// ---------------------------------------------------------------------------------------------
// Image folders.

bool is_image_file(const std::filesystem::path& file) {
    std::string ext = file.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

bool is_hidden(const std::filesystem::path& entry) { return entry.filename().string().starts_with('.'); }

/// The sorted entries of `folder` that pass `keep`, hidden ones (".name") left out.
template <typename Keep>
std::vector<std::filesystem::path> sorted_entries(const std::filesystem::path& folder, Keep keep) {
    std::vector<std::filesystem::path> entries;
    try {
        for (const auto& entry : std::filesystem::directory_iterator(folder))
            if (!is_hidden(entry.path()) && keep(entry)) entries.push_back(entry.path());
    } catch (const std::filesystem::filesystem_error& error) {
        throw InputError("cannot list image folder '" + folder.string() + "': " + error.code().message());
    }
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.filename().string() < b.filename().string(); });
    return entries;
}

class ImageFolderData final : public DataSource {
public:
    ImageFolderData(const std::filesystem::path& root, int image_size, std::uint64_t seed)
        : root_(root), image_size_(image_size), seed_(seed) {
        std::error_code error;
        const auto status = std::filesystem::status(root, error);
        if (!std::filesystem::exists(status))
            throw InputError("image folder '" + root.string() + "' does not exist");
        if (!std::filesystem::is_directory(status))
            throw InputError("image folder '" + root.string() + "' is not a folder");
        const auto class_folders = sorted_entries(root, [](const auto& entry) {
            std::error_code ignored;
            return entry.is_directory(ignored);
        });
        if (class_folders.empty())
            throw InputError("image folder '" + root.string() +
                             "' has no class subfolders (expected one subfolder of images per class)");
        std::vector<std::filesystem::path> empty_classes;
        for (std::size_t label = 0; label < class_folders.size(); ++label) {
            const auto images = sorted_entries(class_folders[label], [](const auto& entry) {
                std::error_code ignored;
                return entry.is_regular_file(ignored) && is_image_file(entry.path());
            });
            if (images.empty()) empty_classes.push_back(class_folders[label]);
            for (const auto& image : images) files_.push_back({image, static_cast<std::int32_t>(label)});
        }
        classes_ = static_cast<int>(class_folders.size());
        if (files_.empty())
            throw InputError("image folder '" + root.string() + "' has " + std::to_string(classes_) +
                             " class subfolders but no .jpg, .jpeg or .png images in them");
        if (!empty_classes.empty())
            throw InputError("class folder '" + empty_classes.front().string() + "' holds no .jpg, .jpeg or .png images" +
                             (empty_classes.size() > 1 ? " (nor do " + std::to_string(empty_classes.size() - 1) +
                                                             " other class folders)"
                                                       : std::string()) +
                             "; remove it, or fill it: every class folder must hold images");
    }

    int classes() const override { return classes_; }
    std::int64_t images() const override { return static_cast<std::int64_t>(files_.size()); }
    int image_size() const override { return image_size_; }
    std::string description() const override { return root_.string(); }

    void fill_into(std::int64_t position, int count, float* images, std::int32_t* labels) const override {
        check_fill_arguments(position, count);
        const std::int64_t n = this->images();
        const std::size_t values = image_values(image_size_);
        thread_local std::vector<std::uint8_t> bytes;
        thread_local Pixels pixels;
        std::int64_t epoch = -1;
        std::optional<EpochPermutation> order;
        for (int i = 0; i < count; ++i) {
            const std::int64_t p = position + i;
            if (p / n != epoch) order.emplace(n, seed_, epoch = p / n);
            const File& file = files_[static_cast<std::size_t>((*order)(p % n))];
            read_file(file.path, bytes);
            decode_image(file.path, bytes, pixels);
            Rng rng(hash_of(seed_, Stream::augment, static_cast<std::uint64_t>(p)));
            const Crop crop = random_resized_crop(pixels.width, pixels.height, rng);
            const bool flip = rng.uniform() < 0.5;
            resize_normalise(pixels, crop, image_size_, flip, images + i * values);
            labels[i] = file.label;
        }
    }

private:
    struct File {
        std::filesystem::path path;
        std::int32_t label;
    };
    std::filesystem::path root_;
    int image_size_;
    std::uint64_t seed_;
    int classes_ = 0;
    std::vector<File> files_;
};

void check_image_size(int image_size) {
    if (image_size < 1) throw InputError("image size must be >= 1 pixel, got " + std::to_string(image_size));
}

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

std::unique_ptr<DataSource> make_image_folder_data(const std::filesystem::path& root, int image_size,
                                                   std::uint64_t seed) {
    check_image_size(image_size);
    return std::make_unique<ImageFolderData>(root, image_size, seed);
}

void DataSource::fill(std::int64_t position, int count, Batch& batch) const {
    check_fill_arguments(position, count);
    batch.size = count;
    batch.image_size = image_size();
    batch.images.resize(static_cast<std::size_t>(count) * image_values(image_size()));
    batch.labels.resize(static_cast<std::size_t>(count));
    fill_into(position, count, batch.images.data(), batch.labels.data());
}

std::int64_t batch_position(std::int64_t step, int worker, int workers, int batch) {
    return step * static_cast<std::int64_t>(workers) * batch + static_cast<std::int64_t>(worker) * batch;
}

// ---------------------------------------------------------------------------------------------
// BatchLoader. depth + 1 slots: `depth` being filled ahead while the caller holds one. Step k
// lives in slot (k - first_step) % (depth + 1). Each step is cut into chunks of at most
// kMaxChunkImages images so that several threads share one batch and a stopping loader waits
// for at most one chunk per thread; each chunk is decoded straight into its place in the slot's
// images. Tasks run in step order, so the batch needed next is finished first.

namespace {
constexpr int kMaxChunkImages = 8;

/// The memory of plain slots.
class PlainMemory final : public HostMemory {
public:
    void* allocate(std::size_t bytes) override { return ::operator new(bytes); }
    void release(void* data) noexcept override { ::operator delete(data); }
};
}  // namespace

struct BatchLoader::Impl {
    /// One batch's images in `memory`, labels beside them.
    struct Slot {
        HostMemory* memory = nullptr;
        float* images = nullptr;  ///< batch x 3 x S x S, from memory
        std::vector<std::int32_t> labels;
        BatchView view;
        std::int64_t step = -1;
        int chunks_left = 0;
        bool ready = false;
        std::exception_ptr error;

        Slot() = default;
        Slot(const Slot&) = delete;
        Slot& operator=(const Slot&) = delete;
        ~Slot() {
            if (images != nullptr) memory->release(images);
        }
    };
    struct Task {
        int slot;
        int begin, count;  ///< images within the batch
    };

    Impl(const DataSource& source_, int batch_, int worker_, int workers_)
        : source(source_), batch(batch_), worker(worker_), workers(workers_) {}

    const DataSource& source;
    int batch, worker, workers;
    int chunk_images = 1;
    PlainMemory plain;
    std::vector<std::unique_ptr<Slot>> slots;
    std::int64_t first_step;
    std::int64_t next_to_schedule;  ///< step the next free slot gets
    std::int64_t next_to_return;    ///< step next() hands out
    std::exception_ptr failed;      ///< once next() has thrown, it throws this again
    double wait_seconds = 0;

    std::mutex mutex;
    std::condition_variable work_ready, batch_ready;
    std::deque<Task> tasks;
    bool stopping = false;
    std::vector<std::thread> threads;

    std::int64_t position_of(std::int64_t step) const { return batch_position(step, worker, workers, batch); }
    int slot_of(std::int64_t step) const { return static_cast<int>((step - first_step) % std::ssize(slots)); }

    /// A slot of `batch` images in `memory`.
    void add_slot(HostMemory& memory) {
        auto slot = std::make_unique<Slot>();
        const std::size_t values = static_cast<std::size_t>(batch) * image_values(source.image_size());
        slot->memory = &memory;
        slot->images = static_cast<float*>(memory.allocate(values * sizeof(float)));
        slot->labels.resize(static_cast<std::size_t>(batch));
        slot->view = BatchView{batch, source.image_size(), {slot->images, values}, slot->labels};
        slots.push_back(std::move(slot));
    }

    /// Queue the next step into its (free) slot. Called with `mutex` held.
    void schedule() {
        const std::int64_t step = next_to_schedule++;
        Slot& slot = *slots[slot_of(step)];
        slot.step = step;
        slot.ready = false;
        slot.error = nullptr;
        slot.chunks_left = (batch + chunk_images - 1) / chunk_images;
        for (int begin = 0; begin < batch; begin += chunk_images)
            tasks.push_back({slot_of(step), begin, std::min(chunk_images, batch - begin)});
        work_ready.notify_all();
    }

    void run() {
        const std::size_t values = image_values(source.image_size());
        for (;;) {
            Task task;
            std::int64_t step;
            {
                std::unique_lock lock(mutex);
                work_ready.wait(lock, [&] { return stopping || !tasks.empty(); });
                if (stopping) return;
                task = tasks.front();
                tasks.pop_front();
                step = slots[task.slot]->step;
            }
            Slot& slot = *slots[task.slot];
            std::exception_ptr error;
            try {
                source.fill_into(position_of(step) + task.begin, task.count, slot.images + task.begin * values,
                                 slot.labels.data() + task.begin);
            } catch (...) {
                error = std::current_exception();
            }
            std::lock_guard lock(mutex);
            if (error && !slot.error) slot.error = error;
            if (--slot.chunks_left == 0) {
                slot.ready = true;
                batch_ready.notify_all();
            }
        }
    }
};

BatchLoader::BatchLoader(const DataSource& source, int batch, int worker, int workers, std::int64_t first_step,
                         int threads, int depth, HostMemory* memory)
    : impl_(std::make_unique<Impl>(source, batch, worker, workers)) {
    if (batch < 1) throw InputError("batch loader: batch must be >= 1, got " + std::to_string(batch));
    if (workers < 1 || worker < 0 || worker >= workers)
        throw InputError("batch loader: worker " + std::to_string(worker) + " of " + std::to_string(workers) +
                         " is out of range");
    if (first_step < 0) throw InputError("batch loader: first step must be >= 0, got " + std::to_string(first_step));
    if (threads < 1) throw InputError("batch loader: threads must be >= 1, got " + std::to_string(threads));
    if (depth < 1) throw InputError("batch loader: depth must be >= 1, got " + std::to_string(depth));
    Impl& impl = *impl_;
    impl.chunk_images = std::clamp((batch + threads - 1) / threads, 1, kMaxChunkImages);
    for (int i = 0; i <= depth; ++i) impl.add_slot(memory != nullptr ? *memory : impl.plain);
    impl.first_step = impl.next_to_schedule = impl.next_to_return = first_step;
    {
        std::lock_guard lock(impl.mutex);
        for (int i = 0; i < depth; ++i) impl.schedule();
    }
    impl.threads.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) impl.threads.emplace_back([&impl] { impl.run(); });
}

BatchLoader::~BatchLoader() {
    {
        std::lock_guard lock(impl_->mutex);
        impl_->stopping = true;
        impl_->tasks.clear();
    }
    impl_->work_ready.notify_all();
    for (std::thread& thread : impl_->threads) thread.join();
}

const BatchView& BatchLoader::next() {
    Impl& impl = *impl_;
    if (impl.failed) std::rethrow_exception(impl.failed);
    std::unique_lock lock(impl.mutex);
    // The slot the caller held (or, on the first call, the spare one) is free again: fill it
    // with the step `depth` ahead, then wait for this one.
    while (impl.next_to_schedule < impl.next_to_return + std::ssize(impl.slots)) impl.schedule();
    Impl::Slot& slot = *impl.slots[impl.slot_of(impl.next_to_return)];
    if (!slot.ready) {
        const auto start = std::chrono::steady_clock::now();
        impl.batch_ready.wait(lock, [&] { return slot.ready; });
        impl.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    ++impl.next_to_return;
    if (slot.error) {
        impl.failed = slot.error;
        std::rethrow_exception(impl.failed);
    }
    return slot.view;
}

double BatchLoader::wait_s() const { return impl_->wait_seconds; }

}  // namespace epochcast
