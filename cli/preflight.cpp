#include "cli/preflight.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "cli/launch.hpp"
#include "model/errors.hpp"
#include "model/text_io.hpp"

namespace epochcast::cli {
namespace {

using Clock = std::chrono::steady_clock;

/// The marker the check prints: "EPOCHCAST-CHECK <hostname> ok|program|folder <path>".
constexpr const char* kMarker = "EPOCHCAST-CHECK";

/// The shell script a host runs: one marker line saying what it lacks, or ok.
std::string check_script(const HostRequirements& needs) {
    const std::string marker = kMarker;
    std::string script = "h=$(hostname); test -x ";
    script.append(shell_quoted(needs.train_program));
    script.append(" || { echo ").append(marker).append(" \"$h\" program; exit 0; }; ");
    if (!needs.folders.empty()) {
        script.append("for d in");
        for (const std::string& folder : needs.folders) script.append(" ").append(shell_quoted(folder));
        script.append("; do test -d \"$d\" || { echo ")
            .append(marker)
            .append(" \"$h\" folder \"$d\"; exit 0; }; done; ");
    }
    script.append("echo ").append(marker).append(" \"$h\" ok");
    return script;
}

/// How one started command ended.
struct Captured {
    bool finished = false;  ///< ended before the deadline
    int status = 0;         ///< waitpid status, when finished
    std::string output;     ///< stdout and stderr together
};

/// The most checks that run at once: each holds a process and a pipe's end here (1,100 hosts
/// started at once ran out of file descriptors under `ulimit -n 1024`, and left 1,018 ssh
/// processes behind).
constexpr std::size_t kMaxChecksAtOnce = 64;
/// Descriptors left to the rest of the program (the output, a catalog being read, ...).
constexpr long kSpareDescriptors = 16;

/// How many checks may run at once under this process's limit of open files (each holds one
/// descriptor, and two while it starts): at most kMaxChecksAtOnce. Throws InputError, naming the
/// limit, when not even one may.
std::size_t checks_at_once() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kMaxChecksAtOnce;
    long open = 0;
    std::error_code error;
    for (std::filesystem::directory_iterator it("/proc/self/fd", error), end; !error && it != end;
         it.increment(error)) {
        ++open;
    }
    const long soft = static_cast<long>(std::min<rlim_t>(limit.rlim_cur, 1 << 20));
    const long free = soft - open - kSpareDescriptors;
    if (free < 2) {
        throw InputError("cannot check the other hosts: this process may open " + std::to_string(soft) +
                         " files (ulimit -n) and has " + std::to_string(open) +
                         " open, too few to start one check: raise the limit");
    }
    return std::min<std::size_t>(kMaxChecksAtOnce, static_cast<std::size_t>(free / 2));
}

/// A check that runs: its process and output, and until when it may.
struct Running {
    std::size_t index = 0;  ///< into the commands
    SpawnedChild child;
    Clock::time_point deadline;
    Clock::time_point ended_at;  ///< when its output ended (output_fd -1)
};

/// Kills the check's process group and reaps it.
void kill_and_reap(const Running& check) {
    ::kill(-check.child.pid, SIGKILL);
    ::kill(check.child.pid, SIGKILL);
    int status = 0;
    while (::waitpid(check.child.pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (check.child.output_fd >= 0) ::close(check.child.output_fd);
}

/// Runs the commands (stdin /dev/null, each in a process group of its own), at most
/// checks_at_once() at a time, each given `timeout_s` from its start: collects their output until
/// each has ended, or kills it with its process group at its deadline. However this ends (an
/// exception too), no process it started is left running or unreaped.
std::vector<Captured> run_all(const std::vector<std::vector<std::string>>& commands, double timeout_s) {
    std::vector<Captured> results(commands.size());
    std::size_t slots = checks_at_once();
    const auto timeout = std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
    // Output that has ended: its process ends within moments (a second before it is called stuck).
    const auto exit_grace = std::chrono::seconds(1);
    std::vector<Running> running;
    struct ReapAll {
        std::vector<Running>& running;
        ~ReapAll() {
            for (const Running& check : running) kill_and_reap(check);
        }
    } reap_all{running};
    std::size_t next = 0;
    while (next < commands.size() || !running.empty()) {
        while (next < commands.size() && running.size() < slots) {
            Running check;
            check.index = next;
            try {
                check.child = spawn_child(commands[next], {{}, true, /*own_process_group=*/true});
            } catch (const RunError& error) {
                // No pipe or process left (a limit of this process or user): fewer at once, or
                // none at all, which the user can raise.
                if (running.empty()) {
                    throw InputError(std::string("cannot check the other hosts: ") + error.what() +
                                     " (raise this user's limits: ulimit -n, ulimit -u)");
                }
                slots = running.size();
                break;
            }
            check.deadline = Clock::now() + timeout;
            running.push_back(check);
            ++next;
        }
        std::vector<pollfd> open;
        std::vector<std::size_t> which;
        Clock::time_point wake = Clock::now() + std::chrono::milliseconds(200);
        for (std::size_t k = 0; k < running.size(); ++k) {
            if (running[k].child.output_fd >= 0) {
                open.push_back({running[k].child.output_fd, POLLIN, 0});
                which.push_back(k);
                wake = std::min(wake, running[k].deadline);
            } else {
                wake = std::min(wake, Clock::now() + std::chrono::milliseconds(20));
            }
        }
        const auto wait_ms =
            std::max<long long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now()).count());
        const int ready = ::poll(open.data(), open.size(), static_cast<int>(wait_ms));
        for (std::size_t k = 0; ready > 0 && k < open.size(); ++k) {
            if (!(open[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            Running& check = running[which[k]];
            char buffer[4096];
            const ssize_t n = ::read(check.child.output_fd, buffer, sizeof buffer);
            if (n > 0) {
                results[check.index].output.append(buffer, static_cast<std::size_t>(n));
            } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                ::close(check.child.output_fd);
                check.child.output_fd = -1;  // output ended: the command has ended or is ending
                check.ended_at = Clock::now();
            }
        }
        // Those that ended are reaped; those past their deadline (or stuck after their output
        // ended) are killed and named as not answering.
        const Clock::time_point now = Clock::now();
        for (std::size_t k = running.size(); k-- > 0;) {
            Running& check = running[k];
            int status = 0;
            if (check.child.output_fd < 0 && ::waitpid(check.child.pid, &status, WNOHANG) == check.child.pid) {
                results[check.index].finished = true;
                results[check.index].status = status;
            } else if (now >= check.deadline || (check.child.output_fd < 0 && now >= check.ended_at + exit_grace)) {
                kill_and_reap(check);
            } else {
                continue;
            }
            running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
        }
    }
    return results;
}

/// The first line of `text` that is not empty and not a marker, trimmed; "" when none.
std::string first_message(const std::string& text) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(kMarker, 0) == 0) continue;
        const auto first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos) continue;
        const auto last = line.find_last_not_of(" \t\r");
        return line.substr(first, last - first + 1);
    }
    return "";
}

