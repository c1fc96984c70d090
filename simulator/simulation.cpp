// simulate(): checks, resolution, and the child process that runs SimGrid (simulation.hpp says why).
#include "simulator/simulation.hpp"

#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/errors.hpp"
#include "model/text_io.hpp"
#include "simulator/replay.hpp"

namespace epochcast::sim {

double framework_cycle_time_s(Framework framework) {
    return framework == Framework::pytorch || framework == Framework::epochcast ? 0.0 : kHorovodCycleTimeS;
}

namespace {

using nlohmann::json;

constexpr double kKiBPerMiB = 1024.0;
constexpr double kBytesPerKiB = 1024.0;

json result_to_json(const SimulationResult& r) {
    return {{"iteration_s", r.iteration_s},
            {"compute_s", r.compute_s},
            {"sync_s", r.sync_s},
            {"exposed_communication_s", r.exposed_communication_s},
            {"communication_s", r.communication_s},
            {"data_s", r.data_s},
            {"jitter", r.jitter},
            {"overlap", r.overlap},
            {"granularity", to_string(r.granularity)},
            {"network_model", to_string(r.network_model)},
            {"buckets_per_iteration", r.buckets_per_iteration},
            {"transfers", r.transfers},
            {"executions", r.executions},
            {"simulated_s", r.simulated_s},
            {"wall_s", r.wall_s},
            {"timeline_written", r.timeline_written}};
}

SimulationResult result_from_json(const json& j) {
    SimulationResult r;
    r.iteration_s = j.at("iteration_s").get<std::vector<double>>();
    r.compute_s = j.at("compute_s");
    r.sync_s = j.at("sync_s");
    r.exposed_communication_s = j.at("exposed_communication_s");
    r.communication_s = j.at("communication_s");
    r.data_s = j.at("data_s");
    r.jitter = j.at("jitter");
    r.overlap = j.at("overlap");
    r.granularity = parse_granularity(j.at("granularity").get<std::string>());
    r.network_model = parse_network_model(j.at("network_model").get<std::string>());
    r.buckets_per_iteration = j.at("buckets_per_iteration");
    r.transfers = j.at("transfers");
    r.executions = j.at("executions");
    r.simulated_s = j.at("simulated_s");
    r.wall_s = j.at("wall_s");
    r.timeline_written = j.at("timeline_written");
    return r;
}

void write_all(int fd, const std::string& text) {
    std::size_t written = 0;
    while (written < text.size()) {
        const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        written += static_cast<std::size_t>(n);
    }
}

/// The child's progress lines ("progress K\n"), then its reply (one line of JSON).
constexpr std::string_view kProgressPrefix = "progress ";
/// How often the parent looks at the cancel flag while it waits for the child, in milliseconds.
constexpr int kCancelPollMs = 50;

/// Read the child's output until it closes the pipe, passing progress lines to `options` and
/// killing the child when `options.cancel` turns true. Returns the reply line; sets `cancelled`.
std::string read_reply(int fd, pid_t child, const SimulationOptions& options, int iterations, bool& cancelled) {
    std::string pending, reply;
    char buffer[65536];
    cancelled = false;
    for (;;) {
        if (options.cancel && options.cancel->load()) {
            ::kill(child, SIGKILL);
            cancelled = true;
            return {};
        }
        struct pollfd p {
            fd, POLLIN, 0
        };
        const int ready = ::poll(&p, 1, kCancelPollMs);
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) continue;
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        pending.append(buffer, static_cast<std::size_t>(n));
        std::size_t line_end;
        while ((line_end = pending.find('\n')) != std::string::npos) {
            const std::string line = pending.substr(0, line_end);
            pending.erase(0, line_end + 1);
            if (line.starts_with(kProgressPrefix)) {
                if (options.on_progress)
                    options.on_progress(std::stoi(line.substr(kProgressPrefix.size())), iterations);
            } else {
                reply += line;
            }
        }
    }
    return reply + pending;
}

/// The address space this process has mapped now, in bytes (/proc/self/statm's first figure); 0
/// where it cannot be read.
double mapped_bytes() {
    std::FILE* statm = std::fopen("/proc/self/statm", "r");
    if (!statm) return 0;
    unsigned long pages = 0;
    const bool read = std::fscanf(statm, "%lu", &pages) == 1;
    std::fclose(statm);
    return read ? static_cast<double>(pages) * static_cast<double>(::sysconf(_SC_PAGESIZE)) : 0.0;
}

/// The address-space limit (ulimit -v) in bytes, or nullopt where there is none.
std::optional<double> address_space_limit_bytes() {
    struct rlimit limit {};
    if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
    return static_cast<double>(limit.rlim_cur);
}

/// What the child wrote on its standard error (kept in `fd`, a memory file), at most 64 KiB.
std::string child_stderr(int fd) {
    std::string text;
    if (fd < 0 || ::lseek(fd, 0, SEEK_SET) != 0) return text;
    char buffer[4096];
    ssize_t n = 0;
    while (text.size() < 65536 && ((n = ::read(fd, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR))) {
        if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
    }
    return text;
}

/// SimGrid's own word on why the child failed: the text of its first CRITICAL log line ("Failed to
/// allocate stack."), without the backtrace that follows it; empty where it wrote none.
std::string simgrid_reason(const std::string& text) {
    const std::size_t at = text.find("[root/CRITICAL] ");
    if (at == std::string::npos) return "";
    const std::size_t begin = at + std::string_view("[root/CRITICAL] ").size();
    return escape_for_message(text.substr(begin, text.find('\n', begin) - begin));
}

/// Run `input` in a forked child; the child sends its progress and its result (or its error) back.
/// Its standard error is kept apart: SimGrid's abort writes a backtrace there, which the parent
/// turns into one line (and passes on whole only when the run succeeds).
SimulationResult run_in_child(RunInput input, const SimulationOptions& options) {
    int fds[2];
    if (::pipe(fds) != 0) throw RunError("cannot create a pipe for the simulation");
    const int err_fd = ::memfd_create("epochcast-simulation-stderr", MFD_CLOEXEC);
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        if (err_fd >= 0) ::close(err_fd);
        throw RunError("cannot fork the simulation process");
    }
    if (pid == 0) {
        // Killed when the parent dies, however it dies (a SIGKILL'd `simulate` left its child
        // simulating, and once writing --timeline after the command had ended); a parent already
        // gone before the request took effect: end now.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(1);
        ::close(fds[0]);
        if (err_fd >= 0) ::dup2(err_fd, STDERR_FILENO);
        const int out = fds[1];
        input.on_iteration = [out](int iteration) {
            write_all(out, std::string(kProgressPrefix) + std::to_string(iteration + 1) + "\n");
        };
        json reply;
        try {
            reply = result_to_json(run_simulation(input));
        } catch (const InputError& error) {
            reply = {{"error", "input"}, {"message", error.what()}};
        } catch (const std::exception& error) {
            reply = {{"error", "run"}, {"message", error.what()}};
        }
        write_all(out, reply.dump() + "\n");
        ::close(out);
        ::_exit(0);  // no atexit handlers, no SimGrid teardown, no flushing of the parent's buffers
    }
    ::close(fds[1]);
    if (options.on_child_started) options.on_child_started();
    bool cancelled = false;
    const std::string text = read_reply(fds[0], pid, options, input.iterations, cancelled);
    ::close(fds[0]);
    int status = 0;
    struct rusage usage {};
    while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
    }
    const std::string errors = child_stderr(err_fd);
    if (err_fd >= 0) ::close(err_fd);
    if (cancelled) {
        // The child writes its timeline atomically (temporary file, then rename): none is left half-written.
        throw SimulationCancelled();
    }
    if (!WIFEXITED(status) || text.empty()) {
        const std::string reason = simgrid_reason(errors);
        const std::optional<double> limit = address_space_limit_bytes();
        throw RunError((WIFSIGNALED(status)
                            ? "the simulation process died (signal " + std::to_string(WTERMSIG(status)) + ")"
                            : std::string("the simulation process ended without a result")) +
                       (reason.empty() ? std::string() : ": SimGrid says \"" + reason + "\"") +
                       (limit ? " (this process's address-space limit, ulimit -v, is " + format_gib(*limit) +
                                    " GiB: a larger simulation needs more)"
                              : std::string()));
    }
    std::cerr << errors;
    const json reply = parse_json_or_discarded(text);
    if (reply.is_object() && reply.contains("error")) {
        const std::string message = reply.value("message", std::string("no message"));
        if (reply.at("error") == "input") throw InputError(message);
        throw RunError("simulation failed: " + message);
    }
    SimulationResult result;
    try {
        result = result_from_json(reply);
    } catch (const json::exception&) {
        // A NaN or an infinity travels as null: the options' limits should make that impossible.
        throw RunError("the simulation process returned a result that is not a set of finite figures");
    }
    result.peak_memory_MiB = static_cast<double>(usage.ru_maxrss) / kKiBPerMiB;  // ru_maxrss is in KiB on Linux
    return result;
}

