// model/search: the plan search against a brute-force search written here with plain nested loops
// (seed 000's question: ResNet-50 for 90 epochs within an hour), the Pareto front's definition,
// and the two-phase elastic schedules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "model/errors.hpp"
#include "model/search.hpp"
#include "model/spot.hpp"

namespace epochcast {
namespace {

const CostModel& model() {
    static const CostModel m(Catalog::built_in(), Calibration::built_in());
    return m;
}

TEST(ParetoFront, KeepsOnlyPointsNoOtherBeatsOnBoth) {
    // (time, cost): 0 and 2 and 4 form the front; 1 is beaten by 0, 3 by 2, 5 duplicates 2.
    const std::vector<TimeCost> points = {{10, 5}, {12, 6}, {20, 3}, {25, 3}, {40, 1}, {20, 3}};
    EXPECT_EQ(pareto_front(points), (std::vector<std::size_t>{0, 2, 4}));
}

TEST(ParetoFront, EqualTimeKeepsTheCheaperAndEmptyGivesEmpty) {
    EXPECT_EQ(pareto_front({{5, 9}, {5, 4}, {7, 4}}), (std::vector<std::size_t>{1}));
    EXPECT_TRUE(pareto_front({}).empty());
    // A configuration the model cannot cost (an infinite time) is never on the front.
    EXPECT_EQ(pareto_front({{INFINITY, 1}, {5, 4}}), (std::vector<std::size_t>{1}));
}

TEST(ParetoFront, KeepsExactlyTheUndominatedPointsFastestFirst) {
    const std::vector<TimeCost> points = {{10, 5}, {5, 10}, {7, 7}, {8, 8}, {5, 12}, {12, 5}, {3, 20}, {7, 7}};
    const std::vector<std::size_t> front = pareto_front(points);
    EXPECT_EQ(front, (std::vector<std::size_t>{6, 1, 2, 0}));  // (3,20) (5,10) (7,7) (10,5); the second (7,7) is a tie
    EXPECT_TRUE(pareto_front({}).empty());
}

/// The answer to "cheapest within the deadline" and "fastest within the budget" by trying every
/// configuration of the default space with nested loops, independent of search_plans.
struct BruteForce {
    double cheapest_cost = std::numeric_limits<double>::infinity();
    Scenario cheapest;
    double fastest_time = std::numeric_limits<double>::infinity();
    Scenario fastest;
    std::vector<TimeCost> feasible;
    std::size_t tried = 0;
};

/// `epochs_for(global batch)`, when given, sets each configuration's epochs (NaN: leave it out).
BruteForce brute_force(const Scenario& base, double deadline_s, double budget_usd,
                       const std::function<double(int)>& epochs_for = {}, const std::vector<std::string>& only = {},
                       const std::vector<int>& node_counts = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64}) {
    BruteForce best;
    const Catalog& catalog = model().catalog();
    auto consider = [&](Scenario s) {
        ++best.tried;
        Prediction p;
        try {
            if (epochs_for) {
                const int gpus = s.nodes * (s.gpus_per_node > 0 ? s.gpus_per_node : catalog.instance(s.instance).gpus);
                s.epochs = epochs_for(gpus * s.batch_per_gpu);
                if (std::isnan(s.epochs)) return;
            }
            p = model().predict(s);
        } catch (const InputError&) {
            return;
        }
        best.feasible.push_back({p.time_to_train_s, p.cost_usd});
        if (p.time_to_train_s <= deadline_s && p.cost_usd < best.cheapest_cost) {
            best.cheapest_cost = p.cost_usd;
            best.cheapest = s;
        }
        if (p.cost_usd <= budget_usd && p.time_to_train_s < best.fastest_time) {
            best.fastest_time = p.time_to_train_s;
            best.fastest = s;
        }
    };
    for (const InstanceSpec& worker : catalog.instances()) {
        if (worker.gpus == 0 || worker.usd_per_hour(Pricing::on_demand) <= 0) continue;
        if (!only.empty() && std::find(only.begin(), only.end(), worker.name) == only.end()) continue;
        for (int k = 1; k <= worker.gpus; ++k) {
            const bool power_of_two = (k & (k - 1)) == 0;
            if (!power_of_two && k != worker.gpus) continue;
            for (int nodes : node_counts) {
                for (int batch : {32, 64, 128, 256, 512}) {
                    Scenario s = base;
                    s.instance = worker.name;
                    s.gpus_per_node = k;
                    s.nodes = nodes;
                    s.batch_per_gpu = batch;
                    for (Strategy strategy : {Strategy::nccl, Strategy::ring, Strategy::hierarchical, Strategy::tree}) {
                        s.strategy = strategy;
                        consider(s);
                    }
                    s.strategy = Strategy::ps;
                    s.ps_colocated = true;
                    consider(s);
                    s.ps_colocated = false;
                    for (const InstanceSpec& server : catalog.instances()) {
                        if (server.gpus != 0 || server.usd_per_hour(Pricing::on_demand) <= 0) continue;
                        for (double ratio : {0.5, 1.0, 2.0}) {
                            s.ps_instance = server.name;
                            s.ps_nodes = std::max(1, static_cast<int>(std::ceil(ratio * nodes)));
                            consider(s);
                        }
                    }
                    s.ps_instance.clear();
                    s.ps_nodes = 0;
                }
            }
        }
    }
    return best;
}

TEST(PlanSearch, SeedZeroQuestionMatchesABruteForceSearch) {
    // Seed 000: train ResNet-50 on ImageNet for 90 epochs within an hour (mixed precision, TensorFlow).
    SearchSpace space;
    space.base.model = "resnet50";
    space.base.epochs = 90;
    const double deadline_s = 3600;
    const double budget_usd = 500;
    const PlanSearch search = search_plans(model(), space, deadline_s, budget_usd);
    const BruteForce brute = brute_force(space.base, deadline_s, budget_usd);

    ASSERT_TRUE(search.cheapest_within_deadline.has_value());
    ASSERT_TRUE(std::isfinite(brute.cheapest_cost));
    const Plan& cheapest = search.plans[*search.cheapest_within_deadline];
    EXPECT_LE(cheapest.prediction.time_to_train_s, deadline_s);
    EXPECT_DOUBLE_EQ(cheapest.prediction.cost_usd, brute.cheapest_cost);
    EXPECT_EQ(cheapest.scenario.instance, brute.cheapest.instance);
    EXPECT_EQ(cheapest.scenario.nodes, brute.cheapest.nodes);
    EXPECT_EQ(cheapest.scenario.batch_per_gpu, brute.cheapest.batch_per_gpu);

    ASSERT_TRUE(search.fastest_within_budget.has_value());
    const Plan& fastest = search.plans[*search.fastest_within_budget];
    EXPECT_LE(fastest.prediction.cost_usd, budget_usd);
    EXPECT_DOUBLE_EQ(fastest.prediction.time_to_train_s, brute.fastest_time);

    // The same space: as many feasible configurations (hierarchical on one GPU per node is the
    // ring and is not enumerated twice by the search).
    EXPECT_GT(search.plans.size(), 1000u);
    EXPECT_LE(search.plans.size(), brute.feasible.size());
    EXPECT_EQ(search.plans.size() + search.infeasible, search.considered);

    // The front: no feasible configuration beats a front point on both axes, and every feasible
    // configuration is matched or beaten by one on the front.
    for (std::size_t i : search.front) {
        const Prediction& f = search.plans[i].prediction;
        for (const TimeCost& p : brute.feasible) {
            EXPECT_FALSE(p.time_to_train_s <= f.time_to_train_s && p.cost_usd < f.cost_usd * (1 - 1e-12))
                << "front point " << i << " is dominated";
        }
    }
    for (const TimeCost& p : brute.feasible) {
        bool covered = false;
        for (std::size_t i : search.front) {
            const Prediction& f = search.plans[i].prediction;
            covered = covered ||
                      (f.time_to_train_s <= p.time_to_train_s * (1 + 1e-12) && f.cost_usd <= p.cost_usd * (1 + 1e-12));
        }
        ASSERT_TRUE(covered) << p.time_to_train_s << " s, $" << p.cost_usd << " is beaten by no front point";
    }
    for (std::size_t j = 1; j < search.front.size(); ++j) {
        EXPECT_LT(search.plans[search.front[j - 1]].prediction.time_to_train_s,
                  search.plans[search.front[j]].prediction.time_to_train_s + 1e-9);
        EXPECT_GT(search.plans[search.front[j - 1]].prediction.cost_usd,
                  search.plans[search.front[j]].prediction.cost_usd);
    }
}

TEST(PlanSearch, ATargetAccuracyGivesACheaperPlanThanNinetyEpochsAndMatchesABruteForceSearch) {
    // Issue 24: 75.9% top-1 by the default recipe (mlperf-lars) on p4d.24xlarge within 2 hours. The
    // brute force sets each configuration's epochs from the published MLPerf points transcribed
    // here (epochs against the global batch, interpolated in its logarithm), not from the model.
    const std::vector<std::pair<double, double>> published = {{408, 35},   {3264, 35},  {13056, 45}, {16384, 47},
                                                              {20480, 50}, {32256, 56}, {35840, 58}};
    auto epochs_for = [&](int global_batch) {
        const double b = global_batch;
        if (b <= published.front().first) return published.front().second;
        for (std::size_t i = 1; i < published.size(); ++i) {
            const auto [b1, e1] = published[i];
            const auto [b0, e0] = published[i - 1];
            if (b <= b1) return e0 + (e1 - e0) * std::log(b / b0) / std::log(b1 / b0);
        }
        return std::nan("");  // past the transcribed points: the space below stays under them
    };
    SearchSpace space;
    space.instances = {"p4d.24xlarge"};
    space.nodes = {1, 2, 3, 4, 6, 8};  // at most 8 x 8 x 512 = 32,768 images per iteration
    // Decoding on the GPU, as MLPerf's runs do: with PyTorch's CPU loader the 96 vCPUs bound every
    // configuration, the batch buys no throughput and the smallest (the fewest epochs) wins throughout.
    space.base.loader = Loader::dali;
    const double deadline_s = 2 * 3600;
    const double budget_usd = 100;
    const PlanSearch ninety = search_plans(model(), space, deadline_s, budget_usd);
    space.base.target_top1_percent = 75.9;
    space.base.recipe = "mlperf-lars";
    const PlanSearch target = search_plans(model(), space, deadline_s, budget_usd);
    const BruteForce brute = brute_force(space.base, deadline_s, budget_usd, epochs_for, {"p4d.24xlarge"}, space.nodes);

    ASSERT_TRUE(ninety.cheapest_within_deadline && target.cheapest_within_deadline);
    const Plan& with_target = target.plans[*target.cheapest_within_deadline];
    const Plan& with_ninety = ninety.plans[*ninety.cheapest_within_deadline];
    EXPECT_NEAR(with_target.prediction.cost_usd, brute.cheapest_cost, 1e-9 * brute.cheapest_cost);
    EXPECT_EQ(with_target.scenario.nodes, brute.cheapest.nodes);
    EXPECT_EQ(with_target.scenario.batch_per_gpu, brute.cheapest.batch_per_gpu);
    EXPECT_EQ(with_target.scenario.strategy, brute.cheapest.strategy);
    ASSERT_TRUE(target.fastest_within_budget);
    EXPECT_NEAR(target.plans[*target.fastest_within_budget].prediction.time_to_train_s, brute.fastest_time,
                1e-9 * brute.fastest_time);
    // A different and cheaper answer than training 90 epochs: fewer epochs, and another cluster or batch.
    EXPECT_LT(with_target.prediction.cost_usd, 0.6 * with_ninety.prediction.cost_usd);
    EXPECT_LT(with_target.prediction.epochs, 50);
    EXPECT_TRUE(with_target.scenario.nodes != with_ninety.scenario.nodes ||
                with_target.scenario.batch_per_gpu != with_ninety.scenario.batch_per_gpu);
    // Bigger clusters need more epochs: along the front the fastest plan trains the most.
    EXPECT_GT(target.plans[target.front.front()].prediction.epochs,
              target.plans[target.front.back()].prediction.epochs);
}

TEST(PlanSearch, TheNormalQuantileIsTheInverseOfItsDistribution) {
    EXPECT_NEAR(normal_quantile(0.5), 0.0, 1e-12);
    EXPECT_NEAR(normal_quantile(0.95), 1.6448536269514722, 1e-9);
    EXPECT_NEAR(normal_quantile(0.975), 1.959963984540054, 1e-9);
    EXPECT_NEAR(normal_quantile(0.025), -1.959963984540054, 1e-9);
    EXPECT_THROW(normal_quantile(1.0), InputError);
    EXPECT_THROW(normal_quantile(0.0), InputError);
}

// Issue 45's note: on spot, `plan --confidence` met the deadline with the time never interrupted
// at the throughput's slow end, although a spot run's spread is mostly its interruptions. The
// 95th percentile is eq. X6's for the work at the slow end: past that of the point's work, inside
// the 97.5% band.
TEST(PlanSearch, AtAConfidenceASpotRunCountsItsInterruptions) {
    Scenario s;
    s.instance = "p3.16xlarge";
    s.nodes = 16;
    s.pricing = Pricing::spot;
    s.spot_interruptions_per_node_hour = 0.2;
    const Prediction p = model().checked_predict(s);
    ASSERT_TRUE(p.spot.modelled);
    const SpotRun& x = p.spot;
    const double rate_per_s = x.cluster_interruptions_per_hour / 3600.0;
    const TimeCost q = at_confidence(p, 0.95);
    EXPECT_GT(q.time_to_train_s,
              p.startup_s + spot_time_quantile_s(x.checkpointed_work_s, rate_per_s, x.loss_per_interruption_s, 0.95));
    EXPECT_LT(q.time_to_train_s, p.time_to_train_interval.high);
    EXPECT_GT(q.time_to_train_s, p.time_to_train_s);
    EXPECT_NEAR(q.cost_usd, q.time_to_train_s / 3600.0 * p.cluster_usd_per_hour, 1e-9 * q.cost_usd);
    // Never interrupted, the same slow end of the throughput is well short of it.
    Scenario on_demand = s;
    on_demand.pricing = Pricing::on_demand;
    EXPECT_LT(at_confidence(model().checked_predict(on_demand), 0.95).time_to_train_s, 0.8 * q.time_to_train_s);
}

TEST(PlanSearch, AtAConfidenceTheAnswerIsTheCheapestWhoseSlowEndMeetsTheDeadline) {
    // Issue 39: `plan --confidence 0.95 --deadline 2h` meets the deadline at the time the run stays
    // within 19 times in 20. The brute force recomputes each configuration's 95th-percentile time and
    // cost here from its point prediction and 95% bands (eq. U1: the throughput's logarithm is normal,
    // 1.96 sigma to the band's ends; the epochs move z / 1.96 of the way to their band's high end).
    SearchSpace space;
    space.instances = {"p4d.24xlarge", "p5.48xlarge", "g6e.48xlarge"};
    space.strategies = {Strategy::nccl};
    space.base.target_top1_percent = 75.9;
    space.base.recipe = "mlperf-lars";
    space.published_batches_only = true;
    space.confidence = 0.95;
    const double deadline_s = 2 * 3600;
    const PlanSearch search = search_plans(model(), space, deadline_s, std::nullopt);
    ASSERT_TRUE(search.cheapest_within_deadline);

    const double z = 1.6448536269514722;
    double best_cost = std::numeric_limits<double>::infinity();
    std::size_t tried = 0, beyond = 0;
    for (const std::string& name : space.instances) {
        const InstanceSpec& instance = model().catalog().instance(name);
        for (int k = 1; k <= instance.gpus; k *= 2) {
            for (int nodes : space.nodes) {
                for (int batch : space.batch_per_gpu) {
                    Scenario s = space.base;
                    s.instance = name;
                    s.gpus_per_node = k;
                    s.nodes = nodes;
                    s.batch_per_gpu = batch;
                    s.strategy = Strategy::nccl;
                    Prediction p;
                    try {
                        p = model().checked_predict(model().resolve(s));
                    } catch (const InputError&) {
                        continue;
                    }
                    ++tried;
                    if (p.global_batch_beyond_published) {
                        ++beyond;
                        continue;
                    }
                    const double sigma = std::log(p.throughput_images_per_s / p.interval.low) / 1.96;
                    const double throughput = p.throughput_images_per_s * std::exp(-z * sigma);
                    const double epochs = p.epochs + z / 1.96 * (p.epochs_interval.high - p.epochs);
                    // The recipe's evaluation passes (every 4 epochs), in proportion to the epochs.
                    const double time_s = p.startup_s + epochs * (s.dataset_images / throughput + p.checkpoint_s) +
                                          p.evaluations * epochs / p.epochs * p.evaluation_s;
                    const double cost = time_s / 3600 * p.cluster_usd_per_hour;
                    if (time_s <= deadline_s) best_cost = std::min(best_cost, cost);
                }
            }
        }
    }
    EXPECT_EQ(search.plans.size(), tried - beyond);
    EXPECT_EQ(search.unpublished, beyond);
    EXPECT_GT(beyond, 0u) << "the space reaches past the published recipes";
    const Plan& pick = search.plans[*search.cheapest_within_deadline];
    EXPECT_LE(pick.at_confidence.time_to_train_s, deadline_s);
    EXPECT_NEAR(pick.at_confidence.cost_usd, best_cost, 1e-9 * best_cost);
    EXPECT_GT(pick.at_confidence.time_to_train_s, pick.prediction.time_to_train_s);
    EXPECT_LT(pick.at_confidence.time_to_train_s, pick.prediction.time_to_train_interval.high);
    // The point search's pick, held to the same standard, misses or costs no less.
    space.confidence = 0.5;
    const PlanSearch point = search_plans(model(), space, deadline_s, std::nullopt);
    ASSERT_TRUE(point.cheapest_within_deadline);
    const TimeCost point_pick = at_confidence(point.plans[*point.cheapest_within_deadline].prediction, 0.95);
    EXPECT_TRUE(point_pick.time_to_train_s > deadline_s || point_pick.cost_usd >= best_cost * (1 - 1e-12));
    // Bad confidences, and elastic schedules (compared at the point) with one.
    space.confidence = 1.0;
    EXPECT_THROW(search_plans(model(), space, deadline_s, std::nullopt), InputError);
    space.confidence = 0.4;
    EXPECT_THROW(search_plans(model(), space, deadline_s, std::nullopt), InputError);
    space.confidence = 0.9;
    EXPECT_THROW(search_plans(model(), space, deadline_s, std::nullopt, true), InputError);
}

TEST(PlanSearch, SpotPricesMakeTheSamePlanCheaper) {
    SearchSpace space;
    space.instances = {"p3.16xlarge"};
    const PlanSearch on_demand = search_plans(model(), space, 4 * 3600.0, std::nullopt);
    space.base.pricing = Pricing::spot;
    const PlanSearch spot = search_plans(model(), space, 4 * 3600.0, std::nullopt);
    ASSERT_TRUE(on_demand.cheapest_within_deadline && spot.cheapest_within_deadline);
    EXPECT_LT(spot.plans[*spot.cheapest_within_deadline].prediction.cost_usd,
              on_demand.plans[*on_demand.cheapest_within_deadline].prediction.cost_usd);
}

// Issue 60: every pricing in one search. Its plans are each pricing's own search's, in the order of
// the pricings, and its answers are those a reader gets by pooling the single searches' plans and
// ranking them by what is paid (a Capacity Block's whole day against on demand's seconds).
TEST(PlanSearch, EveryPricingInOneSearchIsEachPricingsSearchRankedTogether) {
    SearchSpace space;
    space.instances = {"p5.48xlarge", "a2-highgpu-8g", "g6.12xlarge"};
    space.strategies = {Strategy::nccl};
    space.nodes = {1, 2, 4, 8};
    space.batch_per_gpu = {128, 256};
    space.pricings.assign(std::begin(kAllPricings), std::end(kAllPricings));
    const double deadline_s = 2 * 3600.0;
    const double budget_usd = 400;
    for (const Charge charge : {Charge::bill, Charge::run_share}) {
        space.charge = charge;
        const PlanSearch all = search_plans(model(), space, deadline_s, budget_usd);
        std::vector<Plan> pooled;
        for (const Pricing pricing : kAllPricings) {
            SearchSpace one = space;
            one.pricings.clear();
            one.base.pricing = pricing;
            // Each instance under the pricings it is sold under, none under the others.
            one.instances.clear();
            for (const std::string& name : space.instances)
                if (model().catalog().instance(name).price(pricing) != nullptr) one.instances.push_back(name);
            if (one.instances.empty()) continue;
            const PlanSearch single = search_plans(model(), one, deadline_s, budget_usd);
            for (const Plan& plan : single.plans) pooled.push_back(plan);
        }
        ASSERT_EQ(all.plans.size(), pooled.size());
        for (std::size_t i = 0; i < pooled.size(); ++i) {
            ASSERT_TRUE(all.plans[i].scenario == pooled[i].scenario) << i;
            EXPECT_EQ(all.plans[i].at_confidence.cost_usd, pooled[i].at_confidence.cost_usd) << i;
        }
        // Every pricing the three instances are sold under is planned: p5 as capacity blocks, the A2s
        // on commitments.
        for (const Pricing pricing : kAllPricings) {
            EXPECT_TRUE(std::any_of(all.plans.begin(), all.plans.end(), [&](const Plan& plan) {
                return plan.scenario.pricing == pricing;
            })) << to_string(pricing);
        }
        // The answers by a plain scan of the pooled plans, by what is ranked (the bill or the share).
        std::optional<std::size_t> cheapest, fastest;
        for (std::size_t i = 0; i < pooled.size(); ++i) {
            const TimeCost& tc = pooled[i].at_confidence;
            if (tc.time_to_train_s <= deadline_s &&
                (!cheapest || tc.cost_usd < pooled[*cheapest].at_confidence.cost_usd))
                cheapest = i;
            if (tc.cost_usd <= budget_usd &&
                (!fastest || tc.time_to_train_s < pooled[*fastest].at_confidence.time_to_train_s))
                fastest = i;
        }
        ASSERT_TRUE(cheapest && all.cheapest_within_deadline);
        ASSERT_TRUE(fastest && all.fastest_within_budget);
        EXPECT_EQ(all.plans[*all.cheapest_within_deadline].at_confidence.cost_usd,
                  pooled[*cheapest].at_confidence.cost_usd);
        EXPECT_EQ(all.plans[*all.fastest_within_budget].at_confidence.time_to_train_s,
                  pooled[*fastest].at_confidence.time_to_train_s);
        // No plan of the pool beats a point of the front on both axes.
        for (const std::size_t f : all.front) {
            const TimeCost& p = all.plans[f].at_confidence;
            for (const Plan& plan : pooled) {
                const TimeCost& q = plan.at_confidence;
                EXPECT_FALSE(q.time_to_train_s <= p.time_to_train_s && q.cost_usd <= p.cost_usd &&
                             (q.time_to_train_s < p.time_to_train_s || q.cost_usd < p.cost_usd));
            }
        }
        // The fastest within $400 is 8 x p5: by the bill on demand (eight whole days of a Capacity Block
        // are $8,000), by the share on the block, whose rate is below on demand's.
        const Scenario& fastest_plan = all.plans[*all.fastest_within_budget].scenario;
        EXPECT_EQ(fastest_plan.instance, "p5.48xlarge");
        EXPECT_EQ(fastest_plan.pricing, charge == Charge::bill ? Pricing::on_demand : Pricing::capacity_block)
            << to_string(fastest_plan.pricing);
    }
}

// With on demand searched itself, spot's on-demand twins would be its plans a second time: only the
// elastic twins are added. A named instance without a price is planned once, under the first pricing.
TEST(PlanSearch, SeveralPricingsAddNoTwinTwiceAndPlanAnUnpricedInstanceOnce) {
    SearchSpace space;
    space.instances = {"p4d.24xlarge", "dgx-a100"};
    space.strategies = {Strategy::nccl};
    space.nodes = {1, 2, 4};
    space.batch_per_gpu = {256};
    space.pricings = {Pricing::on_demand, Pricing::spot};
    space.spot_with_on_demand = true;
    const std::vector<Scenario> scenarios = enumerate_space(space, model().catalog());
    auto count = [&](auto&& keep) { return std::count_if(scenarios.begin(), scenarios.end(), keep); };
    const std::ptrdiff_t gpu_counts = 4;  // 1, 2, 4 and 8 GPUs a node
    EXPECT_EQ(count([](const Scenario& s) { return s.instance == "dgx-a100"; }), gpu_counts * 3);
    EXPECT_EQ(count([](const Scenario& s) { return s.instance == "dgx-a100" && s.pricing != Pricing::on_demand; }), 0);
    EXPECT_EQ(count([](const Scenario& s) { return s.instance == "p4d.24xlarge" && s.pricing == Pricing::on_demand; }),
              gpu_counts * 3);
    EXPECT_EQ(count([](const Scenario& s) {
                  return s.instance == "p4d.24xlarge" && s.pricing == Pricing::spot && !s.spot_elastic;
              }),
              gpu_counts * 3);
    // Elastic twins of the spot clusters of two nodes or more.
    EXPECT_EQ(count([](const Scenario& s) { return s.spot_elastic; }), gpu_counts * 2);
    // Spot alone keeps its on-demand twins.
    space.pricings = {Pricing::spot};
    const std::vector<Scenario> spot = enumerate_space(space, model().catalog());
    EXPECT_EQ(std::count_if(
                  spot.begin(), spot.end(),
                  [](const Scenario& s) { return s.instance == "p4d.24xlarge" && s.pricing == Pricing::on_demand; }),
              gpu_counts * 3);
    // A pricing listed twice, and a named instance sold none of the ways asked, are refused.
    space.pricings = {Pricing::spot, Pricing::spot};
    EXPECT_THROW(enumerate_space(space, model().catalog()), InputError);
    space.pricings = {Pricing::reserved_1y, Pricing::capacity_block};
    space.instances = {"p4d.24xlarge"};
    try {
        enumerate_space(space, model().catalog());
        ADD_FAILURE() << "p4d.24xlarge is sold neither way";
    } catch (const InputError& error) {
        EXPECT_STREQ(error.what(),
                     "instance 'p4d.24xlarge' is not sold reserved-1y or capacity-block (it is sold as: on-demand, "
                     "spot)");
    }
}

TEST(PlanSearch, UnreachableDeadlineHasNoAnswerAndBadLimitsAreErrors) {
    SearchSpace space;
    space.instances = {"p3.2xlarge"};
    space.nodes = {1, 2};
    const PlanSearch search = search_plans(model(), space, 60.0, 1.0);
    EXPECT_FALSE(search.cheapest_within_deadline.has_value());
    EXPECT_FALSE(search.fastest_within_budget.has_value());
    EXPECT_FALSE(search.front.empty());
    EXPECT_THROW(search_plans(model(), space, 0.0, std::nullopt), InputError);
    EXPECT_THROW(search_plans(model(), space, std::nullopt, -5.0), InputError);
    space.instances = {"p9.imaginary"};
    EXPECT_THROW(search_plans(model(), space, 3600.0, std::nullopt), InputError);
}

TEST(PlanSearch, ElasticScheduleMeetsTheDeadlineExactlyWhenItSaves) {
    // One node at batch 256 and two at batch 128 keep the global batch (seed 003). A deadline
    // just under the one-node time: that cluster alone misses it, and finishing the last epochs on
    // two nodes costs less than any fixed two-node plan (2 x b256 included).
    SearchSpace space;
    space.instances = {"p3.16xlarge"};
    space.gpus_per_node = {8};
    space.strategies = {Strategy::hierarchical};
    space.nodes = {1, 2};
    space.batch_per_gpu = {128, 256};
    // PyTorch, compute-bound on these V100s: a mixture saves here. (Under TensorFlow on the current
    // stack tf.data bounds the one-node plan, and no mixture is cheaper than the fixed plans.)
    space.base.framework = Framework::pytorch;
    Scenario one = space.base;
    one.instance = "p3.16xlarge";
    one.nodes = 1;
    one.batch_per_gpu = 256;
    Scenario two = one;
    two.nodes = 2;
    two.batch_per_gpu = 128;
    const Prediction a = model().predict(one);
    const Prediction b = model().predict(two);
    ASSERT_GT(a.time_to_train_s, b.time_to_train_s);
    const double deadline = 0.9 * a.time_to_train_s + 0.1 * b.time_to_train_s;

    const PlanSearch search = search_plans(model(), space, deadline, std::nullopt, true);
    ASSERT_TRUE(search.elastic_within_deadline.has_value());
    const ElasticPlan& e = *search.elastic_within_deadline;
    EXPECT_NEAR(e.time_to_train_s, deadline, 1e-6 * deadline);
    EXPECT_NEAR(e.first_epochs + e.second_epochs, 90, 1e-9);
    ASSERT_TRUE(search.cheapest_within_deadline.has_value());
    EXPECT_LT(e.cost_usd, search.plans[*search.cheapest_within_deadline].prediction.cost_usd);
    // Eq. E1 by hand: each phase bills its cluster for its startup and its epochs.
    const Prediction& pa = search.plans[e.first].prediction;
    const Prediction& pb = search.plans[e.second].prediction;
    const double first_s = pa.startup_s + e.first_epochs * pa.epoch_s;
    const double second_s = pb.startup_s + e.second_epochs * pb.epoch_s;
    EXPECT_NEAR(e.time_to_train_s, first_s + second_s, 1e-6);
    EXPECT_NEAR(e.cost_usd, (first_s * pa.cluster_usd_per_hour + second_s * pb.cluster_usd_per_hour) / 3600, 1e-6);
    EXPECT_EQ(pa.global_batch, pb.global_batch);

    // Without --elastic, none.
    EXPECT_FALSE(search_plans(model(), space, deadline, std::nullopt, false).elastic_within_deadline.has_value());
}

}  // namespace
}  // namespace epochcast
