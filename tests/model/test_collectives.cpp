// Communication (model/collectives.hpp): the formulas against their derivation, and the network's
// latency and bandwidth parameter of a resolved cluster, recomputed here from the inputs.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <string>

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

/// d t / d ln(x) of `time` at x by central differences in ln x.
template <typename Time>
double central_log_derivative(Time time, double x) {
    constexpr double kStep = 1e-6;
    return (time(x * std::exp(kStep)) - time(x * std::exp(-kStep))) / (2 * kStep);
}

/// Each part an AlphaBetaTime gives against the central difference of its formula's seconds.
void expect_parts_match(const AlphaBetaTime& t, const std::array<std::function<double(double)>, 4>& moved,
                        const std::array<double, 4>& at, const std::string& what) {
    const double parts[] = {t.per_log_latency[0], t.per_log_latency[1], t.per_log_bandwidth[0], t.per_log_bandwidth[1]};
    for (std::size_t i = 0; i < 4; ++i) {
        const double expected = moved[i] ? central_log_derivative(moved[i], at[i]) : 0.0;
        EXPECT_NEAR(parts[i], expected, 1e-7 * t.seconds + 1e-15) << what << ", part " << i;
    }
}

TEST(Collectives, EachFormulasPartsAreItsDerivatives) {
    // Every formula's latency and bandwidth parts are d t / d ln(alpha) and d t / d ln(bandwidth),
    // on both sides of each max (the tree's network or node, the servers' or the workers' NIC).
    const double bytes = 25.6e6;
    for (int n : {2, 3, 8, 64}) {
        const std::string at = "n " + std::to_string(n);
        const double a = 3e-6;
        const double bw = 12e9;
        const AlphaBetaTime ring = ring_allreduce_time(bytes, n, a, bw);
        EXPECT_EQ(ring.seconds, ring_allreduce_s(bytes, n, a, bw));
        expect_parts_match(ring,
                           {[&](double x) { return ring_allreduce_s(bytes, n, x, bw); }, nullptr,
                            [&](double x) { return ring_allreduce_s(bytes, n, a, x); }, nullptr},
                           {a, 0, bw, 0}, "ring " + at);
        const AlphaBetaTime half = ring_reduce_scatter_time(bytes, n, a, bw);
        expect_parts_match(half,
                           {[&](double x) { return ring_reduce_scatter_s(bytes, n, x, bw); }, nullptr,
                            [&](double x) { return ring_reduce_scatter_s(bytes, n, a, x); }, nullptr},
                           {a, 0, bw, 0}, "reduce-scatter " + at);
        const double ai = 1e-6;
        const AlphaBetaTime nccl_ring = nccl_ring_allreduce_time(bytes, n, 8, ai, a, bw);
        expect_parts_match(nccl_ring,
                           {[&](double x) { return nccl_ring_allreduce_s(bytes, n, 8, x, a, bw); },
                            [&](double x) { return nccl_ring_allreduce_s(bytes, n, 8, ai, x, bw); },
                            [&](double x) { return nccl_ring_allreduce_s(bytes, n, 8, ai, a, x); }, nullptr},
                           {ai, a, bw, 0}, "nccl ring " + at);
        // The node's chain slower (a 20 GB/s chain) and faster (a 2,000 GB/s one) than the network.
        for (double node_Bps : {20e9, 2000e9}) {
            const AlphaBetaTime tree = nccl_tree_allreduce_time(bytes, n, 8, ai, a, bw, node_Bps);
            EXPECT_EQ(tree.seconds, nccl_tree_allreduce_s(bytes, n, 8, ai, a, bw, node_Bps));
            expect_parts_match(tree,
                               {[&](double x) { return nccl_tree_allreduce_s(bytes, n, 8, x, a, bw, node_Bps); },
                                [&](double x) { return nccl_tree_allreduce_s(bytes, n, 8, ai, x, bw, node_Bps); },
                                [&](double x) { return nccl_tree_allreduce_s(bytes, n, 8, ai, a, x, node_Bps); },
                                [&](double x) { return nccl_tree_allreduce_s(bytes, n, 8, ai, a, bw, x); }},
                               {ai, a, bw, node_Bps}, "tree " + at + ", node " + std::to_string(node_Bps));
            EXPECT_TRUE((tree.per_log_bandwidth[0] == 0) != (tree.per_log_bandwidth[1] == 0)) << at;
        }
        const AlphaBetaTime nvls = nvls_allreduce_time(bytes, n, ai, 400e9);
        expect_parts_match(nvls,
                           {[&](double x) { return nvls_allreduce_s(bytes, n, x, 400e9); }, nullptr,
                            [&](double x) { return nvls_allreduce_s(bytes, n, ai, x); }, nullptr},
                           {ai, 0, 400e9, 0}, "nvls " + at);
        // Servers fewer (their NICs bound) and more (the worker's NIC bounds) than the workers.
        for (int servers : {1, 4 * n}) {
            const AlphaBetaTime ps = ps_push_pull_time(bytes, n, servers, a, bw, bw);
            expect_parts_match(ps,
                               {[&](double x) { return ps_push_pull_s(bytes, n, servers, x, bw, bw); }, nullptr,
                                [&](double x) { return ps_push_pull_s(bytes, n, servers, a, x, bw); },
                                [&](double x) { return ps_push_pull_s(bytes, n, servers, a, bw, x); }},
                               {a, 0, bw, bw}, "ps " + at + ", servers " + std::to_string(servers));
        }
        const AlphaBetaTime colocated = ps_colocated_time(bytes, n, a, bw);
        expect_parts_match(colocated,
                           {[&](double x) { return ps_colocated_s(bytes, n, x, bw); }, nullptr,
                            [&](double x) { return ps_colocated_s(bytes, n, a, x); }, nullptr},
                           {a, 0, bw, 0}, "colocated " + at);
    }
    // One rank: no time, no parts.
    const AlphaBetaTime none = ring_allreduce_time(bytes, 1, 1e-6, 1e9);
    EXPECT_EQ(none.seconds, 0.0);
    EXPECT_EQ(none.per_log_latency[0], 0.0);
    EXPECT_EQ(none.per_log_bandwidth[0], 0.0);
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