/// Shortest text of a finite option value, for error messages ("1.5", "1e+300").
std::string format_number(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
}

/// True when `value` lies in [low, high] (false for NaN).
bool within(double value, double low, double high) { return value >= low && value <= high; }

/// The options' limits (simulation.hpp), each refused with a one-line InputError naming its flag.
void check_options(const SimulationOptions& options) {
    checked_iterations(options.iterations);
    if (options.jitter && !within(*options.jitter, 0, kMaxJitter)) {
        throw InputError("--jitter must be from 0 to " + format_number(kMaxJitter) +
                         " (a coefficient of variation of a GPU's compute time, e.g. 0.05; got " +
                         format_number(*options.jitter) + ")");
    }
    for (const SlowNode& slow : options.slow_nodes) {
        if (slow.node < 0 || !within(slow.factor, 1, kMaxSlowNodeFactor)) {
            throw InputError("--slow-node: the node index must be 0 or more and the factor from 1 to " +
                             format_number(kMaxSlowNodeFactor));
        }
    }
    if (options.overlap && !within(*options.overlap, 0, 1)) {
        throw InputError("--overlap must be between 0 and 1 (a fraction of the backward pass)");
    }
    if (options.cycle_time_s && !within(*options.cycle_time_s, 0, kMaxCycleTimeS)) {
        throw InputError("--cycle-time-ms must be from 0 to " + format_number(kMaxCycleTimeS * 1e3) + " (got " +
                         format_number(*options.cycle_time_s * 1e3) + ")");
    }
    if (options.topology.rack_nodes < 1) {
        throw InputError("--rack-nodes must be at least 1 (got " + std::to_string(options.topology.rack_nodes) + ")");
    }
    if (!within(options.topology.oversubscription, 1, kMaxOversubscription)) {
        throw InputError("--oversubscription must be from 1 (non-blocking) to " + format_number(kMaxOversubscription) +
                         " (got " + format_number(options.topology.oversubscription) + ")");
    }
}

