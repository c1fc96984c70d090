// What `epochcast run` needs to start other programs: the mpirun line for epochcast-train (a pure
// function, so that its rules are tested without MPI), finding the programs before anything
// starts, and running a child whose output streams through live and whose death is noticed
// within seconds, never waited on forever.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace epochcast::cli {

/// Everything the mpirun line depends on.
struct LaunchRequest {
    std::string mpirun;                    ///< the mpirun program (a path, or a name found on PATH)
    std::string train_program;             ///< path of epochcast-train
    int ranks = 1;                         ///< --np: MPI ranks in all, parameter servers included
    int ps_ranks = 0;                      ///< --ps-ranks: ranks serving parameters (0: all-reduce)
    int online_cores = 1;                  ///< logical CPUs of this host
    bool root = false;                     ///< running as root (Open MPI refuses without a flag)
    std::vector<std::string> train_flags;  ///< the user's epochcast-train flags, passed verbatim
    std::string trace_out;                 ///< added as --trace-out when train_flags has none (and this is not empty)
};

/// The argv of the mpirun line: mpirun -np N [--allow-run-as-root] [--oversubscribe] BINDING
/// TRAIN [flags verbatim] [--ps-ranks K] [--trace-out FILE]. --oversubscribe when there are more
/// ranks than cores. BINDING: when ranks x --threads (default 1) fit the cores, each rank is bound
/// to cores of its own (--bind-to core, with --map-by slot:PE=T for T threads), which keeps ranks
/// from migrating onto each other's cores; otherwise --bind-to none, so that a rank's threads are
/// not pinned to the one core Open MPI would bind it to.
std::vector<std::string> mpirun_argv(const LaunchRequest& request);

/// The value of `--name VALUE` or `--name=VALUE` among `flags` (the last one given), if any.
std::optional<std::string> flag_value(const std::vector<std::string>& flags, std::string_view name);

/// `program` if it contains a '/' and is an executable file, else the first executable of that
/// name in the folders of $PATH; std::nullopt when there is none.
std::optional<std::string> find_program(const std::string& program);

/// epochcast-train: $EPOCHCAST_TRAIN when set, else the file beside this executable
/// (/proc/self/exe's folder). Throws RunError naming where it looked when it is not executable.
std::string find_train_program();

/// How a child ended.
struct ChildExit {
    bool exited = false;         ///< ended by exit (else by a signal)
    int code = 0;                ///< exit status, when exited
    int signal = 0;              ///< the signal, when not exited
    std::string output_tail;     ///< its last lines of output (stdout and stderr), for error messages

    bool success() const { return exited && code == 0; }
    /// "exited with status 1" or "was killed by signal 9 (Killed)".
    std::string describe() const;
};

/// Run `argv` (argv[0] a path or a name on PATH) with its stdout, and its stderr too when
/// `merge_stderr` (else stderr stays ours), copied to `out` as they arrive (when `out` is given)
/// and collected in `captured` (when given). Returns
/// when the child has ended and its output is drained; output still held open by the child's
/// own children after it ended is read for at most a second or two, so a dead child is never
/// waited on forever. Throws RunError when the child cannot be started.
ChildExit run_child(const std::vector<std::string>& argv, std::ostream* out, std::string* captured = nullptr,
                    bool merge_stderr = true);

}  // namespace epochcast::cli
