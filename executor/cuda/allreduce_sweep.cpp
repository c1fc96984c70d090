#include "executor/cuda/allreduce_sweep.hpp"

#include <nccl.h>

#include <algorithm>
#include <vector>

#include "executor/cuda/check.hpp"
#include "executor/cuda/exchange.hpp"
#include "executor/cuda/layers.hpp"

namespace epochcast::cuda {

namespace {

class NcclSweepCollective final : public SweepCollective {
public:
    NcclSweepCollective(MPI_Comm comm, int device, std::int64_t max_count)
        : context_(device, DataType::fp32),  // makes the GPU current, before NCCL binds to it
          send_(static_cast<float*>(context_.allocate(static_cast<std::size_t>(max_count) * sizeof(float)))),
          receive_(static_cast<float*>(context_.allocate(static_cast<std::size_t>(max_count) * sizeof(float)))),
          communicator_(make_nccl_communicator(comm)) {}

    ~NcclSweepCollective() override {
        (void)cudaStreamSynchronize(context_.stream());
        (void)ncclCommDestroy(communicator_);
    }

    void fill(std::int64_t count, float value) override {
        upload(context_, send_, std::vector<float>(static_cast<std::size_t>(count), value));
        upload(context_, receive_, std::vector<float>(static_cast<std::size_t>(count), 0.0f));
    }

    // Enqueued back to back and waited for once, as nccl-tests times them.
    void run(std::int64_t count, bool in_place, int times) override {
        for (int i = 0; i < times; ++i) {
            EPOCHCAST_NCCL_CHECK(ncclAllReduce(send_, in_place ? send_ : receive_, static_cast<std::size_t>(count),
                                               ncclFloat, ncclSum, communicator_, context_.stream()));
        }
        context_.synchronize();
    }

    std::int64_t wrong(std::int64_t count, bool in_place, float expected) override {
        const std::vector<float> result =
            download(context_, in_place ? send_ : receive_, static_cast<std::size_t>(count));
        return std::count_if(result.begin(), result.end(), [expected](float x) { return x != expected; });
    }

private:
    Context context_;
    float* send_;
    float* receive_;
    ncclComm_t communicator_;
};

}  // namespace

std::unique_ptr<SweepCollective> make_nccl_sweep_collective(MPI_Comm comm, int device, std::int64_t max_count) {
    return std::make_unique<NcclSweepCollective>(comm, device, max_count);
}

}  // namespace epochcast::cuda
