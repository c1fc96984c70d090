#include "executor/cluster.hpp"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>

#include "executor/distributed.hpp"
#include "model/errors.hpp"

namespace epochcast {
namespace {

/// Host names travel in fixed-size slots (Linux's are at most 64 bytes).
constexpr int kHostNameBytes = 256;

/// --describe-host sums this much per round, ResNet-50's gradient being 98 MiB in fp32, the best
/// of this many rounds.
constexpr std::int64_t kDescribeAllreduceMiB = 64;
constexpr int kDescribeAllreduceRounds = 3;
constexpr std::int64_t kBytesPerMiB = 1024 * 1024;

/// The ranks of MPI_COMM_WORLD on this rank's node, ordered by world rank: its rank 0 is the
/// node's lowest world rank. The caller frees it.
MPI_Comm node_communicator() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    return node;
}

/// The all-reduce bus bandwidth of `comm` in --describe-host's rounds, as the catalog records it.
MeasuredAllreduce measure_allreduce(MPI_Comm comm, double fusion_mib) {
    MeasuredAllreduce allreduce{0, 0, static_cast<double>(kDescribeAllreduceMiB), fusion_mib};
    MPI_Comm_size(comm, &allreduce.ranks);
    allreduce.bus_GBps =
        allreduce_bus_bytes_per_s(comm, kDescribeAllreduceMiB * kBytesPerMiB,
                                  static_cast<std::int64_t>(fusion_mib * kBytesPerMiB), kDescribeAllreduceRounds) /
        1e9;
    return allreduce;
}

}  // namespace

std::vector<NodeRanks> group_by_node(const std::vector<int>& node_of_rank, const std::vector<std::string>& host_of_rank,
                                     int workers) {
    if (node_of_rank.size() != host_of_rank.size()) {
        throw RunError("group_by_node: " + std::to_string(node_of_rank.size()) + " nodes but " +
                       std::to_string(host_of_rank.size()) + " host names");
    }
    std::map<int, std::size_t> index_of_node;  // lowest world rank -> index in the layout
    std::vector<NodeRanks> layout;
    for (std::size_t rank = 0; rank < node_of_rank.size(); ++rank) {
        const int node = node_of_rank[rank];
        if (node < 0 || static_cast<std::size_t>(node) > rank) {
            throw RunError("group_by_node: rank " + std::to_string(rank) + "'s node is rank " + std::to_string(node) +
                           ", not its lowest rank");
        }
        const auto [it, added] = index_of_node.emplace(node, layout.size());
        if (added) layout.push_back({host_of_rank[static_cast<std::size_t>(node)], {}, 0, 0});
        NodeRanks& entry = layout[it->second];
        entry.ranks.push_back(static_cast<int>(rank));
        (static_cast<int>(rank) < workers ? entry.workers : entry.servers) += 1;
    }
    return layout;
}

std::vector<NodeRanks> world_layout(int workers) {
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    MPI_Comm node = node_communicator();
    int lowest = rank;
    MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    std::vector<int> node_of_rank(static_cast<std::size_t>(ranks));
    MPI_Allgather(&lowest, 1, MPI_INT, node_of_rank.data(), 1, MPI_INT, MPI_COMM_WORLD);

    std::array<char, kHostNameBytes> name{};
    const std::string own = host_name();
    std::copy_n(own.begin(), std::min<std::size_t>(own.size(), kHostNameBytes - 1), name.begin());
    std::vector<char> names(static_cast<std::size_t>(ranks) * kHostNameBytes);
    MPI_Allgather(name.data(), kHostNameBytes, MPI_CHAR, names.data(), kHostNameBytes, MPI_CHAR, MPI_COMM_WORLD);
    std::vector<std::string> host_of_rank;
    for (int r = 0; r < ranks; ++r)
        host_of_rank.emplace_back(names.data() + static_cast<std::size_t>(r) * kHostNameBytes);
    return group_by_node(node_of_rank, host_of_rank, workers);
}

WorkerShape worker_shape(const std::vector<NodeRanks>& layout) {
    WorkerShape shape;
    int first = -1;
    for (const NodeRanks& node : layout) {
        if (node.workers == 0) continue;  // servers only: not a node of GPUs
        ++shape.nodes;
        shape.gpus_per_node = std::max(shape.gpus_per_node, node.workers);
        if (first < 0) first = node.workers;
        shape.even = shape.even && node.workers == first;
    }
    return shape;
}

nlohmann::json layout_json(const std::vector<NodeRanks>& layout) {
    nlohmann::json entries = nlohmann::json::array();
    for (const NodeRanks& node : layout) {
        entries.push_back(
            {{"host", node.host}, {"ranks", node.ranks}, {"workers", node.workers}, {"servers", node.servers}});
    }
    return entries;
}

