// Calibration by fitting (model/fit.hpp) against the published traces: the leave-one-out error
// over the seeds' throughputs, extrapolation from one node to many, and honest intervals.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "model/errors.hpp"
#include "model/fit.hpp"
#include "model/parameters.hpp"

namespace epochcast {
namespace {

const std::string kPublished = EPOCHCAST_SOURCE_DIR "/traces/published/";
const std::string kSeed000 = kPublished + "seed000_multi_node_mxnet_tensorflow.json";
const std::string kSeed001 = kPublished + "seed001_horovod_256_gpus.json";
const std::string kSeed004 = kPublished + "seed004_pytorch_eks_efa.json";
const std::string kK80 = kPublished + "external_tf_benchmarks_k80_distributed.json";

cli::Evidence evidence(const std::vector<std::string>& files) {
    return cli::load_evidence(files, Catalog::built_in());
}

double error(double predicted, double measured) { return predicted / measured - 1.0; }

TEST(Fit, LeaveOneOutErrorOverTheSeedThroughputsIsAtMostFivePercent) {
    const cli::Evidence e = evidence({kSeed000, kSeed001, kSeed004});
    ASSERT_EQ(e.runs.size(), 6u);
    const CostModel prior(Catalog::built_in(), Calibration::data_free_prior());
    const std::vector<Prediction> held_out = leave_one_out_predictions(prior, e.runs, e.networks);
    double sum = 0;
    for (std::size_t i = 0; i < e.runs.size(); ++i) {
        const double err = error(held_out[i].throughput_images_per_s, e.runs[i].throughput_images_per_s);
        EXPECT_LT(std::abs(err), 0.12) << e.runs[i].origin;  // the 32-GPU run is the worst, at 10.2%
        sum += std::abs(err);
    }
    const double mape = sum / static_cast<double>(e.runs.size());
    EXPECT_LE(mape, 0.05);
    EXPECT_GT(mape, 0.005);  // held out means held out: not the in-sample zero
}

TEST(Fit, SeedOneOneNodeRunsPredictItsThirtyTwoAndTwoHundredFiftySixGpuRunsWithinTenPercent) {
    const cli::Evidence calibration_runs = evidence({kSeed001 + "#0", kSeed001 + "#1"});
    const cli::Evidence all = evidence({kSeed001});
    for (const Calibration& start : {Calibration::built_in(), Calibration::data_free_prior()}) {
        const CostModel prior(Catalog::built_in(), start);
        const CalibrationFit fit = fit_calibration(prior, calibration_runs.runs, {});
        EXPECT_TRUE(fit.converged);
        const CostModel model(prior, fit.calibration);
        EXPECT_NEAR(model.predict(all.runs[0].scenario).throughput_images_per_s, 3012, 0.02 * 3012);
        EXPECT_NEAR(model.predict(all.runs[1].scenario).throughput_images_per_s, 5874, 0.02 * 5874);
        for (std::size_t i : {2u, 3u}) {
            const double predicted = model.predict(all.runs[i].scenario).throughput_images_per_s;
            EXPECT_LT(std::abs(error(predicted, all.runs[i].throughput_images_per_s)), 0.10) << all.runs[i].origin;
        }
    }
}

TEST(Fit, OneAndEightGpuRunsPredictSixteenThirtyTwoAndSixtyFourGpusAcrossNodesWithinTenPercent) {
    // TensorFlow benchmarks, ResNet-50 batch 64 on p2.8xlarge (K80): runs 0-4 are 1, 8, 16, 32, 64 GPUs.
    const cli::Evidence all = evidence({kK80});
    ASSERT_GE(all.runs.size(), 5u);
    const CostModel prior(Catalog::built_in(), Calibration::built_in());
    const CalibrationFit fit = fit_calibration(prior, {all.runs[0], all.runs[1]}, {});
    const CostModel model(prior, fit.calibration);
    for (std::size_t i = 2; i < 5; ++i) {
        const Prediction p = model.predict(all.runs[i].scenario);
        EXPECT_EQ(p.gpus, 8 << (i - 1));
        EXPECT_LT(std::abs(error(p.throughput_images_per_s, all.runs[i].throughput_images_per_s)), 0.10)
            << all.runs[i].origin;
        EXPECT_GE(all.runs[i].throughput_images_per_s, p.interval.low);
        EXPECT_LE(all.runs[i].throughput_images_per_s, p.interval.high);
    }
    // The roofline prior was twice too fast for a K80; the fit found the measured curve.
    const ComputeCurve* curve = fit.calibration.find_curve("K80", Precision::fp32, Framework::tensorflow);
    ASSERT_NE(curve, nullptr);
    EXPECT_NEAR(curve->time_per_image_s, 0.0188, 0.001);
}

TEST(Fit, TheBandWidensFarFromTheCalibrationRuns) {
    const CostModel prior(Catalog::built_in(), Calibration::built_in());
    const CalibrationFit fit = fit_calibration(prior, evidence({kSeed001 + "#0", kSeed001 + "#1"}).runs, {});
    const CostModel model(prior, fit.calibration);
    auto relative_band = [&](int nodes, int gpus) {
        Scenario s;
        s.strategy = Strategy::ring;
        s.nodes = nodes;
        s.gpus_per_node = gpus;
        const Prediction p = model.predict(s);
        return (p.interval.high - p.interval.low) / p.throughput_images_per_s;
    };
    const double at_calibration = relative_band(1, 8);
    EXPECT_GT(at_calibration, 0.05);  // the run scatter is never zero
    EXPECT_LT(at_calibration, relative_band(4, 8));
    EXPECT_LT(relative_band(4, 8), relative_band(32, 8));
}

TEST(Fit, NetworkMeasurementsSetTheNetworkParameters) {
    const cli::Evidence e = evidence({kSeed004});
    ASSERT_EQ(e.networks.size(), 2u);  // 4 EFA and sockets; the 1-adapter row is left out
    const CostModel prior(Catalog::built_in(), Calibration::data_free_prior());
    const CalibrationFit fit = fit_calibration(prior, {}, e.networks);
    // p4d.24xlarge: 400 Gb/s = 50 GB/s of line rate; the measured bus bandwidths are 42.03 and 2.38 GB/s.
    EXPECT_NEAR(fit.calibration.network.fabric(Interconnect::efa).efficiency * 50.0, 42.03, 0.05 * 42.03);
    EXPECT_NEAR(fit.calibration.network.fabric(Interconnect::tcp).cap_GBps, 2.38, 0.05 * 2.38);
}

TEST(Fit, ACalibrationRoundTripsWithItsCovariance) {
    const CostModel prior(Catalog::built_in(), Calibration::built_in());
    const CalibrationFit fit = fit_calibration(prior, evidence({kSeed001}).runs, {});
    const Calibration& c = fit.calibration;
    ASSERT_FALSE(c.uncertainty.parameters.empty());
    EXPECT_EQ(c.uncertainty.covariance.size(), c.uncertainty.parameters.size() * c.uncertainty.parameters.size());
    for (const std::string& name : c.uncertainty.parameters) {
        ParameterId id;
        EXPECT_TRUE(find_parameter(c, name, &id)) << name;
    }
    const Calibration back = Calibration::parse(c.to_json(), "round trip");
    EXPECT_EQ(back.uncertainty.parameters, c.uncertainty.parameters);
    EXPECT_DOUBLE_EQ(back.uncertainty.model_sigma, c.uncertainty.model_sigma);
    const CostModel a(prior, c);
    const CostModel b(prior, back);
    Scenario s;
    s.nodes = 16;
    EXPECT_NEAR(a.predict(s).throughput_images_per_s, b.predict(s).throughput_images_per_s, 1e-6);
    EXPECT_NEAR(a.predict(s).interval.low, b.predict(s).interval.low, 1e-3);
}

TEST(Fit, NothingToFitOrAnUnknownParameterIsAnInputError) {
    const CostModel prior(Catalog::built_in(), Calibration::built_in());
    EXPECT_THROW(fit_calibration(prior, {}, {}), InputError);
    Calibration c = Calibration::built_in();
    c.uncertainty.parameters = {"network.no_such_parameter"};
    c.uncertainty.covariance = {0.01};
    EXPECT_THROW(CostModel(Catalog::built_in(), c), InputError);
}

TEST(Parameters, NamesAndCoordinatesRoundTrip) {
    const Calibration c = Calibration::built_in();
    for (const ParameterId id : all_parameters(c)) {
        ParameterId found;
        ASSERT_TRUE(find_parameter(c, parameter_name(c, id), &found));
        EXPECT_EQ(found, id);
        const double value = parameter_value(c, id);
        const Coordinate coordinate = coordinate_of(id.kind);
        if (value > 0 && value < 1) {
            EXPECT_NEAR(from_coordinate(coordinate, to_coordinate(coordinate, value)), value, 1e-12);
        }
    }
    EXPECT_EQ(parameter_name(c, {ParameterKind::sync_jitter, static_cast<int>(Framework::mxnet)}),
              "frameworks.mxnet.sync_jitter");
    EXPECT_EQ(parameter_name(c, {ParameterKind::curve_time_per_image, 0}),
              "compute[V100-SXM2-16GB/amp/tensorflow].time_per_image_s");
}

}  // namespace
}  // namespace epochcast

