// A user's own runs win (issue 38): two runs of the user's system given to calibrate come back
// within 2% whatever the prior, the band at 8 nodes is no wider than the built-in's, and where the
// runs contradict the built-in calibration the fit says so in one line and gives their system
// parameters of its own.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/cost_model.hpp"
#include "model/fit.hpp"

namespace epochcast {
namespace {

/// The issue's two runs: 1 and 2 x p4d.24xlarge, PyTorch AMP at 256 images per GPU, 20,500 and
/// 39,800 images/s (faster than the built-in calibration's PyTorch DataLoader on p4d's 96 vCPUs).
std::vector<Observation> two_p4d_runs() {
    std::vector<Observation> runs;
    for (const auto& [nodes, measured] : {std::pair{1, 20500.0}, std::pair{2, 39800.0}}) {
        Observation o;
        o.origin = "user.json#" + std::to_string(nodes - 1);
        o.source = "a user's benchmark";
        o.scenario.instance = "p4d.24xlarge";
        o.scenario.nodes = nodes;
        o.scenario.framework = Framework::pytorch;
        o.scenario.precision = Precision::amp;
        o.scenario.batch_per_gpu = 256;
        o.throughput_images_per_s = measured;
        runs.push_back(o);
    }
    return runs;
}

double relative_error(const CostModel& model, const Observation& run) {
    return model.predict(run.scenario).throughput_images_per_s / run.throughput_images_per_s - 1.0;
}

/// high / low of the 95% band.
double band_ratio(const Prediction& p) { return p.interval.high / p.interval.low; }

TEST(UserRuns, TwoRunsComeBackWithinTwoPercentFromTheBuiltInPrior) {
    const CostModel prior(Catalog::built_in(), Calibration::built_in());
    const std::vector<Observation> runs = two_p4d_runs();
    // The built-in calibration alone is far off for this user (its DataLoader rate binds p4d).
    EXPECT_GT(std::abs(relative_error(prior, runs[0])), 0.1);
    const CalibrationFit fit = fit_calibration(prior, runs, {});
    const CostModel model(prior, fit.calibration);
    for (const Observation& run : runs) EXPECT_LT(std::abs(relative_error(model, run)), 0.02) << run.origin;
    // The contradiction is said in one line, naming the system and what became its own.
    EXPECT_NE(fit.contradiction.find("A100-SXM4-40GB / amp / pytorch"), std::string::npos) << fit.contradiction;
    EXPECT_NE(fit.contradiction.find("time_per_image_s"), std::string::npos) << fit.contradiction;
    EXPECT_EQ(fit.contradiction.find('\n'), std::string::npos);

    // At 8 nodes, compute-bound under both (synthetic data, so that the loader's rate, which the
    // built-in puts in the way, is not what is compared), the band is no wider than the built-in's.
    Scenario eight = runs[0].scenario;
    eight.nodes = 8;
    eight.loader = Loader::synthetic;
    const Prediction mine = model.checked_predict(eight), built_in = prior.checked_predict(eight);
    EXPECT_EQ(mine.bottleneck, Bottleneck::compute);
    EXPECT_EQ(built_in.bottleneck, Bottleneck::compute);
    EXPECT_LE(band_ratio(mine), band_ratio(built_in));
    // With the user's loader as the runs had it, the band at 8 nodes is no wider either.
    eight.loader = Loader::framework_default;
    EXPECT_LE(band_ratio(model.checked_predict(eight)), band_ratio(built_in));
}

TEST(UserRuns, TwoRunsComeBackWithinTwoPercentFromTheDataFreePrior) {
    const CostModel prior(Catalog::built_in(), Calibration::data_free_prior());
    const std::vector<Observation> runs = two_p4d_runs();
    const CalibrationFit fit = fit_calibration(prior, runs, {});
    const CostModel model(prior, fit.calibration);
    for (const Observation& run : runs) EXPECT_LT(std::abs(relative_error(model, run)), 0.02) << run.origin;
    // The data-free prior's weak priors are no posterior to contradict: nothing is released.
    EXPECT_TRUE(fit.contradiction.empty()) << fit.contradiction;
    EXPECT_TRUE(fit.released.empty());
}

// Runs the built-in calibration already agrees with release nothing.
TEST(UserRuns, RunsThatAgreeWithTheBuiltInReleaseNothing) {
    const CostModel prior(Catalog::built_in(), Calibration::built_in());
    std::vector<Observation> runs = two_p4d_runs();
    for (Observation& run : runs) run.throughput_images_per_s = prior.predict(run.scenario).throughput_images_per_s;
    const CalibrationFit fit = fit_calibration(prior, runs, {});
    EXPECT_TRUE(fit.contradiction.empty()) << fit.contradiction;
    EXPECT_TRUE(fit.released.empty());
}

// One run on a GPU calibrates the curve of that GPU: epochcast-train on one H200 (2026-11-26,
// docs/performance.md, "Training on a GPU"), ResNet-50 224 px fp16, synthetic data, 4,940.6 img/s
// at batch 128 and 5,283.1 at 256. Calibrated from the batch-128 run alone, the new curve's fixed
// time was the framework's overhead (50 ms, a CPU host's SGD step, twice the H200's whole step):
// the fit could not reach the run (-48%) and predicted batch 256 at -48%. It starts from the
// prior's fixed time for that scenario now.
TEST(UserRuns, OneGpuRunPredictsAnotherBatchWithinTenPercent) {
    const CostModel prior(Catalog::built_in(), Calibration::built_in());
    Observation run;
    run.origin = "h200.json#0";
    run.source = "epochcast-train on one H200";
    run.scenario.instance = "p5en.48xlarge";
    run.scenario.nodes = 1;
    run.scenario.gpus_per_node = 1;
    run.scenario.framework = Framework::epochcast;
    run.scenario.strategy = Strategy::ring;
    run.scenario.precision = Precision::amp;
    run.scenario.loader = Loader::synthetic;
    run.scenario.batch_per_gpu = 128;
    run.throughput_images_per_s = 4940.6;
    const CalibrationFit fit = fit_calibration(prior, {run}, {});
    const CostModel model(prior, fit.calibration);
    EXPECT_LT(std::abs(relative_error(model, run)), 0.03);
    Observation other = run;
    other.scenario.batch_per_gpu = 256;
    other.throughput_images_per_s = 5283.1;
    EXPECT_LT(std::abs(relative_error(model, other)), 0.10);
    for (const ComputeCurve& curve : fit.calibration.compute) {
        if (curve.framework == Framework::epochcast && curve.gpu == "H200-SXM-141GB") {
            EXPECT_LT(curve.fixed_s, 0.01) << "the curve starts at the framework's CPU overhead again";
        }
    }
}

}  // namespace
}  // namespace epochcast
