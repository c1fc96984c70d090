// `epochcast simulate`: predict's scenario flags plus the simulation's (issue 4). Prints predict's
// table or JSON from the simulated iterations, with the per-iteration distribution and which
// collective granularity ran; --timeline writes a Chrome trace-event file (Perfetto).
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/interrupt.hpp"
#include "cli/output.hpp"
#include "cli/report.hpp"
#include "model/errors.hpp"
#include "model/text_io.hpp"
#include "model/types.hpp"

#if EPOCHCAST_WITH_SIMULATOR
#include "simulator/elastic.hpp"
#include "simulator/prediction.hpp"
#include "simulator/progress.hpp"
#include "simulator/simulation.hpp"
#endif

namespace epochcast::cli {

#if EPOCHCAST_WITH_SIMULATOR
namespace {

struct SimulateOptions {
    ScenarioFlags flags;
    std::vector<std::string> catalogs;
    std::string calibration = "built-in";
    bool json = false;

    double iterations = 10;  ///< as typed; sim::checked_iterations makes it a count
    std::string seed = "1";  ///< as typed; parse_whole_number reads it
    std::optional<double> jitter;
    std::vector<std::string> slow_nodes;
    std::optional<double> overlap;
    std::string granularity = "auto";
    std::string network_model = "cm02";
    std::string topology = "star";
    int rack_nodes = 16;
    double oversubscription = 1;
    std::optional<double> cycle_time_ms;  ///< unset: the framework's
    std::string timeline;
    std::string elastic;
};

nlohmann::json distribution_json(const std::vector<double>& samples) {
    const sim::Distribution d = sim::describe(samples);
    return {{"mean_s", d.mean}, {"stdev_s", d.stdev}, {"min_s", d.min},      {"p50_s", d.p50},
            {"p95_s", d.p95},   {"max_s", d.max},     {"samples_s", samples}};
}

nlohmann::json elastic_json(const sim::ElasticReport& r) {
    // An owned cluster has no price: its cost keys are null, as predict's are.
    auto usd = [&r](double value) { return r.priced ? nlohmann::json(value) : nlohmann::json(nullptr); };
    nlohmann::json segments = nlohmann::json::array();
    for (const sim::ElasticSegment& s : r.segments) {
        segments.push_back({{"start_epoch", s.start_epoch},
                            {"epochs", s.epochs},
                            {"nodes", s.nodes},
                            {"spot_nodes", s.spot_nodes},
                            {"batch_per_gpu", s.batch_per_gpu},
                            {"global_batch", s.global_batch},
                            {"iteration_s", s.iteration_s},
                            {"throughput_images_per_s", s.throughput_images_per_s},
                            {"epoch_s", s.epoch_s},
                            {"time_s", s.time_s},
                            {"cluster_usd_per_hour", usd(s.usd_per_hour)},
                            {"cost_usd", usd(s.cost_usd)}});
    }
    nlohmann::json losses = nlohmann::json::array();
    for (const sim::ElasticLoss& l : r.losses) {
        losses.push_back({{"epoch", l.epoch},
                          {"nodes_after", l.nodes_after},
                          {"lost_work_s", l.lost_work_s},
                          {"restart_s", l.restart_s},
                          {"cost_usd", usd(l.cost_usd)}});
    }
    return {
        {"epochs", r.epochs},
        {"segments", segments},
        {"node_losses", losses},
        {"startup_s", r.startup_s},
        {"time_to_train_s", r.time_to_train_s},
        {"cost_usd", usd(r.cost_usd)},
        {"fixed",
         {{"nodes", r.fixed_nodes}, {"time_to_train_s", r.fixed_time_to_train_s}, {"cost_usd", usd(r.fixed_cost_usd)}}},
        {"time_saving", 1.0 - r.time_to_train_s / r.fixed_time_to_train_s},
        {"cost_saving", usd(1.0 - r.cost_usd / r.fixed_cost_usd)}};
}

void print_elastic(const sim::ElasticReport& r, std::ostream& out) {
    char line[256];
    out << "\nelastic schedule, " << r.epochs << " epochs, global batch kept:\n";
    std::snprintf(line, sizeof line, "  %-14s %6s %5s %10s %12s %12s %10s %12s\n", "epochs", "nodes", "spot",
                  "batch/GPU", "images/s", "epoch (s)", "time (h)", "cost ($)");
    out << line;
    // An owned cluster has no price: "n/a", never $0.00.
    auto dollars = [&r](double usd) {
        char text[32];
        std::snprintf(text, sizeof text, "%.2f", usd);
        return r.priced ? std::string(text) : std::string("n/a");
    };
    for (const sim::ElasticSegment& s : r.segments) {
        char range[64];
        std::snprintf(range, sizeof range, "%.2f-%.2f", s.start_epoch, s.start_epoch + s.epochs);
        std::snprintf(line, sizeof line, "  %-14s %6d %5d %10d %12.0f %12.1f %10.2f %12s\n", range, s.nodes,
                      s.spot_nodes, s.batch_per_gpu, s.throughput_images_per_s, s.epoch_s, s.time_s / 3600,
                      dollars(s.cost_usd).c_str());
        out << line;
    }
    for (const sim::ElasticLoss& l : r.losses) {
        std::snprintf(line, sizeof line,
                      "  node lost at epoch %.2f: %.0f s of work lost, %.0f s restart, %d nodes left\n", l.epoch,
                      l.lost_work_s, l.restart_s, l.nodes_after);
        out << line;
    }
    if (r.priced) {
        std::snprintf(
            line, sizeof line, "  elastic: %.2f h, $%.2f; fixed %d nodes: %.2f h, $%.2f (time %+.1f%%, cost %+.1f%%)\n",
            r.time_to_train_s / 3600, r.cost_usd, r.fixed_nodes, r.fixed_time_to_train_s / 3600, r.fixed_cost_usd,
            100 * (r.time_to_train_s / r.fixed_time_to_train_s - 1), 100 * (r.cost_usd / r.fixed_cost_usd - 1));
    } else {
        std::snprintf(line, sizeof line,
                      "  elastic: %.2f h; fixed %d nodes: %.2f h (time %+.1f%%; cost n/a: no price)\n",
                      r.time_to_train_s / 3600, r.fixed_nodes, r.fixed_time_to_train_s / 3600,
                      100 * (r.time_to_train_s / r.fixed_time_to_train_s - 1));
    }
    out << line;
}

/// What simulate found: the simulated prediction, the iteration times, the closed form's figures
/// beside them, and the elastic schedule's phases when one was given.
struct SimulateReport : Report {
    SimulateReport(const SimulateOptions& o, const sim::SimulationOptions& options, const CostModel& model,
                   const ResolvedScenario& resolved, const sim::SimulationResult& result, const Prediction& analytic,
                   const ScenarioResult& reported, const std::optional<sim::ElasticReport>& elastic)
        : o(o),
          options(options),
          model(model),
          resolved(resolved),
          result(result),
          analytic(analytic),
          reported(reported),
          elastic(elastic) {}

