// What `epochcast run` needs to start other programs: the mpirun line for epochcast-train (a pure
// function, so that its rules are tested without MPI), finding the programs before anything
// starts, and running a child whose output streams through live and whose death is noticed
// within seconds, never waited on forever; a watchdog notices a rank that stops without dying.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/layout.hpp"

namespace epochcast::cli {

/// The program that starts the ranks: Open MPI's mpirun, or Slurm's srun inside an allocation.
enum class Launcher { mpirun, srun };

/// Everything the launcher line depends on.
struct LaunchRequest {
    Launcher launcher = Launcher::mpirun;
    std::string mpirun;                    ///< the launcher program (mpirun or srun: a path, or a name on PATH)
    std::string train_program;             ///< path of epochcast-train
    int ranks = 1;                         ///< --np: MPI ranks in all, parameter servers included
    int ps_ranks = 0;                      ///< --ps-ranks: ranks serving parameters (0: all-reduce)
    int online_cores = 1;                  ///< logical CPUs of this host (taken for every host's)
    bool root = false;                     ///< running as root (Open MPI refuses without a flag)
    std::vector<std::string> train_flags;  ///< the user's epochcast-train flags, passed verbatim
    std::string trace_out;                 ///< added as --trace-out when train_flags has none (and this is not empty)
    /// The hosts and ranks per host (cli/layout.hpp); nullopt: this host only, as mpirun's default.
    std::optional<RankLayout> layout;
    /// Variables the ranks on other hosts need from our environment, passed with mpirun's -x
    /// (srun passes the whole environment); only with a layout that names another host.
    std::vector<std::string> forwarded_variables;
};

/// The argv of the launcher line; its rules are docs/cli.md's ("run", "The launcher line").
///
/// mpirun without a layout (this host): mpirun -np N [--allow-run-as-root] [--oversubscribe]
/// BINDING TRAIN [flags verbatim] [--ps-ranks K] [--trace-out FILE]. --oversubscribe when there are
/// more ranks than cores. BINDING, with --backend cpu: when ranks x --threads (default 1) fit the
/// cores, each rank is bound to cores of its own (--bind-to core, with --map-by slot:PE=T for T
/// threads), which keeps ranks from migrating onto each other's cores; otherwise --bind-to none,
/// so that a rank's threads are not pinned to the one core Open MPI would bind it to. With
/// --backend cuda, --bind-to none: a rank drives its GPU with a few threads (data, NCCL's proxy)
/// whose best cores depend on the GPU's and NIC's NUMA node, which mpirun does not know.
///
/// mpirun with a layout: --host h1:R,h2:R,... (the hosts used, each with its R ranks, whatever
/// slots the hostfile gave) and --map-by ppr:R:node (:PE=T when the cpu binding above applies,
/// counting this host's cores for each host's), -x NAME for each forwarded variable, and no
/// --oversubscribe (the ranks never exceed the slots).
///
/// srun: srun --nodes=H --ntasks=N --ntasks-per-node=R --kill-on-bad-exit=1, then --cpus-per-task=T
/// --cpu-bind=cores with --backend cpu, --cpu-bind=none with cuda, then TRAIN and its flags.
std::vector<std::string> launcher_argv(const LaunchRequest& request);

/// The variables ranks on other hosts need from ours, for mpirun's -x: the run's folder
/// (EPOCHCAST_PROGRESS_DIR, which `run` sets in mpirun's environment), then PATH and
/// LD_LIBRARY_PATH, then the settings of NCCL, libfabric (EFA), UCX and OpenMP (NCCL_*, FI_*,
/// UCX_*, OMP_*, sorted), each only when `environment` ("NAME=value" entries, as `environ` holds
/// them) sets it: Open MPI warns of a -x name that is not set.
std::vector<std::string> forwarded_variables(const std::vector<std::string>& environment);

/// The variables `run` adds to the launcher's environment ("NAME=value"), besides the run's
/// folder. srun: SLURM_PMIX_FENCE=ring, unless `environment` sets SLURM_PMIX_FENCE (the user's
/// choice stands). Slurm's PMIx plugin reads it from the job step's environment and then runs
/// every PMIx fence as a ring across the step's nodes; by default a fence without data (Open MPI's
/// barrier at the end of MPI_Init) is a tree, which Debian 12's Slurm 22.05 completes on each node
/// without the others, so ranks leave MPI_Init while a peer is still in it and a peer's first
/// message can crash it (docs/cli.md, "run", "MPI_Init under srun"). mpirun: none.
std::vector<std::string> launcher_environment(Launcher launcher, const std::vector<std::string>& environment);

/// What srun says when Slurm refuses to start a job step, so that no task started: the step asks
/// for more than the allocation holds ("srun: error: Unable to create step for job 7: More
/// processors requested than permitted"), or the allocation is gone or never was ("Unable to
/// confirm allocation for job 9: Invalid job id specified"; "Unable to allocate resources: ...").
/// The first such line of `output` after "srun: error: ", trimmed; nullopt when there is none.
std::optional<std::string> slurm_refusal(std::string_view output);

/// Throws InputError when `output` holds Slurm's refusal (slurm_refusal) to start `what`, the
/// job step of the srun line `argv`: "Slurm refused WHAT: REASON (HINT)", the hint naming the
/// step's shape (srun --nodes=H --ntasks=N --ntasks-per-node=R --cpus-per-task=T) when the
/// allocation cannot hold it, else saying to run inside an allocation.
void throw_if_slurm_refused(std::string_view output, const std::vector<std::string>& argv, const std::string& what);

/// `text` in single quotes for a POSIX shell (a quote inside becomes '\'').
std::string shell_quoted(const std::string& text);

/// The same line as one string a shell splits back into `argv`, as printed and recorded in the
/// trace: words of plain characters as they are, the others shell_quoted.
std::string command_line(const std::vector<std::string>& argv);

/// The value of `--name VALUE` or `--name=VALUE` among `flags` (the last one given), if any.
std::optional<std::string> flag_value(const std::vector<std::string>& flags, std::string_view name);

/// `program` if it contains a '/' and is an executable file, else the first executable of that
/// name in the folders of $PATH; std::nullopt when there is none.
std::optional<std::string> find_program(const std::string& program);

/// epochcast-train: $EPOCHCAST_TRAIN when set, else the file beside this executable
/// (/proc/self/exe's folder). Throws RunError naming where it looked when it is not executable.
std::string find_train_program();

/// The watchdog of `epochcast run`. The ranks' progress reports (executor/progress.hpp: one file
/// per rank, "<dir>/rank-R.json" = {"rank", "host", "pid", "steps", "slowest_step_s"}, rewritten
/// at start and after each step) are read every 200 ms; a rank whose report has not changed for
/// the deadline is stalled. The deadline between steps is `--watchdog SECONDS` when given, else
/// kDeadlineMultiple x the slowest step any rank has reported, at least kStartupFloor; until a
/// rank has reported its first step done (start-up: MPI, listing the data, building the network,
/// the first step's primitives) it is at least kStartupFloor whatever was given. Among stalled
/// ranks the one named is a stopped process (SIGSTOP, traced), else the one that did fewest
/// steps (the others wait for it in a collective), else the lowest rank. Time during which
/// `epochcast run` itself did not run (Ctrl-Z, which stops the ranks too; a suspended machine),
/// seen as a gap of more than kSuspendedGapS between two checks, does not count.
///
/// Ranks on other hosts (their report's host is not this one) are reached through a remote shell,
/// Open MPI's own by default (cli/preflight.hpp's remote_shell): once the job has stalled, every
/// other host is asked at once which of its ranks' processes are stopped, and kill_ranks kills
/// them there as it kills this host's.
class Watchdog {
public:
    using Clock = std::chrono::steady_clock;
    /// A step may take this many times the slowest so far before its rank is called stalled:
    /// steps vary with data-loading hiccups, periodic checkpoint writes and epoch boundaries, and
    /// a false alarm kills a whole job, where a late one costs only idle minutes.
    static constexpr double kDeadlineMultiple = 10;
    /// Start-up's allowance, and the least default deadline: listing an ImageNet folder (1.28 M
    /// files) on a network file system, building ResNet-152's primitives and writing a
    /// checkpoint of a few hundred MB each take up to minutes.
    static constexpr double kStartupFloorS = 300;
    /// A gap between two checks (made every 200 ms) longer than this means we were not running.
    static constexpr double kSuspendedGapS = 5;

