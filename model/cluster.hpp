// The cluster a scenario names, as the catalog has it: the worker nodes and their GPUs, the
// dedicated parameter servers, the precision the GPUs must have, and the batch per GPU and over
// all of them. Each look-up refuses what the catalog cannot give (an unknown instance, more GPUs
// than it has); the scenario's own limits and flags were checked before (model/limits.hpp).
#pragma once

#include "model/catalog.hpp"
#include "model/resolved_scenario.hpp"
#include "model/scenario.hpp"

namespace epochcast {

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
/// servers co-located on the workers), else the catalog's entry for --ps-instance. The flags were
/// checked by check_scenario_flags(); throws InputError for an unknown instance.
const InstanceSpec* parameter_server_instance(const Catalog& catalog, const Scenario& scenario);

/// Throws InputError when `gpu` has no arithmetic at `precision`, naming the precisions it has.
void check_precision(const GpuSpec& gpu, Precision precision);

/// The per-GPU batch of a scenario: global_batch / GPUs when the global batch is fixed (GPUs =
/// nodes x GPUs per node, `instance_gpus` standing for a gpus_per_node of 0), else batch_per_gpu.
/// Throws InputError when the GPUs do not divide the global batch, naming both numbers.
int per_gpu_batch(const Scenario& scenario, int instance_gpus);

/// Images per iteration: nodes x gpus_per_node x batch_per_gpu. Throws InputError for a per-GPU
/// batch below 1, or a global batch above kMaxGlobalBatch or above the dataset's images (one
/// iteration would exceed an epoch).
double checked_global_batch(const Scenario& scenario, int gpus_per_node, int batch_per_gpu);

/// The cluster of a scenario: its workers, its dedicated servers (nullptr: none), its per-GPU
/// batch and its global batch (images per iteration), each of the above in that order.
struct Cluster {
    WorkerNodes workers;
    const InstanceSpec* server = nullptr;
    int batch_per_gpu = 0;
    double global_batch = 0;
};
Cluster resolve_cluster(const Catalog& catalog, const Scenario& scenario);

/// The cluster's shape in a resolved scenario: nodes, GPUs per node, batch per GPU, the strategy
/// and its parameter servers (dedicated ones counted, co-located ones flagged).
void set_cluster(ResolvedScenario& r, const Cluster& cluster, const Scenario& scenario);

}  // namespace epochcast
