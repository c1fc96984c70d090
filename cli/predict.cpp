// `epochcast predict`: one scenario from flags (docs/cli.md, "predict"), or, with no scenario flag,
// today's default beside seed 000's cluster of 8 x p3.16xlarge under both of its set-ups.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/job_files.hpp"
#include "cli/output.hpp"
#include "cli/report.hpp"
#include "cli/table.hpp"
#include "model/errors.hpp"
#include "model/iteration.hpp"
#include "model/scenario_file.hpp"
#include "model/spot.hpp"
#include "model/text_io.hpp"
#include "model/types.hpp"

namespace epochcast::cli {
namespace {

struct PredictOptions {
    ScenarioFlags flags;
    SpotFlags spot;
    bool elastic_spot = false;
    std::string deadline;
    std::vector<std::string> catalogs;
    std::string calibration = "built-in";
    bool json = false;
    EmitFlags emit;
    std::string scenario_file;  ///< --scenario: the configurations, instead of the scenario flags
    std::string save_scenario;  ///< --save-scenario: where to write the configurations predicted
    /// The flags a scenario file replaces (scenario, spot and run-cost flags): none may come with --scenario.
    std::vector<const CLI::Option*> configuration_flags;
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
    PredictReport(const CostModel& model, std::vector<ScenarioResult> results, bool seed_cluster,
                  std::optional<double> deadline_s)
        : model_(model), results_(std::move(results)), seed_cluster_(seed_cluster), deadline_s_(deadline_s) {}

    /// One object for a configuration; the default's three as a list of three.
    void print_json(std::ostream& out) const override {
        if (results_.size() == 1) return print_json_document(one_json(results_.front()), out);
        nlohmann::json all = nlohmann::json::array();
        for (const ScenarioResult& r : results_) all.push_back(one_json(r));
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
        print_prediction_table(results_, model_, out);
        for (const ScenarioResult& r : results_) print_spot(r, out);
        print_notes(out);
    }

private:
    /// The probability that the run is done by --deadline (eq. X6 on spot; on another pricing 1 or
    /// 0 by the point prediction).
    double finish_probability(const Prediction& p) const {
        if (!p.spot.modelled) return p.time_to_train_s <= *deadline_s_ ? 1.0 : 0.0;
        const SpotRun& x = p.spot;
        return spot_finish_probability(x.checkpointed_work_s, x.cluster_interruptions_per_hour / 3600.0,
                                       x.loss_per_interruption_s, *deadline_s_ - p.startup_s);
    }

    nlohmann::json one_json(const ScenarioResult& r) const {
        nlohmann::json j = prediction_json(r);
        if (deadline_s_) {
            j["deadline"] = {{"deadline_s", *deadline_s_}, {"finish_probability", finish_probability(r.prediction)}};
        }
        return j;
    }

    /// What the spot figures rest on (the price's kind, date and share of on-demand, the rate's source)
    /// and that capacity is not modelled.
    void print_spot_inputs(const ScenarioResult& r, std::ostream& out) const {
        if (const std::string inputs = spot_inputs_text(model_.catalog(), r.scenario, today()); !inputs.empty()) {
            out << "  spot inputs: " << inputs << "\n";
        }
        out << "  spot capacity: " << kSpotAvailabilityNote << "\n";
    }

