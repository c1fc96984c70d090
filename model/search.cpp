#include "model/search.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "model/billing.hpp"
#include "model/errors.hpp"
#include "model/spot.hpp"
#include "model/storage.hpp"
#include "model/text_io.hpp"

namespace epochcast {

double normal_quantile(double probability) {
    if (!(probability > 0 && probability < 1)) {
        throw InputError("a probability must lie between 0 and 1 (got " + shortest(probability) + ")");
    }
    // A search asks for one confidence at every point it weighs (at_confidence): the last answer is
    // kept, per thread, since the bisection below costs 200 erfc calls (40% of a spot plan's time).
    thread_local double last_probability = -1;
    thread_local double last_quantile = 0;
    if (probability == last_probability) return last_quantile;
    // Bisection on Phi(z) = erfc(-z / sqrt 2) / 2, monotone; 200 halvings of [-40, 40] reach a double's
    // resolution.
    double low = -40, high = 40;
    for (int i = 0; i < 200; ++i) {
        const double mid = 0.5 * (low + high);
        if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < probability) {
            low = mid;
        } else {
            high = mid;
        }
    }
    last_probability = probability;
    last_quantile = 0.5 * (low + high);
    return last_quantile;
}

TimeCost at_confidence(const Prediction& p, double confidence, Charge charge) {
    if (confidence == 0.5 || !(p.throughput_images_per_s > 0)) {
        return {p.time_to_train_s, charge == Charge::bill ? p.bill_usd : p.cost_usd};
    }
    const double z = normal_quantile(confidence);
    // The band is 1.96 sigma either side (eq. U1) in the logarithm of the throughput.
    const double sigma =
        p.interval.low > 0 ? std::log(p.throughput_images_per_s / p.interval.low) / kInterval95Sigmas : 0.0;
    const double throughput = p.throughput_images_per_s * std::exp(-z * sigma);
    const double epochs_end = z >= 0 ? p.epochs_interval.high : p.epochs_interval.low;
    const double epochs = p.epochs + z / kInterval95Sigmas * (epochs_end - p.epochs);
    // The epochs as eq. F8 gives them: the first ones at the first epoch's rate (moved with a slower
    // throughput, held by the store at a faster one, as the band's ends move it) while the page caches fill.
    const double dataset_images = (p.epoch_s - p.checkpoint_s) * p.throughput_images_per_s;
    const double first_epoch_s =
        p.first_epoch_bottleneck == Bottleneck::storage && p.first_epoch_images_per_s > 0
            ? dataset_images / (p.first_epoch_images_per_s * std::fmin(1.0, throughput / p.throughput_images_per_s))
            : 0.0;
    const double epochs_s = cached_epochs_s(epochs, p.nodes, first_epoch_s, dataset_images / throughput);
    double time_s = 0;
    if (p.spot.modelled) {
        // Spot: the work at that throughput and those epochs, then eq. X6's quantile of the wall time
        // its interruptions give, as the band does at 2.5% and 97.5% (both at the quantile: a slow end
        // a little beyond the P-quantile of their joint spread, never short of it).
        const SpotRun& x = p.spot;
        const double work_s = epochs_s + (p.epochs > 0 ? p.evaluations * epochs / p.epochs * p.evaluation_s : 0.0);
        time_s = p.staging_s + p.startup_s +
                 spot_time_quantile_s(checkpointed_work_s(work_s, x.checkpoint_write_s, x.checkpoint_interval_s),
                                      x.cluster_interruptions_per_hour / 3600.0, x.loss_per_interruption_s, confidence);
    } else {
        const double evaluation_s = p.epochs > 0 ? p.evaluations * epochs / p.epochs * p.evaluation_s : 0.0;
        time_s = p.staging_s + p.startup_s + epochs_s + epochs * p.checkpoint_s + evaluation_s;
    }
    // The instances and the store are paid by the second (eq. F5), the traffic by the volume (eq. F6).
    const double storage_usd = p.time_to_train_s > 0 ? p.storage_usd * time_s / p.time_to_train_s : 0.0;
    const double share_usd = p.cluster_usd + (time_s - p.time_to_train_s) / 3600.0 * p.cluster_usd_per_hour +
                             storage_usd + p.data_transfer_usd;
    if (charge == Charge::run_share || !(p.cluster_usd_per_hour > 0)) return {time_s, share_usd};
    // What is paid for that time (eq. H1): the instances' hours then, the cluster's share over its rate.
    const double instance_hours = p.cluster_usd / p.cluster_usd_per_hour + (time_s - p.time_to_train_s) / 3600.0;
    return {time_s,
            bill_usd(p.pricing, p.cluster_usd_per_hour, instance_hours, share_usd, storage_usd + p.data_transfer_usd)};
}