    /// Watches `ranks` ranks reporting into `directory`; `deadline_s` is --watchdog (nullopt:
    /// the default rule above). Starts the clock of start-up now.
    Watchdog(std::filesystem::path directory, int ranks, std::optional<double> deadline_s, Clock::time_point now);

    /// Reads the reports; returns the one-line message naming a stalled rank ("rank 1 on host
    /// xyz made no progress for 12.1 s (...)"), or nullopt while every rank makes progress.
    std::optional<std::string> check(Clock::time_point now);
    /// Kills (SIGKILL) every rank process that has reported, with the process group it leads
    /// (Open MPI starts each rank in a group of its own), on this host and, through the remote
    /// shell, on the others: a stopped process dies of SIGKILL too. Only a process that runs with
    /// this run's progress folder in its environment is killed (never one that reused a PID).
    void kill_ranks() const;
    /// The remote shell that reaches the other hosts' ranks (argv before HOST COMMAND); empty:
    /// this host's ranks only (srun's ranks: Slurm kills a step's tasks itself).
    void reach_other_hosts_by(std::vector<std::string> shell) { shell_ = std::move(shell); }

private:
    struct RankState {
        std::string host;
        pid_t pid = 0;
        long long steps = -1;  ///< -1: no report yet
        double slowest_step_s = 0;
        Clock::time_point changed;  ///< when the report last changed (or the watch began)
    };
    void read_reports(Clock::time_point now);
    double deadline_for(const RankState& rank) const;

