#include "model/collectives.hpp"

#include <algorithm>
#include <cmath>

namespace epochcast {

double ring_allreduce_s(double bytes, int ranks, double latency_s, double bandwidth_Bps) {
    if (ranks <= 1) return 0.0;
    const double n = ranks;
    return 2.0 * (n - 1.0) * latency_s + 2.0 * (n - 1.0) / n * bytes / bandwidth_Bps;
}

double ring_reduce_scatter_s(double bytes, int ranks, double latency_s, double bandwidth_Bps) {
    if (ranks <= 1) return 0.0;
    const double n = ranks;
    return (n - 1.0) * latency_s + (n - 1.0) / n * bytes / bandwidth_Bps;
}

double nccl_ring_allreduce_s(double bytes, int nodes, int gpus_per_node, double intra_latency_s, double inter_latency_s,
                             double bandwidth_Bps) {
    const double n = static_cast<double>(nodes) * gpus_per_node;
    if (n <= 1) return 0.0;
    const double steps = 2.0 * (n - 1.0);
    const double inter_steps = 2.0 * (nodes - 1.0);
    return (steps - inter_steps) * intra_latency_s + inter_steps * inter_latency_s + steps / n * bytes / bandwidth_Bps;
}

double tree_network_bytes_factor(int nodes) {
    if (nodes <= 1) return 0.0;
    return nodes == 2 ? 1.0 : 2.0;
}

double nccl_tree_allreduce_s(double bytes, int nodes, int gpus_per_node, double intra_latency_s, double inter_latency_s,
                             double network_Bps, double node_Bps) {
    if (static_cast<double>(nodes) * gpus_per_node <= 1) return 0.0;
    const double depth = std::floor(std::log2(static_cast<double>(nodes)));
    const double latency = 2.0 * ((gpus_per_node - 1.0) * intra_latency_s + depth * inter_latency_s);
    const double network_s =
        nodes > 1 ? tree_network_bytes_factor(nodes) * bytes / (kTreeBandwidthFactor * network_Bps) : 0.0;
    const double node_s = gpus_per_node > 1 ? 2.0 * bytes / node_Bps : 0.0;
    return latency + std::max(network_s, node_s);
}

double nvls_allreduce_s(double bytes, int gpus, double latency_s, double bandwidth_Bps) {
    if (gpus <= 1) return 0.0;
    const double n = gpus;
    return 2.0 * latency_s + 2.0 * (n - 1.0) / n * bytes / bandwidth_Bps;
}

double ps_push_pull_s(double bytes, int workers, int servers, double latency_s, double worker_bandwidth_Bps,
                      double server_bandwidth_Bps) {
    const double worker_s = bytes / worker_bandwidth_Bps;
    const double server_s =
        static_cast<double>(workers) * bytes / (static_cast<double>(servers) * server_bandwidth_Bps);
    return 2.0 * latency_s + std::max(worker_s, server_s);
}

double ps_colocated_s(double bytes, int hosts, double latency_s, double bandwidth_Bps) {
    if (hosts <= 1) return 0.0;
    const double n = hosts;
    return 2.0 * latency_s + 2.0 * (n - 1.0) / n * bytes / bandwidth_Bps;
}

double allreduce_bus_factor(int ranks) {
    if (ranks <= 1) return 0.0;
    const double n = ranks;
    return 2.0 * (n - 1.0) / n;
}

}  // namespace epochcast
