#include "executor/cpu/exchange.hpp"

#include <cstdint>
#include <memory>
#include <vector>

#include "executor/bf16.hpp"
#include "executor/cpu/huge_pages.hpp"
#include "executor/optimizer.hpp"
#include "model/errors.hpp"

namespace epochcast {

namespace {

class AllReduceExchange final : public GradientExchange {
public:
    AllReduceExchange(const Architecture& architecture, Network& network, MPI_Comm workers, double threshold_bytes,
                      Precision precision, AllReduceAlgorithm algorithm)
        : network_(network),
          element_(precision == Precision::bf16 ? Element::bf16 : Element::fp32),
          sharded_(algorithm == AllReduceAlgorithm::ring) {
        if (network.device_arenas()) {
            throw RunError("the MPI all-reduce needs a network whose arenas are in host memory");
        }
        MPI_Comm_size(workers, &worker_count_);
        BucketPlan plan =
            bucket_plan(architecture, element_ == Element::bf16 ? Precision::bf16 : Precision::fp32, threshold_bytes);
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
            collectives_->all_gather(static_cast<int>(bucket), Element::fp32,
                                     network_.momentum() + buckets_[bucket].begin, buckets_[bucket].size());
        }
        arrived_.clear();
        while (collectives_->wait(arrived_)) arrived_.clear();
    }

private:
    Network& network_;
    Element element_;              ///< what the gradient buckets travel as
    bool sharded_ = false;         ///< ring: each rank steps its own chunk of every bucket
    bool network_rounds_ = false;  ///< the network writes staging_ itself (write_gradients_as_bf16)
    int worker_count_ = 1;
    std::vector<Range> buckets_;       ///< arena ranges, in backward order
    std::vector<int> closing_bucket_;  ///< per layer: the bucket it completes, or -1
    std::vector<bool> gathering_;      ///< per bucket: its weights are being gathered (sharded)
    std::vector<int> arrived_;         ///< buckets whose collective just completed
    // The buffers the ranks copy between, on huge pages (executor/cpu/huge_pages.hpp).
    HugePageVector<std::uint16_t> staging_;           ///< this rank's gradients rounded to bf16 (bf16, several workers)
    HugePageVector<std::uint16_t> summed_bf16_;       ///< the workers' bf16 sums (bf16, several workers)
    HugePageVector<float> summed_;                    ///< the workers' fp32 sums (fp32, several workers)
    std::unique_ptr<BucketCollectives> collectives_;  ///< several workers only; after the buffers it uses
    double lr_ = 0;                                   ///< this step's learning rate

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

}  // namespace

std::unique_ptr<GradientExchange> make_allreduce_exchange(const Architecture& architecture, Network& network,
                                                          MPI_Comm workers, double fusion_threshold_bytes,
                                                          Precision precision, AllReduceAlgorithm algorithm) {
    return std::make_unique<AllReduceExchange>(architecture, network, workers, fusion_threshold_bytes, precision,
                                               algorithm);
}

}  // namespace epochcast
