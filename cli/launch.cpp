#include "cli/launch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/preflight.hpp"
#include "cli/table.hpp"
#include "executor/progress.hpp"
#include "model/errors.hpp"
#include "model/text_io.hpp"

extern char** environ;

namespace epochcast::cli {
namespace {

/// How long output is still read after the child ended (its own children may hold the pipe).
constexpr std::chrono::milliseconds kDrainAfterExit{1500};
/// How often the child is checked for having ended while it is quiet.
constexpr int kPollMilliseconds = 200;
/// Lines of output kept for error messages, and the most bytes kept to find them in.
constexpr std::size_t kTailLines = 12;
constexpr std::size_t kTailKeptBytes = 1 << 20;

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

std::string read_whole_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// The N of "<prefix>N<suffix>" when `name` is exactly that, else -1.
int rank_of(const std::string& name, const std::string& prefix, const std::string& suffix) {
    if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
        return -1;
    }
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoi(digits);
}

/// The reports of `directory` named "rank-N<suffix>", parsed, by rank; unreadable ones skipped.
std::map<int, nlohmann::json> rank_reports(const std::filesystem::path& directory, const std::string& suffix) {
    std::map<int, nlohmann::json> reports;
    std::error_code error;
    for (std::filesystem::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
        const int rank = rank_of(it->path().filename().string(), "rank-", suffix);
        if (rank < 0) continue;
        const nlohmann::json report = parse_json_or_discarded(read_whole_file(it->path()));
        if (report.is_object()) reports[rank] = report;
    }
    return reports;
}

/// Whether process `pid` of this host is stopped (SIGSTOP, SIGTSTP) or traced: /proc/PID/stat's
/// state field, after the command in parentheses.
bool process_is_stopped(pid_t pid) {
    const std::string stat = read_whole_file("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) return false;
    const char state = stat[close + 2];
    return state == 'T' || state == 't';
}

/// Whether process `pid` runs with `variable` in its environment (it is one of our job's ranks,
/// not an unrelated process that reused a dead rank's PID).
bool process_has_environment(pid_t pid, const std::string& variable) {
    const std::string environment = read_whole_file("/proc/" + std::to_string(pid) + "/environ");
    std::size_t begin = 0;
    while (begin < environment.size()) {
        std::size_t end = environment.find('\0', begin);
        if (end == std::string::npos) end = environment.size();
        if (environment.compare(begin, end - begin, variable) == 0) return true;
        begin = end + 1;
    }
    return false;
}

bool is_executable_file(const std::string& path) {
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

/// The last kTailLines non-empty lines of `text`.
std::string last_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
    }
    std::string tail;
    const std::size_t first = lines.size() > kTailLines ? lines.size() - kTailLines : 0;
    for (std::size_t i = first; i < lines.size(); ++i) tail += lines[i] + "\n";
    return tail;
}

}  // namespace

namespace {

/// --threads among the trainer's flags (1 when absent); a value it will refuse counts as more
/// threads than the cores, so that nothing is bound.
int threads_per_rank(const LaunchRequest& r) {
    const std::optional<std::string> given = flag_value(r.train_flags, "--threads");
    if (!given) return 1;
    try {
        return std::max(1, std::stoi(*given));
    } catch (const std::exception&) {
        return r.online_cores + 1;  // epochcast-train will name the bad value; bind nothing
    }
}

bool is_cuda(const LaunchRequest& r) { return flag_value(r.train_flags, "--backend").value_or("cpu") == "cuda"; }

/// The trainer and its flags, with --ps-ranks and --trace-out added.
void append_trainer(const LaunchRequest& r, std::vector<std::string>& argv) {
    argv.push_back(r.train_program);
    argv.insert(argv.end(), r.train_flags.begin(), r.train_flags.end());
    if (r.ps_ranks > 0) argv.insert(argv.end(), {"--ps-ranks", std::to_string(r.ps_ranks)});
    if (!r.trace_out.empty() && !flag_value(r.train_flags, "--trace-out")) {
        argv.insert(argv.end(), {"--trace-out", r.trace_out});
    }
}

std::vector<std::string> srun_argv(const LaunchRequest& r, const RankLayout& layout) {
    std::vector<std::string> argv = {
        r.mpirun, "--nodes=" + std::to_string(layout.hosts.size()), "--ntasks=" + std::to_string(r.ranks),
        "--ntasks-per-node=" + std::to_string(layout.ranks_per_node), "--kill-on-bad-exit=1"};
    if (is_cuda(r)) {
        argv.push_back("--cpu-bind=none");
    } else {
        argv.insert(argv.end(), {"--cpus-per-task=" + std::to_string(threads_per_rank(r)), "--cpu-bind=cores"});
    }
    append_trainer(r, argv);
    return argv;
}

}  // namespace