/// The marker lines of `output`: the reporting host's name, its status and what follows.
struct Report {
    std::string hostname;
    std::string status;
    std::string detail;
};
std::vector<Report> reports(const std::string& output) {
    std::vector<Report> found;
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
        // A launcher may prefix lines ("0: " from srun --label); the marker may follow it.
        const auto at = line.find(kMarker);
        if (at == std::string::npos) continue;
        std::istringstream words(line.substr(at + std::strlen(kMarker)));
        Report report;
        words >> report.hostname >> report.status;
        std::getline(words >> std::ws, report.detail);
        found.push_back(report);
    }
    return found;
}

/// The problem a report says, or "" for ok.
std::string problem_of(const Report& report, const HostRequirements& needs) {
    if (report.status == "ok") return "";
    if (report.status == "program") {
        return "has no executable epochcast-train at " + needs.train_program +
               " (every host runs the same path: install it there, or build on a shared filesystem)";
    }
    return "cannot see the folder " + report.detail +
           " (the run's folder, its trace and checkpoints must be on a filesystem every host mounts at the same "
           "path: give --shared-dir)";
}

/// `shell HOST SCRIPT` as argv, with ssh's BatchMode and a connection time-out when it is ssh.
std::vector<std::string> shell_command(const std::vector<std::string>& shell, const std::string& host,
                                       const std::string& script, int connect_timeout_s) {
    std::vector<std::string> argv = shell;
    const bool ssh = !shell.empty() && (shell[0] == "ssh" || (shell[0].size() > 4 && shell[0].ends_with("/ssh")));
    if (ssh) {
        argv.insert(argv.end(), {"-o", "BatchMode=yes", "-o", "ConnectTimeout=" + std::to_string(connect_timeout_s)});
    }
    argv.insert(argv.end(), {host, script});
    return argv;
}

