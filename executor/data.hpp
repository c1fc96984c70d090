// Training data for the executor: synthetic images with class-dependent patterns (learnable, so a
// falling loss shows training works) and image folders (a subfolder per class, JPEG and PNG) with
// random-resized crop and horizontal flip, decoded by a thread pool that overlaps compute.
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
#include <span>
#include <string>
#include <vector>

namespace epochcast {

/// The first global position of worker `worker`'s batch at step `step` when each of `workers`
/// workers reads `batch` images a step: step * workers * batch + worker * batch (the rule above).
std::int64_t batch_position(std::int64_t step, int worker, int workers, int batch);

/// One rank's batch: images batch x 3 x size x size fp32 NCHW, normalised with the ImageNet
/// channel mean and standard deviation; labels in [0, classes).
struct Batch {
    int size = 0;                      ///< images in the batch
    int image_size = 0;                ///< side in pixels
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

/// Where a BatchLoader keeps the batches it decodes: plain memory by default; page-locked memory
/// that a GPU copies from directly (the CUDA network's, Network::batch_memory()).
class HostMemory {
public:
    virtual ~HostMemory() = default;
    /// At least `bytes` bytes, aligned for any scalar type; throws on failure.
    virtual void* allocate(std::size_t bytes) = 0;
    /// Gives back what allocate() returned.
    virtual void release(void* data) noexcept = 0;
};

/// A batch a BatchLoader hands out: views of its own memory, valid until the next call.
struct BatchView {
    int size = 0;                         ///< images in the batch
    int image_size = 0;                   ///< side in pixels
    std::span<const float> images;        ///< size x 3 x S x S fp32 NCHW, normalised as Batch's
    std::span<const std::int32_t> labels;  ///< size labels
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

/// Prefetches the batches of the coming steps on a pool of decode threads while the caller
/// computes, and measures how long the caller waited.
class BatchLoader {
public:
    /// `batch` images per step for worker `worker` of `workers`, first step `first_step`.
    /// `threads` decode threads (>= 1), `depth` batches in flight (>= 1). The decode threads
    /// write each batch's images straight into one of depth + 1 buffers from `memory` (plain
    /// memory when null; it must outlive the loader), allocated here once.
    BatchLoader(const DataSource& source, int batch, int worker, int workers, std::int64_t first_step,
                int threads, int depth, HostMemory* memory = nullptr);
    ~BatchLoader();
    BatchLoader(const BatchLoader&) = delete;
    BatchLoader& operator=(const BatchLoader&) = delete;

    /// The next step's batch; blocks until it is ready. Its memory stays valid, and unchanged,
    /// until the next call. A decode error surfaces here as the InputError it raised.
    const BatchView& next();
    /// Seconds next() spent waiting, summed over all calls.
    double wait_s() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace epochcast
