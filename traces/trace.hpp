// The Trace file format, "epochcast.trace/1" (DESIGN.md): read, validate, write. A trace holds
// runs; each run is a configuration, its source and what was measured. Unknown keys are kept
// (written back unchanged); a missing required key, a wrong type, a negative or zero measurement
// or an instance the catalog does not know is an error naming the file, the run index and the key.
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
    std::string origin;           ///< the file it was read from ("" for a new trace)
    nlohmann::json document;      ///< top-level keys besides "runs" and "networks", kept as read
    std::vector<TraceRun> runs;
    std::vector<NetworkMeasurement> networks;  ///< all-reduce measurements (`epochcast import-nccl`)
    std::vector<Comparison> comparisons;       ///< published relative figures
};

/// Parse trace JSON. `origin` names it in errors and in each Observation's origin ("file#index").
/// Every run's instance (and ps_instance) must be in `catalog`.
Trace parse_trace(std::string_view json_text, std::string_view origin, const Catalog& catalog);

/// Read and parse a file; a missing or unreadable file is an InputError naming the path.
Trace read_trace(const std::filesystem::path& path, const Catalog& catalog);

/// A Scenario's fields as trace runs and sweep specs name them (DESIGN.md).
nlohmann::json scenario_json(const Scenario& scenario);

/// The run's JSON for an Observation (the keys of DESIGN.md's trace run).
nlohmann::json run_json(const Observation& observation);

/// The trace as JSON text, runs' unknown keys preserved.
std::string trace_json(const Trace& trace);

/// Write atomically: a temporary file beside `path`, then a rename, so a failure leaves no
/// half-written file. Throws InputError when the folder cannot be written.
void write_trace(const Trace& trace, const std::filesystem::path& path);

}  // namespace epochcast