    void print_json(std::ostream& out) const override {
        const Scenario& s = reported.scenario;
        nlohmann::json j = prediction_json(reported);
        j["collective_granularity"] = to_string(result.granularity);
        j["iteration_distribution"] = distribution_json(result.iteration_s);
        j["simulation"] = {{"iterations", options.iterations},
                           {"seed", options.seed},
                           {"jitter", result.jitter},
                           {"overlap", result.overlap},
                           {"slow_nodes", o.slow_nodes},
                           {"network_model", to_string(result.network_model)},
                           {"topology",
                            {{"kind", to_string(options.topology.kind)},
                             {"rack_nodes", options.topology.rack_nodes},
                             {"oversubscription", options.topology.oversubscription}}},
                           {"cycle_time_s", options.cycle_time_s.value_or(sim::framework_cycle_time_s(s.framework))},
                           {"buckets_per_iteration", result.buckets_per_iteration},
                           {"transfers", result.transfers},
                           {"executions", result.executions},
                           {"simulated_s", result.simulated_s},
                           {"wall_s", result.wall_s},
                           {"peak_memory_MiB", result.peak_memory_MiB},
                           {"timeline", o.timeline.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.timeline)}};
        j["analytic"] = {{"iteration_s", analytic.iteration_s},
                         {"sync_s", analytic.sync_s},
                         {"iteration_without_sync_s", analytic.iteration_s - analytic.sync_s},
                         {"throughput_images_per_s", analytic.throughput_images_per_s}};
        if (elastic) j["elastic"] = elastic_json(*elastic);
        print_json_document(j, out);
    }

