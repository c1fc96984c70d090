#include "executor/allreduce_sweep.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "executor/cpu/bucket_collectives.hpp"
#include "executor/cpu/huge_pages.hpp"
#include "executor/distributed.hpp"
#include "model/collectives.hpp"
#include "model/errors.hpp"
#ifdef EPOCHCAST_WITH_CUDA
#include "executor/cuda/allreduce_sweep.hpp"
#endif

namespace epochcast {

void validate(const SweepOptions& options) {
    if (options.backend != "cpu" && options.backend != "cuda") {
        throw InputError("--backend must be cpu or cuda, not '" + options.backend + "'");
    }
#ifndef EPOCHCAST_WITH_CUDA
    if (options.backend == "cuda") {
        throw InputError(
            "--backend cuda: this build of epochcast-train has no CUDA backend (CUDA, cuDNN or NCCL was not found)");
    }
#endif
    if (options.backend == "cpu") parse_allreduce_algorithm(options.allreduce);
    if (options.min_bytes < 4 || options.min_bytes % 4 != 0) {
        throw InputError(
            "--sweep-min-bytes must be a whole number of fp32 elements (a multiple of 4, at least 4), not " +
            std::to_string(options.min_bytes));
    }
    if (options.max_bytes < options.min_bytes || options.max_bytes > kSweepMaxBytes) {
        throw InputError("--sweep-max-bytes must be between --sweep-min-bytes (" + std::to_string(options.min_bytes) +
                         ") and 4 GiB (" + std::to_string(kSweepMaxBytes) + "), not " +
                         std::to_string(options.max_bytes));
    }
    if (options.iterations < 1 || options.iterations > kSweepMaxIterations) {
        throw InputError("--sweep-iterations must be between 1 and " + std::to_string(kSweepMaxIterations) + ", not " +
                         std::to_string(options.iterations));
    }
}

namespace {

class HostSweepCollective final : public SweepCollective {
public:
    HostSweepCollective(MPI_Comm comm, AllReduceAlgorithm algorithm, std::int64_t max_count)
        : comm_(comm),
          algorithm_(algorithm),
          send_(static_cast<std::size_t>(max_count)),
          receive_(static_cast<std::size_t>(max_count)),
          collectives_(comm, algorithm, 1) {}

    void fill(std::int64_t count, float value) override {
        std::fill_n(send_.begin(), count, value);
        std::fill_n(receive_.begin(), count, 0.0f);
    }

    void run(std::int64_t count, bool in_place, int times) override {
        for (int i = 0; i < times; ++i) {
            if (!in_place) {
                collectives_.all_reduce(0, Element::fp32, send_.data(), receive_.data(), count);
                complete();
            } else if (algorithm_ == AllReduceAlgorithm::ring) {
                // The ring's reduce-scatter reads its addend while it writes the sums, so they cannot
                // share a buffer; as the training does (executor/cpu/exchange.cpp), the sums go to a
                // second buffer, this rank's complete chunk comes back and the all-gather fills in
                // the others' chunks in place.
                collectives_.reduce_scatter(0, Element::fp32, send_.data(), receive_.data(), count);
                complete();
                const auto [begin, end] = collectives_.owned_chunk(count);
                std::copy(receive_.begin() + begin, receive_.begin() + end, send_.begin() + begin);
                collectives_.all_gather(0, Element::fp32, send_.data(), count);
                complete();
            } else {
                MPI_Request request = MPI_REQUEST_NULL;
                MPI_Iallreduce(MPI_IN_PLACE, send_.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm_,
                               &request);
                MPI_Wait(&request, MPI_STATUS_IGNORE);
            }
        }
    }

    std::int64_t wrong(std::int64_t count, bool in_place, float expected) override {
        const float* result = in_place ? send_.data() : receive_.data();
        return std::count_if(result, result + count, [expected](float x) { return x != expected; });
    }

private:
    /// Wait for the one bucket in flight.
    void complete() {
        completed_.clear();
        while (collectives_.wait(completed_)) completed_.clear();
    }

