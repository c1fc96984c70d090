// `epochcast predict`: one scenario from flags (docs/cli.md, "predict"), or, with no scenario flag,
// today's default beside seed 000's cluster of 8 x p3.16xlarge under both of its set-ups.
#include <CLI/CLI.hpp>

#include <memory>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/report.hpp"
#include "model/errors.hpp"
#include "model/text_io.hpp"
#include "model/types.hpp"

namespace epochcast::cli {
namespace {

struct PredictOptions {
    ScenarioFlags flags;
    std::vector<std::string> catalogs;
    std::string calibration = "built-in";
    bool json = false;
};

/// Seed 000's two set-ups on 8 x p3.16xlarge (64 V100, batch 256 per GPU, mixed precision):
/// MXNet with 16 m4.16xlarge parameter servers (2 per worker node), and TensorFlow + Horovod.
std::vector<Scenario> seed_cluster_setups() {
    Scenario seed;
    seed.instance = "p3.16xlarge";
    seed.nodes = 8;
    Scenario mxnet = seed;
    mxnet.framework = Framework::mxnet;
    mxnet.strategy = Strategy::ps;
    mxnet.ps_instance = "m4.16xlarge";
    mxnet.ps_nodes = 16;
    Scenario horovod = seed;
    horovod.framework = Framework::tensorflow;
    horovod.strategy = Strategy::ring;
    return {mxnet, horovod};
}

/// predict's answer: one configuration, or the default's two set-ups.
class PredictReport : public Report {
public:
    PredictReport(const CostModel& model, std::vector<ScenarioResult> results, bool seed_cluster)
        : model_(model), results_(std::move(results)), seed_cluster_(seed_cluster) {}

    /// One object for a configuration; the default's three as a list of three.
    void print_json(std::ostream& out) const override {
        if (!seed_cluster_) return print_json_document(prediction_json(results_.front()), out);
        nlohmann::json all = nlohmann::json::array();
        for (const ScenarioResult& r : results_) all.push_back(prediction_json(r));
        print_json_document(all, out);
    }

    void print_text(std::ostream& out, bool) const override {
        if (seed_cluster_) {
            out << "ResNet-50 on ImageNet, batch 256 per GPU, mixed precision: today's default, PyTorch on 1 x "
                   "p5.48xlarge (8 H100), beside seed 000's cluster, 8 x p3.16xlarge (64 V100), under its two set-ups"
                << (results_.back().scenario.stack == SoftwareStack::legacy ? " on the 2018 software the seeds ran"
                                                                            : " on today's tuned software")
                << ":\n\n";
        }
        print_prediction_table(results_, model_.catalog(), out);
        print_notes(out);
    }

private:
    /// What the table cannot say: each note once, for the first configuration it applies to.
    void print_notes(std::ostream& out) const {
        for (const ScenarioResult& r : results_) {
            const Prediction& p = r.prediction;
            if (p.global_batch_beyond_published) {
                out << "\nnote: a global batch of " << format_count(p.global_batch)
                    << " is beyond every published recipe for " << r.scenario.model
                    << " (the largest: " << format_count(model_.convergence().largest_published_batch(r.scenario.model))
                    << "): no published run says what accuracy it reaches.\n";
                break;
            }
        }
        for (const ScenarioResult& r : results_) {
            if (r.prediction.epochs_basis == EpochsBasis::extrapolated) {
                const Recipe& recipe =
                    model_.convergence().recipes[static_cast<std::size_t>(r.prediction.epochs_recipe)];
                out << "\nnote: the epochs are extrapolated past " << recipe.name
                    << "'s largest published global batch (" << format_count(recipe.largest_batch())
                    << ") by the noise-scale law (docs/model.md, eq. K2), hence their wider band.\n";
                break;
            }
        }
        for (const ScenarioResult& r : results_) {
            if (r.prediction.bottleneck != Bottleneck::data || r.prediction.loader == Loader::dali) continue;
            // What decoding on the GPU would give: the same scenario with DALI.
            Scenario dali = r.scenario;
            dali.loader = Loader::dali;
            out << "\nnote: the input pipeline bounds " << (results_.size() > 1 ? "a configuration" : "this run")
                << ": " << to_string(r.prediction.loader) << " decoding feeds each GPU "
                << format_count(r.scenario.batch_per_gpu > 0 ? r.prediction.per_gpu_images_per_s : 0.0)
                << " images/s (docs/model.md, eq. D1)";
            try {
                out << "; with --loader dali (decoding on the GPU) it would train at "
                    << format_count(model_.checked_predict(dali).throughput_images_per_s) << " images/s";
            } catch (const InputError&) {
            }
            out << ".\n";
            break;
        }
        for (const ScenarioResult& r : results_) {
            if (r.curve_origin != CurveOrigin::measured) {
                out << "\nnote: "
                    << curve_origin_note(model_.catalog().instance(r.scenario.instance).gpu, r.scenario, r.curve_origin)
                    << "\n";
                break;
            }
        }
    }

    const CostModel& model_;
    std::vector<ScenarioResult> results_;
    bool seed_cluster_;
};

void run_predict(const PredictOptions& o, std::ostream& out) {
    const CostModel model(load_catalog(o.catalogs), load_calibration(o.calibration));

    // No scenario flag: today's default beside the seeds' two set-ups, --pricing applied to all
    // three and --stack to the seeds'.
    const bool seed_cluster = !o.flags.any_given();
    std::vector<Scenario> scenarios;
    if (seed_cluster) {
        scenarios.push_back(Scenario{});
        for (Scenario& s : seed_cluster_setups()) {
            s.stack = parse_software_stack(o.flags.stack, "--stack");
            scenarios.push_back(s);
        }
        for (Scenario& s : scenarios) s.pricing = parse_pricing(o.flags.pricing, "--pricing");
    } else {
        scenarios.push_back(o.flags.to_scenario());
    }

    std::vector<ScenarioResult> results;
    for (const Scenario& s : scenarios) {
        const ResolvedScenario resolved = model.resolve(s);
        results.push_back({s, model.checked_predict(resolved), resolved.curve_origin});
    }
    write_report(PredictReport(model, std::move(results), seed_cluster), output_format(o.json), out);
}

}  // namespace

void register_predict(CLI::App& app, std::ostream& out) {
    auto options = std::make_shared<PredictOptions>();
    CLI::App* cmd = app.add_subcommand(
        "predict",
        "Predict throughput, epoch time, time to train and cost of one configuration. With no scenario flag, "
        "predicts today's default (PyTorch on 1 x p5.48xlarge, mixed precision) beside seed 000's 8 x p3.16xlarge "
        "cluster with MXNet + 16 m4.16xlarge parameter servers and with TensorFlow + Horovod ring all-reduce "
        "(--pricing applies to all three, --stack to the seed's two).");
    add_scenario_flags(*cmd, options->flags);
    add_catalog_option(*cmd, options->catalogs);
    add_calibration_option(*cmd, options->calibration);
    add_json_flag(*cmd, options->json, "one JSON object per configuration (a list of three with no scenario flag)");
    cmd->callback([options, &out] { run_predict(*options, out); });
}

}  // namespace epochcast::cli
