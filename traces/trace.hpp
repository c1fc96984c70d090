// The Trace file format, "epochcast.trace/1" (docs/formats.md, "Trace"): read, validate, write. A trace holds
//  - "runs" (required, may be empty): each a configuration, its source and what was measured;
//  - "comparisons" (optional): published relative figures where no absolute throughput was
//    published, each {"source", "quantity": "speedup" | "epoch_time_ratio", "baseline": {scenario
//    keys}, "scenario": {scenario keys}, "measured": {"ratio": x} or {"low": a, "high": b}}, with
//    0 < low <= high; the two scenarios take the same keys as a run, without "measured";
//  - "networks" (optional): all-reduce bus bandwidth of one instance type (NetworkMeasurement),
//    from `epochcast import-nccl` or transcribed from a published table (see read_network below).
// Other top-level keys (such as "description" or free-form "findings") are kept as read.
// Unknown keys of runs, comparisons and network entries are kept (written back unchanged); a
// missing required key, a wrong type, a negative or zero measurement or an instance the catalog
// does not know is an error naming the file, the entry ("run 2", "comparisons[1]",
// "networks[0]") and the key ("instance", "measured.low", "baseline.efa_adapters").
//
// Network entries: "instance", "ranks" (>= 2) and "bus_bandwidth_GBps" (> 0) are required;
// "source", "max_bus_bandwidth_GBps", "average_bus_bandwidth_GBps" and "samples" (the nccl-tests
// rows) are optional; "efa_adapters" (a whole number from 0 to the instance's adapters; absent
// means all of them, 0 means NCCL's TCP socket transport) says how many EFA adapters the test
// used. With samples, "latency_s" (the fitted alpha) is required and "bus_bandwidth_GBps" is the
// fitted B. Without samples (a published table that gives only the average and the largest bus
// bandwidth) "bus_bandwidth_GBps" is the largest, large-message figure and "latency_s" is
// optional (0 when absent, meaning unknown).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/catalog.hpp"
#include "model/observation.hpp"
#include "traces/nccl_import.hpp"

namespace epochcast {

inline constexpr std::string_view kTraceSchema = "epochcast.trace/1";

struct TraceRun {
    Observation observation;  ///< the typed view of the run
    nlohmann::json raw;       ///< the run's JSON as read, unknown keys included
};

struct Trace {
    std::string origin;       ///< the file it was read from ("" for a new trace)
    nlohmann::json document;  ///< top-level keys besides "runs", "comparisons" and "networks", kept as read
    std::vector<TraceRun> runs;
    std::vector<Comparison> comparisons;       ///< published relative figures (origin "file#comparisons[i]")
    std::vector<NetworkMeasurement> networks;  ///< all-reduce measurements (`epochcast import-nccl`)
    /// Each comparison's and network entry's JSON as read, unknown keys included, by the index of
    /// `comparisons` / `networks`. Entries added in code need none (shorter vectors are fine):
    /// they are written from their typed view alone.
    std::vector<nlohmann::json> comparisons_raw;
    std::vector<nlohmann::json> networks_raw;
};

/// Parse trace JSON. `origin` names it in errors and in each Observation's origin ("file#index")
/// and Comparison's origin ("file#comparisons[index]"). Every instance (and ps_instance) named by
/// a run, a comparison or a network entry must be in `catalog`.
Trace parse_trace(std::string_view json_text, std::string_view origin, const Catalog& catalog);

/// Read and parse a file; a missing or unreadable file is an InputError naming the path.
Trace read_trace(const std::filesystem::path& path, const Catalog& catalog);

/// What traces measured, as the model fits it (`calibrate`, `validate`).
struct Evidence {
    std::vector<Observation> runs;
    std::vector<NetworkObservation> networks;
    std::vector<Comparison> comparisons;
};

/// Adds every run, network measurement and comparison of `trace` (read from `origin`, which names
/// its networks: "ORIGIN#networks[i]") to `evidence`. Network measurements made with some but not
/// all of an instance's EFA adapters are left out (the model's bandwidth is per node, with all
/// adapters or none).
void add_evidence(const Trace& trace, const Catalog& catalog, std::string_view origin, Evidence& evidence);

/// A Scenario's fields as trace runs and sweep specs name them (docs/formats.md).
nlohmann::json scenario_json(const Scenario& scenario);

/// The run's JSON for an Observation (its keys: docs/formats.md, "Trace").
nlohmann::json run_json(const Observation& observation);

/// The JSON of a comparison entry: source, quantity, baseline, scenario and measured ("ratio"
/// when low == high, else "low" and "high").
nlohmann::json comparison_json(const Comparison& comparison);

/// The JSON of a network entry (see the header comment).
nlohmann::json network_json(const NetworkMeasurement& measurement);

/// The trace as JSON text, unknown keys of runs, comparisons and networks preserved.
std::string trace_json(const Trace& trace);

/// Write atomically: a temporary file beside `path`, then a rename, so a failure leaves no
/// half-written file. Throws InputError when the folder cannot be written.
void write_trace(const Trace& trace, const std::filesystem::path& path);

}  // namespace epochcast
