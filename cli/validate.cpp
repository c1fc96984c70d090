// `epochcast validate TRACE.json... [--calibration CAL] [--leave-one-out | --hold-out MODE [--prior P]]
// [--json|--markdown]`: every measured run beside its prediction, the error, whether the measurement
// fell inside the predicted 95% band, the mean absolute percentage error and the worst error. With
// --leave-one-out each run is predicted by a calibration fitted to all the other runs (from a prior
// with no published run in it), the honest number; --hold-out system and two-runs hold out whole
// systems (model/fit.hpp). Published comparisons (speedups, epoch-time ratios) are checked too.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/report.hpp"
#include "cli/table.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/fit.hpp"
#include "model/holdout.hpp"

namespace epochcast::cli {
namespace {

using nlohmann::json;

struct ValidateOptions {
    std::vector<std::string> traces;
    std::vector<std::string> catalogs;
    std::string calibration = "built-in";
    std::string prior = "data-free";
    bool leave_one_out = false;
    std::string hold_out;  ///< "", run, system or two-runs
    bool json_output = false;
    bool markdown = false;
};

/// One run beside its prediction.
struct RunCheck {
    Observation run;
    Prediction predicted;
    std::string held_out_group;  ///< what was held out with it (held_out_group); empty in-sample
};

/// One measured all-reduce (nccl-tests) beside the model's large-message bus bandwidth (eqs. N1-A1).
struct NetworkCheck {
    NetworkObservation network;
    AllReducePrediction predicted;
};

/// Its prediction: the algorithm NCCL_ALGO forced, or NCCL's own choice, at the row's message
/// size, or for a message large enough that latencies vanish (nccl-tests' largest rows).
NetworkCheck network_check(const CostModel& model, const NetworkObservation& n) {
    return {n, predict_allreduce(model.catalog(), n, model.calibration().network)};
}

/// One published comparison beside the model's ratio.
struct ComparisonCheck {
    Comparison comparison;
    double predicted = 0;
};

std::string short_origin(const std::string& origin) { return std::filesystem::path(origin).filename().string(); }

std::string describe(const Scenario& s) {
    std::string text = std::to_string(s.nodes) + " x " + s.instance;
    if (s.gpus_per_node > 0)
        text += " (" + std::to_string(s.gpus_per_node) + (s.gpus_per_node == 1 ? " GPU" : " GPUs") + " each)";
    text += ", " + std::string(to_string(s.framework)) + "/" + std::string(to_string(s.strategy));
    if (s.efa_adapters >= 0) text += ", " + std::to_string(s.efa_adapters) + " EFA";
    text += ", " + s.model + " b" + std::to_string(s.batch_per_gpu) + " " + std::string(to_string(s.precision));
    if (s.compiled) text += ", compiled";
    if (s.loader != Loader::framework_default) text += ", " + std::string(to_string(s.loader)) + " loader";
    return text;
}

bool in_band(const RunCheck& c) {
    return c.run.throughput_images_per_s >= c.predicted.interval.low &&
           c.run.throughput_images_per_s <= c.predicted.interval.high;
}

/// Distance of the predicted ratio from the published value or range, in percent (0 inside it).
double comparison_error(const ComparisonCheck& c) {
    if (c.predicted < c.comparison.measured_low) return percent_error(c.predicted, c.comparison.measured_low);
    if (c.predicted > c.comparison.measured_high) return percent_error(c.predicted, c.comparison.measured_high);
    return 0.0;
}

struct Summary {
    double mape = 0;
    int averaged = 0;
    int in_band = 0;
    double worst = 0;  ///< the largest error of an averaged run, in percent (signed)
    std::string worst_origin;
};

Summary summarise(const std::vector<RunCheck>& checks) {
    Summary s;
    double sum = 0;
    for (const RunCheck& c : checks) {
        if (in_band(c)) ++s.in_band;
        if (c.run.approximate) continue;
        const double error = percent_error(c.predicted.throughput_images_per_s, c.run.throughput_images_per_s);
        sum += std::abs(error);
        ++s.averaged;
        if (std::abs(error) > std::abs(s.worst)) {
            s.worst = error;
            s.worst_origin = c.run.origin;
        }
    }
    s.mape = s.averaged > 0 ? sum / s.averaged : 0.0;
    return s;
}

void print_networks(const std::vector<NetworkCheck>& networks, bool markdown, std::ostream& out) {
    if (networks.empty()) return;
    Table table({"network", "instance", "nodes x GPUs", "message", "NCCL_ALGO", "algorithm", "measured busbw GB/s",
                 "predicted GB/s", "error"});
    double sum = 0;
    for (const NetworkCheck& c : networks) {
        const NetworkObservation& n = c.network;
        const int per_node = std::max(1, n.ranks / std::max(1, n.nodes));
        table.add_row({short_origin(n.origin), n.instance + (n.efa_adapters == 0 ? " (0 EFA)" : ""),
                       std::to_string(n.nodes) + " x " + std::to_string(per_node),
                       n.message_bytes > 0 ? format_number(n.message_bytes / (1024.0 * 1024.0), 0) + " MiB" : "plateau",
                       n.algorithm == Strategy::nccl ? "default" : std::string(to_string(n.algorithm)),
                       std::string(to_string(c.predicted.algorithm)), format_number(n.bus_bandwidth_GBps, 2),
                       format_number(c.predicted.bus_bandwidth_GBps, 2),
                       format_number(percent_error(c.predicted.bus_bandwidth_GBps, n.bus_bandwidth_GBps), 1) + " %"});
        sum += std::abs(percent_error(c.predicted.bus_bandwidth_GBps, n.bus_bandwidth_GBps));
    }
    markdown ? table.print_markdown(out) : table.print(out);
    out << (markdown ? "\n" : "") << "Networks: mean absolute percentage error "
        << format_number(sum / networks.size(), 2) << " % over " << networks.size() << " all-reduce measurements.\n";
}

/// `held_out`: how the predictions were held out ("Leave-one-out", "Leave-one-system-out",
/// "Two-run calibration"), empty for predictions by one calibration.
void print_tables(const std::vector<RunCheck>& runs, const std::vector<ComparisonCheck>& comparisons,
                  const std::string& held_out, bool markdown, std::ostream& out) {
    if (runs.empty()) return;
    Table table({"run", "configuration", "measured img/s", held_out.empty() ? "predicted img/s" : "held-out prediction",
                 "error", "95% band", "in band", "epoch s measured / predicted"});
    for (const RunCheck& c : runs) {
        const Prediction& p = c.predicted;
        std::string epoch = "-";
        if (c.run.epoch_s) epoch = format_number(*c.run.epoch_s, 1) + " / " + format_number(p.epoch_s, 1);
        table.add_row({short_origin(c.run.origin) + (c.run.approximate ? " (approx.)" : ""), describe(c.run.scenario),
                       format_grouped(c.run.throughput_images_per_s, 1), format_grouped(p.throughput_images_per_s, 1),
                       format_number(percent_error(p.throughput_images_per_s, c.run.throughput_images_per_s), 1) + " %",
                       format_grouped(p.interval.low, 0) + " - " + format_grouped(p.interval.high, 0),
                       in_band(c) ? "yes" : "no", epoch});
    }
    markdown ? table.print_markdown(out) : table.print(out);
    const Summary s = summarise(runs);
    out << (markdown ? "\n" : "")
        << (held_out.empty() ? "Mean absolute percentage error: " : held_out + " mean absolute percentage error: ")
        << format_number(s.mape, 2) << " % over " << s.averaged << " runs"
        << (s.averaged < static_cast<int>(runs.size()) ? " (approximate figures shown, not averaged)" : "") << "; "
        << (s.averaged > 0 ? "worst " + format_number(s.worst, 1) + " % (" + short_origin(s.worst_origin) + "); " : "")
        << s.in_band << " of " << runs.size() << " measurements inside the predicted 95% band.\n";
    if (comparisons.empty()) return;
    out << '\n';
    Table compared({"comparison", "quantity", "scenario", "baseline", "published", "predicted", "off by"});
    for (const ComparisonCheck& c : comparisons) {
        const Comparison& k = c.comparison;
        const std::string published = k.measured_low == k.measured_high ? format_number(k.measured_low, 3)
                                                                        : format_number(k.measured_low, 3) + " - " +
                                                                              format_number(k.measured_high, 3);
        compared.add_row({short_origin(k.origin), std::string(to_string(k.quantity)), describe(k.scenario),
                          describe(k.baseline), published, format_number(c.predicted, 3),
                          format_number(comparison_error(c), 1) + " %"});
    }
    markdown ? compared.print_markdown(out) : compared.print(out);
}

json checks_json(const std::vector<RunCheck>& runs, const std::vector<ComparisonCheck>& comparisons, bool held_out) {
    json out;
    out["held_out"] = held_out;
    out["runs"] = json::array();
    for (const RunCheck& c : runs) {
        const Prediction& p = c.predicted;
        json row = {{"origin", c.run.origin},
                    {"source", c.run.source},
                    {"configuration", describe(c.run.scenario)},
                    {"approximate", c.run.approximate},
                    {"measured_throughput_images_per_s", c.run.throughput_images_per_s},
                    {"predicted_throughput_images_per_s", p.throughput_images_per_s},
                    {"error_percent", percent_error(p.throughput_images_per_s, c.run.throughput_images_per_s)},
                    {"interval", {{"low", p.interval.low}, {"high", p.interval.high}}},
                    {"in_interval", in_band(c)},
                    {"predicted_epoch_s", p.epoch_s}};
        if (c.run.epoch_s) row["measured_epoch_s"] = *c.run.epoch_s;
        if (!c.held_out_group.empty()) row["held_out_group"] = c.held_out_group;
        out["runs"].push_back(row);
    }
    const Summary s = summarise(runs);
    out["mape_percent"] = s.mape;
    out["averaged_runs"] = s.averaged;
    out["inside_interval"] = s.in_band;
    out["worst_error_percent"] = s.worst;
    out["comparisons"] = json::array();
    for (const ComparisonCheck& c : comparisons) {
        out["comparisons"].push_back({{"origin", c.comparison.origin},
                                      {"quantity", to_string(c.comparison.quantity)},
                                      {"measured_low", c.comparison.measured_low},
                                      {"measured_high", c.comparison.measured_high},
                                      {"predicted", c.predicted},
                                      {"error_percent", comparison_error(c)}});
    }
    return out;
}

/// What validate found: the runs, comparisons and network measurements beside their predictions.
struct ValidateReport : Report {
    ValidateReport(const std::vector<RunCheck>& r, const std::vector<ComparisonCheck>& c,
                   const std::vector<NetworkCheck>& n, std::string h, int in_sample)
        : runs(r), comparisons(c), networks(n), held_out(std::move(h)), in_sample_runs(in_sample) {}

