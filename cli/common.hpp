// Helpers shared by the CLI subcommands.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "model/calibration.hpp"
#include "model/catalog.hpp"
#include "model/observation.hpp"
#include "model/scenario.hpp"

namespace epochcast::cli {

// load_catalog (model/catalog.hpp) and load_calibration (model/calibration.hpp) are shared with the GUI.

/// predict's scenario flags (DESIGN.md), shared by every subcommand that takes a scenario.
struct ScenarioFlags {
    Scenario scenario;
    std::string precision = "amp";
    std::string strategy;  ///< empty: hierarchical for multi-GPU nodes, ring for one GPU per node
    std::string framework = "tensorflow";
    std::string pricing = "on-demand";
    std::string stack = "current";
    std::vector<CLI::Option*> options;  ///< the scenario flags, to tell whether any was given

    /// True when the user gave at least one scenario flag (--pricing does not count).
    bool any_given() const;
    /// The Scenario the flags describe; throws InputError naming a bad value.
    Scenario to_scenario() const;
};

/// Register --instance, --nodes, --gpus-per-node, --batch-per-gpu, --precision, --strategy,
/// --global-batch, --framework, --stack, --ps-instance, --ps-nodes, --ps-colocated, --efa-adapters,
/// --model, --image-size, --classes, --dataset-images, --epochs and --pricing on `command`.
void add_scenario_flags(CLI::App& command, ScenarioFlags& flags);

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
