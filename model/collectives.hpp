// Cost of the gradient collectives, one small function per formula (alpha-beta model).
// Derivations in docs/model.md, section "Communication". Every function takes bytes, counts,
// a per-message latency alpha in seconds and a bandwidth in bytes per second, and returns
// seconds. Bandwidths are what one participant can send (and, full duplex, receive at once).
#pragma once

namespace epochcast {

/// Ring all-reduce of `bytes` over `ranks` participants: 2(n-1) steps, each moving bytes/n
/// over every link at once (Patarasuk and Yuan 2009; NCCL's ring).
/// t = 2(n-1) alpha + 2(n-1)/n x bytes / bandwidth. Zero for one rank.
double ring_allreduce_s(double bytes, int ranks, double latency_s, double bandwidth_Bps);

/// Reduce-scatter (or all-gather) half of a ring: (n-1) steps of bytes/n.
/// t = (n-1) alpha + (n-1)/n x bytes / bandwidth. Zero for one rank.
double ring_reduce_scatter_s(double bytes, int ranks, double latency_s, double bandwidth_Bps);

/// NCCL's ring across `nodes` nodes of `gpus_per_node` GPUs (eq. R3): one pipelined ring through
/// all N = nodes x gpus_per_node GPUs. As NCCL's tuning model counts it (src/graph/tuning.cc,
/// NCCL 2.23), the pipeline pays each hop's latency once: 2(nodes-1) of its 2(N-1) steps cross the
/// network, the rest stay inside a node; the bytes move at the slowest link's pace.
/// t = (2(N-1) - s) alpha_intra + s alpha_inter + 2(N-1)/N x bytes / bandwidth, s = 2(nodes-1).
/// Zero for one GPU.
double nccl_ring_allreduce_s(double bytes, int nodes, int gpus_per_node, double intra_latency_s, double inter_latency_s,
                             double bandwidth_Bps);

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

/// NVLink SHARP in one node (eq. V1): every GPU writes its buffer into the NVSwitch, which
/// reduces, and reads the sum back; one latency each way, the bytes at NVLS's bus bandwidth.
/// t = 2 alpha + 2(n-1)/n x bytes / bandwidth. Zero for one GPU.
double nvls_allreduce_s(double bytes, int gpus, double latency_s, double bandwidth_Bps);

/// Parameter servers on `servers` dedicated hosts, `workers` worker hosts: each worker pushes its
/// whole gradient and pulls the whole model (full duplex, keys pipelined so push and pull overlap);
/// each server takes workers x bytes / servers in and sends as much out.
/// t = 2 alpha + max(bytes / worker_bandwidth, workers x bytes / (servers x server_bandwidth)).
double ps_push_pull_s(double bytes, int workers, int servers, double latency_s, double worker_bandwidth_Bps,
                      double server_bandwidth_Bps);

/// Parameter servers co-located with the workers (one per worker host, each holding 1/n of the
/// model): every host sends (n-1)/n of its gradient to the other servers and serves its shard to
/// the n-1 other workers. t = 2 alpha + 2(n-1)/n x bytes / bandwidth. Zero for one host.
double ps_colocated_s(double bytes, int hosts, double latency_s, double bandwidth_Bps);

/// nccl-tests' bus bandwidth factor for all-reduce, 2(n-1)/n: bus bandwidth = algorithm bandwidth
/// x this, which makes figures comparable across rank counts (nccl-tests doc/PERFORMANCE.md).
double allreduce_bus_factor(int ranks);

}  // namespace epochcast
