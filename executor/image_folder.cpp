// The image-folder dataset (executor/data.hpp's make_image_folder_data): the folder's listing, a
// seeded permutation of the files per epoch, and per image its decode (executor/decode.hpp) and
// augmentation (executor/augment.hpp), both fixed by (seed, position).
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "executor/augment.hpp"
#include "executor/data.hpp"
#include "executor/decode.hpp"
#include "executor/seeded_random.hpp"
#include "executor/synthetic.hpp"
#include "model/errors.hpp"

namespace epochcast {
namespace {

using synthetic::splitmix64;

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
        if (!std::filesystem::exists(status)) throw InputError("image folder '" + root.string() + "' does not exist");
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
            throw InputError("class folder '" + empty_classes.front().string() +
                             "' holds no .jpg, .jpeg or .png images" +
                             (empty_classes.size() > 1
                                  ? " (nor do " + std::to_string(empty_classes.size() - 1) + " other class folders)"
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
            read_image_file(file.path, bytes);
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

}  // namespace

std::unique_ptr<DataSource> make_image_folder_data(const std::filesystem::path& root, int image_size,
                                                   std::uint64_t seed) {
    check_image_size(image_size);
    return std::make_unique<ImageFolderData>(root, image_size, seed);
}

}  // namespace epochcast
