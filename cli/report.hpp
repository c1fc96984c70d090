// Reporters over the one Prediction type: a JSON object (the `--json` keys of docs/cli.md, "predict") and
// a human table with one column per scenario.
#pragma once

#include <chrono>

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/cost_model.hpp"

namespace epochcast::cli {

/// How a subcommand writes its answer: the text a person reads (tables with units), the same
/// tables as Markdown, or JSON for a program.
enum class OutputFormat { text, markdown, json };

/// The format --json and --markdown ask for (the text when neither); InputError when both are given.
OutputFormat output_format(bool json, bool markdown = false);

/// A subcommand's answer, able to write itself in each format (as google/benchmark's reporters
/// write a run): a subcommand builds one Report and write_report() picks the format, so that no
/// subcommand branches on --json itself.
class Report {
public:
    virtual ~Report() = default;
    /// The text: tables with units (Markdown tables when `markdown`) and their notes.
    virtual void print_text(std::ostream& out, bool markdown) const = 0;
    /// One JSON document and a final '\n'.
    virtual void print_json(std::ostream& out) const = 0;
};

/// Write `report` on `out` in `format`.
void write_report(const Report& report, OutputFormat format, std::ostream& out);

/// `value` as every --json prints it: indented by 2, then '\n'.
void print_json_document(const nlohmann::json& value, std::ostream& out);

/// A scenario and what the model said about it.
struct ScenarioResult {
    Scenario scenario;
    Prediction prediction;
    CurveOrigin curve_origin = CurveOrigin::roofline;  ///< where the compute curve came from
};

/// The contract's keys (seconds, images/s, US dollars) plus the breakdown and the scenario echoed.
nlohmann::json prediction_json(const ScenarioResult& result);

/// True where the store bounds the first epoch and each node's page cache serves the later ones
/// (docs/model.md, eqs. F7, F8): the first epoch is slower than the throughput says.
bool cold_first_epoch(const Prediction& p);

/// The table's bottleneck: its name, and where the store bounds only the epochs before each node's
/// page cache is warm, "storage (first epoch; later epochs from each node's page cache: <later>)".
std::string bottleneck_text(const Prediction& p);

/// A spot run's elastic alternative (eq. X7), for predict's and plan's text: "elastic (go on without
/// a lost node until its replacement joins, seed 003): 3h 2min, $1,234.56 (-12% time, -10% cost
/// against waiting; ...)"; for a run priced elastic, the run that waits instead ("waiting for each
/// replacement instead: ..."); empty where the run has none.
std::string elastic_spot_text(const Prediction& p);

/// What a spot prediction rests on, for predict's and plan's text (issue 58, item 5): the worker's
/// spot price, its kind (a quote or an estimate), the date it was read and its age on `today`
/// (stale past kStalePriceDays), its share of on-demand (implausibly low below
/// kLowestPlausibleSpotShare), and where the interruption rate comes from (given, the Spot Instance
/// Advisor's band read on a date, a band assumed, or none: priced as never interrupted):
/// "$21.01/h a quote read 2026-01-21 (312 days ago: stale), 18% of on-demand (implausibly low: ...);
/// interruptions: band >20% assumed 2026-11-26". Empty for another pricing.
std::string spot_inputs_text(const Catalog& catalog, const Scenario& scenario, std::chrono::sys_days today);

/// Today's date by the system clock, for the ages of prices.
std::chrono::sys_days today();

/// Where the cluster's price under the scenario's pricing (not spot: spot_inputs_text says its own)
/// was read more than kStalePriceDays before `today`: "the on-demand price of p4d.24xlarge ($21.96/h)
/// was read 2026-01-21, 312 days ago: ..."; empty where it is fresh, undated or absent.
std::string stale_price_text(const Catalog& catalog, const Scenario& scenario, std::chrono::sys_days today);

/// A date as YYYY-MM-DD.
std::string format_date(std::chrono::sys_days day);

/// The line every spot answer carries: capacity is not modelled.
inline constexpr const char* kSpotAvailabilityNote =
    "whether that many spot instances can be had at once, and kept, is not modelled: each spot plan assumes "
    "they can";

/// An FSx for Lustre file system's capacity and tier as the scenario gives them, the store's
/// defaults where it does not (predict's `storage` key, the sweep's `storage_tib` and `storage_tier`).
struct FsxSize {
    double tib = 0;
    double tier_MBps_per_TiB = 0;
};
FsxSize fsx_size(const Scenario& scenario);

/// The prediction's `epochs_source`: "--epochs", or the recipe and whether its published runs or
/// eq. K2's extrapolation gave the epochs (docs/model.md, "Time to accuracy").
std::string epochs_source_of(const Prediction& prediction);

/// "42.0 s", "12.5 min", "3.20 h", "4.10 days", "3,650.00 days": seconds in the unit a reader expects; "1.2e+08 days"
/// past a million days, "forever" for +infinity.
std::string format_duration(double seconds);

/// "$1,234.56" (to the cent below $10^15, "$1.23e+18" beyond; "-$5.00" below zero, "$inf" for
/// +infinity): any double, never an exception.
std::string format_dollars(double usd);

/// format_dollars(usd), or "n/a" for a cluster without a price by the hour (Prediction::priced
/// false: a machine you own), whose cost is no $0.00.
std::string format_cost(double usd, bool priced);

/// The JSON of a rejected combination: the scenario echoed, "feasible": false and the reason.
nlohmann::json infeasible_json(const Scenario& scenario, std::string_view reason);

/// An aligned table, one column per result, with units in the row labels. `model` gives the
/// catalog and each model's workload (the largest batch that fits the GPU's memory).
void print_prediction_table(const std::vector<ScenarioResult>& results, const CostModel& model, std::ostream& out);

/// The memory row's text: what one GPU needs of its capacity and the largest batch that fits it,
/// "14.7 of the GPU's 16 (a batch of up to 279 fits)"; on a CPU worker, what it needs alone.
std::string memory_text(const CostModel& model, const Scenario& scenario, const Prediction& prediction);

}  // namespace epochcast::cli