/// " 12 345": the PIDs as words of a shell's for loop.
std::string pid_words(const std::vector<pid_t>& pids) {
    std::string words;
    for (const pid_t pid : pids) words.append(" ").append(std::to_string(pid));
    return words;
}

std::string timeout_text(double seconds) {
    std::ostringstream text;
    text << seconds;
    return text.str();
}

}  // namespace

std::vector<std::string> remote_shell() {
    const char* agent = std::getenv("OMPI_MCA_plm_rsh_agent");
    if (!agent || !*agent) return {"ssh"};
    // Open MPI's list: alternatives separated by ':', each a program with its arguments.
    std::istringstream alternatives(agent);
    std::vector<std::string> first;
    for (std::string alternative; std::getline(alternatives, alternative, ':');) {
        std::istringstream words(alternative);
        std::vector<std::string> argv;
        for (std::string word; words >> word;) argv.push_back(word);
        if (argv.empty()) continue;
        if (first.empty()) first = argv;
        if (find_program(argv[0])) return argv;
    }
    return first.empty() ? std::vector<std::string>{"ssh"} : first;
}

std::vector<HostProblem> check_hosts_by_shell(const std::vector<std::string>& hosts, const HostRequirements& needs,
                                              const std::vector<std::string>& shell, double timeout_s) {
    const std::string here = this_host_name();
    std::vector<std::string> remote;
    for (const std::string& host : hosts) {
        if (!is_this_host(host, here)) remote.push_back(host);
    }
    if (remote.empty()) return {};
    if (shell.empty() || !find_program(shell[0])) {
        throw RunError("the hosts " + remote.front() + (remote.size() > 1 ? ", ..." : "") + " are reached with '" +
                       (shell.empty() ? std::string() : shell[0]) +
                       "', which is not installed (install openssh-client, or set OMPI_MCA_plm_rsh_agent)");
    }
    const std::string script = check_script(needs);
    std::vector<std::vector<std::string>> commands;
    for (const std::string& host : remote) commands.push_back(shell_command(shell, host, script, kSshConnectTimeoutS));
    const std::vector<Captured> results = run_all(commands, timeout_s);
    std::vector<HostProblem> problems;
    for (std::size_t i = 0; i < remote.size(); ++i) {
        const Captured& result = results[i];
        const std::vector<Report> said = reports(result.output);
        if (!said.empty()) {
            if (std::string problem = problem_of(said.front(), needs); !problem.empty()) {
                problems.push_back({remote[i], std::move(problem)});
            }
            continue;
        }
        const std::string message = first_message(result.output);
        if (!result.finished) {
            problems.push_back({remote[i], "did not answer within " + timeout_text(timeout_s) + " s (" + shell[0] +
                                               (message.empty() ? "" : ": " + message) + ")"});
        } else {
            problems.push_back({remote[i], "is unreachable (" + shell[0] + " " +
                                               (WIFEXITED(result.status)
                                                    ? "exited with status " + std::to_string(WEXITSTATUS(result.status))
                                                    : "was killed") +
                                               (message.empty() ? "" : ": " + message) + ")"});
        }
    }
    return problems;
}