/// What --granularity auto means for this cluster (docs/model.md, "Simulation"), and where coarse
/// parameter servers are refused: their flows load every NIC as the pairs do on one switch, but
/// not a fat-tree's rack uplinks.
Granularity chosen_granularity(const ResolvedScenario& resolved, const SimulationOptions& options) {
    const bool ps = resolved.strategy == Strategy::ps;
    const bool star = options.topology.kind == TopologyKind::star;
    if (ps && !star && options.granularity == Granularity::coarse) {
        throw InputError(
            "--granularity coarse with --strategy ps needs --topology star (the coarse flows do not cross "
            "racks as the per-pair messages do)");
    }
    if (options.granularity != Granularity::automatic) return options.granularity;
    if (ps) {
        return !star || step_transfers_per_bucket(resolved) <= kPsStepTransfersBudget ? Granularity::step
                                                                                      : Granularity::coarse;
    }
    return step_transfers_per_bucket(resolved) <= kStepTransfersBudget ? Granularity::step : Granularity::coarse;
}

/// A rough wall time of the simulation on the development machine (docs/performance.md): each
/// compute step and transfer costs about 2 us plus 1.1 ns per GPU (SimGrid's sharing solver touches
/// the flows in flight, so the cost per step grows with the GPUs: p4d.24xlarge, 2.0 us at 64 to 512
/// GPUs, 2.9 at 1,024, 3.7 at 2,048, 7.1 at 4,096 and 10.8 at 8,192, on an Intel Xeon,
/// 2026-12-02), plus 1 us per server for the per-pair parameter-server form, whose messages SimGrid
/// scans in lists, or 0.22 us times the servers to the power 0.77 for the coarse form (8 nodes of 8
/// GPUs: 15, 20, 32 and 77 us a transfer at 250, 500, 1,000 and 2,000 servers, same machine and
/// day; 2 nodes at 2,000: 126 us). Only to refuse runs of hours up front: with the transfers counted
/// at most (transfers_per_iteration) it is from about 0.7 to 3 times the measured cases.
double estimated_wall_s(const ResolvedScenario& s, const ReplayPlan& plan, Granularity granularity, int iterations) {
    const double gpus = static_cast<double>(s.nodes) * s.gpus_per_node;
    const double steps =
        gpus * static_cast<double>(plan.backward.size() + 1) + transfers_per_iteration(s, plan, granularity);
    double per_step_s = 2e-6 + 1.1e-9 * gpus;
    if (s.strategy == Strategy::ps) {
        const double servers = s.ps_colocated ? s.nodes : s.ps_nodes;
        per_step_s += granularity == Granularity::step ? 1e-6 * servers : 0.22e-6 * std::pow(servers, 0.77);
    }
    return iterations * steps * per_step_s;
}

