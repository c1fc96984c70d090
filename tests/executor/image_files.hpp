// Image files the executor's tests write themselves (nothing is downloaded): PNG through libpng,
// JPEG through TurboJPEG, painted pixel by pixel.
#pragma once

#include <gtest/gtest.h>
#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

namespace epochcast::testing {

using Rgb = std::array<int, 3>;
/// Colour of pixel (x, y) of a width x height image.
using Painter = std::function<Rgb(int x, int y)>;

inline Painter uniform(Rgb colour) {
    return [colour](int, int) { return colour; };
}

/// A PNG with 1 (grey, from the red value), 3 (RGB) or 4 (RGBA, opaque) channels.
inline void write_png(const std::filesystem::path& file, int width, int height, int channels, const Painter& paint) {
    std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width) * height * channels);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            const Rgb c = paint(x, y);
            std::uint8_t* p = &pixels[(static_cast<std::size_t>(y) * width + x) * channels];
            for (int k = 0; k < std::min(channels, 3); ++k) p[k] = static_cast<std::uint8_t>(c[k]);
            if (channels == 4) p[3] = 255;
        }
    png_image image{};
    image.version = PNG_IMAGE_VERSION;
    image.width = static_cast<png_uint_32>(width);
    image.height = static_cast<png_uint_32>(height);
    image.format = channels == 1 ? PNG_FORMAT_GRAY : channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
    ASSERT_TRUE(png_image_write_to_file(&image, file.c_str(), 0, pixels.data(), 0, nullptr)) << image.message;
}

inline std::vector<unsigned char> jpeg_bytes(int width, int height, const Painter& paint) {
    std::vector<unsigned char> rgb(static_cast<std::size_t>(width) * height * 3);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            const Rgb c = paint(x, y);
            for (int k = 0; k < 3; ++k)
                rgb[(static_cast<std::size_t>(y) * width + x) * 3 + k] = static_cast<unsigned char>(c[k]);
        }
    tjhandle tj = tjInitCompress();
    unsigned char* out = nullptr;
    unsigned long size = 0;
    const int rc = tjCompress2(tj, rgb.data(), width, 0, height, TJPF_RGB, &out, &size, TJSAMP_420, 95, 0);
    std::vector<unsigned char> bytes;
    if (rc == 0) bytes.assign(out, out + size);
    tjFree(out);
    tjDestroy(tj);
    return bytes;
}

inline void write_bytes(const std::filesystem::path& file, const std::vector<unsigned char>& bytes) {
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void write_jpeg(const std::filesystem::path& file, int width, int height, const Painter& paint) {
    const auto bytes = jpeg_bytes(width, height, paint);
    ASSERT_FALSE(bytes.empty());
    write_bytes(file, bytes);
}

}  // namespace epochcast::testing
