// `epochcast plan-calibration --instance NAME [scenario flags] [--max-nodes N] [--max-runs K]`:
// the cheapest few short benchmark runs that pin down the parameters the target prediction
// depends on (model/plan.hpp), with what each costs and how much it narrows the band.
#include <CLI/CLI.hpp>

#include <cmath>
#include <memory>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/report.hpp"
#include "cli/table.hpp"
#include "model/plan.hpp"
#include "model/text_io.hpp"

namespace epochcast::cli {
namespace {

struct PlanCliOptions {
    ScenarioFlags flags;
    PlanOptions plan;
    std::vector<std::string> catalogs;
    std::string calibration = "built-in";
};

/// A relative 1-sigma as the 95% band's two ends (lognormal, as predict's), in percent.
std::string band_percent(double sigma) {
    return "-" + format_number(-100.0 * std::expm1(-kInterval95Sigmas * sigma), 1) + " % / +" +
           format_number(100.0 * std::expm1(kInterval95Sigmas * sigma), 1) + " %";
}

/// A band's ends relative to its point, in percent.
std::string relative_ends(const Interval& band, double point) {
    return "-" + format_number(100.0 * (1.0 - band.low / point), 1) + " % / +" +
           format_number(100.0 * (band.high / point - 1.0), 1) + " %";
}

void run_plan(const PlanCliOptions& o, std::ostream& out) {
    const CostModel model(load_catalog(o.catalogs), load_calibration(o.calibration));
    const Scenario target = o.flags.to_scenario();
    const CalibrationPlan plan = plan_calibration(model, target, o.plan);
    const Prediction predicted = model.checked_predict(target);

    out << "Target: " << format_count(target.nodes) << " x " << target.instance << " (" << format_count(predicted.gpus)
        << " GPUs), " << to_string(target.framework) << "/" << to_string(target.strategy) << ", " << target.model
        << " batch " << batch_per_gpu(predicted) << " per GPU"
        << (target.global_batch > 0 ? " (global " + format_count(target.global_batch) + ")" : std::string()) << " "
        << to_string(target.precision) << ": " << format_count(predicted.throughput_images_per_s) << " img/s, 95% band "
        << format_count(predicted.interval.low) << " - " << format_count(predicted.interval.high) << " ("
        << relative_ends(predicted.interval, predicted.throughput_images_per_s) << ") now, as predict says.\n\n";
    if (plan.runs.empty()) {
        out << "No calibration run on up to " << o.plan.max_nodes << " node(s) would narrow that band by more than "
            << format_number(100.0 * o.plan.stop_fraction, 0) << "% of its variance: the calibration already pins "
            << "down what this prediction depends on.\n";
        return;
    }
    Table table({"run", "nodes", "GPUs per node", "batch per GPU", "minutes", "cost", "band after"});
    for (std::size_t i = 0; i < plan.runs.size(); ++i) {
        const PlannedRun& r = plan.runs[i];
        table.add_row({std::to_string(i + 1), std::to_string(r.scenario.nodes),
                       std::to_string(r.scenario.gpus_per_node), std::to_string(r.scenario.batch_per_gpu),
                       format_number(r.duration_s / 60.0, 1), format_cost(r.cost_usd, predicted.priced),
                       band_percent(r.target_sigma_after)});
    }
    table.print(out);
    out << "\n"
        << plan.runs.size() << " runs of " << o.plan.benchmark_iterations << " timed iterations each, chosen from "
        << plan.candidates
        << " candidates for the most band narrowed per dollar: " << format_cost(plan.total_cost_usd, predicted.priced)
        << " in all. Record them as a trace and run `epochcast calibrate`.\n";
}

}  // namespace

void register_plan_calibration(CLI::App& app, std::ostream& out) {
    auto options = std::make_shared<PlanCliOptions>();
    CLI::App* cmd = app.add_subcommand(
        "plan-calibration",
        "Propose the cheapest few short calibration runs on small clusters of an instance type that pin down the "
        "parameters a target prediction depends on (experiment design as in Ernest, NSDI 2016).");
    add_scenario_flags(*cmd, options->flags);
    cmd->get_option("--instance")->required();
    cmd->add_option("--max-nodes", options->plan.max_nodes, "Largest cluster a calibration run may use");
    cmd->add_option("--max-runs", options->plan.max_runs, "At most this many runs");
    cmd->add_option("--iterations", options->plan.benchmark_iterations, "Timed iterations per run");
    add_calibration_option(*cmd, options->calibration);
    add_catalog_option(*cmd, options->catalogs);
    cmd->callback([options, &out] { run_plan(*options, out); });
}

}  // namespace epochcast::cli
