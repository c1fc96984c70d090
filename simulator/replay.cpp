// The actors of one simulated training run (docs/model.md, section "Simulation"):
//
//  * one actor per worker GPU: forward pass, then the backward pass in segments, publishing
//    gradients (in backward order) as they become ready; then it waits for the synchronisation;
//  * all-reduce strategies: one communicator actor fuses the gradients every GPU has ready into
//    buckets every Horovod cycle and runs each bucket's collective (ring, hierarchical or tree),
//    one at a time, while the rest of the backward pass runs;
//  * parameter servers: one actor per worker node reduces its GPUs' ready gradients inside the
//    node and pushes them, sharded over the servers; one actor per server sums the pushes of every
//    node and answers each node's pull as soon as a range of gradients is complete; at coarse
//    granularity the pushes and pulls travel as at most nodes + servers - 1 flows per release
//    (coarse_ps_flows) and a range is complete once every node's flows of it have arrived.
//
// Actors run cooperatively in one thread (SimGrid's contexts), so they share plain C++ state.
#include "simulator/replay.hpp"

#include <xbt/log.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <simgrid/s4u.hpp>
#include <string>

#include "model/collectives.hpp"
#include "simulator/platform.hpp"
#include "simulator/timeline.hpp"

namespace epochcast::sim {
namespace sg4 = simgrid::s4u;
namespace {

/// Jitter draws are clamped here: no GPU computes more than ten times faster than calibrated,
/// whatever the normal draw (relevant only for jitter above about 0.3).
constexpr double kMinJitterFactor = 0.1;

/// Gradients that a group of GPUs (all of them for all-reduce, one node's for parameter servers)
/// have ready: a prefix of the backward-order list, advanced as the slowest GPU publishes.
struct ReadyGroup {
    int size = 0;                ///< GPUs in the group
    std::vector<int> reach;      ///< per gradient: GPUs of the group that have it ready
    int prefix = 0;              ///< gradients ready on every GPU of the group
    sg4::SemaphorePtr progress;  ///< released whenever prefix advances
    sg4::SemaphorePtr done;      ///< released `size` times when the group's synchronisation ends
};

struct PushMessage {
    int node = 0;   ///< worker node that pushed
    int begin = 0;  ///< gradients [begin, end) in this push
    int end = 0;
};
struct PullMessage {
    int server = 0;  ///< server that answered
    int begin = 0;   ///< gradients [begin, end) aggregated and sent back
    int end = 0;
};

/// Ranges [begin, end) that arrive as `parts` messages each (the coarse parameter-server form):
/// add() returns true when the last part of a range has arrived.
class PartCounter {
public:
    bool add(int begin, int end, int parts) {
        auto [slot, fresh] = arrived_.try_emplace(begin, end, 0);
        if (++slot->second.second < parts) return false;
        arrived_.erase(slot);
        return true;
    }

private:
    std::map<int, std::pair<int, int>> arrived_;  ///< begin -> (end, parts arrived)
};

/// Ranges [begin, end) arrive in any order (a small message overtakes a large one); this keeps
/// the prefix [0, prefix) that has fully arrived.
class ContiguousPrefix {
public:
    int prefix() const { return prefix_; }
    void add(int begin, int end) {
        pending_[begin] = end;
        for (auto next = pending_.find(prefix_); next != pending_.end(); next = pending_.find(prefix_)) {
            prefix_ = next->second;
            pending_.erase(next);
        }
    }

private:
    int prefix_ = 0;
    std::map<int, int> pending_;  ///< begin -> end of ranges past the prefix
};

class Simulation {
public:
    explicit Simulation(const RunInput& input);
    SimulationResult run();

private:
    // Actors
    void gpu_actor(int gpu);
    void allreduce_actor();
    void ps_node_actor(int node);
    void ps_server_actor(int server);
    void coarse_ps_server_actor(int server);
    void coarse_ps_pull_actor(int server);
    void coarse_ps_push(int node, int begin, int end, double bytes);

    // Collectives, run by the calling actor with direct host-to-host transfers
    void collective(double bytes, int iteration, int bucket);
    void rings(const std::vector<std::vector<sg4::Host*>>& rings, double bytes, int rounds, double latency_s);
    void transfer_round(const std::vector<std::pair<sg4::Host*, sg4::Host*>>& pairs, double bytes);

    void publish(int gpu, int prefix);
    ReadyGroup& group_of(int gpu) { return groups_[static_cast<std::size_t>(ps_ ? gpu / k_ : 0)]; }
    double factor(int iteration, int gpu);
    void computed(int iteration, double start_s, double end_s);
    void ended(int iteration, double end_s);
    void fold_complete();
    void record(const std::string& name, const char* category, int process, int thread, double start, double end,
                nlohmann::json args = nullptr);
    std::vector<sg4::Host*> servers() const;

    const RunInput& in_;
    const ResolvedScenario& s_;
    int gpus_ = 0, nodes_ = 0, k_ = 0, tensors_ = 0;
    bool ps_ = false;
    Platform platform_;
    // Jitter factors of the two iterations under way, drawn a row (iteration) at a time
    std::mt19937_64 generator_;
    std::normal_distribution<double> normal_{0.0, 1.0};
    std::vector<double> factor_rows_;  ///< 2 x gpus: row `iteration % 2`
    int rows_drawn_ = 0;
    std::vector<ReadyGroup> groups_;
    std::vector<int> gpu_prefix_;
    double intra_latency_s_ = 0, flat_latency_s_ = 0, inter_latency_s_ = 0;
    std::unique_ptr<Timeline> timeline_;