    void print_text(std::ostream& out, bool) const override {
        print_prediction_table({reported}, model, out);
        const sim::Distribution d = sim::describe(result.iteration_s);
        out << "\nsimulated " << options.iterations << " iterations (SimGrid, " << to_string(result.network_model)
            << ", " << to_string(result.granularity)
            << (resolved.strategy == Strategy::ps ? " push/pull" : " collectives") << ", jitter " << result.jitter
            << ", seed " << options.seed << "): iteration mean " << d.mean * 1e3 << " ms, p95 " << d.p95 * 1e3
            << " ms; predict says " << analytic.iteration_s * 1e3 << " ms.\n";
        out << "wall " << result.wall_s << " s, peak memory " << result.peak_memory_MiB << " MiB";
        if (!o.timeline.empty()) out << "; timeline written to " << o.timeline;
        out << '\n';
        if (elastic) print_elastic(*elastic, out);
    }

    const SimulateOptions& o;
    const sim::SimulationOptions& options;
    const CostModel& model;
    const ResolvedScenario& resolved;
    const sim::SimulationResult& result;
    const Prediction& analytic;
    const ScenarioResult& reported;
    const std::optional<sim::ElasticReport>& elastic;
};

void run_simulate(SimulateOptions& o, std::ostream& out, std::ostream& progress_out) {
    std::vector<std::string> inputs = o.catalogs;
    inputs.push_back(calibration_file(o.calibration));
    check_outputs({{"--timeline", o.timeline}}, inputs);
    Catalog catalog = load_catalog(o.catalogs);
    const CostModel model(std::move(catalog), load_calibration(o.calibration));
    Scenario s = o.flags.to_scenario();

    sim::SimulationOptions options;
    options.iterations = sim::checked_iterations(o.iterations);
    options.seed = parse_whole_number(o.seed, "--seed", 0, std::numeric_limits<std::uint64_t>::max());
    options.jitter = o.jitter;
    for (const std::string& text : o.slow_nodes) options.slow_nodes.push_back(sim::parse_slow_node(text));
    options.overlap = o.overlap;
    options.granularity = sim::parse_granularity(o.granularity, "--granularity");
    options.network_model = sim::parse_network_model(o.network_model, "--network-model");
    if (o.cycle_time_ms) options.cycle_time_s = *o.cycle_time_ms / 1e3;
    options.topology.kind = sim::parse_topology(o.topology, "--topology");
    options.topology.rack_nodes = o.rack_nodes;
    options.topology.oversubscription = o.oversubscription;
    options.timeline_path = o.timeline;

    std::optional<sim::ElasticSchedule> schedule;
    if (!o.elastic.empty()) {
        schedule = sim::read_elastic_schedule(o.elastic);
        if (s.target_top1_percent > 0) {
            // The schedule keeps the global batch, which fixes the epochs to the target: its
            // phases keep their proportions over those epochs.
            schedule = schedule->scaled_to(model.resolve(s).epochs);
        } else {
            s.epochs = schedule->epochs();  // the schedule says how many epochs
        }
    }

    const ResolvedScenario resolved = model.resolve(s);
    // A schedule whose cluster sizes would take hours to simulate is refused before anything runs.
    if (schedule) sim::check_elastic_cost(model, s, options, *schedule);
    // Progress on stderr (`progress_out`) while it runs: rewritten in place on a terminal, a line every
    // 10 s in a log; nothing for a run shorter than that (sim::progress_pace). Its thread starts once
    // the simulation's process is forked: a process forked with a thread running can deadlock.
    std::optional<sim::ProgressPrinter> progress;
    const bool terminal = &progress_out == &std::cerr && ::isatty(STDERR_FILENO) == 1;
    options.on_child_started = [&progress, &options, &progress_out, terminal] {
        progress.emplace(progress_out, sim::progress_pace(terminal));
        progress->update(0, options.iterations);
    };
    options.on_progress = [&progress](int done, int total) {
        if (progress) progress->update(done, total);
    };
    // Ctrl-C, SIGTERM and SIGHUP stop the simulation's process (the cancel flag) and end the
    // command with a line naming the signal; a SIGKILL'd command's process dies with it.
    const InterruptGuard interrupt_guard;
    options.cancel = &g_interrupt_requested;
    std::optional<sim::SimulationResult> simulated;
    std::optional<sim::ElasticReport> elastic;
    try {
        simulated = sim::simulate(model, s, options);
        if (progress) progress->stop();
        options.on_progress = nullptr;
        options.on_child_started = nullptr;
        if (schedule) elastic = sim::simulate_elastic(model, s, options, *schedule);
    } catch (const sim::SimulationCancelled&) {
        if (progress) progress->stop();
        throw RunError("interrupted by " + interruption_name(g_interrupted) +
                       " during the simulation; its process was stopped");
    }
    const sim::SimulationResult& result = *simulated;
    const Prediction prediction = sim::simulated_prediction(model, s, result);
    const Prediction analytic = model.predict(resolved);
    const ScenarioResult reported{s, prediction, resolved.curve_origin};

    write_report(SimulateReport{o, options, model, resolved, result, analytic, reported, elastic},
                 output_format(o.json), out);
}

}  // namespace