    void print_text(std::ostream& out, bool markdown) const override {
        print_tables(runs, comparisons, held_out, markdown, out);
        if (in_sample_runs > 0) {
            out << (markdown ? "\n" : "") << "In sample: " << in_sample_runs << " of the " << runs.size()
                << " runs are among those the calibration was fitted to (by file and index), so their error "
                   "measures the fit, not a prediction; --hold-out system predicts each system from a fit without "
                   "it.\n";
        }
        if (!networks.empty() && !runs.empty()) out << '\n';
        print_networks(networks, markdown, out);
    }

    void print_json(std::ostream& out) const override {
        json report = checks_json(runs, comparisons, !held_out.empty());
        report["in_sample_runs"] = in_sample_runs;
        report["networks"] = json::array();
        for (const NetworkCheck& c : networks) {
            report["networks"].push_back(
                {{"origin", c.network.origin},
                 {"instance", c.network.instance},
                 {"ranks", c.network.ranks},
                 {"nccl_algo", to_string(c.network.algorithm)},
                 {"algorithm", to_string(c.predicted.algorithm)},
                 {"measured_bus_bandwidth_GBps", c.network.bus_bandwidth_GBps},
                 {"predicted_bus_bandwidth_GBps", c.predicted.bus_bandwidth_GBps},
                 {"error_percent", percent_error(c.predicted.bus_bandwidth_GBps, c.network.bus_bandwidth_GBps)}});
        }
        print_json_document(report, out);
    }

