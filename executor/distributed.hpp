// How ranks share the work, whatever the backend: who is a worker and who a parameter server, the
// all-reduce buckets of the gradient arena, and the GradientExchange a worker drives through a step.
// The all-reduce exchanges themselves are the backends': executor/cpu/exchange.hpp (host arenas,
// over MPI) and executor/cuda/exchange.hpp (device arenas, over NCCL).
//
// All-reduce: every rank is a worker; the gradient arena is cut into model/'s fusion buckets
// (consecutive layers in backward order, so each bucket is one contiguous range of the arena) and
// each bucket's exchange starts as soon as its last layer's gradients are final, while the rest of
// the backward pass runs.
//
// Parameter servers: the last `ps_ranks` ranks are servers, each holding one contiguous shard of
// the weights, its momentum and its decay mask. Workers push each shard's gradients as soon as
// the shard is complete; a server sums them in worker order, averages, applies the optimizer step
// and sends the updated shard back to every worker. Summing in the same order with the same
// averaging makes both modes give the same weights.
//
// Ranks on one host behave exactly as ranks on many hosts: nothing is shared but messages.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "executor/network.hpp"

namespace epochcast {

/// Who this rank is.
struct Topology {
    int rank = 0;      ///< in MPI_COMM_WORLD
    int ranks = 1;     ///< size of MPI_COMM_WORLD
    int ps_ranks = 0;  ///< parameter servers, the last ranks; 0 means all-reduce
    int workers() const { return ranks - ps_ranks; }
    bool is_server() const { return rank >= workers(); }
    int server_index() const { return rank - workers(); }  ///< meaningful on servers only
};

/// The topology of MPI_COMM_WORLD with `ps_ranks` servers; throws InputError when ps_ranks is
/// negative or leaves no worker.
Topology world_topology(int ps_ranks);

/// A contiguous range of the arena, in elements.
struct Range {
    std::int64_t begin = 0;
    std::int64_t end = 0;
    std::int64_t size() const { return end - begin; }
};

/// Server `index` of `servers` holds this part of `elements`: near-equal contiguous shards.
Range shard_of(std::int64_t elements, int servers, int index);

/// The all-reduce buckets of an arena: model/'s fusion buckets (threshold in bytes of gradients of
/// `precision`) as arena ranges in backward order, and for each layer the bucket it completes.
struct BucketPlan {
    std::vector<Range> buckets;       ///< arena ranges, in backward order
    std::vector<int> closing_bucket;  ///< per layer: the bucket its gradients complete, or -1
};
BucketPlan bucket_plan(const Architecture& architecture, Precision precision, double fusion_threshold_bytes);

/// gradients[i] /= workers for i in range (the one averaging rule both modes use).
void average_in_place(float* values, std::int64_t count, int workers);

/// A worker's side of one step's gradient exchange.
class GradientExchange {
public:
    virtual ~GradientExchange() = default;
    /// Call before the step's backward pass, with the step's learning rate.
    virtual void begin_step(std::int64_t step, double lr) = 0;
    /// A layer's gradients are final (the Network's layer_ready callback). The layer's backward
    /// pass to its inputs has not run yet: its parameters must not change before the next call.
    virtual void layer_ready(int layer) = 0;
    /// Complete the exchange. Returns true when the caller must apply the optimizer itself (the
    /// gradients arena then holds the averaged gradient), false when the values arena already holds
    /// the updated weights and the network's working copies are refreshed: from parameter servers,
    /// or from the host all-reduce over several workers, which applies the optimizer to each
    /// bucket as its sum arrives and refreshes that bucket's layers (Network::parameters_updated_in).
    virtual bool finish() = 0;
    /// Make this rank's momentum arena whole, for a checkpoint: an exchange that shards the
    /// optimizer step keeps only its own chunks' momentum current. Collective over the workers.
    virtual void complete_state() {}
};

/// Pushes shards to the servers and pulls the updated weights (through host copies when the
/// network's arenas are on a device).
std::unique_ptr<GradientExchange> make_ps_push_pull(const Architecture& architecture, Network& network,
                                                    const Topology& topology);

/// This rank's index among the ranks of `comm` on its node (MPI_COMM_TYPE_SHARED): the GPU a
/// worker drives, one rank per GPU. Collective over `comm`.
int local_worker_index(MPI_Comm comm);

/// The all-reduce bus bandwidth of `comm`, in bytes per second, as nccl-tests reports it (algorithm
/// bandwidth x 2(n-1)/n, model/collectives.hpp's allreduce_bus_factor): fp32 sums over
/// `total_bytes` in consecutive MPI_Allreduce calls of `bucket_bytes`, as the trainer's fusion
/// buckets are, the best of `rounds` rounds after one warm-up. Collective: every rank of `comm`
/// calls it and gets the same figure. 0 for a communicator of one rank.
double allreduce_bus_bytes_per_s(MPI_Comm comm, std::int64_t total_bytes, std::int64_t bucket_bytes, int rounds);

/// Message tags between workers and servers.
enum Tag : int { kTagGradients = 11, kTagWeights = 12, kTagInitialShard = 13, kTagCheckpointShard = 14 };

}  // namespace epochcast
