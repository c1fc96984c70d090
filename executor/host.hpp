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
    std::string cpu_model;       ///< /proc/cpuinfo "model name"
    std::string isa;             ///< oneDNN's effective CPU ISA, e.g. "avx512_core_bf16", "avx512_core_amx"
    bool native_bf16 = false;    ///< the ISA computes bf16 natively (avx512_bf16 or AMX)
    int cores = 0;               ///< online logical CPUs
    double memory_gib = 0;       ///< MemTotal
};

/// Read the host's description (cheap: no benchmark runs).
HostInfo host_info();

/// The host as JSON for a trace run's "host" key.
nlohmann::json host_json(const HostInfo& host);

/// A catalog document (the schema of model/catalog.json) with one device "local-cpu" (one rank
/// running `threads_per_rank` threads: fp32_tflops and bf16_tflops measured by a oneDNN matmul
/// with that many threads, memory_GBps by a copy) and one instance "local-cpu" (ranks =
/// cores / threads_per_rank as "gpus", shared-memory copy bandwidth as intra_node_GBps, price 0),
/// each with a source saying when and how it was measured. Takes a few seconds.
nlohmann::json describe_host_catalog(int threads_per_rank);

}  // namespace epochcast