    const std::vector<RunCheck>& runs;
    const std::vector<ComparisonCheck>& comparisons;
    const std::vector<NetworkCheck>& networks;
    std::string held_out;    ///< how the predictions were held out (print_tables); empty in-sample
    int in_sample_runs = 0;  ///< runs the calibration was fitted to (by-one-calibration checks only)
};

/// The runs among `fitted_from` (the calibration's "file#index"), matched by the file's name and
/// the index, so that a path given another way (absolute, from another folder) still matches.
int count_in_sample(const std::vector<RunCheck>& runs, const std::vector<std::string>& fitted_from) {
    auto key = [](const std::string& origin) {
        const std::size_t hash = origin.rfind('#');
        const std::string file = origin.substr(0, hash);
        return std::filesystem::path(file).filename().string() + (hash == std::string::npos ? "" : origin.substr(hash));
    };
    std::set<std::string> fitted;
    for (const std::string& origin : fitted_from) fitted.insert(key(origin));
    return static_cast<int>(std::count_if(runs.begin(), runs.end(),
                                          [&](const RunCheck& c) { return fitted.count(key(c.run.origin)) > 0; }));
}

void run_validate(const ValidateOptions& o, std::ostream& out) {
    const OutputFormat format = output_format(o.json_output, o.markdown);
    const Catalog catalog = load_catalog(o.catalogs);
    const Evidence evidence = load_evidence(o.traces, catalog);
    if (evidence.runs.empty() && evidence.comparisons.empty() && evidence.networks.empty()) {
        throw InputError("validate: the traces hold no run, comparison or network measurement to check");
    }

    std::vector<RunCheck> runs;
    std::vector<ComparisonCheck> comparisons;
    std::vector<NetworkCheck> networks;
    const bool held_out = o.leave_one_out || !o.hold_out.empty();
    int in_sample = 0;
    if (!held_out) {
        const CostModel model(catalog, load_calibration(o.calibration));
        for (const NetworkObservation& n : evidence.networks) networks.push_back(network_check(model, n));
        for (const Observation& run : evidence.runs) {
            try {
                runs.push_back({run, model.predict(run.scenario), {}});
            } catch (const InputError& error) {
                throw InputError(run.origin + ": " + error.what());
            }
        }
        for (const Comparison& c : evidence.comparisons) comparisons.push_back({c, predicted_ratio(model, c)});
        in_sample = count_in_sample(runs, model.calibration().fitted_from);
    } else {
        HoldOut mode = HoldOut::run;
        if (o.hold_out == "system") mode = HoldOut::system;
        else if (o.hold_out == "two-runs") mode = HoldOut::two_runs;
        else if (!o.hold_out.empty() && o.hold_out != "run") {
            throw InputError("--hold-out: unknown value '" + o.hold_out + "' (expected one of run, system, two-runs)");
        }
        if (o.leave_one_out && mode != HoldOut::run) throw InputError("validate: --leave-one-out is --hold-out run");
        const CostModel prior(catalog, load_calibration(o.prior));
        // Comparisons are held out of the per-run refits (they are checked against the full fit);
        // the per-system refits keep the comparisons of the other systems.
        const std::vector<HeldOutPrediction> predictions =
            held_out_predictions(prior, evidence.runs, evidence.networks,
                                 mode == HoldOut::run ? std::vector<Comparison>{} : evidence.comparisons, mode);
        for (std::size_t i = 0; i < evidence.runs.size(); ++i) {
            if (predictions[i].predicted && !predictions[i].calibration_run) {
                runs.push_back({evidence.runs[i], predictions[i].prediction, predictions[i].group});
            }
        }
        if (!evidence.comparisons.empty()) {
            const CalibrationFit fit = fit_calibration(prior, evidence.runs, evidence.networks);
            const CostModel model(prior, fit.calibration);
            for (const Comparison& c : evidence.comparisons) comparisons.push_back({c, predicted_ratio(model, c)});
        }
    }

    const std::string held_out_name = !held_out                  ? ""
                                      : o.hold_out == "system"   ? "Leave-one-system-out"
                                      : o.hold_out == "two-runs" ? "Two-run calibration"
                                                                 : "Leave-one-out";
    write_report(ValidateReport{runs, comparisons, networks, held_out_name, in_sample}, format, out);
}

}  // namespace

void register_validate(CLI::App& app, std::ostream& out) {
    auto options = std::make_shared<ValidateOptions>();
    CLI::App* cmd = app.add_subcommand(
        "validate",
        "Put every measured run beside its prediction: the error, the 95% band, the mean absolute percentage error. "
        "--leave-one-out predicts each run from a calibration fitted without it.");
    cmd->add_option("traces", options->traces, "Trace files (epochcast.trace/1); FILE#I takes run I only")->required();
    add_calibration_option(*cmd, options->calibration);
    cmd->add_flag("--leave-one-out", options->leave_one_out,
                  "Refit without each run in turn (from --prior) and report that held-out error");
    cmd->add_option(
        "--hold-out", options->hold_out,
        "run (as --leave-one-out), system (each system's runs predicted by a fit to the other systems: one "
        "never seen) or two-runs (each system of 3+ runs calibrated from its two smallest on top of the other "
        "systems' fit, predicting the rest); a system is an instance, framework, precision and stack, and under "
        "two-runs also the run's campaign (trace key \"campaign\", else its file)");
    add_calibration_option(*cmd, options->prior, "--prior",
                           "With --leave-one-out or --hold-out, what each refit starts from");
    add_catalog_option(*cmd, options->catalogs);
    add_json_flag(*cmd, options->json_output, "one JSON object");
    cmd->add_flag("--markdown", options->markdown, "Print the tables as Markdown (docs/validation.md)");
    cmd->callback([options, &out] { run_validate(*options, out); });
}

}  // namespace epochcast::cli