    /// The coarse parameter-server form's shared state (actors run cooperatively in one thread).
    struct CoarsePs {
        std::vector<PsFlow> flows;
        std::vector<std::vector<PsFlow>> by_node, by_server;
        std::vector<PartCounter> push_parts;                       ///< per node: parts of its releases arrived
        std::vector<ContiguousPrefix> pushed;                      ///< per node: gradients every server has
        int served = 0;                                            ///< gradients aggregated and queued for the pulls
        std::vector<std::vector<std::pair<int, int>>> pull_queue;  ///< per server: ranges to answer
        std::vector<sg4::SemaphorePtr> pull_ready;                 ///< per server: released per range
    } coarse_;
    bool coarse_ps_ = false;

    // Measurements of the two iterations under way (no GPU is more than one iteration ahead of
    // another: the next starts after the synchronisation, which needs everyone's gradients),
    // folded into the sums below once complete, so memory does not grow with the iterations.
    struct IterationRecord {
        double end_s = 0, compute_sum_s = 0, compute_end_sum_s = 0, compute_end_max_s = 0;
        int computed = 0;  ///< GPUs that finished its compute
        int ended = 0;     ///< synchronisations that ended (the communicator, or every PS node)
    };
    std::array<IterationRecord, 2> window_;
    int folded_ = 0;  ///< iterations folded
    double previous_end_s_ = 0, compute_total_s_ = 0, sync_total_s_ = 0, exposed_total_s_ = 0;
    std::vector<double> iteration_s_;
    double communication_busy_s_ = 0;
    std::int64_t transfers_ = 0, executions_ = 0, buckets_ = 0;
};

Simulation::Simulation(const RunInput& input) : in_(input), s_(input.scenario) {
    nodes_ = s_.nodes;
    k_ = s_.gpus_per_node;
    gpus_ = nodes_ * k_;
    tensors_ = static_cast<int>(in_.plan.gradients.size());
    ps_ = s_.strategy == Strategy::ps;

    platform_ = build_platform(s_, in_.plan.gpu_flops_per_s, in_.slow_nodes, in_.topology);
    intra_latency_s_ = k_ > 1 ? route_latency_s(platform_.gpu(0, 0), platform_.gpu(0, 1)) : 0.0;
    flat_latency_s_ = nodes_ > 1 ? route_latency_s(platform_.gpu(0, k_ - 1), platform_.gpu(1, 0)) : intra_latency_s_;
    inter_latency_s_ = nodes_ > 1 ? route_latency_s(platform_.node_hosts[0], platform_.node_hosts[1]) : 0.0;

    generator_.seed(in_.seed);
    factor_rows_.assign(2 * static_cast<std::size_t>(gpus_), 1.0);
    iteration_s_.reserve(static_cast<std::size_t>(in_.iterations));

    const int group_count = ps_ ? nodes_ : 1;
    groups_.resize(static_cast<std::size_t>(group_count));
    for (ReadyGroup& g : groups_) {
        g.size = ps_ ? k_ : gpus_;
        g.reach.assign(static_cast<std::size_t>(tensors_), 0);
        g.progress = sg4::Semaphore::create(0);
        g.done = sg4::Semaphore::create(0);
    }
    gpu_prefix_.assign(static_cast<std::size_t>(gpus_), 0);
    coarse_ps_ = ps_ && in_.granularity == Granularity::coarse;
    if (coarse_ps_) {
        const int server_count = static_cast<int>(servers().size());
        coarse_.flows = coarse_ps_flows(nodes_, server_count, s_.ps_colocated);
        coarse_.by_node.resize(static_cast<std::size_t>(nodes_));
        coarse_.by_server.resize(static_cast<std::size_t>(server_count));
        for (const PsFlow& f : coarse_.flows) {
            coarse_.by_node[static_cast<std::size_t>(f.node)].push_back(f);
            coarse_.by_server[static_cast<std::size_t>(f.server)].push_back(f);
        }
        coarse_.push_parts.resize(static_cast<std::size_t>(nodes_));
        coarse_.pushed.resize(static_cast<std::size_t>(nodes_));
        coarse_.pull_queue.resize(static_cast<std::size_t>(server_count));
        for (int i = 0; i < server_count; ++i) coarse_.pull_ready.push_back(sg4::Semaphore::create(0));
    }

    if (!in_.timeline_path.empty()) {
        timeline_ = std::make_unique<Timeline>();
        for (int node = 0; node < nodes_; ++node) {
            timeline_->name_process(node, "node " + std::to_string(node));
            for (int i = 0; i < k_; ++i) timeline_->name_thread(node, i, "GPU " + std::to_string(i) + " compute");
            if (ps_) timeline_->name_thread(node, k_, "push/pull");
        }
        if (!ps_) {
            timeline_->name_process(nodes_, "collectives");
            timeline_->name_thread(nodes_, 0, std::string(to_string(s_.strategy)) + " all-reduce");
        }
    }
}

double Simulation::factor(int iteration, int gpu) {
    // Jitter: every GPU's compute time in every iteration times (1 + jitter x N(0,1)), drawn in a
    // fixed order (iteration by iteration, GPU by GPU) so that a seed gives the same run whatever
    // the actors' interleaving. A row is drawn when the first GPU starts its iteration; the row two
    // iterations back, which it replaces, has no GPU left.
    while (rows_drawn_ <= iteration) {
        double* row = factor_rows_.data() + static_cast<std::size_t>(rows_drawn_ % 2) * static_cast<std::size_t>(gpus_);
        for (int g = 0; g < gpus_; ++g) {
            row[g] = in_.jitter > 0 ? std::max(kMinJitterFactor, 1.0 + in_.jitter * normal_(generator_)) : 1.0;
        }
        ++rows_drawn_;
    }
    return factor_rows_[static_cast<std::size_t>(iteration % 2) * static_cast<std::size_t>(gpus_) +
                        static_cast<std::size_t>(gpu)];
}

void Simulation::computed(int iteration, double start_s, double end_s) {
    IterationRecord& r = window_[static_cast<std::size_t>(iteration % 2)];
    r.compute_sum_s += end_s - start_s;
    r.compute_end_sum_s += end_s;
    r.compute_end_max_s = std::max(r.compute_end_max_s, end_s);
    ++r.computed;
    fold_complete();
}

void Simulation::ended(int iteration, double end_s) {
    IterationRecord& r = window_[static_cast<std::size_t>(iteration % 2)];
    r.end_s = std::max(r.end_s, end_s);
    ++r.ended;
    fold_complete();
}

void Simulation::fold_complete() {
    // In order: every GPU computed and every synchronisation ended (a one-GPU all-reduce may end
    // before its GPU has recorded its compute, at the same simulated time).
    for (;;) {
        IterationRecord& r = window_[static_cast<std::size_t>(folded_ % 2)];
        if (r.computed < gpus_ || r.ended < (ps_ ? nodes_ : 1)) return;
        iteration_s_.push_back(r.end_s - previous_end_s_);
        previous_end_s_ = r.end_s;
        compute_total_s_ += r.compute_sum_s / gpus_;
        sync_total_s_ += r.compute_end_max_s - r.compute_end_sum_s / gpus_;
        exposed_total_s_ += std::max(0.0, r.end_s - r.compute_end_max_s);
        r = IterationRecord{};
        ++folded_;
    }
}

void Simulation::record(const std::string& name, const char* category, int process, int thread, double start,
                        double end, nlohmann::json args) {
    if (timeline_) timeline_->add({name, category, process, thread, start, end, std::move(args)});
}

std::vector<sg4::Host*> Simulation::servers() const {
    return s_.ps_colocated ? platform_.node_hosts : platform_.servers;
}

void Simulation::publish(int gpu, int prefix) {
    int& mine = gpu_prefix_[static_cast<std::size_t>(gpu)];
    if (prefix <= mine) return;
    ReadyGroup& g = group_of(gpu);
    for (int t = mine; t < prefix; ++t) ++g.reach[static_cast<std::size_t>(t)];
    mine = prefix;
    const int before = g.prefix;
    while (g.prefix < tensors_ && g.reach[static_cast<std::size_t>(g.prefix)] == g.size) ++g.prefix;
    if (g.prefix > before) g.progress->release();
}

void Simulation::gpu_actor(int gpu) {
    ReadyGroup& group = group_of(gpu);
    const int node = gpu / k_;
    const ReplayPlan& plan = in_.plan;
    // Iteration -1 ran for lead_step_s and ended at 0 (where the first iteration's time is measured
    // from), so that the first batch arrives as in the steady state.
    double last_start = -in_.lead_step_s;
    for (int it = 0; it < in_.iterations; ++it) {
        if (it > 0) group.done->acquire();
        // The input pipeline delivers one batch per data_s at most (eq. D1), with eq. I1's stall near
        // balance: the next batch is ready pipelined_s(step, data_s) after the last one started.
        const double ready = last_start + pipelined_s(sg4::Engine::get_clock() - last_start, in_.data_s);
        if (sg4::Engine::get_clock() < ready) sg4::this_actor::sleep_until(ready);
        const double start = sg4::Engine::get_clock();
        last_start = start;
        gpu_prefix_[static_cast<std::size_t>(gpu)] = 0;
        const double f = factor(it, gpu);
        sg4::this_actor::execute(f * (plan.fixed_flops + plan.forward_flops));
        ++executions_;
        const double forward_end = sg4::Engine::get_clock();
        for (const BackwardSegment& segment : plan.backward) {
            if (segment.flops > 0) {
                sg4::this_actor::execute(f * segment.flops);
                ++executions_;
            }
            publish(gpu, segment.publish_prefix);
        }
        const double end = sg4::Engine::get_clock();
        computed(it, start, end);
        record("forward", "compute", node, gpu % k_, start, forward_end, {{"iteration", it}});
        record("backward", "compute", node, gpu % k_, forward_end, end, {{"iteration", it}});
        if (gpu == 0 && in_.on_iteration) in_.on_iteration(it);
    }
}

void Simulation::transfer_round(const std::vector<std::pair<sg4::Host*, sg4::Host*>>& pairs, double bytes) {
    const auto size = static_cast<std::uint64_t>(std::llround(bytes));
    std::vector<sg4::CommPtr> comms;
    comms.reserve(pairs.size());
    for (const auto& [from, to] : pairs) comms.push_back(sg4::Comm::sendto_async(from, to, size));
    transfers_ += static_cast<std::int64_t>(pairs.size());
    sg4::Comm::wait_all(comms);
}

void Simulation::rings(const std::vector<std::vector<sg4::Host*>>& ring_set, double bytes, int rounds,
                       double latency_s) {
    if (ring_set.empty() || ring_set.front().size() < 2 || rounds < 1) return;
    const double n = static_cast<double>(ring_set.front().size());
    std::vector<std::pair<sg4::Host*, sg4::Host*>> pairs;
    for (const auto& ring : ring_set) {
        for (std::size_t i = 0; i < ring.size(); ++i) pairs.emplace_back(ring[i], ring[(i + 1) % ring.size()]);
    }
    if (in_.granularity == Granularity::step) {
        // Each step every rank sends bytes/n to its successor; the next step needs what it received.
        for (int r = 0; r < rounds; ++r) transfer_round(pairs, bytes / n);
    } else {
        // Coarse: one transfer per rank with all its steps' bytes; the steps' other latencies are
        // waited for explicitly, so the total is the same alpha-beta sum (eq. R1).
        sg4::this_actor::sleep_for((rounds - 1) * latency_s);
        transfer_round(pairs, rounds * bytes / n);
    }
}

void Simulation::collective(double bytes, int iteration, int bucket) {
    const double start = sg4::Engine::get_clock();
    std::vector<std::vector<sg4::Host*>> node_rings;
    if (k_ > 1) {
        for (int n = 0; n < nodes_; ++n) {
            node_rings.emplace_back(platform_.gpus.begin() + n * k_, platform_.gpus.begin() + (n + 1) * k_);
        }
    }
    auto phase = [&](const char* name, auto&& body) {
        const double t0 = sg4::Engine::get_clock();
        body();
        record(name, "communication", nodes_, 0, t0, sg4::Engine::get_clock());
    };
    // The closed form's algorithm for this bucket; parameter servers have no collective here
    // (ps_node_actor / ps_server_actor).
    const Algorithm algorithm = algorithm_for(s_, bytes);
    const double n = static_cast<double>(gpus_);
    switch (algorithm) {
        case Algorithm::ring:
            if (nodes_ == 1) {
                phase("ring", [&] { rings(node_rings, bytes, 2 * (k_ - 1), intra_latency_s_); });
            } else {
                // NCCL pipelines its ring (eq. R3): the latencies of its 2(N-1) steps are paid once,
                // and every rank streams 2(N-1)/N of the bytes to its successor, so it is replayed in
                // the coarse form whatever the granularity.
                phase("ring", [&] {
                    // NCCL's protocol (eq. N3): the low-latency one moves each byte at half the
                    // links' speed, replayed as twice the bytes on the simulated links.
                    const Protocol protocol = nccl_protocol(s_, Algorithm::ring, bytes);
                    const double latency =
                        nccl_ring_allreduce_s(0.0, nodes_, k_, s_.intra_latency_s, protocol.inter_latency_s, 1.0);
                    sg4::this_actor::sleep_for(std::max(0.0, latency - flat_latency_s_));
                    std::vector<std::pair<sg4::Host*, sg4::Host*>> pairs;
                    for (int g = 0; g < gpus_; ++g)
                        pairs.emplace_back(platform_.gpus[static_cast<std::size_t>(g)],
                                           platform_.gpus[static_cast<std::size_t>((g + 1) % gpus_)]);
                    transfer_round(pairs, 2.0 * (n - 1.0) / n * bytes / protocol.bandwidth_factor);
                });
            }
            break;
        case Algorithm::tree:
            // Eq. T2, pipelined: after the chain's and trees' latencies, the chain inside every node
            // and the trees between the nodes' NICs stream at once. A chain over NVLink SHARP
            // (NVLSTree) is faster than the link's bandwidth by node_Bps / intra_bandwidth, so it
            // carries proportionally fewer bytes on the simulated link.
            phase("tree", [&] {
                const Protocol protocol = nccl_protocol(s_, Algorithm::tree, bytes);
                const double latency =
                    nccl_tree_allreduce_s(0.0, nodes_, k_, s_.intra_latency_s, protocol.inter_latency_s, 1.0, 1.0);
                const double route_s = nodes_ > 1 ? inter_latency_s_ : intra_latency_s_;
                sg4::this_actor::sleep_for(std::max(0.0, latency - route_s));
                std::vector<sg4::CommPtr> comms;
                if (k_ > 1) {
                    const double chain_bytes =
                        2.0 * bytes * s_.intra_bandwidth_Bps / tree_node_Bps(s_) / protocol.bandwidth_factor;
                    for (int node = 0; node < nodes_; ++node) {
                        for (int i = 0; i + 1 < k_; ++i) {
                            comms.push_back(sg4::Comm::sendto_async(platform_.gpu(node, i), platform_.gpu(node, i + 1),
                                                                    chain_bytes));
                        }
                    }
                }
                if (nodes_ > 1) {
                    const double tree_bytes =
                        tree_network_bytes_factor(nodes_) * bytes / kTreeBandwidthFactor / protocol.bandwidth_factor;
                    for (int node = 0; node < nodes_; ++node) {
                        comms.push_back(sg4::Comm::sendto_async(
                            platform_.node_hosts[static_cast<std::size_t>(node)],
                            platform_.node_hosts[static_cast<std::size_t>((node + 1) % nodes_)], tree_bytes));
                    }
                }
                transfers_ += static_cast<std::int64_t>(comms.size());
                sg4::Comm::wait_all(comms);
            });
            break;
        case Algorithm::nvls:
            // Eq. V1: the switch reduces; each GPU writes and reads its buffer once, at NVLS's bus
            // bandwidth, replayed as one round of a ring carrying bytes scaled to that bandwidth.
            phase("nvls", [&] {
                sg4::this_actor::sleep_for(intra_latency_s_);
                std::vector<std::pair<sg4::Host*, sg4::Host*>> pairs;
                for (int i = 0; i < k_; ++i) pairs.emplace_back(platform_.gpu(0, i), platform_.gpu(0, (i + 1) % k_));
                transfer_round(pairs, 2.0 * (k_ - 1.0) / k_ * bytes * s_.intra_bandwidth_Bps / s_.nvls_bandwidth_Bps);
            });
            break;
        case Algorithm::hierarchical:
            phase("intra-node reduce-scatter", [&] { rings(node_rings, bytes, k_ - 1, intra_latency_s_); });
            phase("inter-node ring", [&] { rings({platform_.node_hosts}, bytes, 2 * (nodes_ - 1), inter_latency_s_); });
            phase("intra-node all-gather", [&] { rings(node_rings, bytes, k_ - 1, intra_latency_s_); });
            break;
        case Algorithm::none:
        case Algorithm::push_pull:
            break;
    }
    record("bucket " + std::to_string(bucket), "communication", nodes_, 0, start, sg4::Engine::get_clock(),
           {{"iteration", iteration}, {"bytes", bytes}});
}

void Simulation::allreduce_actor() {
    ReadyGroup& g = groups_.front();
    const double cycle = in_.cycle_time_s;
    for (int it = 0; it < in_.iterations; ++it) {
        int sent = 0;
        double cycle_start = -1;
        double free_at = 0;
        int bucket = 0;
        while (sent < tensors_) {
            while (g.prefix == sent) g.progress->acquire();
            if (cycle_start >= 0 && cycle > 0) {
                // Horovod's background loop: a cycle starts cycle_time after the previous one, or at
                // once when the previous one's collectives took longer; idle cycles keep the grid.
                const double next = std::max(free_at, cycle_start + cycle);
                const double now = sg4::Engine::get_clock();
                const double tick = now <= next ? next : next + std::ceil((now - next) / cycle) * cycle;
                if (tick > now) sg4::this_actor::sleep_until(tick);
            }
            cycle_start = sg4::Engine::get_clock();
            const int end = g.prefix;
            const std::vector<GradientTensor> ready(in_.plan.gradients.begin() + sent,
                                                    in_.plan.gradients.begin() + end);
            for (const Bucket& b : fusion_buckets(ready, in_.fusion_threshold_bytes)) {
                const double t0 = sg4::Engine::get_clock();
                collective(b.bytes, it, bucket++);
                communication_busy_s_ += sg4::Engine::get_clock() - t0;
                ++buckets_;
            }
            sent = end;
            free_at = sg4::Engine::get_clock();
        }
        ended(it, sg4::Engine::get_clock());
        std::fill(g.reach.begin(), g.reach.end(), 0);
        g.prefix = 0;
        for (int i = 0; i < g.size; ++i) g.done->release();
    }
}

void Simulation::ps_node_actor(int node) {
    ReadyGroup& g = groups_[static_cast<std::size_t>(node)];
    const std::vector<sg4::Host*> server_hosts = servers();
    sg4::Host* self = platform_.node_hosts[static_cast<std::size_t>(node)];
    const int server_count = static_cast<int>(server_hosts.size());
    std::vector<std::vector<sg4::Host*>> node_ring;
    if (k_ > 1) node_ring.emplace_back(platform_.gpus.begin() + node * k_, platform_.gpus.begin() + (node + 1) * k_);
    const double total_bytes = gradient_range_bytes(in_.plan.gradients, 0, tensors_);

    // Pushed ranges and, once every server has answered them, when: shared with the pull receiver.
    struct Batch {
        double start_s;
        int end;
    };
    std::vector<Batch> batches;
    std::vector<std::pair<double, double>> busy;  // [push start, last pull] of each batch
    const sg4::SemaphorePtr pulled_all = sg4::Semaphore::create(0);
    // A second actor on the node receives the pulls while this one is still pushing, so that a
    // batch's end is seen when its last pull arrives.
    sg4::ActorPtr receiver = sg4::Actor::create("ps-pulls-" + std::to_string(node), self, [&, node] {
        sg4::Mailbox* pulls = sg4::Mailbox::by_name("pull-" + std::to_string(node));
        // Coarse: a range is pulled once all the node's flows of it have arrived, as one prefix.
        const int pull_parts =
            coarse_ps_ ? static_cast<int>(coarse_.by_node[static_cast<std::size_t>(node)].size()) : 1;
        for (int it = 0; it < in_.iterations; ++it) {
            std::vector<ContiguousPrefix> pulled(static_cast<std::size_t>(coarse_ps_ ? 1 : server_count));
            PartCounter parts;
            std::size_t closed = 0;
            int complete = 0;
            while (complete < tensors_) {
                const std::unique_ptr<PullMessage> message = pulls->get_unique<PullMessage>();
                if (coarse_ps_ && !parts.add(message->begin, message->end, pull_parts)) continue;
                pulled[static_cast<std::size_t>(coarse_ps_ ? 0 : message->server)].add(message->begin, message->end);
                complete = tensors_;
                for (const ContiguousPrefix& p : pulled) complete = std::min(complete, p.prefix());
                while (closed < batches.size() && batches[closed].end <= complete) {
                    busy.emplace_back(batches[closed].start_s, sg4::Engine::get_clock());
                    ++closed;
                }
            }
            pulled_all->release();
        }
    });
    sg4::Mailbox::by_name("pull-" + std::to_string(node))->set_receiver(receiver);

    for (int it = 0; it < in_.iterations; ++it) {
        int sent = 0;
        while (sent < tensors_) {
            while (g.prefix == sent) g.progress->acquire();
            const int end = g.prefix;
            const double bytes = gradient_range_bytes(in_.plan.gradients, sent, end);
            const double t0 = sg4::Engine::get_clock();
            // Reduce inside the node first (MXNet's dist_device_sync), then push the node's sum,
            // sharded evenly over the servers.
            rings(node_ring, bytes, k_ - 1, intra_latency_s_);
            batches.push_back({t0, end});
            if (coarse_ps_) {
                coarse_ps_push(node, sent, end, bytes);
                sent = end;
                continue;
            }
            for (int s = 0; s < server_count; ++s) {
                sg4::Host* server = server_hosts[static_cast<std::size_t>(s)];
                const double shard = server == self ? 0.0 : bytes / server_count;
                sg4::Mailbox::by_name("push-" + std::to_string(s))
                    ->put_init(new PushMessage{node, sent, end}, static_cast<std::uint64_t>(std::llround(shard)))
                    ->detach();
                ++transfers_;
            }
            sent = end;
        }
        // Pull: every server answers each range once every node has pushed it.
        pulled_all->acquire();
        const double t0 = sg4::Engine::get_clock();
        rings(node_ring, total_bytes, k_ - 1, intra_latency_s_);  // all-gather the updated weights
        const double end = sg4::Engine::get_clock();
        busy.emplace_back(t0, end);
        ++buckets_;
        if (node == 0) {
            // Union of the intervals in which gradient traffic of this node was in flight.
            std::sort(busy.begin(), busy.end());
            double covered_to = -1;
            for (const auto& [a, b] : busy) {
                const double from = std::max(a, covered_to);
                if (b > from) communication_busy_s_ += b - from;
                covered_to = std::max(covered_to, b);
            }
        }
        if (timeline_) {
            for (const auto& [a, b] : busy) record("push/pull", "communication", node, k_, a, b, {{"iteration", it}});
        }
        ended(it, end);
        batches.clear();
        busy.clear();
        std::fill(g.reach.begin(), g.reach.end(), 0);
        g.prefix = 0;
        for (int i = 0; i < g.size; ++i) g.done->release();
    }
}

void Simulation::ps_server_actor(int server) {
    const std::vector<sg4::Host*> server_hosts = servers();
    const int server_count = static_cast<int>(server_hosts.size());
    sg4::Host* self = server_hosts[static_cast<std::size_t>(server)];
    sg4::Mailbox* pushes = sg4::Mailbox::by_name("push-" + std::to_string(server));
    pushes->set_receiver(sg4::Actor::self());
    for (int it = 0; it < in_.iterations; ++it) {
        std::vector<ContiguousPrefix> pushed(static_cast<std::size_t>(nodes_));
        int served = 0;
        while (served < tensors_) {
            const std::unique_ptr<PushMessage> message = pushes->get_unique<PushMessage>();
            pushed[static_cast<std::size_t>(message->node)].add(message->begin, message->end);
            int aggregated = tensors_;
            for (const ContiguousPrefix& p : pushed) aggregated = std::min(aggregated, p.prefix());
            if (aggregated <= served) continue;
            // The summation itself is not simulated: a server's memory bandwidth far exceeds its NIC.
            const double shard = gradient_range_bytes(in_.plan.gradients, served, aggregated) / server_count;
            for (int n = 0; n < nodes_; ++n) {
                const double bytes = platform_.node_hosts[static_cast<std::size_t>(n)] == self ? 0.0 : shard;
                sg4::Mailbox::by_name("pull-" + std::to_string(n))
                    ->put_init(new PullMessage{server, served, aggregated},
                               static_cast<std::uint64_t>(std::llround(bytes)))
                    ->detach();
                ++transfers_;
            }
            served = aggregated;
        }
    }
}

void Simulation::coarse_ps_push(int node, int begin, int end, double bytes) {
    sg4::Host* self = platform_.node_hosts[static_cast<std::size_t>(node)];
    const std::vector<sg4::Host*> server_hosts = servers();
    for (const PsFlow& f : coarse_.by_node[static_cast<std::size_t>(node)]) {
        const double flow = server_hosts[static_cast<std::size_t>(f.server)] == self ? 0.0 : f.fraction * bytes;
        sg4::Mailbox::by_name("push-" + std::to_string(f.server))
            ->put_init(new PushMessage{node, begin, end}, static_cast<std::uint64_t>(std::llround(flow)))
            ->detach();
        ++transfers_;
    }
}

void Simulation::coarse_ps_server_actor(int server) {
    // A daemon: it waits for pushes until the workers are done, then SimGrid ends it.
    sg4::Actor::self()->daemonize();
    sg4::Mailbox* pushes = sg4::Mailbox::by_name("push-" + std::to_string(server));
    pushes->set_receiver(sg4::Actor::self());
    for (;;) {
        const std::unique_ptr<PushMessage> message = pushes->get_unique<PushMessage>();
        const auto node = static_cast<std::size_t>(message->node);
        if (!coarse_.push_parts[node].add(message->begin, message->end,
                                          static_cast<int>(coarse_.by_node[node].size()))) {
            continue;
        }
        coarse_.pushed[node].add(message->begin, message->end);
        int aggregated = tensors_;
        for (const ContiguousPrefix& p : coarse_.pushed) aggregated = std::min(aggregated, p.prefix());
        if (aggregated <= coarse_.served) continue;
        // Every server has [served, aggregated) from every node: each answers its flows' nodes.
        // The shared state is settled before the first simcall (release), where other actors run.
        for (auto& queue : coarse_.pull_queue) queue.emplace_back(coarse_.served, aggregated);
        coarse_.served = aggregated;
        if (coarse_.served == tensors_) {  // the iteration's pushes are all in: start the next one afresh
            coarse_.served = 0;
            std::fill(coarse_.pushed.begin(), coarse_.pushed.end(), ContiguousPrefix{});
        }
        for (const sg4::SemaphorePtr& ready : coarse_.pull_ready) ready->release();
    }
}

void Simulation::coarse_ps_pull_actor(int server) {
    sg4::Actor::self()->daemonize();
    sg4::Host* self = servers()[static_cast<std::size_t>(server)];
    auto& queue = coarse_.pull_queue[static_cast<std::size_t>(server)];
    for (;;) {
        coarse_.pull_ready[static_cast<std::size_t>(server)]->acquire();
        const auto [begin, end] = queue.front();
        queue.erase(queue.begin());
        const double bytes = gradient_range_bytes(in_.plan.gradients, begin, end);
        for (const PsFlow& f : coarse_.by_server[static_cast<std::size_t>(server)]) {
            const double flow =
                platform_.node_hosts[static_cast<std::size_t>(f.node)] == self ? 0.0 : f.fraction * bytes;
            sg4::Mailbox::by_name("pull-" + std::to_string(f.node))
                ->put_init(new PullMessage{server, begin, end}, static_cast<std::uint64_t>(std::llround(flow)))
                ->detach();
            ++transfers_;
        }
    }
}

SimulationResult Simulation::run() {
    for (int gpu = 0; gpu < gpus_; ++gpu) {
        sg4::Actor::create("gpu-" + std::to_string(gpu), platform_.gpus[static_cast<std::size_t>(gpu)],
                           [this, gpu] { gpu_actor(gpu); });
    }
    if (ps_) {
        for (int n = 0; n < nodes_; ++n) {
            sg4::Actor::create("ps-worker-" + std::to_string(n), platform_.node_hosts[static_cast<std::size_t>(n)],
                               [this, n] { ps_node_actor(n); });
        }
        const std::vector<sg4::Host*> server_hosts = servers();
        for (int s = 0; s < static_cast<int>(server_hosts.size()); ++s) {
            sg4::Host* host = server_hosts[static_cast<std::size_t>(s)];
            if (coarse_ps_) {
                sg4::Actor::create("ps-server-" + std::to_string(s), host, [this, s] { coarse_ps_server_actor(s); });
                sg4::Actor::create("ps-pull-" + std::to_string(s), host, [this, s] { coarse_ps_pull_actor(s); });
            } else {
                sg4::Actor::create("ps-server-" + std::to_string(s), host, [this, s] { ps_server_actor(s); });
            }
        }
    } else {
        sg4::Actor::create("communicator", platform_.node_hosts.front(), [this] { allreduce_actor(); });
    }
    sg4::Engine::get_instance()->run();

    if (folded_ != in_.iterations) throw RunError("the simulation ended before all its iterations did");
    SimulationResult r;
    const double n = in_.iterations;
    r.iteration_s = std::move(iteration_s_);
    r.compute_s = compute_total_s_ / n;
    r.sync_s = sync_total_s_ / n;
    r.exposed_communication_s = exposed_total_s_ / n;
    r.communication_s = communication_busy_s_ / n;
    r.data_s = in_.data_s;
    r.jitter = in_.jitter;
    r.overlap = in_.plan.overlap;
    r.granularity = in_.granularity;
    r.network_model = in_.network_model;
    r.buckets_per_iteration = static_cast<double>(buckets_) / n / (ps_ ? nodes_ : 1);
    r.transfers = transfers_;
    r.executions = executions_;
    r.simulated_s = sg4::Engine::get_clock();
    if (timeline_) {
        timeline_->write(in_.timeline_path, {{"generator", "epochcast simulate"},
                                             {"strategy", std::string(to_string(s_.strategy))},
                                             {"gpus", gpus_},
                                             {"iterations", in_.iterations}});
        r.timeline_written = true;
    }
    return r;
}

}  // namespace

long actors_of(const ResolvedScenario& s) {
    const long gpus = static_cast<long>(s.nodes) * s.gpus_per_node;
    if (s.strategy != Strategy::ps) return gpus + 1;
    const long servers = s.ps_colocated ? s.nodes : s.ps_nodes;
    return gpus + 2L * s.nodes + 2L * servers;
}

long step_transfers_per_bucket(const ResolvedScenario& s) {
    const long m = s.nodes, k = s.gpus_per_node, n = m * k;
    switch (s.strategy) {
        case Strategy::nccl:
        case Strategy::ring:
            return m == 1 ? 2 * (k - 1) * k : n;  // NCCL's rings across nodes: one round
        case Strategy::hierarchical:
            return 2 * m * k * (k - 1) + 2 * (m - 1) * m;
        case Strategy::tree:
            return m * (k - 1) + m;
        case Strategy::ps: {
            const long servers = s.ps_colocated ? m : s.ps_nodes;
            return m * k * (k - 1) + 2 * m * servers;  // intra-node rings, then a push and a pull per pair
        }
    }
    return 0;
}

double transfers_per_iteration(const ResolvedScenario& s, const ReplayPlan& plan, Granularity granularity) {
    const double m = s.nodes, k = s.gpus_per_node, n = m * k;
    const bool step = granularity == Granularity::step;
    if (s.strategy == Strategy::ps) {
        const double servers = s.ps_colocated ? m : s.ps_nodes;
        const double per_release = step ? static_cast<double>(step_transfers_per_bucket(s)) : m * k + 2 * (m + servers);
        // Each node then all-gathers the updated weights once an iteration: k - 1 rounds of k.
        return static_cast<double>(plan.backward.size()) * per_release + m * k * (k - 1);
    }
    // At most one bucket per backward segment (each publishes what became ready: one release, cut
    // into pieces of the fusion size when larger), and the gradients' cuts at that size on top:
    // ResNet-50 replays 44 buckets an iteration on one node, 15 on 64, where "1 + gradients over
    // the fusion size" said 5 and put one node's step-granularity rings 9 times under their time.
    const double buckets =
        static_cast<double>(plan.backward.size()) + std::ceil(s.gradient_bytes / std::max(1.0, s.bucket_bytes));
    // Coarse: one transfer per rank per phase (two intra-node phases, one between the nodes).
    return buckets * (step ? static_cast<double>(step_transfers_per_bucket(s)) : 2 * n + m);
}

std::vector<PsFlow> coarse_ps_flows(int nodes, int servers, bool colocated) {
    std::vector<PsFlow> flows;
    if (colocated) {
        const double off_host = (nodes - 1.0) / nodes;  // the own shard stays on the host
        for (int n = 0; n < nodes; ++n) flows.push_back({n, (n + 1) % nodes, off_host});
        return flows;
    }
    // North-west corner in whole units: each node supplies `servers` units, each server takes
    // `nodes`, so a unit is 1/servers of a node's bytes and every amount is exact.
    long supply = servers, demand = nodes;
    for (int n = 0, s = 0; n < nodes && s < servers;) {
        const long amount = std::min(supply, demand);
        flows.push_back({n, s, static_cast<double>(amount) / servers});
        supply -= amount;
        demand -= amount;
        if (supply == 0) {
            ++n;
            supply = servers;
        }
        if (demand == 0) {
            ++s;
            demand = nodes;
        }
    }
    return flows;
}

SimulationResult run_simulation(const RunInput& input) {
    const auto wall_start = std::chrono::steady_clock::now();
    // Silence SimGrid (its INFO lines would mix with our output) before anything logs.
    xbt_log_control_set("root.thres:critical");
    int argc = 2;
    char program[] = "epochcast-simulate";
    char quiet[] = "--log=root.thres:critical";
    char* argv[] = {program, quiet, nullptr};
    // Left alive on purpose: the child process exits right after the run.
    auto* engine = new sg4::Engine(&argc, argv);
    (void)engine;
    if (input.network_model == NetworkModel::cm02) {
        sg4::Engine::set_config("network/model:CM02");
        // No TCP window bound and no reverse (acknowledgement) traffic: a transfer alone on its
        // route takes latency + bytes / bandwidth, the alpha-beta form of model/collectives.hpp.
        sg4::Engine::set_config("network/TCP-gamma:0");
        sg4::Engine::set_config("network/crosstraffic:0");
    } else {
        sg4::Engine::set_config("network/model:LV08");
    }
    sg4::Engine::set_config("contexts/stack-size:" + std::to_string(kActorStackKiB));

    Simulation simulation(input);
    SimulationResult result = simulation.run();
    result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return result;
}

}  // namespace epochcast::sim
