// What the user asks about: one training configuration on one cluster.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/types.hpp"

namespace epochcast {

/// The ImageNet-1k training set (ILSVRC2012), in images (seed 000: "1.28M images").
inline constexpr std::int64_t kImageNetTrainImages = 1'281'167;

// The largest scenario epochcast models (docs/model.md, "Limits"). Generous beside any cluster that
// can be rented, and small enough that every product the model forms fits its type: GPUs (nodes x
// GPUs per node <= 1.0e8) and the global batch (<= kMaxGlobalBatch) in an int, memory, images and
// seconds in a double far from its range. check_scenario_limits() (model/limits.hpp) applies them.
inline constexpr int kMaxNodes = 100'000;                             ///< worker (and server) instances
inline constexpr int kMaxGpusPerNode = 1'024;                         ///< GPUs (or CPU ranks) per instance
inline constexpr int kMaxBatchPerGpu = 1'000'000;                     ///< images per GPU per iteration
inline constexpr int kMaxGlobalBatch = 100'000'000;                   ///< images per iteration over all GPUs
inline constexpr std::int64_t kMaxDatasetImages = 1'000'000'000'000;  ///< images per epoch
inline constexpr double kMaxEpochs = 10'000;                          ///< epochs to train
inline constexpr int kMaxEfaAdapters = 64;                            ///< EFA adapters per node
inline constexpr double kMaxSpotInterruptionsPerNodeHour = 60;        ///< one a minute: beyond, no run starts
inline constexpr double kMaxCheckpointIntervalS = 3650.0 * 86400;     ///< ten years, as plan's deadline

/// The wait for a replacement node after a spot interruption, in seconds, unless the user gives one
/// (docs/model.md, eq. X1): an assumption, not a measurement. AWS gives two minutes' notice before it
/// reclaims a spot instance; five minutes stands for the new request's fulfilment and boot.
inline constexpr double kDefaultSpotReplacementWaitS = 300;
/// The fewest worker nodes a spot run priced elastic may have (Scenario::spot_elastic, eq. X7): one
/// node has none to go on without.
inline constexpr int kElasticSpotMinNodes = 2;

/// A count computed in floating point (servers = ratio x worker nodes) as a Scenario's int: past
/// kMaxNodes (or not a number) kMaxNodes + 1, which resolve() refuses by its limit, never an overflow.
inline int clamped_count(double count) { return count <= kMaxNodes ? static_cast<int>(count) : kMaxNodes + 1; }

/// One configuration. Field names follow the trace runs and the sweep spec (docs/formats.md).
/// The defaults are what a user of 2026 rents first: PyTorch on one p5.48xlarge (8 H100), mixed
/// precision, 256 images per GPU, NCCL's own all-reduce.
struct Scenario {
    std::string model = "resnet50";                      ///< resnet18|34|50|101|152
    int image_size = 224;                                ///< input side, in pixels
    int classes = 1000;                                  ///< outputs of the classifier
    std::int64_t dataset_images = kImageNetTrainImages;  ///< images in one epoch
    double epochs = 90;                                  ///< epochs to train (seed 000: 90), unless a target is set
    /// A target ImageNet top-1 accuracy, percent: when above 0 the epochs are what `recipe` needs
    /// to reach it at the global batch (docs/model.md, "Time to accuracy"), and `epochs` is unused.
    double target_top1_percent = 0;
    std::string recipe;  ///< training recipe for the target; empty: the built-in default

    std::string instance = "p5.48xlarge";  ///< worker instance type (catalog name)
    int nodes = 1;                         ///< worker instances
    int gpus_per_node = 0;                 ///< GPUs used on each worker; 0 means all the instance has (the
                                           ///< CLI's --gpus-per-node refuses 0: leave the flag out for all)
    int batch_per_gpu = 256;               ///< images per GPU per iteration (unless global_batch is set)
    /// Images per iteration over all GPUs, held fixed as GPUs are added (strong scaling, as MLPerf
    /// runs): the per-GPU batch is global_batch / GPUs, which must divide it. 0: batch_per_gpu rules.
    int global_batch = 0;
    Precision precision = Precision::amp;
    Strategy strategy = Strategy::nccl;
    Framework framework = Framework::pytorch;
    SoftwareStack stack = SoftwareStack::current;  ///< the software the compute runs on
    /// The convolutions' activation layout (channels_last: NVIDIA's tuned code and MLPerf). The
    /// legacy stack ran NCHW whatever this says.
    MemoryFormat memory_format = MemoryFormat::channels_last;
    Loader loader = Loader::framework_default;  ///< how images reach the GPU; default: the framework's
    /// PyTorch under torch.compile (TorchInductor's default mode) rather than eager: the compute
    /// curve, which every PyTorch run measured eager, is carried by eq. C9 (docs/model.md).
    bool compiled = false;

    std::string ps_instance;    ///< parameter-server instance type (strategy ps, not co-located)
    int ps_nodes = 0;           ///< parameter-server instances (strategy ps, not co-located); 0: none
    bool ps_colocated = false;  ///< one server per worker node, on the workers themselves
    int efa_adapters = -1;      ///< EFA adapters used per node: -1 all the instance has, 0 none
                                ///< (NCCL falls back to TCP sockets, seed 004)

    Pricing pricing = Pricing::on_demand;
    /// Spot only (docs/model.md, "Spot interruptions"): interruptions per node-hour; -1: the catalog's
    /// for the instance (its spot price's frequency band, eq. X0); 0: none.
    double spot_interruptions_per_node_hour = -1;
    double checkpoint_interval_s = 0;  ///< spot: seconds of work between checkpoints; 0: an epoch's, or Young's (X4)
    double spot_replacement_wait_s = kDefaultSpotReplacementWaitS;  ///< spot: seconds to get a node back (eq. X1)
    /// Spot: the run goes on without a lost node until its replacement joins (seed 003's dynamic
    /// training), and is priced so (eq. X7); needs 2 nodes or more and no dedicated servers.
    bool spot_elastic = false;
    double fusion_threshold_MiB = 0;  ///< gradient bucket, MiB; 0: the framework's (FrameworkProfile::bucket_MiB)

    // What the run costs around its iterations (issue 45, items 2-4; docs/model.md, eqs. F1-F6, E1, E2, L1)
    Store storage = Store::none;  ///< where the images are read from; none: no store bound, staging or cost line
    double storage_tib = 0;       ///< fsx-lustre: capacity provisioned, TiB; 0: the store's default (1.2)
    double storage_tier_MBps_per_TiB = 0;  ///< fsx-lustre: throughput tier; 0: the store's default (125)
    int eval_images = 50'000;              ///< validation images per evaluation pass (ImageNet-1k's val set); 0: none
    /// An evaluation pass after every this many epochs; 0: never. Not given: the recipe's cadence
    /// where the epochs come from a recipe that publishes one (--target-top1; mlperf-lars every 4),
    /// else never (seed 000's measured times to train hold no evaluation every epoch; docs/model.md,
    /// "Evaluation")
    std::optional<int> eval_every_epochs;
    double startup_s = -1;  ///< launch to first iteration, seconds; -1: eq. L1's for the cluster

    /// Every field equal (a scenario file read back is the Scenario written).
    friend bool operator==(const Scenario&, const Scenario&) = default;
};

}  // namespace epochcast
