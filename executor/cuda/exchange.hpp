// The all-reduce of the CUDA backend: NCCL over the workers, one rank per GPU. Each fusion bucket
// of model/'s plan (sized in the working type's bytes: fp16 for amp) is all-reduced (ncclAvg, in
// place on the working gradients) on the exchange's own stream as soon as the backward pass has
// enqueued its last layer, so the reduction overlaps the rest of the backward pass on the GPU. The
// NCCL unique id travels from worker 0 over MPI.
#pragma once

#include <mpi.h>

#include <memory>

#include "executor/distributed.hpp"

namespace epochcast {

/// `network` must be the CUDA backend's (throws RunError otherwise).
std::unique_ptr<GradientExchange> make_nccl_exchange(const Architecture& architecture, Network& network,
                                                     MPI_Comm workers, double fusion_threshold_bytes);

}  // namespace epochcast
