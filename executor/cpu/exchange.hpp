// The all-reduce of the CPU backend: MPI over the workers, for networks whose arenas are in host
// memory. With our ring (the default, executor/cpu/bucket_collectives.hpp) a bucket is
// reduce-scattered, each worker applies the optimizer step to the chunk whose sum it holds (its
// momentum is current only there), and the stepped fp32 weights are all-gathered: each rank steps
// 1/n of the weights, and the weights stay identical on every rank. With MPI_Iallreduce
// (`--allreduce mpi`) every worker sums every bucket and steps all the weights itself. The buckets
// are executor/distributed.hpp's bucket_plan, as the CUDA backend's (executor/cuda/exchange.hpp).
#pragma once

#include <mpi.h>

#include <memory>

#include "executor/cpu/bucket_collectives.hpp"
#include "executor/distributed.hpp"

namespace epochcast {

/// The all-reduce exchange over the workers' communicator, one bucket per model/ fusion bucket,
/// each started as the bucket's last layer is ready, for networks whose arenas are in host memory
/// (`algorithm`: see executor/distributed.hpp). With `precision` bf16 the gradient buckets travel as
/// bf16 (docs/model.md, "Workload": 2-byte gradients at amp and bf16), half the bytes of fp32: each
/// bucket is rounded to bf16 (nearest even) when its last layer is ready and summed pairwise in
/// fp32, each pairwise sum rounded back to bf16. Otherwise (fp32) the buckets are fp32 sums. Each summed bucket (or
/// chunk) is averaged and stepped by seed 000's optimizer (sgd_nesterov_step_from_sum) as soon as it arrives, while it
/// is in the cache, instead of in a pass over the whole arena after the backward pass, and the bucket's layers are
/// refreshed once its weights are whole; the gradients arena keeps this rank's own gradient. With one worker nothing is
/// exchanged and the caller applies the optimizer.
std::unique_ptr<GradientExchange> make_allreduce_exchange(const Architecture& architecture, Network& network,
                                                          MPI_Comm workers, double fusion_threshold_bytes,
                                                          Precision precision = Precision::fp32,
                                                          AllReduceAlgorithm algorithm = AllReduceAlgorithm::ring);

}  // namespace epochcast