    MPI_Comm comm_;
    AllReduceAlgorithm algorithm_;
    // On huge pages, as the training exchange's buffers (executor/cpu/huge_pages.hpp).
    HugePageVector<float> send_, receive_;
    BucketCollectives collectives_;
    std::vector<int> completed_;
};

/// One placement's figures of one size, the same on every rank.
struct Measured {
    double time_us = 0;   ///< mean over the timed iterations, the slowest rank's
    long long wrong = 0;  ///< elements not the expected sum, over all ranks
};

Measured measure(SweepCollective& collective, std::int64_t count, bool in_place, int iterations) {
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    collective.fill(count, static_cast<float>(rank + 1));
    collective.run(count, in_place, kSweepWarmupIterations);
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    collective.run(count, in_place, iterations);
    double mean_s = (MPI_Wtime() - start) / iterations;
    MPI_Allreduce(MPI_IN_PLACE, &mean_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    // Checked on a fresh fill: in place, the timed sums have summed the sums again and again. The
    // expected sum 1 + 2 + ... + n is exact in fp32 up to 5,792 ranks (whole numbers up to 2^24).
    collective.fill(count, static_cast<float>(rank + 1));
    collective.run(count, in_place, 1);
    const auto expected = static_cast<float>(static_cast<long long>(ranks) * (ranks + 1) / 2);
    long long wrong = collective.wrong(count, in_place, expected);
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return Measured{mean_s * 1e6, wrong};
}

/// nccl-tests' time column: 7 wide, fewer decimals as the time grows.
std::string format_time_us(double time_us) {
    char text[32];
    std::snprintf(text, sizeof(text), time_us >= 10000.0 ? "%7.0f" : time_us >= 100.0 ? "%7.1f" : "%7.2f", time_us);
    return text;
}

/// The hosts of the ranks, on rank 0 (MPI_Get_processor_name: the host's name under Open MPI).
std::vector<std::string> rank_hosts(int rank, int ranks) {
    std::vector<char> own(MPI_MAX_PROCESSOR_NAME, '\0');
    int length = 0;
    MPI_Get_processor_name(own.data(), &length);
    std::vector<char> all(rank == 0 ? own.size() * static_cast<std::size_t>(ranks) : 0);
    MPI_Gather(own.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    std::vector<std::string> hosts;
    for (int r = 0; rank == 0 && r < ranks; ++r) hosts.emplace_back(all.data() + r * MPI_MAX_PROCESSOR_NAME);
    return hosts;
}

}  // namespace

std::unique_ptr<SweepCollective> make_host_sweep_collective(MPI_Comm comm, const std::string& allreduce,
                                                            std::int64_t max_count) {
    return std::make_unique<HostSweepCollective>(comm, parse_allreduce_algorithm(allreduce), max_count);
}

void run_allreduce_sweep(const SweepOptions& options) {
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const int local_rank = local_worker_index(MPI_COMM_WORLD);
    int nodes = local_rank == 0 ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    const std::vector<std::string> hosts = rank_hosts(rank, ranks);

    const std::int64_t max_count = options.max_bytes / static_cast<std::int64_t>(sizeof(float));
    std::unique_ptr<SweepCollective> collective;
    std::string algorithm = options.allreduce;
#ifdef EPOCHCAST_WITH_CUDA
    if (options.backend == "cuda") {
        collective = cuda::make_nccl_sweep_collective(MPI_COMM_WORLD, local_rank, max_count);
        algorithm = "nccl";
    }
#endif
    if (!collective) collective = make_host_sweep_collective(MPI_COMM_WORLD, options.allreduce, max_count);

    if (rank == 0) {
        std::printf(
            "# epochcast-train --allreduce-sweep: nranks %d, nodes %d, backend %s (%s), fp32 sum, %d iterations "
            "(%d warm-up)\n",
            ranks, nodes, options.backend.c_str(), algorithm.c_str(), options.iterations, kSweepWarmupIterations);
        for (int r = 0; r < ranks; ++r)
            std::printf("# Rank %2d on %s\n", r, hosts[static_cast<std::size_t>(r)].c_str());
        std::printf(
            "#\n"
            "#                                        out-of-place                       in-place\n"
            "#       size         count      type   redop     time   algbw   busbw  #wrong     time   algbw   busbw  "
            "#wrong\n"
            "#        (B)    (elements)                       (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)\n");
        std::fflush(stdout);
    }
    const double bus_factor = allreduce_bus_factor(ranks);
    long long wrong_in_all = 0;
    std::string first_wrong;
    double bus_GBps_sum = 0;
    int bus_GBps_count = 0;
    for (std::int64_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 2) {
        const std::int64_t count = bytes / static_cast<std::int64_t>(sizeof(float));
        char row[256];
        int length = std::snprintf(row, sizeof(row), "%12lld  %12lld  %8s  %6s", static_cast<long long>(bytes),
                                   static_cast<long long>(count), "float", "sum");
        long long wrong = 0;
        for (const bool in_place : {false, true}) {
            const Measured measured = measure(*collective, count, in_place, options.iterations);
            const double algorithm_GBps = static_cast<double>(bytes) / (measured.time_us * 1e-6) / 1e9;
            const double bus_GBps = algorithm_GBps * bus_factor;
            bus_GBps_sum += bus_GBps;
            ++bus_GBps_count;
            wrong += measured.wrong;
            length += std::snprintf(row + length, sizeof(row) - static_cast<std::size_t>(length),
                                    "  %7s  %6.2f  %6.2f  %6lld", format_time_us(measured.time_us).c_str(),
                                    algorithm_GBps, bus_GBps, measured.wrong);
        }
        if (wrong > 0 && first_wrong.empty()) {
            first_wrong = std::to_string(wrong) + " wrong elements at " + std::to_string(bytes) + " bytes";
        }
        wrong_in_all += wrong;
        if (rank == 0) {
            std::printf("%s\n", row);
            std::fflush(stdout);
        }
    }
    if (rank == 0) {
        std::printf("# Out of bounds values : %lld %s\n", wrong_in_all, wrong_in_all == 0 ? "OK" : "FAILED");
        std::printf("# Avg bus bandwidth    : %g\n", bus_GBps_sum / bus_GBps_count);
        std::fflush(stdout);
    }
    if (!first_wrong.empty()) throw RunError("all-reduce sweep: " + first_wrong);
}

}  // namespace epochcast
