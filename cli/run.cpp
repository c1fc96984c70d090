// `epochcast run --np N [--ps-ranks K] [--calibration C] [--host-catalog FILE] [--save-host-catalog FILE]
// [--mpirun PATH] [epochcast-train flags]`: train for real under mpirun on this host, then put the
// model's prediction for the same configuration beside what was measured. epochcast-train is a
// separate program (found beside this one, or at $EPOCHCAST_TRAIN); its output is the progress
// display. The host is the catalog's `local-cpu`, described by `epochcast-train --describe-host`.
//
// The ranks report their progress and failures into a folder made for the run (executor/
// progress.hpp), which gives two things: a watchdog (--watchdog, cli/launch.hpp's Watchdog) that
// kills a job one of whose ranks stopped without dying, and exit codes that follow the trainer's:
// when every rank that reported a failure exited 2 (bad input), `run` exits 2 with the trainer's
// message; any other failure is exit 1.
#include <CLI/CLI.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/launch.hpp"
#include "cli/output.hpp"
#include "cli/table.hpp"
#include "executor/progress.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/text_io.hpp"
#include "traces/trace.hpp"

namespace epochcast::cli {
namespace {

using nlohmann::json;

struct RunOptions {
    int ranks = 0;
    int ps_ranks = 0;
    std::string calibration = "built-in";
    std::string host_catalog;
    std::string save_host_catalog;
    std::string mpirun = "mpirun";
    std::vector<std::string> catalogs;
    std::optional<double> watchdog_s;  ///< --watchdog: 0 off; nullopt: the default rule
};

/// The folder the ranks report into, made for this run and removed however it ends.
class ProgressFolder {
public:
    ProgressFolder() {
        std::string pattern = (std::filesystem::temp_directory_path() / "epochcast-run-XXXXXX").string();
        if (!::mkdtemp(pattern.data())) throw RunError("cannot create a progress folder under " + pattern);
        path_ = pattern;
    }
    ~ProgressFolder() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    ProgressFolder(const ProgressFolder&) = delete;
    ProgressFolder& operator=(const ProgressFolder&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

/// How --watchdog reads on the first line of output.
std::string watchdog_description(const std::optional<double>& seconds) {
    if (!seconds) {
        return format_number(Watchdog::kDeadlineMultiple, 0) + " x the slowest step, at least " +
               format_number(Watchdog::kStartupFloorS, 0) + " s";
    }
    if (*seconds == 0) return "off";
    return format_number(*seconds, *seconds == std::floor(*seconds) ? 0 : 1) +
           " s without a step (start-up: at least " + format_number(Watchdog::kStartupFloorS, 0) + " s)";
}

/// The error for a failed mpirun: the trainer's own when its ranks said why (exit 2, bad input,
/// when every rank that failed exited 2), else mpirun's status with its last output.
[[noreturn]] void throw_run_failure(const ChildExit& exit, const std::filesystem::path& progress, int ranks) {
    if (!exit.stalled.empty()) throw RunError(exit.stalled + "; the job was killed");
    const std::vector<RankFailure> failures = read_rank_failures(progress);
    const auto trainer = [&](const RankFailure& failure) {
        std::string message = failure.message;  // one line, whatever the rank wrote
        std::replace(message.begin(), message.end(), '\n', ' ');
        std::replace(message.begin(), message.end(), '\r', ' ');
        return "epochcast-train" + (ranks > 1 ? " (rank " + std::to_string(failure.rank) + ")" : std::string()) + ": " +
               message;
    };
    const bool bad_input = !failures.empty() && std::all_of(failures.begin(), failures.end(),
                                                            [](const RankFailure& f) { return f.code == 2; });
    if (bad_input) throw InputError(trainer(failures.front()));
    for (const RankFailure& failure : failures) {
        if (failure.code != 2) {
            throw RunError(trainer(failure) + " (mpirun " + exit.describe() + "); its last output:\n" +
                           exit.output_tail);
        }
    }
    throw RunError("mpirun " + exit.describe() + " (a rank failed or was killed); its last output:\n" +
                   exit.output_tail);
}

/// A trace file `epochcast run` made for itself, removed however the run ends.
class OwnedTrace {
public:
    OwnedTrace()
        : path_(std::filesystem::temp_directory_path() /
                ("epochcast-run-" + std::to_string(::getpid()) + ".trace.json")) {}
    ~OwnedTrace() {
        std::error_code ignored;
        std::filesystem::remove(path_, ignored);
    }
    OwnedTrace(const OwnedTrace&) = delete;
    OwnedTrace& operator=(const OwnedTrace&) = delete;
    std::string path() const { return path_.string(); }

private:
    std::filesystem::path path_;
};

/// The `local-cpu` catalog: a file the user gave, or what epochcast-train measures on this host
/// with the run's threads per rank. Where the host holds several such ranks, they are measured
/// together under mpirun (`run` is the launch of the training, whose mpirun and flags it reuses),
/// so that the catalog carries their measured all-reduce.
Catalog host_catalog(const RunOptions& o, const LaunchRequest& run, int threads, const Catalog& known) {
    if (!o.host_catalog.empty()) return Catalog::load(o.host_catalog, known);
    const std::vector<std::string> describe = {"--describe-host", "--threads", std::to_string(threads)};
    std::vector<std::string> argv = {run.train_program};
    argv.insert(argv.end(), describe.begin(), describe.end());
    const int host_ranks = std::max(1, run.online_cores / threads);
    if (host_ranks > 1) {
        LaunchRequest request = run;
        request.ranks = host_ranks;
        request.ps_ranks = 0;
        request.train_flags = describe;
        request.trace_out.clear();
        argv = mpirun_argv(request);
    }
    std::string text;
    const ChildExit exit = run_child(argv, nullptr, &text, /*merge_stderr=*/false);
    if (!exit.success()) {
        throw RunError("epochcast-train --describe-host " + exit.describe() +
                       (exit.output_tail.empty() ? "" : ":\n" + exit.output_tail));
    }
    Catalog catalog = Catalog::parse(text, "epochcast-train --describe-host", known);
    if (!o.save_host_catalog.empty()) {
        write_text_file_atomically(o.save_host_catalog, catalog.to_json_text() + "\n", "host catalog");
    }
    return catalog;
}

/// The run's configuration.threads (threads per rank), 1 when the trace does not say.
int trace_threads(const std::string& path) {
    const json document = parse_json(read_text_file(path, "trace"), path);
    const json* runs = document.contains("runs") ? &document["runs"] : nullptr;
    if (!runs || !runs->is_array() || runs->empty()) throw RunError(path + ": the trace holds no run");
    const json& run = (*runs)[0];
    if (run.contains("configuration") && run["configuration"].contains("threads") &&
        run["configuration"]["threads"].is_number_integer()) {
        return std::max(1, run["configuration"]["threads"].get<int>());
    }
    return 1;
}

/// Predicted beside measured: throughput, iteration and the phases the trace measured.
void print_comparison(const Observation& run, const json& raw, const Prediction& p, CurveOrigin curve_origin,
                      std::ostream& out) {
    Table table({"", "predicted", "measured", "error"});
    auto row = [&](const std::string& label, double predicted, std::optional<double> measured, int decimals) {
        table.add_row({label, format_number(predicted, decimals), measured ? format_number(*measured, decimals) : "-",
                       measured && *measured > 0 ? format_number(percent_error(predicted, *measured), 1) + " %" : "-"});
    };
    row("throughput (img/s)", p.throughput_images_per_s, run.throughput_images_per_s, 2);
    row("iteration (s)", p.iteration_s, run.iteration_s, 4);
    const json phases = raw.contains("measured") ? raw["measured"].value("phases_s", json::object()) : json::object();
    auto phase = [&](const char* key) -> std::optional<double> {
        if (phases.is_object() && phases.contains(key) && phases[key].is_number()) return phases[key].get<double>();
        return std::nullopt;
    };
    row("compute (s)", p.compute_s + p.sync_s, phase("compute"), 4);
    row("data wait (s)", data_wait_s(p), phase("data_wait"), 4);
    row("exposed communication (s)", p.exposed_communication_s, phase("exposed_communication"), 4);
    table.print(out);
    const bool inside = run.throughput_images_per_s >= p.interval.low && run.throughput_images_per_s <= p.interval.high;
    out << "95% band of the prediction: " << format_number(p.interval.low, 2) << " - "
        << format_number(p.interval.high, 2) << " img/s; the measurement is " << (inside ? "inside" : "outside")
        << " it.\n";
    if (curve_origin != CurveOrigin::measured) {
        out << "note: the calibration has no measured curve for local-cpu / " << to_string(run.scenario.precision)
            << " / epochcast, so the roofline prior on the host's measured peaks predicts it; calibrate with this "
               "run's trace: run with --trace-out RUN.json --save-host-catalog HOST.json, then epochcast calibrate "
               "RUN.json --catalog HOST.json -o CAL.json, and run again with --calibration CAL.json --host-catalog "
               "HOST.json.\n";
    }
}

void run_run(const RunOptions& o, const std::vector<std::string>& train_flags, std::ostream& out) {
    if (o.ranks < 1) throw InputError("run: --np must be at least 1 (got " + std::to_string(o.ranks) + ")");
    if (o.watchdog_s && !(std::isfinite(*o.watchdog_s) && *o.watchdog_s >= 0)) {
        throw InputError("run: --watchdog must be a number of seconds, 0 or more (0 turns it off)");
    }
    if (o.ps_ranks < 0 || o.ps_ranks >= o.ranks) {
        throw InputError("run: --ps-ranks must be between 0 and --np - 1 = " + std::to_string(o.ranks - 1) +
                         " (at least one rank trains; got " + std::to_string(o.ps_ranks) + ")");
    }
    for (const char* ours : {"--np", "--ps-ranks"}) {
        if (flag_value(train_flags, ours)) throw InputError(std::string("run: ") + ours + " is given twice");
    }
    // Everything that can be checked is checked before anything starts, the outputs first.
    std::vector<std::string> inputs = o.catalogs;
    inputs.push_back(calibration_file(o.calibration));
    inputs.push_back(o.host_catalog);
    check_outputs({{"--save-host-catalog", o.save_host_catalog},
                   {"--trace-out", flag_value(train_flags, "--trace-out").value_or("")}},
                  inputs);
    Catalog catalog = load_catalog(o.catalogs);
    const Calibration calibration = load_calibration(o.calibration);
    if (!o.host_catalog.empty()) Catalog::load(o.host_catalog, catalog);
    const std::optional<std::string> mpirun = find_program(o.mpirun);
    if (!mpirun) {
        throw RunError(o.mpirun == "mpirun" ? "mpirun not found on PATH; install openmpi-bin (or give --mpirun PATH)"
                                            : "mpirun '" + o.mpirun + "' not found or not executable");
    }
    const std::string train_program = find_train_program();

    LaunchRequest request;
    request.mpirun = *mpirun;
    request.train_program = train_program;
    request.ranks = o.ranks;
    request.ps_ranks = o.ps_ranks;
    request.online_cores = std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
    request.root = ::geteuid() == 0;
    request.train_flags = train_flags;
    const OwnedTrace owned;
    request.trace_out = owned.path();
    const std::string trace_path = flag_value(train_flags, "--trace-out").value_or(owned.path());

    const std::vector<std::string> argv = mpirun_argv(request);
    std::string line;
    for (const std::string& a : argv) line += (line.empty() ? "" : " ") + a;
    const ProgressFolder progress;
    out << "epochcast run: " << line << "\n"
        << "epochcast run: progress reports in " << progress.path().string()
        << "; watchdog: " << watchdog_description(o.watchdog_s) << "\n"
        << std::flush;
    std::optional<Watchdog> watchdog;
    if (!o.watchdog_s || *o.watchdog_s > 0) {
        watchdog.emplace(progress.path(), o.ranks, o.watchdog_s, std::chrono::steady_clock::now());
    }
    ChildControl control;
    control.environment = {std::string(kProgressDirVariable) + "=" + progress.path().string()};
    control.watchdog = watchdog ? &*watchdog : nullptr;
    const ChildExit exit = run_child(argv, &out, nullptr, true, control);
    if (!exit.success()) throw_run_failure(exit, progress.path(), o.ranks);
    if (!std::filesystem::exists(trace_path)) {
        throw RunError("epochcast-train finished but wrote no trace at " + trace_path);
    }

    const int threads = trace_threads(trace_path);
    catalog.merge(host_catalog(o, request, threads, catalog));
    const Trace trace = read_trace(trace_path, catalog);
    if (trace.runs.empty()) throw RunError(trace_path + ": the trace holds no run");
    const TraceRun& measured = trace.runs.front();

    out << "\nPredicted (" << (o.calibration == "built-in" ? "built-in calibration" : o.calibration)
        << ") beside measured, " << o.ranks << " rank" << (o.ranks > 1 ? "s" : "") << " x " << threads << " thread"
        << (threads > 1 ? "s" : "") << ", " << measured.observation.scenario.model << " "
        << measured.observation.scenario.image_size << " px, batch " << measured.observation.scenario.batch_per_gpu
        << ", " << to_string(measured.observation.scenario.precision) << ":\n";
    const CostModel model(catalog, calibration);
    try {
        const ResolvedScenario resolved = model.resolve(measured.observation.scenario);
        print_comparison(measured.observation, measured.raw, model.predict(resolved), resolved.curve_origin, out);
    } catch (const InputError& error) {
        // The run succeeded; only the model has nothing to say about it (say, more ranks than cores).
        out << "no prediction for this run: " << error.what() << "\n";
    }
    if (flag_value(train_flags, "--trace-out")) out << "trace: " << trace_path << "\n";
}

}  // namespace

void register_run(CLI::App& app, std::ostream& out) {
    auto options = std::make_shared<RunOptions>();
    CLI::App* cmd = app.add_subcommand(
        "run",
        "Train for real on this host: start epochcast-train under mpirun (flags not listed here go to it verbatim: "
        "--model, --image-size, --batch-per-gpu, --precision, --threads, --steps, --data, ...), then print the "
        "model's prediction for the same configuration beside what was measured. epochcast-train is looked for "
        "beside epochcast, or at $EPOCHCAST_TRAIN.");
    cmd->allow_extras();
    cmd->add_option("--np", options->ranks, "MPI ranks in all, parameter servers included")->required();
    cmd->add_option("--ps-ranks", options->ps_ranks, "Ranks serving parameters (parameter-server mode); 0: all-reduce");
    add_calibration_option(*cmd, options->calibration);
    cmd->add_option("--host-catalog", options->host_catalog,
                    "Catalog file with the local-cpu entry (default: measure it with epochcast-train --describe-host)");
    cmd->add_option("--save-host-catalog", options->save_host_catalog,
                    "Write the measured local-cpu catalog to this file (to calibrate with later)");
    add_catalog_option(*cmd, options->catalogs);
    cmd->add_option("--mpirun", options->mpirun, "The mpirun program (default: mpirun on PATH)");
    cmd->add_option("--watchdog", options->watchdog_s,
                    "Seconds a rank may go without finishing a step before the job is killed and reported with "
                    "the rank and its host (a rank stopped or hung in a collective never dies by itself); 0 turns "
                    "it off. Default: 10 x the slowest step so far, at least 300 s (steps vary with data loading, "
                    "checkpoint writes and epoch ends; start-up lists the data and builds the network, minutes on "
                    "ImageNet over a network file system). Start-up and the first step always get at least 300 s.");
    cmd->callback([options, cmd, &out] { run_run(*options, cmd->remaining(), out); });
}

}  // namespace epochcast::cli
