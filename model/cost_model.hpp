// The analytic cost model: Scenario -> Prediction in closed form. Each term is a small function
// of its own (the compute terms below, the network's in model/collectives.hpp), derived in
// docs/model.md.
//
// Two steps so that sweeps are fast: resolve() validates a Scenario against the catalog and the
// calibration and reduces it to numbers (it may throw and allocate); predict() is arithmetic on
// those numbers only: it neither throws nor allocates.
#pragma once

#include <array>
#include <cstddef>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "model/calibration.hpp"
#include "model/catalog.hpp"
#include "model/compute_curve.hpp"
#include "model/convergence.hpp"
#include "model/observation.hpp"
#include "model/parameters.hpp"
#include "model/prediction.hpp"
#include "model/scenario.hpp"
#include "model/workload.hpp"

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

/// One sentence for a user on where a curve that was not measured came from and why its band is
/// wider ("no measured compute curve for H100-SXM5-80GB / bf16 / pytorch: its amp curve stands in
/// ..."); empty for a measured one. The CLI's notes and the window's message say it alike.
std::string curve_origin_note(const std::string& gpu, const Scenario& scenario, CurveOrigin origin);

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
    double cluster_usd_per_hour = 0;              ///< workers + dedicated servers at the chosen pricing
    bool priced = true;                           ///< false: an instance of the cluster has no price (cluster_priced)
    double memory_per_gpu_bytes = 0;              ///< what one GPU needs for this batch, headroom included (eq. M1)
    double memory_headroom_bytes = 0;             ///< of that, the CUDA context and the allocator's slack

    // Uncertainty
    std::array<FieldSensitivity, kSensitiveFields> sensitivity{};  ///< indexed by SensitiveField

    double& field(SensitiveField f);
    double field(SensitiveField f) const { return const_cast<ResolvedScenario*>(this)->field(f); }
};

/// The fabric a node's gradients cross with `efa_adapters` of its EFA adapters in use (-1: all):
/// its interconnect, except EFA with none in use, which falls back to NCCL's TCP sockets.
Interconnect fabric_in_use(const InstanceSpec& instance, int efa_adapters);

/// The per-GPU batch of a scenario: global_batch / GPUs when the global batch is fixed (GPUs =
/// nodes x GPUs per node, `instance_gpus` standing for a gpus_per_node of 0), else batch_per_gpu.
/// Throws InputError when the GPUs do not divide the global batch, naming both numbers.
int per_gpu_batch(const Scenario& scenario, int instance_gpus);

/// Bandwidth one node gets across the network with `efa_adapters` of its adapters in use (-1:
/// all), in bytes/s: the line rate (its share of the adapters for EFA) times the fabric's
/// efficiency, under the fabric's per-node ceiling where it has one (docs/model.md, eq. N1).
double node_network_Bps(const InstanceSpec& instance, int efa_adapters, const NetworkParams& network);

/// GPU-to-GPU bandwidth inside a node for a ring, in bytes/s: intra_node_GBps times the link
/// class's efficiency (eq. N2). A host's CPU ranks (`local-cpu`) give their measured bus bandwidth.
double intra_node_Bps(const InstanceSpec& instance, DeviceKind device, const NetworkParams& network);

/// The algorithm the scenario's strategy runs for one all-reduce of `bytes`: NCCL's choice (eq.
/// A1) for nccl, the forced one for ring and tree, Horovod's three phases for hierarchical (a ring
/// in one node), push_pull for parameter servers.
Algorithm algorithm_for(const ResolvedScenario& s, double bytes);

/// The rate at which NCCL's tree moves the buffer through a node's GPUs (eq. T2): its chain over
/// intra_bandwidth_Bps, or NVLink SHARP's (NVLSTree) where the node has it, in bytes/s.
double tree_node_Bps(const ResolvedScenario& s);

/// NCCL's protocol for one collective across nodes (eq. N3): the low-latency one (the fabric's
/// latency, kLowLatencyBandwidthFactor of every bandwidth) or Simple (its own latency, the full
/// bandwidth), whichever is cheaper for the bytes.
struct Protocol {
    double inter_latency_s = 0;   ///< per inter-node hop
    double bandwidth_factor = 1;  ///< of every bandwidth the algorithm uses
};
Protocol nccl_protocol(const ResolvedScenario& s, Algorithm algorithm, double bytes);

