// Before `epochcast run` starts ranks on other hosts, it asks each of them, many at once and each
// with a deadline, whether it can: that the host answers, that epochcast-train is at the same path
// there, and that the run's shared folders are visible there. A host that fails is named with
// its problem within seconds, instead of mpirun waiting on ssh or a rank failing later.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/layout.hpp"

namespace epochcast::cli {

/// What every host must have before the ranks start there.
struct HostRequirements {
    std::string train_program;         ///< an executable file at this path
    std::vector<std::string> folders;  ///< folders that must exist there (shared with this host)
};

/// One host's problem, as a phrase that follows its name ("is unreachable (ssh: ...)").
struct HostProblem {
    std::string host;
    std::string problem;
};

/// Seconds a host has to answer, and the ssh connection time-out within it.
inline constexpr double kHostCheckTimeoutS = 20;
inline constexpr int kSshConnectTimeoutS = 10;

/// The remote shell Open MPI uses: the first program of $OMPI_MCA_plm_rsh_agent (Open MPI's own
/// "ssh : rsh" list, each possibly with arguments) found on PATH, as argv; {"ssh"} by default.
std::vector<std::string> remote_shell();

/// Asks each host of `hosts` that is not this one (is_this_host), through `shell` (ssh gets
/// BatchMode and ConnectTimeout options), up to 64 at once (fewer where this process may open too
/// few files); a host that has not answered within `timeout_s` of its check's start is killed off
/// and named as not answering. Returns the problems, in host order. No check is left running or
/// unreaped; one that cannot start at all (a limit of this process: ulimit -n, ulimit -u) is an
/// InputError naming the limit.
std::vector<HostProblem> check_hosts_by_shell(const std::vector<std::string>& hosts, const HostRequirements& needs,
                                              const std::vector<std::string>& shell,
                                              double timeout_s = kHostCheckTimeoutS);

/// The same through srun inside a Slurm allocation (one task on each of its `nodes`, `srun`
/// being the program): a node that does not report back within `timeout_s` is named.
std::vector<HostProblem> check_hosts_by_srun(const std::vector<std::string>& nodes, const HostRequirements& needs,
                                             const std::string& srun, double timeout_s = kHostCheckTimeoutS);

/// Processes on other hosts, by host: what the watchdog of `epochcast run` asks about the ranks it
/// cannot see from here (cli/launch.hpp's Watchdog).
using HostProcesses = std::map<std::string, std::vector<pid_t>>;

/// Seconds a host has to answer the watchdog, and the ssh connection time-out within it.
inline constexpr double kRemoteProcessTimeoutS = 8;
inline constexpr int kRemoteProcessConnectTimeoutS = 5;

/// Which of each host's `processes` are stopped (SIGSTOP, or traced), asked through `shell` of
/// every host at once; a host that does not answer within `timeout_s` says none.
std::set<std::pair<std::string, pid_t>> stopped_processes_by_shell(const HostProcesses& processes,
                                                                   const std::vector<std::string>& shell,
                                                                   double timeout_s = kRemoteProcessTimeoutS);

/// Kills (SIGKILL), through `shell` of every host at once, those of each host's `processes` that
/// run with `variable` ("NAME=value") in their environment, each with the process group it leads;
/// a stopped process dies of SIGKILL too. Returns once every host has answered or `timeout_s` passed.
void kill_processes_by_shell(const HostProcesses& processes, const std::string& variable,
                             const std::vector<std::string>& shell, double timeout_s = kRemoteProcessTimeoutS);

/// The most problems describe_problems spells out; the rest are counted and the next as many named.
inline constexpr std::size_t kMaxProblemsNamed = 10;

/// "host node3 is unreachable (...); host node4 has no ..." : the problems as one line, the first
/// kMaxProblemsNamed in full, then "; and 1,090 more hosts (node11, node12, ...)".
std::string describe_problems(const std::vector<HostProblem>& problems);

}  // namespace epochcast::cli
