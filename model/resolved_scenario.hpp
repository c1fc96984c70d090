// A Scenario reduced to the numbers the formulas use (CostModel::resolve's answer, what
// CostModel::predict reads): plain values, cheap to copy. Each room of the model fills its own
// fields (docs/architecture.md, "The model's rooms").
#pragma once

#include <array>
#include <cstddef>
#include <limits>
#include <string_view>

#include "model/convergence.hpp"
#include "model/types.hpp"

namespace epochcast {

/// The fields of a ResolvedScenario that are proportional to one calibration parameter each;
/// the prediction's interval propagates the parameters' covariance through them (eq. U1).
enum class SensitiveField {
    time_per_image,
    fixed,
    sync_jitter,
    overlap,
    intra_bandwidth,
    intra_latency,
    inter_bandwidth,
    inter_latency,
    server_bandwidth,
    nvls_bandwidth,
    decode,
    count
};
inline constexpr std::size_t kSensitiveFields = static_cast<std::size_t>(SensitiveField::count);

/// Which parameter a field comes from: its row in CostModel's covariance (-1: none) and
/// d ln(field) / d(parameter coordinate).
struct FieldSensitivity {
    int parameter = -1;
    double log_field_per_coordinate = 0;
};

/// How far one uncertainty moves the compute curve's two fields: d ln(fixed_s) and
/// d ln(time_per_image_s) per 1-sigma of it (torch.compile's, eq. C9).
struct LogShift {
    double log_fixed = 0;
    double log_time_per_image = 0;
};

/// Where a resolved scenario's compute curve came from (docs/model.md, "The compute curve", eq. C0),
/// in the order they are tried.
enum class CurveOrigin {
    measured,          ///< measured on this GPU's chip with this software and precision (a memory variant
                       ///< carried by its bandwidth, eq. C7)
    precision_family,  ///< measured at another precision of the family with the same tensor peak (amp, bf16)
    other_software,    ///< another framework's, stack's or layout's curve on this chip (eq. C4)
    pooled,            ///< eq. C4 pooled with eq. C5 by their uncertainties (eq. C6)
    other_gpus,        ///< this software's curves on other chips, carried by the roofline (eq. C5)
    roofline,          ///< the roofline prior alone (eq. C3)
};
std::string_view to_string(CurveOrigin origin);

/// A Scenario reduced to the numbers the formulas use. Plain values, cheap to copy.
struct ResolvedScenario {
    // Cluster shape
    int nodes = 0;          ///< worker instances
    int gpus_per_node = 0;  ///< GPUs used per worker instance
    int batch_per_gpu = 0;  ///< images per GPU per iteration
    Strategy strategy = Strategy::hierarchical;
    int ps_nodes = 0;           ///< dedicated parameter-server instances (0 when co-located)
    bool ps_colocated = false;  ///< servers on the worker instances

    // One GPU's compute curve: compute_s = fixed_s + batch x time_per_image_s
    double time_per_image_s = 0;  ///< seconds per image
    double fixed_s = 0;           ///< seconds per iteration
    double transfer_sigma = 0;    ///< extra relative 1-sigma of a curve carried to another architecture
    CurveOrigin curve_origin = CurveOrigin::roofline;  ///< measured, carried (eqs. C0-C7) or the roofline
    /// Under torch.compile (eq. C9): how its two unknowns, the split of its gain between the fixed
    /// and the per-image time and the measured ratio, move the curve; zero when eager.
    bool compiled = false;
    LogShift compiled_split;
    LogShift compiled_ratio;

    // Framework profile
    double sync_jitter = 0;       ///< relative std of a worker's compute time
    double straggler_factor = 0;  ///< sqrt(2 ln N) for the N GPUs (eq. S1)
    double overlap = 0;           ///< fraction of the backward pass hiding communication
    double node_overlap = 0;      ///< the same for all-reduce inside one node (the one-node baseline)

    // Communication
    Interconnect interconnect =
        Interconnect::tcp;                     ///< the fabric the gradients cross (EFA with no adapter in use: tcp)
    IntraLink intra_link = IntraLink::nvlink;  ///< the class of the GPU-to-GPU link inside a node
    double gradient_bytes = 0;                 ///< bytes synchronised per iteration
    double bucket_bytes = 0;                   ///< fusion buffer: the all-reduce runs once per bucket of at most this
    double nvls_bandwidth_Bps = 0;             ///< NVLink SHARP all-reduce bandwidth in one node, bytes/s; 0 where none
    double intra_bandwidth_Bps = 0;            ///< GPU-to-GPU inside a node, in bytes/s
    double intra_latency_s = 0;                ///< per message inside a node, in seconds
    double inter_bandwidth_Bps = 0;            ///< one worker node's network, in bytes/s
    double inter_latency_s = 0;                ///< per message across nodes, in seconds (the low-latency protocol's)
    double inter_simple_latency_s = 0;  ///< per message across nodes with NCCL's Simple protocol; 0: one protocol
    double server_bandwidth_Bps = 0;    ///< one parameter-server node's network, in bytes/s

