// `epochcast-train --allreduce-sweep`: the all-reduce across every rank mpirun started, measured
// the way NVIDIA's nccl-tests `all_reduce_perf -b 8 -e 128M -f 2` does, and printed in its table
// (docs/cli.md, "epochcast-train"), so that `epochcast run` can read rank 0's output with
// traces/nccl_import.hpp's parse_nccl_all_reduce and fit the network's alpha and beta before it
// trains on the same hosts. The collective is the one the training's gradients take: on the CPU
// backend the --allreduce algorithm over MPI (executor/cpu/bucket_collectives.hpp), on the CUDA
// backend ncclAllReduce on the GPU training would drive (executor/cuda/allreduce_sweep.hpp).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

namespace epochcast {

/// What the sweep's flags set.
struct SweepOptions {
    std::string backend = "cpu";                 ///< "cpu" (MPI) or "cuda" (NCCL)
    std::string allreduce = "ring";              ///< the CPU algorithm: "ring" or "mpi"
    std::int64_t min_bytes = 8;                  ///< first message size; sizes double from here
    std::int64_t max_bytes = 128 * 1024 * 1024;  ///< last message size (inclusive when reached)
    int iterations = 20;                         ///< timed all-reduces per size and placement
};

/// Warm-up all-reduces before each size's timed ones (nccl-tests' default -w 5).
inline constexpr int kSweepWarmupIterations = 5;
/// The largest message: 2^30 fp32 elements, so that counts fit MPI's int (8 GiB would be 2^31).
inline constexpr std::int64_t kSweepMaxBytes = std::int64_t{4} * 1024 * 1024 * 1024;
inline constexpr int kSweepMaxIterations = 100000;

/// Throws InputError naming the flag for a value out of range: a size below 4 bytes or not a
/// multiple of 4 (whole fp32 elements), a largest size below the smallest or beyond 4 GiB,
/// iterations outside 1 .. 100000, a backend other than cpu or cuda, an --allreduce other than
/// ring or mpi (cpu), cuda in a build without the CUDA backend.
void validate(const SweepOptions& options);

/// One backend's fp32 sum over every rank of a communicator, on buffers of a fixed largest size.
class SweepCollective {
public:
    virtual ~SweepCollective() = default;
    /// The first `count` elements of this rank's send buffer = `value`, of its receive buffer = 0.
    virtual void fill(std::int64_t count, float value) = 0;
    /// `times` all-reduces of the first `count` elements, one after another, returning when the
    /// last has completed: from the send buffer into the receive buffer, or within the send buffer
    /// (`in_place`).
    virtual void run(std::int64_t count, bool in_place, int times) = 0;
    /// Elements among the first `count` of the result (the receive buffer, or the send buffer
    /// `in_place`) that are not `expected`.
    virtual std::int64_t wrong(std::int64_t count, bool in_place, float expected) = 0;
};

/// The CPU backend's collective over `comm`: the ring's reduce-scatter + all-gather or
/// MPI_Iallreduce, as executor/cpu/exchange.hpp's training exchange calls them, on host buffers of
/// `max_count` elements. Collective over `comm`.
std::unique_ptr<SweepCollective> make_host_sweep_collective(MPI_Comm comm, const std::string& allreduce,
                                                            std::int64_t max_count);

/// Runs the sweep over MPI_COMM_WORLD (MPI initialised, `options` valid) and prints the table on
/// rank 0's stdout, nothing on the other ranks'. Then throws RunError ("all-reduce sweep: N wrong
/// elements at S bytes", the first size with any) when a result differed from the expected sum.
void run_allreduce_sweep(const SweepOptions& options);

}  // namespace epochcast
