// Calibration by fitting (model/fit.hpp) against the published traces: the leave-one-out error
// over the seeds' throughputs, extrapolation from one node to many, and honest intervals; and the
// all-reduce model (model/collectives.hpp) against the published NCCL tables. A CLI test because
// the traces are read by the CLI's evidence loader (cli/common.hpp), as `epochcast calibrate` reads them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "model/calibration.hpp"
#include "model/collectives.hpp"
#include "model/errors.hpp"
#include "model/fit.hpp"
#include "model/holdout.hpp"
#include "model/parameters.hpp"

namespace epochcast {
namespace {

const std::string kPublished = EPOCHCAST_SOURCE_DIR "/traces/published/";
const std::string kSeed000 = kPublished + "seed000_multi_node_mxnet_tensorflow.json";
const std::string kSeed001 = kPublished + "seed001_horovod_256_gpus.json";
const std::string kSeed004 = kPublished + "seed004_pytorch_eks_efa.json";
const std::string kK80 = kPublished + "external_tf_benchmarks_k80_distributed.json";

Evidence evidence(const std::vector<std::string>& files) { return cli::load_evidence(files, Catalog::built_in()); }

double error(double predicted, double measured) { return predicted / measured - 1.0; }

TEST(Fit, LeaveOneOutErrorOverTheSeedThroughputsIsAtMostFivePercent) {
    const Evidence e = evidence({kSeed000, kSeed001, kSeed004});
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

// Issue 57, item 8: from the data-free prior +6.0% at 32 GPUs and +7.1% at 256; from the built-in
// calibration +6.5% and +8.1% (it was +7.8% and +11.8% at 73d6b7f). The two-run check of
// docs/validation.md, whose prior is fitted to every other system first, is not this test: there
// TensorFlow's sync jitter comes from seed 000 (0.041 against the prior's 0.127), and the 256-GPU
// run is +14.4%.
TEST(Fit, SeedOneOneNodeRunsPredictItsThirtyTwoAndTwoHundredFiftySixGpuRunsWithinTenPercent) {
    const Evidence calibration_runs = evidence({kSeed001 + "#0", kSeed001 + "#1"});
    const Evidence all = evidence({kSeed001});
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
    const Evidence all = evidence({kK80});
    ASSERT_GE(all.runs.size(), 5u);
    // From the data-free prior: the built-in calibration was fitted to these very runs.
    const CostModel prior(Catalog::built_in(), Calibration::data_free_prior());
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
    const Catalog catalog = Catalog::built_in();
    const ComputeCurve* curve = own_curve(fit.calibration.compute, catalog, catalog.gpu("K80"), Precision::fp32,
                                          Software{Framework::tensorflow, SoftwareStack::legacy})
                                    .curve;
    ASSERT_NE(curve, nullptr);
    EXPECT_NEAR(curve->time_per_image_s, 0.0188, 0.001);
}

TEST(Fit, TheBandWidensFarFromTheCalibrationRuns) {
    const CostModel prior(Catalog::built_in(), Calibration::built_in());
    const CalibrationFit fit = fit_calibration(prior, evidence({kSeed001 + "#0", kSeed001 + "#1"}).runs, {});
    const CostModel model(prior, fit.calibration);
    auto relative_band = [&](int nodes, int gpus) {
        // The runs' own set-up: TensorFlow + Horovod on p3.16xlarge, the 2018 releases.
        Scenario s;
        s.instance = "p3.16xlarge";
        s.framework = Framework::tensorflow;
        s.stack = SoftwareStack::legacy;
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
    const Evidence e = evidence({kSeed004});
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
    const Catalog catalog = Catalog::built_in();
    const GpuSpec& v100 = catalog.gpu("V100-SXM2-16GB");
    // A curve's name says its stack and layout where they are not the current stack's channels_last.
    auto curve_index = [&](const Software& software) {
        const ComputeCurve* curve = own_curve(c.compute, catalog, v100, Precision::amp, software).curve;
        return curve ? static_cast<int>(curve - c.compute.data()) : -1;
    };
    const int current = curve_index(Software{Framework::pytorch, SoftwareStack::current});
    const int nchw = curve_index(Software{Framework::tensorflow, SoftwareStack::current, MemoryFormat::nchw});
    const int legacy = curve_index(Software{Framework::tensorflow, SoftwareStack::legacy});
    ASSERT_GE(current, 0);
    ASSERT_GE(nchw, 0);
    ASSERT_GE(legacy, 0);
    EXPECT_EQ(parameter_name(c, {ParameterKind::curve_time_per_image, current}),
              "compute[V100-SXM2-16GB/amp/pytorch].time_per_image_s");
    EXPECT_EQ(parameter_name(c, {ParameterKind::curve_time_per_image, nchw}),
              "compute[V100-SXM2-16GB/amp/tensorflow/nchw].time_per_image_s");
    EXPECT_EQ(parameter_name(c, {ParameterKind::curve_fixed, legacy}),
              "compute[V100-SXM2-16GB/amp/tensorflow/legacy].fixed_s");
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
        const Evidence e = evidence(files);
        const CalibrationFit fit = fit_calibration(*prior, e.runs, e.networks);
        ASSERT_FALSE(fit.parameters.empty());
        for (const FittedParameter& p : fit.parameters) {
            EXPECT_LE(p.sigma, p.prior_sigma * (1 + 1e-9)) << files.front() << ": " << p.name;
        }
    }
}

// Issue 57: every prior sigma is the documented one. The decode rates' is the prior calibration's
// input_pipeline.relative_sigma (0.3 in log, docs/model.md eq. D1), the same in the fit as in the
// band a prediction from that prior shows; the fit held them to 0.5 (calibrate printed 64.9 %).
TEST(Fit, ADecodeRatesPriorIsTheCalibrationsOwnSigma) {
    const Calibration prior = Calibration::data_free_prior();
    ASSERT_DOUBLE_EQ(prior.decode_relative_sigma, 0.3);
    const CostModel data_free(Catalog::built_in(), prior);
    const Evidence e = evidence({kSeed001});  // TensorFlow's CPU loader at 256 GPUs
    const CalibrationFit fit = fit_calibration(data_free, e.runs, e.networks);
    int decode_rates = 0;
    for (const FittedParameter& p : fit.parameters) {
        if (p.name.find("decode_images_per_s") == std::string::npos) continue;
        EXPECT_DOUBLE_EQ(p.prior_sigma, prior.decode_relative_sigma) << p.name;
        ++decode_rates;
    }
    EXPECT_GE(decode_rates, 1);
}

}  // namespace
}  // namespace epochcast

namespace epochcast {
namespace {

// Issue 23: the built-in calibration is fitted to the corpus, so it is a posterior. A user's runs
// fitted on top of it narrow what they touch (never beyond the corpus's width) and leave the rest
// with the corpus's variance.
TEST(Fit, FromTheCorpusFitWhatTheRunsTouchNarrowsAndTheRestKeepsItsVariance) {
    const Calibration corpus = Calibration::built_in();
    ASSERT_FALSE(corpus.uncertainty.parameters.empty());
    const CostModel prior(Catalog::built_in(), corpus);
    const Evidence e = evidence({kK80 + "#0", kK80 + "#1"});
    const CalibrationFit fit = fit_calibration(prior, e.runs, {});
    auto variance = [](const Uncertainty& u, const std::string& name) {
        const auto found = std::find(u.parameters.begin(), u.parameters.end(), name);
        if (found == u.parameters.end()) return -1.0;
        const auto i = static_cast<std::size_t>(found - u.parameters.begin());
        return u.covariance[i * u.parameters.size() + i];
    };
    for (const FittedParameter& p : fit.parameters) {
        const double before = variance(corpus.uncertainty, p.name);
        if (before > 0) {
            EXPECT_LE(p.sigma, std::sqrt(before) * (1 + 1e-9)) << p.name;
        }
        EXPECT_LE(p.sigma, p.prior_sigma * (1 + 1e-9)) << p.name;
    }
    // A100 curves: no K80 run touches them; they keep the corpus's variance.
    int kept = 0;
    for (const std::string& name : corpus.uncertainty.parameters) {
        if (name.find("A100") == std::string::npos) continue;
        EXPECT_DOUBLE_EQ(variance(fit.calibration.uncertainty, name), variance(corpus.uncertainty, name)) << name;
        ++kept;
    }
    EXPECT_GT(kept, 0);
}

/// A curve of one GPU, amp, current stack.
ComputeCurve amp_curve(const char* gpu, Framework f, double time_per_image_s) {
    ComputeCurve k;
    k.gpu = gpu;
    k.precision = Precision::amp;
    k.framework = f;
    k.time_per_image_s = time_per_image_s;
    k.fixed_s = 0.01;
    k.relative_sigma = 0.05;
    return k;
}

/// Eq. C3's time per image of ResNet-50 at amp on an instance's GPU: what a model with no curve
/// at all resolves.
double roofline_of(const std::string& instance) {
    Calibration none = Calibration::data_free_prior();
    none.compute.clear();
    Scenario s;
    s.instance = instance;
    s.nodes = 1;
    return CostModel(Catalog::built_in(), none).resolve(s).time_per_image_s;
}

/// Eq. C3's time per image of ResNet-50 at `precision` on an instance's GPU.
double roofline_of(const std::string& instance, Precision precision) {
    Calibration none = Calibration::data_free_prior();
    none.compute.clear();
    Scenario s;
    s.instance = instance;
    s.nodes = 1;
    s.precision = precision;
    return CostModel(Catalog::built_in(), none).resolve(s).time_per_image_s;
}

/// One DGX H100 under MXNet, which no curve below measured.
Scenario h100_mxnet() {
    Scenario s;
    s.instance = "dgx-h100";
    s.nodes = 1;
    s.framework = Framework::mxnet;
    return s;
}

/// Eq. C5's line through mxnet curves at 1.1 and 0.9 times the V100's and A100's roofline times:
/// the factor (least squares of (a r_i) / t_i = 1 over x_i = r_i / t_i: a = sum x / sum x^2) and
/// the line's sigma (the roofline prior's sigma as one more residual, over 1 + 1).
struct TwoPointLine {
    double factor = 0;
    double sigma = 0;
};
TwoPointLine two_point_line(double roofline_sigma) {
    const double x1 = 1 / 1.1, x2 = 1 / 0.9, factor = (x1 + x2) / (x1 * x1 + x2 * x2);
    return {factor, std::sqrt((roofline_sigma * roofline_sigma + std::pow(std::log(factor / 1.1), 2) +
                               std::pow(std::log(factor / 0.9), 2)) /
                              2)};
}

// Eq. C4: a GPU without a curve under this framework, whose framework has no curve on any other
// GPU, borrows another framework's on the same GPU, scaled by the ratio the two frameworks show
// on the GPUs where both were measured.
TEST(Fit, ABorrowedCurveCarriesTheFrameworkRatioSeenOnOtherGpus) {
    Calibration c = Calibration::data_free_prior();
    c.compute = {amp_curve("V100-SXM2-16GB", Framework::tensorflow, 1.0e-3),
                 amp_curve("V100-SXM2-16GB", Framework::pytorch, 1.2e-3),
                 amp_curve("A100-SXM4-80GB", Framework::tensorflow, 0.4e-3),
                 amp_curve("A100-SXM4-80GB", Framework::pytorch, 0.6e-3),
                 amp_curve("H100-SXM5-80GB", Framework::pytorch, 0.3e-3)};
    const double ratio = std::sqrt(1.0 / 1.2 * 0.4 / 0.6);
    const TransferRatio transfer =
        transfer_ratio(c.compute, Catalog::built_in(), c.compute[4], Software{Framework::tensorflow}, Precision::amp);
    EXPECT_NEAR(transfer.ratio, ratio, 1e-12);
    EXPECT_EQ(transfer.chips, 2);
    // The two GPUs' log ratios, -0.182 and -0.405, scatter by 0.158 (sample standard deviation).
    EXPECT_NEAR(transfer.relative_sigma, std::abs(std::log(1.0 / 1.2) - std::log(0.4 / 0.6)) / std::sqrt(2.0), 1e-12);
    // Without the tensorflow curves, pytorch's curve on the H100 is the only evidence: eq. C4 alone.
    Calibration alone = c;
    alone.compute = {c.compute[1], c.compute[3], c.compute[4]};
    const CostModel model(Catalog::built_in(), alone);
    const ResolvedScenario r = model.resolve(h100_mxnet());
    EXPECT_EQ(r.curve_origin, CurveOrigin::other_software);
    EXPECT_NEAR(r.time_per_image_s, 0.3e-3, 1e-12);  // no GPU with both: the ratio is 1
    EXPECT_NEAR(r.transfer_sigma, kSoftwareTransferSigma, 1e-12);
    // MXNet's launches are its own: with no MXNet curve at several batches its fixed time is eq.
    // C1b's at every framework's level (PyTorch's three curves' here), not PyTorch's 10 ms.
    const Catalog& catalog = Catalog::built_in();
    const double level =
        std::cbrt(0.01 / (catalog.gpu("V100-SXM2-16GB").sms * 1.2e-3) * 0.01 /
                  (catalog.gpu("A100-SXM4-80GB").sms * 0.6e-3) * 0.01 / (catalog.gpu("H100-SXM5-80GB").sms * 0.3e-3));
    EXPECT_NEAR(r.fixed_s, level * catalog.gpu("H100-SXM5-80GB").sms * r.time_per_image_s, 1e-12);
}

// Eq. C1c: a sibling measured at one batch b0 lends what it measured, its time at b0 (times eq.
// C4's ratio, 1 here: no GPU has both frameworks in amp), and this framework's half-saturation
// batch splits it. PyTorch's curves at several batches give it 0.127 images per SM, MXNet's fp32
// curve 0.25: carried with PyTorch's split and then given MXNet's fixed time, the time at b0 would
// have grown by (b_mxnet + b0) / (b_pytorch + b0).
TEST(Fit, ASiblingMeasuredAtOneBatchLendsItsTimeThere) {
    const Catalog& catalog = Catalog::built_in();
    const int v100_sms = catalog.gpu("V100-SXM2-16GB").sms, a100_sms = catalog.gpu("A100-SXM4-80GB").sms;
    const int h100_sms = catalog.gpu("H100-SXM5-80GB").sms;
    ASSERT_GT(v100_sms * a100_sms * h100_sms, 0);
    Calibration c = Calibration::data_free_prior();
    ComputeCurve h100 = amp_curve("H100-SXM5-80GB", Framework::pytorch, 0.3e-3);
    h100.fixed_s = 0.005;
    h100.measured_batch = 256;
    ComputeCurve mxnet_fp32 = amp_curve("V100-SXM2-16GB", Framework::mxnet, 2.0e-3);
    mxnet_fp32.precision = Precision::fp32;
    mxnet_fp32.fixed_s = 0.04;
    c.compute = {amp_curve("V100-SXM2-16GB", Framework::pytorch, 1.2e-3),
                 amp_curve("A100-SXM4-80GB", Framework::pytorch, 0.6e-3), h100, mxnet_fp32};
    const double pytorch_per_sm = std::sqrt(0.01 / (v100_sms * 1.2e-3) * 0.01 / (a100_sms * 0.6e-3));
    const double mxnet_per_sm = 0.04 / (v100_sms * 2.0e-3);
    ASSERT_GT(mxnet_per_sm - pytorch_per_sm, 0.1);
    const double b0 = 256, at_b0 = 0.005 + b0 * 0.3e-3;
    const double b_half = mxnet_per_sm * h100_sms;

    const CostModel model(catalog, c);
    const ResolvedScenario r = model.resolve(h100_mxnet());
    EXPECT_EQ(r.curve_origin, CurveOrigin::other_software);
    EXPECT_NEAR(r.time_per_image_s, at_b0 / (b_half + b0), 1e-12);
    EXPECT_NEAR(r.fixed_s, b_half * r.time_per_image_s, 1e-12);
    EXPECT_NEAR(r.fixed_s + b0 * r.time_per_image_s, at_b0, 1e-12);
    // The sibling's own split, with PyTorch's half-saturation batch, is not what MXNet takes.
    const double pytorch_split = at_b0 / (pytorch_per_sm * h100_sms + b0);
    EXPECT_GT(std::abs(r.time_per_image_s / pytorch_split - 1), 0.05);
}

// Eq. C4b: TF32 on a chip measured in amp alone is its amp curve carried by the ratio of the two
// families' lines at that chip, with the scatter of the chips measured in both around their lines'
// ratio (root mean square about zero) as its sigma; pooled with the TF32 line (eq. C6). Here the
// amp curves sit on their line (factor 1) and the TF32 curves e^0.1 above and below their
// rooflines: both estimates are the TF32 line at the chip. Eq. C4's geometric mean of the chips'
// measured ratios, at its 30% floor, gave another time and sigma.
TEST(Fit, AnotherPrecisionFamilyOnAChipFollowsTheRatioOfItsLines) {
    Calibration c = Calibration::data_free_prior();
    auto curve = [](const char* gpu, Precision precision, double time_per_image_s) {
        ComputeCurve k = amp_curve(gpu, Framework::pytorch, time_per_image_s);
        k.precision = precision;
        return k;
    };
    const double delta = 0.1;
    c.compute = {
        curve("A100-SXM4-80GB", Precision::amp, roofline_of("p4de.24xlarge", Precision::amp)),
        curve("H100-SXM5-80GB", Precision::amp, roofline_of("dgx-h100", Precision::amp)),
        curve("H100-PCIE-80GB", Precision::amp, roofline_of("lambda-h100-pcie", Precision::amp)),
        curve("A100-SXM4-80GB", Precision::tf32, std::exp(delta) * roofline_of("p4de.24xlarge", Precision::tf32)),
        curve("H100-SXM5-80GB", Precision::tf32, std::exp(-delta) * roofline_of("dgx-h100", Precision::tf32))};
    const CostModel model(Catalog::built_in(), c);
    Scenario s;
    s.instance = "lambda-h100-pcie";
    s.nodes = 1;
    s.precision = Precision::tf32;
    const ResolvedScenario r = model.resolve(s);
    EXPECT_EQ(r.curve_origin, CurveOrigin::pooled);
    // The TF32 line's factor by eq. C5's least squares of relative errors over x = r / t.
    const double x1 = std::exp(-delta), x2 = std::exp(delta), factor = (x1 + x2) / (x1 * x1 + x2 * x2);
    const double tf32 = roofline_of("lambda-h100-pcie", Precision::tf32);
    EXPECT_NEAR(r.time_per_image_s, factor * tf32, 1e-6 * tf32);
    // Both chips stray ln(factor) -+ 0.1 from their lines' ratio, and from the TF32 line alike; the
    // line counts the roofline prior's sigma as one more residual, over 1 + 1.
    const double squares = std::pow(std::log(factor) - delta, 2) + std::pow(std::log(factor) + delta, 2);
    const double line_sigma = std::sqrt((std::pow(c.roofline.relative_sigma, 2) + squares) / 2);
    const double c4b_sigma = std::max(kLineTransferMinSigma, std::sqrt(squares / 2));
    EXPECT_NEAR(r.transfer_sigma, pooled_sigma(c4b_sigma, line_sigma), 1e-6);
}

// Eq. C5: a framework's curves on other GPUs, against those GPUs' roofline times, carry it to a
// GPU it never ran on; two points fit the factor alone (no floor).
TEST(Fit, AGpuWithoutCurvesTakesItsFrameworksRooflineLine) {
    Calibration c = Calibration::data_free_prior();
    const double v100 = roofline_of("p3.16xlarge"), a100 = roofline_of("dgx-a100"), h100 = roofline_of("dgx-h100");
    c.compute = {amp_curve("V100-SXM2-16GB", Framework::mxnet, 1.1 * v100),
                 amp_curve("A100-SXM4-80GB", Framework::mxnet, 0.9 * a100)};
    const CostModel model(Catalog::built_in(), c);
    const ResolvedScenario r = model.resolve(h100_mxnet());
    EXPECT_EQ(r.curve_origin, CurveOrigin::other_gpus);
    const double roofline_sigma = c.roofline.relative_sigma;
    const auto [factor, scatter] = two_point_line(roofline_sigma);
    EXPECT_NEAR(r.time_per_image_s, factor * h100, 1e-9 * h100);
    // The line's sigma rides on the roofline row of the covariance (so that a planned run narrows it).
    const FieldSensitivity& time = r.sensitivity[static_cast<std::size_t>(SensitiveField::time_per_image)];
    EXPECT_EQ(time.parameter, static_cast<int>(model.parameters().size()));
    EXPECT_NEAR(time.log_field_per_coordinate * roofline_sigma, scatter, 1e-9);
    EXPECT_DOUBLE_EQ(r.transfer_sigma, 0.0);
    // The fixed time is the batch that half fills the H100 (eq. C1b) at its time per image: the
    // mxnet curves' images per SM at half saturation, fixed / (SMs x time per image), by their
    // geometric mean, times the H100's SMs.
    const Catalog& catalog = model.catalog();
    const int v100_sms = catalog.gpu("V100-SXM2-16GB").sms, a100_sms = catalog.gpu("A100-SXM4-80GB").sms;
    const int h100_sms = catalog.gpu("H100-SXM5-80GB").sms;
    ASSERT_GT(v100_sms * a100_sms * h100_sms, 0);
    const double per_sm = std::sqrt(0.01 / (v100_sms * 1.1 * v100) * 0.01 / (a100_sms * 0.9 * a100));
    EXPECT_NEAR(r.fixed_s, per_sm * h100_sms * r.time_per_image_s, 1e-9 * r.fixed_s);
    EXPECT_NE(r.fixed_s, c.framework(Framework::mxnet).fixed_overhead_s);
}

// Eq. C6: where both exist, eq. C4's and eq. C5's estimates are pooled by inverse variance.
TEST(Fit, BothBorrowingsArePooledByTheirUncertainties) {
    Calibration c = Calibration::data_free_prior();
    const double v100 = roofline_of("p3.16xlarge"), a100 = roofline_of("dgx-a100"), h100 = roofline_of("dgx-h100");
    c.compute = {amp_curve("V100-SXM2-16GB", Framework::mxnet, 1.1 * v100),
                 amp_curve("A100-SXM4-80GB", Framework::mxnet, 0.9 * a100),
                 amp_curve("H100-SXM5-80GB", Framework::pytorch, 3.0 * h100)};
    const CostModel model(Catalog::built_in(), c);
    const ResolvedScenario r = model.resolve(h100_mxnet());
    EXPECT_EQ(r.curve_origin, CurveOrigin::pooled);
    const auto [factor, line_sigma] = two_point_line(c.roofline.relative_sigma);
    const double w =
        line_sigma * line_sigma / (line_sigma * line_sigma + kSoftwareTransferSigma * kSoftwareTransferSigma);
    EXPECT_NEAR(r.time_per_image_s, std::exp(w * std::log(3.0 * h100) + (1 - w) * std::log(factor * h100)),
                1e-9 * h100);
    EXPECT_NEAR(r.transfer_sigma, pooled_sigma(kSoftwareTransferSigma, line_sigma), 1e-12);
    EXPECT_LT(r.transfer_sigma, line_sigma);
    // The pooled estimate depends on the sibling curve by its weight only.
    EXPECT_NEAR(r.sensitivity[static_cast<std::size_t>(SensitiveField::time_per_image)].log_field_per_coordinate, w,
                1e-12);
}

// A published comparison is fitted: seed 004's epoch-time ratio with and without EFA (0.92-0.95)
// tells PyTorch's overlap, which no absolute run of the seeds measures.
TEST(Fit, APublishedComparisonIsFittedIntoItsRange) {
    const CostModel prior(Catalog::built_in(), Calibration::data_free_prior());
    const Evidence e = evidence({kSeed004});
    ASSERT_EQ(e.comparisons.size(), 1u);
    const double before = predicted_ratio(prior, e.comparisons[0]);
    EXPECT_LT(before, 0.92);
    const CalibrationFit fit = fit_calibration(prior, {}, e.networks, e.comparisons);
    const double after = predicted_ratio(CostModel(prior, fit.calibration), e.comparisons[0]);
    EXPECT_GT(after, 0.92 * 0.97);
    EXPECT_LT(after, 0.95 * 1.03);
}

// The held-out checks: a system's two smallest runs (of two sizes) calibrate, the rest are
// predicted; a system of fewer than three runs is skipped; every run of a system held out whole
// gets a prediction.
TEST(Fit, TwoRunHoldOutCalibratesFromTheSmallestRunsAndPredictsTheRest) {
    const Evidence e = evidence({kSeed001, kSeed000});
    const CostModel prior(Catalog::built_in(), Calibration::data_free_prior());
    const std::vector<HeldOutPrediction> two = held_out_predictions(prior, e.runs, e.networks, {}, HoldOut::two_runs);
    ASSERT_EQ(two.size(), 6u);
    // seed 001 (one system, 4 runs: 4, 8, 32 and 256 GPUs): 4 and 8 calibrate.
    EXPECT_TRUE(two[0].calibration_run && two[1].calibration_run);
    EXPECT_TRUE(two[2].predicted && !two[2].calibration_run);
    // 256 GPUs from 4 and 8, with seed 000's TensorFlow run (the same system, another campaign) in
    // the prior: within 12%.
    EXPECT_LT(std::abs(error(two[3].prediction.throughput_images_per_s, e.runs[3].throughput_images_per_s)), 0.12);
    EXPECT_EQ(two[0].group, held_out_group(e.runs[0], HoldOut::two_runs));
    EXPECT_NE(two[0].group.find("seed001"), std::string::npos);
    // seed 000: one run per system, nothing to predict.
    EXPECT_FALSE(two[4].predicted);
    const std::vector<HeldOutPrediction> unseen = held_out_predictions(prior, e.runs, e.networks, {}, HoldOut::system);
    for (const HeldOutPrediction& h : unseen) EXPECT_TRUE(h.predicted && !h.calibration_run);
    EXPECT_EQ(system_of(e.runs[0].scenario), "p3.16xlarge tensorflow amp legacy");
}

// Under two-runs a system is also its campaign: the same configuration measured by another code
// or table is another user's setup, and stays in the prior; under system it is held out too.
TEST(Fit, TwoRunGroupsAreSystemsOfOneCampaign) {
    Observation a;
    a.origin = "traces/published/x.json#3";
    a.scenario.instance = "dgx-a100";
    a.scenario.framework = Framework::mxnet;
    Observation b = a;
    b.campaign = "MLPerf code";
    EXPECT_EQ(campaign_of(a), "traces/published/x.json");
    EXPECT_EQ(campaign_of(b), "MLPerf code");
    EXPECT_EQ(held_out_group(a, HoldOut::system), held_out_group(b, HoldOut::system));
    EXPECT_NE(held_out_group(a, HoldOut::two_runs), held_out_group(b, HoldOut::two_runs));
    EXPECT_EQ(held_out_group(b, HoldOut::two_runs), system_of(b.scenario) + " (MLPerf code)");
    EXPECT_EQ(held_out_group(a, HoldOut::run), a.origin);
}

// Eq. C1b: the fixed time is measured by one campaign's runs at two batches on one GPU. Two
// campaigns at two batches (two software versions) or two memory variants are not a batch curve:
// their difference is the software's or the memory's, and read as a fixed time it moved the A100's
// TF32 curve to 31.5 ms an iteration (a layout penalty at batch 32 four times that at 256).
TEST(Fit, AFixedTimeIsMeasuredWithinOneCampaignOnOneGpu) {
    const CostModel prior(Catalog::built_in(), Calibration::data_free_prior());
    auto run = [](const std::string& campaign, const std::string& instance, int batch, double images_per_s) {
        Observation o;
        o.origin = "planted.json#" + std::to_string(batch);
        o.campaign = campaign;
        o.scenario.instance = instance;
        o.scenario.nodes = 1;
        o.scenario.gpus_per_node = 1;
        o.scenario.framework = Framework::pytorch;
        o.scenario.precision = Precision::tf32;
        o.scenario.memory_format = MemoryFormat::nchw;
        o.scenario.loader = Loader::synthetic;
        o.scenario.batch_per_gpu = batch;
        o.throughput_images_per_s = images_per_s;
        return o;
    };
    auto a100_tf32 = [&](const std::vector<Observation>& runs) {
        const CalibrationFit fit = fit_calibration(prior, runs, {}, {});
        for (const ComputeCurve& c : fit.calibration.compute) {
            if (c.gpu.starts_with("A100-SXM4") && c.precision == Precision::tf32 && c.framework == Framework::pytorch)
                return c;
        }
        ADD_FAILURE() << "no A100 TF32 curve fitted";
        return ComputeCurve{};
    };
    // Two campaigns (DeepLearningExamples' 2020 container at 256, Lambda's 2022 one at 640): one batch.
    const ComputeCurve two =
        a100_tf32({run("DLE 2020", "dgx-a100", 256, 945), run("Lambda 2022", "dgx-a100", 640, 1066)});
    EXPECT_GT(two.measured_batch, 0);
    // Two memory variants (the 40 GB p4d at 256, the 80 GB p4de at 640) in one campaign: one batch.
    const ComputeCurve variants =
        a100_tf32({run("one table", "p4d.24xlarge", 256, 945), run("one table", "p4de.24xlarge", 640, 1066)});
    EXPECT_GT(variants.measured_batch, 0);
    // One campaign on one GPU at two batches measures the fixed time: t(256) and t(640) on a line.
    const ComputeCurve one =
        a100_tf32({run("one table", "dgx-a100", 256, 945), run("one table", "dgx-a100", 640, 1066)});
    EXPECT_EQ(one.measured_batch, 0);
    const double slope = (640 / 1066.0 - 256 / 945.0) / (640 - 256);
    // The line's own intercept is 51 ms, the prior's fixed time 5 ms known to a factor e: the fit
    // takes most of the line's.
    EXPECT_NEAR(one.time_per_image_s / slope, 1.0, 0.1);
    EXPECT_GT(one.fixed_s, 0.6 * (256 / 945.0 - 256 * slope));
}

// --- the p5 grid, message by message (eq. N3) --------------------------------------------------

TEST(Fabrics, EfaAcrossMessageSizesFromGradientBucketsToThePlateau) {
    // crazyguitar's p5.48xlarge grid (32 MiB, 128 MiB, 1 GiB and 8 GiB at 2 to 32 nodes) and the
    // other published tables of traces/published/external_nccl_tests_fabrics.json, each at its
    // own message size. One protocol (the low-latency one's latency at full bandwidth) put the
    // 32 MiB rows up to 2.3 times too high; with NCCL's two (eq. N3) every row is within 35% and
    // the mean within 10%.
    const Catalog catalog = Catalog::built_in();
    const NetworkParams network = Calibration::built_in().network;
    const Evidence e = cli::load_evidence({kPublished + "external_nccl_tests_fabrics.json"}, catalog);
    ASSERT_GE(e.networks.size(), 25u);
    double sum = 0;
    for (const NetworkObservation& n : e.networks) {
        const double predicted = predict_allreduce(catalog, n, network).bus_bandwidth_GBps;
        const double error = predicted / n.bus_bandwidth_GBps - 1;
        EXPECT_LT(std::abs(error), 0.35) << n.origin << ": " << predicted << " against " << n.bus_bandwidth_GBps;
        sum += std::abs(error);
    }
    EXPECT_LT(sum / static_cast<double>(e.networks.size()), 0.10);
}

}  // namespace
}  // namespace epochcast
