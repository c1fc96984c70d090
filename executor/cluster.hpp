// Where the ranks of a job run: the nodes (hosts) of MPI_COMM_WORLD as MPI's shared-memory split
// finds them, for the trace's cluster layout, and --describe-host's measurement over every rank of
// the job, which reduces each figure to the slowest rank's per node and measures the all-reduce
// within nodes and across them.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "executor/host.hpp"

namespace epochcast {

/// One node of the job: the world ranks it holds, ascending, and how many are workers and servers.
struct NodeRanks {
    std::string host;  ///< the hostname of its lowest world rank
    std::vector<int> ranks;
    int workers = 0;
    int servers = 0;
};

/// The nodes from each world rank's node (the lowest world rank on it) and hostname, in order of
/// their lowest rank; ranks below `workers` are workers, the others parameter servers.
std::vector<NodeRanks> group_by_node(const std::vector<int>& node_of_rank, const std::vector<std::string>& host_of_rank,
                                     int workers);

/// The nodes of MPI_COMM_WORLD (MPI_Comm_split_type MPI_COMM_TYPE_SHARED), the first `workers`
/// ranks being workers. Collective over MPI_COMM_WORLD; every rank gets the whole layout.
std::vector<NodeRanks> world_layout(int workers);

/// A trace's nodes x gpus_per_node for a layout: the nodes that hold workers, and the workers per
/// node when all hold the same number (even), else the largest count (the product over-counts).
struct WorkerShape {
    int nodes = 0;
    int gpus_per_node = 0;
    bool even = true;
};
WorkerShape worker_shape(const std::vector<NodeRanks>& layout);

/// The layout as a trace run's "layout" key: [{"host", "ranks", "workers", "servers"}, ...].
nlohmann::json layout_json(const std::vector<NodeRanks>& layout);

/// Each node's figures, the slowest of its ranks' (`per_rank` indexed by world rank).
std::vector<NodePeaks> peaks_per_node(const std::vector<NodeRanks>& layout, const std::vector<MeasuredPeaks>& per_rank);

/// The interconnect of several nodes: intra_node_GBps is the slowest node's all-reduce among its own
/// ranks (`within`, per node; a node of one rank has none and gets one_host_links' copy rule),
/// network_gbps 8 x the bus bandwidth `across` the nodes' leaders, the network rate per node it
/// implies. Each source text says which is which.
MeasuredLinks several_nodes_links(const std::vector<NodePeaks>& nodes, const std::vector<MeasuredAllreduce>& within,
                                  const MeasuredAllreduce& across);

/// --describe-host over every rank of MPI_COMM_WORLD (docs/formats.md, "Catalog"): the all-reduce
/// of the ranks (on one node), or within each node and across the nodes' leaders (on several),
/// in `fusion_mib` buckets; then every rank's peaks measured at once with `threads_per_rank`
/// threads. Collective; rank 0 gets host_catalog's document, the other ranks null.
nlohmann::json describe_job_catalog(int threads_per_rank, double fusion_mib);

}  // namespace epochcast