    /// A spot run's interruptions, under the table (docs/model.md, "Spot interruptions").
    void print_spot(const ScenarioResult& r, std::ostream& out) const {
        if (r.scenario.pricing != Pricing::spot) return;
        const Prediction& p = r.prediction;
        const std::string who = results_.size() > 1 ? " (" + std::string(to_string(r.scenario.framework)) + ")" : "";
        if (!p.spot.modelled) {
            out << "\nspot" << who << ": no interruption rate is known for " << r.scenario.instance
                << " (the catalog gives no frequency band): priced at the spot rate without interruptions; give "
                   "--spot-interruptions-per-node-hour.\n";
            print_spot_inputs(r, out);
            return;
        }
        const SpotRun& x = p.spot;
        out << "\nspot" << (x.elastic_priced ? ", elastic" : "") << who << ": "
            << format_number(x.cluster_interruptions_per_hour, 3) << " interruptions an hour over the cluster ("
            << format_number(x.interruptions_per_node_hour, 6) << " per node-hour); expected "
            << format_number(x.expected_interruptions, 3) << " interruptions, "
            << format_duration(x.expected_lost_work_s) << " of work lost and " << format_duration(x.expected_downtime_s)
            << (x.elastic_priced ? " restarting, twice each (without the lost node, then with its replacement) ("
                                 : " restarting and waiting for nodes (")
            << format_duration(x.loss_per_interruption_s) << " each)\n  checkpoint every "
            << format_duration(x.checkpoint_interval_s) << " of work (" << format_duration(x.checkpoint_write_s)
            << " to write)";
        if (x.recommended_checkpoint_interval_s > 0) {
            out << "; recommended: every " << format_duration(x.recommended_checkpoint_interval_s)
                << " (Young's interval)";
        }
        out << "\n  expected time " << format_duration(p.time_to_train_s) << " ("
            << format_duration(p.time_to_train_interval.low) << " - " << format_duration(p.time_to_train_interval.high)
            << "), cost " << format_cost(p.cost_usd, p.priced);
        if (p.priced) {
            out << " (" << format_dollars(p.cost_interval.low) << " - " << format_dollars(p.cost_interval.high) << ")";
        }
        out << "; never interrupted: " << format_duration(x.uninterrupted_time_s) << "\n";
        if (x.elastic) out << "  " << elastic_spot_text(p) << "\n";
        print_spot_inputs(r, out);
        if (deadline_s_) {
            out << "  probability to finish by the deadline of " << format_duration(*deadline_s_) << ": "
                << format_chance(finish_probability(p)) << "\n";
        }
    }

    /// "; LEAD would train at N images/s": the model's throughput for `alternative`, what a note
    /// offers instead; nothing where the model refuses it (predicted before anything is written, so
    /// that a refusal leaves no half sentence).
    void print_alternative(std::ostream& out, const Scenario& alternative, const char* lead) const {
        double images_per_s = 0;
        try {
            images_per_s = model_.checked_predict(alternative).throughput_images_per_s;
        } catch (const InputError&) {
            return;
        }
        out << "; " << lead << " would train at " << format_count(images_per_s) << " images/s";
    }