std::vector<std::string> launcher_argv(const LaunchRequest& r) {
    if (r.launcher == Launcher::srun) {
        if (!r.layout) throw RunError("launcher_argv: srun needs the allocation's layout");
        return srun_argv(r, *r.layout);
    }
    std::vector<std::string> argv = {r.mpirun, "-np", std::to_string(r.ranks)};
    if (r.root) argv.push_back("--allow-run-as-root");
    const int threads = threads_per_rank(r);
    const int ranks_per_host = r.layout ? r.layout->ranks_per_node : r.ranks;
    if (!r.layout && r.ranks > r.online_cores) argv.push_back("--oversubscribe");
    std::string map_by;
    if (r.layout) {
        std::string hosts;
        for (const std::string& host : r.layout->hosts) {
            hosts += (hosts.empty() ? "" : ",") + host + ":" + std::to_string(r.layout->ranks_per_node);
        }
        argv.insert(argv.end(), {"--host", hosts});
        map_by = "ppr:" + std::to_string(ranks_per_host) + ":node";
    }
    // Each CPU rank on cores of its own when they go round (one per compute thread); otherwise
    // no binding, so that a rank's threads are not pinned to the one core Open MPI would give it.
    const bool bind = !is_cuda(r) && static_cast<long>(ranks_per_host) * threads <= r.online_cores;
    if (bind && threads > 1) map_by += (map_by.empty() ? "slot" : "") + std::string(":PE=") + std::to_string(threads);
    if (!map_by.empty()) argv.insert(argv.end(), {"--map-by", map_by});
    argv.insert(argv.end(), {"--bind-to", bind ? "core" : "none"});
    if (r.layout) {
        for (const std::string& name : r.forwarded_variables) argv.insert(argv.end(), {"-x", name});
    }
    append_trainer(r, argv);
    return argv;
}

namespace {

/// Whether `environment` ("NAME=value" entries) sets `name`.
bool sets(const std::vector<std::string>& environment, const std::string& name) {
    return std::any_of(environment.begin(), environment.end(),
                       [&](const std::string& entry) { return entry.rfind(name + "=", 0) == 0; });
}

}  // namespace

std::vector<std::string> forwarded_variables(const std::vector<std::string>& environment) {
    std::vector<std::string> names = {std::string(kProgressDirVariable)};
    std::vector<std::string> settings;
    for (const char* paths : {"PATH", "LD_LIBRARY_PATH"}) {
        if (sets(environment, paths)) names.emplace_back(paths);
    }
    for (const std::string& entry : environment) {
        const std::string name = entry.substr(0, entry.find('='));
        for (const char* prefix : {"NCCL_", "FI_", "UCX_", "OMP_"}) {
            if (name.rfind(prefix, 0) == 0 && name.size() < entry.size()) settings.push_back(name);
        }
    }
    std::sort(settings.begin(), settings.end());
    settings.erase(std::unique(settings.begin(), settings.end()), settings.end());
    names.insert(names.end(), settings.begin(), settings.end());
    return names;
}

std::vector<std::string> launcher_environment(Launcher launcher, const std::vector<std::string>& environment) {
    if (launcher != Launcher::srun || sets(environment, "SLURM_PMIX_FENCE")) return {};
    return {"SLURM_PMIX_FENCE=ring"};
}