/// Refuse a run estimated to take more than kMaxEstimatedWallS, saying what would fit
/// (`coarse_allowed`: whether --granularity coarse is an option here).
void check_cost(const ResolvedScenario& s, const ReplayPlan& plan, Granularity granularity, int iterations,
                bool coarse_allowed) {
    const double total_s = estimated_wall_s(s, plan, granularity, iterations);
    if (total_s <= kMaxEstimatedWallS) return;
    const double one_s = estimated_wall_s(s, plan, granularity, 1);
    std::string advice;
    if (one_s <= kMaxEstimatedWallS) {
        advice = "use at most " + format_count(std::floor(kMaxEstimatedWallS / one_s)) + " --iterations here";
    } else {
        advice = "even one iteration would take about " + wall_time_text(one_s) + ": use fewer --nodes" +
                 (s.strategy == Strategy::ps && !s.ps_colocated ? " or --ps-nodes" : "");
    }
    if (granularity == Granularity::step && coarse_allowed) advice += ", --granularity coarse";
    throw InputError("simulate would run for about " + wall_time_text(total_s) + ", over its limit of " +
                     wall_time_text(kMaxEstimatedWallS) + ": " + advice + ", or predict");
}

/// Issue 59, item 7: under `ulimit -v` SimGrid aborted with a backtrace when an actor's stack could
/// not be mapped (2,048 nodes, co-located servers: 24,576 actors). Each actor maps its stack and a
/// guard page; refuse a run whose stacks alone do not fit what the limit leaves.
void check_address_space(const ResolvedScenario& s) {
    const std::optional<double> limit = address_space_limit_bytes();
    if (!limit) return;
    constexpr double kGuardKiB = 8;  // the guard page, and the rounding of each mapping
    const long actors = actors_of(s);
    const double needed = static_cast<double>(actors) * (kActorStackKiB + kGuardKiB) * kBytesPerKiB;
    const double left = *limit - mapped_bytes();
    if (needed <= left) return;
    throw InputError("simulate would map about " + format_gib(needed) + " GiB of stacks for its " +
                     format_count(static_cast<double>(actors)) + " simulated actors (" +
                     std::to_string(kActorStackKiB) + " KiB each), more than the " + format_gib(std::max(left, 0.0)) +
                     " GiB this process's address-space limit (ulimit -v, " + format_gib(*limit) +
                     " GiB) leaves: simulate fewer --nodes, raise the limit, or predict");
}

