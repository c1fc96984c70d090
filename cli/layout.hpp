// Where `epochcast run` puts its ranks: the hosts a user names (an Open MPI hostfile, `--host
// h1:N,h2:N`, or the Slurm allocation it runs in), how many ranks go on each, and which of them
// are this machine. Pure functions of text and environment, so their rules are tested without a
// cluster; the launcher line built from them is cli/launch.hpp's.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace epochcast::cli {

/// A host and the ranks it may hold (Open MPI's "slots").
struct HostSlots {
    std::string name;
    int slots = 0;

    bool operator==(const HostSlots&) const = default;
};

/// Most slots one host may declare, and most hosts a layout may name: far beyond any node and any
/// cluster, small enough that every product of them fits an int.
inline constexpr int kMaxSlotsPerHost = 4096;
inline constexpr int kMaxHosts = 65536;

/// An Open MPI hostfile: one host per line, `NAME slots=N` (`max_slots=M`/`max-slots=M` accepted
/// and checked, not used; `#` starts a comment; blank lines skipped). A host named twice has the
/// sum of its slots, in the place of its first line, as Open MPI counts it. Every host must say
/// its slots: epochcast records how many ranks ran on each node, so it does not guess them (Open
/// MPI would count the remote host's cores). Throws InputError naming `origin` and the line.
std::vector<HostSlots> parse_hostfile(std::string_view text, std::string_view origin);

/// `--host h1:N,h2:N` as Open MPI's -H reads it: comma-separated hosts, each with ":N" slots or
/// none for 1; a host named twice adds up. Throws InputError naming the bad entry.
std::vector<HostSlots> parse_host_list(std::string_view list);

/// A Slurm host list ("node[01-03,07],gpu-a5") expanded to names, in order: a bracket holds
/// numbers and ranges whose zero padding is kept ("[08-10]" gives 08, 09, 10). Throws InputError
/// for unbalanced brackets, an empty or reversed range, or more than kMaxHosts names.
std::vector<std::string> expand_slurm_hostlist(std::string_view list);

/// What the environment says of the Slurm allocation this process runs in.
struct SlurmAllocation {
    std::string job_id;                ///< SLURM_JOB_ID
    std::vector<std::string> nodes;    ///< SLURM_JOB_NODELIST (or SLURM_NODELIST), expanded
    std::optional<int> tasks;          ///< SLURM_NTASKS, when the allocation was made with a task count
    std::optional<int> gpus_per_node;  ///< SLURM_GPUS_ON_NODE, when GPUs were allocated
};

/// The allocation, when SLURM_JOB_ID is set; `variable` reads the environment (std::getenv's
/// value, or nullopt when unset), so tests pass their own. Throws InputError for a node list or
/// a count Slurm would not write.
std::optional<SlurmAllocation> slurm_allocation(
    const std::function<std::optional<std::string>(const std::string&)>& variable);
/// The same from this process's environment.
std::optional<SlurmAllocation> slurm_allocation_from_environment();

/// The ranks of a run placed on hosts: every host used holds ranks_per_node ranks, in host order
/// (rank r on hosts[r / ranks_per_node]). epochcast's model describes a cluster of equal nodes
/// (nodes x GPUs per node), so a layout is always even.
struct RankLayout {
    std::vector<std::string> hosts;  ///< the hosts used, in rank order
    int ranks_per_node = 0;

    int ranks() const { return static_cast<int>(hosts.size()) * ranks_per_node; }
};

/// `ranks` placed on `hosts` (nullopt ranks: all their slots) by filling each host's slots in
/// order, as Open MPI maps by slot. Throws InputError, naming the hosts and a count that works,
/// when the ranks are more than the slots or would leave the hosts used with unequal counts
/// (8 + 8 + 4); hosts left without a rank are not used.
RankLayout place_ranks(const std::vector<HostSlots>& hosts, std::optional<int> ranks);

/// `ranks` over the allocation's nodes, the same count on each: throws InputError when they do
/// not divide evenly (naming the counts that do).
RankLayout place_ranks_on_allocation(const SlurmAllocation& allocation, int ranks);

/// Whether `host` names this machine: localhost, a loopback address, or this host's name (full,
/// or the part before the first dot either way round). `this_host` is gethostname()'s answer.
bool is_this_host(std::string_view host, std::string_view this_host);

/// gethostname(), or "localhost" when it fails.
std::string this_host_name();

/// One node's peaks as `epochcast-train --describe-host` measured them under the launcher (the
/// slowest of its ranks; docs/formats.md, "Catalog", key "nodes").
struct NodePeaks {
    std::string host;
    int ranks = 0;
    double fp32_tflops = 0;
    double bf16_tflops = 0;
    double memory_GBps = 0;
};

/// A node is a straggler when its compute peak for the run's precision (bf16's with `bf16`, else
/// fp32's) or its memory bandwidth is below this fraction of the median node's: a synchronous
/// data-parallel step waits for its slowest rank, so one such node paces the whole cluster.
inline constexpr double kStragglerFraction = 0.8;

/// What makes `node` a straggler among `nodes` ("bf16 peak 0.42 TFLOP/s, 49% of the median
/// node's"), or "" when it is not one (and always with fewer than 2 nodes).
std::string straggler_reason(const NodePeaks& node, const std::vector<NodePeaks>& nodes, bool bf16);

}  // namespace epochcast::cli
