#include "simulator/platform.hpp"

#include <string>

namespace epochcast::sim {
namespace sg4 = simgrid::s4u;
namespace {

/// Speed given to CPU hosts (node endpoints, parameter servers), which never compute in the
/// simulation; any positive figure does, in FLOP/s.
constexpr double kCpuHostFlopsPerS = 1e9;
/// Bandwidth of a host's loopback (a co-located parameter server answering its own node), in
/// bytes/s; only zero-byte notices travel there, so any large figure does.
constexpr double kLoopbackBps = 1e12;

sg4::Link* split_duplex(sg4::NetZone* zone, const std::string& name, double bandwidth_Bps, double latency_s) {
    sg4::SplitDuplexLink* link = zone->create_split_duplex_link(name, bandwidth_Bps);
    link->set_latency(latency_s);
    link->seal();
    return link;
}

/// Where leaves (worker nodes, servers) hang: the root star itself, or one rack zone per
/// `rack_nodes` leaves (a leaf switch), each reaching the root (the spine) through one aggregated
/// uplink of (sum of its leaves' NIC bandwidths) / oversubscription.
class Leaves {
public:
    Leaves(sg4::NetZone* root, const Topology& topology) : root_(root), topology_(topology) {}

    /// The zone a new leaf joins, and a note of its NIC bandwidth for the rack's uplink.
    sg4::NetZone* parent_for_next(double nic_Bps) {
        if (topology_.kind == TopologyKind::star) return root_;
        const std::size_t rack = count_++ / static_cast<std::size_t>(topology_.rack_nodes);
        if (rack == racks_.size()) {
            const std::string name = "rack-" + std::to_string(rack);
            Rack r;
            r.zone = sg4::create_star_zone(name);
            r.zone->set_parent(root_);
            // The leaf switch as a host in a zone of its own (see the server comment below on
            // SimGrid 3.32 and hosts beside child zones); it only forwards.
            sg4::NetZone* switch_zone = sg4::create_star_zone(name + "-switch-zone");
            switch_zone->set_parent(r.zone);
            r.gateway = switch_zone->create_host(name + "-switch", kCpuHostFlopsPerS);
            r.gateway->seal();
            switch_zone->seal();
            r.zone->add_route(switch_zone->get_netpoint(), nullptr, r.gateway->get_netpoint(), nullptr, {}, true);
            racks_.push_back(r);
        }
        racks_[rack].nic_sum_Bps += nic_Bps;
        return racks_[rack].zone;
    }