std::vector<std::size_t> pareto_front(const std::vector<TimeCost>& points) {
    std::vector<std::size_t> order(points.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    // Fastest first; among equally fast the cheapest, then the first index.
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (points[a].time_to_train_s != points[b].time_to_train_s)
            return points[a].time_to_train_s < points[b].time_to_train_s;
        return points[a].cost_usd < points[b].cost_usd;
    });
    std::vector<std::size_t> front;
    double cheapest = INFINITY;
    for (std::size_t i : order) {
        // A point joins when it is strictly cheaper than every faster-or-equal point before it.
        // A point without a finite time or cost (a ring the model cannot cost) never does.
        if (!std::isfinite(points[i].time_to_train_s) || !std::isfinite(points[i].cost_usd)) continue;
        if (points[i].cost_usd < cheapest) {
            front.push_back(i);
            cheapest = points[i].cost_usd;
        }
    }
    return front;
}

namespace {

/// In the space's cloud (every cloud when it names none).
bool in_cloud(const SearchSpace& space, const InstanceSpec& instance) {
    return space.cloud.empty() || instance.cloud == space.cloud;
}

/// What can be rented under one of `pricings`: a price under it. A machine without any price by the
/// hour (an owned DGX, the local host) would always be the cheapest plan: named with --instance only.
bool sold(const std::vector<Pricing>& pricings, const InstanceSpec& instance) {
    return std::any_of(pricings.begin(), pricings.end(),
                       [&](Pricing pricing) { return instance.price(pricing) != nullptr; });
}

}  // namespace

std::string pricings_text(const std::vector<Pricing>& pricings, std::string_view conjunction) {
    std::string text;
    for (std::size_t i = 0; i < pricings.size(); ++i) {
        if (i > 0 && i + 1 == pricings.size()) {
            text.append(" ").append(conjunction).append(" ");
        } else if (i > 0) {
            text.append(", ");
        }
        text.append(to_string(pricings[i]));
    }
    return text;
}

bool searches(const std::vector<Pricing>& pricings, Pricing pricing) {
    return std::find(pricings.begin(), pricings.end(), pricing) != pricings.end();
}

std::vector<Pricing> searched_pricings(const SearchSpace& space) {
    if (space.pricings.empty()) return {space.base.pricing};
    for (std::size_t i = 0; i < space.pricings.size(); ++i) {
        if (std::find(space.pricings.begin(), space.pricings.begin() + static_cast<std::ptrdiff_t>(i),
                      space.pricings[i]) != space.pricings.begin() + static_cast<std::ptrdiff_t>(i)) {
            throw InputError("pricing " + std::string(to_string(space.pricings[i])) + " is named twice");
        }
    }
    return space.pricings;
}

std::vector<std::string> unsold_instances(const SearchSpace& space, const Catalog& catalog) {
    std::vector<std::string> names;
    if (!space.instances.empty()) return names;
    const std::vector<Pricing> pricings = searched_pricings(space);
    for (const InstanceSpec& instance : catalog.instances()) {
        if (instance.gpus > 0 && in_cloud(space, instance) && instance.priced() && !sold(pricings, instance)) {
            names.push_back(instance.name);
        }
    }
    return names;
}

namespace {

/// The GPUs per node the space tries on `instance`: the space's, else the powers of two below its
/// GPUs and all of them (those above the instance's are left out where the configurations are made).
std::vector<int> gpus_per_node_choices(const SearchSpace& space, const InstanceSpec& instance) {
    std::vector<int> per_node = space.gpus_per_node;
    if (per_node.empty()) {
        for (int k = 1; k < instance.gpus; k *= 2) per_node.push_back(k);
        per_node.push_back(instance.gpus);
    }
    return per_node;
}

}  // namespace

