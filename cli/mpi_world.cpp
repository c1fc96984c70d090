#include "cli/mpi_world.hpp"

#include <cstdlib>
#include <vector>

#include "model/errors.hpp"

#ifdef EPOCHCAST_CLI_WITH_MPI
#include <mpi.h>
#endif

namespace epochcast::cli {
namespace {

/// The number of ranks the launcher says it started: 1 when none did, 0 when a PMIx server did
/// without saying how many (Slurm's srun --mpi=pmix sets PMIX_RANK and no count: MPI tells).
int launched_ranks() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
        if (const char* value = std::getenv(name)) {
            const int n = std::atoi(value);
            if (n > 0) return n;
        }
    }
    return std::getenv("PMIX_RANK") ? 0 : 1;
}

#ifdef EPOCHCAST_CLI_WITH_MPI
void check(int code, const char* what) {
    if (code != MPI_SUCCESS) throw RunError(std::string("MPI call failed: ") + what);
}
#endif

}  // namespace

IndexRange block_of(std::size_t count, int rank, int size) {
    const auto r = static_cast<std::size_t>(rank);
    const auto n = static_cast<std::size_t>(size);
    return {count / n * r + std::min(r, count % n), count / n * (r + 1) + std::min(r + 1, count % n)};
}

std::unique_ptr<MpiWorld> MpiWorld::join() {
    std::unique_ptr<MpiWorld> world(new MpiWorld);
    const int launched = launched_ranks();
    if (launched == 1) return world;
#ifdef EPOCHCAST_CLI_WITH_MPI
    check(MPI_Init(nullptr, nullptr), "MPI_Init");
    world->initialised_ = true;
    check(MPI_Comm_rank(MPI_COMM_WORLD, &world->rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &world->size_), "MPI_Comm_size");
    return world;
#else
    throw RunError((launched > 1 ? "started by mpirun with " + std::to_string(launched) + " ranks"
                                 : std::string("started by a PMIx launcher (srun --mpi=pmix: PMIX_RANK is set)")) +
                   ", but this epochcast was built without MPI: install libopenmpi-dev and rebuild, or run "
                   "without mpirun");
#endif
}

MpiWorld::~MpiWorld() {
#ifdef EPOCHCAST_CLI_WITH_MPI
    if (initialised_) MPI_Finalize();
#endif
}

std::string MpiWorld::gather_text(const std::string& mine) const {
    if (size_ == 1) return mine;
#ifdef EPOCHCAST_CLI_WITH_MPI
    // Lengths first, then the text in pieces below 1 GiB each (MPI counts are ints).
    const long long length = static_cast<long long>(mine.size());
    std::vector<long long> lengths(static_cast<std::size_t>(size_));
    check(MPI_Gather(&length, 1, MPI_LONG_LONG, lengths.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Gather");
    constexpr long long kPiece = 1LL << 30;
    if (rank_ != 0) {
        for (long long sent = 0; sent < length; sent += kPiece) {
            const int n = static_cast<int>(std::min(kPiece, length - sent));
            check(MPI_Send(mine.data() + sent, n, MPI_CHAR, 0, 7, MPI_COMM_WORLD), "MPI_Send");
        }
        return {};
    }
    std::string all = mine;
    for (int source = 1; source < size_; ++source) {
        const std::size_t start = all.size();
        all.resize(start + static_cast<std::size_t>(lengths[static_cast<std::size_t>(source)]));
        for (long long got = 0; got < lengths[static_cast<std::size_t>(source)]; got += kPiece) {
            const int n = static_cast<int>(std::min(kPiece, lengths[static_cast<std::size_t>(source)] - got));
            check(MPI_Recv(all.data() + start + got, n, MPI_CHAR, source, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
        }
    }
    return all;
#else
    return mine;
#endif
}

bool MpiWorld::broadcast_flag(bool value) const {
    if (size_ == 1) return value;
#ifdef EPOCHCAST_CLI_WITH_MPI
    int flag = value ? 1 : 0;
    check(MPI_Bcast(&flag, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    return flag != 0;
#else
    return value;
#endif
}

}  // namespace epochcast::cli
