// What this machine is, for traces and for the `local-cpu` catalog entry that `epochcast run`
// predicts with: the CPU's model and the best ISA oneDNN uses on it, and peak figures measured
// on the machine itself (oneDNN matmul GFLOP/s, memory copy bandwidth), never assumed.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace epochcast {

struct HostInfo {
    std::string hostname;
    std::string cpu_model;     ///< /proc/cpuinfo "model name"
    std::string isa;           ///< oneDNN's effective CPU ISA, e.g. "avx512_core_bf16", "avx512_core_amx"
    bool native_bf16 = false;  ///< the ISA computes bf16 natively (avx512_bf16 or AMX)
    int cores = 0;             ///< online logical CPUs
    double memory_gib = 0;     ///< MemTotal
};

/// Read the host's description (cheap: no benchmark runs).
HostInfo host_info();

/// The host as JSON for a trace run's "host" key.
nlohmann::json host_json(const HostInfo& host);

/// An all-reduce measured between the ranks of this host (allreduce_bus_bytes_per_s of
/// executor/distributed.hpp), for the catalog entry.
struct MeasuredAllreduce {
    int ranks = 0;          ///< ranks that took part, >= 2
    double bus_GBps = 0;    ///< nccl-tests' bus bandwidth, in 10^9 bytes/s
    double total_MiB = 0;   ///< bytes summed per round, in MiB
    double bucket_MiB = 0;  ///< bytes per MPI_Allreduce, in MiB
};

/// A catalog document (the schema of model/catalog.json) with one device "local-cpu" of kind
/// "cpu" (one rank running `threads_per_rank` threads: fp32_tflops and bf16_tflops measured by a
/// oneDNN matmul with that many threads, memory_GBps by a copy) and one instance "local-cpu" (ranks
/// = cores / threads_per_rank as "gpus", price 0), each with a source saying when and how it was
/// measured. The instance's intra_node_GBps is `allreduce`'s bus bandwidth when given (what the
/// model costs the ranks' all-reduce with), else a one-thread copy rate, an upper bound for a
/// host whose ranks were not measured together. Takes a few seconds.
nlohmann::json describe_host_catalog(int threads_per_rank, const MeasuredAllreduce* allreduce = nullptr);

}  // namespace epochcast
