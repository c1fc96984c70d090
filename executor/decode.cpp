#include "executor/decode.hpp"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "model/errors.hpp"

namespace epochcast {
namespace {

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
    check_image_dimensions(file, static_cast<std::uint64_t>(std::max(width, 0)),
                           static_cast<std::uint64_t>(std::max(height, 0)));
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

}  // namespace

void read_image_file(const std::filesystem::path& file, std::vector<std::uint8_t>& bytes) {
    std::ifstream in(file, std::ios::binary | std::ios::ate);
    if (!in) throw InputError("cannot open image '" + file.string() + "': " + std::strerror(errno));
    const std::streamsize size = in.tellg();
    in.seekg(0);
    bytes.resize(static_cast<std::size_t>(std::max<std::streamsize>(size, 0)));
    if (size < 0 || !in.read(reinterpret_cast<char*>(bytes.data()), size))
        throw InputError("cannot read image '" + file.string() + "'");
}

void decode_image(const std::filesystem::path& file, const std::vector<std::uint8_t>& bytes, Pixels& out) {
    static constexpr std::array<std::uint8_t, 8> png_signature{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (bytes.size() >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff)
        return decode_jpeg(file, bytes, out);
    if (bytes.size() >= 8 && std::equal(png_signature.begin(), png_signature.end(), bytes.begin()))
        return decode_png(file, bytes, out);
    throw_decode_error(file, "neither a JPEG nor a PNG file (unrecognised signature)");
}

}  // namespace epochcast
