// What this machine is, for traces and for the `local-cpu` catalog entry that `epochcast run`
// predicts with: the CPU's model and the best ISA oneDNN uses on it, and peak figures measured
// on the machine itself (oneDNN matmul GFLOP/s, memory copy bandwidth), never assumed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace epochcast {

struct HostInfo {
    std::string hostname;
    std::string cpu_model;     ///< /proc/cpuinfo "model name"
    std::string isa;           ///< oneDNN's effective CPU ISA, e.g. "avx512_core_bf16", "avx512_core_amx"
    bool native_bf16 = false;  ///< the ISA computes bf16 natively (avx512_bf16 or AMX)
    /// The kernels the CPU backend's convolutions run here: the implementation oneDNN picks for
    /// ResNet-50's 3x3 convolution of 64 channels at 56 x 56, batch 16, in the training precision,
    /// the layout left to it (cpu::convolution_choice), e.g. "jit_bf16:avx512_core_bf16" or
    /// "brgconv:avx512_core_amx_bf16"; and its instruction set, one of cpu::kKernelIsas
    /// ("avx512_core_amx" when AMX ran). `isa` is what oneDNN may use; this is what it does use.
    std::string convolution_kernel;
    std::string convolution_isa;
    std::string activation_layout;  ///< the layout those convolutions chose: "nChw16c", "nChw8c" or "NHWC"
    int cores = 0;                  ///< online logical CPUs
    double memory_gib = 0;          ///< MemTotal
};

/// Read the host's description (cheap: no benchmark runs; the convolution is chosen, not run).
/// bf16: the kernels of a bf16 run (where the CPU has native bf16; fp32's otherwise).
HostInfo host_info(bool bf16 = true);

/// The host as JSON for a trace run's "host" key.
nlohmann::json host_json(const HostInfo& host);

/// This machine's name (gethostname), "localhost" when it has none.
std::string host_name();

/// The peaks one rank measured, in the catalog's units.
struct MeasuredPeaks {
    double fp32_tflops = 0;       ///< oneDNN f32 matmul, 10^12 FLOP/s
    double bf16_tflops = 0;       ///< oneDNN bf16 matmul accumulated in f32; 0 without native bf16
    double memory_GBps = 0;       ///< bytes read plus written by a copy on the rank's threads, 10^9 bytes/s
    double thread_copy_GBps = 0;  ///< bytes copied by one thread: how MPI's shared memory moves a message
};

/// Measures this rank's peaks with `threads_per_rank` threads: the best of a few oneDNN matmuls
/// and copies. Takes a few seconds.
MeasuredPeaks measure_peaks(int threads_per_rank);

/// Each figure the smaller of the two: a synchronous job waits for its slowest rank.
MeasuredPeaks slower(const MeasuredPeaks& a, const MeasuredPeaks& b);

/// One node's ranks measured together: each figure its slowest rank's.
struct NodePeaks {
    std::string host;
    int ranks = 1;
    MeasuredPeaks peaks;
};

/// The figures a job over `nodes` (not empty) runs at, each the slowest node's, and which node
/// that is for each (the first of equals): what the catalog's device entry holds.
struct SlowestNode {
    MeasuredPeaks peaks;
    std::size_t fp32_node = 0;
    std::size_t bf16_node = 0;
    std::size_t memory_node = 0;
};
SlowestNode slowest_node(const std::vector<NodePeaks>& nodes);

/// An all-reduce measured between ranks (allreduce_bus_bytes_per_s of executor/distributed.hpp),
/// for the catalog entry.
struct MeasuredAllreduce {
    int ranks = 0;          ///< ranks that took part, >= 2
    double bus_GBps = 0;    ///< nccl-tests' bus bandwidth, in 10^9 bytes/s
    double total_MiB = 0;   ///< bytes summed per round, in MiB
    double bucket_MiB = 0;  ///< bytes per MPI_Allreduce, in MiB

    /// "the MPI all-reduce bus bandwidth of N ranks measured together (fp32 sums over ...)".
    std::string description() const;
};

/// The instance's interconnect figures and the source texts saying how each was obtained.
struct MeasuredLinks {
    double intra_node_GBps = 0;
    double network_gbps = 0;
    std::string intra_node_source;  ///< completes "intra_node_GBps is ..."
    std::string network_source;     ///< completes "network_gbps is ..."
};

/// The ranks of one host: intra_node_GBps is `allreduce`'s bus bandwidth when given (what the model
/// costs the ranks' all-reduce with), else the slowest rank's one-thread copy rate (`peaks`), an
/// upper bound for ranks not measured together; network_gbps is the same rate in Gbit/s (loopback).
MeasuredLinks one_host_links(const MeasuredPeaks& peaks, const MeasuredAllreduce* allreduce);

/// A catalog document (the schema of model/catalog.json) with one device "local-cpu" of kind
/// "cpu" and one instance "local-cpu", and a top-level "nodes" array the catalog parser ignores.
/// The device holds `nodes`' slowest figures (slowest_node), each node those of its slowest rank
/// (one rank running `threads_per_rank` threads); the instance has ranks = cores / threads_per_rank
/// of this host as "gpus", price 0 and `links`' figures. Each entry's source says when and how it
/// was measured, and on which nodes.
nlohmann::json host_catalog(int threads_per_rank, const std::vector<NodePeaks>& nodes, const MeasuredLinks& links);

/// This rank alone: its peaks measured (measure_peaks), as one node of one rank, with
/// one_host_links's rule for ranks not measured together. Takes a few seconds.
nlohmann::json describe_host_catalog(int threads_per_rank);

}  // namespace epochcast
