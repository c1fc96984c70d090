// The scenario file, "epochcast.scenario/1" (docs/formats.md, "Scenario"): one configuration, or a
// named list of them, kept to be opened again, compared or handed on. `predict --scenario` and
// `compare` read it, `predict --save-scenario` and the GUI's Save write it, and Python's
// epochcast.Scenario does both.
//
// A configuration's keys are the sweep spec's (model/sweep.hpp, each a single value, not a list),
// with "target_top1" and "recipe" (predict's --target-top1 and --recipe) and an optional "name".
// The file is either that object itself with "schema", or {"schema", "scenarios": [objects]}.
// Reading goes through the sweep spec's parser, so every value is checked as a sweep checks it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "model/catalog.hpp"
#include "model/scenario.hpp"

namespace epochcast {

inline constexpr std::string_view kScenarioSchema = "epochcast.scenario/1";

struct NamedScenario {
    std::string name;  ///< the file's "name"; empty where it gives none
    Scenario scenario;
};

/// Parse a scenario file's JSON; `origin` names it in errors ("a.json", "a.json#scenarios[1]").
/// Throws InputError naming the origin and the key: malformed JSON, a missing or other "schema",
/// neither configuration keys nor a non-empty "scenarios" list, a list where a value is wanted
/// (a scenario is one configuration), and whatever the sweep spec's parser refuses.
std::vector<NamedScenario> parse_scenario_file(std::string_view json_text, std::string_view origin,
                                               const Catalog& catalog);

/// Read and parse a file; a missing or unreadable file is an InputError naming the path.
std::vector<NamedScenario> read_scenario_file(const std::filesystem::path& path, const Catalog& catalog);

/// The `epochcast predict` flags that give `scenario` again, as one shell-ready string
/// ("--instance p5.48xlarge --nodes 4 --batch-per-gpu 256 ..."): the keys scenario_file_json writes,
/// each as its flag (underscores as dashes; "compiled" is --compile; a true flag alone), values
/// quoted for a POSIX shell where they need it. The GUI's "Copy as command" and the launch files'
/// check lines use it.
std::string scenario_flags(const Scenario& scenario);

/// The scenario file's text for `scenarios`: one configuration as the object itself, more as a
/// "scenarios" list. Keys at their defaults are left out, except those a reader looks for first
/// (instance, nodes, the batch, precision, strategy, framework, model, image size, the epochs or
/// the target, pricing). Reading it back gives the same Scenarios.
std::string scenario_file_json(const std::vector<NamedScenario>& scenarios);

}  // namespace epochcast
