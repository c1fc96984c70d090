// model/billing: eq. H1, the hours each instance is billed for under the way it is sold, and the
// bill of a prediction and of a plan beside the run's share (issue 58, item 2). Every expected
// figure is recomputed here from AWS's selling rule and the catalog's price.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/billing.hpp"
#include "model/cost_model.hpp"
#include "model/search.hpp"

namespace epochcast {
namespace {

const CostModel& model() {
    static const CostModel m(Catalog::built_in(), Calibration::built_in());
    return m;
}

constexpr double kDay = 24.0;

TEST(Billing, ByTheSecondTheRunsOwnHours) {
    for (const Pricing pricing : {Pricing::on_demand, Pricing::spot}) {
        EXPECT_DOUBLE_EQ(billed_hours_per_node(pricing, 0.7), 0.7);
        EXPECT_DOUBLE_EQ(billed_hours_per_node(pricing, 1000.25), 1000.25);
        EXPECT_FALSE(billed_whole(pricing));
        EXPECT_EQ(billing_text(pricing, 3.0), "");
        EXPECT_DOUBLE_EQ(bill_usd(pricing, 10.0, 3.0, 31.5, 1.5), 31.5);  // the share itself
    }
    EXPECT_DOUBLE_EQ(billed_hours_per_node(Pricing::capacity_block, 0.0), 0.0);
}

TEST(Billing, ACapacityBlockIsWholeDaysUpTo14ThenWholeWeeksUpTo182) {
    const Pricing block = Pricing::capacity_block;
    EXPECT_DOUBLE_EQ(billed_hours_per_node(block, 0.5), 1 * kDay);
    EXPECT_DOUBLE_EQ(billed_hours_per_node(block, 24.0), 1 * kDay);
    EXPECT_DOUBLE_EQ(billed_hours_per_node(block, 24.01), 2 * kDay);
    EXPECT_DOUBLE_EQ(billed_hours_per_node(block, 14 * kDay), 14 * kDay);
    EXPECT_DOUBLE_EQ(billed_hours_per_node(block, 14 * kDay + 1), 21 * kDay);  // past 14 days: weeks
    EXPECT_DOUBLE_EQ(billed_hours_per_node(block, 22 * kDay), 28 * kDay);
    EXPECT_DOUBLE_EQ(billed_hours_per_node(block, 182 * kDay), 182 * kDay);
    // Longer than the longest block: a 182-day block, then the shortest that holds the rest.
    EXPECT_DOUBLE_EQ(billed_hours_per_node(block, 182 * kDay + 5), 183 * kDay);
    EXPECT_DOUBLE_EQ(billed_hours_per_node(block, 196 * kDay), (182 + 14) * kDay);
    EXPECT_DOUBLE_EQ(billed_hours_per_node(block, 196 * kDay + 1), (182 + 21) * kDay);  // past 14: 3 weeks
    EXPECT_DOUBLE_EQ(billed_hours_per_node(block, 200 * kDay), (182 + 21) * kDay);
    EXPECT_EQ(billing_text(block, 2 * kDay), "a 2-day Capacity Block");
    EXPECT_EQ(billing_text(block, 183 * kDay), "2 consecutive Capacity Blocks (183 days)");
    EXPECT_TRUE(billed_whole(block));
}

TEST(Billing, AReservationIsItsWholeTerm) {
    EXPECT_DOUBLE_EQ(billed_hours_per_node(Pricing::reserved_1y, 2.0), 8760.0);
    EXPECT_DOUBLE_EQ(billed_hours_per_node(Pricing::reserved_1y, 8761.0), 2 * 8760.0);
    EXPECT_DOUBLE_EQ(billed_hours_per_node(Pricing::reserved_3y, 2.0), 3 * 8760.0);
    EXPECT_EQ(billing_text(Pricing::reserved_1y, 8760.0), "a 1-year term");
    EXPECT_EQ(billing_text(Pricing::reserved_3y, 2 * 3 * 8760.0), "2 3-year terms");
    // The instances' billed hours at the rate, and the store and its traffic as used.
    EXPECT_DOUBLE_EQ(bill_usd(Pricing::reserved_1y, 2.0, 3.0, 7.5, 1.5), 2.0 * 8760.0 + 1.5);
}

// `plan --deadline 2h --pricing capacity-block` used to say "1 x p5.48xlarge ... $15.16": a run's
// minutes at the block's rate. The prediction now bills the day it is sold as, beside that share.
TEST(Billing, APredictionOnACapacityBlockBillsTheWholeDayBesideTheRunsShare) {
    Scenario s;
    s.instance = "p5.48xlarge";
    s.nodes = 2;
    s.pricing = Pricing::capacity_block;
    const Prediction p = model().checked_predict(s);
    const double rate = model().catalog().instance("p5.48xlarge").price(Pricing::capacity_block)->usd_per_hour;
    ASSERT_LT(p.time_to_train_s, 24 * 3600.0);
    EXPECT_EQ(p.pricing, Pricing::capacity_block);
    EXPECT_DOUBLE_EQ(p.billed_hours_per_node, 24.0);
    EXPECT_NEAR(p.bill_usd, 2 * rate * 24.0, 1e-9);
    EXPECT_NEAR(p.cost_usd, 2 * rate * p.time_to_train_s / 3600.0, 1e-6);  // the share, as before
    EXPECT_LE(p.bill_interval.low, p.bill_usd);
    EXPECT_GE(p.bill_interval.high, p.bill_usd);
    EXPECT_GT(p.bill_usd, 10 * p.cost_usd);

    s.pricing = Pricing::on_demand;
    const Prediction on_demand = model().checked_predict(s);
    EXPECT_DOUBLE_EQ(on_demand.bill_usd, on_demand.cost_usd);
    EXPECT_DOUBLE_EQ(on_demand.bill_interval.high, on_demand.cost_interval.high);
    EXPECT_DOUBLE_EQ(on_demand.billed_hours_per_node, on_demand.time_to_train_s / 3600.0);
}

// Fastest within $5,000 on Capacity Blocks: by the run's share a cluster of dozens of p5s fits
// (each pays minutes), but each of its instances is billed a whole day at $996.67; by the bill
// the answer is the fastest cluster whose days fit.
TEST(Billing, APlanRanksByTheBillUnlessAskedForTheShare) {
    SearchSpace space;
    space.base.pricing = Pricing::capacity_block;
    space.instances = {"p5.48xlarge"};
    space.strategies = {Strategy::nccl};
    space.batch_per_gpu = {256};
    const double budget = 5000;
    const PlanSearch by_bill = search_plans(model(), space, std::nullopt, budget);
    ASSERT_TRUE(by_bill.fastest_within_budget);
    const Plan& billed = by_bill.plans[*by_bill.fastest_within_budget];
    const double day = 24 * model().catalog().instance("p5.48xlarge").price(Pricing::capacity_block)->usd_per_hour;
    // The most nodes of the search's counts (1, 2, 3, 4, 6, ...) whose whole days fit the budget.
    int most = 0;
    for (const int n : space.nodes) {
        if (n * day <= budget) most = std::max(most, n);
    }
    ASSERT_EQ(most, 4);
    EXPECT_EQ(billed.scenario.nodes, most);
    EXPECT_NEAR(billed.at_confidence.cost_usd, billed.scenario.nodes * day, 1e-6);

    space.charge = Charge::run_share;
    const PlanSearch by_share = search_plans(model(), space, std::nullopt, budget);
    ASSERT_TRUE(by_share.fastest_within_budget);
    const Plan& shared = by_share.plans[*by_share.fastest_within_budget];
    EXPECT_GT(shared.scenario.nodes, billed.scenario.nodes);
    EXPECT_DOUBLE_EQ(shared.at_confidence.cost_usd, shared.prediction.cost_usd);
    EXPECT_GT(shared.prediction.bill_usd, budget);  // what that answer would really cost
}

TEST(Billing, APricesAgeIsTheDaysSinceItWasRead) {
    using namespace std::chrono;
    const sys_days today{year{2026} / November / 29};
    EXPECT_EQ(price_age_days("2026-11-29", today), 0);
    EXPECT_EQ(price_age_days("2026-01-21", today), 312);
    EXPECT_EQ(price_age_days("2024-02-29", today), 1004);  // a leap day
    for (const char* bad : {"", "2026-1-21", "2026-02-30", "2026/01/21", "20x6-01-21", "2026-13-01"}) {
        EXPECT_FALSE(price_age_days(bad, today)) << bad;
    }
}

}  // namespace
}  // namespace epochcast
