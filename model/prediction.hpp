// What the model says about a Scenario: the breakdown of one iteration, then the epoch, the
// whole training run and its cost. The CLI's table and JSON and the GUI are views of this type.
#pragma once

#include <algorithm>
#include <string_view>

#include "model/convergence.hpp"
#include "model/types.hpp"

namespace epochcast {

/// What limits the iteration.
enum class Bottleneck {
    compute,        ///< the GPUs' forward and backward pass (with the straggler wait)
    communication,  ///< gradient synchronisation that the backward pass cannot hide
    data,           ///< the input pipeline (JPEG decode and augmentation on the vCPUs)
    storage,        ///< the input pipeline, bound by the store the images are read from (eq. F3)
};
std::string_view to_string(Bottleneck bottleneck);

/// A low/high pair around a central value (about a 95% band).
struct Interval {
    double low = 0;   ///< lower bound, same unit as the value
    double high = 0;  ///< upper bound, same unit as the value
};

/// A run on spot instances with its interruptions (docs/model.md, "Spot interruptions", eqs. X0-X6).
/// All zero and `modelled` false for another pricing, or spot without a known interruption rate.
struct SpotRun {
    bool modelled = false;                         ///< spot, with an interruption rate (the catalog's or given)
    bool finishes = true;                          ///< false: interruptions cost more than the time between them
    double interruptions_per_node_hour = 0;        ///< lambda, per node
    double cluster_interruptions_per_hour = 0;     ///< N lambda over the cluster's nodes (servers included)
    double checkpoint_write_s = 0;                 ///< C, one checkpoint
    double checkpoint_interval_s = 0;              ///< tau, seconds of work between checkpoints (given, else an
                                                   ///< epoch's or Young's if shorter; at most the whole work)
    double recommended_checkpoint_interval_s = 0;  ///< Young's tau* = sqrt(2 C / (N lambda)) (eq. X4); 0: no rate
    double restart_s = 0;                          ///< R, launch to first iteration after an interruption
    double replacement_wait_s = 0;                 ///< W, the wait for a replacement node: the given wait,
                                                   ///< plus its own staging copy where each worker stages
    double replacement_staging_usd = 0;            ///< that copy's requests, paid at each interruption
    double loss_per_interruption_s = 0;            ///< d = R + W + tau/2 (eq. X1)
    double work_s = 0;                             ///< the run's iterations alone, no checkpoint, no start-up
    double checkpointed_work_s = 0;                ///< a = work x (1 + C/tau) (eq. X2)
    double expected_interruptions = 0;             ///< N lambda E[T]
    double expected_lost_work_s = 0;               ///< interruptions x tau/2: work done again
    double expected_downtime_s = 0;                ///< interruptions x (R + W)
    double uninterrupted_time_s = 0;               ///< the same run never interrupted: start-up + a
    double waiting_time_to_train_s = 0;            ///< the run that waits for each replacement (X3): staging +
                                                   ///< start-up + E[T]
    double waiting_cost_usd = 0;                   ///< and its cost
    /// The same run elastic (eq. X7, seed 003): it goes on without a lost node until its replacement
    /// joins. Only where the cluster can shrink (2 nodes or more, no dedicated parameter servers),
    /// one node is missing at a time (lambda W < 1) and it finishes (the run that waits may not).
    bool elastic = false;
    double elastic_throughput_ratio = 0;         ///< eta: N - 1 nodes' throughput over N's
    double elastic_loss_per_interruption_s = 0;  ///< d_e = 2 R + tau/2 + W (1 - eta)
    double elastic_expected_interruptions = 0;   ///< N lambda E[T_e]
    double elastic_time_to_train_s = 0;          ///< staging + start-up + E[T_e] = a / (1 - N lambda d_e)
    double elastic_cost_usd = 0;                 ///< the cluster over that time, less the lost nodes' waits
    /// The run is priced elastic (Scenario::spot_elastic): the prediction's time to train, cost and
    /// their bands are eq. X7's, and so are expected_interruptions, loss_per_interruption_s (d_e),
    /// expected_lost_work_s and expected_downtime_s (two restarts each; the others train through the
    /// wait); false with `elastic` true: they are the run that waits (X3).
    bool elastic_priced = false;
};

struct Prediction {
    // Cluster
    int gpus = 0;          ///< worker GPUs in the cluster
    int nodes = 0;         ///< worker instances
    int global_batch = 0;  ///< images per iteration over all GPUs