    std::filesystem::path directory_;
    std::optional<double> deadline_s_;
    std::map<int, RankState> ranks_;
    Clock::time_point last_check_;
    std::vector<std::string> shell_;
};

/// The failure reports ranks left in `directory` ("<dir>/rank-R.failed.json" = {"rank", "code",
/// "message", "host"}, executor/progress.hpp), by rank.
struct RankFailure {
    int rank = 0;
    int code = 0;
    std::string message;
    std::string host;  ///< the rank's host, "" when the report does not say
};
std::vector<RankFailure> read_rank_failures(const std::filesystem::path& directory);

/// The ranks a signal killed while nobody had asked the job to stop, from their supervisors'
/// reports in `directory` ("<dir>/rank-R.died.json" = {"rank", "host", "pid", "signal", "time_s"},
/// executor/rank_supervisor.hpp), the first to die first (the launcher's teardown may kill others
/// after it).
struct RankDeath {
    int rank = 0;
    int signal = 0;
    std::string host;   ///< the rank's host, "" when the report does not say
    double time_s = 0;  ///< when it died, seconds since the epoch
};
std::vector<RankDeath> read_rank_deaths(const std::filesystem::path& directory);

/// How a child ended.
struct ChildExit {
    bool exited = false;      ///< ended by exit (else by a signal)
    int code = 0;             ///< exit status, when exited
    int signal = 0;           ///< the signal, when not exited
    std::string output_tail;  ///< its last lines of output (stdout and stderr, as they came), for error messages
    std::string stalled;      ///< the watchdog's message when it killed the job, else empty

    bool success() const { return exited && code == 0; }
    /// "exited with status 1" or "was killed by signal 9 (Killed)".
    std::string describe() const;
};

/// What else run_child does: variables added to the child's environment ("NAME=value"), a
/// watchdog consulted every 200 ms, and a flag that stops the child.
struct ChildControl {
    std::vector<std::string> environment;
    Watchdog* watchdog = nullptr;
    /// When given and it turns non-zero (cli/interrupt.hpp's g_interrupted: Ctrl-C, SIGTERM), the
    /// child gets SIGTERM (Open MPI's mpirun and srun pass it on to the ranks), SIGKILL after
    /// kKillGraceS.
    const volatile std::sig_atomic_t* interrupted = nullptr;
};

/// A started child: its process and the read end of the pipe its output goes to (close-on-exec;
/// the caller reads and closes it, and reaps the child).
struct SpawnedChild {
    pid_t pid = -1;
    int output_fd = -1;
    int error_fd = -1;  ///< the read end of its stderr's own pipe, with SpawnOptions::capture_stderr; else -1
};

/// How spawn_child starts a child.
struct SpawnOptions {
    /// Variables set in the child's environment ("NAME=value"), on top of ours.
    std::vector<std::string> environment;
    bool merge_stderr = true;        ///< stderr into the pipe too (else it stays ours)
    bool own_process_group = false;  ///< in a process group of its own (killed as a group), stdin /dev/null
    bool capture_stderr = false;     ///< without merge_stderr: stderr into a pipe of its own (error_fd)
};

/// Starts `argv` (argv[0] a path or a name on PATH). A program that cannot be executed writes
/// "cannot execute PROGRAM: REASON" into the pipe and exits 127. Throws RunError when no pipe or
/// process can be made.
SpawnedChild spawn_child(const std::vector<std::string>& argv, const SpawnOptions& options);

/// Run `argv` (argv[0] a path or a name on PATH) with its stdout, and its stderr too when
/// `merge_stderr`, copied to `out` as they arrive (when `out` is given) and collected in
/// `captured` (when given); without `merge_stderr` its stderr is copied to ours as it arrives, and
/// only its last lines are kept, in the ChildExit's output_tail with stdout's. Returns
/// when the child has ended and its output is drained; output still held open by the child's
/// own children after it ended is read for at most a second or two, so a dead child is never
/// waited on forever. When the watchdog reports a stalled rank, the job is killed (the ranks with
/// SIGKILL, then the child with SIGTERM, which Open MPI's mpirun passes on to any rank left, and
/// SIGKILL after kKillGraceS) and the message is returned in ChildExit::stalled, within about
/// kKillGraceS + 2 s. Throws RunError when the child cannot be started.
ChildExit run_child(const std::vector<std::string>& argv, std::ostream* out, std::string* captured = nullptr,
                    bool merge_stderr = true, const ChildControl& control = {});

/// Seconds a stalled job's mpirun gets to end after SIGTERM before SIGKILL.
inline constexpr double kKillGraceS = 3;

}  // namespace epochcast::cli