/// One all-reduce of `bytes` on the resolved cluster by `algorithm` (ring, tree, nvls or
/// hierarchical), in seconds (eqs. R1-R3, T2, V1, with N3's protocol across nodes). Zero for one GPU.
double allreduce_time_s(const ResolvedScenario& s, Algorithm algorithm, double bytes);

/// The same with the protocol given.
double allreduce_time_s(const ResolvedScenario& s, Algorithm algorithm, double bytes, const Protocol& protocol);

/// The algorithm NCCL picks by default for one all-reduce of `bytes` on the resolved cluster: the
/// cheapest of ring, tree (several nodes) and NVLS (one node with NVLink SHARP), as NCCL's own
/// tuning model chooses (eq. A1). Algorithm::none for one GPU.
Algorithm nccl_algorithm(const ResolvedScenario& s, double bytes);

/// nccl-tests' all_reduce_perf on `ranks` GPUs of `instance` (whole nodes, the last one partly
/// filled), as the model sees it: for one message of `bytes`, the algorithm (NCCL's default, eq.
/// A1, for strategy nccl; the one forced by NCCL_ALGO for ring and tree), its time and its bus
/// bandwidth (as nccl-tests reports them).
struct AllReducePrediction {
    Algorithm algorithm = Algorithm::none;
    double seconds = 0;
    double bus_bandwidth_GBps = 0;  ///< bytes / seconds x 2(n-1)/n, in 10^9 bytes/s
};
AllReducePrediction predict_allreduce(const InstanceSpec& instance, DeviceKind device, int ranks, int efa_adapters,
                                      double bytes, const NetworkParams& network, Strategy strategy = Strategy::nccl);

/// A message large enough that every latency of eqs. R3, T2 and V1 is below a part in 10^4 of
/// its bytes' time (a terabyte): what stands for nccl-tests' plateau.
inline constexpr double kLargeMessageBytes = 1e12;

/// The bus bandwidth that predict_allreduce approaches as the message grows (latencies vanish
/// beside the bytes), in 10^9 bytes/s: what a large-message nccl-tests row measures.
double allreduce_bus_bandwidth_GBps(const InstanceSpec& instance, DeviceKind device, int ranks, int efa_adapters,
                                    const NetworkParams& network, Strategy strategy = Strategy::nccl);

/// predict_allreduce for a measured all-reduce: its instance (from `catalog`), ranks, EFA
/// adapters and NCCL_ALGO, at its message size, or at kLargeMessageBytes for a plateau figure.
AllReducePrediction predict_allreduce(const Catalog& catalog, const NetworkObservation& measured,
                                      const NetworkParams& network);

/// How one iteration's gradients are synchronised: the algorithm, the buckets and the time.
struct Communication {
    Algorithm algorithm = Algorithm::none;
    int buckets = 0;     ///< all-reduces per iteration: ceil(gradient bytes / bucket bytes)
    double seconds = 0;  ///< the whole synchronisation (eq. B1)
};
Communication communication(const ResolvedScenario& s);

/// Per-iteration compute of one GPU: fixed + batch x per-image time (docs/model.md, eq. C1).
double compute_time_s(double fixed_s, double time_per_image_s, int batch);

/// Backward share of the batch-proportional compute: backward is 2 of the 3 forward-equivalents
/// of a training step (docs/model.md, eq. C2).
double backward_time_s(double time_per_image_s, int batch);

/// Eq. C3's memory efficiency of the legacy stack's fp32: the 2017-2018 stock fp32 kernels ran the
/// network unfused (batch norm, ReLU and the residual add each a kernel of its own, NCHW), so they
/// move the unfused traffic count itself at the memory's bandwidth: 1. The prior's
/// memory_efficiency (above 1) is the fused stacks'; docs/model.md, eq. C3.
inline constexpr double kUnfusedMemoryEfficiency = 1.0;

/// Eq. C3's memory efficiency under `stack` at `precision`: kUnfusedMemoryEfficiency for the
/// legacy stack's fp32, the prior's elsewhere (the legacy half-precision runs are of one chip, the
/// V100, and show no bandwidth term of their own).
double roofline_memory_efficiency(const RooflinePrior& prior, SoftwareStack stack, Precision precision);

/// Roofline prior for one image: FLOPs / (peak x efficiency) + bytes / (bandwidth x efficiency) (eq. C3).
double roofline_time_per_image_s(double training_flops, double peak_flops_per_s, double compute_efficiency,
                                 double memory_bytes, double memory_Bps, double memory_efficiency);

