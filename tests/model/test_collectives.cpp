// Communication (model/collectives.hpp): the formulas against their derivation, and the network's
// latency and bandwidth parameter of a resolved cluster, recomputed here from the inputs.
#include <gtest/gtest.h>

#include "model/collectives.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"

namespace epochcast {
namespace {

TEST(Collectives, FormulasMatchTheirDerivation) {
    // 1 GB over 8 ranks at 10 GB/s with 1 us latency: 14 us + 1.75 x 0.1 s.
    EXPECT_NEAR(ring_allreduce_s(1e9, 8, 1e-6, 10e9), 14e-6 + 0.175, 1e-12);
    EXPECT_NEAR(ring_reduce_scatter_s(1e9, 8, 1e-6, 10e9), 7e-6 + 0.0875, 1e-12);
    EXPECT_EQ(ring_allreduce_s(1e9, 1, 1e-6, 10e9), 0.0);
    // 8 workers, 16 servers: the worker's NIC bounds (0.1 s), not the servers' (0.05 s).
    EXPECT_NEAR(ps_push_pull_s(1e9, 8, 16, 1e-6, 10e9, 10e9), 2e-6 + 0.1, 1e-12);
    // 8 workers, 2 servers: each server takes 4 GB in: 0.4 s.
    EXPECT_NEAR(ps_push_pull_s(1e9, 8, 2, 1e-6, 10e9, 10e9), 2e-6 + 0.4, 1e-12);
    EXPECT_NEAR(ps_colocated_s(1e9, 4, 0, 10e9), 0.15, 1e-12);
    EXPECT_NEAR(allreduce_bus_factor(64), 2.0 * 63 / 64, 1e-15);
}

TEST(Collectives, NcclRingPaysTheNetworkLatencyOnceAPerNodeHop) {
    // 4 nodes of 8: 62 steps, 6 of them across the network (R3).
    const double t = nccl_ring_allreduce_s(1e9, 4, 8, 1e-6, 1e-5, 100e9);
    EXPECT_NEAR(t, 56 * 1e-6 + 6 * 1e-5 + 62.0 / 32 * 1e9 / 100e9, 1e-12);
    // One node: R1's ring.
    EXPECT_NEAR(nccl_ring_allreduce_s(1e9, 1, 8, 1e-6, 1e-5, 100e9), ring_allreduce_s(1e9, 8, 1e-6, 100e9), 1e-15);
    EXPECT_EQ(nccl_ring_allreduce_s(1e9, 1, 1, 1e-6, 1e-5, 100e9), 0.0);
}

TEST(Collectives, TreeMovesTheBufferOnceOnTwoNodesAndTwiceFromThreeOn) {
    EXPECT_EQ(tree_network_bytes_factor(1), 0.0);
    EXPECT_EQ(tree_network_bytes_factor(2), 1.0);
    EXPECT_EQ(tree_network_bytes_factor(3), 2.0);
    EXPECT_EQ(tree_network_bytes_factor(316), 2.0);
    // 16 nodes of 8, network-bound: latency 2(7 a_i + 4 a_n), bytes 2 S / (0.92 B) (T2).
    const double t = nccl_tree_allreduce_s(1e9, 16, 8, 1e-6, 1e-5, 100e9, 1e15);
    EXPECT_NEAR(t, 2 * (7 * 1e-6 + 4 * 1e-5) + 2 * 1e9 / (kTreeBandwidthFactor * 100e9), 1e-12);
    // Node-bound: the chain moves the buffer twice through each GPU.
    EXPECT_NEAR(nccl_tree_allreduce_s(1e9, 2, 8, 0, 0, 1e15, 50e9), 2 * 1e9 / 50e9, 1e-12);
}

TEST(Collectives, NvlsPaysTwoLatenciesAndTheRingsBytes) {
    EXPECT_NEAR(nvls_allreduce_s(1e9, 8, 1e-6, 450e9), 2e-6 + 1.75 * 1e9 / 450e9, 1e-15);
    EXPECT_EQ(nvls_allreduce_s(1e9, 1, 1e-6, 450e9), 0.0);
}

TEST(ResolveSteps, CrossNodeLatencyIsTheSlowerFabricOfWorkersAndServers) {
    NetworkParams network;
    network.fabric(Interconnect::efa).latency_s = 20e-6;
    network.fabric(Interconnect::tcp).latency_s = 50e-6;
    FabricLatency latency = cross_node_latency(Interconnect::efa, nullptr, network);
    EXPECT_EQ(latency.fabric, Interconnect::efa);
    EXPECT_DOUBLE_EQ(latency.latency_s, 20e-6);
    InstanceSpec server;
    server.name = "server";
    server.interconnect = Interconnect::tcp;
    latency = cross_node_latency(Interconnect::efa, &server, network);
    EXPECT_EQ(latency.fabric, Interconnect::tcp);
    EXPECT_DOUBLE_EQ(latency.latency_s, 50e-6);
    network.fabric(Interconnect::tcp).latency_s = 10e-6;  // a faster server keeps the workers' latency
    latency = cross_node_latency(Interconnect::efa, &server, network);
    EXPECT_EQ(latency.fabric, Interconnect::efa);
    EXPECT_DOUBLE_EQ(latency.latency_s, 20e-6);
}

TEST(ResolveSteps, NodeBandwidthFollowsTheCapOnlyWhereTheNodeReachesIt) {
    NetworkParams network;
    network.fabric(Interconnect::tcp).efficiency = 0.8;
    network.fabric(Interconnect::tcp).cap_GBps = 5;
    InstanceSpec node;
    node.name = "node";
    node.network_gbps = 25;  // 3.125 GB/s x 0.8 = 2.5 GB/s: below the cap
    NetworkParameter parameter = node_network_parameter(node, -1, network);
    EXPECT_EQ(parameter.id, (ParameterId{ParameterKind::fabric_efficiency, static_cast<int>(Interconnect::tcp)}));
    EXPECT_DOUBLE_EQ(parameter.value, 0.8);
    node.network_gbps = 100;  // 12.5 GB/s x 0.8 = 10 GB/s: capped at 5
    parameter = node_network_parameter(node, -1, network);
    EXPECT_EQ(parameter.id, (ParameterId{ParameterKind::fabric_cap, static_cast<int>(Interconnect::tcp)}));
    EXPECT_DOUBLE_EQ(parameter.value, 5.0);
    // EFA with no adapter in use falls back to sockets, and to their parameters.
    node.interconnect = Interconnect::efa;
    node.efa_adapters = 4;
    network.fabric(Interconnect::efa).efficiency = 0.9;
    parameter = node_network_parameter(node, 0, network);
    EXPECT_EQ(parameter.id.index, static_cast<int>(Interconnect::tcp));
    parameter = node_network_parameter(node, -1, network);
    EXPECT_EQ(parameter.id, (ParameterId{ParameterKind::fabric_efficiency, static_cast<int>(Interconnect::efa)}));
    EXPECT_DOUBLE_EQ(parameter.value, 0.9);
}

}  // namespace
}  // namespace epochcast
