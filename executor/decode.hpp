// Image files to 8-bit pixels for the image-folder dataset (executor/data.hpp): JPEG through
// TurboJPEG, PNG through libpng, chosen by the file's content. The caller owns the byte and pixel
// buffers and may reuse them from call to call (the dataset keeps one of each per decode thread);
// every function here is safe to call from several threads at once on different buffers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace epochcast {

/// Decoded pixels, row-major, `channels` bytes per pixel (3 for JPEG, 4 for PNG, whose alpha the
/// augmentation drops as PIL's convert("RGB") does).
struct Pixels {
    int width = 0, height = 0, channels = 0;
    std::vector<std::uint8_t> data;
};

/// The whole of `file` into `bytes` (resized to fit). Throws InputError naming the file when it
/// cannot be opened or read.
void read_image_file(const std::filesystem::path& file, std::vector<std::uint8_t>& bytes);

/// `bytes`, the content of `file`, decoded by content, not by extension (a PNG saved as .jpg still
/// loads): JPEG to RGB (CMYK and YCCK converted), PNG to RGBA (palette, grey, tRNS and 16-bit
/// expanded). Throws InputError naming `file` and the reason for a file that is neither, fails to
/// decode (including a truncated JPEG), or whose header claims more than 32768 pixels a side or 64
/// megapixels (checked before any pixel memory is taken).
void decode_image(const std::filesystem::path& file, const std::vector<std::uint8_t>& bytes, Pixels& out);

}  // namespace epochcast
