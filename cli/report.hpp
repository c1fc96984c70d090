// Reporters over the one Prediction type: a JSON object (the `--json` contract of DESIGN.md) and
// a human table with one column per scenario.
#pragma once

#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/cost_model.hpp"

namespace epochcast::cli {

/// A scenario and what the model said about it.
struct ScenarioResult {
    Scenario scenario;
    Prediction prediction;
    bool measured_curve = false;  ///< the compute curve came from measured runs, not the roofline prior
    bool borrowed_curve = false;  ///< another framework's measured curve on the same GPU stood in
};

/// The contract's keys (seconds, images/s, US dollars) plus the breakdown and the scenario echoed.
nlohmann::json prediction_json(const ScenarioResult& result);

/// An aligned table, one column per result, with units in the row labels.
void print_prediction_table(const std::vector<ScenarioResult>& results, const Catalog& catalog, std::ostream& out);

}  // namespace epochcast::cli
