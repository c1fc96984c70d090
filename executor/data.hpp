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

#include <cstdint>
#include <filesystem>
#include <memory>
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
    /// "synthetic" or the folder's path.
    virtual std::string description() const = 0;
    /// Fill `batch` (resized as needed) with `count` images starting at global `position`.
    /// Safe to call from several threads at once on different batches.
    virtual void fill(std::int64_t position, int count, Batch& batch) const = 0;
};

/// Synthetic images: each class has its own fixed pattern (seeded), each image is its class's
/// pattern plus noise. `images_per_epoch` only sets the epoch length. Throws InputError for a
/// class count below 1, an image size below 1 or a non-positive epoch length.
std::unique_ptr<DataSource> make_synthetic_data(int classes, int image_size, std::int64_t images_per_epoch,
                                                std::uint64_t seed);

/// An image folder: every subfolder of `root` (sorted by name) is one class; its .jpg, .jpeg and
/// .png files (any case, sorted by name) are its images. Hidden entries (".name") and other files
/// are ignored. A class folder with no images still counts as a class (labels stay the folder
/// indices) as long as some other class has images. Files are decoded by content (TurboJPEG, or
/// libpng with palette, grey, alpha and 16-bit converted to 8-bit RGB; alpha is dropped).
/// Crops cover 8% to 100% of the area with aspect ratio 3/4 to 4/3 (torchvision's
/// RandomResizedCrop: 10 attempts, then a centre crop), resized bilinearly (antialiased when
/// shrinking) to image_size, flipped with probability 1/2. Throws InputError for a missing or
/// unreadable folder, a path that is not a folder, no class subfolders, or no images, naming the
/// path; an image that fails to decode (including a truncated JPEG) is an InputError naming the
/// file and the decoder's message when it is read.
std::unique_ptr<DataSource> make_image_folder_data(const std::filesystem::path& root, int image_size,
                                                   std::uint64_t seed);

/// Prefetches the batches of the coming steps on a pool of decode threads while the caller
/// computes, and measures how long the caller waited.
class BatchLoader {
public:
    /// `batch` images per step for worker `worker` of `workers`, first step `first_step`.
    /// `threads` decode threads (>= 1), `depth` batches in flight (>= 1).
    BatchLoader(const DataSource& source, int batch, int worker, int workers, std::int64_t first_step,
                int threads, int depth);
    ~BatchLoader();
    BatchLoader(const BatchLoader&) = delete;
    BatchLoader& operator=(const BatchLoader&) = delete;

    /// The next step's batch; blocks until it is ready. The reference stays valid until the next
    /// call. A decode error surfaces here as the InputError it raised.
    const Batch& next();
    /// Seconds next() spent waiting, summed over all calls.
    double wait_s() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace epochcast
