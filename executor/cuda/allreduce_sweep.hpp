// The CUDA backend's collective for `epochcast-train --allreduce-sweep` (executor/allreduce_sweep.hpp):
// ncclAllReduce (fp32, sum) on device buffers, as the training's NCCL exchange reduces its buckets.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "executor/allreduce_sweep.hpp"

namespace epochcast::cuda {

/// On GPU `device` (the rank's local worker index, as the training picks it: one rank per GPU;
/// throws InputError when that GPU does not exist), buffers of `max_count` elements, and an NCCL
/// communicator over `comm` made as the training's (make_nccl_communicator). Collective over `comm`.
std::unique_ptr<SweepCollective> make_nccl_sweep_collective(MPI_Comm comm, int device, std::int64_t max_count);

}  // namespace epochcast::cuda
