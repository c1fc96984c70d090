#include "model/collectives.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "model/cluster.hpp"
#include "model/workload.hpp"

namespace epochcast {

namespace {

/// The time of a formula with one latency part and one bandwidth part, and its derivatives.
AlphaBetaTime one_link(double latency_part, double bytes_part) {
    AlphaBetaTime t;
    t.seconds = latency_part + bytes_part;
    t.per_log_latency[0] = latency_part;
    t.per_log_bandwidth[0] = -bytes_part;
    return t;
}

/// The larger of two bandwidths' times, each proportional to the inverse of its bandwidth, as the
/// part of `t` that those bandwidths move: the first's where they tie (AlphaBetaTime's rule).
double larger_bandwidth_part(AlphaBetaTime& t, double first_s, double second_s) {
    if (first_s < second_s) {
        t.per_log_bandwidth[1] = -second_s;
    } else {
        t.per_log_bandwidth[0] = -first_s;
    }
    return std::max(first_s, second_s);
}

}  // namespace

AlphaBetaTime ring_allreduce_time(double bytes, int ranks, double latency_s, double bandwidth_Bps) {
    if (ranks <= 1) return {};
    const double n = ranks;
    return one_link(2.0 * (n - 1.0) * latency_s, 2.0 * (n - 1.0) / n * bytes / bandwidth_Bps);
}

double ring_allreduce_s(double bytes, int ranks, double latency_s, double bandwidth_Bps) {
    return ring_allreduce_time(bytes, ranks, latency_s, bandwidth_Bps).seconds;
}

AlphaBetaTime ring_reduce_scatter_time(double bytes, int ranks, double latency_s, double bandwidth_Bps) {
    if (ranks <= 1) return {};
    const double n = ranks;
    return one_link((n - 1.0) * latency_s, (n - 1.0) / n * bytes / bandwidth_Bps);
}

double ring_reduce_scatter_s(double bytes, int ranks, double latency_s, double bandwidth_Bps) {
    return ring_reduce_scatter_time(bytes, ranks, latency_s, bandwidth_Bps).seconds;
}

AlphaBetaTime nccl_ring_allreduce_time(double bytes, int nodes, int gpus_per_node, double intra_latency_s,
                                       double inter_latency_s, double bandwidth_Bps) {
    AlphaBetaTime t;
    const double n = static_cast<double>(nodes) * gpus_per_node;
    if (n <= 1) return t;
    const double steps = 2.0 * (n - 1.0);
    const double inter_steps = 2.0 * (nodes - 1.0);
    const double intra_part = (steps - inter_steps) * intra_latency_s;
    const double inter_part = inter_steps * inter_latency_s;
    const double bytes_part = steps / n * bytes / bandwidth_Bps;
    t.seconds = intra_part + inter_part + bytes_part;
    t.per_log_latency = {intra_part, inter_part};
    t.per_log_bandwidth[0] = -bytes_part;
    return t;
}

double nccl_ring_allreduce_s(double bytes, int nodes, int gpus_per_node, double intra_latency_s, double inter_latency_s,
                             double bandwidth_Bps) {
    return nccl_ring_allreduce_time(bytes, nodes, gpus_per_node, intra_latency_s, inter_latency_s, bandwidth_Bps)
        .seconds;
}

double tree_network_bytes_factor(int nodes) {
    if (nodes <= 1) return 0.0;
    return nodes == 2 ? 1.0 : 2.0;
}

AlphaBetaTime nccl_tree_allreduce_time(double bytes, int nodes, int gpus_per_node, double intra_latency_s,
                                       double inter_latency_s, double network_Bps, double node_Bps) {
    AlphaBetaTime t;
    if (static_cast<double>(nodes) * gpus_per_node <= 1) return t;
    // floor(log2 M) of a whole M >= 1, as its bit width less one (a log2 call took a tenth of predict()).
    const double depth = std::bit_width(static_cast<unsigned>(nodes)) - 1;
    const double intra_part = 2.0 * ((gpus_per_node - 1.0) * intra_latency_s);
    const double inter_part = 2.0 * (depth * inter_latency_s);
    const double network_s =
        nodes > 1 ? tree_network_bytes_factor(nodes) * bytes / (kTreeBandwidthFactor * network_Bps) : 0.0;
    const double node_s = gpus_per_node > 1 ? 2.0 * bytes / node_Bps : 0.0;
    t.seconds = (intra_part + inter_part) + larger_bandwidth_part(t, network_s, node_s);
    t.per_log_latency = {intra_part, inter_part};
    return t;
}

double nccl_tree_allreduce_s(double bytes, int nodes, int gpus_per_node, double intra_latency_s, double inter_latency_s,
                             double network_Bps, double node_Bps) {
    return nccl_tree_allreduce_time(bytes, nodes, gpus_per_node, intra_latency_s, inter_latency_s, network_Bps,
                                    node_Bps)
        .seconds;
}

AlphaBetaTime nvls_allreduce_time(double bytes, int gpus, double latency_s, double bandwidth_Bps) {
    if (gpus <= 1) return {};
    const double n = gpus;
    return one_link(2.0 * latency_s, 2.0 * (n - 1.0) / n * bytes / bandwidth_Bps);
}

double nvls_allreduce_s(double bytes, int gpus, double latency_s, double bandwidth_Bps) {
    return nvls_allreduce_time(bytes, gpus, latency_s, bandwidth_Bps).seconds;
}

AlphaBetaTime ps_push_pull_time(double bytes, int workers, int servers, double latency_s, double worker_bandwidth_Bps,
                                double server_bandwidth_Bps) {
    AlphaBetaTime t;
    const double worker_s = bytes / worker_bandwidth_Bps;
    const double server_s =
        static_cast<double>(workers) * bytes / (static_cast<double>(servers) * server_bandwidth_Bps);
    t.seconds = 2.0 * latency_s + larger_bandwidth_part(t, worker_s, server_s);
    t.per_log_latency[0] = 2.0 * latency_s;
    return t;
}

double ps_push_pull_s(double bytes, int workers, int servers, double latency_s, double worker_bandwidth_Bps,
                      double server_bandwidth_Bps) {
    return ps_push_pull_time(bytes, workers, servers, latency_s, worker_bandwidth_Bps, server_bandwidth_Bps).seconds;
}

AlphaBetaTime ps_colocated_time(double bytes, int hosts, double latency_s, double bandwidth_Bps) {
    if (hosts <= 1) return {};
    const double n = hosts;
    return one_link(2.0 * latency_s, 2.0 * (n - 1.0) / n * bytes / bandwidth_Bps);
}

double ps_colocated_s(double bytes, int hosts, double latency_s, double bandwidth_Bps) {
    return ps_colocated_time(bytes, hosts, latency_s, bandwidth_Bps).seconds;
}

double allreduce_bus_factor(int ranks) {
    if (ranks <= 1) return 0.0;
    const double n = ranks;
    return 2.0 * (n - 1.0) / n;
}

Interconnect fabric_in_use(const InstanceSpec& instance, int efa_adapters) {
    if (instance.interconnect == Interconnect::efa && efa_adapters == 0) return Interconnect::tcp;
    return instance.interconnect;
}

double node_network_Bps(const InstanceSpec& instance, int efa_adapters, const NetworkParams& network) {
    const Interconnect fabric = fabric_in_use(instance, efa_adapters);
    const FabricParams& params = network.fabric(fabric);
    double line_GBps = instance.network_gbps / kBitsPerByte;
    if (fabric == Interconnect::efa && efa_adapters > 0)
        line_GBps *= static_cast<double>(efa_adapters) / instance.efa_adapters;
    const double GBps = line_GBps * params.efficiency;
    return (params.cap_GBps > 0 ? std::min(GBps, params.cap_GBps) : GBps) * 1e9;
}

double intra_node_Bps(const InstanceSpec& instance, DeviceKind device, const NetworkParams& network) {
    if (device == DeviceKind::cpu) return instance.intra_node_GBps * 1e9;
    return instance.intra_node_GBps * network.link(instance.intra_link()).efficiency * 1e9;
}

void set_network(ResolvedScenario& r, const InstanceSpec& instance, DeviceKind device, int efa_adapters,
                 const NetworkParams& network) {
    r.interconnect = fabric_in_use(instance, efa_adapters);
    r.intra_link = instance.intra_link();
    r.intra_bandwidth_Bps = intra_node_Bps(instance, device, network);
    r.intra_latency_s = network.link(r.intra_link).latency_s;
    r.inter_bandwidth_Bps = node_network_Bps(instance, efa_adapters, network);
    r.inter_latency_s = network.fabric(r.interconnect).latency_s;
    r.inter_simple_latency_s = network.fabric(r.interconnect).simple_latency_s;
    r.nvls_bandwidth_Bps = device != DeviceKind::cpu && instance.has_nvls()
                               ? instance.intra_node_GBps * network.nvls_efficiency * 1e9
                               : 0.0;
}

FabricLatency cross_node_latency(Interconnect worker_fabric, const InstanceSpec* server, const NetworkParams& network) {
    FabricLatency latency{worker_fabric, network.fabric(worker_fabric).latency_s};
    if (!server) return latency;
    const Interconnect server_fabric = fabric_in_use(*server, -1);
    if (network.fabric(server_fabric).latency_s > latency.latency_s) {
        latency = {server_fabric, network.fabric(server_fabric).latency_s};
    }
    return latency;
}

NetworkParameter node_network_parameter(const InstanceSpec& instance, int efa_adapters, const NetworkParams& network) {
    const Interconnect fabric = fabric_in_use(instance, efa_adapters);
    const int index = static_cast<int>(fabric);
    const FabricParams& params = network.fabric(fabric);
    if (params.cap_GBps > 0 && node_network_Bps(instance, efa_adapters, network) >= params.cap_GBps * 1e9) {
        return {{ParameterKind::fabric_cap, index}, params.cap_GBps};
    }
    return {{ParameterKind::fabric_efficiency, index}, params.efficiency};
}

void set_communication(ResolvedScenario& r, const Cluster& cluster, const Scenario& scenario, const Workload& work,
                       const Calibration& calibration) {
    const NetworkParams& net = calibration.network;
    set_network(r, *cluster.workers.instance, cluster.workers.gpu->kind, cluster.workers.efa_adapters, net);
    r.gradient_bytes = gradient_bytes(work, scenario.precision);
    const double bucket_MiB = scenario.fusion_threshold_MiB > 0 ? scenario.fusion_threshold_MiB
                                                                : calibration.framework(scenario.framework).bucket_MiB;
    r.bucket_bytes = bucket_MiB * 1024.0 * 1024.0;
    if (cluster.server) r.server_bandwidth_Bps = node_network_Bps(*cluster.server, -1, net);
    r.inter_latency_s = cross_node_latency(r.interconnect, cluster.server, net).latency_s;
}

double tree_node_Bps(const ResolvedScenario& s) {
    // The chain inside the node moves the buffer twice through each GPU; with NVLink SHARP
    // (NCCL's NVLSTree) the switch reduces, as fast as one NVLS all-reduce (eq. V1).
    const int k = s.gpus_per_node;
    return s.nvls_bandwidth_Bps > 0 && k > 1 ? s.nvls_bandwidth_Bps * k / (k - 1.0) : s.intra_bandwidth_Bps;
}

namespace {

/// Credits a formula's latency or bandwidth part to `field`, `times` over (a synchronisation's
/// phase that runs twice, a bucket's all-reduce).
void credit(NetworkTime& t, SensitiveField field, double per_log, double times = 1.0) {
    t.per_log_field[static_cast<std::size_t>(field)] += times * per_log;
}

/// A formula's time and parts into `t`: its latencies are `latency_fields`' (none: SensitiveField::count, a
/// latency that is no field), its bandwidths `bandwidth_fields`'.
void add(NetworkTime& t, const AlphaBetaTime& formula, std::array<SensitiveField, 2> latency_fields,
         std::array<SensitiveField, 2> bandwidth_fields, double times = 1.0) {
    for (std::size_t i = 0; i < 2; ++i) {
        if (latency_fields[i] != SensitiveField::count) credit(t, latency_fields[i], formula.per_log_latency[i], times);
        if (bandwidth_fields[i] != SensitiveField::count) {
            credit(t, bandwidth_fields[i], formula.per_log_bandwidth[i], times);
        }
    }
}

constexpr SensitiveField kNoField = SensitiveField::count;

/// allreduce_time over `m` nodes of `s`'s (its own, or one alone for node_allreduce_s).
NetworkTime allreduce_time_on(const ResolvedScenario& s, int m, Algorithm algorithm, double bytes,
                              const Protocol& protocol) {
    const int k = s.gpus_per_node;
    const double f = protocol.bandwidth_factor;
    const double intra_Bps = f * s.intra_bandwidth_Bps;
    const double inter_Bps = f * s.inter_bandwidth_Bps;
    // The latency of a hop across nodes moves with inter_latency_s unless it is Simple's.
    const SensitiveField hop_latency = protocol.simple ? kNoField : SensitiveField::inter_latency;
    NetworkTime t;
    switch (algorithm) {
        case Algorithm::ring: {
            // The slowest link of a ring through every GPU: the NIC across nodes, NVLink/PCIe
            // inside; nodes of one GPU have no link inside (a p3.2xlarge's intra_node_GBps is 0).
            const bool inside = m == 1 || (k > 1 && !(inter_Bps < intra_Bps));
            const AlphaBetaTime ring = nccl_ring_allreduce_time(
                bytes, m, k, s.intra_latency_s, protocol.inter_latency_s, inside ? intra_Bps : inter_Bps);
            t.seconds = ring.seconds;
            add(t, ring, {SensitiveField::intra_latency, hop_latency},
                {inside ? SensitiveField::intra_bandwidth : SensitiveField::inter_bandwidth, kNoField});
            return t;
        }
        case Algorithm::tree: {
            const bool nvls_tree = s.nvls_bandwidth_Bps > 0 && k > 1;  // tree_node_Bps's choice
            const AlphaBetaTime tree = nccl_tree_allreduce_time(
                bytes, m, k, s.intra_latency_s, protocol.inter_latency_s, inter_Bps, f * tree_node_Bps(s));
            t.seconds = tree.seconds;
            add(t, tree, {SensitiveField::intra_latency, hop_latency},
                {SensitiveField::inter_bandwidth,
                 nvls_tree ? SensitiveField::nvls_bandwidth : SensitiveField::intra_bandwidth});
            return t;
        }
        case Algorithm::nvls: {
            const AlphaBetaTime nvls = nvls_allreduce_time(bytes, k, s.intra_latency_s, s.nvls_bandwidth_Bps);
            t.seconds = nvls.seconds;
            add(t, nvls, {SensitiveField::intra_latency, kNoField}, {SensitiveField::nvls_bandwidth, kNoField});
            return t;
        }
        case Algorithm::hierarchical: {
            // Inside a node: reduce-scatter, then all-gather over NVLink/PCIe (half a ring each way).
            const AlphaBetaTime inside = ring_reduce_scatter_time(bytes, k, s.intra_latency_s, s.intra_bandwidth_Bps);
            const AlphaBetaTime across = ring_allreduce_time(bytes, m, s.inter_latency_s, s.inter_bandwidth_Bps);
            t.seconds = 2.0 * inside.seconds + across.seconds;
            add(t, inside, {SensitiveField::intra_latency, kNoField}, {SensitiveField::intra_bandwidth, kNoField}, 2.0);
            add(t, across, {SensitiveField::inter_latency, kNoField}, {SensitiveField::inter_bandwidth, kNoField});
            return t;
        }
        case Algorithm::none:
        case Algorithm::push_pull:
            break;
    }
    return t;
}

}  // namespace

NetworkTime allreduce_time(const ResolvedScenario& s, Algorithm algorithm, double bytes, const Protocol& protocol) {
    return allreduce_time_on(s, s.nodes, algorithm, bytes, protocol);
}

double allreduce_time_s(const ResolvedScenario& s, Algorithm algorithm, double bytes, const Protocol& protocol) {
    return allreduce_time(s, algorithm, bytes, protocol).seconds;
}

namespace {

/// An all-reduce's protocol (eq. N3) and its time with it, derivatives and all: nccl_protocol's
/// choice, timed once.
struct TimedProtocol {
    Protocol protocol;
    NetworkTime time;
};

/// The protocol and time of one all-reduce over `nodes` of `s`'s nodes.
TimedProtocol timed_protocol_on(const ResolvedScenario& s, int nodes, Algorithm algorithm, double bytes) {
    const Protocol single{s.inter_latency_s, 1.0};
    const bool two =
        s.inter_simple_latency_s > 0 && nodes > 1 && (algorithm == Algorithm::ring || algorithm == Algorithm::tree);
    if (!two) return {single, allreduce_time_on(s, nodes, algorithm, bytes, single)};
    const Protocol low_latency{s.inter_latency_s, kLowLatencyBandwidthFactor};
    const Protocol simple{s.inter_simple_latency_s, 1.0, true};
    const NetworkTime low_latency_time = allreduce_time_on(s, nodes, algorithm, bytes, low_latency);
    const NetworkTime simple_time = allreduce_time_on(s, nodes, algorithm, bytes, simple);
    return low_latency_time.seconds < simple_time.seconds ? TimedProtocol{low_latency, low_latency_time}
                                                          : TimedProtocol{simple, simple_time};
}

TimedProtocol timed_protocol(const ResolvedScenario& s, Algorithm algorithm, double bytes) {
    return timed_protocol_on(s, s.nodes, algorithm, bytes);
}

/// The algorithm one all-reduce of `bytes` runs, its protocol and its time: what communication()
/// and node_allreduce_s() ask of nccl_algorithm() and algorithm_for() without timing it twice.
struct AllReduceChoice {
    Algorithm algorithm = Algorithm::none;
    TimedProtocol timed;
};

/// NCCL's choice for one all-reduce over `nodes` of `s`'s nodes (eq. A1).
AllReduceChoice nccl_choice_on(const ResolvedScenario& s, int nodes, double bytes) {
    if (nodes * s.gpus_per_node <= 1) return {};
    AllReduceChoice best{Algorithm::ring, timed_protocol_on(s, nodes, Algorithm::ring, bytes)};
    auto consider = [&](Algorithm algorithm) {
        const TimedProtocol t = timed_protocol_on(s, nodes, algorithm, bytes);
        if (t.time.seconds < best.timed.time.seconds) best = {algorithm, t};
    };
    if (nodes > 1) consider(Algorithm::tree);
    if (nodes == 1 && s.nvls_bandwidth_Bps > 0) consider(Algorithm::nvls);
    return best;
}

AllReduceChoice nccl_choice(const ResolvedScenario& s, double bytes) { return nccl_choice_on(s, s.nodes, bytes); }

AllReduceChoice allreduce_choice(const ResolvedScenario& s, double bytes) {
    if (s.strategy == Strategy::nccl) return nccl_choice(s, bytes);
    const Algorithm algorithm = algorithm_for(s, bytes);
    return {algorithm, timed_protocol(s, algorithm, bytes)};
}

}  // namespace

Protocol nccl_protocol(const ResolvedScenario& s, Algorithm algorithm, double bytes) {
    return timed_protocol(s, algorithm, bytes).protocol;
}

double allreduce_time_s(const ResolvedScenario& s, Algorithm algorithm, double bytes) {
    return timed_protocol(s, algorithm, bytes).time.seconds;
}

Algorithm nccl_algorithm(const ResolvedScenario& s, double bytes) { return nccl_choice(s, bytes).algorithm; }

Algorithm algorithm_for(const ResolvedScenario& s, double bytes) {
    switch (s.strategy) {
        case Strategy::nccl:
            return nccl_algorithm(s, bytes);
        case Strategy::ring:
            return Algorithm::ring;
        case Strategy::tree:
            return Algorithm::tree;
        case Strategy::hierarchical:
            return s.nodes > 1 ? Algorithm::hierarchical : Algorithm::ring;
        case Strategy::ps:
            return Algorithm::push_pull;
    }
    return Algorithm::none;
}

Communication communication(const ResolvedScenario& s) {
    const double g = s.gradient_bytes;
    const int k = s.gpus_per_node;
    const int m = s.nodes;
    Communication c;
    NetworkTime t;
    if (s.strategy == Strategy::ps) {
        // Keys are pipelined: one push/pull round per iteration, after the reduce inside the node.
        c.algorithm = Algorithm::push_pull;
        c.buckets = 1;
        const AlphaBetaTime inside = ring_reduce_scatter_time(g, k, s.intra_latency_s, s.intra_bandwidth_Bps);
        const AlphaBetaTime across = s.ps_colocated ? ps_colocated_time(g, m, s.inter_latency_s, s.inter_bandwidth_Bps)
                                                    : ps_push_pull_time(g, m, s.ps_nodes, s.inter_latency_s,
                                                                        s.inter_bandwidth_Bps, s.server_bandwidth_Bps);
        c.seconds = 2.0 * inside.seconds + across.seconds;
        add(t, inside, {SensitiveField::intra_latency, kNoField}, {SensitiveField::intra_bandwidth, kNoField}, 2.0);
        add(t, across, {SensitiveField::inter_latency, kNoField},
            {SensitiveField::inter_bandwidth, SensitiveField::server_bandwidth});
        c.per_log_field = t.per_log_field;
        return c;
    }
    if (m * k <= 1) return c;
    // Eq. B1: the gradients leave in equal buckets of at most the fusion buffer, one all-reduce each.
    c.buckets = std::max(1, static_cast<int>(std::ceil(g / s.bucket_bytes)));
    const double bucket = g / c.buckets;
    const AllReduceChoice choice = allreduce_choice(s, bucket);
    c.algorithm = choice.algorithm;
    t = choice.timed.time;
    c.seconds = c.buckets * t.seconds;
    for (std::size_t f = 0; f < kSensitiveFields; ++f) c.per_log_field[f] = c.buckets * t.per_log_field[f];
    return c;
}

double communication_time_s(const ResolvedScenario& s) { return communication(s).seconds; }

namespace {

/// The network part of a resolved scenario for `ranks` GPUs of `instance` (whole nodes first) and
/// the all-reduce `strategy`.
ResolvedScenario network_only(const InstanceSpec& instance, DeviceKind device, int ranks, int efa_adapters,
                              const NetworkParams& network, Strategy strategy) {
    ResolvedScenario s;
    s.strategy = strategy;
    s.gpus_per_node = std::max(1, std::min(ranks, instance.gpus));
    s.nodes = (ranks + s.gpus_per_node - 1) / s.gpus_per_node;
    set_network(s, instance, device, efa_adapters, network);
    if (!(s.intra_bandwidth_Bps > 0)) s.intra_bandwidth_Bps = std::numeric_limits<double>::infinity();
    return s;
}

}  // namespace

AllReducePrediction predict_allreduce(const InstanceSpec& instance, DeviceKind device, int ranks, int efa_adapters,
                                      double bytes, const NetworkParams& network, Strategy strategy) {
    // A test runs an all-reduce: parameter servers have none, so `ps` means NCCL's choice.
    const ResolvedScenario s = network_only(instance, device, ranks, efa_adapters, network,
                                            strategy == Strategy::ps ? Strategy::nccl : strategy);
    AllReducePrediction p;
    if (s.nodes * s.gpus_per_node <= 1) return p;
    p.algorithm = algorithm_for(s, bytes);
    p.seconds = allreduce_time_s(s, p.algorithm, bytes);
    p.bus_bandwidth_GBps = bytes / p.seconds * allreduce_bus_factor(ranks) / 1e9;
    return p;
}

double allreduce_bus_bandwidth_GBps(const InstanceSpec& instance, DeviceKind device, int ranks, int efa_adapters,
                                    const NetworkParams& network, Strategy strategy) {
    return predict_allreduce(instance, device, ranks, efa_adapters, kLargeMessageBytes, network, strategy)
        .bus_bandwidth_GBps;
}

AllReducePrediction predict_allreduce(const Catalog& catalog, const NetworkObservation& measured,
                                      const NetworkParams& network) {
    const InstanceSpec& instance = catalog.instance(measured.instance);
    return predict_allreduce(instance, catalog.device_kind(instance), measured.ranks, measured.efa_adapters,
                             measured.message_bytes > 0 ? measured.message_bytes : kLargeMessageBytes, network,
                             measured.algorithm);
}

double node_allreduce_s(const ResolvedScenario& s) {
    // One node of the cluster alone: its all-reduce over one node, with no copy of the scenario.
    if (s.strategy == Strategy::nccl) return nccl_choice_on(s, 1, s.gradient_bytes).timed.time.seconds;  // 0: one GPU
    return timed_protocol_on(s, 1, Algorithm::ring, s.gradient_bytes).time.seconds;
}

}  // namespace epochcast