    // One iteration, in seconds per iteration on each worker
    double compute_s = 0;                ///< forward + backward + update on one GPU
    double data_s = 0;                   ///< input pipeline time for one GPU's batch (runs ahead, a lower bound)
    double communication_s = 0;          ///< gradient synchronisation, whole
    double exposed_communication_s = 0;  ///< the part of it the backward pass does not hide
    double sync_s = 0;                   ///< expected wait for the slowest worker (stragglers)
    double iteration_s = 0;              ///< max(compute + sync + exposed communication, data)
    Bottleneck bottleneck = Bottleneck::compute;
    Loader loader = Loader::cpu;  ///< the loader eq. D1 priced (the framework's where the scenario named none)

    // The gradient collective
    Interconnect interconnect = Interconnect::tcp;  ///< the fabric between nodes
    Algorithm algorithm = Algorithm::none;  ///< what synchronised the gradients (NCCL's choice for strategy nccl)
    int buckets = 0;                        ///< all-reduces (or push/pull rounds) per iteration
    // Bandwidth of the gradient collective, reported as nccl-tests does (doc/PERFORMANCE.md there)
    double algorithm_bandwidth_GBps = 0;  ///< gradient bytes / communication_s, in 10^9 bytes/s
    double bus_bandwidth_GBps = 0;        ///< algorithm bandwidth x 2(n-1)/n for all-reduce, in 10^9 bytes/s

    // Throughput
    double throughput_images_per_s = 0;  ///< global images per second
    Interval interval;                   ///< throughput band from the calibration's uncertainty, in images/s
    double per_gpu_images_per_s = 0;     ///< throughput / gpus
    /// throughput / (gpus x one GPU alone at the same batch under the same per-GPU input pipeline):
    /// what communication and the wait for the slowest worker cost, 1 on one GPU, never above 1
    double scaling_efficiency = 0;
    double node_scaling_efficiency = 0;  ///< throughput / (nodes x one node alone), the seeds' convention
                                         ///< (seed 000: 92% MXNet, 90% TensorFlow; seed 001: 90% at 256 GPUs)
    /// The share of one GPU's compute rate its input pipeline sustains (eq. I1 of the compute and the
    /// input alone): 1 where nothing is decoded, 0.978 at balance; the input bound on its own
    double input_efficiency = 0;

    // Training run
    double epochs = 0;                              ///< epochs trained: given, or what the recipe needs for the target
    Interval epochs_interval;                       ///< their band (equal ends for given epochs)
    EpochsBasis epochs_basis = EpochsBasis::given;  ///< given, a recipe's published runs, or extrapolated
    int epochs_recipe = -1;                      ///< index into the model's Convergence::recipes; -1 for given epochs
    bool global_batch_beyond_published = false;  ///< larger than any recipe for the model was published at
    double host_vcpus_per_gpu = 0;               ///< the node's vCPUs over the GPUs used on it
    bool host_vcpus_short = false;               ///< fewer than the loader needs beside the training process (eq. D3)
    double checkpoint_s = 0;                     ///< writing one checkpoint, once per epoch
    double epoch_s = 0;                          ///< dataset_images / throughput + checkpoint_s
    double startup_s = 0;                        ///< launch and warm-up before the first epoch (seed 001: 1.5 min)
    double time_to_train_s = 0;                  ///< startup + epochs x epoch
    double memory_per_gpu_GiB = 0;               ///< what one GPU needs for this batch, headroom included (eq. M1)
    double memory_headroom_GiB = 0;              ///< of that, what the GPU keeps beside the tensors: the CUDA
                                                 ///< context and the allocator's slack (docs/model.md, eq. M1)

    // Money, in US dollars
    /// false: an instance of the cluster has no price by the hour (a machine you own), so the three
    /// figures below are 0 and mean nothing: the CLI prints "n/a", JSON null, CSV an empty field.
    bool priced = true;
    double cluster_usd_per_hour = 0;  ///< workers plus dedicated parameter servers, at the chosen pricing
    double cost_per_epoch_usd = 0;    ///< one epoch's share
    double cost_usd = 0;              ///< the whole run, billed per second

    // Bands of the run (docs/model.md, "Bands of the derived figures"): the time to train at the
    // throughput band's slow end with the epochs band's most epochs, and at its fast end with the
    // fewest; the cost follows the time at the cluster's price.
    Interval time_to_train_interval;  ///< seconds
    Interval cost_interval;           ///< US dollars

