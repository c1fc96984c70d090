// Planning calibration runs (model/plan.hpp): runs are chosen and each narrows the target's band,
// a small per-GPU batch gets runs at two batch sizes, and bad limits are input errors.
#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <vector>

#include "model/errors.hpp"
#include "model/plan.hpp"

namespace epochcast {
namespace {

TEST(Plan, AnUncalibratedGpuGetsRunsThatEachNarrowTheBand) {
    const CostModel model(Catalog::built_in(), Calibration::built_in());
    Scenario target;
    target.instance = "g4dn.12xlarge";  // T4: no run of the corpus
    target.precision = Precision::amp;
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
    // A short benchmark on a g4dn.12xlarge costs cents to a dollar, not a training run.
    EXPECT_LT(plan.total_cost_usd, 5.0);
}

// Issue 57: one uncertainty per configuration. Before any run the plan's band is predict's (eq. U1,
// a borrowed curve's own sigma included), and where that curve is borrowed a run on the target's
// GPU measures it: 16 p5.48xlarge in bf16 (no measured H100 bf16 PyTorch curve) got no run and a
// band a third of predict's.
TEST(Plan, TheBandBeforeAnyRunIsPredictsAndARunNarrowsABorrowedCurve) {
    const CostModel model(Catalog::built_in(), Calibration::built_in());
    Scenario target;
    target.instance = "p5.48xlarge";
    target.nodes = 16;
    target.precision = Precision::bf16;
    target.loader = Loader::dali;
    const ResolvedScenario resolved = model.resolve(target);
    ASSERT_GT(resolved.transfer_sigma, 0) << "the case needs a borrowed curve";
    const CalibrationPlan plan = plan_calibration(model, target);
    // predict's band, from its slow end (the fast end may be capped by eq. U1's bound rule)
    const Prediction p = model.checked_predict(target);
    const double predicted = std::log(p.throughput_images_per_s / p.interval.low) / kInterval95Sigmas;
    EXPECT_NEAR(plan.target_sigma_before, predicted, 1e-6 * predicted);
    ASSERT_FALSE(plan.runs.empty());
    EXPECT_LT(plan.runs.front().target_sigma_after, 0.6 * plan.target_sigma_before);
    for (const PlannedRun& run : plan.runs) EXPECT_EQ(run.scenario.instance, "p5.48xlarge");

    // A target on a measured curve: still predict's band before any run.
    Scenario measured;
    measured.instance = "p3.16xlarge";
    measured.nodes = 8;
    const Prediction m = model.checked_predict(measured);
    EXPECT_NEAR(plan_calibration(model, measured).target_sigma_before,
                std::log(m.throughput_images_per_s / m.interval.low) / kInterval95Sigmas, 1e-6);
}

// Issue 23: with the global batch fixed, the target's per-GPU batch is small and the fixed
// per-iteration cost matters; runs at two batch sizes are what tell it from the per-image cost.
TEST(Plan, ASmallPerGpuBatchGetsRunsAtTwoBatchSizes) {
    const CostModel model(Catalog::built_in(), Calibration::built_in());
    Scenario target;
    target.instance = "p4d.24xlarge";
    target.nodes = 16;
    target.global_batch = 2048;  // 16 per A100
    target.framework = Framework::tensorflow;
    const CalibrationPlan plan = plan_calibration(model, target);
    ASSERT_GE(plan.runs.size(), 2u);
    std::vector<int> batches;
    for (const PlannedRun& run : plan.runs) {
        EXPECT_EQ(run.scenario.global_batch, 0) << "a calibration run's batch is its own";
        batches.push_back(run.scenario.batch_per_gpu);
    }
    std::sort(batches.begin(), batches.end());
    EXPECT_LE(batches.front(), 16) << "a run at or below the target's own batch, where the fixed cost shows";
    EXPECT_GT(std::unique(batches.begin(), batches.end()) - batches.begin(), 1) << "a second batch size";
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

TEST(Plan, IterationsAreBoundedAndARunsTimeAndCostStayPositive) {
    // Issue 42: --iterations 2147483647 overflowed an int and printed a run of -5,583,888.8 minutes.
    const CostModel model(Catalog::built_in(), Calibration::built_in());
    Scenario target;
    target.instance = "p3.16xlarge";
    PlanOptions options;
    options.benchmark_iterations = kMaxBenchmarkIterations + 1;
    EXPECT_THROW(plan_calibration(model, target, options), InputError);
    options.benchmark_iterations = kMaxBenchmarkIterations;
    const CalibrationPlan plan = plan_calibration(model, target, options);
    ASSERT_FALSE(plan.runs.empty());
    for (const PlannedRun& run : plan.runs) {
        EXPECT_GT(run.duration_s, 0.0);
        EXPECT_GT(run.cost_usd, 0.0);
        EXPECT_TRUE(std::isfinite(run.cost_usd));
    }
}

}  // namespace
}  // namespace epochcast