std::vector<Scenario> enumerate_space(const SearchSpace& space, const Catalog& catalog) {
    if (!space.cloud.empty()) catalog.check_cloud(space.cloud, "cloud");
    const std::vector<Pricing> pricings = searched_pricings(space);
    std::vector<const InstanceSpec*> workers;
    if (space.instances.empty()) {
        for (const InstanceSpec& instance : catalog.instances()) {
            if (instance.gpus > 0 && in_cloud(space, instance) && sold(pricings, instance))
                workers.push_back(&instance);
        }
    } else {
        for (const std::string& name : space.instances) {
            const InstanceSpec& instance = catalog.instance(name);
            // An instance named twice is searched once ("Searched N configurations" doubled).
            if (std::find(workers.begin(), workers.end(), &instance) != workers.end()) continue;
            if (instance.gpus == 0) throw InputError("instance '" + name + "' has no GPUs: it cannot be a worker");
            if (!in_cloud(space, instance)) {
                throw InputError("instance '" + name + "' is in cloud '" +
                                 (instance.cloud.empty() ? std::string("(none)") : instance.cloud) + "', not '" +
                                 space.cloud + "'");
            }
            if (instance.priced() && !sold(pricings, instance)) {
                throw InputError("instance '" + name + "' is not sold " + pricings_text(pricings) +
                                 " (it is sold as: " + instance.pricings_text() + ")");
            }
            workers.push_back(&instance);
        }
    }
    // The dedicated servers: those named, under every pricing; else the catalog's CPU-only instances,
    // each under the pricings it is sold under.
    std::vector<std::string> servers = space.ps_instances;
    if (servers.empty()) {
        for (const InstanceSpec& instance : catalog.instances()) {
            if (instance.gpus == 0 && in_cloud(space, instance) && sold(pricings, instance)) {
                servers.push_back(instance.name);
            }
        }
    } else {
        for (const std::string& name : servers) catalog.instance(name);  // throws for an unknown name
    }
    // A worker under `pricing`: sold so, or, with no price at all (named), under the first pricing only.
    auto planned_under = [&](const InstanceSpec& instance, Pricing pricing) {
        return instance.priced() ? instance.price(pricing) != nullptr : pricing == pricings.front();
    };
    auto servers_under = [&](Pricing pricing) {
        std::vector<std::string> out;
        for (const std::string& server : servers) {
            if (!space.ps_instances.empty() || catalog.instance(server).price(pricing) != nullptr)
                out.push_back(server);
        }
        return out;
    };
    const bool spot_twins = space.spot_with_on_demand && searches(pricings, Pricing::spot);

    // Counted before any is built (each holds about 2 KB once predicted): ten --nodes values up to
    // 100,000 and twenty batches grew to 20 GB before "out of memory".
    double count = 0;
    const double per_choice =
        static_cast<double>(space.nodes.size()) *
        static_cast<double>(space.base.global_batch > 0 ? std::size_t{1} : space.batch_per_gpu.size());
    for (Pricing pricing : pricings) {
        const double server_count = static_cast<double>(servers_under(pricing).size());
        // Spot's configurations may each have an elastic and an on-demand twin.
        const double copies = spot_twins && pricing == Pricing::spot ? 3 : 1;
        for (const InstanceSpec* instance : workers) {
            if (!planned_under(*instance, pricing)) continue;
            const double gpu_counts = static_cast<double>(gpus_per_node_choices(space, *instance).size());
            for (Strategy strategy : space.strategies) {
                const double choices =
                    strategy == Strategy::ps
                        ? server_count * static_cast<double>(space.ps_ratios.size()) + (space.ps_colocated ? 1 : 0)
                        : 1;
                count += copies * gpu_counts * choices * per_choice;
            }
        }
    }
    if (count > static_cast<double>(kMaxPlanConfigurations)) {
        throw InputError("the search would hold " + format_count(count) + " configurations, over its limit of " +
                         format_count(static_cast<double>(kMaxPlanConfigurations)) +
                         ": name fewer instances (--instance, --cloud), --nodes or --batch-per-gpu values");
    }

    std::vector<Scenario> out;
    for (Pricing pricing : pricings) {
        const std::vector<std::string> pricing_servers = servers_under(pricing);
        for (const InstanceSpec* instance : workers) {
            if (!planned_under(*instance, pricing)) continue;
            for (int k : gpus_per_node_choices(space, *instance)) {
                if (k < 1 || k > instance->gpus) continue;
                for (Strategy strategy : space.strategies) {
                    if (strategy == Strategy::hierarchical && k == 1) continue;
                    // (server instance, ratio) pairs for ps; one empty entry otherwise; co-located last.
                    struct Servers {
                        std::string instance;
                        double ratio = 0;
                        bool colocated = false;
                    };
                    std::vector<Servers> choices;
                    if (strategy == Strategy::ps) {
                        for (const std::string& server : pricing_servers) {
                            for (double ratio : space.ps_ratios) choices.push_back({server, ratio, false});
                        }
                        if (space.ps_colocated) choices.push_back({"", 0, true});
                    } else {
                        choices.push_back({});
                    }
                    for (const Servers& choice : choices) {
                        // A fixed global batch takes the per-GPU batch from the GPUs: one entry per size.
                        const std::vector<int> batches =
                            space.base.global_batch > 0 ? std::vector<int>{0} : space.batch_per_gpu;
                        for (int nodes : space.nodes) {
                            for (int batch : batches) {
                                Scenario s = space.base;
                                s.pricing = pricing;
                                s.instance = instance->name;
                                s.gpus_per_node = k;
                                s.strategy = strategy;
                                s.nodes = nodes;
                                if (batch > 0) s.batch_per_gpu = batch;
                                s.ps_instance.clear();
                                s.ps_nodes = 0;
                                s.ps_colocated = false;
                                if (strategy == Strategy::ps) {
                                    s.ps_colocated = choice.colocated;
                                    if (!choice.colocated) {
                                        s.ps_instance = choice.instance;
                                        s.ps_nodes = std::max(1, clamped_count(std::ceil(choice.ratio * nodes - 1e-9)));
                                    }
                                }
                                out.push_back(std::move(s));
                            }
                        }
                    }
                }
            }
        }
    }
    if (spot_twins) {
        const std::size_t searched = out.size();
        // Each spot cluster that can shrink also elastic (eq. X7, seed 003's dynamic training): it
        // goes on without a lost node until its replacement joins; where it cannot, it is left out.
        for (std::size_t i = 0; i < searched; ++i) {
            const Scenario& s = out[i];
            if (s.pricing != Pricing::spot || s.nodes < kElasticSpotMinNodes ||
                (s.strategy == Strategy::ps && !s.ps_colocated))
                continue;
            Scenario elastic = s;
            elastic.spot_elastic = true;
            out.push_back(std::move(elastic));
        }
        // Each on demand, where it is sold so and on demand is not searched itself.
        const bool on_demand_searched = searches(pricings, Pricing::on_demand);
        for (std::size_t i = 0; i < searched && !on_demand_searched; ++i) {
            const Scenario& s = out[i];
            if (s.pricing != Pricing::spot) continue;
            const bool worker_sold = catalog.instance(s.instance).price(Pricing::on_demand) != nullptr;
            const bool server_sold =
                s.ps_instance.empty() || catalog.instance(s.ps_instance).price(Pricing::on_demand) != nullptr;
            if (!worker_sold || !server_sold) continue;
            Scenario twin = s;
            twin.pricing = Pricing::on_demand;
            out.push_back(std::move(twin));
        }
    }
    return out;
}

