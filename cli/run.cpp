// `epochcast run [--np N] [--hostfile FILE | --host h1:N,... | --launcher srun] [--instance NAME]
// [flags] [epochcast-train flags]`: train for real on this host or the user's cluster, then put
// the model's prediction for the same configuration and cluster beside what was measured
// (docs/cli.md, "run"). epochcast-train is a separate program (found beside this one, or at
// $EPOCHCAST_TRAIN) started by mpirun or srun with cli/launch.hpp's line; its output is the
// progress display. In order:
//  1. the ranks are placed (cli/layout.hpp) and every other host is checked (cli/preflight.hpp):
//     it answers, has epochcast-train at the same path and sees the run's shared folder;
//  2. an nccl-tests-style all-reduce sweep across the ranks (`epochcast-train --allreduce-sweep`),
//     fitted as `import-nccl` fits one;
//  3. the training;
//  4. without --instance, the hosts' peaks measured under the same line (per node; a node far
//     slower than the others is flagged), as the catalog's `local-cpu`;
//  5. predicted beside measured, and the trace with the launcher line and the network written.
//
// The ranks report their progress and failures into the run's folder (executor/progress.hpp),
// which gives two things: a watchdog (--watchdog, cli/launch.hpp's Watchdog) that kills a job one
// of whose ranks stopped without dying, and exit codes that follow the trainer's: when every rank
// that reported a failure exited 2 (bad input), `run` exits 2 with the trainer's message; any
// other failure is exit 1, naming the rank's host where it is known.
#include <CLI/CLI.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/interrupt.hpp"
#include "cli/launch.hpp"
#include "cli/layout.hpp"
#include "cli/output.hpp"
#include "cli/preflight.hpp"
#include "cli/table.hpp"
#include "executor/progress.hpp"
#include "executor/train_limits.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/text_io.hpp"
#include "traces/nccl_import.hpp"
#include "traces/trace.hpp"

