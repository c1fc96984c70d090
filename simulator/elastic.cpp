#include "simulator/elastic.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "model/errors.hpp"
#include "model/text_io.hpp"
#include "simulator/prediction.hpp"

namespace epochcast::sim {
namespace {

using nlohmann::json;

constexpr double kSecondsPerHour = 3600.0;

[[noreturn]] void fail(std::string_view origin, const std::string& where, const std::string& problem) {
    throw InputError(std::string(origin) + ": " + where + problem);
}

double positive_number(const json& entry, const char* key, std::string_view origin, const std::string& where) {
    // Built by appending: GCC 12 warns falsely (-Wrestrict) on a chain of + here.
    std::string quoted = "'";
    quoted += key;
    quoted += "'";
    if (!entry.contains(key)) fail(origin, where, "missing key " + quoted);
    const json& value = entry.at(key);
    if (!value.is_number() || !(value.get<double>() > 0) || !std::isfinite(value.get<double>())) {
        std::string problem = quoted;
        problem += " must be a positive number (got ";
        problem += value.dump();
        problem += ")";
        fail(origin, where, problem);
    }
    return value.get<double>();
}

/// Every cluster size the schedule trains on (a phase's nodes, then one fewer after each of its
/// node losses), and the fixed cluster's `fixed_nodes`: what simulate_elastic simulates.
std::set<int> cluster_sizes(const ElasticSchedule& schedule, int fixed_nodes) {
    std::set<int> sizes = {fixed_nodes};
    double phase_end = 0;
    auto loss = schedule.node_losses.begin();
    for (const ElasticPhase& phase : schedule.phases) {
        phase_end += phase.epochs;
        int nodes = phase.nodes;
        sizes.insert(nodes);
        for (; loss != schedule.node_losses.end() && loss->epoch < phase_end; ++loss) sizes.insert(--nodes);
    }
    return sizes;
}

}  // namespace

ElasticSchedule ElasticSchedule::scaled_to(double total) const {
    const double factor = total / epochs();
    ElasticSchedule out = *this;
    for (ElasticPhase& phase : out.phases) phase.epochs *= factor;
    for (NodeLoss& loss : out.node_losses) loss.epoch *= factor;
    return out;
}

double ElasticSchedule::epochs() const {
    double total = 0;
    for (const ElasticPhase& p : phases) total += p.epochs;
    return total;
}

ElasticSchedule parse_elastic_schedule(std::string_view json_text, std::string_view origin) {
    const json document = parse_json(json_text, origin);
    if (!document.is_object()) fail(origin, "", "an elastic schedule is a JSON object");
    if (!document.contains("schema") || document.at("schema") != kElasticSchema) {
        fail(origin, "", "'schema' must be \"" + std::string(kElasticSchema) + "\"");
    }
    if (!document.contains("phases") || !document.at("phases").is_array() || document.at("phases").empty()) {
        fail(origin, "", "'phases' must be a non-empty array of {\"epochs\": E, \"nodes\": N}");
    }
    ElasticSchedule schedule;
    const json& phases = document.at("phases");
    for (std::size_t i = 0; i < phases.size(); ++i) {
        const std::string where = "phases[" + std::to_string(i) + "]: ";
        const json& entry = phases[i];
        if (!entry.is_object()) fail(origin, where, "must be an object {\"epochs\": E, \"nodes\": N}");
        ElasticPhase phase;
        phase.epochs = positive_number(entry, "epochs", origin, where);
        if (!entry.contains("nodes")) fail(origin, where, "missing key 'nodes'");
        const json& nodes = entry.at("nodes");
        if (!nodes.is_number_integer() || nodes.get<long long>() < 1 || nodes.get<long long>() > 1'000'000) {
            fail(origin, where, "'nodes' must be a whole number of at least 1 (got " + nodes.dump() + ")");
        }
        phase.nodes = nodes.get<int>();
        if (entry.contains("spot_nodes")) {
            const json& spot = entry.at("spot_nodes");
            if (!spot.is_number_integer() || spot.get<long long>() < 0 || spot.get<long long>() > phase.nodes) {
                fail(origin, where,
                     "'spot_nodes' must be a whole number from 0 to the phase's nodes (got " + spot.dump() + ")");
            }
            phase.spot_nodes = spot.get<int>();
        }
        schedule.phases.push_back(phase);
    }
    const double total = schedule.epochs();
    if (!std::isfinite(total)) fail(origin, "", "the phases' epochs add up to more than a double holds");
    if (document.contains("node_losses")) {
        const json& losses = document.at("node_losses");
        if (!losses.is_array()) fail(origin, "", "'node_losses' must be an array of {\"epoch\": E}");
        for (std::size_t i = 0; i < losses.size(); ++i) {
            const std::string where = "node_losses[" + std::to_string(i) + "]: ";
            const json& entry = losses[i];
            if (!entry.is_object() || !entry.contains("epoch")) fail(origin, where, "missing key 'epoch'");
            const json& epoch = entry.at("epoch");
            if (!epoch.is_number() || epoch.get<double>() < 0 || epoch.get<double>() >= total) {
                fail(origin, where,
                     "'epoch' must be a number from 0 to below the schedule's " + json(total).dump() + " epochs (got " +
                         epoch.dump() + ")");
            }
            schedule.node_losses.push_back({epoch.get<double>()});
        }
    }
    std::sort(schedule.node_losses.begin(), schedule.node_losses.end(),
              [](const NodeLoss& a, const NodeLoss& b) { return a.epoch < b.epoch; });
    // Every loss must leave its phase at least one node (the losses are sorted: one pass).
    double end = 0;
    auto loss = schedule.node_losses.begin();
    for (std::size_t i = 0; i < schedule.phases.size(); ++i) {
        end += schedule.phases[i].epochs;
        long long lost = 0;
        for (; loss != schedule.node_losses.end() && loss->epoch < end; ++loss) ++lost;
        if (lost >= schedule.phases[i].nodes) {
            fail(origin, "phases[" + std::to_string(i) + "]: ",
                 std::to_string(lost) + " node losses leave none of its " + std::to_string(schedule.phases[i].nodes) +
                     " nodes");
        }
    }
    return schedule;
}

ElasticSchedule read_elastic_schedule(const std::filesystem::path& path) {
    return parse_elastic_schedule(read_text_file(path, "elastic schedule"), path.string());
}

namespace {

/// The schedule's clusters: each size at the scenario's global batch, simulated with the
/// options of every phase (no timeline, no slow nodes).
class ElasticClusters {
    /// `action(scenario(nodes))`, an infeasible size named with its batch. Defined first: the
    /// members below use its deduced return type.
    template <typename Action>
    auto in_context(int nodes, const Action& action) const {
        const Scenario s = scenario(nodes);
        try {
            return action(s);
        } catch (const InfeasibleError& error) {
            throw InfeasibleError("elastic schedule, " + std::to_string(nodes) + " nodes (batch " +
                                  std::to_string(s.batch_per_gpu) + " per GPU to keep the global batch of " +
                                  std::to_string(global_batch_) + "): " + error.what());
        }
    }

public:
    ElasticClusters(const CostModel& model, const Scenario& scenario, const SimulationOptions& options,
                    const ElasticSchedule& schedule)
        : model_(model), scenario_(scenario), options_(options), epochs_(schedule.epochs()) {
        const ResolvedScenario fixed = model.resolve(scenario);
        gpus_per_node_ = fixed.gpus_per_node;
        global_batch_ = fixed.nodes * gpus_per_node_ * fixed.batch_per_gpu;
        options_.timeline_path.clear();
        options_.slow_nodes.clear();  // node indices of the fixed cluster mean nothing in another size
    }