TimeCost elastic_time_cost(const Prediction& a, double first_epochs, const Prediction& b, double second_epochs) {
    const double first_s = a.startup_s + first_epochs * a.epoch_s;
    const double second_s = b.startup_s + second_epochs * b.epoch_s;
    return {first_s + second_s, (first_s * a.cluster_usd_per_hour + second_s * b.cluster_usd_per_hour) / 3600.0};
}

namespace {

/// Plans that can hand over to each other: same instances, GPUs per node, strategy, server set-up
/// and global batch (seed 003 keeps the global batch when the cluster changes).
std::vector<std::vector<std::size_t>> elastic_groups(const std::vector<Plan>& plans) {
    std::map<std::tuple<std::string, int, Strategy, std::string, bool, int, Pricing, bool>, std::vector<std::size_t>>
        groups;
    for (std::size_t i = 0; i < plans.size(); ++i) {
        const Scenario& s = plans[i].scenario;
        groups[{s.instance, s.gpus_per_node, s.strategy, s.ps_instance, s.ps_colocated,
                plans[i].prediction.global_batch, s.pricing, s.spot_elastic}]
            .push_back(i);
    }
    std::vector<std::vector<std::size_t>> out;
    for (auto& [key, members] : groups) {
        if (members.size() > 1) out.push_back(std::move(members));
    }
    return out;
}

/// The two-phase schedule of a then b over `epochs` that meets `limit` exactly on one axis
/// (time when `deadline`, else cost), when a alone is on the wrong side of it and b alone on the
/// right side. The other axis is linear in the split, so the best split is at the limit.
std::optional<ElasticPlan> split_at_limit(const std::vector<Plan>& plans, std::size_t a, std::size_t b, double epochs,
                                          double limit, bool deadline) {
    const Prediction& pa = plans[a].prediction;
    const Prediction& pb = plans[b].prediction;
    auto axis = [deadline](const TimeCost& tc) { return deadline ? tc.time_to_train_s : tc.cost_usd; };
    const double all_a = axis(elastic_time_cost(pa, epochs, pb, 0));
    const double all_b = axis(elastic_time_cost(pa, 0, pb, epochs));
    if (!(all_a > limit && all_b <= limit)) return std::nullopt;
    // Linear in the first phase's epochs e: value(e) = all_b + e (all_a - all_b) / epochs.
    const double e = epochs * (limit - all_b) / (all_a - all_b);
    if (!(e > 0)) return std::nullopt;
    const TimeCost tc = elastic_time_cost(pa, e, pb, epochs - e);
    return ElasticPlan{a, b, e, epochs - e, tc.time_to_train_s, tc.cost_usd};
}

}  // namespace

