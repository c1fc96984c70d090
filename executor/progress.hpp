// Progress reports for `epochcast run`'s watchdog (cli/launch.hpp), and the failure report that
// lets it pass a rank's error through with the rank's exit code.
//
// `epochcast run` creates a fresh folder and names it in the environment variable
// EPOCHCAST_PROGRESS_DIR of mpirun, whose local ranks inherit it. Each rank R then keeps one file:
//   <dir>/rank-R.json  {"rank": R, "host": "...", "pid": P, "steps": S, "slowest_step_s": X}
// rewritten (a temporary, then a rename: a reader never sees half a file) when the rank starts
// (S = 0) and after every step it completes (S = steps done by this invocation; X = its slowest
// step so far, seconds). A rank that fails writes
//   <dir>/rank-R.failed.json  {"rank": R, "host": "...", "code": 1 or 2, "message": "..."}
// before it exits (host: the rank's, so that a failure on a cluster names the machine). A rank that a signal
// killed (nobody asked the job to stop) is reported by its supervisor (executor/rank_supervisor.hpp):
//   <dir>/rank-R.died.json  {"rank": R, "host": "...", "pid": P, "signal": S, "time_s": T}
// (T: when, in seconds since the epoch). Files, not a pipe: they need
// nothing from mpirun (whose output is the ranks' merged text), survive a rank that stops mid-write, and are read by
// polling every 200 ms. Without the variable (epochcast-train started by hand) nothing is written. Reports never fail
// the training: a report that cannot be written is skipped.
#pragma once

#include <cstdint>
#include <string>

namespace epochcast {

inline constexpr const char* kProgressDirVariable = "EPOCHCAST_PROGRESS_DIR";

class ProgressReport {
public:
    /// This rank's reporter; inactive when EPOCHCAST_PROGRESS_DIR is unset or empty. Writes the
    /// start report (0 steps).
    explicit ProgressReport(int rank);
    /// One more step done, which took `step_s` seconds.
    void step_done(double step_s);

private:
    void write() const;

    std::string directory_;
    int rank_ = 0;
    std::int64_t steps_ = 0;
    double slowest_step_s_ = 0;
};

/// Writes rank `rank`'s failure report (exit `code`, one-line `message`) when
/// EPOCHCAST_PROGRESS_DIR is set; does nothing otherwise.
void report_failure(int rank, int code, const std::string& message);

/// Writes rank `rank`'s death report (its process `pid` died of `signal`, now) when
/// EPOCHCAST_PROGRESS_DIR is set; does nothing otherwise. Written by the rank's supervisor
/// (executor/rank_supervisor.hpp).
void report_death(int rank, long long pid, int signal);

}  // namespace epochcast