    // The bill (eq. H1, model/billing.hpp): what is paid where the instances are sold whole (a
    // Capacity Block's days, a reservation's term), beside cost_usd, the run's share at the same
    // rate; equal to it where billing is by the second (on demand, spot).
    Pricing pricing = Pricing::on_demand;  ///< how the instances are sold
    double billed_hours_per_node = 0;      ///< each instance's hours billed (the run's own by the second)
    double bill_usd = 0;                   ///< the instances' billed hours plus the store and its traffic
    Interval bill_interval;                ///< the bill at the time band's ends, US dollars

    // What the run costs around its iterations (issue 45, items 2-4; docs/model.md, eqs. E1, E2, F1-F6)
    Store storage = Store::none;          ///< where the images are read from (none: not modelled)
    double evaluation_s = 0;              ///< one evaluation pass of the validation images (eq. E1)
    double evaluations = 0;               ///< passes in the run (eq. E2)
    int eval_every_epochs = 0;            ///< eq. E2's K: epochs between passes; 0: none
    bool eval_every_from_recipe = false;  ///< K is the recipe's cadence (--target-top1), not --eval-every
    double staging_s = 0;                 ///< copying the dataset from S3 to the store before training (eq. F4)
    double demanded_read_GBps = 0;  ///< what the GPUs and loaders would read with no store bound, 10^9 B/s (eq. F1)
    double storage_read_GBps = 0;   ///< what the store delivers the cluster, 10^9 bytes/s (eq. F2); 0: no bound
    /// The first epoch, every node's page cache cold (eqs. F3, F7, F8): its throughput (the steady one
    /// without a store, or with one that no page cache serves), what bounds it, and the epochs the store
    /// still bounds while the caches fill (0: none; 1 on one node; more on several, each its own shard)
    double first_epoch_images_per_s = 0;
    Bottleneck first_epoch_bottleneck = Bottleneck::compute;
    double store_bound_epochs = 0;
    double page_cache_hit_fraction = 0;  ///< the share of a node's reads its page cache serves once warm (eq. F7)
    double storage_usd = 0;              ///< the store's capacity for the run's wall time (eq. F5)
    double data_transfer_usd = 0;        ///< its reads, writes and requests, staging's included (eq. F6)
    double cluster_usd = 0;              ///< the instances alone: cost_usd less the two above

