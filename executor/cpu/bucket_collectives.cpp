#include "executor/cpu/bucket_collectives.hpp"

#include <cstring>
#include <stdexcept>

#include "executor/bf16.hpp"
#include "executor/distributed.hpp"
#include "model/errors.hpp"

namespace epochcast {

AllReduceAlgorithm parse_allreduce_algorithm(const std::string& name) {
    if (name == "ring") return AllReduceAlgorithm::ring;
    if (name == "mpi") return AllReduceAlgorithm::mpi;
    throw InputError("--allreduce must be ring or mpi, not '" + name + "'");
}

namespace {

/// MPI_User_function: inout[i] = bf16(fp32(in[i]) + fp32(inout[i])).
void sum_bf16(void* in, void* inout, int* length, MPI_Datatype*) {
    add_bf16(static_cast<const std::uint16_t*>(in), static_cast<std::uint16_t*>(inout), *length);
}

/// inout[i] += in[i].
void add_fp32(const float* in, float* inout, std::int64_t count) {
    for (std::int64_t i = 0; i < count; ++i) inout[i] += in[i];
}

MPI_Datatype mpi_type(Element element) { return element == Element::bf16 ? MPI_UINT16_T : MPI_FLOAT; }

std::int64_t element_bytes(Element element) {
    return element == Element::bf16 ? std::int64_t{sizeof(std::uint16_t)} : std::int64_t{sizeof(float)};
}

int modulo(int value, int n) { return (value % n + n) % n; }

}  // namespace

BucketCollectives::BucketCollectives(MPI_Comm comm, AllReduceAlgorithm algorithm, int buckets) : algorithm_(algorithm) {
    if (algorithm_ == AllReduceAlgorithm::ring) {
        MPI_Comm_dup(comm, &comm_);
        int* tag_upper_bound = nullptr;
        int found = 0;
        MPI_Comm_get_attr(comm_, MPI_TAG_UB, &tag_upper_bound, &found);
        if (found && buckets > *tag_upper_bound) {  // the bucket number is the tag
            throw RunError(std::to_string(buckets) + " all-reduce buckets exceed MPI's largest tag, " +
                           std::to_string(*tag_upper_bound) + ": raise --fusion-mib");
        }
    } else {
        comm_ = comm;
        MPI_Op_create(&sum_bf16, /*commute=*/1, &sum_bf16_);
    }
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &ranks_);
    flights_.resize(static_cast<std::size_t>(buckets));
    requests_.assign(2 * static_cast<std::size_t>(buckets), MPI_REQUEST_NULL);
    indices_.resize(requests_.size());
}

BucketCollectives::~BucketCollectives() {
    // Buckets still in flight here mean an error is unwinding the step and the job is about to
    // end (train_main aborts it): waiting for peers that may never post their side could hang.
    for (MPI_Request& request : requests_) {
        if (request == MPI_REQUEST_NULL) continue;
        MPI_Cancel(&request);
        MPI_Request_free(&request);
    }
    if (sum_bf16_ != MPI_OP_NULL) MPI_Op_free(&sum_bf16_);
    if (algorithm_ == AllReduceAlgorithm::ring) MPI_Comm_free(&comm_);
}

std::pair<std::int64_t, std::int64_t> BucketCollectives::owned_chunk(std::int64_t count) const {
    const Range chunk = shard_of(count, ranks_, modulo(rank_ + 1, ranks_));
    return {chunk.begin, chunk.end};
}

void BucketCollectives::all_reduce(int bucket, Element element, const void* own, void* sum, std::int64_t count) {
    launch(bucket, Flight{element, static_cast<const std::byte*>(own), static_cast<std::byte*>(sum), count, 0,
                          2 * ranks_ - 3, true});
    if (algorithm_ == AllReduceAlgorithm::mpi) {
        // Not in place: Open MPI's in-place schedule first copies the whole bucket aside.
        MPI_Iallreduce(own, sum, static_cast<int>(count), mpi_type(element),
                       element == Element::bf16 ? sum_bf16_ : MPI_SUM, comm_,
                       &requests_[2 * static_cast<std::size_t>(bucket)]);
    }
}

void BucketCollectives::reduce_scatter(int bucket, Element element, const void* own, void* sum, std::int64_t count) {
    if (algorithm_ != AllReduceAlgorithm::ring)
        throw std::logic_error("BucketCollectives: reduce_scatter needs the ring");
    launch(bucket, Flight{element, static_cast<const std::byte*>(own), static_cast<std::byte*>(sum), count, 0,
                          ranks_ - 2, true});
}

void BucketCollectives::all_gather(int bucket, Element element, void* data, std::int64_t count) {
    if (algorithm_ != AllReduceAlgorithm::ring) throw std::logic_error("BucketCollectives: all_gather needs the ring");
    launch(bucket, Flight{element, nullptr, static_cast<std::byte*>(data), count, ranks_ - 1, 2 * ranks_ - 3, true});
}