    Scenario scenario(int nodes) const {
        Scenario s = scenario_;
        s.nodes = nodes;
        s.gpus_per_node = gpus_per_node_;
        s.epochs = epochs_;
        s.target_top1_percent = 0;  // the schedule's epochs (scaled to a target by the caller)
        s.batch_per_gpu =
            std::max(1, static_cast<int>(std::lround(static_cast<double>(global_batch_) / (nodes * gpus_per_node_))));
        s.global_batch = 0;  // the rounded per-GPU batch above rules each phase
        return s;
    }
    double estimated_s(int nodes) const {
        return in_context(nodes, [&](const Scenario& s) { return estimated_simulation_s(model_, s, options_); });
    }
    Prediction simulated(int nodes) const {
        return in_context(
            nodes, [&](const Scenario& s) { return simulated_prediction(model_, s, simulate(model_, s, options_)); });
    }

private:
    const CostModel& model_;
    const Scenario& scenario_;
    SimulationOptions options_;
    double epochs_ = 0;
    int gpus_per_node_ = 1;
    int global_batch_ = 0;
};

}  // namespace

void check_elastic_cost(const CostModel& model, const Scenario& scenario, const SimulationOptions& options,
                        const ElasticSchedule& schedule) {
    const ElasticClusters clusters(model, scenario, options, schedule);
    const std::set<int> sizes = cluster_sizes(schedule, model.resolve(scenario).nodes);
    double total_s = 0;
    for (const int nodes : sizes) total_s += clusters.estimated_s(nodes);
    if (total_s > kMaxEstimatedWallS) {
        throw InputError("elastic schedule: its " + format_count(static_cast<double>(sizes.size())) +
                         " cluster sizes (each phase's, one more for each node loss, and the fixed cluster's), each "
                         "simulated once, would take about " +
                         wall_time_text(total_s) + ", over simulate's limit of " + wall_time_text(kMaxEstimatedWallS) +
                         ": give fewer node losses or phases, fewer --iterations, or --granularity coarse");
    }
}

ElasticReport simulate_elastic(const CostModel& model, const Scenario& scenario, const SimulationOptions& options,
                               const ElasticSchedule& schedule) {
    check_elastic_cost(model, scenario, options, schedule);
    const ResolvedScenario fixed = model.resolve(scenario);
    const ElasticClusters clusters(model, scenario, options, schedule);

    struct Simulated {
        Scenario scenario;
        Prediction prediction;
        double usd_per_hour = 0;
    };
    std::map<int, Simulated> by_nodes;
    auto cluster = [&](int nodes) -> const Simulated& {
        auto found = by_nodes.find(nodes);
        if (found != by_nodes.end()) return found->second;
        Simulated c;
        c.scenario = clusters.scenario(nodes);
        c.prediction = clusters.simulated(nodes);
        c.usd_per_hour = c.prediction.cluster_usd_per_hour;
        return by_nodes.emplace(nodes, c).first->second;
    };

    // A spot node costs this much less per hour than one at the scenario's pricing.
    const InstanceSpec& instance = model.catalog().instance(scenario.instance);
    const double scenario_price = instance.usd_per_hour(scenario.pricing);
    auto spot_discount_per_hour = [&](int spot_nodes) {
        if (spot_nodes == 0) return 0.0;
        const Price* spot = instance.price(Pricing::spot);
        if (!spot) {
            throw InputError("elastic schedule: spot_nodes, but the catalog has no spot price for '" + instance.name +
                             "' (it is sold as: " + instance.pricings_text() + ")");
        }
        return spot_nodes * (scenario_price - spot->usd_per_hour);
    };

    ElasticReport report;
    report.epochs = schedule.epochs();
    report.startup_s = fixed.startup_s;
    auto add_segment = [&](double start_epoch, double epochs, int nodes, int spot_nodes) {
        if (epochs <= 0) return;
        const Simulated& c = cluster(nodes);
        ElasticSegment seg;
        seg.start_epoch = start_epoch;
        seg.epochs = epochs;
        seg.nodes = nodes;
        seg.spot_nodes = spot_nodes;
        seg.batch_per_gpu = c.scenario.batch_per_gpu;
        seg.global_batch = c.prediction.global_batch;
        seg.iteration_s = c.prediction.iteration_s;
        seg.throughput_images_per_s = c.prediction.throughput_images_per_s;
        seg.epoch_s = c.prediction.epoch_s;
        seg.time_s = epochs * seg.epoch_s;
        seg.usd_per_hour = c.usd_per_hour - spot_discount_per_hour(spot_nodes);
        seg.cost_usd = seg.time_s / kSecondsPerHour * seg.usd_per_hour;
        report.segments.push_back(seg);
    };

    double phase_start = 0;
    std::size_t next_loss = 0;
    for (const ElasticPhase& phase : schedule.phases) {
        const double phase_end = phase_start + phase.epochs;
        int nodes = phase.nodes;
        int spot = phase.spot_nodes;
        double from = phase_start;  // where training (re)starts in this stretch
        while (next_loss < schedule.node_losses.size() && schedule.node_losses[next_loss].epoch < phase_end) {
            const double at = schedule.node_losses[next_loss++].epoch;
            add_segment(from, at - from, nodes, spot);
            // The checkpoint is written at the end of every epoch: what was done since is lost.
            const double checkpoint = std::max(from, std::floor(at));
            ElasticLoss loss;
            loss.epoch = at;
            loss.nodes_after = nodes - 1;
            loss.lost_work_s = (at - checkpoint) * cluster(nodes).prediction.epoch_s;
            loss.restart_s = fixed.startup_s;
            if (spot > 0) --spot;  // a spot interruption, most likely
            loss.cost_usd =
                loss.restart_s / kSecondsPerHour * (cluster(nodes - 1).usd_per_hour - spot_discount_per_hour(spot));
            report.losses.push_back(loss);
            nodes -= 1;
            from = checkpoint;
        }
        add_segment(from, phase_end - from, nodes, spot);
        phase_start = phase_end;
    }

    report.time_to_train_s = report.startup_s;
    const ElasticPhase& first = schedule.phases.front();
    report.cost_usd = report.startup_s / kSecondsPerHour *
                      (cluster(first.nodes).usd_per_hour - spot_discount_per_hour(first.spot_nodes));
    for (const ElasticSegment& seg : report.segments) {
        report.time_to_train_s += seg.time_s;
        report.cost_usd += seg.cost_usd;
    }
    for (const ElasticLoss& loss : report.losses) {
        report.time_to_train_s += loss.restart_s;
        report.cost_usd += loss.cost_usd;
    }

    const Simulated& f = cluster(fixed.nodes);
    report.fixed_nodes = fixed.nodes;
    report.fixed_time_to_train_s = report.startup_s + report.epochs * f.prediction.epoch_s;
    report.fixed_cost_usd = report.fixed_time_to_train_s / kSecondsPerHour * f.usd_per_hour;
    report.priced = f.prediction.priced;
    return report;
}

}  // namespace epochcast::sim
