// What the user asks about: one training configuration on one cluster.
#pragma once

#include <cstdint>
#include <string>

#include "model/types.hpp"

namespace epochcast {

/// The ImageNet-1k training set (ILSVRC2012), in images (seed 000: "1.28M images").
inline constexpr std::int64_t kImageNetTrainImages = 1'281'167;

/// One configuration. Field names follow the trace runs and the sweep spec (DESIGN.md).
/// The defaults are seed 000's cluster with TensorFlow + Horovod.
struct Scenario {
    std::string model = "resnet50";        ///< resnet18|34|50|101|152
    int image_size = 224;                  ///< input side, in pixels
    int classes = 1000;                    ///< outputs of the classifier
    std::int64_t dataset_images = kImageNetTrainImages;  ///< images in one epoch
    double epochs = 90;                    ///< epochs to train (seed 000: 90), unless a target is set
    /// A target ImageNet top-1 accuracy, percent: when above 0 the epochs are what `recipe` needs
    /// to reach it at the global batch (docs/model.md, "Time to accuracy"), and `epochs` is unused.
    double target_top1_percent = 0;
    std::string recipe;                    ///< training recipe for the target; empty: the built-in default

    std::string instance = "p3.16xlarge";  ///< worker instance type (catalog name)
    int nodes = 8;                         ///< worker instances
    int gpus_per_node = 0;                 ///< GPUs used on each worker; 0 means all the instance has
    int batch_per_gpu = 256;               ///< images per GPU per iteration (unless global_batch is set)
    /// Images per iteration over all GPUs, held fixed as GPUs are added (strong scaling, as MLPerf
    /// runs): the per-GPU batch is global_batch / GPUs, which must divide it. 0: batch_per_gpu rules.
    int global_batch = 0;
    Precision precision = Precision::amp;
    Strategy strategy = Strategy::nccl;
    Framework framework = Framework::tensorflow;
    SoftwareStack stack = SoftwareStack::current;  ///< the software the compute runs on

    std::string ps_instance;               ///< parameter-server instance type (strategy ps, not co-located)
    int ps_nodes = 0;                      ///< parameter-server instances (strategy ps, not co-located)
    bool ps_colocated = false;             ///< one server per worker node, on the workers themselves
    int efa_adapters = -1;                 ///< EFA adapters used per node: -1 all the instance has, 0 none
                                           ///< (NCCL falls back to TCP sockets, seed 004)

    Pricing pricing = Pricing::on_demand;
    double fusion_threshold_MiB = 0;       ///< gradient bucket, MiB; 0: the framework's (FrameworkProfile::bucket_MiB)
};

}  // namespace epochcast