void BucketCollectives::launch(int bucket, const Flight& flight) {
    Flight& slot = flights_.at(static_cast<std::size_t>(bucket));
    if (slot.active) throw std::logic_error("BucketCollectives: bucket " + std::to_string(bucket) + " is in flight");
    slot = flight;
    ++in_flight_;
    if (algorithm_ == AllReduceAlgorithm::mpi) return;  // the caller starts the MPI collective
    if (slot.step <= slot.last_step) {
        post_ring_step(bucket);
        return;
    }
    // One rank: nothing to exchange. The sum is this rank's own part; a null send completes the
    // bucket at the next test, so that it is reported as every other is.
    if (slot.own != nullptr) {
        std::memcpy(slot.data, slot.own, static_cast<std::size_t>(slot.count * element_bytes(slot.element)));
    }
    MPI_Isend(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, comm_, &requests_[2 * static_cast<std::size_t>(bucket)]);
}

// Ring step s of n ranks, on rank r (chunks and neighbours modulo n, chunk c = shard_of(count, n, c)):
//  reduce-scatter, s = 0 .. n-2: send chunk r-s (from own at s = 0, the partial sum after),
//                                receive chunk r-s-1 and add own's part of it;
//  all-gather, t = s-(n-1) = 0 .. n-2: send chunk r+1-t, receive chunk r-t (complete sums).
// The chunk each step sends is the one the step before received; after the reduce-scatter rank r
// holds the complete sum of chunk r+1, its owned chunk.
void BucketCollectives::post_ring_step(int bucket) {
    const Flight& flight = flights_[static_cast<std::size_t>(bucket)];
    const int n = ranks_;
    const bool reducing = flight.step < n - 1;
    const int t = reducing ? flight.step : flight.step - (n - 1);
    const Range send = shard_of(flight.count, n, modulo(reducing ? rank_ - t : rank_ + 1 - t, n));
    const Range receive = shard_of(flight.count, n, modulo(reducing ? rank_ - t - 1 : rank_ - t, n));
    const std::int64_t bytes = element_bytes(flight.element);
    const std::byte* send_from = reducing && t == 0 ? flight.own : flight.data;
    MPI_Request* request = &requests_[2 * static_cast<std::size_t>(bucket)];
    MPI_Irecv(flight.data + receive.begin * bytes, static_cast<int>(receive.size()), mpi_type(flight.element),
              modulo(rank_ - 1, n), bucket, comm_, &request[0]);
    MPI_Isend(send_from + send.begin * bytes, static_cast<int>(send.size()), mpi_type(flight.element),
              modulo(rank_ + 1, n), bucket, comm_, &request[1]);
}

void BucketCollectives::finish_ring_step(int bucket, std::vector<int>& completed) {
    Flight& flight = flights_[static_cast<std::size_t>(bucket)];
    const int n = ranks_;
    if (flight.step < n - 1) {  // a reduce-scatter step: add own's part of the chunk just received
        const Range chunk = shard_of(flight.count, n, modulo(rank_ - flight.step - 1, n));
        const std::int64_t offset = chunk.begin * element_bytes(flight.element);
        if (flight.element == Element::bf16) {
            add_bf16(reinterpret_cast<const std::uint16_t*>(flight.own + offset),
                     reinterpret_cast<std::uint16_t*>(flight.data + offset), chunk.size());
        } else {
            add_fp32(reinterpret_cast<const float*>(flight.own + offset),
                     reinterpret_cast<float*>(flight.data + offset), chunk.size());
        }
    }
    if (flight.step < flight.last_step) {
        ++flight.step;
        post_ring_step(bucket);
        return;
    }
    flight.active = false;
    --in_flight_;
    completed.push_back(bucket);
}

/// The first `done` entries of indices_ are requests that completed: finish the steps (ring) or
/// buckets (mpi) whose requests have all completed.
void BucketCollectives::collect(int done, std::vector<int>& completed) {
    for (int k = 0; k < done; ++k) {
        const int bucket = indices_[static_cast<std::size_t>(k)] / 2;
        Flight& flight = flights_[static_cast<std::size_t>(bucket)];
        const MPI_Request* request = &requests_[2 * static_cast<std::size_t>(bucket)];
        // Both requests of one step may be among the `done`: the first sight finishes the step.
        if (!flight.active || request[0] != MPI_REQUEST_NULL || request[1] != MPI_REQUEST_NULL) continue;
        if (algorithm_ == AllReduceAlgorithm::ring && flight.step <= flight.last_step) {
            finish_ring_step(bucket, completed);
        } else {  // the MPI collective, or one rank's null send
            flight.active = false;
            --in_flight_;
            completed.push_back(bucket);
        }
    }
}

void BucketCollectives::progress(std::vector<int>& completed) {
    // A step that completes posts the next, which may complete at once: test until nothing moves.
    for (int done = 1; in_flight_ > 0 && done > 0;) {
        MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &done, indices_.data(), MPI_STATUSES_IGNORE);
        if (done == MPI_UNDEFINED) break;
        collect(done, completed);
    }
}

bool BucketCollectives::wait(std::vector<int>& completed) {
    const std::size_t before = completed.size();
    while (in_flight_ > 0 && completed.size() == before) {
        int done = 0;
        MPI_Waitsome(static_cast<int>(requests_.size()), requests_.data(), &done, indices_.data(), MPI_STATUSES_IGNORE);
        if (done == MPI_UNDEFINED) break;
        collect(done, completed);
    }
    if (completed.size() == before) return false;
    progress(completed);
    return true;
}

}  // namespace epochcast
