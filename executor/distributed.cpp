#include "executor/distributed.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "executor/arena.hpp"
#include "executor/huge_pages.hpp"
#include "executor/optimizer.hpp"
#include "model/collectives.hpp"
#include "model/errors.hpp"
#include "model/workload.hpp"

namespace epochcast {

Topology world_topology(int ps_ranks) {
    Topology topology;
    MPI_Comm_rank(MPI_COMM_WORLD, &topology.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &topology.ranks);
    if (ps_ranks < 0 || ps_ranks >= topology.ranks) {
        throw InputError("--ps-ranks " + std::to_string(ps_ranks) + " must be between 0 and the number of ranks - 1 (" +
                         std::to_string(topology.ranks - 1) + "): at least one rank must be a worker");
    }
    topology.ps_ranks = ps_ranks;
    return topology;
}

Range shard_of(std::int64_t elements, int servers, int index) {
    const std::int64_t base = elements / servers;
    const std::int64_t extra = elements % servers;
    const std::int64_t begin = index * base + std::min<std::int64_t>(index, extra);
    return Range{begin, begin + base + (index < extra ? 1 : 0)};
}

void average_in_place(float* values, std::int64_t count, int workers) {
    if (workers == 1) return;  // x / 1 == x: skip a pass over 100 MB of ResNet-50 gradients
    const float divisor = static_cast<float>(workers);
    for (std::int64_t i = 0; i < count; ++i) {
        values[i] /= divisor;
    }
}

double allreduce_bus_bytes_per_s(MPI_Comm comm, std::int64_t total_bytes, std::int64_t bucket_bytes, int rounds) {
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    if (ranks < 2) return 0.0;
    const std::int64_t elements = total_bytes / static_cast<std::int64_t>(sizeof(float));
    const std::int64_t bucket = std::max<std::int64_t>(1, bucket_bytes / static_cast<std::int64_t>(sizeof(float)));
    std::vector<float> values(static_cast<std::size_t>(elements), 1.0f);
    double best_s = 0;
    for (int round = 0; round <= rounds; ++round) {  // round 0 warms up
        MPI_Barrier(comm);
        const double start = MPI_Wtime();
        for (std::int64_t begin = 0; begin < elements; begin += bucket) {
            const int count = static_cast<int>(std::min(bucket, elements - begin));
            MPI_Allreduce(MPI_IN_PLACE, values.data() + begin, count, MPI_FLOAT, MPI_SUM, comm);
        }
        double seconds = MPI_Wtime() - start;
        MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm);  // the slowest rank's
        if (round > 0 && (best_s == 0 || seconds < best_s)) best_s = seconds;
    }
    return allreduce_bus_factor(ranks) * static_cast<double>(elements) * sizeof(float) / best_s;
}

namespace {

/// The arena range each layer with parameters covers, indexed by layer.
std::vector<Range> layer_ranges(const Architecture& architecture) {
    std::vector<Range> ranges(architecture.layers.size(), Range{-1, -1});
    for (const ParameterTensor& tensor : parameter_layout(architecture)) {
        Range& range = ranges[static_cast<std::size_t>(tensor.layer)];
        if (range.begin < 0) {
            range.begin = tensor.offset;
        }
        range.end = tensor.offset + tensor.elements;
    }
    return ranges;
}

}  // namespace

BucketPlan bucket_plan(const Architecture& architecture, Precision precision, double fusion_threshold_bytes) {
    const std::vector<Range> ranges = layer_ranges(architecture);
    const std::vector<GradientTensor> gradients = gradients_in_backward_order(architecture, precision);
    BucketPlan plan;
    plan.closing_bucket.assign(architecture.layers.size(), -1);
    for (const Bucket& bucket : fusion_buckets(gradients, fusion_threshold_bytes)) {
        const int first_layer = gradients[static_cast<std::size_t>(bucket.first)].layer;
        const int last_layer = gradients[static_cast<std::size_t>(bucket.first + bucket.count - 1)].layer;
        plan.closing_bucket[static_cast<std::size_t>(last_layer)] = static_cast<int>(plan.buckets.size());
        plan.buckets.push_back(Range{ranges[static_cast<std::size_t>(first_layer)].begin,
                                     ranges[static_cast<std::size_t>(last_layer)].end});
    }
    return plan;
}