/// One measured curve against its GPU's roofline (eq. C3 at the prior's efficiencies), both in
/// seconds per image, for eq. C5.
struct RooflinePoint {
    double roofline_s = 0;
    double measured_s = 0;
};

/// Eq. C5: a framework's measured curves over the GPUs it ran on, against each GPU's roofline:
/// t_img = factor x roofline + floor. `floor_s` is the per-image time no faster GPU removes (0
/// unless three or more curves span a 1.5x range of roofline times); `relative_sigma` the scatter
/// of the curves' logarithms around the line with the roofline prior's sigma (`roofline_sigma`)
/// counted as one more residual, over the degrees of freedom plus one, never below
/// kRooflineFitMinSigma: the roofline prior's own sigma when the points leave no freedom.
struct FrameworkRoofline {
    double factor = 0;
    double floor_s = 0;
    double relative_sigma = 0;
    int curves = 0;
};
inline constexpr double kRooflineFitMinSigma = 0.05;
FrameworkRoofline fit_framework_roofline(const std::vector<RooflinePoint>& points, double roofline_sigma);

/// Eq. C6: two independent estimates of ln t_img with relative sigmas `sigma_a` and `sigma_b`,
/// pooled by inverse variance: the first one's weight, and the pooled estimate's sigma.
double pooled_weight(double sigma_a, double sigma_b);
double pooled_sigma(double sigma_a, double sigma_b);

/// Eq. C5 fits its line per image of this model (other depths and sizes scale by their FLOPs).
inline constexpr const char* kReferenceModel = "resnet50";
inline constexpr int kReferenceImageSize = 224;

/// Expected wait for the slowest of `workers` whose compute time has relative std `jitter`:
/// E[max of n normals] ~ mu + sigma sqrt(2 ln n) (eq. S1). Zero for one worker.
double straggler_wait_s(double compute_s, double jitter, int workers);

/// sqrt(2 ln n), the expected maximum of n standard normals in standard deviations (eq. S1); 0 for one.
double straggler_factor(int workers);

/// Fewest per-step samples compute_jitter accepts.
inline constexpr std::size_t kMinJitterSamples = 8;
/// The relative standard deviation of one worker's compute time from its per-step samples, by
/// successive differences, so that a slow drift shared by every worker (a host that speeds up and
/// slows down) does not count (eq. S2). Throws InputError for fewer than kMinJitterSamples samples
/// or a sample that is not positive.
double compute_jitter(const std::vector<double>& step_seconds);

/// Communication the backward pass cannot hide: max(0, comm - overlap x backward) (eq. O1).
double exposed_communication_s(double communication_s, double backward_s, double overlap);

/// Input pipeline time for one GPU's batch (eq. D1).
double data_time_s(int batch, double decode_images_per_s);

/// The exponent of eq. I1's smooth maximum of the training step and the input pipeline, 2^5: a
/// power of two, so that pipelined_s raises and roots it by squarings and square roots.
inline constexpr int kPipelineSmoothnessLog2 = 5;
inline constexpr double kPipelineSmoothness = 1 << kPipelineSmoothnessLog2;
/// Eq. I1: one iteration when the input pipeline prepares the next batch while the GPU trains on
/// this one: (step^p + data^p)^(1/p) with p = kPipelineSmoothness, the larger of the two but for a
/// stall near balance (at most 2^(1/p) - 1 = 2.2% where they are equal: the queue between them
/// runs dry now and then), and differentiable, so that a fit reaches a run at the boundary from
/// both sides. `step_s` alone where there is no pipeline time.
double pipelined_s(double step_s, double data_s);

/// The rate at which `loader` feeds one of `gpus_per_node` GPUs on a node of `vcpus` (eq. D1): a CPU
/// loader's rate per vCPU (the framework's own pipeline's, or DALI's on the CPU) times the node's
/// vCPUs over its GPUs, DALI's on-GPU rate per GPU, infinite for synthetic data (nothing to
/// decode), in images/s.
double decode_rate_per_gpu(const Calibration& calibration, Loader loader, Framework framework, int vcpus,
                           int gpus_per_node);

/// Whole gradient synchronisation of one iteration for the scenario's strategy (eqs. B1, P1, P2):
/// communication(s).seconds.
double communication_time_s(const ResolvedScenario& s);

