// The GPU synthetic data (executor/cuda/synthetic.hpp) against the host dataset (make_synthetic_data)
// for the same (seed, position): labels equal, every value within 1e-5 (the two differ only where
// CUDA's and glibc's double sin/cos round to different floats, a few float ulps on values below 5;
// executor/synthetic.hpp). Skips when no GPU is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "executor/data.hpp"
#include "model/errors.hpp"

#ifdef EPOCHCAST_WITH_CUDA
#include "executor/cuda/check.hpp"
#include "executor/cuda/synthetic.hpp"
#include "tests/executor/require_gpu.hpp"
#endif

namespace epochcast {
namespace {

#ifdef EPOCHCAST_WITH_CUDA

constexpr double kTolerance = 1e-5;

struct Case {
    int classes, image_size;
    std::uint64_t seed;
    std::int64_t position;
    int count;
};

/// The GPU's batch of `c`, copied back.
Batch gpu_batch(const Case& c, cuda::SyntheticBatches& batches) {
    Batch batch;
    batch.size = c.count;
    batch.image_size = c.image_size;
    batch.images.resize(std::size_t(c.count) * 3 * c.image_size * c.image_size);
    batch.labels.resize(std::size_t(c.count));
    cuda::DeviceBuffer images(batch.images.size() * sizeof(float));
    cuda::DeviceBuffer labels(batch.labels.size() * sizeof(std::int32_t));
    batches.fill(c.position, c.count, static_cast<float*>(images.data()), static_cast<std::int32_t*>(labels.data()),
                 nullptr);
    EPOCHCAST_CUDA_CHECK(cudaDeviceSynchronize());
    EPOCHCAST_CUDA_CHECK(cudaMemcpy(batch.images.data(), images.data(), images.bytes(), cudaMemcpyDeviceToHost));
    EPOCHCAST_CUDA_CHECK(cudaMemcpy(batch.labels.data(), labels.data(), labels.bytes(), cudaMemcpyDeviceToHost));
    return batch;
}

void expect_same_as_host(const Case& c) {
    SCOPED_TRACE("classes " + std::to_string(c.classes) + ", " + std::to_string(c.image_size) + " px, seed " +
                 std::to_string(c.seed) + ", position " + std::to_string(c.position));
    Batch host;
    make_synthetic_data(c.classes, c.image_size, 1000, c.seed)->fill(c.position, c.count, host);
    cuda::SyntheticBatches batches(c.classes, c.image_size, c.seed, c.count);
    const Batch gpu = gpu_batch(c, batches);
    EXPECT_EQ(gpu.labels, host.labels);
    ASSERT_EQ(gpu.images.size(), host.images.size());
    double worst = 0;
    std::size_t differing = 0;
    for (std::size_t i = 0; i < host.images.size(); ++i) {
        worst = std::max(worst, std::abs(double(gpu.images[i]) - double(host.images[i])));
        differing += gpu.images[i] != host.images[i];
    }
    EXPECT_LE(worst, kTolerance) << differing << " of " << host.images.size() << " values differ at all";
    // Not all zero or constant: the kernel really drew images.
    double squares = 0;
    for (float value : gpu.images) squares += double(value) * value;
    EXPECT_GT(squares / double(gpu.images.size()), 0.5);
}

TEST(CudaSyntheticData, MatchesTheHostDataset) {
    REQUIRE_GPU();
    EPOCHCAST_CUDA_CHECK(cudaSetDevice(0));
    expect_same_as_host({10, 32, 7, 0, 8});
    expect_same_as_host({1000, 61, 123456789, 98765, 5});        // odd side, many classes
    expect_same_as_host({4, 224, 1, std::int64_t{1} << 40, 2});  // ImageNet's side, a far position
}

TEST(CudaSyntheticData, TwoHalfBatchesAreOneWholeBatch) {
    REQUIRE_GPU();
    EPOCHCAST_CUDA_CHECK(cudaSetDevice(0));
    const Case whole{10, 16, 3, 100, 6}, first{10, 16, 3, 100, 3}, second{10, 16, 3, 103, 3};
    cuda::SyntheticBatches batches(10, 16, 3, 6);
    const Batch all = gpu_batch(whole, batches), a = gpu_batch(first, batches), b = gpu_batch(second, batches);
    std::vector<float> joined = a.images;
    joined.insert(joined.end(), b.images.begin(), b.images.end());
    EXPECT_EQ(joined, all.images);
}

TEST(CudaSyntheticData, RefusesBadArguments) {
    REQUIRE_GPU();
    EPOCHCAST_CUDA_CHECK(cudaSetDevice(0));
    EXPECT_THROW(cuda::SyntheticBatches(0, 16, 1, 4), InputError);
    EXPECT_THROW(cuda::SyntheticBatches(10, 0, 1, 4), InputError);
    EXPECT_THROW(cuda::SyntheticBatches(10, 16, 1, 0), InputError);
    cuda::SyntheticBatches batches(10, 16, 1, 4);
    cuda::DeviceBuffer images(5 * 3 * 16 * 16 * sizeof(float)), labels(5 * sizeof(std::int32_t));
    auto* image_data = static_cast<float*>(images.data());
    auto* label_data = static_cast<std::int32_t*>(labels.data());
    EXPECT_THROW(batches.fill(0, 5, image_data, label_data, nullptr), InputError);
    EXPECT_THROW(batches.fill(-1, 4, image_data, label_data, nullptr), InputError);
}

#else

TEST(CudaSyntheticData, NotBuilt) { GTEST_SKIP() << "this build has no CUDA backend (EPOCHCAST_WITH_CUDA is off)"; }

#endif

}  // namespace
}  // namespace epochcast