namespace epochcast::cli {
namespace {

/// The most ranks a run starts in all, and per core of the host that starts them.
constexpr int kMaxRanks = 1 << 20;
constexpr int kMaxRanksPerCore = 8;

/// The folder for a run's files on this host: $TMPDIR, else /tmp. One that is not a folder is bad
/// input, named (std::filesystem's own error is no sentence for a user); `or_else` follows "set
/// TMPDIR to one" in the message where something else would do.
std::filesystem::path temporary_folder(const std::string& or_else = "") {
    std::error_code error;
    const std::filesystem::path folder = std::filesystem::temp_directory_path(error);
    if (error) {
        const char* tmpdir = std::getenv("TMPDIR");
        throw InputError("the temporary folder " +
                         (tmpdir ? "TMPDIR='" + escape_for_message(tmpdir) + "'" : std::string("/tmp")) +
                         " is not a folder (" + error.message() + "): set TMPDIR to one" + or_else);
    }
    return folder;
}

using nlohmann::json;

struct RunOptions {
    std::optional<int> ranks;  ///< --np; nullopt: every slot of the hosts (or the allocation's tasks)
    int ps_ranks = 0;
    std::string calibration = "built-in";
    std::string host_catalog;
    std::string save_host_catalog;
    std::string mpirun = "mpirun";
    std::string srun = "srun";
    std::vector<std::string> catalogs;
    std::optional<double> watchdog_s;  ///< --watchdog: 0 off; nullopt: the default rule
    std::string hostfile;
    std::string hosts;                  ///< --host h1:N,h2:N
    std::string launcher = "mpirun";    ///< mpirun or srun
    std::string instance;               ///< --instance: the catalog instance the hosts are
    std::string shared_dir;             ///< --shared-dir: where the run's folder is made
    std::string trace_out;              ///< --trace-out: the trace written after the run
    bool no_network_test = false;       ///< --no-network-test: no all-reduce sweep
    double network_test_max_mib = 128;  ///< --network-test-max-mib: the sweep's largest message
};

/// The largest --network-test-max-mib: epochcast-train --sweep-max-bytes's 4 GiB (MPI counts are ints).
constexpr double kMaxNetworkTestMiB = 4096;

/// A folder made for this run under `base`, "<base>/<name>-XXXXXX", and removed with what it holds
/// however the run ends (Ctrl-C too: run_run's InterruptGuard): the run's folder, which the ranks
/// report into and rank 0 writes its trace into, and mpirun's temporary folder. `what` and `hint`
/// name it and say what to do when it cannot be made.
class RunFolder {
public:
    RunFolder(const std::filesystem::path& base, const std::string& name, const std::string& what,
              const std::string& hint) {
        std::string pattern = (base / (name + "-XXXXXX")).string();
        if (!::mkdtemp(pattern.data())) {
            throw InputError("cannot create " + what + " under " + base.string() + " (" + std::strerror(errno) + "; " +
                             hint + ")");
        }
        path_ = pattern;
    }
    ~RunFolder() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    RunFolder(const RunFolder&) = delete;
    RunFolder& operator=(const RunFolder&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

/// Throws when Ctrl-C, SIGTERM or SIGHUP came while `what` ran (the child was stopped).
void throw_if_interrupted(const std::string& what) {
    if (g_interrupted) throw RunError("interrupted by " + interruption_name(g_interrupted) + " during " + what);
}

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

/// "rank 3 on host n2 was killed by signal 9 (Killed)"; without " on host ..." when `host` is "".
std::string killed_rank(int rank, const std::string& host, int signal) {
    return "rank " + std::to_string(rank) + (host.empty() ? "" : " on host " + host) + " was killed by signal " +
           std::to_string(signal) + " (" + strsignal(signal) + ")";
}

/// The rank and host Open MPI's mpirun names in its last output when a rank died or a host was
/// lost ("process rank 3 with PID 0 on node n2 exited on signal 9 (Killed)"; "Remote daemon:
/// [[...],1] on node n3"), as a phrase; "" when it names none.
std::string lost_rank_in_output(const std::string& output) {
    std::smatch match;
    static const std::regex rank_died(
        R"(process rank (\d{1,9}) with PID \d+ on node (\S+) exited on signal (\d{1,2}))");
    if (std::regex_search(output, match, rank_died)) {
        return killed_rank(std::stoi(match[1]), match[2], std::stoi(match[3]));
    }
    static const std::regex daemon_lost(R"(Remote daemon\s*:\s*\S+ on node (\S+))");
    if (std::regex_search(output, match, daemon_lost))
        return "contact with host " + std::string(match[1]) + " was lost";
    return "";
}

/// The error for a failed launcher: the trainer's own when its ranks said why (exit 2, bad input,
/// when every rank that failed exited 2), else the launcher's status with the rank and host that
/// died, where known, and its last output. A rank a signal killed (its supervisor's report) comes
/// before the others' failures, which may be their lost connections to it.
[[noreturn]] void throw_run_failure(const ChildExit& exit, const std::filesystem::path& folder, int ranks,
                                    const std::string& launcher) {
    if (!exit.stalled.empty()) throw RunError(exit.stalled + "; the job was killed");
    const std::vector<RankFailure> failures = read_rank_failures(folder);
    const auto trainer = [&](const RankFailure& failure) {
        std::string message = failure.message;  // one line, whatever the rank wrote
        std::replace(message.begin(), message.end(), '\n', ' ');
        std::replace(message.begin(), message.end(), '\r', ' ');
        std::string who;
        if (ranks > 1) who = "rank " + std::to_string(failure.rank);
        if (!failure.host.empty() && (ranks > 1 || !is_this_host(failure.host, this_host_name()))) {
            who += (who.empty() ? "" : " ") + std::string("on ") + failure.host;
        }
        return "epochcast-train" + (who.empty() ? std::string() : " (" + who + ")") + ": " + message;
    };
    const bool bad_input = !failures.empty() && std::all_of(failures.begin(), failures.end(),
                                                            [](const RankFailure& f) { return f.code == 2; });
    if (bad_input) throw InputError(trainer(failures.front()));
    const std::vector<RankDeath> deaths = read_rank_deaths(folder);
    if (!deaths.empty()) {
        const RankDeath& first = deaths.front();
        throw RunError(launcher + " " + exit.describe() + " (" + killed_rank(first.rank, first.host, first.signal) +
                       "); its last output:\n" + exit.output_tail);
    }
    for (const RankFailure& failure : failures) {
        if (failure.code != 2) {
            throw RunError(trainer(failure) + " (" + launcher + " " + exit.describe() + "); its last output:\n" +
                           exit.output_tail);
        }
    }
    const std::string lost = lost_rank_in_output(exit.output_tail);
    throw RunError(launcher + " " + exit.describe() + " (" + (lost.empty() ? "a rank failed or was killed" : lost) +
                   "); its last output:\n" + exit.output_tail);
}

/// The flags of `flags` with `name`'s value replaced by `value` (both spellings).
std::vector<std::string> with_flag_value(std::vector<std::string> flags, std::string_view name,
                                         const std::string& value) {
    const std::string with_equals = std::string(name) + "=";
    for (std::size_t i = 0; i < flags.size(); ++i) {
        if (flags[i] == name && i + 1 < flags.size()) {
            flags[++i] = value;
        } else if (flags[i].rfind(with_equals, 0) == 0) {
            flags[i] = with_equals + value;
        }
    }
    return flags;
}

/// Where the ranks go.
struct Placement {
    Launcher launcher = Launcher::mpirun;
    std::optional<RankLayout> layout;      ///< nullopt: this host, as mpirun places them
    std::optional<SlurmAllocation> slurm;  ///< with --launcher srun
    int ranks = 0;
    std::vector<std::string> other_hosts;  ///< hosts that are not this one (all the nodes with srun)
};

Placement place(const RunOptions& o, std::ostream& out) {
    Placement p;
    if (o.launcher != "mpirun" && o.launcher != "srun") {
        throw InputError("--launcher must be mpirun or srun, got '" + escape_for_message(o.launcher) + "'");
    }
    if (!o.hostfile.empty() && !o.hosts.empty()) throw InputError("give --hostfile or --host, not both");
    if (o.launcher == "srun") {
        if (!o.hostfile.empty() || !o.hosts.empty()) {
            throw InputError(
                "--launcher srun runs on the Slurm allocation's nodes; --hostfile and --host are for "
                "mpirun");
        }
        p.launcher = Launcher::srun;
        p.slurm = slurm_allocation_from_environment();
        if (!p.slurm) {
            throw InputError(
                "--launcher srun needs a Slurm allocation, and SLURM_JOB_ID is not set (run inside "
                "salloc or an sbatch script)");
        }
        const std::optional<int> ranks = o.ranks ? o.ranks : p.slurm->tasks;
        if (!ranks) throw InputError("give --np (the Slurm allocation does not say how many tasks)");
        p.layout = place_ranks_on_allocation(*p.slurm, *ranks);
        p.other_hosts = p.layout->hosts;
    } else if (!o.hostfile.empty() || !o.hosts.empty()) {
        const std::vector<HostSlots> hosts = o.hostfile.empty()
                                                 ? parse_host_list(o.hosts)
                                                 : parse_hostfile(read_text_file(o.hostfile, "host"), o.hostfile);
        p.layout = place_ranks(hosts, o.ranks);
        const std::string here = this_host_name();
        for (const std::string& host : p.layout->hosts) {
            if (!is_this_host(host, here)) p.other_hosts.push_back(host);
        }
    } else {
        if (!o.ranks) throw InputError("give --np (or --hostfile, --host or --launcher srun, whose slots set it)");
        try {
            if (const std::optional<SlurmAllocation> slurm = slurm_allocation_from_environment()) {
                out << "epochcast run: inside Slurm job " << slurm->job_id << " (" << slurm->nodes.size() << " node"
                    << (slurm->nodes.size() == 1 ? "" : "s") << "); --launcher srun starts the ranks on its nodes\n";
            }
        } catch (const InputError&) {  // a Slurm environment we cannot read: only a hint was lost
        }
    }
    p.ranks = p.layout ? p.layout->ranks() : *o.ranks;
    // What one host can run: no more ranks on this host than kMaxRanksPerCore per core (each is a
    // process with threads and a model in memory), and no run past kMaxRanks in all.
    if (p.ranks > kMaxRanks) {
        throw InputError("run: " + std::to_string(p.ranks) + " ranks is more than the " + std::to_string(kMaxRanks) +
                         " a run may start");
    }
    const int here =
        p.layout ? p.layout->ranks_per_node * static_cast<int>(p.layout->hosts.size() - p.other_hosts.size()) : p.ranks;
    const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
    if (here > kMaxRanksPerCore * cores) {
        throw InputError("run: " + std::to_string(here) + " ranks on this host is more than it can run (" +
                         std::to_string(cores) + " cores, at most " + std::to_string(kMaxRanksPerCore) +
                         " ranks each): give fewer with --np, or more hosts");
    }
    return p;
}

/// `request` with other trainer flags, no parameter servers and no trace: for the sweep and the
/// host description, run with the training's layout.
LaunchRequest other_job(const LaunchRequest& request, std::vector<std::string> flags) {
    LaunchRequest job = request;
    job.ps_ranks = 0;
    job.train_flags = std::move(flags);
    job.trace_out.clear();
    return job;
}

/// The all-reduce sweep across the ranks (`epochcast-train --allreduce-sweep`, NCCL with --backend
/// cuda, MPI otherwise), its rank 0 table streamed to `out`, fitted as import-nccl fits one (where
/// its times do not grow with the size, with a line on `out`, its largest bus bandwidth).
NetworkMeasurement measure_network(const RunOptions& o, const LaunchRequest& request,
                                   const std::vector<std::string>& train_flags, const ChildControl& control,
                                   const std::filesystem::path& folder, std::ostream& out) {
    std::vector<std::string> flags = {
        "--allreduce-sweep", "--sweep-max-bytes",
        std::to_string(static_cast<long long>(std::llround(o.network_test_max_mib * 1024 * 1024 / 4)) * 4)};
    for (const char* passed : {"--backend", "--allreduce"}) {
        if (const std::optional<std::string> value = flag_value(train_flags, passed)) {
            flags.insert(flags.end(), {passed, *value});
        }
    }
    const std::vector<std::string> argv = launcher_argv(other_job(request, flags));
    out << "epochcast run: all-reduce sweep across the " << request.ranks
        << " ranks (--no-network-test skips it): " << command_line(argv) << "\n"
        << std::flush;
    std::string table;
    ChildControl sweep_control = control;
    sweep_control.watchdog = nullptr;  // the sweep reports no steps
    const ChildExit exit = run_child(argv, &out, &table, /*merge_stderr=*/false, sweep_control);
    throw_if_interrupted("the all-reduce sweep");
    if (!exit.success()) {
        throw_if_slurm_refused(exit.output_tail, argv, "the all-reduce sweep's job step");
        try {
            throw_run_failure(exit, folder, request.ranks, command_line({argv.front()}));
        } catch (const InputError& error) {
            throw InputError(std::string("the all-reduce sweep: ") + error.what());
        } catch (const RunError& error) {
            throw RunError(std::string("the all-reduce sweep: ") + error.what());
        }
    }
    int ranks = 0;
    const std::vector<NcclSample> samples = parse_nccl_all_reduce(table, "the all-reduce sweep", &ranks);
    NetworkMeasurement measurement;
    try {
        measurement = fit_alpha_beta(samples, ranks);
    } catch (const InputError& error) {
        // Small messages on one host are latency alone, and a busy host's times can stay level:
        // the run goes on with the table's largest bus bandwidth, and says so (import-nccl refuses
        // such a log).
        out << "epochcast run: the all-reduce sweep: " << error.what()
            << "; its largest bus bandwidth is taken (a larger --network-test-max-mib measures one)\n"
            << std::flush;
        measurement = fit_alpha_beta(samples, ranks, /*times_must_grow=*/false);
    }
    const bool cuda = flag_value(train_flags, "--backend").value_or("cpu") == "cuda";
    const std::string algorithm = flag_value(train_flags, "--allreduce").value_or("ring");
    // NCCL chooses its algorithm; the CPU ranks run ours (a ring) or MPI's, modelled as a ring.
    measurement.algorithm = cuda ? Strategy::nccl : Strategy::ring;
    measurement.source = "epochcast run's all-reduce sweep (epochcast-train --allreduce-sweep, " +
                         std::string(cuda ? "NCCL" : "MPI, --allreduce " + algorithm) + ") of " +
                         std::to_string(ranks) + " ranks: " + command_line(argv);
    return measurement;
}

/// The catalog of the hosts as epochcast-train measures them (`local-cpu`), with their per-node
/// peaks, or a file the user gave. Without a layout, the ranks this host holds describe it
/// together under mpirun (their all-reduce is measured too); with one, the training's line.
struct HostDescription {
    Catalog catalog;
    std::vector<NodePeaks> nodes;  ///< per node, when measured under a launcher that says them
};

std::vector<NodePeaks> node_peaks(const json& document, const std::string& origin) {
    std::vector<NodePeaks> nodes;
    if (!document.is_object() || !document.contains("nodes")) return nodes;
    try {
        for (const json& entry : document.at("nodes")) {
            // A count of ranks is a whole number from 1 (get<int> would truncate 2.5 and wrap 1e10);
            // each peak a figure from 0.
            const json& ranks = entry.at("ranks");
            const std::optional<std::int64_t> count = json_whole_number(ranks);
            if (!count || *count < 1 || *count > std::numeric_limits<int>::max()) {
                throw RunError(origin + ": a node's \"ranks\" is not a whole number from 1 (got " + ranks.dump() + ")");
            }
            NodePeaks node{entry.at("host").get<std::string>(), static_cast<int>(*count),
                           entry.at("fp32_tflops").get<double>(), entry.at("bf16_tflops").get<double>(),
                           entry.at("memory_GBps").get<double>()};
            if (!(node.fp32_tflops >= 0 && node.bf16_tflops >= 0 && node.memory_GBps >= 0)) {
                throw RunError(origin + ": a node's peaks are negative (" + node.host + ")");
            }
            nodes.push_back(std::move(node));
        }
    } catch (const json::exception&) {
        throw RunError(origin +
                       ": its \"nodes\" are not a list of {host, ranks, fp32_tflops, bf16_tflops, "
                       "memory_GBps}");
    }
    return nodes;
}

HostDescription describe_hosts(const RunOptions& o, const LaunchRequest& run, int threads, const Catalog& known,
                               const ChildControl& control) {
    if (!o.host_catalog.empty()) return {Catalog::load(o.host_catalog, known), {}};
    const std::vector<std::string> describe = {"--describe-host", "--threads", std::to_string(threads)};
    std::vector<std::string> argv = {run.train_program};
    argv.insert(argv.end(), describe.begin(), describe.end());
    if (run.layout) {
        argv = launcher_argv(other_job(run, describe));
    } else if (const int host_ranks = std::max(1, run.online_cores / threads); host_ranks > 1) {
        LaunchRequest request = other_job(run, describe);
        request.ranks = host_ranks;
        argv = launcher_argv(request);
    }
    std::string text;
    ChildControl describe_control = control;
    describe_control.watchdog = nullptr;
    const ChildExit exit = run_child(argv, nullptr, &text, /*merge_stderr=*/false, describe_control);
    throw_if_interrupted("the hosts' description");
    if (!exit.success()) {
        throw_if_slurm_refused(exit.output_tail, argv, "the hosts' description's job step");
        throw RunError("epochcast-train --describe-host " + exit.describe() +
                       (exit.output_tail.empty() ? "" : ":\n" + exit.output_tail));
    }
    const std::string origin = "epochcast-train --describe-host";
    HostDescription description{Catalog::parse(text, origin, known), node_peaks(parse_json_or_discarded(text), origin)};
    if (!o.save_host_catalog.empty()) {
        write_text_file_atomically(o.save_host_catalog, description.catalog.to_json_text() + "\n", "host catalog");
    }
    return description;
}

/// Each node's measured peaks, the stragglers flagged (layout.hpp's kStragglerFraction).
void print_node_peaks(const std::vector<NodePeaks>& nodes, Precision precision, std::ostream& out) {
    if (nodes.empty()) return;
    const bool bf16 = precision == Precision::bf16;
    out << "\nMeasured peaks per node (each node's slowest rank; local-cpu takes the slowest node's):\n";
    Table table({"host", "ranks", "fp32 TFLOP/s", "bf16 TFLOP/s", "memory GB/s", "straggler"});
    std::vector<std::string> warnings;
    for (const NodePeaks& node : nodes) {
        const std::string reason = straggler_reason(node, nodes, bf16);
        table.add_row({node.host, std::to_string(node.ranks), format_number(node.fp32_tflops, 3),
                       format_number(node.bf16_tflops, 3), format_number(node.memory_GBps, 1),
                       reason.empty() ? "" : "yes"});
        if (!reason.empty()) warnings.push_back(node.host + ": " + reason);
    }
    table.print(out);
    for (const std::string& warning : warnings) {
        out << "warning: straggler host " << warning
            << "; every synchronous step waits for it, so it paces the whole run\n";
    }
}

/// The run's configuration.threads (threads per rank), 1 when the trace does not say.
int trace_threads(const std::string& path) {
    const json document = parse_json(read_text_file(path, "trace"), path);
    const json* runs = document.contains("runs") ? &document["runs"] : nullptr;
    if (!runs || !runs->is_array() || runs->empty()) throw RunError(path + ": the trace holds no run");
    const json& run = (*runs)[0];
    if (run.contains("configuration") && run["configuration"].is_object() && run["configuration"].contains("threads") &&
        run["configuration"]["threads"].is_number_integer()) {
        return std::max(1, run["configuration"]["threads"].get<int>());
    }
    return 1;
}

/// Predicted beside measured: throughput, iteration and the phases the trace measured, the
/// prediction's 95% band and whether the measurement fell in it.
void print_comparison(const Observation& run, const json& raw, const Prediction& p, std::ostream& out) {
    Table table({"", "predicted", "measured", "error"});
    auto row = [&](const std::string& label, double predicted, std::optional<double> measured, int decimals) {
        table.add_row({label, format_number(predicted, decimals), measured ? format_number(*measured, decimals) : "-",
                       error_cell(predicted, measured, decimals)});
    };
    row("throughput (img/s)", p.throughput_images_per_s, run.throughput_images_per_s, 2);
    row("iteration (s)", p.iteration_s, run.iteration_s, 4);
    const json phases = raw.contains("measured") && raw["measured"].is_object()
                            ? raw["measured"].value("phases_s", json::object())
                            : json::object();
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
}

/// How to calibrate from this run, when the calibration had no measured curve for it.
void print_calibration_hint(const Observation& run, bool named, std::ostream& out) {
    out << "note: the calibration has no measured curve for " << run.scenario.instance << " / "
        << to_string(run.scenario.precision) << " / epochcast, so the roofline prior predicts it; calibrate with "
        << "this run's trace: ";
    if (named) {
        out << "run with --trace-out RUN.json, then epochcast calibrate RUN.json -o CAL.json (with the --catalog "
               "files of this run), and run again with --calibration CAL.json.\n";
    } else {
        out << "run with --trace-out RUN.json --save-host-catalog HOST.json, then epochcast calibrate RUN.json "
               "--catalog HOST.json -o CAL.json, and run again with --calibration CAL.json --host-catalog "
               "HOST.json.\n";
    }
}

/// The measured all-reduce beside what the catalog's fabric gives under the model (as import-nccl
/// prints it).
void print_network(const NetworkMeasurement& m, const Catalog& catalog, const Calibration& calibration, int nodes,
                   std::ostream& out) {
    const InstanceSpec& instance = catalog.instance(m.instance);
    const double model_GBps = allreduce_bus_bandwidth_GBps(instance, catalog.device_kind(instance), m.ranks,
                                                           m.efa_adapters, calibration.network, m.algorithm);
    std::string fabric(to_string(fabric_in_use(instance, m.efa_adapters)));
    if (nodes < 2) fabric = "within one node";
    out << "\nAll-reduce across the ranks, measured beside the catalog's " << m.instance << " (" << fabric << "):\n";
    Table table({"ranks", "nodes", "sizes", "alpha (us)", "fitted bus GB/s", "max bus GB/s", "model bus GB/s",
                 "measured / model"});
    table.add_row({std::to_string(m.ranks), std::to_string(nodes), std::to_string(m.samples.size()),
                   format_number(m.latency_s * 1e6, 1), format_number(m.bus_bandwidth_GBps, 2),
                   format_number(m.max_bus_bandwidth_GBps, 2), format_number(model_GBps, 2),
                   model_GBps > 0 ? format_number(m.bus_bandwidth_GBps / model_GBps, 2) : "-"});
    table.print(out);
}

/// The launcher line and hosts, recorded in the run (docs/formats.md, "Trace", key "launch").
json launch_json(const Placement& placement, const std::vector<std::string>& argv) {
    json hosts = json::array();
    if (placement.layout) {
        for (const std::string& host : placement.layout->hosts) hosts.push_back(host);
    } else {
        hosts.push_back(this_host_name());
    }
    return {{"launcher", placement.launcher == Launcher::srun ? "srun" : "mpirun"},
            {"command", command_line(argv)},
            {"hosts", hosts},
            {"ranks_per_node", placement.layout ? placement.layout->ranks_per_node : placement.ranks}};
}

/// Checks of --instance against the catalog and the backend, before anything starts.
void check_instance(const RunOptions& o, const Catalog& catalog, const Placement& placement, bool cuda) {
    if (o.instance.empty()) {
        if (cuda) {
            throw InputError(
                "--backend cuda needs --instance NAME, the catalog instance the GPU hosts are (for "
                "example p4d.24xlarge; `epochcast catalog` lists them): GPU hosts are not measured "
                "into a catalog entry");
        }
        return;
    }
    const InstanceSpec& instance = catalog.instance(o.instance);  // unknown: InputError listing the known
    const bool gpu = catalog.device_kind(instance) == DeviceKind::gpu;
    if (gpu != cuda) {
        throw InputError("--instance " + o.instance +
                         (gpu ? " has GPUs (" + instance.gpu +
                                    "), and --backend cpu "
                                    "trains on the CPUs, which the catalog does not "
                                    "describe: give --backend cuda, or leave out "
                                    "--instance to measure the hosts"
                              : " has no GPU; --backend cuda needs a GPU instance"));
    }
    const int per_node = placement.layout ? placement.layout->ranks_per_node : placement.ranks;
    if (cuda && per_node > instance.gpus) {
        throw InputError("--instance " + o.instance + " has " + std::to_string(instance.gpus) + " GPUs, and " +
                         std::to_string(per_node) + " ranks would run on each node (one rank per GPU)");
    }
}

/// The longest --watchdog: a year without a step is a stalled job.
constexpr double kMaxWatchdogS = 365.0 * 24 * 3600;

void check_options(const RunOptions& o, const std::vector<std::string>& train_flags) {
    // 1e300 printed 301 digits and 1e-300 "0 s", which killed the job at its second step.
    if (o.watchdog_s && !(*o.watchdog_s == 0 || (*o.watchdog_s >= 1 && *o.watchdog_s <= kMaxWatchdogS))) {
        throw InputError("run: --watchdog must be 0 (off) or from 1 to " + format_count(kMaxWatchdogS) +
                         " seconds (a year)");
    }
    if (!(std::isfinite(o.network_test_max_mib) && o.network_test_max_mib >= 1.0 / 1024 &&
          o.network_test_max_mib <= kMaxNetworkTestMiB)) {
        throw InputError("--network-test-max-mib must be from 1/1024 (1 KiB) to " +
                         format_number(kMaxNetworkTestMiB, 0) + " MiB");
    }
    for (const char* ours : {"--np", "--ps-ranks", "--instance", "--describe-host", "--allreduce-sweep"}) {
        if (flag_value(train_flags, ours) || std::count(train_flags.begin(), train_flags.end(), ours)) {
            throw InputError(std::string("run: ") + ours + " is " +
                             (std::string(ours) == "--describe-host" || std::string(ours) == "--allreduce-sweep"
                                  ? "run's own step, not a training flag"
                                  : "given twice"));
        }
    }
}

/// The trainer's flag `name` as a whole number, `fallback` when it is not given; nullopt when it
/// is no int (the trainer names such a value itself).
std::optional<int> int_flag(const std::vector<std::string>& flags, std::string_view name, int fallback) {
    const std::optional<std::string> given = flag_value(flags, name);
    if (!given) return fallback;
    int value = 0;
    const char* end = given->data() + given->size();
    const auto [stop, error] = std::from_chars(given->data(), end, value);
    if (error != std::errc() || stop != end) return std::nullopt;
    return value;
}

/// epochcast-train's bounds (executor/train_limits.hpp), checked before anything starts: those
/// that depend on the host against this one when every rank runs here; with other hosts their own
/// trainers check them. A value that is no number or name is left to the trainer, which names it.
void check_train_flags(const std::vector<std::string>& flags, const Placement& placement) {
    TrainerShape shape;
    const std::optional<int> image_size = int_flag(flags, "--image-size", shape.image_size);
    const std::optional<int> batch = int_flag(flags, "--batch-per-gpu", shape.batch_per_gpu);
    const std::optional<int> threads = int_flag(flags, "--threads", shape.threads);
    const std::optional<int> data_threads = int_flag(flags, "--data-threads", shape.data_threads);
    const std::optional<int> classes = int_flag(flags, "--classes", 0);
    if (!image_size || !batch || !threads || !data_threads || !classes) return;
    shape.backend = flag_value(flags, "--backend").value_or(shape.backend);
    shape.model = flag_value(flags, "--model").value_or(shape.model);
    shape.image_size = *image_size;
    shape.batch_per_gpu = *batch;
    shape.threads = *threads;
    shape.data_threads = *data_threads;
    if (flag_value(flags, "--classes")) shape.classes = *classes;
    if (const std::optional<std::string> precision = flag_value(flags, "--precision")) {
        try {
            shape.precision = parse_precision(*precision, "--precision");
        } catch (const InputError&) {
            return;
        }
    }
    const HostCapacity here = this_host_capacity();
    check_trainer_limits(shape, placement.other_hosts.empty() ? &here : nullptr);
}

void run_run(const RunOptions& o, const std::vector<std::string>& given_flags, std::ostream& out) {
    check_options(o, given_flags);
    if (o.ranks && *o.ranks < 1)
        throw InputError("run: --np must be at least 1 (got " + std::to_string(*o.ranks) + ")");
    const Placement placement = place(o, out);
    check_train_flags(given_flags, placement);
    if (o.ps_ranks < 0 || o.ps_ranks >= placement.ranks) {
        throw InputError("run: --ps-ranks must be between 0 and --np - 1 = " + std::to_string(placement.ranks - 1) +
                         " (at least one rank trains; got " + std::to_string(o.ps_ranks) + ")");
    }
    const bool cuda = flag_value(given_flags, "--backend").value_or("cpu") == "cuda";
    // Everything that can be checked is checked before anything starts, the outputs first.
    std::vector<std::string> inputs = o.catalogs;
    inputs.push_back(calibration_file(o.calibration));
    inputs.push_back(o.host_catalog);
    inputs.push_back(o.hostfile);
    check_outputs({{"--save-host-catalog", o.save_host_catalog}, {"--trace-out", o.trace_out}}, inputs);
    Catalog catalog = load_catalog(o.catalogs);
    const Calibration calibration = load_calibration(o.calibration);
    if (!o.host_catalog.empty()) catalog.merge(Catalog::load(o.host_catalog, catalog));
    check_instance(o, catalog, placement, cuda);
    const std::string& launcher_name = placement.launcher == Launcher::srun ? o.srun : o.mpirun;
    const std::optional<std::string> launcher = find_program(launcher_name);
    if (!launcher) {
        if (placement.launcher == Launcher::srun) throw RunError("srun '" + o.srun + "' not found or not executable");
        throw RunError(o.mpirun == "mpirun" ? "mpirun not found on PATH; install openmpi-bin (or give --mpirun PATH)"
                                            : "mpirun '" + o.mpirun + "' not found or not executable");
    }
    const std::string train_program = find_train_program();

    // The trainer's flags: a checkpoint folder every rank finds whatever its working folder, and
    // the instance named.
    std::vector<std::string> train_flags = given_flags;
    std::string checkpoint_dir;
    if (const std::optional<std::string> given = flag_value(train_flags, "--checkpoint-dir")) {
        checkpoint_dir = std::filesystem::absolute(*given).lexically_normal().string();
        train_flags = with_flag_value(train_flags, "--checkpoint-dir", checkpoint_dir);
    }
    if (!o.instance.empty()) train_flags.insert(train_flags.end(), {"--instance", o.instance});

    // The run's folder: shared with every host when the ranks leave this one.
    const bool shared = !placement.other_hosts.empty();
    const std::filesystem::path base = !o.shared_dir.empty() ? std::filesystem::absolute(o.shared_dir)
                                       : shared              ? std::filesystem::current_path()
                                                             : temporary_folder(", or give --shared-dir");
    // Ctrl-C, SIGTERM and SIGHUP stop the job and end `run` through its destructors, which remove
    // the run's folder and mpirun's temporary folder (the guard outlives the folders).
    const InterruptGuard interrupt_guard;
    const RunFolder folder(base, "epochcast-run", "the run's folder", "give --shared-dir a folder you can write");
    // mpirun's TMPDIR, for Open MPI's session folder (docs/cli.md, "run", "mpirun's temporary
    // folder"). Never in a run's folder shared with other hosts: Open MPI keeps this host's shared
    // memory there, which is not to be on a network filesystem.
    std::optional<RunFolder> mpirun_temporary;
    if (placement.launcher == Launcher::mpirun) {
        mpirun_temporary.emplace(shared ? temporary_folder() : folder.path(), "epochcast-mpi",
                                 "mpirun's temporary folder", "set TMPDIR to a folder you can write");
    }
    if (shared) {
        HostRequirements needs{train_program, {folder.path().string()}};
        if (!checkpoint_dir.empty()) needs.folders.push_back(std::filesystem::path(checkpoint_dir).parent_path());
        const auto start = std::chrono::steady_clock::now();
        const std::size_t hosts = placement.other_hosts.size();
        const std::string plural = hosts == 1 ? "" : "s";
        out << "epochcast run: checking "
            << (placement.slurm ? "the " + std::to_string(hosts) + " node" + plural + " of Slurm job " +
                                      placement.slurm->job_id + " through srun"
                                : std::to_string(hosts) + " other host" + plural)
            << " (reachable, " << train_program << ", " << folder.path().string() << ")\n"
            << std::flush;
        const std::vector<HostProblem> problems =
            placement.launcher == Launcher::srun ? check_hosts_by_srun(placement.other_hosts, needs, *launcher)
                                                 : check_hosts_by_shell(placement.other_hosts, needs, remote_shell());
        if (!problems.empty()) throw RunError(describe_problems(problems));
        out << "epochcast run: every host is ready ("
            << format_number(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1)
            << " s)\n";
    }

    LaunchRequest request;
    request.launcher = placement.launcher;
    request.mpirun = *launcher;
    request.train_program = train_program;
    request.ranks = placement.ranks;
    request.ps_ranks = o.ps_ranks;
    request.online_cores = std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
    request.root = ::geteuid() == 0;
    request.train_flags = train_flags;
    request.layout = placement.layout;
    std::vector<std::string> environment;
    for (char** variable = environ; *variable; ++variable) environment.emplace_back(*variable);
    if (shared) request.forwarded_variables = forwarded_variables(environment);
    const std::string trace_path = (folder.path() / "trace.json").string();
    request.trace_out = trace_path;
    ChildControl control;
    control.environment = launcher_environment(placement.launcher, environment);
    control.environment.push_back(std::string(kProgressDirVariable) + "=" + folder.path().string());
    if (mpirun_temporary) control.environment.push_back("TMPDIR=" + mpirun_temporary->path().string());
    control.interrupted = &g_interrupted;

    std::optional<NetworkMeasurement> network;
    if (!o.no_network_test && placement.ranks >= 2) {
        network = measure_network(o, request, train_flags, control, folder.path(), out);
    }

    const std::vector<std::string> argv = launcher_argv(request);
    out << "epochcast run: " << command_line(argv) << "\n"
        << "epochcast run: progress reports in " << folder.path().string()
        << "; watchdog: " << watchdog_description(o.watchdog_s) << "\n"
        << std::flush;
    std::optional<Watchdog> watchdog;
    if (!o.watchdog_s || *o.watchdog_s > 0) {
        watchdog.emplace(folder.path(), placement.ranks, o.watchdog_s, std::chrono::steady_clock::now());
        // srun's ranks are Slurm's to kill (--kill-on-bad-exit); mpirun's hosts are reached as it reaches them.
        if (placement.launcher == Launcher::srun) watchdog->reach_other_hosts_by({});
    }
    control.watchdog = watchdog ? &*watchdog : nullptr;
    const ChildExit exit = run_child(argv, &out, nullptr, true, control);
    throw_if_interrupted("the training; the job was stopped");
    if (!exit.success()) {
        throw_if_slurm_refused(exit.output_tail, argv, "the training's job step");
        throw_run_failure(exit, folder.path(), placement.ranks,
                          placement.launcher == Launcher::srun ? "srun" : "mpirun");
    }
    if (!std::filesystem::exists(trace_path)) {
        throw RunError("epochcast-train finished but wrote no trace at " + trace_path +
                       (shared ? " (rank 0's host must write into the shared folder)" : ""));
    }

    const int threads = trace_threads(trace_path);
    std::vector<NodePeaks> nodes;
    if (o.instance.empty()) {
        HostDescription hosts = describe_hosts(o, request, threads, catalog, control);
        catalog.merge(hosts.catalog);
        nodes = std::move(hosts.nodes);
    }
    Trace trace = read_trace(trace_path, catalog);
    if (trace.runs.empty()) throw RunError(trace_path + ": the trace holds no run");
    TraceRun& measured = trace.runs.front();
    const Scenario& scenario = measured.observation.scenario;
    print_node_peaks(nodes, scenario.precision, out);
    measured.raw["launch"] = launch_json(placement, argv);
    if (network) {
        network->instance = scenario.instance;
        trace.networks.push_back(*network);
    }

    out << "\nPredicted (" << (o.calibration == "built-in" ? "built-in calibration" : o.calibration)
        << ") beside measured, " << scenario.instance << " x " << scenario.nodes << " node"
        << (scenario.nodes > 1 ? "s" : "") << " x " << scenario.gpus_per_node << " rank"
        << (scenario.gpus_per_node > 1 ? "s" : "")
        << (cuda ? "" : " x " + std::to_string(threads) + " thread") + (!cuda && threads > 1 ? "s" : "") << ", "
        << scenario.model << " " << scenario.image_size << " px, batch " << scenario.batch_per_gpu << ", "
        << to_string(scenario.precision) << ":\n";
    const CostModel model(catalog, calibration);
    try {
        const ResolvedScenario resolved = model.resolve(scenario);
        print_comparison(measured.observation, measured.raw, model.predict(resolved), out);
        if (resolved.curve_origin != CurveOrigin::measured) {
            print_calibration_hint(measured.observation, !o.instance.empty(), out);
        }
    } catch (const InputError& error) {
        // The run succeeded; only the model has nothing to say about it (say, more ranks than cores).
        out << "no prediction for this run: " << error.what() << "\n";
    }
    if (network) print_network(*network, catalog, calibration, scenario.nodes, out);
    if (!o.trace_out.empty()) {
        write_trace(trace, o.trace_out);
        out << "trace: " << o.trace_out << "\n";
    }
}

}  // namespace

void register_run(CLI::App& app, std::ostream& out) {
    auto options = std::make_shared<RunOptions>();
    CLI::App* cmd = app.add_subcommand(
        "run",
        "Train for real on this host or your cluster: start epochcast-train under mpirun or srun (flags not listed "
        "here go to it verbatim: --backend, --model, --image-size, --batch-per-gpu, --precision, --threads, "
        "--steps, --data, ...), then print the model's prediction for the same configuration and cluster beside "
        "what was measured. epochcast-train is looked for beside epochcast, or at $EPOCHCAST_TRAIN, and must be at "
        "the same path on every host.");
    cmd->allow_extras();
    without_default(cmd->add_option("--np", options->ranks,
                                    "MPI ranks in all, parameter servers included (default: every slot of "
                                    "--hostfile/--host, or the Slurm allocation's tasks)"));
    cmd->add_option("--ps-ranks", options->ps_ranks, "Ranks serving parameters (parameter-server mode); 0: all-reduce");
    cmd->add_option("--hostfile", options->hostfile,
                    "Open MPI hostfile: one 'HOST slots=N' per line (N: GPUs, or cores / --threads)");
    cmd->add_option("--host", options->hosts, "Hosts and their slots, as mpirun's -H: h1:N,h2:N");
    cmd->add_option("--launcher", options->launcher,
                    "mpirun, or srun inside a Slurm allocation (the ranks spread evenly over its nodes)");
    cmd->add_option("--instance", options->instance,
                    "The catalog instance the hosts are (e.g. p4d.24xlarge): the trace and the prediction name it. "
                    "Default: measure the hosts as local-cpu (CPU backend)");
    cmd->add_option("--shared-dir", options->shared_dir,
                    "Folder every host mounts at the same path, for the run's progress reports and trace (default: "
                    "the current folder when other hosts run ranks, else the temporary folder)");
    cmd->add_option("--trace-out", options->trace_out,
                    "Write the run as an epochcast.trace/1 file: the measurement, the launcher line and hosts, and "
                    "the all-reduce sweep");
    cmd->add_flag("--no-network-test", options->no_network_test,
                  "Skip the all-reduce sweep across the ranks before training");
    cmd->add_option("--network-test-max-mib", options->network_test_max_mib,
                    "Largest all-reduce of the sweep, MiB (it doubles from 8 bytes)");
    add_calibration_option(*cmd, options->calibration);
    cmd->add_option("--host-catalog", options->host_catalog,
                    "Catalog file with the local-cpu entry (default: measure it with epochcast-train --describe-host)");
    cmd->add_option("--save-host-catalog", options->save_host_catalog,
                    "Write the measured local-cpu catalog to this file (to calibrate with later)");
    add_catalog_option(*cmd, options->catalogs);
    cmd->add_option("--mpirun", options->mpirun, "The mpirun program (default: mpirun on PATH)");
    cmd->add_option("--srun", options->srun, "The srun program, with --launcher srun (default: srun on PATH)");
    cmd->add_option("--watchdog", options->watchdog_s,
                    "Seconds a rank may go without finishing a step before the job is killed and reported with "
                    "the rank and its host (a rank stopped or hung in a collective never dies by itself); 0 turns "
                    "it off. Default: 10 x the slowest step so far, at least 300 s (steps vary with data loading, "
                    "checkpoint writes and epoch ends; start-up lists the data and builds the network, minutes on "
                    "ImageNet over a network file system). Start-up and the first step always get at least 300 s.");
    cmd->callback([options, cmd, &out] { run_run(*options, cmd->remaining(), out); });
}

}  // namespace epochcast::cli
