// Communication: how one iteration's gradients cross the cluster, and what it costs. Derivations
// in docs/model.md, section "Communication".
//
// First the formulas, one small function each (alpha-beta model): each takes bytes, counts, a
// per-message latency alpha in seconds and a bandwidth in bytes per second, and returns seconds.
// Bandwidths are what one participant can send (and, full duplex, receive at once).
//
// Then the decisions on a resolved cluster: the bandwidths and latencies of its links (eqs.
// N1-N3), the algorithm its strategy runs (NCCL's choice, eq. A1), the protocol, the buckets, and
// the time of one iteration's synchronisation (eq. B1) or of one nccl-tests all-reduce.
#pragma once

#include <array>
#include <cstddef>

#include "model/calibration.hpp"
#include "model/catalog.hpp"
#include "model/observation.hpp"
#include "model/parameters.hpp"
#include "model/resolved_scenario.hpp"

namespace epochcast {

struct Cluster;
struct Workload;

/// One formula's time with its derivatives (eq. U1's network part, docs/model.md "The interval's
/// gradient"): each part of an alpha-beta time is proportional to one latency or to the inverse of
/// one bandwidth, so d t / d ln(alpha) is that latency's part and d t / d ln(bandwidth) minus that
/// bandwidth's part. Of a max, the larger side's part (the first named where they tie). The
/// formulas below give their time as the `seconds` of their `_time` twin.
struct AlphaBetaTime {
    double seconds = 0;
    std::array<double, 2> per_log_latency{};    ///< d t / d ln(alpha): the formula's first, second latency
    std::array<double, 2> per_log_bandwidth{};  ///< d t / d ln(bandwidth): its first, second bandwidth
};

/// Ring all-reduce of `bytes` over `ranks` participants: 2(n-1) steps, each moving bytes/n
/// over every link at once (Patarasuk and Yuan 2009; NCCL's ring).
/// t = 2(n-1) alpha + 2(n-1)/n x bytes / bandwidth. Zero for one rank.
double ring_allreduce_s(double bytes, int ranks, double latency_s, double bandwidth_Bps);
AlphaBetaTime ring_allreduce_time(double bytes, int ranks, double latency_s, double bandwidth_Bps);

/// Reduce-scatter (or all-gather) half of a ring: (n-1) steps of bytes/n.
/// t = (n-1) alpha + (n-1)/n x bytes / bandwidth. Zero for one rank.
double ring_reduce_scatter_s(double bytes, int ranks, double latency_s, double bandwidth_Bps);
AlphaBetaTime ring_reduce_scatter_time(double bytes, int ranks, double latency_s, double bandwidth_Bps);

/// NCCL's ring across `nodes` nodes of `gpus_per_node` GPUs (eq. R3): one pipelined ring through
/// all N = nodes x gpus_per_node GPUs. As NCCL's tuning model counts it (src/graph/tuning.cc,
/// NCCL 2.23), the pipeline pays each hop's latency once: 2(nodes-1) of its 2(N-1) steps cross the
/// network, the rest stay inside a node; the bytes move at the slowest link's pace.
/// t = (2(N-1) - s) alpha_intra + s alpha_inter + 2(N-1)/N x bytes / bandwidth, s = 2(nodes-1).
/// Zero for one GPU.
double nccl_ring_allreduce_s(double bytes, int nodes, int gpus_per_node, double intra_latency_s, double inter_latency_s,
                             double bandwidth_Bps);
AlphaBetaTime nccl_ring_allreduce_time(double bytes, int nodes, int gpus_per_node, double intra_latency_s,
                                       double inter_latency_s, double bandwidth_Bps);

/// The share of a link's bandwidth NCCL's tree reaches against its ring (src/graph/tuning.cc: the
/// tree's bus bandwidth is the ring's x 0.92).
inline constexpr double kTreeBandwidthFactor = 0.92;

/// The share of the bandwidth NCCL's low-latency protocol (LL) reaches: each 8-byte word it sends
/// carries 4 bytes of data and a 4-byte flag (src/graph/tuning.cc: LL's bus bandwidth is Simple's
/// x 0.5), in exchange for a shorter latency per hop (eq. N3).
inline constexpr double kLowLatencyBandwidthFactor = 0.5;

/// Bytes that the busiest node of NCCL's double binary tree sends (and receives) across the
/// network per byte all-reduced (eq. T2): each tree carries half the buffer up (reduce) and down
/// (broadcast). With two nodes each is the other's only neighbour, so a node sends each half once:
/// 1. From three nodes on, some node is an inner node of one tree (two children and a parent) and
/// a leaf of the other: 2, as much as a ring. 0 for one node.
double tree_network_bytes_factor(int nodes);

/// NCCL's double binary tree (eq. T2): in each node a pipelined chain of its GPUs (or NVLink
/// SHARP), across nodes two binary trees. The pipeline's latency is the chain's and the trees'
/// depth, each way; its pace is the slower of the network, at NCCL's tree efficiency
/// kTreeBandwidthFactor, and the node:
/// t = 2((k-1) alpha_intra + floor(log2 M) alpha_inter)
///     + max(tree_network_bytes_factor(M) x bytes / (0.92 network_bandwidth), 2 x bytes / node_bandwidth)
/// where node_bandwidth is the rate at which the chain moves the buffer through a GPU each way
/// (infinite for one GPU per node). Zero for one GPU.
double nccl_tree_allreduce_s(double bytes, int nodes, int gpus_per_node, double intra_latency_s, double inter_latency_s,
                             double network_Bps, double node_Bps);
AlphaBetaTime nccl_tree_allreduce_time(double bytes, int nodes, int gpus_per_node, double intra_latency_s,
                                       double inter_latency_s, double network_Bps, double node_Bps);

/// NVLink SHARP in one node (eq. V1): every GPU writes its buffer into the NVSwitch, which
/// reduces, and reads the sum back; one latency each way, the bytes at NVLS's bus bandwidth.
/// t = 2 alpha + 2(n-1)/n x bytes / bandwidth. Zero for one GPU.
double nvls_allreduce_s(double bytes, int gpus, double latency_s, double bandwidth_Bps);
AlphaBetaTime nvls_allreduce_time(double bytes, int gpus, double latency_s, double bandwidth_Bps);

/// Parameter servers on `servers` dedicated hosts, `workers` worker hosts: each worker pushes its
/// whole gradient and pulls the whole model (full duplex, keys pipelined so push and pull overlap);
/// each server takes workers x bytes / servers in and sends as much out.
/// t = 2 alpha + max(bytes / worker_bandwidth, workers x bytes / (servers x server_bandwidth)).
double ps_push_pull_s(double bytes, int workers, int servers, double latency_s, double worker_bandwidth_Bps,
                      double server_bandwidth_Bps);
AlphaBetaTime ps_push_pull_time(double bytes, int workers, int servers, double latency_s, double worker_bandwidth_Bps,
                                double server_bandwidth_Bps);

/// Parameter servers co-located with the workers (one per worker host, each holding 1/n of the
/// model): every host sends (n-1)/n of its gradient to the other servers and serves its shard to
/// the n-1 other workers. t = 2 alpha + 2(n-1)/n x bytes / bandwidth. Zero for one host.
double ps_colocated_s(double bytes, int hosts, double latency_s, double bandwidth_Bps);
AlphaBetaTime ps_colocated_time(double bytes, int hosts, double latency_s, double bandwidth_Bps);

/// nccl-tests' bus bandwidth factor for all-reduce, 2(n-1)/n: bus bandwidth = algorithm bandwidth
/// x this, which makes figures comparable across rank counts (nccl-tests doc/PERFORMANCE.md).
double allreduce_bus_factor(int ranks);

// On a resolved cluster: the decisions.

/// The fabric a node's gradients cross with `efa_adapters` of its EFA adapters in use (-1: all):
/// its interconnect, except EFA with none in use, which falls back to NCCL's TCP sockets.
Interconnect fabric_in_use(const InstanceSpec& instance, int efa_adapters);

/// Bandwidth one node gets across the network with `efa_adapters` of its adapters in use (-1:
/// all), in bytes/s: the line rate (its share of the adapters for EFA) times the fabric's
/// efficiency, under the fabric's per-node ceiling where it has one (docs/model.md, eq. N1).
double node_network_Bps(const InstanceSpec& instance, int efa_adapters, const NetworkParams& network);

/// GPU-to-GPU bandwidth inside a node for a ring, in bytes/s: intra_node_GBps times the link
/// class's efficiency (eq. N2). A host's CPU ranks (`local-cpu`) give their measured bus bandwidth.
double intra_node_Bps(const InstanceSpec& instance, DeviceKind device, const NetworkParams& network);

/// The network fields of `r` (links, fabric, latencies, bandwidths, NVLS) for `efa_adapters` of
/// `instance`'s adapters in use (eqs. N1-N3): what resolve() and the nccl-tests predictions share.
void set_network(ResolvedScenario& r, const InstanceSpec& instance, DeviceKind device, int efa_adapters,
                 const NetworkParams& network);

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

/// All of a resolved scenario's communication fields for its cluster (CostModel::resolve's step):
/// set_network's for the workers, the gradient's bytes and its buckets (the scenario's fusion
/// threshold, else the framework's bucket), the servers' bandwidth and the latency across nodes
/// (cross_node_latency's).
void set_communication(ResolvedScenario& r, const Cluster& cluster, const Scenario& scenario, const Workload& work,
                       const Calibration& calibration);

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
    bool simple = false;          ///< the hop's latency is Simple's (inter_simple_latency_s), not inter_latency_s
};
Protocol nccl_protocol(const ResolvedScenario& s, Algorithm algorithm, double bytes);

