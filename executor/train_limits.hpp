// The bounds of epochcast-train's flags that depend on more than the flag itself (docs/cli.md,
// "epochcast-train"): threads by the host's cores, the classes and the batch by what epochcast
// models, and one rank's tensors by the host's memory. Header-only, on model/ alone: `epochcast
// run` (cli/run.cpp) refuses the same values before it starts anything, and cli/ does not link
// the executor (built only with MPI and oneDNN).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "model/errors.hpp"
#include "model/resnet.hpp"
#include "model/scenario.hpp"
#include "model/text_io.hpp"
#include "model/types.hpp"
#include "model/workload.hpp"

namespace epochcast {

/// Compute threads, and decode threads, per rank and online core of the rank's host: more run no
/// faster, and 100,000 of them crashed libgomp (SIGSEGV) or ran the host out of processes.
inline constexpr int kMaxThreadsPerCore = 4;

/// The most steps --steps and --stop-after take: 10^12, some 30 years at a millisecond a step.
/// 2^64 was read as 2^63 - 1 and started training.
inline constexpr std::uint64_t kMaxSteps = 1'000'000'000'000;

/// What the host a rank runs on offers.
struct HostCapacity {
    int cores = 1;            ///< online cores
    double memory_bytes = 0;  ///< physical memory; 0: unknown (no memory bound)
};

/// This host's online cores and physical memory.
inline HostCapacity this_host_capacity() {
    const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_bytes = ::sysconf(_SC_PAGE_SIZE);
    HostCapacity host;
    host.cores = static_cast<int>(std::clamp(cores, 1L, static_cast<long>(INT_MAX)));
    if (pages > 0 && page_bytes > 0) host.memory_bytes = static_cast<double>(pages) * static_cast<double>(page_bytes);
    return host;
}

/// The trainer's flags the bounds look at, with the trainer's defaults.
struct TrainerShape {
    std::string backend = "cpu";
    std::string model = "resnet50";
    int image_size = 224;
    std::optional<int> classes;  ///< --classes; nullopt: not given (1000 for synthetic data)
    int batch_per_gpu = 32;
    Precision precision = Precision::fp32;
    int threads = 1;
    int data_threads = 1;
};

/// Throws InputError unless 1 <= `threads` <= kMaxThreadsPerCore x `host`'s cores (naming `flag`);
/// `host` null: at least 1.
inline void check_threads(const char* flag, int threads, const HostCapacity* host) {
    if (threads < 1) throw InputError(std::string(flag) + " must be at least 1 (got " + std::to_string(threads) + ")");
    if (host == nullptr) return;
    const long long most = static_cast<long long>(kMaxThreadsPerCore) * host->cores;
    if (threads > most) {
        throw InputError(std::string(flag) + " " + std::to_string(threads) + " is more than this host runs: at most " +
                         format_count(static_cast<double>(most)) + " (" + std::to_string(kMaxThreadsPerCore) +
                         " per core, " + std::to_string(host->cores) + " cores)");
    }
}

namespace detail {

/// "23.5 GiB"
inline std::string gib(double bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
    return text;
}

}  // namespace detail

/// Throws InputError naming the flag when `shape` is beyond what epochcast-train runs: threads and
/// data threads 1 to kMaxThreadsPerCore per core of `host`, image size 32 to kMaxImageSizePx,
/// classes 1 to kMaxClasses, batch 1 to kMaxBatchPerGpu, and on the CPU backend one rank's
/// weights, gradients, momentum and activations (model/workload.hpp's estimate, which the CPU
/// ranks exceed) within the host's memory. `host` null: a host not known here (another one of
/// `epochcast run`'s), whose own trainer checks the bounds that depend on it.
inline void check_trainer_limits(const TrainerShape& shape, const HostCapacity* host) {
    check_threads("--threads", shape.threads, host);
    check_threads("--data-threads", shape.data_threads, host);
    if (shape.image_size < kMinImageSizePx || shape.image_size > kMaxImageSizePx) {
        throw InputError("--image-size must be " + std::to_string(kMinImageSizePx) + " to " +
                         format_count(kMaxImageSizePx) + " px (got " + std::to_string(shape.image_size) + ")");
    }
    if (shape.classes && (*shape.classes < 1 || *shape.classes > kMaxClasses)) {
        throw InputError("--classes must be 1 to " + format_count(kMaxClasses) + " (got " +
                         std::to_string(*shape.classes) + ")");
    }
    if (shape.batch_per_gpu < 1 || shape.batch_per_gpu > kMaxBatchPerGpu) {
        throw InputError("--batch-per-gpu must be 1 to " + format_count(kMaxBatchPerGpu) + " images (got " +
                         std::to_string(shape.batch_per_gpu) + ")");
    }
    if (host == nullptr || host->memory_bytes <= 0 || shape.backend != "cpu") return;
    const int classes = shape.classes.value_or(1000);
    const Workload workload = make_workload(build_resnet(shape.model, shape.image_size, classes));
    const double needed = training_memory(workload, shape.precision, shape.batch_per_gpu).tensors_bytes();
    if (needed > host->memory_bytes) {
        throw InputError(shape.model + " at " + std::to_string(shape.image_size) + " px, " + format_count(classes) +
                         " classes and --batch-per-gpu " + std::to_string(shape.batch_per_gpu) + " needs over " +
                         detail::gib(needed) + " per rank, more than this host's " + detail::gib(host->memory_bytes) +
                         " of memory: give a smaller --batch-per-gpu (or --image-size, --classes)");
    }
}

}  // namespace epochcast
