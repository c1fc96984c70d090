// `epochcast predict`: one scenario from flags (DESIGN.md contract), or, with no scenario flag,
// the embedded default: seed 000's cluster of 8 x p3.16xlarge under both of its set-ups.
#include <CLI/CLI.hpp>

#include <memory>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/report.hpp"
#include "model/types.hpp"

namespace epochcast::cli {
namespace {

struct PredictOptions {
    Scenario scenario;
    std::string precision = "amp";
    std::string strategy;  // empty: hierarchical for multi-GPU nodes, ring for one GPU per node
    std::string framework = "tensorflow";
    std::string pricing = "on-demand";
    std::vector<std::string> catalogs;
    std::string calibration;
    bool json = false;
    std::vector<CLI::Option*> scenario_options;
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

    bool any_scenario_flag = false;
    for (const CLI::Option* option : o.scenario_options) any_scenario_flag |= option->count() > 0;

    std::vector<Scenario> scenarios;
    if (any_scenario_flag) {
        Scenario s = o.scenario;
        s.precision = parse_precision(o.precision, "--precision");
        s.framework = parse_framework(o.framework, "--framework");
        s.pricing = parse_pricing(o.pricing, "--pricing");
        if (o.strategy.empty()) {
            const InstanceSpec& instance = model.catalog().instance(s.instance);
            const int gpus = s.gpus_per_node > 0 ? s.gpus_per_node : instance.gpus;
            s.strategy = gpus > 1 ? Strategy::hierarchical : Strategy::ring;
        } else {
            s.strategy = parse_strategy(o.strategy, "--strategy");
        }
        scenarios.push_back(s);
    } else {
        scenarios = seed_cluster();
        for (Scenario& s : scenarios) s.pricing = parse_pricing(o.pricing, "--pricing");
    }

    std::vector<ScenarioResult> results;
    for (const Scenario& s : scenarios) {
        const ResolvedScenario resolved = model.resolve(s);
        results.push_back({s, model.predict(resolved), resolved.measured_curve, resolved.borrowed_curve});
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
        if (!r.measured_curve) {
            out << "\nnote: no measured compute curve for " << model.catalog().instance(r.scenario.instance).gpu << " / "
                << to_string(r.scenario.precision) << " / " << to_string(r.scenario.framework)
                << (r.borrowed_curve ? "; another framework's curve on the same GPU stands in, hence the wider band.\n"
                                     : "; the roofline prior is used, hence the wide band.\n");
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
    Scenario& s = options->scenario;
    auto& scen = options->scenario_options;
    scen.push_back(cmd->add_option("--instance", s.instance, "Worker instance type (see `epochcast catalog`)"));
    scen.push_back(cmd->add_option("--nodes", s.nodes, "Worker instances"));
    scen.push_back(cmd->add_option("--gpus-per-node", s.gpus_per_node, "GPUs used per instance (default: all)"));
    scen.push_back(cmd->add_option("--batch-per-gpu", s.batch_per_gpu, "Images per GPU per iteration"));
    scen.push_back(cmd->add_option("--precision", options->precision, "fp32, amp (fp16 mixed precision) or bf16"));
    scen.push_back(cmd->add_option("--strategy", options->strategy,
                                   "ring, hierarchical, tree or ps (default: hierarchical on multi-GPU nodes)"));
    scen.push_back(cmd->add_option("--framework", options->framework, "mxnet, tensorflow or pytorch"));
    scen.push_back(cmd->add_option("--ps-instance", s.ps_instance, "Parameter-server instance type (--strategy ps)"));
    scen.push_back(cmd->add_option("--ps-nodes", s.ps_nodes, "Parameter-server instances (--strategy ps)"));
    scen.push_back(cmd->add_flag("--ps-colocated", s.ps_colocated, "One server on each worker node (--strategy ps)"));
    scen.push_back(cmd->add_option("--efa-adapters", s.efa_adapters,
                                   "EFA adapters used per node (default: all the instance has; 0: TCP sockets)"));
    scen.push_back(cmd->add_option("--model", s.model, "resnet18, resnet34, resnet50, resnet101 or resnet152"));
    scen.push_back(cmd->add_option("--image-size", s.image_size, "Input side in pixels"));
    scen.push_back(cmd->add_option("--classes", s.classes, "Classifier outputs"));
    scen.push_back(cmd->add_option("--dataset-images", s.dataset_images, "Images per epoch (default: ImageNet-1k, 1281167)"));
    scen.push_back(cmd->add_option("--epochs", s.epochs, "Epochs to train"));
    cmd->add_option("--pricing", options->pricing, "on-demand or spot");
    cmd->add_option("--catalog", options->catalogs, "Extra catalog file (epochcast.catalog/1); repeatable");
    cmd->add_option("--calibration", options->calibration, "Calibration file (epochcast.calibration/1)");
    cmd->add_flag("--json", options->json, "Print one JSON object instead of the table");
    cmd->callback([options, &out] { run_predict(*options, out); });
}

}  // namespace epochcast::cli
