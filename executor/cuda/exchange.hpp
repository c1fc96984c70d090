// The all-reduce of the CUDA backend: NCCL over the workers, one rank per GPU. Each fusion bucket
// of model/'s plan (sized in the working type's bytes: fp16 for amp) is all-reduced (ncclAvg, in
// place on the working gradients) on the exchange's own stream as soon as the backward pass has
// enqueued its last layer, so the reduction overlaps the rest of the backward pass on the GPU. The
// NCCL unique id travels from worker 0 over MPI.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <memory>

#include "executor/distributed.hpp"

namespace epochcast {

/// An NCCL communicator over the ranks of `comm`, on each rank's current GPU: rank 0 makes the
/// unique id and broadcasts it over MPI. Collective over `comm`; free it with ncclCommDestroy.
ncclComm_t make_nccl_communicator(MPI_Comm comm);

/// `network` must be the CUDA backend's (throws RunError otherwise).
std::unique_ptr<GradientExchange> make_nccl_exchange(const Architecture& architecture, Network& network,
                                                     MPI_Comm workers, double fusion_threshold_bytes);

}  // namespace epochcast
