// The rank's supervisor: how a rank that a signal killed is named (issue 44).
//
// When a rank dies of a signal (SIGKILL from the kernel's out-of-memory killer, or a user's kill
// on another host), the other ranks lose their connections to it and may die first of their own
// transport errors (Open MPI's "writev failed: Connection reset by peer" aborts the survivor), so
// what the launcher reports first, and `epochcast run` could name, is then a survivor. Only the
// parent of the killed process learns how it ended. So a rank started by a launcher under
// `epochcast run` (EPOCHCAST_PROGRESS_DIR set) runs as the child of a small supervisor, itself:
//
//   launcher (orted, slurmstepd) -> epochcast-train (supervisor: waits) -> epochcast-train (the rank)
//
// The supervisor forwards the signals a launcher sends (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1,
// SIGUSR2, SIGCONT, SIGTSTP) to the rank, waits for it, and ends as it ended: the same exit status,
// or the same signal (without a second core dump). When the rank died of a signal that the
// supervisor did not pass on (nobody asked the job to stop), it first writes
//   <dir>/rank-R.died.json  {"rank": R, "host": "...", "pid": P, "signal": S, "time_s": T}
// (executor/progress.hpp's report_death; T: seconds since the epoch, so that `epochcast run` names
// the rank that died first, not one the launcher's teardown killed after it). The rank dies with
// its supervisor (PR_SET_PDEATHSIG): a SIGKILL to the supervisor leaves no rank behind.
#pragma once

namespace epochcast {

/// True when a launcher started this process as a rank of a job: Open MPI's mpirun, a PMI
/// launcher such as MPICH's Hydra or srun --mpi=pmi2 (PMI_SIZE), or a PMIx server, among them
/// Slurm's srun --mpi=pmix, which sets none of Open MPI's variables (PMIX_RANK).
bool started_by_launcher();

/// This process's rank before MPI_Init: what the launcher says (Open MPI, a PMI launcher, or a
/// PMIx server such as Slurm's srun --mpi=pmix); 0 when none does.
int launcher_rank();

/// Forks the supervisor when this process is a rank started by a launcher (started_by_launcher)
/// with EPOCHCAST_PROGRESS_DIR set; returns in the rank (the child), or at once, without forking,
/// otherwise. The supervisor never returns. Call first thing in main(), before any thread or
/// MPI_Init.
void supervise_this_rank();

}  // namespace epochcast