    /// Spot: the expected run with its interruptions (time_to_train_s, cost_usd and their bands are then
    /// the expected figures and the 2.5% and 97.5% quantiles of eq. X6 at the throughput band's ends).
    SpotRun spot;
};

/// Two-sided 95% band of a normal distribution, in standard deviations: the half-width of every
/// band a Prediction holds (eq. U1; the recipe's epochs band, eq. K2).
inline constexpr double kInterval95Sigmas = 1.96;

/// One numeric figure of a Prediction, by the name prediction_json() and the sweep's CSV give it.
struct PredictionFigure {
    const char* name;
    double (*get)(const Prediction&);
    bool whole = false;  ///< a count (GPUs, images, buckets): the sweep's column holds whole numbers
};

/// Every numeric figure of a Prediction, in the sweep CSV's column order. Each is finite and not
/// negative in a prediction that check_prediction() (model/limits.hpp) accepts.
inline constexpr PredictionFigure kPredictionFigures[] = {
    {"gpus", [](const Prediction& p) { return double(p.gpus); }, true},
    {"global_batch", [](const Prediction& p) { return double(p.global_batch); }, true},
    {"throughput_images_per_s", [](const Prediction& p) { return p.throughput_images_per_s; }},
    {"interval_low", [](const Prediction& p) { return p.interval.low; }},
    {"interval_high", [](const Prediction& p) { return p.interval.high; }},
    {"per_gpu_images_per_s", [](const Prediction& p) { return p.per_gpu_images_per_s; }},
    {"iteration_s", [](const Prediction& p) { return p.iteration_s; }},
    {"compute_s", [](const Prediction& p) { return p.compute_s; }},
    {"data_s", [](const Prediction& p) { return p.data_s; }},
    {"communication_s", [](const Prediction& p) { return p.communication_s; }},
    {"exposed_communication_s", [](const Prediction& p) { return p.exposed_communication_s; }},
    {"sync_s", [](const Prediction& p) { return p.sync_s; }},
    {"algorithm_bandwidth_GBps", [](const Prediction& p) { return p.algorithm_bandwidth_GBps; }},
    {"bus_bandwidth_GBps", [](const Prediction& p) { return p.bus_bandwidth_GBps; }},
    {"buckets", [](const Prediction& p) { return double(p.buckets); }, true},
    {"checkpoint_s", [](const Prediction& p) { return p.checkpoint_s; }},
    {"epoch_s", [](const Prediction& p) { return p.epoch_s; }},
    {"startup_s", [](const Prediction& p) { return p.startup_s; }},
    {"time_to_train_s", [](const Prediction& p) { return p.time_to_train_s; }},
    {"time_to_train_low_s", [](const Prediction& p) { return p.time_to_train_interval.low; }},
    {"time_to_train_high_s", [](const Prediction& p) { return p.time_to_train_interval.high; }},
    {"cluster_usd_per_hour", [](const Prediction& p) { return p.cluster_usd_per_hour; }},
    {"cost_usd", [](const Prediction& p) { return p.cost_usd; }},
    {"cost_low_usd", [](const Prediction& p) { return p.cost_interval.low; }},
    {"cost_high_usd", [](const Prediction& p) { return p.cost_interval.high; }},
    {"cost_per_epoch_usd", [](const Prediction& p) { return p.cost_per_epoch_usd; }},
    {"scaling_efficiency", [](const Prediction& p) { return p.scaling_efficiency; }},
    {"node_scaling_efficiency", [](const Prediction& p) { return p.node_scaling_efficiency; }},
    {"input_efficiency", [](const Prediction& p) { return p.input_efficiency; }},
    {"memory_per_gpu_GiB", [](const Prediction& p) { return p.memory_per_gpu_GiB; }},
    {"memory_headroom_GiB", [](const Prediction& p) { return p.memory_headroom_GiB; }},
    {"epochs_to_train", [](const Prediction& p) { return p.epochs; }},
    {"epochs_low", [](const Prediction& p) { return p.epochs_interval.low; }},
    {"epochs_high", [](const Prediction& p) { return p.epochs_interval.high; }},
};

/// The figures of a run's cost around its iterations (issue 45), after every column of a sweep:
/// checked as kPredictionFigures are.
inline constexpr PredictionFigure kRunCostFigures[] = {
    {"evaluation_s", [](const Prediction& p) { return p.evaluation_s; }},
    {"evaluations", [](const Prediction& p) { return p.evaluations; }},
    {"staging_s", [](const Prediction& p) { return p.staging_s; }},
    {"demanded_read_GBps", [](const Prediction& p) { return p.demanded_read_GBps; }},
    {"storage_read_GBps", [](const Prediction& p) { return p.storage_read_GBps; }},
    {"cluster_usd", [](const Prediction& p) { return p.cluster_usd; }},
    {"storage_usd", [](const Prediction& p) { return p.storage_usd; }},
    {"data_transfer_usd", [](const Prediction& p) { return p.data_transfer_usd; }},
    {"first_epoch_images_per_s", [](const Prediction& p) { return p.first_epoch_images_per_s; }},
    {"billed_hours_per_node", [](const Prediction& p) { return p.billed_hours_per_node; }},
    {"bill_usd", [](const Prediction& p) { return p.bill_usd; }},
    {"bill_low_usd", [](const Prediction& p) { return p.bill_interval.low; }},
    {"bill_high_usd", [](const Prediction& p) { return p.bill_interval.high; }},
};

/// A figure in US dollars (cluster_usd_per_hour, cost_usd, cost_per_epoch_usd): none, not 0, for a
/// cluster without a price (Prediction::priced false).
inline bool is_money_figure(const PredictionFigure& figure) {
    const std::string_view name = figure.name;
    return name == "cluster_usd_per_hour" || name == "cost_usd" || name == "cost_per_epoch_usd" ||
           name == "cluster_usd" || name == "bill_usd" || name == "bill_low_usd" || name == "bill_high_usd";
}

/// The per-GPU batch that ran: the global batch over the GPUs (a fixed global batch sets it from
/// the GPUs); 0 for a prediction of no GPU.
inline int batch_per_gpu(const Prediction& p) { return p.gpus > 0 ? p.global_batch / p.gpus : 0; }

/// The input pipeline's time per iteration that the GPU's step (compute + sync + exposed
/// communication) does not hide, in seconds: what the GPUs wait for data. 0 when the step is longer.
inline double data_wait_s(const Prediction& p) {
    return std::max(0.0, p.data_s - (p.compute_s + p.sync_s + p.exposed_communication_s));
}

}  // namespace epochcast
