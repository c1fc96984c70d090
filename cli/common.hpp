// Helpers shared by the CLI subcommands.
#pragma once

#include <string>
#include <vector>

#include "model/calibration.hpp"
#include "model/catalog.hpp"
#include "model/observation.hpp"

namespace epochcast::cli {

/// The built-in catalog with each `--catalog` file merged over it, in order: a later file's
/// entries replace earlier ones of the same name, new ones are added. A file may refer to GPUs
/// already known (built in or from an earlier file). Throws InputError naming the file and entry.
Catalog load_catalog(const std::vector<std::string>& extra_files);

/// A calibration by name: "built-in" (the default), "data-free" (the prior with no seed run in
/// it) or the path of an epochcast.calibration/1 file.
Calibration load_calibration(const std::string& name_or_path);

/// What a set of trace files measured, as the model sees it.
struct Evidence {
    std::vector<Observation> runs;
    std::vector<NetworkObservation> networks;
    std::vector<Comparison> comparisons;
};

/// Read trace files. "FILE#I" selects run I of FILE only (and none of its networks or
/// comparisons). Network measurements made with some but not all of an instance's EFA adapters
/// are left out (the model's bandwidth is per node, with all adapters or none).
Evidence load_evidence(const std::vector<std::string>& files, const Catalog& catalog);

}  // namespace epochcast::cli
