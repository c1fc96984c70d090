// The compute curve (model/compute_curve.hpp): eq. C5's line, eq. C6's pooling, and the choice
// remembered per calibration.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/compute_curve.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/uncertainty.hpp"

namespace epochcast {
namespace {

// resolve() keeps each compute curve it chose for the next scenario of the same GPU, workload and
// software; the same scenario resolves alike the second time, and a model made from it with another
// calibration chooses afresh (its curves are its own).
TEST(CostModel, ARememberedCurveIsTheCalibrationsOwn) {
    Scenario s;  // one p5.48xlarge, PyTorch amp: a pooled curve (eqs. C4-C6)
    const CostModel first(Catalog::built_in(), Calibration::built_in());
    const ResolvedScenario a = first.resolve(s);
    const ResolvedScenario b = first.resolve(s);
    EXPECT_EQ(a.time_per_image_s, b.time_per_image_s);
    EXPECT_EQ(a.fixed_s, b.fixed_s);
    EXPECT_EQ(a.transfer_sigma, b.transfer_sigma);
    EXPECT_EQ(first.predict(a).throughput_images_per_s, first.predict(s).throughput_images_per_s);

    Calibration slower = Calibration::built_in();
    for (ComputeCurve& curve : slower.compute) curve.time_per_image_s *= 2.0;
    const CostModel second(first, slower);
    const ResolvedScenario c = second.resolve(s);
    EXPECT_GT(c.time_per_image_s, 1.5 * a.time_per_image_s);
    EXPECT_EQ(first.resolve(s).time_per_image_s, a.time_per_image_s);
}

// Eq. C5's line: points exactly on t = 0.9 r + 0.2 ms over a 4x range of roofline times give back
// the factor and the floor, at the smallest scatter; two points fit the factor alone.
TEST(FrameworkRooflineFit, ThreeCurvesOverAWideRangeFindTheFactorAndTheFloor) {
    std::vector<RooflinePoint> points;
    for (const double r : {0.1e-3, 0.2e-3, 0.4e-3}) points.push_back({r, 0.9 * r + 0.2e-3});
    const FrameworkRoofline line = fit_framework_roofline(points, 0.25);
    EXPECT_NEAR(line.factor, 0.9, 1e-9);
    EXPECT_NEAR(line.floor_s, 0.2e-3, 1e-12);
    EXPECT_NEAR(line.relative_sigma, std::max(kRooflineFitMinSigma, 0.25 / std::sqrt(2.0)), 1e-9);
    EXPECT_EQ(line.curves, 3);
    // Many points on the line: the prior's pseudo-residual fades, down to the smallest scatter.
    std::vector<RooflinePoint> many;
    for (int i = 1; i <= 60; ++i) many.push_back({i * 0.1e-3, 0.9 * i * 0.1e-3 + 0.2e-3});
    EXPECT_DOUBLE_EQ(fit_framework_roofline(many, 0.25).relative_sigma, kRooflineFitMinSigma);

    // Two points: no floor, the factor by least squares of relative errors, one degree of freedom;
    // the roofline prior's sigma counts as one more residual.
    const FrameworkRoofline two = fit_framework_roofline({{1e-3, 1e-3}, {1e-3, 2e-3}}, 0.25);
    EXPECT_DOUBLE_EQ(two.floor_s, 0.0);
    const double factor = (1 + 0.5) / (1 + 0.25);
    EXPECT_NEAR(two.factor, factor, 1e-12);
    EXPECT_NEAR(two.relative_sigma,
                std::sqrt((0.25 * 0.25 + std::pow(std::log(factor), 2) + std::pow(std::log(factor / 2), 2)) / 2),
                1e-12);
    // One point leaves no degree of freedom: the roofline prior's sigma.
    const FrameworkRoofline one = fit_framework_roofline({{1e-3, 2e-3}}, 0.25);
    EXPECT_NEAR(one.factor, 2.0, 1e-12);
    EXPECT_NEAR(one.relative_sigma, 0.25, 1e-12);
    // A narrow range (less than 1.5x) cannot tell a floor from the factor.
    const FrameworkRoofline narrow = fit_framework_roofline({{1e-3, 1.1e-3}, {1.2e-3, 1.3e-3}, {1.4e-3, 1.5e-3}}, 0.25);
    EXPECT_DOUBLE_EQ(narrow.floor_s, 0.0);
}

// Eq. C3 by stack: the legacy stack's fp32 (2017-2018 stock kernels, the network unfused) moves the
// unfused traffic count at the memory's bandwidth (kUnfusedMemoryEfficiency), the current stack at
// the prior's fused efficiency. With the data-free prior no curve exists, so a scenario's per-image
// time is eq. C3 alone, recomputed here from the catalog's M60 and the workload.
TEST(FrameworkRooflineFit, TheLegacyStackMovesTheUnfusedTrafficAtTheBandwidth) {
    const CostModel prior(Catalog::built_in(), Calibration::data_free_prior());
    const RooflinePrior& roofline = prior.calibration().roofline;
    EXPECT_DOUBLE_EQ(roofline_memory_efficiency(roofline, SoftwareStack::legacy, Precision::fp32),
                     kUnfusedMemoryEfficiency);
    EXPECT_DOUBLE_EQ(roofline_memory_efficiency(roofline, SoftwareStack::legacy, Precision::amp),
                     roofline.memory_efficiency);
    EXPECT_DOUBLE_EQ(roofline_memory_efficiency(roofline, SoftwareStack::current, Precision::fp32),
                     roofline.memory_efficiency);
    EXPECT_GT(roofline.memory_efficiency, 1.0);  // the current stacks' fusion

    Scenario s;
    s.instance = "g3.16xlarge";  // 4 x M60: 4.82 TFLOPS fp32, 160 GB/s
    s.nodes = 1;
    s.gpus_per_node = 1;
    s.framework = Framework::mxnet;
    s.precision = Precision::fp32;
    s.memory_format = MemoryFormat::nchw;
    s.batch_per_gpu = 32;
    const GpuSpec& m60 = *prior.catalog().find_gpu("M60");
    const Workload& work = prior.workload(s.model, s.image_size, s.classes);
    const double compute_s =
        work.training_flops_per_image / (m60.fp32_tflops * 1e12 * roofline.fp32_compute_efficiency);
    const double traffic_bytes = work.memory_traffic_elements_per_image * activation_element_bytes(Precision::fp32);
    s.stack = SoftwareStack::legacy;
    const ResolvedScenario legacy = prior.resolve(s);
    EXPECT_EQ(legacy.curve_origin, CurveOrigin::roofline);
    EXPECT_NEAR(legacy.time_per_image_s, compute_s + traffic_bytes / (m60.memory_GBps * 1e9), 1e-12);
    s.stack = SoftwareStack::current;
    const ResolvedScenario current = prior.resolve(s);
    EXPECT_NEAR(current.time_per_image_s,
                compute_s + traffic_bytes / (m60.memory_GBps * 1e9 * roofline.memory_efficiency), 1e-12);
}

// Eq. C6: inverse-variance weights; two equal sigmas weigh one half each and pool to sigma / sqrt 2.
TEST(FrameworkRooflineFit, PoolingWeighsByInverseVariance) {
    EXPECT_DOUBLE_EQ(pooled_weight(0.1, 0.1), 0.5);
    EXPECT_NEAR(pooled_sigma(0.1, 0.1), 0.1 / std::sqrt(2.0), 1e-15);
    EXPECT_NEAR(pooled_weight(0.1, 0.2), 0.8, 1e-15);
}

// Eq. C9 recomputed from the four published figures it rests on: the eager pair on one H200 (5,880.0
// img/s at batch 256, 6,396.6 at 1,056) gives the fixed time's share of the eager step at 256 (eq.
// C1); the compiled run (6,667.7 at 256) how much shorter that step is. Half the fixed time stays,
// and the per-image factor keeps the measured step: both extremes of the split (k = 0, k = 1) then
// give the measured compiled step at the pair's batch, and the factors give it at k = 1/2.
TEST(CompiledExecution, FactorsKeepTheMeasuredStepAtThePairsBatch) {
    const double eager_s = 256 / 5880.0;
    const double t_img = (1056 / 6396.6 - eager_s) / 800;
    const double t_fixed = eager_s - 256 * t_img;
    const double compiled_s = 256 / 6667.7;
    const CompiledExecution c = compiled_execution();
    EXPECT_DOUBLE_EQ(c.fixed_factor, 0.5);
    EXPECT_NEAR(c.fixed_factor * t_fixed + c.time_per_image_factor * 256 * t_img, compiled_s, 1e-12);
    EXPECT_NEAR(c.time_per_image_factor, 0.9274, 1e-4);
    // The split's sigma (uniform on [0, 1]: 1/sqrt(12)) moves the fixed time by sigma / k in its log
    // and the per-image time the other way, so that the step at 256 stays.
    const double sigma = 1 / std::sqrt(12.0);
    EXPECT_NEAR(c.split.log_fixed, sigma / 0.5, 1e-12);
    EXPECT_NEAR(c.split.log_fixed * c.fixed_factor * t_fixed +
                    c.split.log_time_per_image * c.time_per_image_factor * 256 * t_img,
                0.0, 1e-15);
    // The ratio's own 5% moves the per-image time alone, by the whole step's 5% at 256.
    EXPECT_EQ(c.ratio.log_fixed, 0.0);
    EXPECT_NEAR(c.ratio.log_time_per_image * c.time_per_image_factor * 256 * t_img / compiled_s, -kCompiledRatioSigma,
                1e-12);
}

// A compiled prediction is the eager one's curve carried by eq. C9: the same per-image and fixed
// times scaled by the factors, faster at every batch, and faster by more at small batches (where the
// fixed time is most of a step); its band is wider than eager's, by more at small batches, and its
// slow end no slower than eager's.
TEST(CompiledExecution, CarriesTheEagerCurveAndWidensTheBandAtSmallBatches) {
    const CostModel model(Catalog::built_in(), Calibration::built_in());
    const CompiledExecution c = compiled_execution();
    // The H100's curve is pooled (eqs. C4-C6); the H200's is its NCHW one in the other layout (eq.
    // C8), a choice that asks for another: each is carried once.
    for (const char* instance : {"p5.48xlarge", "dgx-h200"}) {
        double previous_gain = 0;
        for (const int batch : {512, 256, 64, 16}) {
            Scenario eager;
            eager.instance = instance;
            eager.gpus_per_node = 1;
            eager.loader = Loader::synthetic;
            eager.batch_per_gpu = batch;
            Scenario compiled = eager;
            compiled.compiled = true;
            const ResolvedScenario e = model.resolve(eager);
            const ResolvedScenario r = model.resolve(compiled);
            EXPECT_DOUBLE_EQ(r.fixed_s, c.fixed_factor * e.fixed_s);
            EXPECT_DOUBLE_EQ(r.time_per_image_s, c.time_per_image_factor * e.time_per_image_s);
            const Prediction pe = model.predict(e);
            const Prediction pc = model.predict(r);
            const double gain = pc.throughput_images_per_s / pe.throughput_images_per_s;
            EXPECT_NEAR(gain, (e.fixed_s + batch * e.time_per_image_s) / (r.fixed_s + batch * r.time_per_image_s),
                        1e-9);
            EXPECT_GT(gain, previous_gain) << instance << ", batch " << batch;
            // Compiling never slows a step (k = 1 keeps the fixed time and shortens each image), so
            // the compiled band's slow end is no slower than eager's: a lognormal band around k = 1/2
            // put it below at batch 16 (1,037 against 1,137 img/s on one H200).
            EXPECT_GE(pc.interval.low, pe.interval.low) << instance << ", batch " << batch;
            EXPECT_LE(pc.interval.low, pc.throughput_images_per_s);
            EXPECT_GE(pc.interval.high, pc.throughput_images_per_s);
            previous_gain = gain;
            const double sigma_eager = model.throughput_relative_sigma(e);
            const double sigma_compiled = model.throughput_relative_sigma(r);
            EXPECT_GT(sigma_compiled, sigma_eager) << "batch " << batch;
            // The added variance is compiled_variance's, on top of what the same curve has without it.
            ResolvedScenario without = r;
            without.compiled_split = {};
            without.compiled_ratio = {};
            EXPECT_EQ(compiled_variance(without), 0.0);
            const double sigma_without = model.throughput_relative_sigma(without);
            EXPECT_NEAR(sigma_compiled * sigma_compiled, sigma_without * sigma_without + compiled_variance(r),
                        1e-12 * sigma_compiled * sigma_compiled);
            // At batch 16 the split alone moves the step by most of the fixed time's share.
            if (batch == 16) {
                EXPECT_GT(std::sqrt(compiled_variance(r)), 0.15);
            }
            if (batch == 512) {
                EXPECT_LT(std::sqrt(compiled_variance(r)), 0.07);
            }
        }
    }
    EXPECT_EQ(compiled_variance(model.resolve(Scenario{})), 0.0);
}

// torch.compile is PyTorch 2's: another framework, or the legacy stack, is refused by name.
TEST(CompiledExecution, IsPyTorchOnTheCurrentStackOnly) {
    const CostModel model(Catalog::built_in(), Calibration::built_in());
    Scenario s;
    s.compiled = true;
    s.framework = Framework::mxnet;
    try {
        (void)model.resolve(s);
        FAIL() << "mxnet with --compile was accepted";
    } catch (const InputError& error) {
        EXPECT_NE(std::string(error.what()).find("--compile is PyTorch's torch.compile"), std::string::npos)
            << error.what();
    }
    s.framework = Framework::pytorch;
    s.stack = SoftwareStack::legacy;
    s.instance = "p3.16xlarge";
    EXPECT_THROW((void)model.resolve(s), InputError);
}

}  // namespace
}  // namespace epochcast
