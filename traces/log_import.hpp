// Import of the throughput lines common training scripts print (`epochcast import-log`;
// docs/formats.md, "Training logs"), so that a run started from a launch file can be checked
// against its prediction without a trace written by hand:
//  - torchvision's reference train.py (references/classification): MetricLogger's lines
//    "Epoch: [E]  [  I/N]  eta: ...  time: T  data: D ...", T the mean seconds of the epoch's last
//    (at most) 20 steps, data loading included, on rank 0 (the step's time on every rank, which
//    wait for each other's gradients); "Epoch: [E] Total time: H:MM:SS" ends an epoch, and the
//    "Namespace(...)" line of the arguments gives batch_size and world_size;
//  - NVIDIA DeepLearningExamples' DLLogger JSON ("DLLL {...}" lines): "step": [E, I] with
//    data."train.total_ips", the images per second of all ranks (the script multiplies its own by
//    the world size) averaged over the steps since the previous line; "step": "PARAMETER" gives
//    batch_size (and world_size where logged);
//  - PyTorch Lightning's progress bar (tqdm): "Epoch E: ..%|...| I/N [elapsed<remaining, R it/s, ...]"
//    segments, separated by carriage returns, R the batches per second of each rank (smoothed by
//    tqdm over its last updates), "s/it" below one a second.
// Each figure covers a range of steps of its epoch; the steady throughput is the median over the
// figures that start after an epoch's first steps (its loader starting, cuDNN's autotuning,
// torch.compile), which are left out.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace epochcast {

enum class TrainingLogFormat { torchvision, dllogger, lightning };

/// "torchvision", "dllogger" or "lightning"; "auto" is nullopt (read_training_log finds it).
/// Throws InputError naming the choices for anything else.
std::optional<TrainingLogFormat> parse_training_log_format(std::string_view text);
std::string_view to_string(TrainingLogFormat format);

/// One throughput figure of a log: the steps of one epoch it was measured over and what it says.
/// Exactly one of iteration_s and images_per_s is above 0.
struct LogFigure {
    int epoch = 0;            ///< as the log numbers it
    long first_step = 0;      ///< the first step (0-based, within the epoch) the figure averages over
    long last_step = 0;       ///< the last one
    double iteration_s = 0;   ///< seconds per training step (torchvision, Lightning)
    double images_per_s = 0;  ///< images per second over all ranks (DLLogger's train.total_ips)
};

/// What a log says, as read.
struct TrainingLog {
    TrainingLogFormat format = TrainingLogFormat::torchvision;
    std::vector<LogFigure> figures;  ///< in the order printed
    long steps_per_epoch = 0;        ///< the "N" of "I/N" (torchvision, Lightning); 0 where not printed
    std::vector<double> epoch_s;     ///< each complete epoch's training seconds, where printed (not 0:00:00)
    int batch_per_gpu = 0;           ///< the script's own batch size per rank, where it prints it; else 0
    int world_size = 0;              ///< the script's own rank count, where it prints it; else 0
};

/// Parse `text` (read from `origin`, which names it in errors). Without `format` the first line
/// of one of the three kinds decides. Lines of other kinds (warnings, evaluation, a launcher's)
/// are skipped; a prefix before a line's own text (srun's "0: ", a timestamp) is allowed. Throws
/// InputError naming `origin` when no throughput line of the format is found, or a DLLogger line
/// is not JSON.
TrainingLog read_training_log(std::string_view text, std::string_view origin,
                              std::optional<TrainingLogFormat> format = std::nullopt);

/// The median of `values` (the mean of the middle two for an even count); `values` is not empty.
double median_of(std::vector<double> values);

/// The steady throughput of a log.
struct LogThroughput {
    double throughput_images_per_s = 0;  ///< over all ranks
    double iteration_s = 0;              ///< seconds per step
    int figures_used = 0;
    int figures_skipped = 0;  ///< figures that average over one of an epoch's first `skip_steps` steps
};

/// The median of the figures whose first step is at least `skip_steps` into their epoch, as
/// images per second of `images_per_step` (the global batch) images a step. Throws InputError
/// naming `origin` when no figure is left (every one within an epoch's first `skip_steps` steps),
/// or skip_steps is negative or images_per_step below 1.
LogThroughput steady_throughput(const TrainingLog& log, long skip_steps, long images_per_step, std::string_view origin);

}  // namespace epochcast
