// `epochcast predict`: one scenario from flags (docs/cli.md, "predict"), or, with no scenario flag,
// the embedded default: seed 000's cluster of 8 x p3.16xlarge under both of its set-ups.
#include <CLI/CLI.hpp>

#include <memory>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/report.hpp"
#include "model/text_io.hpp"
#include "model/types.hpp"

namespace epochcast::cli {
namespace {

struct PredictOptions {
    ScenarioFlags flags;
    std::vector<std::string> catalogs;
    std::string calibration;
    bool json = false;
};

/// Seed 000's two set-ups on 8 x p3.16xlarge (64 V100, batch 256 per GPU, mixed precision):
/// MXNet with 16 m4.16xlarge parameter servers (2 per worker node), and TensorFlow + Horovod.
std::vector<Scenario> seed_cluster() {
    Scenario mxnet;
    mxnet.framework = Framework::mxnet;
    mxnet.strategy = Strategy::ps;
    mxnet.ps_instance = "m4.16xlarge";
    mxnet.ps_nodes = 16;
    Scenario horovod;
    horovod.framework = Framework::tensorflow;
    horovod.strategy = Strategy::ring;
    return {mxnet, horovod};
}

void run_predict(PredictOptions& o, std::ostream& out) {
    Catalog catalog = load_catalog(o.catalogs);
    Calibration calibration = o.calibration.empty() ? Calibration::built_in() : Calibration::load(o.calibration);
    const CostModel model(std::move(catalog), std::move(calibration));

    const bool any_scenario_flag = o.flags.any_given();
    std::vector<Scenario> scenarios;
    if (any_scenario_flag) {
        scenarios.push_back(o.flags.to_scenario());
    } else {
        scenarios = seed_cluster();
        for (Scenario& s : scenarios) s.pricing = parse_pricing(o.flags.pricing, "--pricing");
    }

    std::vector<ScenarioResult> results;
    for (const Scenario& s : scenarios) {
        const ResolvedScenario resolved = model.resolve(s);
        results.push_back({s, model.checked_predict(resolved), resolved.curve_origin});
    }

    if (o.json) {
        if (any_scenario_flag) {
            out << prediction_json(results.front()).dump(2) << '\n';
        } else {
            nlohmann::json all = nlohmann::json::array();
            for (const ScenarioResult& r : results) all.push_back(prediction_json(r));
            out << all.dump(2) << '\n';
        }
        return;
    }
    if (!any_scenario_flag) {
        out << "Seed 000's cluster, 8 x p3.16xlarge (64 V100), ResNet-50 on ImageNet, batch 256 per GPU, mixed "
               "precision:\n\n";
    }
    print_prediction_table(results, model.catalog(), out);
    for (const ScenarioResult& r : results) {
        const Prediction& p = r.prediction;
        if (p.global_batch_beyond_published) {
            out << "\nnote: a global batch of " << format_count(p.global_batch) << " is beyond every published recipe for "
                << r.scenario.model << " (the largest: " << format_count(model.convergence().largest_published_batch(r.scenario.model))
                << "): no published run says what accuracy it reaches.\n";
            break;
        }
    }
    for (const ScenarioResult& r : results) {
        if (r.prediction.epochs_basis == EpochsBasis::extrapolated) {
            const Recipe& recipe = model.convergence().recipes[static_cast<std::size_t>(r.prediction.epochs_recipe)];
            out << "\nnote: the epochs are extrapolated past " << recipe.name << "'s largest published global batch ("
                << format_count(recipe.largest_batch()) << ") by the noise-scale law (docs/model.md, eq. K2), hence their "
                << "wider band.\n";
            break;
        }
    }
    for (const ScenarioResult& r : results) {
        if (r.curve_origin != CurveOrigin::measured) {
            out << "\nnote: no measured compute curve for " << model.catalog().instance(r.scenario.instance).gpu << " / "
                << to_string(r.scenario.precision) << " / " << to_string(r.scenario.framework)
                << (r.curve_origin == CurveOrigin::roofline ? "; the roofline prior is used"
                    : r.curve_origin == CurveOrigin::other_framework
                        ? "; another framework's curve on the same GPU stands in (docs/model.md, eq. C4)"
                    : r.curve_origin == CurveOrigin::other_gpus
                        ? "; this framework's curves on other GPUs, carried by their roofline times, stand in (eq. C5)"
                        : "; another framework's curve on the same GPU and this framework's curves on other GPUs "
                          "stand in, pooled (eqs. C4-C6)")
                << ", hence the wider band.\n";
            break;
        }
    }
}

}  // namespace

void register_predict(CLI::App& app, std::ostream& out) {
    auto options = std::make_shared<PredictOptions>();
    CLI::App* cmd = app.add_subcommand(
        "predict",
        "Predict throughput, epoch time, time to train and cost of one configuration. With no scenario flag, "
        "predicts the embedded default: seed 000's 8 x p3.16xlarge cluster with MXNet + 16 m4.16xlarge parameter "
        "servers beside TensorFlow + Horovod ring all-reduce.");
    add_scenario_flags(*cmd, options->flags);
    cmd->add_option("--catalog", options->catalogs, "Extra catalog file (epochcast.catalog/1); repeatable");
    cmd->add_option("--calibration", options->calibration, "Calibration file (epochcast.calibration/1)");
    cmd->add_flag("--json", options->json, "Print one JSON object instead of the table");
    cmd->callback([options, &out] { run_predict(*options, out); });
}

}  // namespace epochcast::cli
