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

/// Double binary tree all-reduce (NCCL >= 2.4): a pipelined reduce up and broadcast down the
/// trees; each rank sends and receives about the whole buffer once in each phase, and the
/// latency grows with the depth. t = 2 ceil(log2 n) alpha + 2 x bytes / bandwidth. Zero for one rank.
double tree_allreduce_s(double bytes, int ranks, double latency_s, double bandwidth_Bps);

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
