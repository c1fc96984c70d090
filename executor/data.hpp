// Training data for the executor: synthetic images with class-dependent patterns (learnable, so a
// falling loss shows training works; executor/synthetic_data.cpp) and image folders (a subfolder
// per class, JPEG and PNG; executor/image_folder.cpp) with random-resized crop and horizontal flip
// (executor/decode.hpp, executor/augment.hpp). executor/loader.hpp decodes a rank's batches on a
// thread pool that overlaps compute.
//
// Sample positions are global: step s of a run with W workers of B images each reads positions
// s*W*B + r*B ... s*W*B + r*B + B-1 on worker r. Every position maps to one image and one
// augmentation, fixed by (seed, position) alone, so
//  - one rank with batch 2B sees exactly the images two ranks with batch B see together, and
//  - a resumed run reads what the uninterrupted run would have read.
// Image-folder positions walk a fresh seeded permutation of the files each epoch
// (epoch = position / images()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace epochcast {

/// The first global position of worker `worker`'s batch at step `step` when each of `workers`
/// workers reads `batch` images a step: step * workers * batch + worker * batch (the rule above).
std::int64_t batch_position(std::int64_t step, int worker, int workers, int batch);

/// fp32 values of one image: 3 x S x S.
std::size_t image_values(int image_size);

/// Throws InputError for a negative position or count (every fill_into checks its arguments).
void check_fill_arguments(std::int64_t position, int count);

/// Throws InputError for an image side below 1 pixel (both datasets' factories check it).
void check_image_size(int image_size);

/// One rank's batch: images batch x 3 x size x size fp32 NCHW, normalised with the ImageNet
/// channel mean and standard deviation; labels in [0, classes).
struct Batch {
    int size = 0;        ///< images in the batch
    int image_size = 0;  ///< side in pixels
    std::vector<float> images;
    std::vector<std::int32_t> labels;
};

class DataSource {
public:
    virtual ~DataSource() = default;
    virtual int classes() const = 0;
    /// Images in one epoch (the dataset's size).
    virtual std::int64_t images() const = 0;
    /// Side of every image it makes, in pixels.
    virtual int image_size() const = 0;
    /// "synthetic" or the folder's path.
    virtual std::string description() const = 0;
    /// The `count` images from global `position` on into `images` (count x 3 x S x S fp32, S =
    /// image_size()) and their labels into `labels` (count). Safe to call from several threads
    /// at once on different memory.
    virtual void fill_into(std::int64_t position, int count, float* images, std::int32_t* labels) const = 0;
    /// The same into `batch`, resized to `count` images.
    void fill(std::int64_t position, int count, Batch& batch) const;
};

/// Synthetic images: each class has its own fixed pattern (seeded), each image is its class's
/// pattern plus noise. `images_per_epoch` only sets the epoch length. Throws InputError for a
/// class count below 1, an image size below 1 or a non-positive epoch length.
std::unique_ptr<DataSource> make_synthetic_data(int classes, int image_size, std::int64_t images_per_epoch,
                                                std::uint64_t seed);

/// An image folder: every subfolder of `root` (sorted by name) is one class; its .jpg, .jpeg and
/// .png files (any case, sorted by name) are its images. Hidden entries (".name") and other files
/// are ignored. A class folder with no images is refused, naming it (as torchvision's
/// ImageFolder does): the folders are the classes, so an empty one would be a class the network
/// can never see yet must predict, and in an ImageNet-style set it is a sign of a failed copy or
/// extraction, not of intent. Files are decoded by content (TurboJPEG, or
/// libpng with palette, grey, alpha and 16-bit converted to 8-bit RGB; alpha is dropped).
/// Crops cover 8% to 100% of the area with aspect ratio 3/4 to 4/3 (torchvision's
/// RandomResizedCrop: 10 attempts, then a centre crop), resized bilinearly (antialiased when
/// shrinking) to image_size, flipped with probability 1/2. Throws InputError for a missing or
/// unreadable folder, a path that is not a folder, no class subfolders, no images, or a class
/// folder without images, naming the path; an image that fails to decode (including a truncated
/// JPEG) or whose header claims more than 32768 pixels a side or 64 megapixels (checked before
/// any pixel memory is taken, JPEG and PNG alike) is an InputError naming the file and the
/// reason when it is read.
std::unique_ptr<DataSource> make_image_folder_data(const std::filesystem::path& root, int image_size,
                                                   std::uint64_t seed);

}  // namespace epochcast