/// One iteration's phases (eqs. C1-O1, S1, D1).
struct IterationTimes {
    double compute_s = 0;
    double data_s = 0;
    double communication_s = 0;
    double exposed_communication_s = 0;
    double sync_s = 0;
    double iteration_s = 0;  ///< max(compute + sync + exposed communication, data)
};
IterationTimes iteration_times(const ResolvedScenario& s);

/// The rate at which the input pipeline feeds one GPU (eqs. D1, F3): the lower of the loader's
/// decoding and what the store delivers, in images/s.
double input_images_per_s_per_gpu(const ResolvedScenario& s);

/// The bottleneck named for a resolved scenario: bottleneck_of's, with data named storage where
/// the store, not the decoding, bounds the input pipeline (eq. F3).
Bottleneck named_bottleneck(const ResolvedScenario& s, Bottleneck bottleneck) noexcept;

/// The prediction's evaluation, staging and store figures (eqs. E1, E2, F1-F6) from its resolved
/// scenario and throughput; apply_schedule() calls it before it sums the time and the cost.
void apply_run_costs(const ResolvedScenario& s, Prediction& p) noexcept;

/// What bounds an iteration: the input pipeline when it is the longest phase, else communication
/// when the time spent in the collective (its exposed part plus the wait there for the slowest
/// worker) exceeds compute, else compute.
Bottleneck bottleneck_of(double compute_s, double sync_s, double exposed_communication_s, double data_s) noexcept;

/// Fill the prediction's epoch, startup, time to train, memory and money from its throughput
/// (docs/model.md, "Time to train and cost"); shared by the closed form and the simulator.
void apply_schedule(const ResolvedScenario& s, Prediction& p) noexcept;

/// A spot run's interruptions (docs/model.md, "Spot interruptions", eqs. X1-X7): fills p.spot (with
/// the same run elastic, eq. X7, where its cluster can shrink) and makes the time to train, the cost
/// and their bands the expected run's; infinite where it never finishes (SpotRun::finishes false). apply_schedule()
/// calls it for a resolved spot_modelled scenario.
void apply_spot(const ResolvedScenario& s, Prediction& p) noexcept;

/// Refuse a scenario past the limits epochcast models (model/scenario.hpp, docs/model.md "Limits")
/// or below their floor, before any product is formed: nodes 1..kMaxNodes, GPUs per node 0 (all)
/// or 1..kMaxGpusPerNode, batch per GPU 1..kMaxBatchPerGpu (unless a global batch is set), global
/// batch 0 (none) or 1..kMaxGlobalBatch, image size up to kMaxImageSizePx, classes 1..kMaxClasses,
/// dataset images 1..kMaxDatasetImages, epochs finite in (0, kMaxEpochs] (unless a target is set),
/// EFA adapters -1 (all), 0 or up to kMaxEfaAdapters, server nodes 0..kMaxNodes. Throws InputError
/// naming the CLI flag and the limit ("--nodes 2147483647 is more than the 100,000 nodes epochcast
/// models"). resolve() calls it first.
void check_scenario_limits(const Scenario& scenario);

/// The spot fields' limits: an interruption rate of -1 (the catalog's) or 0..kMaxSpotInterruptionsPerNodeHour
/// per node-hour, a checkpoint interval and a replacement wait of 0..kMaxCheckpointIntervalS seconds.
/// InputError naming the flag. check_scenario_limits() calls it.
void check_spot_limits(const Scenario& scenario);

/// An interruption rate the user gives (--spot-interruptions-per-node-hour, a sweep spec's
/// spot_interruptions_per_node_hour), which cannot be the catalog's -1: 0 to
/// kMaxSpotInterruptionsPerNodeHour per node-hour. InputError naming the flag otherwise.
void check_given_spot_rate(double rate);

/// The limits of the run's costs around its iterations: --storage-tib finite and 0 (the store's
/// default) to kMaxStorageTiB, --storage-tier finite and not negative, --eval-images 0..kMaxEvalImages,
/// --eval-every 0..kMaxEvalEveryEpochs, a start-up of -1 (the calibration's) or 0 to ten years.
/// InputError naming the flag. check_scenario_limits() calls it.
void check_run_cost_limits(const Scenario& scenario);

/// Refuse a prediction with a figure of kPredictionFigures that is not a finite, non-negative
/// number, no throughput, or a band that does not hold the throughput: throws InfeasibleError
/// naming the figure. The last check before a prediction reaches a user (CostModel::checked_predict).
void check_prediction(const Prediction& prediction);

