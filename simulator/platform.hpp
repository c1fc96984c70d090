// The SimGrid platform of one cluster, built in code from the resolved scenario (catalog figures
// through the calibration's network priors). Internal to simulator/: it includes SimGrid.
//
//   root: star zone "cluster" (the switch; with a fat-tree, the spine, whose children are rack
//         zones "rack-R" reached through an aggregated uplink "rack-R-uplink", each holding its
//         leaf switch "rack-R-switch" and the node and server zones below)
//     node-N: star zone of the node, its gateway the host "node-N" (the node's CPU and NIC endpoint)
//       node-N-gpu-I: GPU host, speed = the calibrated effective FLOP rate, joined to the node's
//                     star by a split-duplex NVLink/PCIe link (intra_bandwidth_Bps, latency alpha/2)
//     reached through the node's split-duplex NIC link "node-N-nic" (inter_bandwidth_Bps, alpha/2)
//     ps-S-zone: a zone holding the parameter-server CPU host "ps-S", reached through its own
//                split-duplex NIC "ps-S-nic" (server_bandwidth_Bps, alpha/2)
//
// So GPU to GPU inside a node costs intra alpha + bytes / intra bandwidth, node host to node host
// inter alpha + bytes / NIC bandwidth, as the alpha-beta formulas of model/collectives.hpp say.
#pragma once

#include <vector>

#include <simgrid/s4u.hpp>

#include "model/cost_model.hpp"
#include "simulator/simulation.hpp"

namespace epochcast::sim {

struct Platform {
    int nodes = 0;                                ///< worker nodes
    int gpus_per_node = 0;                        ///< GPUs per worker node
    std::vector<simgrid::s4u::Host*> gpus;        ///< node-major: gpu(n, i) = gpus[n * gpus_per_node + i]
    std::vector<simgrid::s4u::Host*> node_hosts;  ///< one per worker node: CPU and NIC endpoint
    std::vector<simgrid::s4u::Host*> servers;     ///< dedicated parameter servers (empty otherwise)

    simgrid::s4u::Host* gpu(int node, int local) const {
        return gpus[static_cast<std::size_t>(node * gpus_per_node + local)];
    }
};

/// Create the zones, hosts and links of the cluster under a fresh Engine and seal them.
/// `gpu_flops_per_s` is the speed of a GPU host; a slow node's GPUs run at speed / factor.
Platform build_platform(const ResolvedScenario& scenario, double gpu_flops_per_s,
                        const std::vector<SlowNode>& slow_nodes, const Topology& topology = {});

/// Latency of the route between two hosts, in seconds (sum of its links' latencies).
double route_latency_s(simgrid::s4u::Host* from, simgrid::s4u::Host* to);

}  // namespace epochcast::sim
