// Planning calibration runs (model/plan.hpp): runs are chosen, each narrows the target's band,
// and what is already known needs no run.
#include <gtest/gtest.h>

#include "model/errors.hpp"
#include "model/plan.hpp"

namespace epochcast {
namespace {

TEST(Plan, AnUncalibratedGpuGetsRunsThatEachNarrowTheBand) {
    const CostModel model(Catalog::built_in(), Calibration::built_in());
    Scenario target;
    target.instance = "p2.8xlarge";
    target.precision = Precision::fp32;
    target.batch_per_gpu = 64;
    const CalibrationPlan plan = plan_calibration(model, target);
    ASSERT_FALSE(plan.runs.empty());
    EXPECT_LE(plan.runs.size(), 3u);
    double previous = plan.target_sigma_before;
    double total = 0;
    for (const PlannedRun& run : plan.runs) {
        EXPECT_LT(run.target_sigma_after, previous);
        EXPECT_LE(run.scenario.nodes, 2);
        EXPECT_GT(run.cost_usd, 0);
        previous = run.target_sigma_after;
        total += run.cost_usd;
    }
    EXPECT_LT(plan.runs.back().target_sigma_after, 0.5 * plan.target_sigma_before);
    EXPECT_DOUBLE_EQ(plan.total_cost_usd, total);
    // A short benchmark on a p2.8xlarge ($7.20/h) costs cents to a dollar, not a training run.
    EXPECT_LT(plan.total_cost_usd, 5.0);
}

TEST(Plan, BadLimitsAreInputErrors) {
    const CostModel model(Catalog::built_in(), Calibration::built_in());
    PlanOptions options;
    options.max_nodes = 0;
    EXPECT_THROW(plan_calibration(model, Scenario{}, options), InputError);
    options = {};
    options.max_runs = 0;
    EXPECT_THROW(plan_calibration(model, Scenario{}, options), InputError);
}

}  // namespace
}  // namespace epochcast