double percentile(std::vector<double> sorted, double q) {
    if (sorted.empty()) return 0;
    const double position = q * static_cast<double>(sorted.size() - 1);
    const auto low = static_cast<std::size_t>(std::floor(position));
    const auto high = static_cast<std::size_t>(std::ceil(position));
    return sorted[low] + (position - static_cast<double>(low)) * (sorted[high] - sorted[low]);
}

}  // namespace

std::string_view to_string(Granularity granularity) {
    switch (granularity) {
        case Granularity::automatic:
            return "auto";
        case Granularity::step:
            return "step";
        case Granularity::coarse:
            return "coarse";
    }
    return "?";
}

Granularity parse_granularity(std::string_view text, std::string_view what) {
    if (text == "auto") return Granularity::automatic;
    if (text == "step") return Granularity::step;
    if (text == "coarse") return Granularity::coarse;
    throw InputError(std::string(what) + " must be auto, step or coarse (got '" + std::string(text) + "')");
}

std::string_view to_string(NetworkModel model) {
    switch (model) {
        case NetworkModel::cm02:
            return "cm02";
        case NetworkModel::lv08:
            return "lv08";
    }
    return "?";
}

NetworkModel parse_network_model(std::string_view text, std::string_view what) {
    if (text == "cm02" || text == "CM02") return NetworkModel::cm02;
    if (text == "lv08" || text == "LV08") return NetworkModel::lv08;
    throw InputError(std::string(what) + " must be cm02 or lv08 (got '" + std::string(text) + "')");
}

std::string_view to_string(TopologyKind kind) {
    switch (kind) {
        case TopologyKind::star:
            return "star";
        case TopologyKind::fat_tree:
            return "fat-tree";
    }
    return "?";
}

TopologyKind parse_topology(std::string_view text, std::string_view what) {
    if (text == "star") return TopologyKind::star;
    if (text == "fat-tree") return TopologyKind::fat_tree;
    throw InputError(std::string(what) + " must be star or fat-tree (got '" + std::string(text) + "')");
}

int checked_iterations(double iterations) {
    if (!within(iterations, 1, kMaxIterations) || iterations != std::floor(iterations)) {
        throw InputError("--iterations must be a whole number from 1 to " + std::to_string(kMaxIterations) + " (got " +
                         format_number(iterations) + ")");
    }
    return static_cast<int>(iterations);
}

SlowNode parse_slow_node(std::string_view text, std::string_view what) {
    const std::string value(text);
    const auto colon = value.find(':');
    const std::string problem = std::string(what) + " takes NODE:FACTOR, e.g. 3:1.5 (got '" + value + "')";
    if (colon == std::string::npos) throw InputError(problem);
    SlowNode slow;
    try {
        std::size_t used = 0;
        slow.node = std::stoi(value.substr(0, colon), &used);
        if (used != colon) throw InputError(problem);
        const std::string factor = value.substr(colon + 1);
        slow.factor = std::stod(factor, &used);
        if (used != factor.size()) throw InputError(problem);
    } catch (const std::logic_error&) {  // stoi / stod: not a number, or out of range
        throw InputError(problem);
    }
    if (slow.node < 0) throw InputError(std::string(what) + ": the node index must be 0 or more (got '" + value + "')");
    if (!(slow.factor >= 1 && slow.factor <= kMaxSlowNodeFactor)) {
        throw InputError(std::string(what) + ": the factor must be from 1 to " + format_number(kMaxSlowNodeFactor) +
                         " (got '" + value + "')");
    }
    return slow;
}

Distribution describe(const std::vector<double>& samples) {
    Distribution d;
    if (samples.empty()) return d;
    std::vector<double> sorted = samples;
    std::sort(sorted.begin(), sorted.end());
    const double n = static_cast<double>(samples.size());
    d.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
    double squares = 0;
    for (double x : samples) squares += (x - d.mean) * (x - d.mean);
    d.stdev = samples.size() > 1 ? std::sqrt(squares / (n - 1)) : 0.0;
    d.min = sorted.front();
    d.max = sorted.back();
    d.p50 = percentile(sorted, 0.5);
    d.p95 = percentile(sorted, 0.95);
    return d;
}