PlanSearch search_plans(const CostModel& model, const SearchSpace& space, std::optional<double> deadline_s,
                        std::optional<double> budget_usd, bool elastic) {
    if (deadline_s && !(*deadline_s > 0)) throw InputError("the deadline must be positive");
    if (budget_usd && !(*budget_usd > 0)) throw InputError("the budget must be positive");
    if (!(space.confidence >= 0.5 && space.confidence < 1)) {
        throw InputError("--confidence must be at least 0.5 and below 1 (got " + shortest(space.confidence) + ")");
    }
    if (elastic && space.confidence != 0.5) {
        throw InputError("--elastic compares two-phase schedules at the point prediction: not with --confidence");
    }
    PlanSearch result;
    result.unsold = unsold_instances(space, model.catalog());
    ResolvedScenario resolved;
    std::string too_large;  // a batch the GPU cannot hold: no exception for the commonest infeasible configuration
    std::vector<Scenario> scenarios = enumerate_space(space, model.catalog());
    // Room for every configuration at once: the plans (1 KB each) are not copied as they grow, and
    // the pages of those left out are never touched.
    result.plans.reserve(scenarios.size());
    for (Scenario& s : scenarios) {
        ++result.considered;
        try {
            if (!model.resolve_feasible(s, resolved, too_large)) {
                ++result.infeasible;
                continue;
            }
            const Prediction p = model.checked_predict(resolved);
            if (p.host_vcpus_short) {  // eq. D3: not a cluster the loader can run on
                ++result.host_short;
                continue;
            }
            if (space.published_batches_only && p.global_batch_beyond_published) {
                ++result.unpublished;
                continue;
            }
            result.plans.push_back({std::move(s), p, at_confidence(p, space.confidence, space.charge)});
        } catch (const InputError&) {
            ++result.infeasible;  // does not fit, no such precision on this GPU, more EFA than it has, no finite
                                  // figure, ...
        }
    }
    // Plans on an instance with no price by the hour (a machine you own, or one the catalog has no
    // price for) have no cost to rank: beside priced plans they are set apart, the fastest named;
    // where no plan has a price, every plan is ranked by its time (its cost n/a).
    const bool any_priced =
        std::any_of(result.plans.begin(), result.plans.end(), [](const Plan& plan) { return plan.prediction.priced; });
    std::vector<std::size_t> ranked;  // indices into plans of the points below
    std::vector<TimeCost> points;
    for (std::size_t i = 0; i < result.plans.size(); ++i) {
        const Plan& plan = result.plans[i];
        if (any_priced && !plan.prediction.priced) {
            result.unpriced.push_back(i);
            if (std::find(result.unpriced_instances.begin(), result.unpriced_instances.end(), plan.scenario.instance) ==
                result.unpriced_instances.end())
                result.unpriced_instances.push_back(plan.scenario.instance);
            if (!result.fastest_unpriced || plan.at_confidence.time_to_train_s <
                                                result.plans[*result.fastest_unpriced].at_confidence.time_to_train_s)
                result.fastest_unpriced = i;
            continue;
        }
        ranked.push_back(i);
        points.push_back(plan.at_confidence);
    }
    for (std::size_t k : pareto_front(points)) result.front.push_back(ranked[k]);
    // Eq. U1's band beside the deadline: the cheapest plan that meets it nine times in ten, among
    // the ranked ones (not only the front's: a plan off the front at the point may lead at 0.9).
    if (deadline_s && space.confidence < kSaferConfidence) {
        double best_usd = 0;
        for (std::size_t i : ranked) {
            const TimeCost safer = at_confidence(result.plans[i].prediction, kSaferConfidence, space.charge);
            if (safer.time_to_train_s <= *deadline_s && (!result.safer_within_deadline || safer.cost_usd < best_usd)) {
                result.safer_within_deadline = i;
                best_usd = safer.cost_usd;
            }
        }
    }
    // Both answers lie on the front: the cheapest point meeting a deadline is not beaten by a point
    // that is as fast and cheaper, and likewise for the budget. Ties keep the first enumerated.
    for (std::size_t i : result.front) {
        const TimeCost& p = result.plans[i].at_confidence;
        if (deadline_s && p.time_to_train_s <= *deadline_s) {
            if (!result.cheapest_within_deadline ||
                p.cost_usd < result.plans[*result.cheapest_within_deadline].at_confidence.cost_usd) {
                result.cheapest_within_deadline = i;
            }
        }
        if (budget_usd && p.cost_usd <= *budget_usd) {
            if (!result.fastest_within_budget ||
                p.time_to_train_s < result.plans[*result.fastest_within_budget].at_confidence.time_to_train_s) {
                result.fastest_within_budget = i;
            }
        }
    }
    // Two phases are billed by the second; a block or a term is bought whole for the run as one.
    if (elastic) {
        // A split improves on the best so far (elastic, else fixed) on the axis the limit is not on.
        auto improve = [&](std::optional<ElasticPlan>& best, std::optional<std::size_t> fixed, std::size_t a,
                           std::size_t b, double limit, bool deadline) {
            auto other_axis = [deadline](double time_s, double cost) { return deadline ? cost : time_s; };
            // Both phases keep the global batch, so both need the same epochs (given, or the recipe's).
            const auto plan = split_at_limit(result.plans, a, b, result.plans[a].prediction.epochs, limit, deadline);
            if (!plan) return;
            const double incumbent = best    ? other_axis(best->time_to_train_s, best->cost_usd)
                                     : fixed ? other_axis(result.plans[*fixed].prediction.time_to_train_s,
                                                          result.plans[*fixed].prediction.cost_usd)
                                             : INFINITY;
            if (other_axis(plan->time_to_train_s, plan->cost_usd) < incumbent) best = plan;
        };
        for (const std::vector<std::size_t>& group : elastic_groups(result.plans)) {
            if (billed_whole(result.plans[group.front()].scenario.pricing)) continue;  // one pricing a group
            for (std::size_t a : group) {
                for (std::size_t b : group) {
                    if (a == b) continue;
                    if (any_priced && !result.plans[a].prediction.priced) continue;  // set apart, unranked
                    if (deadline_s)
                        improve(result.elastic_within_deadline, result.cheapest_within_deadline, a, b, *deadline_s,
                                true);
                    if (budget_usd)
                        improve(result.elastic_within_budget, result.fastest_within_budget, a, b, *budget_usd, false);
                }
            }
        }
    }
    return result;
}

}  // namespace epochcast
