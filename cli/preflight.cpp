#include "cli/preflight.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "cli/launch.hpp"
#include "model/errors.hpp"

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

/// Runs every command at once (stdin /dev/null, each in a process group of its own), collecting
/// their output until each has ended or `timeout_s` has passed; those still running then are
/// killed with their process groups.
std::vector<Captured> run_all(const std::vector<std::vector<std::string>>& commands, double timeout_s) {
    std::vector<SpawnedChild> children;
    std::vector<Captured> results(commands.size());
    for (const std::vector<std::string>& command : commands) {
        children.push_back(spawn_child(command, {{}, true, /*own_process_group=*/true}));
    }
    const Clock::time_point deadline =
        Clock::now() + std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
    for (;;) {
        std::vector<pollfd> open;
        std::vector<std::size_t> which;
        for (std::size_t i = 0; i < children.size(); ++i) {
            if (children[i].output_fd >= 0) {
                open.push_back({children[i].output_fd, POLLIN, 0});
                which.push_back(i);
            }
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (open.empty() || left <= 0) break;
        const int ready = ::poll(open.data(), open.size(), static_cast<int>(std::min<long long>(left, 200)));
        if (ready < 0 && errno != EINTR) break;
        for (std::size_t k = 0; ready > 0 && k < open.size(); ++k) {
            if (!(open[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            SpawnedChild& child = children[which[k]];
            char buffer[4096];
            const ssize_t n = ::read(child.output_fd, buffer, sizeof buffer);
            if (n > 0) {
                results[which[k]].output.append(buffer, static_cast<std::size_t>(n));
            } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                ::close(child.output_fd);
                child.output_fd = -1;  // output ended: the command has ended or is ending
            }
        }
    }
    for (std::size_t i = 0; i < children.size(); ++i) {
        SpawnedChild& child = children[i];
        int status = 0;
        if (child.output_fd < 0) {
            // Its output ended; it ends within moments (give it a second before calling it stuck).
            for (int tries = 0; tries < 50; ++tries) {
                if (::waitpid(child.pid, &status, WNOHANG) == child.pid) {
                    results[i] = {true, status, results[i].output};
                    break;
                }
                ::usleep(20000);
            }
        }
        if (!results[i].finished) {
            ::kill(-child.pid, SIGKILL);
            ::kill(child.pid, SIGKILL);
            while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
            }
        }
        if (child.output_fd >= 0) ::close(child.output_fd);
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
    for (const HostProblem& p : problems) text += (text.empty() ? "" : "; ") + ("host " + p.host + " " + p.problem);
    return text;
}

}  // namespace epochcast::cli
