// The training loop of epochcast-train: one obvious loop (load a batch, forward and backward,
// exchange gradients, step the optimizer), with the backend, the data and the distribution
// beneath it. Rank 0 prints seed 000's per-step table (Step, Epoch, Speed, Loss, LR) and writes
// the trace; servers (parameter-server mode) run serve_parameters instead of the loop.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/types.hpp"

namespace epochcast {

/// Everything epochcast-train's flags set (docs/cli.md, "epochcast-train").
struct TrainOptions {
    std::string backend = "cpu";  ///< "cpu" (oneDNN) or "cuda"
    std::string model = "resnet50";
    int image_size = 224;        ///< pixels, >= 32
    std::optional<int> classes;  ///< none: 1000 for synthetic data, the folder's class count for an image folder
    int batch_per_gpu = 32;      ///< images per step per worker
    Precision precision = Precision::fp32;
    int threads = 1;                          ///< compute threads per rank
    std::int64_t steps = 0;                   ///< steps to run in all (0: from epochs)
    double epochs = 0;                        ///< epochs to run in all (used when steps is 0)
    std::string data = "synthetic";           ///< "synthetic" or an image folder
    std::int64_t synthetic_images = 1281167;  ///< epoch length of synthetic data (ImageNet's training set)
    double lr = 0;                            ///< per-worker peak rate before linear scaling; 0: 0.1 x batch / 256
    double warmup_epochs = 0;
    std::string checkpoint_dir;         ///< "" for none
    std::int64_t checkpoint_every = 0;  ///< steps between checkpoints (0: only at the end)
    bool resume = false;
    std::int64_t stop_after =
        0;                  ///< stop (with a checkpoint) after this many steps of this invocation; 0: run to the end
    std::string trace_out;  ///< "" for no trace
    /// The trace's instance (and ps_instance with servers), a catalog name `epochcast run` checks;
    /// none: local-cpu, or local-gpu on the cuda backend
    std::optional<std::string> instance;
    int ps_ranks = 0;  ///< parameter servers (the last ranks); 0 for all-reduce
    std::uint64_t seed = 1;
    int data_threads = 1;            ///< decode threads per rank (none start when the backend
                                     ///< makes the synthetic batches itself: the CUDA backend)
    double fusion_mib = 4;           ///< all-reduce bucket threshold, MiB. Not Horovod's 64: Open MPI
                                     ///< progresses MPI_Iallreduce only inside MPI calls, and smaller
                                     ///< buckets overlap more of the backward pass (docs/performance.md)
    std::string allreduce = "ring";  ///< the CPU all-reduce's algorithm: "ring" (ours) or "mpi" (MPI_Iallreduce)
    bool print_steps = true;         ///< rank 0 prints the per-step table
};

/// Throws InputError for an option out of range (naming the flag), the bounds of
/// executor/train_limits.hpp on this host among them.
void validate(const TrainOptions& options);

/// Run the training on this rank (MPI must be initialised). Throws InputError for bad input and
/// RunError for failures during the run, among them a mean loss that is not finite (the run
/// diverged; a step fp16 loss scaling skipped excepted) and an fp16 overflow at the minimum loss
/// scale. Reports progress for `epochcast run`'s watchdog (executor/progress.hpp).
void run_training(const TrainOptions& options);

}  // namespace epochcast