    // Input pipeline
    Loader loader = Loader::cpu;             ///< the loader in use (the framework's where the scenario names none)
    double decode_images_per_s_per_gpu = 0;  ///< JPEG decode + augmentation rate feeding one GPU (infinite: synthetic)
    double host_vcpus_per_gpu = 0;           ///< the node's vCPUs over the GPUs used on it
    bool host_vcpus_short = false;           ///< fewer than the loader needs beside the training process (eq. D3)

    // Run and money
    double dataset_images = 0;  ///< images per epoch
    double epochs = 0;          ///< epochs to train (given, or eqs. K1-K3 for a target)
    double epochs_low = 0;      ///< their band
    double epochs_high = 0;
    EpochsBasis epochs_basis = EpochsBasis::given;
    int epochs_recipe = -1;                      ///< index into CostModel::convergence().recipes; -1 for given epochs
    bool global_batch_beyond_published = false;  ///< beyond every recipe's largest published batch for the model
    double checkpoint_s = 0;                     ///< one checkpoint write, seconds
    double startup_s = 0;                        ///< launch to first iteration, seconds (eq. L1)
    double eval_images = 0;                      ///< images per evaluation pass (eq. E1)
    int eval_every_epochs = 0;                   ///< an evaluation after every this many epochs; 0: never (eq. E2)
    bool eval_every_from_recipe = false;         ///< eval_every_epochs is the recipe's cadence (not --eval-every)
    // The data (eqs. F1-F6): all zero, and the store's images/s infinite, for Store::none
    Store storage = Store::none;
    /// What the store feeds one GPU once each node's page cache is warm (eqs. F3, F7), images/s;
    /// infinite: no bound (no store, one without, or a cache that holds the whole dataset)
    double storage_images_per_s_per_gpu = std::numeric_limits<double>::infinity();
    /// What it feeds one GPU in the first epoch, every image read from the store (eq. F3), images/s
    double storage_first_epoch_images_per_s_per_gpu = std::numeric_limits<double>::infinity();
    /// The share of a node's reads its page cache serves once warm (eq. F7), 0 to 1
    double page_cache_hit_fraction = 0;
    /// The store's read rate to the cluster (eq. F2), bytes/s; infinite: no bound
    double storage_deliverable_Bps = std::numeric_limits<double>::infinity();
    double image_bytes = 0;           ///< the mean training JPEG, bytes
    double staging_s = 0;             ///< the copy from S3 before training (eq. F4)
    bool staging_on_workers = false;  ///< the workers make that copy, billed meanwhile
    double storage_capacity_GB = 0;   ///< capacity billed by the month, GB (2^30 bytes)
    double storage_usd_per_GB_month = 0;
    double storage_read_GB_per_epoch = 0;  ///< billed reads of one epoch (training images), GB
    double storage_read_GB_per_eval = 0;   ///< and of one evaluation pass
    double storage_gets_per_epoch = 0;     ///< GET requests of one epoch
    double storage_gets_per_eval = 0;
    double storage_usd_per_GB_read = 0;
    double storage_usd_per_GB_written = 0;
    double storage_usd_per_1000_get = 0;
    double storage_usd_per_1000_put = 0;
    double staging_usd = 0;                       ///< the staging copy's requests (its GETs from S3)
    double checkpoint_GB = 0;                     ///< one checkpoint's size, GB (2^30 bytes)
    bool spot_modelled = false;                   ///< spot pricing with an interruption rate (eqs. X0-X6)
    double spot_interruptions_per_node_hour = 0;  ///< that rate, per node
    double checkpoint_interval_s = 0;             ///< spot: seconds of work between checkpoints; 0: the default
    double spot_replacement_wait_s = 0;           ///< spot: seconds to get a node back
    bool spot_elastic = false;                    ///< spot: priced elastic (eq. X7), Scenario::spot_elastic
    Pricing pricing = Pricing::on_demand;         ///< how the instances are sold (eq. H1 bills it)
    double cluster_usd_per_hour = 0;              ///< workers + dedicated servers at the chosen pricing
    bool priced = true;                           ///< false: an instance of the cluster has no price (cluster_priced)
    double memory_per_gpu_bytes = 0;              ///< what one GPU needs for this batch, headroom included (eq. M1)
    double memory_headroom_bytes = 0;             ///< of that, the CUDA context and the allocator's slack

    // Uncertainty
    std::array<FieldSensitivity, kSensitiveFields> sensitivity{};  ///< indexed by SensitiveField

    double& field(SensitiveField f);
    double field(SensitiveField f) const { return const_cast<ResolvedScenario*>(this)->field(f); }
};

}  // namespace epochcast