std::vector<HostProblem> check_hosts_by_srun(const std::vector<std::string>& nodes, const HostRequirements& needs,
                                             const std::string& srun, double timeout_s) {
    const std::string count = std::to_string(nodes.size());
    const std::vector<std::vector<std::string>> command = {{srun, "--nodes=" + count, "--ntasks=" + count,
                                                            "--ntasks-per-node=1", "--kill-on-bad-exit=0", "sh", "-c",
                                                            check_script(needs)}};
    const Captured result = run_all(command, timeout_s).front();
    const std::vector<Report> said = reports(result.output);
    if (said.empty()) throw_if_slurm_refused(result.output, command.front(), "the hosts' check");
    std::vector<HostProblem> problems;
    for (const std::string& node : nodes) {
        const auto report =
            std::find_if(said.begin(), said.end(), [&](const Report& r) { return is_this_host(r.hostname, node); });
        if (report != said.end()) {
            if (std::string problem = problem_of(*report, needs); !problem.empty()) problems.push_back({node, problem});
            continue;
        }
        const std::string message = first_message(result.output);
        problems.push_back({node, "did not report back through srun within " + timeout_text(timeout_s) + " s" +
                                      (message.empty() ? "" : " (srun: " + message + ")")});
    }
    return problems;
}

std::set<std::pair<std::string, pid_t>> stopped_processes_by_shell(const HostProcesses& processes,
                                                                   const std::vector<std::string>& shell,
                                                                   double timeout_s) {
    std::set<std::pair<std::string, pid_t>> stopped;
    if (processes.empty() || shell.empty()) return stopped;
    std::vector<std::string> hosts;
    std::vector<std::vector<std::string>> commands;
    for (const auto& [host, pids] : processes) {
        // "EPOCHCAST-CHECK PID STATE" per process, STATE the letter of /proc/PID/status ("T": stopped).
        const std::string script = "for p in" + pid_words(pids) +
                                   "; do s=$(sed -n 's/^State:[[:space:]]*\\(.\\).*/\\1/p' " +
                                   "/proc/$p/status 2>/dev/null); echo " + kMarker + " \"$p\" \"$s\"; done";
        hosts.push_back(host);
        commands.push_back(shell_command(shell, host, script, kRemoteProcessConnectTimeoutS));
    }
    const std::vector<Captured> results = run_all(commands, timeout_s);
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        for (const Report& report : reports(results[i].output)) {  // hostname: the PID; status: its state
            if (report.status != "T" && report.status != "t") continue;
            try {
                stopped.emplace(hosts[i], static_cast<pid_t>(std::stol(report.hostname)));
            } catch (const std::exception&) {  // not our line
            }
        }
    }
    return stopped;
}

void kill_processes_by_shell(const HostProcesses& processes, const std::string& variable,
                             const std::vector<std::string>& shell, double timeout_s) {
    if (processes.empty() || shell.empty()) return;
    std::vector<std::vector<std::string>> commands;
    for (const auto& [host, pids] : processes) {
        const std::string script =
            "for p in" + pid_words(pids) + "; do tr '\\0' '\\n' </proc/$p/environ 2>/dev/null | " + "grep -qxF " +
            shell_quoted(variable) + " && { kill -KILL -- -$p 2>/dev/null; kill -KILL $p 2>/dev/null; }; done; true";
        commands.push_back(shell_command(shell, host, script, kRemoteProcessConnectTimeoutS));
    }
    run_all(commands, timeout_s);
}

std::string describe_problems(const std::vector<HostProblem>& problems) {
    std::string text;
    const std::size_t named = std::min(problems.size(), kMaxProblemsNamed);
    for (std::size_t i = 0; i < named; ++i) {
        text += (text.empty() ? "" : "; ") + ("host " + problems[i].host + " " + problems[i].problem);
    }
    if (problems.size() > named) {
        const std::size_t more = problems.size() - named;
        text += "; and " + format_count(static_cast<double>(more)) + " more host" + (more == 1 ? "" : "s") + " (";
        for (std::size_t i = named; i < problems.size() && i < named + kMaxProblemsNamed; ++i) {
            text += (i == named ? "" : ", ") + problems[i].host;
        }
        text += more > kMaxProblemsNamed ? ", ...)" : ")";
    }
    return text;
}

}  // namespace epochcast::cli