void register_simulate(CLI::App& app, std::ostream& out, std::ostream& progress) {
    auto options = std::make_shared<SimulateOptions>();
    CLI::App* cmd = app.add_subcommand(
        "simulate",
        "Simulate training iterations with SimGrid (stragglers, slow nodes, per-bucket overlap) and report them as "
        "predict does. Takes predict's flags.");
    add_scenario_flags(*cmd, options->flags);
    add_catalog_option(*cmd, options->catalogs);
    add_calibration_option(*cmd, options->calibration);
    add_json_flag(*cmd, options->json, "one JSON object");

    cmd->add_option("--iterations", options->iterations, "Iterations to simulate, 1 to 1,000,000")->type_name("INT");
    cmd->add_option("--seed", options->seed, "Seed of the jitter draws, 0 to 2^64 - 1 (default 1)");
    cmd->add_option("--timeline", options->timeline, "Write a Chrome trace-event timeline (opens in Perfetto)");
    cmd->add_option("--jitter", options->jitter,
                    "Relative std of each GPU's compute time per iteration, 0 to 1 (default: the calibration's "
                    "framework jitter; 0 for a deterministic replay)");
    cmd->add_option("--slow-node", options->slow_nodes,
                    "NODE:FACTOR, a node whose compute takes FACTOR (1 to 100) times longer; repeatable");
    cmd->add_option("--overlap", options->overlap,
                    "Fraction of the backward pass during which gradients may be sent (default: the calibration's; "
                    "1 = as soon as a bucket is ready)");
    cmd->add_option("--granularity", options->granularity,
                    "auto, step or coarse collectives and parameter-server push/pull");
    cmd->add_option("--network-model", options->network_model, "cm02 (alpha-beta, default) or lv08 (TCP sharing)");
    cmd->add_option("--topology", options->topology,
                    "star (one switch, default) or fat-tree (racks of --rack-nodes leaves under a spine)");
    cmd->add_option("--rack-nodes", options->rack_nodes, "Nodes (then servers) per rack with --topology fat-tree");
    cmd->add_option("--oversubscription", options->oversubscription,
                    "Rack uplink = its NICs' bandwidth / this, 1 to 1,000, with --topology fat-tree (1: non-blocking)");
    cmd->add_option("--cycle-time-ms", options->cycle_time_ms,
                    "All-reduce fusion cycle in ms, 0 to 1,000 (default: Horovod's 5 for TensorFlow and MXNet, none "
                    "for PyTorch's DDP)");
    cmd->add_option("--elastic", options->elastic,
                    "Elastic schedule (epochcast.elastic/1): nodes per phase, global batch fixed, node losses; "
                    "reported against the fixed cluster of --nodes. Its phases' epochs replace --epochs; with "
                    "--target-top1 they are scaled to the epochs the global batch needs");
    cmd->callback([options, &out, &progress] { run_simulate(*options, out, progress); });
}

#else

void register_simulate(CLI::App& app, std::ostream&, std::ostream&) {
    CLI::App* cmd = app.add_subcommand("simulate", "Simulate training with SimGrid (not in this build)");
    cmd->allow_extras();
    cmd->callback([] {
        throw RunError(
            "this epochcast was built without the SimGrid simulator: install libsimgrid-dev (>= 3.32) and "
            "configure again");
    });
}

#endif

}  // namespace epochcast::cli