    /// Seal the racks and join them to the spine.
    void seal() {
        for (std::size_t r = 0; r < racks_.size(); ++r) {
            racks_[r].zone->seal();
            const std::string name = "rack-" + std::to_string(r) + "-uplink";
            sg4::Link* uplink = split_duplex(root_, name, racks_[r].nic_sum_Bps / topology_.oversubscription, 0.0);
            root_->add_route(racks_[r].zone->get_netpoint(), nullptr, racks_[r].gateway->get_netpoint(), nullptr,
                             {{uplink, sg4::LinkInRoute::Direction::UP}}, true);
        }
    }

private:
    struct Rack {
        sg4::NetZone* zone = nullptr;
        sg4::Host* gateway = nullptr;
        double nic_sum_Bps = 0;
    };
    sg4::NetZone* root_;
    Topology topology_;
    std::size_t count_ = 0;
    std::vector<Rack> racks_;
};

}  // namespace

Platform build_platform(const ResolvedScenario& s, double gpu_flops_per_s, const std::vector<SlowNode>& slow_nodes,
                        const Topology& topology) {
    Platform platform;
    platform.nodes = s.nodes;
    platform.gpus_per_node = s.gpus_per_node;
    std::vector<double> slowdown(static_cast<std::size_t>(s.nodes), 1.0);
    for (const SlowNode& slow : slow_nodes) slowdown[static_cast<std::size_t>(slow.node)] *= slow.factor;

    sg4::NetZone* root = sg4::create_star_zone("cluster");
    Leaves leaves(root, topology);
    // Each end of a route carries half of the per-message latency, so a route across the switch
    // costs one alpha (docs/model.md, eq. R1's alpha).
    const double intra_half_s = s.intra_latency_s / 2;
    const double inter_half_s = s.inter_latency_s / 2;
    for (int n = 0; n < s.nodes; ++n) {
        const std::string name = "node-" + std::to_string(n);
        sg4::NetZone* parent = leaves.parent_for_next(s.inter_bandwidth_Bps);
        sg4::NetZone* zone = sg4::create_star_zone(name);
        zone->set_parent(parent);
        sg4::Host* endpoint = zone->create_host(name, kCpuHostFlopsPerS);
        endpoint->seal();
        sg4::Link* loopback = zone->create_link(name + "-loopback", kLoopbackBps);
        loopback->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE);
        loopback->seal();
        zone->add_route(endpoint->get_netpoint(), endpoint->get_netpoint(), nullptr, nullptr,
                        {sg4::LinkInRoute(loopback)}, false);
        // The endpoint is the zone's gateway: no link of its own inside the node (an empty route,
        // which a star zone needs spelled out once the loopback route exists).
        zone->add_route(endpoint->get_netpoint(), nullptr, nullptr, nullptr, {}, true);
        platform.node_hosts.push_back(endpoint);
        for (int i = 0; i < s.gpus_per_node; ++i) {
            const std::string gpu_name = name + "-gpu-" + std::to_string(i);
            sg4::Host* gpu = zone->create_host(gpu_name, gpu_flops_per_s / slowdown[static_cast<std::size_t>(n)]);
            gpu->seal();
            // One GPU alone has no intra-node link worth simulating; a zero bandwidth is not allowed.
            const double bandwidth = s.intra_bandwidth_Bps > 0 ? s.intra_bandwidth_Bps : 1e12;
            sg4::Link* link = split_duplex(zone, gpu_name + "-link", bandwidth, intra_half_s);
            zone->add_route(gpu->get_netpoint(), nullptr, nullptr, nullptr, {{link, sg4::LinkInRoute::Direction::UP}},
                            true);
            platform.gpus.push_back(gpu);
        }
        zone->seal();
        sg4::Link* nic = split_duplex(parent, name + "-nic", s.inter_bandwidth_Bps, inter_half_s);
        parent->add_route(zone->get_netpoint(), nullptr, endpoint->get_netpoint(), nullptr,
                          {{nic, sg4::LinkInRoute::Direction::UP}}, true);
    }
    for (int p = 0; p < s.ps_nodes; ++p) {
        // A zone of its own, like a worker node: SimGrid 3.32 routes a host placed directly in the
        // root star beside child zones through the first zone's NIC (seen with route_to), so every
        // endpoint sits in a zone and the root star only joins zones.
        const std::string name = "ps-" + std::to_string(p);
        sg4::NetZone* parent = leaves.parent_for_next(s.server_bandwidth_Bps);
        sg4::NetZone* zone = sg4::create_star_zone(name + "-zone");
        zone->set_parent(parent);
        sg4::Host* server = zone->create_host(name, kCpuHostFlopsPerS);
        server->seal();
        zone->seal();
        sg4::Link* nic = split_duplex(parent, name + "-nic", s.server_bandwidth_Bps, inter_half_s);
        parent->add_route(zone->get_netpoint(), nullptr, server->get_netpoint(), nullptr,
                          {{nic, sg4::LinkInRoute::Direction::UP}}, true);
        platform.servers.push_back(server);
    }
    leaves.seal();
    root->seal();
    return platform;
}

double route_latency_s(sg4::Host* from, sg4::Host* to) {
    std::vector<sg4::Link*> links;
    double latency = 0;
    from->route_to(to, links, &latency);
    return latency;
}

}  // namespace epochcast::sim
