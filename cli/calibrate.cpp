// `epochcast calibrate TRACE.json... [--prior P] [--catalog F] -o CAL.json`: fit the model's
// parameters to measured runs and network measurements (model/fit.hpp) and write the calibration
// that `--calibration` reads, with the fitted parameters' covariance.
#include <CLI/CLI.hpp>

#include <cmath>
#include <memory>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/output.hpp"
#include "cli/table.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/fit.hpp"
#include "model/parameters.hpp"
#include "model/text_io.hpp"

namespace epochcast::cli {
namespace {

struct CalibrateOptions {
    std::vector<std::string> traces;
    std::vector<std::string> catalogs;
    std::string prior = "built-in";
    std::string output;
};

/// A coordinate's 1-sigma as a relative band on the value (log: e^sigma - 1; logit: (1-x) sigma).
double relative_band(const std::string& name, double value, double sigma) {
    const bool fraction = name.ends_with("overlap") || name.ends_with("efficiency");
    if (fraction) return std::min(1.0, std::abs(1.0 - value) * sigma);
    return std::expm1(sigma);
}

void run_calibrate(const CalibrateOptions& o, std::ostream& out) {
    std::vector<std::string> inputs = o.catalogs;
    for (const std::string& trace : o.traces) inputs.push_back(trace_file(trace));
    inputs.push_back(calibration_file(o.prior));
    check_outputs({{"-o", o.output}}, inputs);
    const Catalog catalog = load_catalog(o.catalogs);
    const Evidence evidence = load_evidence(o.traces, catalog);
    const CostModel prior(catalog, load_calibration(o.prior));
    const CalibrationFit fit = fit_calibration(prior, evidence.runs, evidence.networks, evidence.comparisons);
    // Never a file the reader refuses: such runs are bad input, and nothing is written.
    write_text_file_atomically(o.output, calibration_file_text(fit), "calibration");
    if (!fit.contradiction.empty()) out << "note: " << fit.contradiction << ".\n\n";

    out << "Fitted " << fit.parameters.size() << " parameters to " << evidence.runs.size() << " runs, "
        << evidence.networks.size() << " network measurements and " << evidence.comparisons.size()
        << " published comparisons (Levenberg-Marquardt, " << fit.iterations << " iterations"
        << (fit.converged ? "" : ", NOT converged") << "); the data pinned down "
        << format_number(fit.effective_parameters, 1) << " of them.\n\n";
    Table parameters({"parameter", "prior", "fitted", "1-sigma before", "1-sigma after"});
    for (const FittedParameter& p : fit.parameters) {
        parameters.add_row({p.name, format_number(p.prior_value, 6), format_number(p.value, 6),
                            format_number(100.0 * relative_band(p.name, p.prior_value, p.prior_sigma), 1) + " %",
                            format_number(100.0 * relative_band(p.name, p.value, p.sigma), 1) + " %"});
    }
    parameters.print(out);
    out << '\n';
    Table residuals({"run", "quantity", "measured", "fitted", "error"});
    for (const FitResidual& r : fit.residuals) {
        residuals.add_row({r.origin, r.quantity, format_number(r.measured, 3), format_number(r.predicted, 3),
                           format_number(percent_error(r.predicted, r.measured), 1) + " %"});
    }
    residuals.print(out);
    out << "\nscatter of the runs around the fit (model sigma): " << format_number(100.0 * fit.model_sigma, 1)
        << " %\nwrote " << o.output << '\n';
    check_written_after(out, o.output);
}

}  // namespace

void register_calibrate(CLI::App& app, std::ostream& out) {
    auto options = std::make_shared<CalibrateOptions>();
    CLI::App* cmd = app.add_subcommand(
        "calibrate",
        "Fit the model's parameters (compute curves, framework overheads, network efficiencies) to measured runs "
        "and write a calibration file with their uncertainty. Two runs of a system (e.g. 1 and 8 GPUs) are enough.");
    cmd->add_option("traces", options->traces, "Trace files (epochcast.trace/1); FILE#I takes run I only")->required();
    cmd->add_option("-o,--output", options->output, "Calibration file to write")->required();
    add_calibration_option(*cmd, options->prior, "--prior", "What to start from");
    add_catalog_option(*cmd, options->catalogs);
    cmd->callback([options, &out] { run_calibrate(*options, out); });
}

}  // namespace epochcast::cli