std::optional<std::string> slurm_refusal(std::string_view output) {
    static constexpr std::string_view kError = "srun: error: ";
    for (std::size_t begin = 0; begin < output.size();) {
        std::size_t end = output.find('\n', begin);
        if (end == std::string_view::npos) end = output.size();
        std::string_view line = output.substr(begin, end - begin);
        begin = end + 1;
        const std::size_t at = line.find(kError);
        if (at == std::string_view::npos) continue;
        line.remove_prefix(at + kError.size());
        for (const std::string_view refused :
             {"Unable to create step for job ", "Unable to confirm allocation for job ",
              "Unable to allocate resources"}) {
            if (line.substr(0, refused.size()) != refused) continue;
            while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
            return std::string(line);
        }
    }
    return std::nullopt;
}

void throw_if_slurm_refused(std::string_view output, const std::vector<std::string>& argv, const std::string& what) {
    const std::optional<std::string> refusal = slurm_refusal(output);
    if (!refusal) return;
    if (refusal->rfind("Unable to create step", 0) != 0) {
        throw InputError("Slurm refused " + what + ": " + *refusal +
                         " (run inside a Slurm allocation that is still there: salloc, or an sbatch script)");
    }
    std::string asked = "srun";
    for (const std::string& flag : argv) {
        for (const char* shape : {"--nodes=", "--ntasks=", "--ntasks-per-node=", "--cpus-per-task="}) {
            if (flag.rfind(shape, 0) == 0) asked += " " + flag;
        }
    }
    throw InputError("Slurm refused " + what + ": " + *refusal + " (" + asked +
                     " asks for more than the allocation holds: give fewer ranks with --np or fewer --threads, or "
                     "allocate more)");
}

