// The image-folder dataset's augmentation (executor/data.hpp): torchvision's
// RandomResizedCrop(scale=(0.08, 1), ratio=(3/4, 4/3)) and RandomHorizontalFlip(0.5), then ToTensor
// and Normalize with the ImageNet statistics, from decoded pixels (executor/decode.hpp) to one
// image's fp32 planes. The draws come from the caller's Rng (executor/seeded_random.hpp), seeded
// per position, so an image's augmentation is fixed by (seed, position). Safe to call from several
// threads at once: the scratch buffers are per thread.
#pragma once

#include "executor/decode.hpp"
#include "executor/seeded_random.hpp"

namespace epochcast {

struct Crop {
    int x = 0, y = 0, width = 0, height = 0;  ///< in source pixels
};

/// torchvision.transforms.RandomResizedCrop.get_params, with the same draws in the same order: up
/// to 10 attempts at 8% to 100% of the area with aspect ratio 3/4 to 4/3, then a centre crop.
Crop random_resized_crop(int width, int height, Rng& rng);

/// Resize `crop` of `pixels` to size x size (bilinear, antialiased when shrinking), flip it if
/// asked, and write the normalised planes into out[3][size][size] (fp32, NCHW's C x H x W).
void resize_normalise(const Pixels& pixels, const Crop& crop, int size, bool flip, float* out);

}  // namespace epochcast
