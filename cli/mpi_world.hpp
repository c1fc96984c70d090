// The optional MPI side of `epochcast sweep`: when the program was started by mpirun or srun (Open
// MPI's OMPI_COMM_WORLD_SIZE or a PMI launcher's PMI_SIZE above 1 in the environment, or a PMIx
// server's PMIX_RANK, which Slurm's srun --mpi=pmix sets without a count) and this build has MPI,
// the ranks share the sweep and rank 0 gathers the rows. Otherwise there is one rank and no
// MPI call is made, so the CLI works the same without MPI.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace epochcast::cli {

class MpiWorld {
public:
    /// MPI_Init when launched by mpirun with more than one rank, or by a PMIx server (and built
    /// with MPI); otherwise a world of one. Throws RunError when launched so but this build has no MPI.
    static std::unique_ptr<MpiWorld> join();
    ~MpiWorld();  ///< MPI_Finalize when join() initialised MPI

    int rank() const { return rank_; }
    int size() const { return size_; }

    /// Rank 0 gets every rank's text concatenated in rank order; the others get "".
    std::string gather_text(const std::string& mine) const;

    /// Rank 0's flag on every rank (e.g. "the spec was bad, stop").
    bool broadcast_flag(bool value) const;

private:
    MpiWorld() = default;
    int rank_ = 0;
    int size_ = 1;
    [[maybe_unused]] bool initialised_ = false;  // read only where the CLI is built with MPI
};

/// The half-open index range [first, last) of `count` items that `rank` of `size` handles:
/// contiguous blocks whose sizes differ by at most one.
struct IndexRange {
    std::size_t first = 0;
    std::size_t last = 0;
};
IndexRange block_of(std::size_t count, int rank, int size);

}  // namespace epochcast::cli
