// The limits epochcast models (issue 25, "Limits where input enters"): resolve() refuses a
// scenario past them by the flag and the limit, counts and their products stay exact at the
// limits, and check_prediction() refuses any figure that is not finite and non-negative.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <limits>
#include <string>

#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/plan.hpp"
#include "model/text_io.hpp"
#include "model/whatif.hpp"
#include "tests/support/temp_file.hpp"

namespace epochcast {
namespace {

const CostModel& model() {
    static const CostModel instance(Catalog::built_in(), Calibration::built_in());
    return instance;
}

/// The message resolve() throws for `scenario` (empty when it resolves).
std::string refusal(const Scenario& scenario) {
    try {
        model().resolve(scenario);
    } catch (const InputError& error) {
        return error.what();
    }
    return "";
}

bool contains(const std::string& text, const std::string& fragment) { return text.find(fragment) != std::string::npos; }

TEST(Limits, NodesPastTheLimitAreRefusedByFlagAndLimit) {
    Scenario s;
    s.nodes = INT_MAX;
    EXPECT_EQ(refusal(s), "--nodes 2147483647 is more than the 100,000 nodes epochcast models");
    s.nodes = 8'388'608;  // gave global_batch 0 and time_to_train_s null
    EXPECT_TRUE(contains(refusal(s), "--nodes 8388608 is more than the 100,000 nodes")) << refusal(s);
    s.nodes = 100'000'000;  // gave -135,837 img/s and -$404,794,663.80
    EXPECT_TRUE(contains(refusal(s), "--nodes 100000000")) << refusal(s);
    s.nodes = 0;
    EXPECT_EQ(refusal(s), "--nodes must be at least 1 (got 0)");
}

TEST(Limits, AtTheNodeLimitCountsAreExactAndEveryFigureFiniteAndNonNegative) {
    // 100,000 single-GPU nodes at batch 8: 800,000 images per iteration, within ImageNet's 1,281,167.
    Scenario s;
    s.instance = "p3.2xlarge";
    s.strategy = Strategy::ring;
    s.nodes = kMaxNodes;
    s.batch_per_gpu = 8;
    const Prediction p = model().checked_predict(s);
    EXPECT_EQ(p.gpus, 100'000);
    EXPECT_EQ(p.global_batch, 800'000);
    for (const PredictionFigure& figure : kPredictionFigures) {
        const double value = figure.get(p);
        EXPECT_TRUE(std::isfinite(value) && value >= 0) << figure.name << " " << value;
    }
    EXPECT_GT(p.throughput_images_per_s, 0);
    EXPECT_GT(p.cost_usd, 0);
}

TEST(Limits, EveryCountOfTheScenarioHasAFloorAndACeilingNamingItsFlag) {
    struct Case {
        void (*set)(Scenario&);
        const char* message;
    };
    const Case cases[] = {
        {[](Scenario& s) { s.image_size = INT_MAX; },
         "--image-size 2147483647 is more than the 4,096 px epochcast models"},
        {[](Scenario& s) { s.classes = 0; }, "--classes must be at least 1 (got 0)"},
        {[](Scenario& s) { s.classes = 1'000'001; }, "--classes 1000001 is more than the 1,000,000 classes"},
        {[](Scenario& s) { s.dataset_images = 0; }, "--dataset-images must be at least 1 (got 0)"},
        {[](Scenario& s) { s.dataset_images = INT64_MAX; }, "--dataset-images 9223372036854775807 is more than the"},
        {[](Scenario& s) { s.batch_per_gpu = 0; }, "--batch-per-gpu must be at least 1 (got 0)"},
        {[](Scenario& s) { s.batch_per_gpu = INT_MAX; }, "--batch-per-gpu 2147483647 is more than the 1,000,000"},
        {[](Scenario& s) { s.global_batch = -5; }, "--global-batch must be at least 1 (got -5)"},
        {[](Scenario& s) { s.global_batch = INT_MAX; }, "--global-batch 2147483647 is more than the 100,000,000"},
        {[](Scenario& s) { s.gpus_per_node = -1; }, "--gpus-per-node must be at least 1 (got -1)"},
        {[](Scenario& s) { s.gpus_per_node = INT_MAX; }, "--gpus-per-node 2147483647 is more than the 1,024"},
        {[](Scenario& s) { s.epochs = 1e15; }, "--epochs 1e+15 is more than the 10,000 epochs epochcast models"},
        {[](Scenario& s) { s.epochs = 1e308; }, "--epochs 1e+308 is more than the 10,000 epochs"},
        {[](Scenario& s) { s.epochs = std::numeric_limits<double>::infinity(); },
         "--epochs must be a finite number (got inf)"},
        {[](Scenario& s) { s.epochs = std::nan(""); }, "--epochs must be a finite number"},
        {[](Scenario& s) { s.epochs = -3; }, "--epochs must be positive (got -3)"},
        {[](Scenario& s) { s.efa_adapters = -2; }, "--efa-adapters must be 0 or more (got -2)"},
        {[](Scenario& s) { s.efa_adapters = INT_MAX; },
         "--efa-adapters 2147483647 is more than the 64 adapters per node"},
        {[](Scenario& s) { s.ps_nodes = -1; }, "--ps-nodes must be at least 0 (got -1)"},
        {[](Scenario& s) {
             s.strategy = Strategy::ps;
             s.ps_instance = "m4.16xlarge";
             s.ps_nodes = INT_MAX;
         },
         "--ps-nodes 2147483647 is more than the 100,000 server nodes"},
    };
    for (const Case& c : cases) {
        Scenario s;
        c.set(s);
        const std::string message = refusal(s);
        EXPECT_TRUE(contains(message, c.message)) << "expected '" << c.message << "', got '" << message << "'";
    }
    Scenario at_limit;
    at_limit.epochs = kMaxEpochs;
    EXPECT_EQ(refusal(at_limit), "");
}

// The flags that only go together are refused by check_scenario_flags, before any look-up: an
// instance the catalog does not have is not what the message names. Each case is the scenario's
// flags alone; the same scenario with the flags set right resolves.
TEST(Limits, FlagsThatGoTogetherAreRefusedBeforeAnyLookUp) {
    struct Case {
        void (*set)(Scenario&);
        const char* message;
    };
    const Case cases[] = {
        {[](Scenario& s) { s.ps_nodes = 2; },
         "--ps-nodes, --ps-instance and --ps-colocated go with --strategy ps (strategy is nccl)"},
        {[](Scenario& s) { s.ps_colocated = true; }, "go with --strategy ps"},
        {[](Scenario& s) { s.strategy = Strategy::ps; }, "--strategy ps needs parameter servers"},
        {[](Scenario& s) {
             s.strategy = Strategy::ps;
             s.ps_colocated = true;
             s.ps_nodes = 2;
         },
         "--ps-colocated puts one server on each worker: leave out --ps-nodes"},
        {[](Scenario& s) {
             s.strategy = Strategy::ps;
             s.ps_nodes = 2;
         },
         "--strategy ps with --ps-nodes needs --ps-instance"},
        {[](Scenario& s) { s.storage_tib = 2.4; },
         "--storage-tib and --storage-tier go with --storage fsx-lustre (got --storage none)"},
        {[](Scenario& s) {
             s.storage = Store::s3;
             s.storage_tier_MBps_per_TiB = 250;
         },
         "(got --storage s3)"},
        {[](Scenario& s) { s.spot_elastic = true; }, "--elastic-spot needs --pricing spot"},
        {[](Scenario& s) {
             s.spot_elastic = true;
             s.pricing = Pricing::spot;
             s.nodes = 1;
         },
         "--elastic-spot needs 2 nodes or more"},
        {[](Scenario& s) {
             s.spot_elastic = true;
             s.pricing = Pricing::spot;
             s.nodes = 4;
             s.strategy = Strategy::ps;
             s.ps_nodes = 2;
             s.ps_instance = "m4.16xlarge";
         },
         "--elastic-spot needs no dedicated parameter servers"},
    };
    for (const Case& c : cases) {
        Scenario s;
        c.set(s);
        s.instance = "no-such-instance";
        try {
            check_scenario_limits(s);
            ADD_FAILURE() << "accepted: " << c.message;
        } catch (const InputError& error) {
            EXPECT_TRUE(contains(error.what(), c.message)) << error.what();
        }
        EXPECT_TRUE(contains(refusal(s), c.message)) << refusal(s);
    }
    // Set right, they resolve.
    Scenario ps;
    ps.instance = "p3.16xlarge";
    ps.nodes = 4;
    ps.strategy = Strategy::ps;
    ps.ps_colocated = true;
    ps.framework = Framework::mxnet;
    EXPECT_EQ(refusal(ps), "");
    Scenario store;
    store.storage = Store::fsx_lustre;
    store.storage_tib = 2.4;
    EXPECT_EQ(refusal(store), "");
    Scenario elastic;
    elastic.nodes = 4;
    elastic.pricing = Pricing::spot;
    elastic.spot_elastic = true;
    EXPECT_EQ(refusal(elastic), "");
}

TEST(Limits, AHugeImageIsRefusedAndTheLargestOneDoesNotFitRatherThanGoNegative) {
    Scenario s;
    s.instance = "p3.16xlarge";  // 16 GiB V100s
    s.image_size = INT_MAX;      // gave a negative memory per GPU, so the memory check passed
    EXPECT_THROW(model().resolve(s), InputError);
    s.image_size = kMaxImageSizePx;
    s.batch_per_gpu = 1;
    try {
        model().resolve(s);
        FAIL() << "a 4096 px image should not fit a 16 GiB V100";
    } catch (const InfeasibleError& error) {
        EXPECT_TRUE(contains(error.what(), "not even a batch of 1 fits")) << error.what();
    }
    EXPECT_THROW(build_resnet("resnet50", kMaxImageSizePx + 1, 1000), InputError);
    EXPECT_THROW(build_resnet("resnet50", 224, kMaxClasses + 1), InputError);
}

TEST(Limits, AGlobalBatchPastItsLimitIsRefusedEvenWhenEachFactorIsWithinIts) {
    // 100,000 nodes x 8 GPUs x 256 images: 204,800,000 per iteration, past the 100,000,000 an int
    // of the Prediction holds with room to spare, on a dataset large enough not to refuse it first.
    Scenario s;
    s.nodes = kMaxNodes;
    s.dataset_images = kMaxDatasetImages;
    const std::string message = refusal(s);
    EXPECT_TRUE(contains(message, "a global batch of 204,800,000 images")) << message;
    EXPECT_TRUE(contains(message, "more than the 100,000,000 images per iteration")) << message;
}

TEST(Limits, CheckPredictionRefusesWhatIsNotFiniteOrNegativeNamingTheFigure) {
    const Prediction good = model().predict(Scenario{});
    EXPECT_NO_THROW(check_prediction(good));
    auto message = [](const Prediction& p) {
        try {
            check_prediction(p);
        } catch (const InfeasibleError& error) {
            return std::string(error.what());
        }
        return std::string();
    };
    Prediction p = good;
    p.cost_usd = std::numeric_limits<double>::infinity();
    EXPECT_EQ(message(p), "the model gives cost_usd inf for this scenario, not a finite, non-negative figure");
    p = good;
    p.time_to_train_s = -1.66e14;
    EXPECT_TRUE(contains(message(p), "time_to_train_s -1.66e+14")) << message(p);
    p = good;
    p.epoch_s = std::nan("");
    EXPECT_TRUE(contains(message(p), "epoch_s")) << message(p);
    p = good;
    p.global_batch = 0;
    p.throughput_images_per_s = 0;
    p.interval = {0, 0};
    EXPECT_EQ(message(p), "the model gives no throughput for this scenario");
    p = good;
    p.interval.high = std::numeric_limits<double>::infinity();
    EXPECT_TRUE(contains(message(p), "no finite throughput band")) << message(p);
    p = good;
    p.interval.low = 2 * p.throughput_images_per_s;
    EXPECT_TRUE(contains(message(p), "does not hold the throughput")) << message(p);
}

TEST(Limits, ACovarianceBeyondADoubleGivesNoBandButARefusal) {
    // A calibration whose covariance holds 1e308 printed the band as "0 - -0".
    Calibration calibration = Calibration::built_in();
    ASSERT_FALSE(calibration.uncertainty.covariance.empty());
    for (double& entry : calibration.uncertainty.covariance) entry = 1e308;
    // From a file, the parser refuses it (a variance past 100, docs/model.md); in memory, the last
    // check before a prediction reaches a user refuses the band it gives.
    const testing::TempFile file(calibration.to_json());
    try {
        Calibration::load(file.path());
        FAIL() << "a covariance of 1e308 was loaded";
    } catch (const InputError& error) {
        EXPECT_TRUE(contains(error.what(), "uncertainty.covariance has a variance of 1e+308")) << error.what();
    }
    const CostModel huge(Catalog::built_in(), calibration);
    // Compute-bound, so that the band rests on the fitted parameters: PyTorch's decode rate is not
    // among them, and a run its input pipeline bounds keeps that rate's prior band.
    Scenario s;
    s.loader = Loader::synthetic;
    const ResolvedScenario resolved = huge.resolve(s);
    EXPECT_FALSE(std::isfinite(huge.predict(resolved).interval.high));
    try {
        huge.checked_predict(resolved);
        FAIL() << "the band is not finite";
    } catch (const InfeasibleError& error) {
        EXPECT_TRUE(contains(error.what(), "no finite throughput band")) << error.what();
    }
}

TEST(Limits, FormatCountIsSafeForAnyDouble) {
    EXPECT_EQ(format_count(34560), "34,560");
    EXPECT_EQ(format_count(-1234567), "-1,234,567");
    EXPECT_EQ(format_count(374041862194.0), "374,041,862,194");
    EXPECT_EQ(format_count(1e308), "1e+308");
    EXPECT_EQ(format_count(-1e300), "-1e+300");
    EXPECT_EQ(format_count(9.3e18), "9.3e+18");
    EXPECT_EQ(format_count(1e20), "1e+20");  // llround(1e20) is LLONG_MIN, whose negation overflowed
    EXPECT_EQ(format_count(-1e20), "-1e+20");
    EXPECT_EQ(format_count(0.4), "0");
    EXPECT_EQ(format_count(std::numeric_limits<double>::infinity()), "inf");
    EXPECT_EQ(format_count(-std::numeric_limits<double>::infinity()), "-inf");
    EXPECT_EQ(format_count(std::nan("")), "nan");
}

TEST(Limits, GroupThousandsGroupsOnlyTheIntegerPart) {
    EXPECT_EQ(group_thousands("1234567.25"), "1,234,567.25");
    EXPECT_EQ(group_thousands("-1234.5678"), "-1,234.5678");  // the decimals stay ungrouped
    EXPECT_EQ(group_thousands("100000"), "100,000");
    EXPECT_EQ(group_thousands("999"), "999");
    EXPECT_EQ(group_thousands("-999.5"), "-999.5");
    EXPECT_EQ(group_thousands(""), "");
}

TEST(Limits, DoublingLoopsStopAtAnyIntWithoutOverflow) {
    const std::vector<int> all = powers_of_two_up_to(INT_MAX);
    ASSERT_EQ(all.size(), 31u);
    EXPECT_EQ(all.back(), 1 << 30);
    EXPECT_EQ(powers_of_two_up_to(6), (std::vector<int>{1, 2, 4}));
    EXPECT_TRUE(powers_of_two_up_to(0).empty());

    // plan-calibration --max-nodes 1073741824 looped forever (nodes *= 2 overflowed).
    Scenario target;
    target.nodes = 4;
    PlanOptions options;
    options.max_nodes = 1 << 30;
    try {
        plan_calibration(model(), target, options);
        FAIL() << "--max-nodes past the limit should be refused";
    } catch (const InputError& error) {
        EXPECT_STREQ(error.what(), "--max-nodes 1073741824 is more than the 100,000 nodes epochcast models");
    }
    EXPECT_THROW(scaling_curve(model(), target, INT_MAX), InputError);
    EXPECT_THROW(across_instances(model(), target, INT_MAX), InputError);
}

TEST(Limits, ServerCountsScaledFromARatioClampInsteadOfOverflowing) {
    EXPECT_EQ(clamped_count(3.0), 3);
    EXPECT_EQ(clamped_count(1e10), kMaxNodes + 1);
    EXPECT_EQ(clamped_count(std::nan("")), kMaxNodes + 1);
    // 100,000 servers for one worker, grown to 100,000 workers: 10^10 servers, past an int.
    Scenario s;
    s.strategy = Strategy::ps;
    s.ps_instance = "m4.16xlarge";
    s.nodes = 1;
    s.ps_nodes = kMaxNodes;
    const Scenario grown = with_nodes(s, kMaxNodes);
    EXPECT_EQ(grown.ps_nodes, kMaxNodes + 1);
    EXPECT_TRUE(contains(refusal(grown), "--ps-nodes 100001 is more than the 100,000 server nodes")) << refusal(grown);
}

}  // namespace
}  // namespace epochcast