// The steps of CostModel::resolve(), in its order, each of one concern.

/// The worker nodes a scenario names, as the catalog has them.
struct WorkerNodes {
    const InstanceSpec* instance = nullptr;
    const GpuSpec* gpu = nullptr;
    int gpus_per_node = 0;  ///< in use: the scenario's, or the instance's all for 0
    int efa_adapters = 0;   ///< in use: the scenario's, or the instance's all for -1
};

/// Throws InputError for an unknown instance, one with no GPUs (a server only), more EFA adapters
/// or GPUs per node than it has (or than kMaxGpusPerNode), or several GPUs and no intra_node_GBps.
WorkerNodes resolve_workers(const Catalog& catalog, const Scenario& scenario);

/// The dedicated parameter servers' instance: nullptr for none (a strategy other than ps, or
/// servers co-located on the workers). Throws InputError for server flags without --strategy ps,
/// ps without servers, dedicated servers with no instance or co-located ones with a count.
const InstanceSpec* parameter_server_instance(const Catalog& catalog, const Scenario& scenario);

/// Throws InputError when `gpu` has no arithmetic at `precision`, naming the precisions it has.
void check_precision(const GpuSpec& gpu, Precision precision);

/// Images per iteration: nodes x gpus_per_node x batch_per_gpu. Throws InputError for a per-GPU
/// batch below 1, or a global batch above kMaxGlobalBatch or above the dataset's images (one
/// iteration would exceed an epoch).
double checked_global_batch(const Scenario& scenario, int gpus_per_node, int batch_per_gpu);

/// One GPU's training memory for the batch (eq. M1). Throws InfeasibleError when it exceeds the
/// GPU's memory, naming the model, the GiB both ways and the largest batch that fits.
MemoryEstimate checked_training_memory(const Workload& work, const std::string& model, Precision precision,
                                       int batch_per_gpu, const GpuSpec& gpu);

/// The latency a message across nodes pays, in seconds, and the fabric it is that of: the
/// workers' fabric's, or, with dedicated servers (`server`, nullptr: none), the slower of the
/// workers' and the servers' (docs/model.md, "Parameter servers").
struct FabricLatency {
    Interconnect fabric = Interconnect::tcp;
    double latency_s = 0;
};
FabricLatency cross_node_latency(Interconnect worker_fabric, const InstanceSpec* server, const NetworkParams& network);

/// The calibration parameter a node's network bandwidth (eq. N1) is proportional to, and its value:
/// the fabric's per-node cap where the node reaches it, else the fabric's efficiency.
struct NetworkParameter {
    ParameterId id;
    double value = 0;
};
NetworkParameter node_network_parameter(const InstanceSpec& instance, int efa_adapters, const NetworkParams& network);

/// The epochs to train and their band, basis and recipe: the scenario's epochs, or, for a target
/// accuracy, its recipe's at the global batch (eqs. K1-K3); the fields of `r` from `epochs` to
/// global_batch_beyond_published. Throws InputError for an unknown recipe or a target it does not reach.
void set_epochs(ResolvedScenario& r, const Convergence& convergence, const Scenario& scenario, double global_batch);

/// What the cluster costs per hour at the scenario's pricing, in USD: its worker nodes plus its
/// dedicated servers (`server`, nullptr: none). An instance with no price at all (a machine you own)
/// adds 0, and cluster_priced() is false. Throws InputError naming the instance and the pricings it
/// has where an instance with prices is not sold under the scenario's (p5e.48xlarge on-demand).
double cluster_price_usd_per_hour(const Scenario& scenario, const InstanceSpec& worker, const InstanceSpec* server);

/// Every instance of the cluster has a price (false: a cost of it would be a meaningless $0).
bool cluster_priced(const InstanceSpec& worker, const InstanceSpec* server);

/// The data (eqs. F1-F6): the store's deliverable rate to the cluster's `nodes` and its GPUs, the
/// staging copy, the capacity and the traffic it bills, and the checkpoint's write to it. Nothing
/// for Store::none. Throws InputError for store flags without their store, a tier the store does not
/// have, a capacity below the store's least or that cannot hold the dataset, or one past kMaxStorageTiB.
void set_storage(ResolvedScenario& r, const Scenario& scenario, const InstanceSpec& worker, double checkpoint_bytes);