namespace epochcast {
namespace {

// Issue 23: after calibrate, no parameter's uncertainty exceeds its prior's. The runs' scatter
// inflates only what the runs say; a parameter they do not touch keeps its prior's width.
TEST(Fit, NoParameterComesOutMoreUncertainThanItsPrior) {
    const CostModel data_free(Catalog::built_in(), Calibration::data_free_prior());
    const CostModel built_in(Catalog::built_in(), Calibration::built_in());
    const std::vector<std::pair<const CostModel*, std::vector<std::string>>> cases = {
        {&data_free, {kSeed001 + "#0", kSeed001 + "#1"}},
        {&data_free, {kK80 + "#0", kK80 + "#1"}},
        {&built_in, {kK80 + "#5", kK80 + "#6"}},  // batch 32: the runs disagree with the prior
        {&data_free, {kSeed000, kSeed001, kSeed004}},
    };
    for (const auto& [prior, files] : cases) {
        const cli::Evidence e = evidence(files);
        const CalibrationFit fit = fit_calibration(*prior, e.runs, e.networks);
        ASSERT_FALSE(fit.parameters.empty());
        for (const FittedParameter& p : fit.parameters) {
            EXPECT_LE(p.sigma, p.prior_sigma * (1 + 1e-9)) << files.front() << ": " << p.name;
        }
    }
}

}  // namespace
}  // namespace epochcast
