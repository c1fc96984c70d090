#include "model/cluster.hpp"

#include <string>

#include "model/compute_curve.hpp"
#include "model/errors.hpp"
#include "model/text_io.hpp"

namespace epochcast {

WorkerNodes resolve_workers(const Catalog& catalog, const Scenario& scenario) {
    const InstanceSpec& instance = catalog.instance(scenario.instance);
    if (instance.gpus == 0) {
        throw InputError("instance '" + instance.name +
                         "' has no GPUs: it can serve as --ps-instance, not as a worker");
    }
    const GpuSpec& gpu = catalog.gpu_of(instance);
    if (scenario.efa_adapters > instance.efa_adapters) {
        throw InputError("--efa-adapters " + std::to_string(scenario.efa_adapters) + " is more than " + instance.name +
                         " has (" + std::to_string(instance.efa_adapters) + ")");
    }
    const int efa = scenario.efa_adapters < 0 ? instance.efa_adapters : scenario.efa_adapters;
    const int k = scenario.gpus_per_node == 0 ? instance.gpus : scenario.gpus_per_node;
    if (k > kMaxGpusPerNode) {
        throw InputError("instance '" + instance.name + "' has " + std::to_string(k) + " GPUs, more than the " +
                         format_count(kMaxGpusPerNode) + " per node epochcast models");
    }
    if (k > instance.gpus) {
        throw InputError("--gpus-per-node " + std::to_string(k) + " is more than " + instance.name + " has (" +
                         std::to_string(instance.gpus) + ")");
    }
    if (k > 1 && !(instance.intra_node_GBps > 0)) {
        throw InputError("catalog entry '" + instance.name + "' gives no intra_node_GBps for its " +
                         std::to_string(instance.gpus) + " GPUs");
    }
    return {&instance, &gpu, k, efa};
}

const InstanceSpec* parameter_server_instance(const Catalog& catalog, const Scenario& scenario) {
    if (scenario.strategy != Strategy::ps || scenario.ps_colocated) return nullptr;
    return &catalog.instance(scenario.ps_instance);
}

void check_precision(const GpuSpec& gpu, Precision precision) {
    if (peak_flops_per_s(gpu, precision) > 0) return;
    std::string available = "fp32";
    if (gpu.fp16_tflops > 0) available += " or amp";
    if (gpu.bf16_tflops > 0) available += " or bf16";
    throw InputError("GPU " + gpu.name + " has no " + std::string(to_string(precision)) +
                     " arithmetic; use --precision " + available);
}

int per_gpu_batch(const Scenario& scenario, int instance_gpus) {
    if (scenario.global_batch == 0) return scenario.batch_per_gpu;
    if (scenario.global_batch < 0) {
        throw InputError("--global-batch must be at least 1 (got " + std::to_string(scenario.global_batch) + ")");
    }
    const long long gpus =
        static_cast<long long>(scenario.nodes) * (scenario.gpus_per_node > 0 ? scenario.gpus_per_node : instance_gpus);
    if (gpus < 1) return scenario.batch_per_gpu;  // resolve() rejects the count itself
    if (scenario.global_batch % gpus != 0) {
        throw InputError("global batch " + std::to_string(scenario.global_batch) + " does not divide over " +
                         std::to_string(gpus) + " GPUs (choose a multiple of the GPU count)");
    }
    return static_cast<int>(scenario.global_batch / gpus);
}

double checked_global_batch(const Scenario& scenario, int gpus_per_node, int batch_per_gpu) {
    if (batch_per_gpu < 1) {
        throw InputError("the per-GPU batch must be at least 1 (got " + std::to_string(batch_per_gpu) + ")");
    }
    const double global_batch = static_cast<double>(scenario.nodes) * gpus_per_node * batch_per_gpu;
    if (global_batch > kMaxGlobalBatch) {
        throw InputError("a global batch of " + format_count(global_batch) + " images (" +
                         std::to_string(scenario.nodes) + " nodes x " + std::to_string(gpus_per_node) + " GPUs x " +
                         std::to_string(batch_per_gpu) + ") is more than the " + format_count(kMaxGlobalBatch) +
                         " images per iteration epochcast models");
    }
    if (global_batch > static_cast<double>(scenario.dataset_images)) {
        throw InputError("a global batch of " + format_count(global_batch) + " images is more than the dataset's " +
                         format_count(static_cast<double>(scenario.dataset_images)) +
                         ": one iteration would exceed an epoch");
    }
    return global_batch;
}

Cluster resolve_cluster(const Catalog& catalog, const Scenario& scenario) {
    Cluster c;
    c.workers = resolve_workers(catalog, scenario);
    c.server = parameter_server_instance(catalog, scenario);
    check_precision(*c.workers.gpu, scenario.precision);
    c.batch_per_gpu = per_gpu_batch(scenario, c.workers.instance->gpus);
    c.global_batch = checked_global_batch(scenario, c.workers.gpus_per_node, c.batch_per_gpu);
    return c;
}

void set_cluster(ResolvedScenario& r, const Cluster& cluster, const Scenario& scenario) {
    r.nodes = scenario.nodes;
    r.gpus_per_node = cluster.workers.gpus_per_node;
    r.batch_per_gpu = cluster.batch_per_gpu;
    r.strategy = scenario.strategy;
    r.ps_nodes = cluster.server ? scenario.ps_nodes : 0;
    r.ps_colocated = scenario.strategy == Strategy::ps && scenario.ps_colocated;
}

}  // namespace epochcast