    /// What the table cannot say: each note once, for the first configuration it applies to.
    void print_notes(std::ostream& out) const {
        // A price read long ago (issue 58, item 7), once per instance and pricing.
        std::set<std::string> stale;
        for (const ScenarioResult& r : results_) {
            const std::string text = stale_price_text(model_.catalog(), r.scenario, today());
            if (!text.empty() && stale.insert(text).second) out << "\nnote: " << text << ".\n";
        }
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
            const Prediction& p = r.prediction;
            if (p.host_vcpus_short) {
                out << "\nnote: " << r.scenario.instance << " has " << shortest(p.host_vcpus_per_gpu)
                    << " vCPUs per GPU; the " << to_string(p.loader) << " loader needs "
                    << host_vcpus_per_gpu_needed(p.loader)
                    << " beside each GPU's training process (docs/model.md, eq. D3), so this run is unlikely to "
                       "keep its GPUs fed as predicted; plan leaves such clusters out.\n";
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
            if (r.prediction.bottleneck != Bottleneck::data || r.prediction.loader != Loader::dali) continue;
            // DALI's decoders bound it (eq. D2): what the GPUs would do with nothing to decode.
            Scenario unbound = r.scenario;
            unbound.loader = Loader::synthetic;
            const GpuSpec& gpu = model_.catalog().gpu(model_.catalog().instance(r.scenario.instance).gpu);
            out << "\nnote: DALI's decoding on the GPU bounds "
                << (results_.size() > 1 ? "a configuration" : "this run") << ": it feeds each " << gpu.name << " "
                << format_count(r.prediction.per_gpu_images_per_s) << " images/s, "
                << (gpu.jpeg_decoder_cores > 0
                        ? "from its " + std::to_string(gpu.jpeg_decoder_cores) +
                              " hardware JPEG decoder cores and nvJPEG's CUDA path"
                        : std::string("from nvJPEG's CUDA path alone (no hardware JPEG decoder)"))
                << " (docs/model.md, eqs. D1, D2)";
            print_alternative(out, unbound, "with nothing to decode (--loader synthetic) the GPUs");
            out << ".\n";
            break;
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
            print_alternative(out, dali, "with --loader dali (decoding on the GPU) it");
            out << ".\n";
            break;
        }
        for (const ScenarioResult& r : results_) {
            const Prediction& p = r.prediction;
            const bool first_epochs_only = cold_first_epoch(p);
            if (p.bottleneck != Bottleneck::storage && !first_epochs_only) continue;
            // The store bounds the input pipeline (eq. F3): what the images on each node's NVMe would give.
            Scenario local = r.scenario;
            local.storage = Store::local_nvme;
            local.storage_tib = local.storage_tier_MBps_per_TiB = 0;
            out << "\nnote: the store bounds " << (results_.size() > 1 ? "a configuration" : "this run");
            if (first_epochs_only) {
                out << (p.store_bound_epochs > 1 ? " in its first " + format_number(p.store_bound_epochs, 1) + " epochs"
                                                 : std::string(" in its first epoch"));
            }
            out << ": " << to_string(p.storage) << " delivers " << format_number(p.storage_read_GBps, 3)
                << " GB/s to the cluster, whose GPUs and loaders would read " << format_number(p.demanded_read_GBps, 3)
                << " GB/s (docs/model.md, eqs. F1-F3)";
            if (first_epochs_only) {
                out << "; the first epoch trains at " << format_count(p.first_epoch_images_per_s)
                    << " images/s, and once each node's page cache holds "
                    << format_number(100 * p.page_cache_hit_fraction, 1) << "% of the images it reads, at "
                    << format_count(p.throughput_images_per_s) << " (eqs. F7, F8)";
            }
            print_alternative(out, local, "with the images staged to each node's NVMe (--storage local-nvme) it");
            out << ".\n";
            break;
        }
        for (const ScenarioResult& r : results_) {
            if (r.scenario.compiled) {
                out << "\nnote: " << compiled_note() << "\n";
                break;
            }
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
    std::optional<double> deadline_s_;
};

void run_predict(const PredictOptions& o, std::ostream& out) {
    std::optional<double> deadline_s;
    if (!o.deadline.empty()) deadline_s = parse_duration_s(o.deadline, "--deadline");
    std::vector<std::string> inputs = o.catalogs;
    inputs.push_back(calibration_file(o.calibration));
    const bool from_file = !o.scenario_file.empty();
    if (from_file) {
        inputs.push_back(o.scenario_file);
        for (const CLI::Option* flag : o.configuration_flags) {
            if (flag->count() > 0) {
                throw InputError(flag->get_name() + ": the configuration comes from --scenario " + o.scenario_file +
                                 " (give it there, or leave --scenario out)");
            }
        }
    }
    check_emit_flags(o.emit, inputs);
    if (!o.save_scenario.empty()) check_outputs({{"--save-scenario", o.save_scenario}}, inputs);
    if (!o.emit.format.empty() && !from_file && !o.flags.any_given()) {
        throw InputError("--emit: a launch file is for one configuration: name it (--instance, --nodes, ...)");
    }
    const CostModel model(load_catalog(o.catalogs), load_calibration(o.calibration));

    // No scenario flag: today's default beside the seeds' two set-ups, --pricing applied to all
    // three and --stack to the seeds'.
    const bool seed_cluster = !from_file && !o.flags.any_given();
    std::vector<Scenario> scenarios;
    std::vector<NamedScenario> named;  // the file's, names kept for --save-scenario
    if (from_file) {
        named = read_scenario_file(o.scenario_file, model.catalog());
        for (const NamedScenario& n : named) scenarios.push_back(n.scenario);
        if (!o.emit.format.empty() && scenarios.size() > 1) {
            throw InputError("--emit: a launch file is for one configuration; " + o.scenario_file + " holds " +
                             std::to_string(scenarios.size()));
        }
    } else if (seed_cluster) {
        scenarios.push_back(Scenario{});
        for (Scenario& s : seed_cluster_setups()) {
            s.stack = parse_software_stack(o.flags.stack, "--stack");
            scenarios.push_back(s);
        }
        for (Scenario& s : scenarios) s.pricing = parse_pricing(o.flags.pricing, "--pricing");
    } else {
        scenarios.push_back(o.flags.to_scenario());
    }
    if (!from_file) {
        for (Scenario& s : scenarios) {
            o.spot.apply(s);
            s.spot_elastic = o.elastic_spot;
        }
    }

    std::vector<ScenarioResult> results;
    for (const Scenario& s : scenarios) {
        const ResolvedScenario resolved = model.resolve(s);
        results.push_back({s, model.checked_predict(resolved), resolved.curve_origin});
        write_job_file(o.emit, model, s, resolved, results.back().prediction, o.catalogs);
    }
    if (!o.save_scenario.empty()) {
        if (!from_file) {
            for (const Scenario& s : scenarios) named.push_back({"", s});
        }
        write_text_file_atomically(o.save_scenario, scenario_file_json(named), "scenario file");
    }
    write_report(PredictReport(model, std::move(results), seed_cluster, deadline_s), output_format(o.json), out);
    if (!o.emit.format.empty() && !o.json) {
        out << "\nlaunch file (" << o.emit.format << "): " << o.emit.output << "\n";
        check_written(out);
    }
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
    add_spot_flags(*cmd, options->spot);
    cmd->add_flag("--elastic-spot", options->elastic_spot,
                  "With --pricing spot: price the run elastic, going on without a lost node until its replacement "
                  "joins (seed 003's dynamic training; docs/model.md, eq. X7); 2 nodes or more, no dedicated servers");
    cmd->add_option("--deadline", options->deadline,
                    "Say the probability that the run is done by then, e.g. 12h or 1d6h (with --pricing spot, from the "
                    "interruptions; docs/model.md, eq. X6)");
    add_catalog_option(*cmd, options->catalogs);
    add_calibration_option(*cmd, options->calibration);
    add_json_flag(*cmd, options->json,
                  "one JSON object per configuration (a list of three with no scenario flag, or of a --scenario "
                  "file's several)");
    add_emit_flags(*cmd, options->emit);
    // Every flag so far but these describes the configuration: a scenario file replaces them all.
    for (const CLI::Option* option : cmd->get_options()) {
        static const std::vector<std::string> kept = {"--help", "--help-all", "--catalog",   "--calibration", "--json",
                                                      "--emit", "--output",   "--train-cmd", "--deadline"};
        if (std::find(kept.begin(), kept.end(), option->get_name()) == kept.end()) {
            options->configuration_flags.push_back(option);
        }
    }
    cmd->add_option("--scenario", options->scenario_file,
                    "Predict the configurations of a scenario file (epochcast.scenario/1: one, or a \"scenarios\" "
                    "list) instead of the scenario flags");
    cmd->add_option("--save-scenario", options->save_scenario,
                    "Also write the configurations predicted as a scenario file, to predict or compare again");
    cmd->callback([options, &out] { run_predict(*options, out); });
}

}  // namespace epochcast::cli
