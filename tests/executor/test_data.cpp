// Training data: synthetic class patterns, image folders written here by the test itself (PNG
// through libpng, JPEG through TurboJPEG; nothing is downloaded), and the prefetching BatchLoader.
#include <gtest/gtest.h>
#include <png.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "executor/data.hpp"
#include "executor/loader.hpp"
#include "model/errors.hpp"
#include "tests/executor/image_files.hpp"

namespace epochcast {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// ----- helpers ------------------------------------------------------------------------------

/// A fresh folder under the temporary directory, removed with everything in it at the end.
class TempDir {
public:
    TempDir() {
        static std::atomic<int> counter{0};
        path_ = fs::temp_directory_path() / ("epochcast_data_test_" + std::to_string(::getpid()) + "_" +
                                             std::to_string(counter++) + "_" + std::to_string(std::random_device{}()));
        fs::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

using testing::jpeg_bytes;
using testing::Painter;
using testing::Rgb;
using testing::uniform;
using testing::write_bytes;
using testing::write_jpeg;
using testing::write_png;

std::vector<unsigned char> read_bytes(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

constexpr std::array<double, 3> kMean{0.485, 0.456, 0.406};
constexpr std::array<double, 3> kStd{0.229, 0.224, 0.225};

/// Value of channel c at (x, y) of image i, back in 0..255 units.
double pixel_255(const Batch& batch, int i, int c, int x, int y) {
    const int s = batch.image_size;
    const float v = batch.images[((static_cast<std::size_t>(i) * 3 + c) * s + y) * s + x];
    return (v * kStd[c] + kMean[c]) * 255.0;
}

std::vector<float> image_of(const Batch& batch, int i) {
    const std::size_t n = static_cast<std::size_t>(3) * batch.image_size * batch.image_size;
    return {batch.images.begin() + static_cast<std::ptrdiff_t>(i * n),
            batch.images.begin() + static_cast<std::ptrdiff_t>((i + 1) * n)};
}

/// Three classes of four uniformly coloured images each, in sizes and formats that vary (RGB,
/// grey and RGBA PNG; JPEG with .jpg, .JPG and .jpeg), plus files that must be ignored. Every
/// image has its own colour, so a decoded crop tells which file it came from.
struct ColourFolder {
    static constexpr int kClasses = 3, kPerClass = 4;
    TempDir dir;
    std::vector<Rgb> colours;  ///< by file index: class * kPerClass + image

    ColourFolder() {
        const std::array<std::string, kClasses> names{"ants", "bees", "cats"};
        // name, width, height, kind: 0 JPEG, else a PNG with `kind` channels (1 grey, 3 RGB, 4 RGBA)
        struct Spec {
            std::string name;
            int width, height, kind;
        };
        const std::array<std::array<Spec, kPerClass>, kClasses> specs{{
            {{{"a1.jpg", 40, 30, 0}, {"a2.JPG", 64, 80, 0}, {"a3.png", 50, 50, 3}, {"a4.png", 33, 47, 1}}},
            {{{"b1.jpeg", 80, 64, 0}, {"b2.PNG", 40, 30, 4}, {"b3.png", 64, 80, 3}, {"b4.jpg", 31, 45, 0}}},
            {{{"c1.png", 45, 31, 3}, {"c2.jpg", 48, 48, 0}, {"c3.Png", 30, 40, 1}, {"c4.jpeg", 70, 52, 0}}},
        }};
        for (int c = 0; c < kClasses; ++c) {
            const fs::path folder = dir.path() / names[c];
            fs::create_directories(folder);
            for (int j = 0; j < kPerClass; ++j) {
                const int u = c * kPerClass + j;
                const Spec& spec = specs[c][j];
                Rgb colour{20 + 17 * u, 230 - 15 * u, (60 + 53 * u) % 256};
                if (spec.kind == 1) colour = {colour[0], colour[0], colour[0]};
                colours.push_back(colour);
                if (spec.kind == 0) write_jpeg(folder / spec.name, spec.width, spec.height, uniform(colour));
                else write_png(folder / spec.name, spec.width, spec.height, spec.kind, uniform(colour));
            }
        }
        // Not images of the set: a text file, a hidden image, a file beside the class folders
        // and a hidden folder.
        std::ofstream(dir.path() / "ants" / "notes.txt") << "not an image";
        write_png(dir.path() / "bees" / ".hidden.png", 8, 8, 3, uniform({1, 2, 3}));
        std::ofstream(dir.path() / "README.txt") << "class folders below";
        fs::create_directories(dir.path() / ".cache");
        write_png(dir.path() / ".cache" / "x.png", 8, 8, 3, uniform({1, 2, 3}));
    }

    int label_of(int file) const { return file / kPerClass; }

    /// The file whose colour image i of `batch` shows; checks the image is uniform.
    int identify(const Batch& batch, int i) const {
        const int s = batch.image_size;
        Rgb mean{};
        for (int c = 0; c < 3; ++c) {
            double sum = 0, low = 1e9, high = -1e9;
            for (int y = 0; y < s; ++y)
                for (int x = 0; x < s; ++x) {
                    const double v = pixel_255(batch, i, c, x, y);
                    sum += v, low = std::min(low, v), high = std::max(high, v);
                }
            EXPECT_LT(high - low, 6.0) << "image " << i << " channel " << c << " is not uniform";
            mean[c] = static_cast<int>(std::lround(sum / (s * s)));
        }
        int best = -1, best_distance = 1 << 30;
        for (int f = 0; f < static_cast<int>(colours.size()); ++f) {
            int d = 0;
            for (int c = 0; c < 3; ++c) d += (colours[f][c] - mean[c]) * (colours[f][c] - mean[c]);
            if (d < best_distance) best = f, best_distance = d;
        }
        EXPECT_LT(best_distance, 3 * 8 * 8) << "image " << i << " matches no file's colour";
        return best;
    }
};

/// One 200 x 150 PNG whose red rises left to right (0 to 255) and green top to bottom, so a
/// crop's extent and a flip can be read back from the output.
struct GradientFolder {
    static constexpr int kWidth = 200, kHeight = 150;
    TempDir dir;
    GradientFolder() {
        fs::create_directories(dir.path() / "only");
        write_png(dir.path() / "only" / "gradient.png", kWidth, kHeight, 3, [](int x, int y) {
            return Rgb{static_cast<int>(std::lround(x * 255.0 / (kWidth - 1))),
                       static_cast<int>(std::lround(y * 255.0 / (kHeight - 1))), 128};
        });
    }
};

template <typename F>
void expect_input_error_naming(F&& action, const std::string& path) {
    try {
        action();
        ADD_FAILURE() << "expected an InputError naming " << path;
    } catch (const InputError& error) {
        EXPECT_NE(std::string(error.what()).find(path), std::string::npos)
            << "message '" << error.what() << "' does not name " << path;
    }
}

// ----- image folders ------------------------------------------------------------------------

TEST(ImageFolderData, CountsClassesAndImagesIgnoringOtherFiles) {
    ColourFolder folder;
    const auto data = make_image_folder_data(folder.dir.path(), 24, 7);
    EXPECT_EQ(data->classes(), 3);
    EXPECT_EQ(data->images(), 12);
    EXPECT_EQ(data->description(), folder.dir.path().string());
}

TEST(ImageFolderData, BatchHasShapeAndTheLabelOfEachFilesFolder) {
    ColourFolder folder;
    const auto data = make_image_folder_data(folder.dir.path(), 24, 7);
    Batch batch;
    data->fill(0, 12, batch);
    EXPECT_EQ(batch.size, 12);
    EXPECT_EQ(batch.image_size, 24);
    ASSERT_EQ(batch.images.size(), 12u * 3 * 24 * 24);
    ASSERT_EQ(batch.labels.size(), 12u);
    for (int i = 0; i < 12; ++i) {
        ASSERT_GE(batch.labels[i], 0);
        ASSERT_LT(batch.labels[i], 3);
        EXPECT_EQ(batch.labels[i], folder.label_of(folder.identify(batch, i))) << "image " << i;
    }
    // A smaller fill into the same batch resizes it.
    data->fill(3, 2, batch);
    EXPECT_EQ(batch.size, 2);
    EXPECT_EQ(batch.images.size(), 2u * 3 * 24 * 24);
}

TEST(ImageFolderData, VisitsEveryFileOncePerEpochInAFreshOrderEachEpoch) {
    ColourFolder folder;
    const auto data = make_image_folder_data(folder.dir.path(), 16, 11);
    std::vector<std::vector<int>> orders;
    for (int epoch = 0; epoch < 3; ++epoch) {
        Batch batch;
        data->fill(epoch * 12, 12, batch);
        std::vector<int> order;
        for (int i = 0; i < 12; ++i) order.push_back(folder.identify(batch, i));
        EXPECT_EQ(std::set<int>(order.begin(), order.end()).size(), 12u) << "epoch " << epoch;
        orders.push_back(order);
    }
    EXPECT_NE(orders[0], orders[1]);
    EXPECT_NE(orders[1], orders[2]);
    // A batch across the epoch boundary reads the same files as the two epochs do.
    Batch across;
    data->fill(6, 12, across);
    for (int i = 0; i < 12; ++i) {
        const int p = 6 + i;
        EXPECT_EQ(folder.identify(across, i), orders[p / 12][p % 12]) << "position " << p;
    }
}

TEST(ImageFolderData, NormalisesWithTheImageNetMeanAndStd) {
    TempDir dir;
    fs::create_directories(dir.path() / "orange");
    write_png(dir.path() / "orange" / "o.png", 37, 29, 3, uniform({255, 128, 0}));
    const auto data = make_image_folder_data(dir.path(), 20, 3);
    Batch batch;
    data->fill(0, 8, batch);
    const std::array<double, 3> expected{(1.0 - 0.485) / 0.229, (128 / 255.0 - 0.456) / 0.224, (0 - 0.406) / 0.225};
    const std::size_t plane = 20 * 20;
    for (int i = 0; i < 8; ++i)
        for (int c = 0; c < 3; ++c)
            for (std::size_t k = 0; k < plane; ++k)
                ASSERT_NEAR(batch.images[(i * 3 + c) * plane + k], expected[c], 1e-4)
                    << "image " << i << " channel " << c;
    EXPECT_EQ(batch.labels, std::vector<std::int32_t>(8, 0));
}

/// A 16-bit RGB PNG with no gamma chunk, every pixel `colour` (16-bit values).
void write_png16(const fs::path& file, int width, int height, std::array<std::uint16_t, 3> colour) {
    FILE* out = std::fopen(file.c_str(), "wb");
    ASSERT_NE(out, nullptr);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png_create_info_struct(png);
    png_init_io(png, out);
    png_set_IHDR(png, info, width, height, 16, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    std::vector<std::uint8_t> row(static_cast<std::size_t>(width) * 6);
    for (int x = 0; x < width; ++x)
        for (int c = 0; c < 3; ++c) row[x * 6 + 2 * c] = colour[c] >> 8, row[x * 6 + 2 * c + 1] = colour[c] & 0xff;
    for (int y = 0; y < height; ++y) png_write_row(png, row.data());
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    std::fclose(out);
}

/// The colour of a folder of one uniformly coloured image, in 0..255 units, and the largest
/// spread over the image's pixels.
std::pair<std::array<double, 3>, double> colour_of_only_image(const fs::path& root) {
    const auto data = make_image_folder_data(root, 12, 2);
    Batch batch;
    data->fill(0, 1, batch);
    std::array<double, 3> mean{};
    double spread = 0;
    for (int c = 0; c < 3; ++c) {
        double low = 1e9, high = -1e9;
        for (int y = 0; y < 12; ++y)
            for (int x = 0; x < 12; ++x) {
                const double v = pixel_255(batch, 0, c, x, y);
                mean[c] += v / 144, low = std::min(low, v), high = std::max(high, v);
            }
        spread = std::max(spread, high - low);
    }
    return {mean, spread};
}

TEST(ImageFolderData, ConvertsSixteenBitPalettedAndCmykFilesToEightBitRgb) {
    struct Case {
        std::string name;
        std::function<void(const fs::path&)> write;
        std::array<double, 3> expected;
        double tolerance;
    };
    const std::vector<Case> cases{
        // 16-bit without gamma information is read as sRGB, as PIL does: the high byte.
        {"deep.png",
         [](const fs::path& f) {
             write_png16(f, 9, 7, {0x8080, 0x4040, 0xc8c8});
         },
         {128, 64, 200},
         0.01},
        {"paletted.png",
         [](const fs::path& f) {
             const std::array<std::uint8_t, 6> colormap{0, 0, 0, 30, 160, 90};
             std::vector<std::uint8_t> indices(11 * 5, 1);
             png_image image{};
             image.version = PNG_IMAGE_VERSION;
             image.width = 11, image.height = 5;
             image.format = PNG_FORMAT_RGB_COLORMAP;
             image.colormap_entries = 2;
             ASSERT_TRUE(png_image_write_to_file(&image, f.c_str(), 0, indices.data(), 0, colormap.data()))
                 << image.message;
         },
         {30, 160, 90},
         0.01},
        // Adobe CMYK JPEGs store inverted ink: R = C*K/255 and so on.
        {"ink.jpg",
         [](const fs::path& f) {
             std::vector<unsigned char> cmyk(16 * 16 * 4);
             for (std::size_t k = 0; k < cmyk.size(); k += 4)
                 cmyk[k] = 200, cmyk[k + 1] = 100, cmyk[k + 2] = 50, cmyk[k + 3] = 220;
             tjhandle tj = tjInitCompress();
             unsigned char* out = nullptr;
             unsigned long size = 0;
             ASSERT_EQ(tjCompress2(tj, cmyk.data(), 16, 0, 16, TJPF_CMYK, &out, &size, TJSAMP_444, 95, 0), 0);
             write_bytes(f, std::vector<unsigned char>(out, out + size));
             tjFree(out);
             tjDestroy(tj);
         },
         {200 * 220 / 255.0, 100 * 220 / 255.0, 50 * 220 / 255.0},
         2.0},
    };
    for (const Case& test : cases) {
        SCOPED_TRACE(test.name);
        TempDir dir;
        fs::create_directories(dir.path() / "c");
        test.write(dir.path() / "c" / test.name);
        const auto [colour, spread] = colour_of_only_image(dir.path());
        EXPECT_LT(spread, 1.0);
        for (int c = 0; c < 3; ++c) EXPECT_NEAR(colour[c], test.expected[c], test.tolerance + 0.5) << "channel " << c;
    }
}

TEST(ImageFolderData, PixelsArePureFunctionsOfSeedAndPosition) {
    GradientFolder folder;
    const auto first = make_image_folder_data(folder.dir.path(), 32, 5);
    const auto second = make_image_folder_data(folder.dir.path(), 32, 5);
    const auto other_seed = make_image_folder_data(folder.dir.path(), 32, 6);
    Batch a, b, one, c;
    first->fill(5, 3, a);
    second->fill(5, 3, b);
    EXPECT_EQ(a.images, b.images);
    first->fill(6, 1, one);
    EXPECT_EQ(one.images, image_of(a, 1));
    EXPECT_NE(image_of(a, 0), image_of(a, 1));
    EXPECT_NE(image_of(a, 1), image_of(a, 2));
    other_seed->fill(5, 3, c);
    EXPECT_NE(a.images, c.images);
}

TEST(ImageFolderData, CropsCoverEightToHundredPercentWithBoundedAspectAndHalfAreFlipped) {
    GradientFolder folder;
    constexpr int kSize = 32, kCount = 60;
    const auto data = make_image_folder_data(folder.dir.path(), kSize, 9);
    Batch batch;
    data->fill(0, kCount, batch);
    int flipped = 0;
    double smallest = 1, largest = 0;
    for (int i = 0; i < kCount; ++i) {
        // Mean red of the first and last column, mean green of the first and last row.
        double red_left = 0, red_right = 0, green_top = 0, green_bottom = 0;
        for (int k = 0; k < kSize; ++k) {
            red_left += pixel_255(batch, i, 0, 0, k) / kSize;
            red_right += pixel_255(batch, i, 0, kSize - 1, k) / kSize;
            green_top += pixel_255(batch, i, 1, k, 0) / kSize;
            green_bottom += pixel_255(batch, i, 1, k, kSize - 1) / kSize;
        }
        if (red_left > red_right) ++flipped;
        EXPECT_LT(green_top, green_bottom) << "image " << i << " is upside down";
        // A crop w source pixels wide spans (w - w/S) pixels between its first and last column
        // centres; the gradient rises 255 per (width - 1) pixels.
        const double width =
            std::abs(red_right - red_left) / 255.0 * (GradientFolder::kWidth - 1) * kSize / (kSize - 1);
        const double height = (green_bottom - green_top) / 255.0 * (GradientFolder::kHeight - 1) * kSize / (kSize - 1);
        const double area = width * height / (GradientFolder::kWidth * GradientFolder::kHeight);
        EXPECT_GT(area, 0.07) << "image " << i;
        EXPECT_LT(area, 1.03) << "image " << i;
        EXPECT_GT(width / height, 0.72) << "image " << i;
        EXPECT_LT(width / height, 1.39) << "image " << i;
        smallest = std::min(smallest, area), largest = std::max(largest, area);
    }
    EXPECT_GT(flipped, kCount / 5);
    EXPECT_LT(flipped, kCount * 4 / 5);
    EXPECT_LT(smallest, 0.3);
    EXPECT_GT(largest, 0.6);
}

// The case: an empty class folder counted as a class. It is refused, naming the folder,
// even when the other classes hold images (a text file does not make it a class of images).
TEST(ImageFolderData, AnEmptyClassFolderIsRefusedNamingIt) {
    TempDir dir;
    fs::create_directories(dir.path() / "a_empty");
    fs::create_directories(dir.path() / "b_full");
    fs::create_directories(dir.path() / "c_text");
    std::ofstream(dir.path() / "c_text" / "notes.txt") << "no images here";
    write_png(dir.path() / "b_full" / "x.png", 10, 10, 3, uniform({9, 9, 9}));
    expect_input_error_naming([&] { make_image_folder_data(dir.path(), 8, 1); }, (dir.path() / "a_empty").string());
    expect_input_error_naming([&] { make_image_folder_data(dir.path(), 8, 1); }, "nor do 1 other class folders");
    fs::remove_all(dir.path() / "a_empty");
    fs::remove_all(dir.path() / "c_text");
    const auto data = make_image_folder_data(dir.path(), 8, 1);
    EXPECT_EQ(data->classes(), 1);
    EXPECT_EQ(data->images(), 1);
}

TEST(ImageFolderData, InputErrorsNameThePath) {
    TempDir dir;
    const fs::path missing = dir.path() / "missing";
    expect_input_error_naming([&] { make_image_folder_data(missing, 8, 1); }, missing.string());

    const fs::path file = dir.path() / "file.png";
    write_png(file, 4, 4, 3, uniform({1, 2, 3}));
    expect_input_error_naming([&] { make_image_folder_data(file, 8, 1); }, file.string());

    const fs::path flat = dir.path() / "flat";
    fs::create_directories(flat);
    write_png(flat / "image.png", 4, 4, 3, uniform({1, 2, 3}));
    expect_input_error_naming([&] { make_image_folder_data(flat, 8, 1); }, flat.string());

    const fs::path imageless = dir.path() / "imageless";
    fs::create_directories(imageless / "a");
    fs::create_directories(imageless / "b");
    std::ofstream(imageless / "b" / "readme.txt") << "text";
    expect_input_error_naming([&] { make_image_folder_data(imageless, 8, 1); }, imageless.string());

    EXPECT_THROW(make_image_folder_data(flat, 0, 1), InputError);
}

/// A folder whose one class holds just `name` with `bytes`: every position reads it.
struct OneFileFolder {
    TempDir dir;
    fs::path file;
    OneFileFolder(const std::string& name, const std::vector<unsigned char>& bytes) {
        fs::create_directories(dir.path() / "c");
        file = dir.path() / "c" / name;
        write_bytes(file, bytes);
    }
};

TEST(ImageFolderData, CorruptFilesAreInputErrorsNamingTheFileWhenRead) {
    const auto jpeg = jpeg_bytes(64, 48, [](int x, int y) { return Rgb{x * 4, y * 5, 7}; });
    TempDir png_dir;
    write_png(png_dir.path() / "p.png", 64, 48, 3, [](int x, int y) {
        return Rgb{(x * 37 + y * 11) % 256, (x * x + y * 3) % 256, (x * y) % 256};
    });
    const auto png = read_bytes(png_dir.path() / "p.png");
    ASSERT_GT(jpeg.size(), 400u);
    ASSERT_GT(png.size(), 1000u);

    const std::vector<std::pair<std::string, std::vector<unsigned char>>> cases{
        {"garbage.jpg", std::vector<unsigned char>(300, 0x5a)},
        {"empty.png", {}},
        {"header_only.jpg", {jpeg.begin(), jpeg.begin() + 100}},
        {"truncated.jpg", {jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(jpeg.size() * 2 / 3)}},
        {"truncated.png", {png.begin(), png.begin() + static_cast<std::ptrdiff_t>(png.size() / 2)}},
    };
    for (const auto& [name, bytes] : cases) {
        SCOPED_TRACE(name);
        OneFileFolder folder(name, bytes);
        const auto data = make_image_folder_data(folder.dir.path(), 16, 1);  // listing does not decode
        Batch batch;
        expect_input_error_naming([&] { data->fill(0, 1, batch); }, folder.file.string());
    }
}

/// A valid 16 x 16 JPEG whose frame header (SOF0) is patched to claim width x height pixels.
std::vector<unsigned char> jpeg_claiming(int width, int height) {
    std::vector<unsigned char> bytes = jpeg_bytes(16, 16, uniform({200, 30, 30}));
    for (std::size_t i = 0; i + 9 < bytes.size(); ++i) {
        if (bytes[i] == 0xff && bytes[i + 1] == 0xc0) {  // SOF0: length (2), precision (1), height (2), width (2)
            bytes[i + 5] = static_cast<unsigned char>(height >> 8),
                      bytes[i + 6] = static_cast<unsigned char>(height & 0xff);
            bytes[i + 7] = static_cast<unsigned char>(width >> 8),
                      bytes[i + 8] = static_cast<unsigned char>(width & 0xff);
            return bytes;
        }
    }
    ADD_FAILURE() << "no SOF0 marker in the JPEG TurboJPEG wrote";
    return bytes;
}

// The case: a 2 KB JPEG whose header claims 30000 x 30000 pixels cost 3.1 GB per rank.
// Its header is read first and the file refused, by side (40000) or by area (30000 x 30000, and
// 10000 x 10000 = 100 megapixels), before a byte of pixels is allocated.
TEST(ImageFolderData, AJpegClaimingHugeDimensionsIsRefusedBeforeDecoding) {
    for (const auto& [width, height] : {std::pair{30000, 30000}, std::pair{10000, 10000}, std::pair{40000, 16}}) {
        const std::vector<unsigned char> bytes = jpeg_claiming(width, height);
        ASSERT_LT(bytes.size(), 2048u);
        OneFileFolder folder("huge.jpg", bytes);
        const auto data = make_image_folder_data(folder.dir.path(), 16, 1);
        Batch batch;
        expect_input_error_naming([&] { data->fill(0, 1, batch); }, folder.file.string());
        expect_input_error_naming([&] { data->fill(0, 1, batch); },
                                  std::to_string(width) + " x " + std::to_string(height) + " pixels");
    }
    // The unpatched kind of file decodes.
    OneFileFolder fine("fine.jpg", jpeg_bytes(64, 48, uniform({1, 2, 3})));
    Batch batch;
    make_image_folder_data(fine.dir.path(), 16, 1)->fill(0, 1, batch);
    EXPECT_EQ(batch.labels, std::vector<std::int32_t>{0});
}

// ----- synthetic data -----------------------------------------------------------------------

struct ClassStatistics {
    std::vector<std::vector<double>> means;  ///< per class, per value
    std::vector<int> counts;                 ///< images per class
};

ClassStatistics class_means(const Batch& batch, int classes) {
    const std::size_t n = static_cast<std::size_t>(3) * batch.image_size * batch.image_size;
    ClassStatistics stats{std::vector<std::vector<double>>(classes, std::vector<double>(n, 0.0)),
                          std::vector<int>(classes, 0)};
    for (int i = 0; i < batch.size; ++i) {
        const int label = batch.labels[i];
        ++stats.counts[label];
        for (std::size_t k = 0; k < n; ++k) stats.means[label][k] += batch.images[i * n + k];
    }
    for (int c = 0; c < classes; ++c)
        for (double& v : stats.means[c]) v /= std::max(1, stats.counts[c]);
    return stats;
}

double correlation(const std::vector<float>& a, const std::vector<float>& b) {
    double ma = 0, mb = 0;
    for (std::size_t k = 0; k < a.size(); ++k) ma += a[k], mb += b[k];
    ma /= a.size(), mb /= b.size();
    double ab = 0, aa = 0, bb = 0;
    for (std::size_t k = 0; k < a.size(); ++k) {
        ab += (a[k] - ma) * (b[k] - mb);
        aa += (a[k] - ma) * (a[k] - ma);
        bb += (b[k] - mb) * (b[k] - mb);
    }
    return ab / std::sqrt(aa * bb);
}

TEST(SyntheticData, ShapesLabelsAndRoughlyStandardisedFiniteValues) {
    const auto data = make_synthetic_data(10, 32, 1000, 42);
    EXPECT_EQ(data->classes(), 10);
    EXPECT_EQ(data->images(), 1000);
    EXPECT_EQ(data->description(), "synthetic");
    Batch batch;
    data->fill(0, 200, batch);
    ASSERT_EQ(batch.size, 200);
    ASSERT_EQ(batch.image_size, 32);
    ASSERT_EQ(batch.images.size(), 200u * 3 * 32 * 32);
    std::vector<int> per_class(10, 0);
    for (std::int32_t label : batch.labels) {
        ASSERT_GE(label, 0);
        ASSERT_LT(label, 10);
        ++per_class[label];
    }
    for (int count : per_class) EXPECT_GT(count, 5);  // about 20 each
    double sum = 0, squares = 0;
    for (float v : batch.images) {
        ASSERT_TRUE(std::isfinite(v));
        sum += v, squares += static_cast<double>(v) * v;
    }
    const double mean = sum / batch.images.size();
    const double std_dev = std::sqrt(squares / batch.images.size() - mean * mean);
    EXPECT_LT(std::abs(mean), 0.25);
    EXPECT_GT(std_dev, 0.75);
    EXPECT_LT(std_dev, 1.25);
}

TEST(SyntheticData, PixelsArePureFunctionsOfSeedAndPosition) {
    const auto first = make_synthetic_data(5, 16, 100, 3);
    const auto second = make_synthetic_data(5, 16, 100, 3);
    const auto other_seed = make_synthetic_data(5, 16, 100, 4);
    Batch a, b, one, c;
    first->fill(40, 4, a);
    second->fill(40, 4, b);
    EXPECT_EQ(a.images, b.images);
    EXPECT_EQ(a.labels, b.labels);
    first->fill(42, 1, one);
    EXPECT_EQ(one.images, image_of(a, 2));
    EXPECT_EQ(one.labels[0], a.labels[2]);
    for (int i = 0; i + 1 < 4; ++i) EXPECT_NE(image_of(a, i), image_of(a, i + 1));
    other_seed->fill(40, 4, c);
    EXPECT_NE(a.images, c.images);
}

TEST(SyntheticData, ClassesHaveDistinctPatternsThatANearestMeanClassifierLearns) {
    constexpr int kClasses = 8;
    const auto data = make_synthetic_data(kClasses, 24, 100000, 17);
    Batch train, test;
    data->fill(0, 400, train);
    data->fill(5000, 200, test);
    const ClassStatistics stats = class_means(train, kClasses);
    for (int c = 0; c < kClasses; ++c) ASSERT_GT(stats.counts[c], 20);
    const std::size_t n = stats.means[0].size();
    // Class means differ clearly: the RMS difference of two class means is well above the noise
    // left in a mean of about 50 images (0.6 / sqrt(50) = 0.085).
    for (int a = 0; a < kClasses; ++a)
        for (int b = a + 1; b < kClasses; ++b) {
            double squares = 0;
            for (std::size_t k = 0; k < n; ++k) squares += std::pow(stats.means[a][k] - stats.means[b][k], 2);
            EXPECT_GT(std::sqrt(squares / n), 0.4) << "classes " << a << " and " << b;
        }
    // Held-out images go to the nearest class mean: the data is learnable.
    int correct = 0;
    for (int i = 0; i < test.size; ++i) {
        int best = -1;
        double best_distance = 1e300;
        for (int c = 0; c < kClasses; ++c) {
            double d = 0;
            for (std::size_t k = 0; k < n; ++k) d += std::pow(test.images[i * n + k] - stats.means[c][k], 2);
            if (d < best_distance) best = c, best_distance = d;
        }
        correct += best == test.labels[i];
    }
    EXPECT_GT(correct, test.size * 9 / 10);
}

TEST(SyntheticData, ImagesOfOneClassCorrelateMoreThanImagesOfDifferentClasses) {
    const auto data = make_synthetic_data(6, 24, 1000, 23);
    Batch batch;
    data->fill(0, 120, batch);
    double same = 0, different = 0;
    int same_pairs = 0, different_pairs = 0;
    for (int i = 0; i < batch.size; ++i)
        for (int j = i + 1; j < batch.size; ++j) {
            const double r = correlation(image_of(batch, i), image_of(batch, j));
            if (batch.labels[i] == batch.labels[j]) same += r, ++same_pairs;
            else different += r, ++different_pairs;
        }
    ASSERT_GT(same_pairs, 100);
    same /= same_pairs, different /= different_pairs;
    EXPECT_GT(same, 0.4);
    EXPECT_LT(same, 0.95);  // noise and shifts: not one constant image per class
    EXPECT_GT(same - different, 0.3);
}

TEST(SyntheticData, RejectsBadArguments) {
    EXPECT_THROW(make_synthetic_data(0, 32, 10, 1), InputError);
    EXPECT_THROW(make_synthetic_data(10, 0, 10, 1), InputError);
    EXPECT_THROW(make_synthetic_data(10, 32, 0, 1), InputError);
    const auto data = make_synthetic_data(2, 8, 10, 1);
    Batch batch;
    EXPECT_THROW(data->fill(-1, 1, batch), InputError);
    EXPECT_THROW(data->fill(0, -1, batch), InputError);
}

// ----- BatchLoader --------------------------------------------------------------------------

/// Synthetic data that takes `delay_per_image` per image, to make waiting measurable.
class SlowSource final : public DataSource {
public:
    explicit SlowSource(std::chrono::milliseconds delay_per_image)
        : inner_(make_synthetic_data(4, 8, 1000, 5)), delay_(delay_per_image) {}
    int classes() const override { return inner_->classes(); }
    std::int64_t images() const override { return inner_->images(); }
    int image_size() const override { return inner_->image_size(); }
    std::string description() const override { return "slow"; }
    void fill_into(std::int64_t position, int count, float* images, std::int32_t* labels) const override {
        std::this_thread::sleep_for(delay_ * count);
        inner_->fill_into(position, count, images, labels);
        fills_ += 1;
    }
    int fills() const { return fills_; }

private:
    std::unique_ptr<DataSource> inner_;
    std::chrono::milliseconds delay_;
    mutable std::atomic<int> fills_{0};
};

/// A loader's batch as vectors, to compare with a Batch.
std::vector<float> images_of(const BatchView& view) { return {view.images.begin(), view.images.end()}; }
std::vector<std::int32_t> labels_of(const BatchView& view) { return {view.labels.begin(), view.labels.end()}; }

TEST(BatchPosition, IsStepTimesTheGlobalBatchPlusTheWorkersOffset) {
    EXPECT_EQ(batch_position(0, 0, 1, 8), 0);
    EXPECT_EQ(batch_position(0, 1, 2, 8), 8);
    EXPECT_EQ(batch_position(3, 1, 2, 8), 3 * 16 + 8);
    EXPECT_EQ(batch_position(std::int64_t{1} << 33, 2, 4, 256),
              (std::int64_t{1} << 33) * 1024 + 512);  // no int overflow
}

TEST(BatchLoader, YieldsWhatFillGivesForThisWorkersPositions) {
    const auto data = make_synthetic_data(7, 12, 500, 8);
    constexpr int kBatch = 5, kWorkers = 3, kWorker = 1;
    BatchLoader loader(*data, kBatch, kWorker, kWorkers, 0, 3, 2);
    for (int step = 0; step < 8; ++step) {
        Batch expected;
        data->fill(static_cast<std::int64_t>(step) * kWorkers * kBatch + kWorker * kBatch, kBatch, expected);
        const BatchView& got = loader.next();
        ASSERT_EQ(got.size, kBatch) << "step " << step;
        EXPECT_EQ(got.image_size, 12);
        EXPECT_EQ(images_of(got), expected.images) << "step " << step;
        EXPECT_EQ(labels_of(got), expected.labels) << "step " << step;
    }
    EXPECT_GE(loader.wait_s(), 0.0);
    EXPECT_TRUE(std::isfinite(loader.wait_s()));
}

TEST(BatchLoader, ResumesFromTheFirstStep) {
    const auto data = make_synthetic_data(7, 12, 500, 8);
    BatchLoader whole(*data, 4, 0, 2, 0, 2, 3);
    BatchLoader resumed(*data, 4, 0, 2, 5, 2, 3);
    for (int step = 0; step < 5; ++step) whole.next();
    for (int step = 5; step < 9; ++step) {
        const BatchView& a = whole.next();
        const BatchView& b = resumed.next();
        EXPECT_EQ(images_of(a), images_of(b)) << "step " << step;
        EXPECT_EQ(labels_of(a), labels_of(b)) << "step " << step;
    }
}

TEST(BatchLoader, OneWorkerWithTwiceTheBatchSeesWhatTwoWorkersSeeTogether) {
    ColourFolder folder;
    const auto data = make_image_folder_data(folder.dir.path(), 16, 4);
    BatchLoader single(*data, 6, 0, 1, 0, 2, 2);
    BatchLoader rank0(*data, 3, 0, 2, 0, 1, 2);
    BatchLoader rank1(*data, 3, 1, 2, 0, 2, 1);
    // 5 steps of 6 images: two and a half epochs of 12 files.
    for (int step = 0; step < 5; ++step) {
        const BatchView& both = single.next();
        const BatchView& first = rank0.next();
        const BatchView& second = rank1.next();
        std::vector<float> images = images_of(first);
        images.insert(images.end(), second.images.begin(), second.images.end());
        std::vector<std::int32_t> labels = labels_of(first);
        labels.insert(labels.end(), second.labels.begin(), second.labels.end());
        EXPECT_EQ(images_of(both), images) << "step " << step;
        EXPECT_EQ(labels_of(both), labels) << "step " << step;
    }
}

/// Host memory that records what it hands out (as the CUDA network's pinned memory does).
class RecordingMemory final : public HostMemory {
public:
    void* allocate(std::size_t bytes) override {
        void* data = ::operator new(bytes);
        given.emplace_back(static_cast<std::byte*>(data), bytes);
        return data;
    }
    void release(void* data) noexcept override {
        released.push_back(static_cast<std::byte*>(data));
        ::operator delete(data);
    }
    /// The allocation [data, data + bytes) lies in, or -1.
    int allocation_of(const void* data, std::size_t bytes) const {
        const auto* p = static_cast<const std::byte*>(data);
        for (std::size_t a = 0; a < given.size(); ++a) {
            if (std::less_equal<const std::byte*>()(given[a].first, p) &&
                std::less_equal<const std::byte*>()(p + bytes, given[a].first + given[a].second)) {
                return static_cast<int>(a);
            }
        }
        return -1;
    }
    std::vector<std::pair<std::byte*, std::size_t>> given;
    std::vector<std::byte*> released;
};

// The decode threads write each batch where the given memory says (a GPU copies from there
// without staging): depth + 1 buffers of a whole batch, allocated once, used in turn, released
// with the loader; the images are what fill gives.
TEST(BatchLoader, DecodesIntoTheMemoryItIsGiven) {
    ColourFolder folder;
    const auto data = make_image_folder_data(folder.dir.path(), 16, 4);
    RecordingMemory memory;
    constexpr int kBatch = 5, kDepth = 2;
    const std::size_t bytes = sizeof(float) * kBatch * 3 * 16 * 16;
    {
        BatchLoader loader(*data, kBatch, 0, 1, 0, 2, kDepth, &memory);
        ASSERT_EQ(memory.given.size(), std::size_t{kDepth + 1});
        for (const auto& [at, size] : memory.given) EXPECT_EQ(size, bytes);
        std::vector<int> used;
        for (int step = 0; step < 6; ++step) {
            const BatchView& got = loader.next();
            ASSERT_EQ(got.images.size_bytes(), bytes);
            used.push_back(memory.allocation_of(got.images.data(), got.images.size_bytes()));
            Batch expected;
            data->fill(std::int64_t{step} * kBatch, kBatch, expected);
            EXPECT_EQ(images_of(got), expected.images) << "step " << step;
            EXPECT_EQ(labels_of(got), expected.labels) << "step " << step;
        }
        EXPECT_EQ(used, (std::vector<int>{0, 1, 2, 0, 1, 2}));
        EXPECT_TRUE(memory.released.empty());
    }
    ASSERT_EQ(memory.released.size(), std::size_t{kDepth + 1});
    for (const auto& [at, size] : memory.given) {
        EXPECT_NE(std::find(memory.released.begin(), memory.released.end(), at), memory.released.end());
    }
}

TEST(BatchLoader, CountsTheTimeTheCallerWaits) {
    const SlowSource slow(std::chrono::milliseconds(20));
    {
        // One thread, 4 images of 20 ms per batch, nothing done between calls: the caller waits
        // for most of every batch.
        BatchLoader loader(slow, 4, 0, 1, 0, 1, 1);
        const auto start = Clock::now();
        for (int step = 0; step < 3; ++step) loader.next();
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        EXPECT_GT(loader.wait_s(), 0.15);
        EXPECT_LE(loader.wait_s(), elapsed + 1e-3);
    }
    {
        // The caller computes for longer than a batch takes: after the first batch, no waiting.
        BatchLoader loader(slow, 2, 0, 1, 0, 2, 2);
        loader.next();
        const double first = loader.wait_s();
        for (int step = 0; step < 3; ++step) {
            std::this_thread::sleep_for(std::chrono::milliseconds(150));
            loader.next();
        }
        EXPECT_LT(loader.wait_s() - first, 0.05);
    }
}

TEST(BatchLoader, RethrowsACorruptFilesInputErrorAndStillShutsDown) {
    OneFileFolder folder("broken.png", std::vector<unsigned char>(100, 0x42));
    const auto data = make_image_folder_data(folder.dir.path(), 16, 1);
    const auto start = Clock::now();
    {
        BatchLoader loader(*data, 4, 0, 1, 0, 2, 2);
        expect_input_error_naming([&] { loader.next(); }, folder.file.string());
        expect_input_error_naming([&] { loader.next(); }, folder.file.string());
    }
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.0);
}

TEST(BatchLoader, DestructorReturnsPromptlyWhenTheCallerStopsEarly) {
    const SlowSource slow(std::chrono::milliseconds(10));
    const auto start = Clock::now();
    {
        // 64 images of 10 ms per batch, 4 batches ahead: finishing them would take over a second.
        BatchLoader loader(slow, 64, 0, 1, 0, 2, 4);
        loader.next();
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    // One batch (0.32 s on two threads) plus at most one chunk of 8 images per thread.
    EXPECT_LT(seconds, 0.8);
    EXPECT_LE(slow.fills(), 8 + 2 * 2 + 2);  // the first batch's 8 chunks and a few more
    const auto idle_start = Clock::now();
    { BatchLoader never_read(slow, 64, 0, 1, 0, 2, 4); }
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - idle_start).count(), 0.3);
}

TEST(BatchLoader, RejectsBadArguments) {
    const auto data = make_synthetic_data(2, 8, 10, 1);
    EXPECT_THROW(BatchLoader(*data, 0, 0, 1, 0, 1, 1), InputError);
    EXPECT_THROW(BatchLoader(*data, 2, 2, 2, 0, 1, 1), InputError);
    EXPECT_THROW(BatchLoader(*data, 2, -1, 2, 0, 1, 1), InputError);
    EXPECT_THROW(BatchLoader(*data, 2, 0, 1, -1, 1, 1), InputError);
    EXPECT_THROW(BatchLoader(*data, 2, 0, 1, 0, 0, 1), InputError);
    EXPECT_THROW(BatchLoader(*data, 2, 0, 1, 0, 1, 0), InputError);
}

}  // namespace
}  // namespace epochcast