namespace {

class AllReduceExchange final : public GradientExchange {
public:
    AllReduceExchange(const Architecture& architecture, Network& network, MPI_Comm workers, double threshold_bytes,
                      Precision precision, AllReduceAlgorithm algorithm)
        : network_(network), element_(precision == Precision::bf16 ? Element::bf16 : Element::fp32),
          sharded_(algorithm == AllReduceAlgorithm::ring) {
        if (network.device_arenas()) {
            throw RunError("the MPI all-reduce needs a network whose arenas are in host memory");
        }
        MPI_Comm_size(workers, &worker_count_);
        BucketPlan plan = bucket_plan(architecture, element_ == Element::bf16 ? Precision::bf16 : Precision::fp32,
                                      threshold_bytes);
        buckets_ = std::move(plan.buckets);
        closing_bucket_ = std::move(plan.closing_bucket);
        gathering_.assign(buckets_.size(), false);
        if (worker_count_ > 1) {
            collectives_ = std::make_unique<BucketCollectives>(workers, algorithm, static_cast<int>(buckets_.size()));
            const auto elements = static_cast<std::size_t>(network.parameter_elements());
            if (element_ == Element::bf16) {
                staging_.resize(elements);
                summed_bf16_.resize(elements);
                network_rounds_ = network.write_gradients_as_bf16(staging_.data());
            } else {
                summed_.resize(elements);
            }
        }
    }

    void begin_step(std::int64_t, double lr) override { lr_ = lr; }

    void layer_ready(int layer) override {
        if (worker_count_ == 1) return;
        // Open MPI moves messages only inside MPI calls: poll on every layer. Poll before starting
        // this layer's bucket: the buckets that can arrive now were closed by earlier layers,
        // whose backward passes to their inputs have finished, so their weights may change.
        arrived_.clear();
        collectives_->progress(arrived_);
        handle_arrived();

        const int bucket = closing_bucket_.at(static_cast<std::size_t>(layer));
        if (bucket < 0) return;
        const Range& range = buckets_[static_cast<std::size_t>(bucket)];
        const void* own = network_.gradients() + range.begin;
        void* sum = summed_.data() + range.begin;
        if (element_ == Element::bf16) {
            if (!network_rounds_) {
                round_to_bf16(network_.gradients() + range.begin, staging_.data() + range.begin, range.size());
            }
            own = staging_.data() + range.begin;
            sum = summed_bf16_.data() + range.begin;
        }
        if (sharded_) {
            collectives_->reduce_scatter(bucket, element_, own, sum, range.size());
        } else {
            collectives_->all_reduce(bucket, element_, own, sum, range.size());
        }
    }

    bool finish() override {
        if (worker_count_ == 1) return true;
        arrived_.clear();
        while (collectives_->wait(arrived_)) {
            handle_arrived();
            arrived_.clear();
        }
        return false;
    }

    void complete_state() override {
        if (worker_count_ == 1 || !sharded_) return;
        for (std::size_t bucket = 0; bucket < buckets_.size(); ++bucket) {
            collectives_->all_gather(static_cast<int>(bucket), Element::fp32, network_.momentum() + buckets_[bucket].begin,
                                     buckets_[bucket].size());
        }
        arrived_.clear();
        while (collectives_->wait(arrived_)) arrived_.clear();
    }

private:
    Network& network_;
    Element element_;                   ///< what the gradient buckets travel as
    bool sharded_ = false;              ///< ring: each rank steps its own chunk of every bucket
    bool network_rounds_ = false;       ///< the network writes staging_ itself (write_gradients_as_bf16)
    int worker_count_ = 1;
    std::vector<Range> buckets_;        ///< arena ranges, in backward order
    std::vector<int> closing_bucket_;   ///< per layer: the bucket it completes, or -1
    std::vector<bool> gathering_;       ///< per bucket: its weights are being gathered (sharded)
    std::vector<int> arrived_;          ///< buckets whose collective just completed
    // The buffers the ranks copy between, on huge pages (executor/huge_pages.hpp).
    HugePageVector<std::uint16_t> staging_;      ///< this rank's gradients rounded to bf16 (bf16, several workers)
    HugePageVector<std::uint16_t> summed_bf16_;  ///< the workers' bf16 sums (bf16, several workers)
    HugePageVector<float> summed_;               ///< the workers' fp32 sums (fp32, several workers)
    std::unique_ptr<BucketCollectives> collectives_;  ///< several workers only; after the buffers it uses
    double lr_ = 0;                       ///< this step's learning rate

    /// Step the weights of `range` (arena offsets) from the summed gradients, averaged.
    void step(const Range& range) {
        float* weights = network_.values() + range.begin;
        float* momentum = network_.momentum() + range.begin;
        if (element_ == Element::bf16) {
            sgd_nesterov_step_from_sum(weights, summed_bf16_.data() + range.begin, worker_count_, momentum,
                                       network_.parameters(), range.begin, range.size(), lr_);
        } else {
            sgd_nesterov_step_from_sum(weights, summed_.data() + range.begin, worker_count_, momentum,
                                       network_.parameters(), range.begin, range.size(), lr_);
        }
    }

