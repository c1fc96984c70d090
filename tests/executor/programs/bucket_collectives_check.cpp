// Started under mpirun by tests/executor/test_bucket_collectives.cpp: every rank runs the same
// collectives of executor/cpu/bucket_collectives.hpp on buckets of awkward sizes (fewer elements than
// ranks, sizes that do not divide), started in a different order on each rank, and checks what
// arrives against the values every rank can compute for every other. Prints one line per failed
// check and exits 1 if any failed.
//   bucket_collectives_check ring|mpi
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "executor/bf16.hpp"
#include "executor/cpu/bucket_collectives.hpp"

namespace {

using epochcast::BucketCollectives;
using epochcast::Element;

const std::vector<std::int64_t> kCounts = {1, 2, 3, 5, 1000, 4097, 100003};

/// Rank `rank`'s element `i` of bucket `bucket`: magnitudes from 1e-3 to 1e3 and both signs, so
/// that sums round.
float value(int rank, int bucket, std::int64_t i) {
    const double x = std::sin(0.37 * static_cast<double>(i) + 1.3 * rank + 0.11 * bucket);
    return static_cast<float>(x * std::pow(10.0, static_cast<double>((i + rank) % 7) - 3.0));
}

int failures = 0;
int rank = 0;

void fail(const std::string& what) {
    std::printf("rank %d: %s\n", rank, what.c_str());
    ++failures;
}

/// Every bucket, all in flight at once, progress polled between starts as the exchange does. The
/// ring's buckets start in reverse order on odd ranks; MPI's non-blocking collectives must start
/// in the same order on every rank.
bool same_order = false;

template <class Start>
void run_all(BucketCollectives& collectives, Start start) {
    std::vector<int> completed;
    const int buckets = static_cast<int>(kCounts.size());
    for (int k = 0; k < buckets; ++k) {
        start(same_order || rank % 2 == 0 ? k : buckets - 1 - k);
        collectives.progress(completed);
    }
    while (collectives.wait(completed)) {
    }
    std::sort(completed.begin(), completed.end());
    if (completed.size() != kCounts.size() ||
        std::adjacent_find(completed.begin(), completed.end()) != completed.end()) {
        fail("expected every bucket to complete once, " + std::to_string(completed.size()) + " completions");
    }
}

/// The sum over ranks of element i, exactly, and a bound on the rounding of the ring's (or the
/// MPI library's) n - 1 pairwise additions.
void exact_sum(int ranks, int bucket, std::int64_t i, bool bf16, double& sum, double& bound) {
    double magnitude = 0;
    sum = 0;
    for (int r = 0; r < ranks; ++r) {
        const float part =
            bf16 ? epochcast::from_bf16_bits(epochcast::to_bf16_bits(value(r, bucket, i))) : value(r, bucket, i);
        sum += part;
        magnitude += std::fabs(part);
    }
    bound = (ranks - 1) * magnitude * (bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -23));
}

/// Every rank's copy of every bucket, bit for bit the same as rank 0's.
void check_same_on_every_rank(const std::vector<std::vector<std::uint8_t>>& bytes, MPI_Comm comm,
                              const std::string& what) {
    for (std::size_t b = 0; b < bytes.size(); ++b) {
        std::vector<std::uint8_t> root = bytes[b];
        MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_BYTE, 0, comm);
        if (root != bytes[b]) fail(what + ": bucket " + std::to_string(b) + " differs from rank 0's");
    }
}

