// The cluster layout (executor/cluster.hpp): ranks grouped by node, the trace's nodes x
// gpus_per_node, each node's slowest rank and the slowest node, the interconnect of several nodes
// as pure functions (one host cannot start several nodes), and --describe-host under mpirun.
#include <gtest/gtest.h>

#include <unistd.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "executor/cluster.hpp"
#include "model/catalog.hpp"
#include "model/errors.hpp"
#include "tests/cli/cli_process.hpp"

namespace epochcast {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Ranks 0 and 2 on a, 1 and 3 on b (a round-robin launcher), 4 alone on c; ranks 0-3 work and 4
// serves: the nodes come in order of their lowest rank, each with its ranks ascending.
TEST(Cluster, RanksAreGroupedByNodeInOrderOfTheirLowestRank) {
    const std::vector<NodeRanks> layout = group_by_node({0, 1, 0, 1, 4}, {"a", "b", "a", "b", "c"}, 4);
    ASSERT_EQ(layout.size(), 3u);
    EXPECT_EQ(layout[0].host, "a");
    EXPECT_EQ(layout[0].ranks, (std::vector<int>{0, 2}));
    EXPECT_EQ(layout[1].host, "b");
    EXPECT_EQ(layout[1].ranks, (std::vector<int>{1, 3}));
    EXPECT_EQ(layout[2].host, "c");
    EXPECT_EQ(layout[2].ranks, (std::vector<int>{4}));
    EXPECT_EQ(layout[0].workers, 2);
    EXPECT_EQ(layout[0].servers, 0);
    EXPECT_EQ(layout[2].workers, 0);
    EXPECT_EQ(layout[2].servers, 1);

    // The server-only node holds no GPU: 2 nodes of 2.
    const WorkerShape shape = worker_shape(layout);
    EXPECT_EQ(shape.nodes, 2);
    EXPECT_EQ(shape.gpus_per_node, 2);
    EXPECT_TRUE(shape.even);

    const nlohmann::json json = layout_json(layout);
    ASSERT_EQ(json.size(), 3u);
    EXPECT_EQ(json[1], nlohmann::json::parse(R"({"host": "b", "ranks": [1, 3], "workers": 2, "servers": 0})"));
    EXPECT_EQ(json[2], nlohmann::json::parse(R"({"host": "c", "ranks": [4], "workers": 0, "servers": 1})"));

    // A node is named by its lowest rank: a later rank cannot be it.
    EXPECT_THROW(group_by_node({0, 2, 2}, {"a", "b", "b"}, 3), RunError);
    EXPECT_THROW(group_by_node({0, 0}, {"a"}, 2), RunError);
}

TEST(Cluster, AnUnevenLayoutReportsTheLargestNodeAndSaysItIsUneven) {
    const std::vector<NodeRanks> layout = group_by_node({0, 0, 0, 3}, {"a", "a", "a", "b"}, 4);
    const WorkerShape shape = worker_shape(layout);
    EXPECT_EQ(shape.nodes, 2);
    EXPECT_EQ(shape.gpus_per_node, 3);
    EXPECT_FALSE(shape.even);
    const WorkerShape one = worker_shape(group_by_node({0, 0}, {"a", "a"}, 2));
    EXPECT_EQ(one.nodes, 1);
    EXPECT_EQ(one.gpus_per_node, 2);
    EXPECT_TRUE(one.even);
}

// Synchronous training waits for its slowest rank: each node's figure is its slowest rank's, the
// device's each figure the slowest node's, and which node that is, figure by figure.
TEST(Cluster, EachNodeHasItsSlowestRanksFiguresAndTheDeviceTheSlowestNodes) {
    const std::vector<NodeRanks> layout = group_by_node({0, 0, 2, 2}, {"a", "a", "b", "b"}, 4);
    const std::vector<MeasuredPeaks> per_rank = {
        {0.20, 0.80, 12.0, 3.0}, {0.18, 0.90, 11.0, 3.5}, {0.25, 0.60, 14.0, 2.5}, {0.24, 0.70, 15.0, 2.0}};
    const std::vector<NodePeaks> nodes = peaks_per_node(layout, per_rank);
    ASSERT_EQ(nodes.size(), 2u);
    EXPECT_EQ(nodes[0].host, "a");
    EXPECT_EQ(nodes[0].ranks, 2);
    EXPECT_DOUBLE_EQ(nodes[0].peaks.fp32_tflops, 0.18);
    EXPECT_DOUBLE_EQ(nodes[0].peaks.bf16_tflops, 0.80);
    EXPECT_DOUBLE_EQ(nodes[0].peaks.memory_GBps, 11.0);
    EXPECT_DOUBLE_EQ(nodes[0].peaks.thread_copy_GBps, 3.0);
    EXPECT_DOUBLE_EQ(nodes[1].peaks.fp32_tflops, 0.24);
    EXPECT_DOUBLE_EQ(nodes[1].peaks.bf16_tflops, 0.60);
    EXPECT_DOUBLE_EQ(nodes[1].peaks.memory_GBps, 14.0);
    EXPECT_DOUBLE_EQ(nodes[1].peaks.thread_copy_GBps, 2.0);

    const SlowestNode slowest = slowest_node(nodes);
    EXPECT_DOUBLE_EQ(slowest.peaks.fp32_tflops, 0.18);
    EXPECT_EQ(slowest.fp32_node, 0u);
    EXPECT_DOUBLE_EQ(slowest.peaks.bf16_tflops, 0.60);
    EXPECT_EQ(slowest.bf16_node, 1u);
    EXPECT_DOUBLE_EQ(slowest.peaks.memory_GBps, 11.0);
    EXPECT_EQ(slowest.memory_node, 0u);
    EXPECT_THROW(slowest_node({}), RunError);

    // The catalog holds them: the device the slowest figures, "nodes" each node's, the source
    // names the nodes; the parser reads it (and ignores "nodes").
    const MeasuredLinks links = one_host_links(slowest.peaks, nullptr);
    const nlohmann::json document = host_catalog(1, nodes, links);
    const Catalog catalog = Catalog::parse(document.dump(), "describe-host", Catalog::built_in());
    const GpuSpec& cpu = catalog.gpu("local-cpu");
    EXPECT_DOUBLE_EQ(cpu.fp32_tflops, 0.18);
    EXPECT_DOUBLE_EQ(cpu.bf16_tflops, 0.60);
    EXPECT_DOUBLE_EQ(cpu.memory_GBps, 11.0);
    EXPECT_TRUE(contains(cpu.source, "slowest node's of 2 nodes")) << cpu.source;
    EXPECT_TRUE(contains(cpu.source, "fp32_tflops a, bf16_tflops b, memory_GBps a")) << cpu.source;
    ASSERT_EQ(document.at("nodes").size(), 2u);
    EXPECT_EQ(document["nodes"][1],
              nlohmann::json::parse(
                  R"({"host": "b", "ranks": 2, "fp32_tflops": 0.24, "bf16_tflops": 0.6, "memory_GBps": 14.0})"));
}

// Several nodes: intra_node_GBps is the slowest node's own all-reduce (a node of one rank: its
// one-thread copy), network_gbps 8 x the leaders' bus bandwidth; the source says which is which.
TEST(Cluster, SeveralNodesTakeTheSlowestNodesAllReduceAndTheLeadersNetwork) {
    const std::vector<NodePeaks> nodes = {{"a", 2, {0.2, 0, 10, 3.0}}, {"b", 4, {0.2, 0, 10, 3.0}}};
    const MeasuredAllreduce across{2, 1.5, 64, 4};
    MeasuredLinks links = several_nodes_links(nodes, {{2, 6.0, 64, 4}, {4, 5.0, 64, 4}}, across);
    EXPECT_DOUBLE_EQ(links.intra_node_GBps, 5.0);
    EXPECT_DOUBLE_EQ(links.network_gbps, 12.0);
    EXPECT_TRUE(contains(links.intra_node_source, "bus bandwidth of 4 ranks")) << links.intra_node_source;
    EXPECT_TRUE(contains(links.intra_node_source, "within node b, the slowest of 2 nodes")) << links.intra_node_source;
    EXPECT_TRUE(contains(links.network_source, "8 x the MPI all-reduce bus bandwidth of 2 ranks"))
        << links.network_source;
    EXPECT_TRUE(contains(links.network_source, "one rank (the lowest) per node")) << links.network_source;

    // Node c has one rank: no all-reduce of its own, its one-thread copy (2.5) is the slowest.
    const std::vector<NodePeaks> three = {nodes[0], nodes[1], {"c", 1, {0.2, 0, 10, 2.5}}};
    links = several_nodes_links(three, {{2, 6.0, 64, 4}, {4, 5.0, 64, 4}, {1, 0, 64, 4}}, across);
    EXPECT_DOUBLE_EQ(links.intra_node_GBps, 2.5);
    EXPECT_TRUE(contains(links.intra_node_source, "one-thread memcpy")) << links.intra_node_source;
    EXPECT_TRUE(contains(links.intra_node_source, "within node c")) << links.intra_node_source;
    EXPECT_THROW(several_nodes_links(three, {{2, 6.0, 64, 4}}, across), RunError);
}

// The issue's case on one host: `epochcast run` starts --describe-host with the ranks the host
// holds; their figures, measured at once, are listed under "nodes" and the device is the node's.
TEST(Cluster, DescribeHostUnderMpirunListsTheNodeWithItsRanksAndTheDevicesFigures) {
    const testing::ProcessResult run =
        testing::run_command(testing::mpirun_command(2) + " '" + testing::test_program(EPOCHCAST_TRAIN_PATH) +
                             "' --describe-host --threads 1");
    ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
    const nlohmann::json document = nlohmann::json::parse(run.out);
    const Catalog catalog = Catalog::parse(run.out, "describe-host", Catalog::built_in());
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    const nlohmann::json& nodes = document.at("nodes");
    ASSERT_EQ(nodes.size(), 1u) << nodes;
    EXPECT_EQ(nodes[0].at("host"), name);
    EXPECT_EQ(nodes[0].at("ranks"), 2);
    const GpuSpec& cpu = catalog.gpu("local-cpu");
    // Measured on cores a busy suite shares: positive, with no floor the code could promise.
    EXPECT_GT(cpu.fp32_tflops, 0.0);
    EXPECT_EQ(nodes[0].at("fp32_tflops").get<double>(), cpu.fp32_tflops);
    EXPECT_EQ(nodes[0].at("bf16_tflops").get<double>(), cpu.bf16_tflops);
    EXPECT_EQ(nodes[0].at("memory_GBps").get<double>(), cpu.memory_GBps);
    EXPECT_TRUE(contains(cpu.source, std::string("slowest of the 2 rank(s) measured at once on node ") + name))
        << cpu.source;
    const InstanceSpec& instance = catalog.instance("local-cpu");
    EXPECT_GT(instance.intra_node_GBps, 0.0);
    EXPECT_TRUE(contains(instance.source, "bus bandwidth of 2 ranks measured together")) << instance.source;
}

// Issue 44: under Slurm's srun --mpi=pmix the ranks get PMIx's variables (PMIX_RANK) and none of
// Open MPI's; --describe-host took each for a process on its own, so every rank printed its own
// catalog and `epochcast run --launcher srun` read two documents. Open MPI's mpirun without its
// OMPI_COMM_WORLD_SIZE is the same start: one document, of both ranks.
TEST(Cluster, DescribeHostUnderAPmixLauncherWithoutOpenMpisVariablesIsOneJob) {
    const testing::ProcessResult run =
        testing::run_command(testing::mpirun_command(2) + " env -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_RANK '" +
                             testing::test_program(EPOCHCAST_TRAIN_PATH) + "' --describe-host --threads 1");
    ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
    const nlohmann::json document = nlohmann::json::parse(run.out, nullptr, false);
    ASSERT_FALSE(document.is_discarded()) << "not one JSON document:\n" << run.out;
    const nlohmann::json& nodes = document.at("nodes");
    ASSERT_EQ(nodes.size(), 1u) << nodes;
    EXPECT_EQ(nodes[0].at("ranks"), 2);
}

}  // namespace
}  // namespace epochcast