std::string shell_quoted(const std::string& text) {
    std::string quoted = "'";
    for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

std::string command_line(const std::vector<std::string>& argv) {
    std::string line;
    for (const std::string& a : argv) {
        const bool plain = !a.empty() && a.find_first_not_of(
                                             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                             "0123456789-_./:=,+@%") == std::string::npos;
        line += (line.empty() ? "" : " ") + (plain ? a : shell_quoted(a));
    }
    return line;
}

std::optional<std::string> flag_value(const std::vector<std::string>& flags, std::string_view name) {
    std::optional<std::string> value;
    const std::string with_equals = std::string(name) + "=";
    for (std::size_t i = 0; i < flags.size(); ++i) {
        if (flags[i] == name && i + 1 < flags.size()) {
            value = flags[++i];
        } else if (flags[i].rfind(with_equals, 0) == 0) {
            value = flags[i].substr(with_equals.size());
        }
    }
    return value;
}

std::optional<std::string> find_program(const std::string& program) {
    if (program.empty()) return std::nullopt;
    if (program.find('/') != std::string::npos) {
        if (is_executable_file(program)) return program;
        return std::nullopt;
    }
    const char* path = std::getenv("PATH");
    std::istringstream folders(path ? path : "");
    std::string folder;
    while (std::getline(folders, folder, ':')) {
        if (folder.empty()) folder = ".";
        const std::string candidate = folder + "/" + program;
        if (is_executable_file(candidate)) return candidate;
    }
    return std::nullopt;
}

std::string find_train_program() {
    if (const char* env = std::getenv("EPOCHCAST_TRAIN"); env && *env) {
        if (!is_executable_file(env)) {
            throw RunError(std::string("EPOCHCAST_TRAIN is '") + env + "', which is not an executable file");
        }
        return env;
    }
    std::error_code error;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
    const std::string beside =
        (error ? std::filesystem::path("epochcast-train") : self.parent_path() / "epochcast-train").string();
    if (!is_executable_file(beside)) {
        throw RunError("epochcast-train not found at " + beside +
                       " (it is built beside epochcast when MPI and oneDNN are found; or set EPOCHCAST_TRAIN to its "
                       "path)");
    }
    return beside;
}

Watchdog::Watchdog(std::filesystem::path directory, int ranks, std::optional<double> deadline_s, Clock::time_point now)
    : directory_(std::move(directory)), deadline_s_(deadline_s), last_check_(now), shell_(remote_shell()) {
    for (int rank = 0; rank < ranks; ++rank) ranks_[rank].changed = now;
}

void Watchdog::read_reports(Clock::time_point now) {
    for (const auto& [rank, report] : rank_reports(directory_, ".json")) {
        const auto found = ranks_.find(rank);
        if (found == ranks_.end()) continue;
        RankState& state = found->second;
        try {
            const long long steps = report.value("steps", -1LL);
            if (steps != state.steps) state.changed = now;
            state.steps = steps;
            state.host = report.value("host", std::string());
            state.pid = static_cast<pid_t>(report.value("pid", 0LL));
            state.slowest_step_s = report.value("slowest_step_s", 0.0);
        } catch (const nlohmann::json::exception&) {  // not a report epochcast-train wrote: ignored
        }
    }
}

double Watchdog::deadline_for(const RankState& rank) const {
    double slowest = 0;
    for (const auto& [index, state] : ranks_) slowest = std::max(slowest, state.slowest_step_s);
    const double deadline = deadline_s_ ? *deadline_s_ : std::max(kStartupFloorS, kDeadlineMultiple * slowest);
    return rank.steps < 1 ? std::max(deadline, kStartupFloorS) : deadline;
}

std::optional<std::string> Watchdog::check(Clock::time_point now) {
    if (seconds_between(last_check_, now) > kSuspendedGapS) {  // we were stopped: so was the job
        for (auto& [rank, state] : ranks_) state.changed += now - last_check_;
    }
    last_check_ = now;
    read_reports(now);
    const std::string host = this_host_name();
    const std::pair<const int, RankState>* named = nullptr;
    bool named_stopped = false;
    bool overdue = false;
    for (const auto& entry : ranks_) overdue |= seconds_between(entry.second.changed, now) > deadline_for(entry.second);
    if (!overdue) return std::nullopt;
    // Once one rank is past its deadline the job has stalled. A rank whose process is stopped is
    // the cause even if its own silence is a little shorter (the ranks waiting on it in the
    // all-reduce may have reported their last step before it did): it is named first; else the
    // overdue rank with the fewest steps. Other hosts are asked about their ranks, all at once.
    HostProcesses elsewhere;
    for (const auto& [index, state] : ranks_) {
        if (state.pid > 0 && !state.host.empty() && !is_this_host(state.host, host)) {
            elsewhere[state.host].push_back(state.pid);
        }
    }
    const std::set<std::pair<std::string, pid_t>> stopped_elsewhere = stopped_processes_by_shell(elsewhere, shell_);
    for (const auto& entry : ranks_) {
        const RankState& state = entry.second;
        const bool stopped =
            state.pid > 0 && (is_this_host(state.host, host) ? process_is_stopped(state.pid)
                                                             : stopped_elsewhere.contains({state.host, state.pid}));
        const bool late = seconds_between(state.changed, now) > deadline_for(state);
        if (!stopped && !late) continue;
        if (!named || (stopped && !named_stopped) || (stopped == named_stopped && state.steps < named->second.steps)) {
            named = &entry;
            named_stopped = stopped;
        }
    }
    const RankState& state = named->second;
    const std::string rank = "rank " + std::to_string(named->first);
    const std::string silent = format_significant(seconds_between(state.changed, now));
    const std::string deadline = format_significant(deadline_for(state));
    if (state.steps < 0) {
        return rank + " made no progress for " + silent + " s: it has not started (no progress report; the " +
               "start-up allowance is " + deadline + " s)";
    }
    double slowest = 0;
    for (const auto& [index, other] : ranks_) slowest = std::max(slowest, other.slowest_step_s);
    return rank + " on host " + state.host + " made no progress for " + silent + " s (deadline " + deadline + " s; " +
           std::to_string(state.steps) + " step" + (state.steps == 1 ? "" : "s") + " done" +
           (state.steps > 0 ? ", the slowest step so far took " + format_significant(slowest) + " s"
                            : ", still starting") +
           (named_stopped ? "; its process " + std::to_string(state.pid) + " is stopped" : "") + ")";
}

void Watchdog::kill_ranks() const {
    const std::string host = this_host_name();
    const std::string ours = std::string(kProgressDirVariable) + "=" + directory_.string();
    HostProcesses elsewhere;
    for (const auto& [rank, state] : ranks_) {
        if (state.pid <= 0) continue;
        if (!is_this_host(state.host, host)) {
            if (!state.host.empty()) elsewhere[state.host].push_back(state.pid);
            continue;
        }
        if (!process_has_environment(state.pid, ours)) continue;
        if (::getpgid(state.pid) == state.pid) ::kill(-state.pid, SIGKILL);  // with what it started
        ::kill(state.pid, SIGKILL);
    }
    kill_processes_by_shell(elsewhere, ours, shell_);
}

namespace {

/// A report's member `key`; null where it has none.
nlohmann::json member(const nlohmann::json& report, const char* key) {
    const auto found = report.find(key);
    return found == report.end() ? nlohmann::json() : *found;
}

/// A report's "host"; "" where it has none (or not a string).
std::string host_of(const nlohmann::json& report) {
    const nlohmann::json host = member(report, "host");
    return host.is_string() ? host.get<std::string>() : "";
}

}  // namespace

std::vector<RankFailure> read_rank_failures(const std::filesystem::path& directory) {
    std::vector<RankFailure> failures;
    for (const auto& [rank, report] : rank_reports(directory, ".failed.json")) {
        const nlohmann::json code = member(report, "code"), message = member(report, "message");
        if (!code.is_number_integer() || !message.is_string()) continue;
        failures.push_back({rank, code.get<int>(), message.get<std::string>(), host_of(report)});
    }
    return failures;
}

std::vector<RankDeath> read_rank_deaths(const std::filesystem::path& directory) {
    std::vector<RankDeath> deaths;
    for (const auto& [rank, report] : rank_reports(directory, ".died.json")) {
        const nlohmann::json signal = member(report, "signal"), time = member(report, "time_s");
        if (!signal.is_number_integer() || signal.get<long long>() < 1 || signal.get<long long>() > 64 ||
            !time.is_number() || !std::isfinite(time.get<double>())) {
            continue;
        }
        deaths.push_back({rank, static_cast<int>(signal.get<long long>()), host_of(report), time.get<double>()});
    }
    std::stable_sort(deaths.begin(), deaths.end(),
                     [](const RankDeath& a, const RankDeath& b) { return a.time_s < b.time_s; });
    return deaths;
}

std::string ChildExit::describe() const {
    if (exited) return "exited with status " + std::to_string(code);
    return "was killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
}

SpawnedChild spawn_child(const std::vector<std::string>& argv, const SpawnOptions& options) {
    if (argv.empty()) throw RunError("spawn_child: no program to start");
    // The child's environment: ours, with options.environment's variables set.
    std::vector<std::string> environment = options.environment;
    for (char** variable = environ; *variable; ++variable) {
        const std::string entry = *variable;
        const std::string name = entry.substr(0, entry.find('='));
        bool replaced = false;
        for (const std::string& added : options.environment) replaced |= added.rfind(name + "=", 0) == 0;
        if (!replaced) environment.push_back(entry);
    }
    std::vector<char*> envp;
    for (std::string& entry : environment) envp.push_back(entry.data());
    envp.push_back(nullptr);
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw RunError(std::string("cannot create a pipe: ") + std::strerror(errno));
    int error_fds[2] = {-1, -1};
    const bool capture_stderr = options.capture_stderr && !options.merge_stderr;
    if (capture_stderr && ::pipe2(error_fds, O_CLOEXEC) != 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        throw RunError(std::string("cannot create a pipe: ") + std::strerror(errno));
    }
    const auto close_all = [&] {
        for (const int fd : {fds[0], fds[1], error_fds[0], error_fds[1]}) {
            if (fd >= 0) ::close(fd);
        }
    };
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        close_all();
        throw RunError(std::string("cannot start ") + argv[0] + ": " + std::strerror(errno));
    }
    if (pid == 0) {
        // SIGTERM when we die, however we die (SIGKILL too), kept across exec: mpirun passes it on
        // to the ranks, ssh ends. A parent already gone before the request took effect: end now.
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != parent) ::_exit(127);
        if (options.own_process_group) {
            ::setpgid(0, 0);
            const int null = ::open("/dev/null", O_RDONLY);
            if (null >= 0) ::dup2(null, STDIN_FILENO);
        }
        ::dup2(fds[1], STDOUT_FILENO);
        if (options.merge_stderr) ::dup2(fds[1], STDERR_FILENO);
        if (capture_stderr) ::dup2(error_fds[1], STDERR_FILENO);
        ::execvpe(args[0], args.data(), envp.data());
        const std::string message = std::string("cannot execute ") + argv[0] + ": " + std::strerror(errno) + "\n";
        [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, message.data(), message.size());
        ::_exit(127);
    }
    if (options.own_process_group) ::setpgid(pid, pid);  // as the child does: whichever runs first
    ::close(fds[1]);
    if (capture_stderr) ::close(error_fds[1]);
    return {pid, fds[0], error_fds[0]};
}

