// Helpers shared by the CLI subcommands.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "model/calibration.hpp"
#include "model/catalog.hpp"
#include "model/observation.hpp"
#include "model/scenario.hpp"
#include "model/text_io.hpp"
#include "traces/trace.hpp"

namespace epochcast::cli {

// load_catalog (model/catalog.hpp) and load_calibration (model/calibration.hpp) are shared with the GUI.

// The options every subcommand that reads a catalog, a calibration or writes JSON takes, registered
// here once so that each accepts the same words with the same help everywhere.

/// --catalog FILE, repeatable (`--catalog A --catalog B`; one file per flag, so that a positional
/// argument after it is not taken for a second catalog): merged in order over the built-in catalog.
CLI::Option* add_catalog_option(CLI::App& command, std::vector<std::string>& files);

/// The words a calibration flag takes: built-in, data-free or a file; model/calibration.hpp's
/// load_calibration reads them. `flag` is --calibration or --prior; `role` leads the help, e.g.
/// "Calibration" or "What to start from". `name` holds the default, which --help shows.
CLI::Option* add_calibration_option(CLI::App& command, std::string& name, const std::string& flag = "--calibration",
                                    const std::string& role = "Calibration");

/// `option` with no default in --help: for an option whose default is a sentinel that its help
/// says in words (0 GPUs per node: all of them; -1 adapters: all; 0 threads: the machine's cores).
CLI::Option* without_default(CLI::Option* option);

/// --json: print `what` (e.g. "one JSON object per configuration") instead of the text.
CLI::Option* add_json_flag(CLI::App& command, bool& json, const std::string& what);

/// --target-top1 and --recipe: the epochs become what a training recipe needs to reach a top-1
/// accuracy at the run's global batch (docs/model.md, "Time to accuracy").
struct TargetFlags {
    double target_top1_percent = 0;
    std::string recipe;
    CLI::Option* target = nullptr;
    CLI::Option* recipe_option = nullptr;

    /// Set the scenario's target and recipe when --target-top1 was given. Throws InputError for a
    /// target that is not a percentage in (0, 100), an unknown recipe, or --recipe without a target.
    void apply(Scenario& scenario) const;
};

/// Register --target-top1 and --recipe on `command`; --target-top1 excludes `epochs` (--epochs).
void add_target_flags(CLI::App& command, TargetFlags& flags, CLI::Option* epochs);

/// --storage, --storage-tib, --storage-tier, --eval-every, --eval-images and --startup: what a run
/// costs around its iterations (docs/model.md, "The data", "Evaluation", "Start-up"; issue 45).
struct RunCostFlags {
    std::string storage = "none";
    double storage_tib = 0;
    double storage_tier_MBps_per_TiB = 0;
    std::optional<int> eval_every_epochs;  ///< not given: the recipe's cadence, else none
    int eval_images = Scenario{}.eval_images;
    std::string startup;  ///< a duration; empty: the calibration's

    /// Set the scenario's fields from the flags; InputError naming a bad one (an unknown store, a bad
    /// duration, and whatever check_run_cost_limits() refuses).
    void apply(Scenario& scenario) const;
};

/// Register them on `command`; each option is appended to `options` where it is given.
void add_run_cost_flags(CLI::App& command, RunCostFlags& flags, std::vector<CLI::Option*>* options = nullptr);

/// predict's scenario flags (docs/cli.md, "predict"), shared by every subcommand that takes a scenario.
struct ScenarioFlags {
    Scenario scenario;
    std::string precision = "amp";
    std::string strategy;  ///< empty: hierarchical for multi-GPU nodes, ring for one GPU per node
    std::string framework = "pytorch";
    std::string pricing = "on-demand";
    std::string stack = "current";
    std::string memory_format = "channels_last";
    std::string loader = "default";
    RunCostFlags run_costs;
    TargetFlags target;
    std::vector<CLI::Option*> options;     ///< the scenario flags, to tell whether any was given
    CLI::Option* gpus_per_node = nullptr;  ///< given: at least 1 (the model's 0, "all", is the flag left out)
    CLI::Option* ps_nodes = nullptr;       ///< given: at least 1 (0, "no dedicated servers", is the flag left out)
    CLI::Option* global_batch = nullptr;   ///< given: at least 1 (0, "--batch-per-gpu rules", is the flag left out)
    CLI::Option* efa_adapters = nullptr;   ///< given: 0 or more (the model's -1, "all", is the flag left out)

    /// True when the user gave at least one scenario flag (--pricing and --stack do not count: predict
    /// applies them to its default set-ups).
    bool any_given() const;
    /// The Scenario the flags describe; throws InputError naming a bad value: a given
    /// --gpus-per-node, --ps-nodes or --global-batch below 1, a given --efa-adapters below 0, and whatever
    /// check_scenario_limits() (model/limits.hpp) refuses.
    Scenario to_scenario() const;
};

/// Register --instance, --nodes, --gpus-per-node, --batch-per-gpu, --precision, --strategy,
/// --global-batch, --framework, --stack, --ps-instance, --ps-nodes, --ps-colocated, --efa-adapters,
/// --model, --image-size, --classes, --dataset-images, --epochs, --target-top1, --recipe, --pricing
/// and add_run_cost_flags' on `command`.
void add_scenario_flags(CLI::App& command, ScenarioFlags& flags);

// parse_duration_s (model/text_io.hpp) reads every duration a flag takes.

/// --spot-interruptions-per-node-hour, --checkpoint-every and --spot-replacement-wait (docs/model.md,
/// "Spot interruptions"): what a spot run's interruptions cost.
struct SpotFlags {
    double interruptions_per_node_hour = -1;
    std::string checkpoint_every;
    std::string replacement_wait;
    CLI::Option* rate_option = nullptr;

    /// Set the scenario's spot fields from the flags given; InputError naming a bad one.
    void apply(Scenario& scenario) const;
};

void add_spot_flags(CLI::App& command, SpotFlags& flags);

/// Read trace files, each as traces/trace.hpp's add_evidence takes it. "FILE#I" selects run I of
/// FILE only (and none of its networks or comparisons).
Evidence load_evidence(const std::vector<std::string>& files, const Catalog& catalog);

}  // namespace epochcast::cli
