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

double tree_allreduce_s(double bytes, int ranks, double latency_s, double bandwidth_Bps) {
    if (ranks <= 1) return 0.0;
    const double depth = std::ceil(std::log2(static_cast<double>(ranks)));
    return 2.0 * depth * latency_s + 2.0 * bytes / bandwidth_Bps;
}

double ps_push_pull_s(double bytes, int workers, int servers, double latency_s, double worker_bandwidth_Bps,
                      double server_bandwidth_Bps) {
    const double worker_s = bytes / worker_bandwidth_Bps;
    const double server_s = static_cast<double>(workers) * bytes / (static_cast<double>(servers) * server_bandwidth_Bps);
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
