// Non-blocking collectives over the ranks of a communicator, many buckets in flight at once: the
// data path of executor/cpu/exchange.hpp's all-reduce exchange, which starts a bucket as soon as its
// last layer's gradients are final and polls between layers.
//
// Two algorithms:
//  - ring (the default): our own reduce-scatter and all-gather around the ring of ranks, over MPI
//    point-to-point messages (Patarasuk and Yuan's bandwidth-optimal all-reduce, docs/model.md
//    eq. R1). A bucket of `count` elements is cut into one near-equal chunk per rank (shard_of);
//    in each of n - 1 steps every rank passes a chunk to its right neighbour and receives one from
//    its left. The reduce-scatter adds this rank's part to each chunk it receives and ends with
//    this rank holding the complete sum of its own chunk, `owned_chunk`; the all-gather then
//    passes the complete chunks on. So each rank receives (n - 1) / n of the bucket per phase and
//    sums (n - 1) / n of it, and every chunk's sum is made by one rank and copied to the others:
//    all ranks hold the same bits. The phases can also run apart: the exchange steps the weights
//    of its own chunk between them (executor/cpu/exchange.hpp).
//  - mpi: one MPI_Iallreduce per bucket, the MPI library's own algorithm (all-reduce only). Open
//    MPI 4.1's non-blocking all-reduce of two ranks sends the whole bucket one way, sums it on one
//    rank and sends it back, through scratch buffers.
// Elements are fp32 (summed in fp32) or bf16 as raw 16-bit words (each pairwise sum formed in
// fp32 and rounded to bf16 once, executor/bf16.hpp's add_bf16).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace epochcast {

enum class AllReduceAlgorithm { ring, mpi };

/// "ring" or "mpi"; throws InputError for anything else (naming --allreduce).
AllReduceAlgorithm parse_allreduce_algorithm(const std::string& name);

enum class Element { fp32, bf16 };

class BucketCollectives {
public:
    /// Buckets are numbered 0 .. buckets - 1, each in flight at most once at a time. Collective
    /// over `comm` (every rank constructs it, with the same arguments); the ring works on its own
    /// duplicate of `comm`, so its messages meet no others.
    BucketCollectives(MPI_Comm comm, AllReduceAlgorithm algorithm, int buckets);
    ~BucketCollectives();
    BucketCollectives(const BucketCollectives&) = delete;
    BucketCollectives& operator=(const BucketCollectives&) = delete;

    int rank() const { return rank_; }
    int ranks() const { return ranks_; }
    /// The part of a bucket of `count` elements whose complete sum this rank makes (ring only):
    /// [begin, end) in elements from the bucket's start.
    std::pair<std::int64_t, std::int64_t> owned_chunk(std::int64_t count) const;

    /// Every rank starts the same operations on the same buckets with the same counts: in any
    /// order across buckets with the ring, in the same order with mpi (MPI's rule for
    /// non-blocking collectives). Until a bucket completes, its input must not change and its output
    /// must not be touched; `own` and `sum` do not overlap.
    /// sum = the sum over ranks of `own` (`count` elements of `element`).
    void all_reduce(int bucket, Element element, const void* own, void* sum, std::int64_t count);
    /// Ring only: the owned chunk of `sum` = that chunk's sum over ranks of `own`; the rest of
    /// `sum` is scratch.
    void reduce_scatter(int bucket, Element element, const void* own, void* sum, std::int64_t count);
    /// Ring only: every rank's owned chunk of `data` is copied into the other ranks' `data`.
    void all_gather(int bucket, Element element, void* data, std::int64_t count);

    /// Advance every bucket in flight without blocking; append those that completed to `completed`.
    void progress(std::vector<int>& completed);
    /// Block until at least one bucket in flight completes and append it (and any other that
    /// completed) to `completed`; false, at once, when none is in flight.
    bool wait(std::vector<int>& completed);

private:
    struct Flight {
        Element element = Element::fp32;
        const std::byte* own = nullptr;  ///< reduce-scatter's addend
        std::byte* data = nullptr;       ///< the sums, then the gathered chunks
        std::int64_t count = 0;
        int step = 0;       ///< ring: the step whose messages are posted
        int last_step = 0;  ///< ring: the step after which the bucket completes
        bool active = false;
    };
    void launch(int bucket, const Flight& flight);
    void post_ring_step(int bucket);
    void finish_ring_step(int bucket, std::vector<int>& completed);
    void collect(int done, std::vector<int>& completed);

    MPI_Comm comm_ = MPI_COMM_NULL;  ///< our duplicate (ring) or the caller's (mpi)
    AllReduceAlgorithm algorithm_;
    int rank_ = 0;
    int ranks_ = 1;
    MPI_Op sum_bf16_ = MPI_OP_NULL;      ///< mpi: the bf16 sum as a user-defined operation
    std::vector<Flight> flights_;        ///< per bucket
    std::vector<MPI_Request> requests_;  ///< per bucket: ring receive and send; mpi: the all-reduce and a null
    std::vector<int> indices_;           ///< MPI_Testsome's and MPI_Waitsome's output
    int in_flight_ = 0;
};

}  // namespace epochcast