ChildExit run_child(const std::vector<std::string>& argv, std::ostream* out, std::string* captured, bool merge_stderr,
                    const ChildControl& control) {
    if (argv.empty()) throw RunError("run_child: no program to start");
    if (out) out->flush();
    const SpawnedChild child = spawn_child(argv, {control.environment, merge_stderr, false, !merge_stderr});
    const pid_t pid = child.pid;
    // The child's stdout (with stderr when merged), then its own stderr when not; -1 once closed.
    int fds[2] = {child.output_fd, child.error_fd};

    ChildExit result;
    std::string output;
    std::string both;  // stdout and stderr as they came, for the tail
    bool ended = false;
    int status = 0;
    Clock::time_point drain_until{};
    Clock::time_point next_check = Clock::now();
    Clock::time_point kill_at = Clock::time_point::max();  // SIGKILL for a stalled job's child still there
    bool interrupt_passed_on = false;
    char buffer[4096];
    for (;;) {
        if (!ended && ::waitpid(pid, &status, WNOHANG) == pid) {
            ended = true;
            drain_until = Clock::now() + kDrainAfterExit;
        }
        const Clock::time_point now = Clock::now();
        if (ended && now >= drain_until) break;
        if (!ended && control.watchdog && result.stalled.empty() && now >= next_check) {
            next_check = now + std::chrono::milliseconds(kPollMilliseconds);
            if (std::optional<std::string> stalled = control.watchdog->check(now)) {
                result.stalled = *stalled;
                control.watchdog->kill_ranks();
                ::kill(pid, SIGTERM);
                kill_at = now + std::chrono::milliseconds(static_cast<int>(kKillGraceS * 1000));
            }
        }
        if (!ended && control.interrupted && *control.interrupted && !interrupt_passed_on) {
            interrupt_passed_on = true;
            ::kill(pid, SIGTERM);
            kill_at = std::min(kill_at, now + std::chrono::milliseconds(static_cast<int>(kKillGraceS * 1000)));
        }
        if (!ended && now >= kill_at) {
            ::kill(pid, SIGKILL);
            kill_at = Clock::time_point::max();
        }
        pollfd readable[2];
        nfds_t open = 0;
        for (const int fd : fds) {
            if (fd >= 0) readable[open++] = {fd, POLLIN, 0};
        }
        if (open == 0) break;  // end of output: every writer has closed it
        const int ready = ::poll(readable, open, kPollMilliseconds);
        if (ready < 0 && errno != EINTR) break;
        for (nfds_t k = 0; ready > 0 && k < open; ++k) {
            if (!(readable[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            const bool is_stdout = readable[k].fd == fds[0];
            const ssize_t n = ::read(readable[k].fd, buffer, sizeof buffer);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n <= 0) {
                ::close(readable[k].fd);
                fds[is_stdout ? 0 : 1] = -1;
                continue;
            }
            both.append(buffer, static_cast<std::size_t>(n));
            if (both.size() > kTailKeptBytes) both.erase(0, both.size() - kTailKeptBytes / 2);
            if (!is_stdout) {  // stderr, as if it were still ours
                [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, buffer, static_cast<std::size_t>(n));
                continue;
            }
            output.append(buffer, static_cast<std::size_t>(n));
            if (out) {
                out->write(buffer, n);
                out->flush();
            }
        }
    }
    for (const int fd : fds) {
        if (fd >= 0) ::close(fd);
    }
    if (!ended) {
        // The output ended; the child is ending or has ended.
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    result.exited = WIFEXITED(status);
    result.code = result.exited ? WEXITSTATUS(status) : 0;
    result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    result.output_tail = last_lines(both);
    if (captured) *captured = std::move(output);
    return result;
}

}  // namespace epochcast::cli