/// One all-reduce of `bytes` on the resolved cluster by `algorithm` (ring, tree, nvls or
/// hierarchical), in seconds (eqs. R1-R3, T2, V1, with N3's protocol across nodes). Zero for one GPU.
double allreduce_time_s(const ResolvedScenario& s, Algorithm algorithm, double bytes);

/// The same with the protocol given.
double allreduce_time_s(const ResolvedScenario& s, Algorithm algorithm, double bytes, const Protocol& protocol);

/// A time on the resolved cluster and its derivatives d t / d ln(field) for each of the scenario's
/// network fields it moves with (SensitiveField: the links' and fabric's latencies and bandwidths,
/// the servers', NVLS's), 0 for every other field (eq. U1).
struct NetworkTime {
    double seconds = 0;
    std::array<double, kSensitiveFields> per_log_field{};
};

/// allreduce_time_s with its derivatives: each formula's parts (AlphaBetaTime) credited to the
/// field its latency or bandwidth is (the slower link of a ring; Simple's latency is no field).
NetworkTime allreduce_time(const ResolvedScenario& s, Algorithm algorithm, double bytes, const Protocol& protocol);

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
    /// d seconds / d ln(field) for the network's fields (NetworkTime's), the algorithm, protocol and
    /// buckets held as chosen: what eq. U1's gradient takes instead of timing the moved cluster again.
    std::array<double, kSensitiveFields> per_log_field{};
};
Communication communication(const ResolvedScenario& s);

/// Whole gradient synchronisation of one iteration for the scenario's strategy (eqs. B1, P1, P2):
/// communication(s).seconds.
double communication_time_s(const ResolvedScenario& s);

/// One node alone: the same GPUs all-reducing the whole gradient inside the node only (MXNet's
/// 'device' kvstore in seed 000), by NCCL's choice where the strategy leaves it to NCCL, else by
/// a ring, in seconds; 0 for one GPU. The one-node baseline of the node scaling efficiency.
double node_allreduce_s(const ResolvedScenario& s);

}  // namespace epochcast