/// Spot (eqs. X0-X6): the scenario's interruption rate, else the catalog's band for its workers (with
/// dedicated servers, the higher of theirs and the workers'), the checkpoint interval and the
/// replacement wait; nothing where the pricing is another or no rate is known (spot_modelled false).
void set_spot(ResolvedScenario& r, const Scenario& scenario, const InstanceSpec& worker, const InstanceSpec* server);

class CostModel {
public:
    /// Throws InputError when the calibration's covariance names a parameter it does not have.
    CostModel(Catalog catalog, Calibration calibration);
    /// The same catalog (shared, not copied) with another calibration: cheap, for fitting.
    CostModel(const CostModel& base, Calibration calibration);

    /// Validate and reduce. Throws InputError naming the problem (unknown instance, a count out of
    /// range, ps without servers, ...) and InfeasibleError when the batch does not fit in memory.
    ResolvedScenario resolve(const Scenario& scenario) const;

    /// The closed form. No allocation, no exception.
    Prediction predict(const ResolvedScenario& scenario) const noexcept;

    Prediction predict(const Scenario& scenario) const { return predict(resolve(scenario)); }

    /// predict() followed by check_prediction(): what the CLI, the plan search, the sweep and the
    /// what-if curves show. Throws InfeasibleError for a figure that is not finite and non-negative.
    Prediction checked_predict(const ResolvedScenario& scenario) const;
    Prediction checked_predict(const Scenario& scenario) const { return checked_predict(resolve(scenario)); }

    /// The architecture's workload figures, built once per (model, image size, classes).
    const Workload& workload(const std::string& model, int image_size, int classes) const;

    const Catalog& catalog() const { return *catalog_; }
    /// The training recipes that turn a target accuracy into epochs (built in).
    const Convergence& convergence() const { return *convergence_; }
    const Calibration& calibration() const { return calibration_; }

    /// Relative 1-sigma of the predicted throughput (eq. U1), from the parameters' covariance and
    /// the calibration's model sigma.
    double throughput_relative_sigma(const ResolvedScenario& s) const noexcept;

    /// d ln(throughput) / d(parameter coordinate) through each sensitive field (0 where the field
    /// depends on no parameter); the rows are s.sensitivity[f].parameter.
    std::array<double, kSensitiveFields> throughput_gradient(const ResolvedScenario& s) const noexcept;