template <class T>
std::vector<std::uint8_t> as_bytes(const std::vector<T>& values) {
    std::vector<std::uint8_t> bytes(values.size() * sizeof(T));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

void check_all_reduce(epochcast::AllReduceAlgorithm algorithm, Element element, int ranks) {
    const bool bf16 = element == Element::bf16;
    const std::string what = std::string("all_reduce ") + (bf16 ? "bf16" : "fp32");
    BucketCollectives collectives(MPI_COMM_WORLD, algorithm, static_cast<int>(kCounts.size()));
    std::vector<std::vector<float>> own32(kCounts.size()), sum32(kCounts.size());
    std::vector<std::vector<std::uint16_t>> own16(kCounts.size()), sum16(kCounts.size());
    for (std::size_t b = 0; b < kCounts.size(); ++b) {
        for (std::int64_t i = 0; i < kCounts[b]; ++i) {
            own32[b].push_back(value(rank, static_cast<int>(b), i));
            own16[b].push_back(epochcast::to_bf16_bits(own32[b].back()));
        }
        sum32[b].assign(own32[b].size(), -1.0f);
        sum16[b].assign(own16[b].size(), 0xffff);
    }
    run_all(collectives, [&](int b) {
        const auto bucket = static_cast<std::size_t>(b);
        if (bf16) {
            collectives.all_reduce(b, element, own16[bucket].data(), sum16[bucket].data(), kCounts[bucket]);
        } else {
            collectives.all_reduce(b, element, own32[bucket].data(), sum32[bucket].data(), kCounts[bucket]);
        }
    });
    std::vector<std::vector<std::uint8_t>> bytes;
    for (std::size_t b = 0; b < kCounts.size(); ++b) {
        for (std::int64_t i = 0; i < kCounts[b]; ++i) {
            double sum = 0, bound = 0;
            exact_sum(ranks, static_cast<int>(b), i, bf16, sum, bound);
            const double got = bf16 ? epochcast::from_bf16_bits(sum16[b][static_cast<std::size_t>(i)])
                                    : sum32[b][static_cast<std::size_t>(i)];
            if (!(std::fabs(got - sum) <= bound)) {
                fail(what + ": bucket " + std::to_string(b) + " element " + std::to_string(i) + " is " +
                     std::to_string(got) + ", the sum is " + std::to_string(sum));
                break;
            }
            // Two ranks: one rounded addition, so the exact bits.
            if (ranks == 2 && bf16 &&
                sum16[b][static_cast<std::size_t>(i)] != epochcast::to_bf16_bits(static_cast<float>(sum))) {
                fail(what + ": bucket " + std::to_string(b) + " element " + std::to_string(i) + " is not bf16(a + b)");
                break;
            }
            if (ranks == 2 && !bf16 && sum32[b][static_cast<std::size_t>(i)] != static_cast<float>(sum)) {
                fail(what + ": bucket " + std::to_string(b) + " element " + std::to_string(i) + " is not a + b");
                break;
            }
        }
        bytes.push_back(bf16 ? as_bytes(sum16[b]) : as_bytes(sum32[b]));
    }
    check_same_on_every_rank(bytes, MPI_COMM_WORLD, what);
}

/// reduce_scatter leaves the owned chunk summed; all_gather then hands every rank's chunk to all.
/// Between them each rank writes its chunk anew (as the exchange steps its weights), so the check
/// sees that the gather carries the chunks as their owners left them.
void check_reduce_scatter_then_all_gather(int ranks) {
    BucketCollectives collectives(MPI_COMM_WORLD, epochcast::AllReduceAlgorithm::ring,
                                  static_cast<int>(kCounts.size()));
    std::vector<std::vector<float>> own(kCounts.size()), data(kCounts.size());
    for (std::size_t b = 0; b < kCounts.size(); ++b) {
        for (std::int64_t i = 0; i < kCounts[b]; ++i) own[b].push_back(value(rank, static_cast<int>(b), i));
        data[b].assign(own[b].size(), -1.0f);
    }
    run_all(collectives, [&](int b) {
        const auto bucket = static_cast<std::size_t>(b);
        collectives.reduce_scatter(b, Element::fp32, own[bucket].data(), data[bucket].data(), kCounts[bucket]);
    });
    std::vector<std::pair<std::int64_t, std::int64_t>> chunks;
    for (std::size_t b = 0; b < kCounts.size(); ++b) {
        chunks.push_back(collectives.owned_chunk(kCounts[b]));
        const auto [begin, end] = chunks.back();
        for (std::int64_t i = begin; i < end; ++i) {
            double sum = 0, bound = 0;
            exact_sum(ranks, static_cast<int>(b), i, false, sum, bound);
            if (!(std::fabs(data[b][static_cast<std::size_t>(i)] - sum) <= bound)) {
                fail("reduce_scatter: bucket " + std::to_string(b) + " element " + std::to_string(i) +
                     " is not the sum");
                break;
            }
            data[b][static_cast<std::size_t>(i)] = static_cast<float>(1000 * rank + i);  // "stepped" by its owner
        }
    }
    // The owned chunks of all ranks tile each bucket: add up their sizes.
    for (std::size_t b = 0; b < kCounts.size(); ++b) {
        std::int64_t size = chunks[b].second - chunks[b].first;
        MPI_Allreduce(MPI_IN_PLACE, &size, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        if (size != kCounts[b]) fail("owned chunks of bucket " + std::to_string(b) + " cover " + std::to_string(size));
    }
    run_all(collectives, [&](int b) {
        const auto bucket = static_cast<std::size_t>(b);
        collectives.all_gather(b, Element::fp32, data[bucket].data(), kCounts[bucket]);
    });
    for (std::size_t b = 0; b < kCounts.size(); ++b) {
        for (int owner = 0; owner < ranks; ++owner) {  // owner's chunk is [begin, end) of its owned_chunk
            std::int64_t range[2] = {chunks[b].first, chunks[b].second};
            MPI_Bcast(range, 2, MPI_INT64_T, owner, MPI_COMM_WORLD);
            for (std::int64_t i = range[0]; i < range[1]; ++i) {
                if (data[b][static_cast<std::size_t>(i)] != static_cast<float>(1000 * owner + i)) {
                    fail("all_gather: bucket " + std::to_string(b) + " element " + std::to_string(i) + " is not rank " +
                         std::to_string(owner) + "'s");
                    break;
                }
            }
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const std::string algorithm_name = argc > 1 ? argv[1] : "ring";
    const epochcast::AllReduceAlgorithm algorithm = epochcast::parse_allreduce_algorithm(algorithm_name);
    same_order = algorithm == epochcast::AllReduceAlgorithm::mpi;
    check_all_reduce(algorithm, Element::fp32, ranks);
    check_all_reduce(algorithm, Element::bf16, ranks);
    if (algorithm == epochcast::AllReduceAlgorithm::ring) check_reduce_scatter_then_all_gather(ranks);
    int total = failures;
    MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) std::printf("%s on %d ranks: %d failed checks\n", algorithm_name.c_str(), ranks, total);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