namespace {

/// What simulate() runs, checked (the options, the scenario, the GPUs, the slow nodes, the
/// timeline's folder) and resolved, before its cost is checked.
struct PreparedRun {
    RunInput input;
    bool coarse_allowed = true;  ///< whether --granularity coarse is an option here
};

PreparedRun prepare(const CostModel& model, const Scenario& scenario, const SimulationOptions& options) {
    check_options(options);
    const ResolvedScenario resolved = model.resolve(scenario);
    const long gpus = static_cast<long>(resolved.nodes) * resolved.gpus_per_node;
    if (gpus > kMaxSimulatedGpus) {
        throw InputError("simulate takes at most " + format_count(static_cast<double>(kMaxSimulatedGpus)) +
                         " GPUs (got " + format_count(static_cast<double>(gpus)) +
                         " from --nodes and --gpus-per-node); predict has no such limit");
    }
    for (const SlowNode& slow : options.slow_nodes) {
        if (slow.node >= resolved.nodes) {
            throw InputError("--slow-node " + std::to_string(slow.node) + ":" + format_number(slow.factor) +
                             ": the cluster has nodes 0 to " + std::to_string(resolved.nodes - 1));
        }
    }
    if (!options.timeline_path.empty()) {
        const std::filesystem::path path(options.timeline_path);
        const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
        if (!std::filesystem::is_directory(folder)) {
            throw InputError("cannot write timeline file '" + options.timeline_path + "': no folder '" +
                             folder.string() + "'");
        }
    }

    PreparedRun prepared;
    RunInput& input = prepared.input;
    input.scenario = resolved;
    const Architecture architecture = build_resnet(scenario.model, scenario.image_size, scenario.classes);
    input.plan =
        make_replay_plan(architecture, resolved, scenario.precision, options.overlap.value_or(resolved.overlap));
    input.iterations = options.iterations;
    input.seed = options.seed;
    input.jitter = options.jitter.value_or(resolved.sync_jitter);
    input.slow_nodes = options.slow_nodes;
    input.granularity = chosen_granularity(resolved, options);
    prepared.coarse_allowed = resolved.strategy != Strategy::ps || options.topology.kind == TopologyKind::star;
    input.network_model = options.network_model;
    input.topology = options.topology;
    input.cycle_time_s = options.cycle_time_s.value_or(framework_cycle_time_s(scenario.framework));
    input.fusion_threshold_bytes = resolved.bucket_bytes;
    input.data_s = data_time_s(resolved.batch_per_gpu, input_images_per_s_per_gpu(resolved));
    // The closed form's step (eq. I1, without the straggler wait) leads the replay in.
    const IterationTimes closed_form = iteration_times(resolved);
    input.lead_step_s = closed_form.compute_s + closed_form.exposed_communication_s;
    input.timeline_path = options.timeline_path;
    return prepared;
}

}  // namespace

std::string wall_time_text(double seconds) {
    char text[64];
    if (seconds < 2 * 3600) {
        std::snprintf(text, sizeof text, "%.0f minutes", seconds / 60);
    } else {
        std::snprintf(text, sizeof text, "%.0f hours", seconds / 3600);
    }
    return text;
}

double estimated_simulation_s(const CostModel& model, const Scenario& scenario, const SimulationOptions& options) {
    const PreparedRun prepared = prepare(model, scenario, options);
    const RunInput& input = prepared.input;
    return estimated_wall_s(input.scenario, input.plan, input.granularity, input.iterations);
}

SimulationResult simulate(const CostModel& model, const Scenario& scenario, const SimulationOptions& options) {
    PreparedRun prepared = prepare(model, scenario, options);
    const RunInput& input = prepared.input;
    check_cost(input.scenario, input.plan, input.granularity, input.iterations, prepared.coarse_allowed);
    check_address_space(input.scenario);
    return run_in_child(std::move(prepared.input), options);
}

}  // namespace epochcast::sim