    /// The covariance's rows but its last: every parameter of the calibration. The last row,
    /// index parameters().size(), is the roofline prior's (eq. C3), which has no ParameterId.
    const std::vector<ParameterId>& parameters() const { return parameters_; }
    /// The prior/fitted covariance of the rows, row-major.
    const std::vector<double>& covariance() const { return covariance_; }

private:
    struct WorkloadCache {
        std::mutex mutex;
        std::map<std::tuple<std::string, int, int>, Workload> workloads;
    };
    void build_covariance();
    void build_framework_rooflines();
    int parameter_row(ParameterKind kind, int index) const;
    /// The covariance row of a parameter of `value` and d ln(value) / d(its coordinate).
    FieldSensitivity sensitivity(ParameterKind kind, int index, double value) const;
    /// A scenario's compute curve (eq. C1's terms) and where it came from: the fallbacks of eq. C0,
    /// in their order (model/compute_curve.hpp finds the curves).
    struct ComputeCurveChoice {
        double time_per_image_s = 0;
        double fixed_s = 0;
        double transfer_sigma = 0;  ///< ResolvedScenario::transfer_sigma
        CurveOrigin origin = CurveOrigin::roofline;
        FieldSensitivity time_per_image;  ///< which parameter the time per image comes from
        FieldSensitivity fixed;           ///< and the fixed time
        /// Where the curve was measured at one batch b0 (eq. C1b): b0 and the half-saturation batch
        /// that split its time there; 0 where its runs measured the fixed time.
        double one_batch_b0 = 0;
        double one_batch_b_half = 0;
    };
    ComputeCurveChoice compute_curve(const GpuSpec& gpu, const Scenario& scenario, const Workload& work) const;
    /// compute_curve's answer, kept for the next scenario of the same GPU, workload and software:
    /// eq. C0's search over the curves (eqs. C4-C6 compare each pair of curves) was most of
    /// resolve()'s time, and a sweep or a plan asks again for every node count and batch.
    ComputeCurveChoice remembered_compute_curve(const GpuSpec& gpu, const Scenario& scenario,
                                                const Workload& work) const;
    /// Those answers, by the catalog's GpuSpec and the workload cache's Workload (both stay where
    /// they are while the model lives) and the software. Each CostModel has its own: they follow
    /// its calibration.
    struct CurveCache {
        std::mutex mutex;
        std::map<std::tuple<const GpuSpec*, const Workload*, Precision, Framework, SoftwareStack, MemoryFormat>,
                 ComputeCurveChoice>
            choices;
    };
    /// A measured curve taken as it stands for `gpu` and `precision` (steps 1 and 2 of eq. C0): scaled
    /// by FLOPs to the scenario's architecture, by eq. C7's roofline ratio to this memory variant.
    ComputeCurveChoice carried_curve(const ComputeCurve& curve, const GpuSpec& gpu, Precision precision,
                                     const Workload& work, CurveOrigin origin) const;
    /// Which parameter each field of `r` comes from and how strongly (eq. U1): the curve's, the
    /// framework's jitter and overlap, the links' and fabrics' bandwidths and latencies (the
    /// latency of `latency_fabric`), the decode rate.
    std::array<FieldSensitivity, kSensitiveFields> field_sensitivities(const ResolvedScenario& r,
                                                                       const ComputeCurveChoice& curve,
                                                                       Framework framework, const WorkerNodes& workers,
                                                                       const InstanceSpec* server,
                                                                       Interconnect latency_fabric) const;
    /// Eq. C3 for one image of `work` on `gpu` at `precision` under `stack`, at the calibration's
    /// prior efficiencies (the memory term's by roofline_memory_efficiency).
    double roofline_s(const GpuSpec& gpu, Precision precision, SoftwareStack stack, const Workload& work) const;
    /// Eq. C5's line of one software and precision family.
    struct SoftwareLine {
        Software software;
        PrecisionFamily family = PrecisionFamily::half;
        FrameworkRoofline line;
    };
    /// Eq. C5's line for the software and precision family, or nullptr where no curve of theirs exists.
    const SoftwareLine* framework_roofline(const Software& software, Precision precision) const;
    /// Eq. C5's line's time for one image of `work` on `gpu` at `precision`, in seconds.
    double line_time_s(const SoftwareLine& line, const GpuSpec& gpu, Precision precision, const Workload& work) const;
    /// Eq. C0's step 3: the ratio that carries `sibling` (a curve of this chip, other software or
    /// another precision family) to `software` at `precision` on `gpu`: across precision families,
    /// the ratio of the two families' lines at this GPU (eq. C4b) where both lines exist, its sigma
    /// the chips' measured ratios around their lines' ratios; else eq. C4's ratio of other chips.
    TransferRatio sibling_transfer(const ComputeCurve& sibling, const Software& software, const GpuSpec& gpu,
                                   Precision precision, const Workload& work) const;

    std::shared_ptr<const Catalog> catalog_;
    const Convergence* convergence_ = &Convergence::built_in();
    Calibration calibration_;
    std::shared_ptr<WorkloadCache> workloads_;
    std::shared_ptr<CurveCache> curves_;
    std::vector<ParameterId> parameters_;  ///< the covariance's rows but the roofline prior's (the last)
    std::vector<double> covariance_;       ///< (parameters_.size() + 1) squared, row-major
    /// parameters_ inverted: the row of {kind, index} at [kind][index], -1 where there is none
    /// (parameter_row() is asked for every field of every scenario resolved).
    std::vector<std::vector<int>> parameter_rows_;
    /// Training FLOPs of one image of the reference model, in which eq. C5's lines are fitted.
    double reference_training_flops_ = 0;
    /// Eq. C5 per software and precision family that has curves, fitted once per calibration.
    std::vector<SoftwareLine> framework_rooflines_;
    /// Eq. C1b: per framework and stack, the geometric mean over their curves measured at several
    /// batches of the half-saturation batch per SM, fixed_s / (SMs x time_per_image_s); and over all.
    std::map<std::pair<Framework, SoftwareStack>, double> saturation_levels_;
    double saturation_level_all_ = 0;  ///< over every framework and stack; 0 where no curve measured one
    /// Eq. C1b's half-saturation batch of `gpu` under a framework and stack (the fixed time over the
    /// time per image): their level (else every framework's) x the GPU's SMs; 0 where no curve
    /// measured a level or the GPU's SMs are unknown.
    double half_saturation_batch(Framework framework, SoftwareStack stack, const GpuSpec& gpu) const;
};

}  // namespace epochcast