    /// The buckets in arrived_ completed a collective. All-reduced (mpi): step the whole bucket.
    /// Sharded: a reduce-scatter steps this rank's own chunk and gathers every rank's stepped
    /// chunk; a completed gather leaves the whole bucket stepped. Either way the bucket's layers
    /// are refreshed at once, while the bucket is in the cache (Network::parameters_updated_in).
    void handle_arrived() {
        for (const int bucket : arrived_) {
            const Range& range = buckets_[static_cast<std::size_t>(bucket)];
            if (sharded_ && !gathering_[static_cast<std::size_t>(bucket)]) {
                const auto [begin, end] = collectives_->owned_chunk(range.size());
                step(Range{range.begin + begin, range.begin + end});
                gathering_[static_cast<std::size_t>(bucket)] = true;
                collectives_->all_gather(bucket, Element::fp32, network_.values() + range.begin, range.size());
                continue;
            }
            if (!sharded_) step(range);
            gathering_[static_cast<std::size_t>(bucket)] = false;
            network_.parameters_updated_in(range.begin, range.size());
        }
    }
};

class PushPullExchange final : public GradientExchange {
public:
    PushPullExchange(const Architecture& architecture, Network& network, const Topology& topology)
        : network_(network), topology_(topology) {
        const std::vector<Range> ranges = layer_ranges(architecture);
        const std::int64_t elements = network.parameter_elements();
        for (int s = 0; s < topology.ps_ranks; ++s) {
            shards_.push_back(shard_of(elements, topology.ps_ranks, s));
        }
        // A shard can be pushed once the backward pass has finished every element up to its end:
        // the arena is in backward order, so that is when the layer covering shard.end - 1 is ready.
        shard_closed_by_.assign(shards_.size(), -1);
        for (std::size_t layer = 0; layer < ranges.size(); ++layer) {
            for (std::size_t s = 0; s < shards_.size(); ++s) {
                if (ranges[layer].begin >= 0 && ranges[layer].begin < shards_[s].end && shards_[s].end <= ranges[layer].end) {
                    shard_closed_by_[s] = static_cast<int>(layer);
                }
            }
        }
        requests_.assign(shards_.size(), MPI_REQUEST_NULL);
        if (network.device_arenas()) {
            staged_gradients_.resize(static_cast<std::size_t>(elements));
            staged_values_.resize(static_cast<std::size_t>(elements));
        }
    }

    void begin_step(std::int64_t, double) override { next_shard_ = 0; }

    void layer_ready(int layer) override {
        while (next_shard_ < shards_.size() && shard_closed_by_[next_shard_] == layer) {
            push(next_shard_++);
        }
        int done = 0;
        MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE);
    }

    bool finish() override {
        while (next_shard_ < shards_.size()) {
            push(next_shard_++);
        }
        MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
        float* values = staged_values_.empty() ? network_.values() : staged_values_.data();
        for (std::size_t s = 0; s < shards_.size(); ++s) {
            MPI_Recv(values + shards_[s].begin, static_cast<int>(shards_[s].size()), MPI_FLOAT,
                     server_rank(s), kTagWeights, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (!staged_values_.empty()) {
            network_.write(Arena::values, 0, network_.parameter_elements(), values);
        }
        network_.parameters_updated();
        return false;
    }

private:
    int server_rank(std::size_t shard) const { return topology_.workers() + static_cast<int>(shard); }

    void push(std::size_t shard) {
        const Range& range = shards_[shard];
        float* gradients = network_.gradients();
        if (!staged_gradients_.empty()) {  // device arenas: through a host copy
            gradients = staged_gradients_.data();
            network_.read(Arena::gradients, range.begin, range.size(), gradients + range.begin);
        }
        MPI_Isend(gradients + range.begin, static_cast<int>(range.size()), MPI_FLOAT, server_rank(shard), kTagGradients,
                  MPI_COMM_WORLD, &requests_[shard]);
    }

    Network& network_;
    Topology topology_;
    std::vector<Range> shards_;
    std::vector<int> shard_closed_by_;  ///< per shard: the layer whose readiness completes it
    std::vector<MPI_Request> requests_;
    std::size_t next_shard_ = 0;
    std::vector<float> staged_gradients_, staged_values_;  ///< host copies, only for device arenas
};

}  // namespace

std::unique_ptr<GradientExchange> make_allreduce_exchange(const Architecture& architecture, Network& network,
                                                          MPI_Comm workers, double fusion_threshold_bytes,
                                                          Precision precision, AllReduceAlgorithm algorithm) {
    return std::make_unique<AllReduceExchange>(architecture, network, workers, fusion_threshold_bytes, precision,
                                               algorithm);
}

std::unique_ptr<GradientExchange> make_ps_push_pull(const Architecture& architecture, Network& network,
                                                    const Topology& topology) {
    return std::make_unique<PushPullExchange>(architecture, network, topology);
}

}  // namespace epochcast
