#include "executor/cuda/exchange.hpp"

#include <nccl.h>

#include <vector>

#include "executor/cuda/check.hpp"
#include "executor/cuda/network.hpp"
#include "model/errors.hpp"

namespace epochcast {

ncclComm_t make_nccl_communicator(MPI_Comm comm) {
    int rank = 0, ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    ncclUniqueId id{};
    if (rank == 0) EPOCHCAST_NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm);
    ncclComm_t communicator = nullptr;
    EPOCHCAST_NCCL_CHECK(ncclCommInitRank(&communicator, ranks, id, rank));
    return communicator;
}

namespace {

class NcclExchange final : public GradientExchange {
public:
    NcclExchange(const Architecture& architecture, cuda::DeviceGradients& network, MPI_Comm workers,
                 double threshold_bytes)
        : network_(network), compute_(network.compute_stream()) {
        MPI_Comm_size(workers, &workers_);
        const bool half = network.working_type() == cuda::DataType::fp16;
        type_ = half ? ncclHalf : ncclFloat;
        element_bytes_ = cuda::element_bytes(network.working_type());
        BucketPlan plan = bucket_plan(architecture, half ? Precision::amp : Precision::fp32, threshold_bytes);
        buckets_ = std::move(plan.buckets);
        closing_bucket_ = std::move(plan.closing_bucket);

        communicator_ = make_nccl_communicator(workers);
        EPOCHCAST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        ready_.resize(buckets_.size());
        for (cudaEvent_t& event : ready_)
            EPOCHCAST_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
        EPOCHCAST_CUDA_CHECK(cudaEventCreateWithFlags(&reduced_, cudaEventDisableTiming));
        network.defer_gradient_conversion();
    }

    ~NcclExchange() override {
        (void)cudaStreamSynchronize(stream_);
        for (cudaEvent_t event : ready_) (void)cudaEventDestroy(event);
        (void)cudaEventDestroy(reduced_);
        (void)ncclCommDestroy(communicator_);
        (void)cudaStreamDestroy(stream_);
    }

    void begin_step(std::int64_t, double) override {}

    // The bucket's gradients are enqueued on the compute stream: the NCCL stream waits for them
    // (an event, not the host) and reduces while the compute stream goes on with the backward pass.
    void layer_ready(int layer) override {
        const int bucket = closing_bucket_.at(static_cast<std::size_t>(layer));
        if (bucket < 0 || workers_ == 1) return;
        const Range& range = buckets_[static_cast<std::size_t>(bucket)];
        EPOCHCAST_CUDA_CHECK(cudaEventRecord(ready_[static_cast<std::size_t>(bucket)], compute_));
        EPOCHCAST_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_[static_cast<std::size_t>(bucket)], 0));
        char* data = static_cast<char*>(network_.working_gradients()) + range.begin * element_bytes_;
        EPOCHCAST_NCCL_CHECK(
            ncclAllReduce(data, data, static_cast<std::size_t>(range.size()), type_, ncclAvg, communicator_, stream_));
    }

    // The compute stream waits for the last reduction, then converts the averaged gradients.
    bool finish() override {
        EPOCHCAST_CUDA_CHECK(cudaEventRecord(reduced_, stream_));
        EPOCHCAST_CUDA_CHECK(cudaStreamWaitEvent(compute_, reduced_, 0));
        network_.convert_gradients();
        return true;
    }

private:
    cuda::DeviceGradients& network_;
    cudaStream_t compute_;
    int workers_ = 1;
    ncclDataType_t type_ = ncclHalf;
    int element_bytes_ = 2;
    std::vector<Range> buckets_;       ///< arena ranges, backward order
    std::vector<int> closing_bucket_;  ///< per layer
    ncclComm_t communicator_ = nullptr;
    cudaStream_t stream_ = nullptr;   ///< NCCL's own stream
    std::vector<cudaEvent_t> ready_;  ///< per bucket: its gradients are written
    cudaEvent_t reduced_ = nullptr;
};

}  // namespace

std::unique_ptr<GradientExchange> make_nccl_exchange(const Architecture& architecture, Network& network,
                                                     MPI_Comm workers, double fusion_threshold_bytes) {
    auto* device = dynamic_cast<cuda::DeviceGradients*>(&network);
    if (device == nullptr) {
        throw RunError("the NCCL exchange needs the CUDA backend's network (--backend cuda)");
    }
    return std::make_unique<NcclExchange>(architecture, *device, workers, fusion_threshold_bytes);
}

}  // namespace epochcast
