#include "executor/distributed.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "executor/arena.hpp"
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

int local_worker_index(MPI_Comm comm) {
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int index = 0;
    MPI_Comm_rank(node, &index);
    MPI_Comm_free(&node);
    return index;
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
                if (ranges[layer].begin >= 0 && ranges[layer].begin < shards_[s].end &&
                    shards_[s].end <= ranges[layer].end) {
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
            MPI_Recv(values + shards_[s].begin, static_cast<int>(shards_[s].size()), MPI_FLOAT, server_rank(s),
                     kTagWeights, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
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

std::unique_ptr<GradientExchange> make_ps_push_pull(const Architecture& architecture, Network& network,
                                                    const Topology& topology) {
    return std::make_unique<PushPullExchange>(architecture, network, topology);
}

}  // namespace epochcast