std::vector<NodePeaks> peaks_per_node(const std::vector<NodeRanks>& layout,
                                      const std::vector<MeasuredPeaks>& per_rank) {
    std::vector<NodePeaks> nodes;
    for (const NodeRanks& node : layout) {
        if (node.ranks.empty()) throw RunError("peaks_per_node: node " + node.host + " has no ranks");
        NodePeaks peaks{node.host, static_cast<int>(node.ranks.size()),
                        per_rank.at(static_cast<std::size_t>(node.ranks[0]))};
        for (const int rank : node.ranks)
            peaks.peaks = slower(peaks.peaks, per_rank.at(static_cast<std::size_t>(rank)));
        nodes.push_back(std::move(peaks));
    }
    return nodes;
}

MeasuredLinks several_nodes_links(const std::vector<NodePeaks>& nodes, const std::vector<MeasuredAllreduce>& within,
                                  const MeasuredAllreduce& across) {
    if (nodes.empty() || within.size() != nodes.size()) {
        throw RunError("several_nodes_links: " + std::to_string(within.size()) + " all-reduces for " +
                       std::to_string(nodes.size()) + " nodes");
    }
    std::size_t slowest = 0;
    std::vector<MeasuredLinks> links;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        links.push_back(one_host_links(nodes[i].peaks, nodes[i].ranks > 1 ? &within[i] : nullptr));
        if (links[i].intra_node_GBps < links[slowest].intra_node_GBps) slowest = i;
    }
    return {links[slowest].intra_node_GBps, across.bus_GBps * 8.0,
            links[slowest].intra_node_source + " within node " + nodes[slowest].host + ", the slowest of " +
                std::to_string(nodes.size()) + " nodes each measured among its own ranks",
            "8 x " + across.description() +
                " across the nodes, one rank (the lowest) per node: the network rate per node it implies"};
}

nlohmann::json describe_job_catalog(int threads_per_rank, double fusion_mib) {
    if (threads_per_rank < 1) {
        throw InputError("--threads must be at least 1 (got " + std::to_string(threads_per_rank) + ")");
    }
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const std::vector<NodeRanks> layout = world_layout(ranks);

    // The all-reduces first, each on otherwise idle ranks; then the peaks with every rank busy.
    MeasuredAllreduce everyone, across;  // one node: all ranks; several: the nodes' leaders
    double node_bus_GBps = 0;            // several nodes: this rank's node's own all-reduce
    if (layout.size() == 1) {
        if (ranks > 1) everyone = measure_allreduce(MPI_COMM_WORLD, fusion_mib);
    } else {
        MPI_Comm node = node_communicator();
        int node_rank = 0;
        MPI_Comm_rank(node, &node_rank);
        node_bus_GBps = measure_allreduce(node, fusion_mib).bus_GBps;  // 0 on a node of one rank
        MPI_Comm_free(&node);
        MPI_Barrier(MPI_COMM_WORLD);  // no node's all-reduce still running while the network is measured
        MPI_Comm leaders = MPI_COMM_NULL;
        MPI_Comm_split(MPI_COMM_WORLD, node_rank == 0 ? 0 : MPI_UNDEFINED, rank, &leaders);
        if (leaders != MPI_COMM_NULL) {
            across = measure_allreduce(leaders, fusion_mib);
            MPI_Comm_free(&leaders);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const MeasuredPeaks mine = measure_peaks(threads_per_rank);

    // Rank 0 gathers every rank's figures: the four peaks and its node's all-reduce.
    const std::array<double, 5> sent = {mine.fp32_tflops, mine.bf16_tflops, mine.memory_GBps, mine.thread_copy_GBps,
                                        node_bus_GBps};
    std::vector<double> gathered(rank == 0 ? sent.size() * static_cast<std::size_t>(ranks) : 0);
    MPI_Gather(sent.data(), static_cast<int>(sent.size()), MPI_DOUBLE, gathered.data(), static_cast<int>(sent.size()),
               MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank != 0) return nullptr;
    std::vector<MeasuredPeaks> per_rank;
    for (int r = 0; r < ranks; ++r) {
        const double* figures = gathered.data() + sent.size() * static_cast<std::size_t>(r);
        per_rank.push_back({figures[0], figures[1], figures[2], figures[3]});
    }
    const std::vector<NodePeaks> nodes = peaks_per_node(layout, per_rank);
    if (layout.size() == 1) {
        return host_catalog(threads_per_rank, nodes,
                            one_host_links(slowest_node(nodes).peaks, ranks > 1 ? &everyone : nullptr));
    }
    std::vector<MeasuredAllreduce> within;  // every rank of a node measured the same figure
    for (const NodeRanks& node : layout) {
        within.push_back({static_cast<int>(node.ranks.size()),
                          gathered[sent.size() * static_cast<std::size_t>(node.ranks[0]) + 4],
                          static_cast<double>(kDescribeAllreduceMiB), fusion_mib});
    }
    return host_catalog(threads_per_rank, nodes, several_nodes_links(nodes, within, across));
}

}  // namespace epochcast
