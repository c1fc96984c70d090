// The prefetching BatchLoader: a pool of decode threads fills the batches of one rank's coming
// steps (executor/data.hpp's positions for this worker) while the caller computes, each batch
// straight into memory the loader owns (plain, or page-locked memory a GPU backend hands it),
// and hands them out in step order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "executor/data.hpp"

namespace epochcast {

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
    int size = 0;                          ///< images in the batch
    int image_size = 0;                    ///< side in pixels
    std::span<const float> images;         ///< size x 3 x S x S fp32 NCHW, normalised as Batch's
    std::span<const std::int32_t> labels;  ///< size labels
};

/// Prefetches the batches of the coming steps on a pool of decode threads while the caller
/// computes, and measures how long the caller waited.
class BatchLoader {
public:
    /// `batch` images per step for worker `worker` of `workers`, first step `first_step`.
    /// `threads` decode threads (>= 1), `depth` batches in flight (>= 1). The decode threads
    /// write each batch's images straight into one of depth + 1 buffers from `memory` (plain
    /// memory when null; it must outlive the loader), allocated here once.
    BatchLoader(const DataSource& source, int batch, int worker, int workers, std::int64_t first_step, int threads,
                int depth, HostMemory* memory = nullptr);
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
