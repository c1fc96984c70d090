// model/sweep: the spec's cross product, its order, the parameter-server, store and spot keys, and
// errors that name the key and the value.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <utility>

#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/storage.hpp"
#include "model/sweep.hpp"
#include "model/text_io.hpp"
#include "tests/support/error_of.hpp"

namespace epochcast {
namespace {

const Catalog& catalog() {
    static const Catalog c = Catalog::built_in();
    return c;
}

SweepSpec parse(const std::string& text) { return parse_sweep_spec(text, "spec.json", catalog()); }

std::string error_of(const std::string& text) {
    try {
        parse(text);
    } catch (const InputError& error) {
        return error.what();
    }
    return "(no error)";
}

TEST(SweepSpec, CrossProductHasOneScenarioPerCombinationLastKeyFastest) {
    const SweepSpec spec = parse(R"({"instance": ["p3.16xlarge", "p3.8xlarge"], "nodes": [1, 2, 4],
                                     "batch_per_gpu": [64, 128], "precision": "fp32"})");
    ASSERT_EQ(spec.combinations(), 12u);
    std::set<std::tuple<std::string, int, int>> seen;
    for (std::size_t i = 0; i < spec.combinations(); ++i) {
        const Scenario s = spec.scenario_at(i, catalog());
        EXPECT_EQ(s.precision, Precision::fp32);
        seen.insert({s.instance, s.nodes, s.batch_per_gpu});
    }
    EXPECT_EQ(seen.size(), 12u);
    // Mixed radix: batch varies fastest, then nodes, then instance.
    EXPECT_EQ(spec.scenario_at(0, catalog()).batch_per_gpu, 64);
    EXPECT_EQ(spec.scenario_at(1, catalog()).batch_per_gpu, 128);
    EXPECT_EQ(spec.scenario_at(2, catalog()).nodes, 2);
    EXPECT_EQ(spec.scenario_at(6, catalog()).instance, "p3.8xlarge");
    EXPECT_EQ(spec.scenario_at(11, catalog()).nodes, 4);
}

TEST(SweepSpec, DefaultsAreTheScenarioDefaultsAndTheStrategyIsNcclsChoice) {
    const SweepSpec spec = parse(R"({"instance": ["p3.16xlarge", "p3.2xlarge"]})");
    ASSERT_EQ(spec.combinations(), 2u);
    const Scenario multi = spec.scenario_at(0, catalog());
    const Scenario single = spec.scenario_at(1, catalog());
    const Scenario defaults;
    EXPECT_EQ(multi.model, "resnet50");
    EXPECT_EQ(multi.nodes, 1);
    EXPECT_EQ(multi.nodes, defaults.nodes);
    EXPECT_EQ(multi.batch_per_gpu, 256);
    EXPECT_EQ(multi.framework, Framework::pytorch);
    EXPECT_EQ(multi.framework, defaults.framework);
    EXPECT_EQ(multi.precision, defaults.precision);
    EXPECT_EQ(multi.stack, defaults.stack);
    EXPECT_EQ(multi.loader, Loader::framework_default);
    EXPECT_EQ(multi.gpus_per_node, 8);  // "all" resolved
    EXPECT_EQ(multi.strategy, Strategy::nccl);
    EXPECT_EQ(single.gpus_per_node, 1);
    EXPECT_EQ(single.strategy, Strategy::nccl);
    // Without "instance", today's default: one p5.48xlarge, all 8 of its GPUs.
    const Scenario plain = parse("{}").scenario_at(0, catalog());
    EXPECT_EQ(plain.instance, "p5.48xlarge");
    EXPECT_EQ(plain.instance, defaults.instance);
    EXPECT_EQ(plain.gpus_per_node, 8);
}

TEST(SweepSpec, ParameterServerKeysApplyToPsOnlyAndRatioScalesWithNodes) {
    const SweepSpec spec = parse(R"({"strategy": ["ring", "ps"], "ps_instance": "m4.16xlarge",
                                     "ps_ratio": 1.5, "nodes": [2, 3]})");
    ASSERT_EQ(spec.combinations(), 4u);
    const Scenario ring = spec.scenario_at(0, catalog());
    EXPECT_EQ(ring.strategy, Strategy::ring);
    EXPECT_TRUE(ring.ps_instance.empty());
    EXPECT_EQ(ring.ps_nodes, 0);
    const Scenario ps2 = spec.scenario_at(2, catalog());
    const Scenario ps3 = spec.scenario_at(3, catalog());
    EXPECT_EQ(ps2.strategy, Strategy::ps);
    EXPECT_EQ(ps2.ps_instance, "m4.16xlarge");
    EXPECT_EQ(ps2.ps_nodes, 3);  // ceil(1.5 x 2)
    EXPECT_EQ(ps3.ps_nodes, 5);  // ceil(1.5 x 3)
    const SweepSpec colocated = parse(R"({"strategy": "ps", "ps_colocated": [true]})");
    EXPECT_TRUE(colocated.scenario_at(0, catalog()).ps_colocated);
    EXPECT_EQ(colocated.scenario_at(0, catalog()).ps_nodes, 0);
}

// Issue 59, item 15: a tiny ps_ratio (1e-300 of 4 nodes) gave no server, and its row was refused
// "needs parameter servers: --ps-nodes N ... or --ps-colocated", flags a spec never gives. A positive
// ratio is at least one server, and a row's reason names the spec's keys.
TEST(SweepSpec, ATinyRatioIsOneServerAndARowsReasonNamesTheSpecsKeys) {
    const SweepSpec spec = parse(R"({"strategy": "ps", "ps_instance": "m4.16xlarge", "ps_ratio": [1e-300, 1e-9],
                                     "nodes": 4})");
    for (std::size_t i = 0; i < spec.combinations(); ++i) EXPECT_EQ(spec.scenario_at(i, catalog()).ps_nodes, 1) << i;
    EXPECT_EQ(in_spec_terms("--strategy ps with --ps-nodes needs --ps-instance (e.g. m4.16xlarge)"),
              "\"strategy\" ps with \"ps_nodes\" needs \"ps_instance\" (e.g. m4.16xlarge)");
    EXPECT_EQ(in_spec_terms("--elastic-spot needs 2 nodes or more"), "\"elastic_spot\" needs 2 nodes or more");
    // What is no spec key stays as written: a flag of another command, a dash in text.
    EXPECT_EQ(in_spec_terms("use --granularity coarse, or 1--2 nodes --"),
              "use --granularity coarse, or 1--2 nodes --");
}

TEST(SweepSpec, ErrorsNameTheKeyAndTheValue) {
    EXPECT_NE(error_of(R"({"instance": ["p3.16xlarge", "p9.huge"]})").find("\"instance\" value \"p9.huge\""),
              std::string::npos);
    EXPECT_NE(error_of(R"({"nodes": [1, 0]})").find("\"nodes\" value 0 must be at least 1"), std::string::npos);
    EXPECT_NE(error_of(R"({"nodes": -3})").find("\"nodes\" value -3"), std::string::npos);
    EXPECT_NE(error_of(R"({"nodes": 2.5})").find("\"nodes\" value 2.5 is not a whole number"), std::string::npos);
    EXPECT_NE(error_of(R"({"precision": "fp8"})").find("\"precision\" value \"fp8\""), std::string::npos);
    EXPECT_NE(error_of(R"({"strategy": ["ring", "mesh"]})").find("\"strategy\" value \"mesh\""), std::string::npos);
    EXPECT_NE(error_of(R"({"model": "vgg16"})").find("\"model\" value \"vgg16\" is not a known model"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"instance": "m4.16xlarge"})").find("CPU-only"), std::string::npos);
    EXPECT_NE(error_of(R"({"batch_per_gpu": []})").find("\"batch_per_gpu\" is an empty list"), std::string::npos);
    EXPECT_NE(error_of(R"({"nodez": 4})").find("unknown key \"nodez\""), std::string::npos);
    EXPECT_NE(error_of(R"({"ps_ratio": 1, "ps_nodes": 2})").find("not both"), std::string::npos);
    EXPECT_NE(error_of(R"({"epochs": "ninety"})").find("\"epochs\" value \"ninety\" is not a number"),
              std::string::npos);
    EXPECT_NE(error_of(R"([1, 2])").find("JSON object"), std::string::npos);
    EXPECT_NE(error_of(R"({"nodes": [1, 2)").find("malformed JSON"), std::string::npos);
    EXPECT_EQ(error_of(R"({"nodes": [1, 2]})"), "(no error)");
}

TEST(SweepSpec, AMillionCombinationsAreCountedNotBuilt) {
    std::string nodes = "1";
    std::string batches = "4";
    for (int i = 2; i <= 100; ++i) {  // appended, not "," + ...: GCC 12 warns a false -Wrestrict
        nodes += ',';
        nodes += std::to_string(i);
        batches += ',';
        batches += std::to_string(i * 4);
    }
    const SweepSpec spec = parse(R"({"nodes": [)" + nodes + R"(], "batch_per_gpu": [)" + batches +
                                 R"(], "epochs": [10,20,30,40,50,60,70,80,90,100]})");
    EXPECT_EQ(spec.combinations(), 100000u);
    const Scenario last = spec.scenario_at(spec.combinations() - 1, catalog());
    EXPECT_EQ(last.nodes, 100);
    EXPECT_EQ(last.batch_per_gpu, 400);
    EXPECT_EQ(last.epochs, 100);
}

TEST(SweepSpec, ACrossProductPastAThousandMillionRowsIsRefusedWithItsSize) {
    // Issue 42: a 10^12-row sweep was accepted and would have written about 360 TB without a word.
    std::string lists;
    for (const char* key : {"nodes", "batch_per_gpu", "classes", "dataset_images"}) {
        lists += std::string(lists.empty() ? "" : ", ") + "\"" + key + "\": [";
        for (int i = 1; i <= 1000; ++i) {
            if (i > 1) lists += ',';
            lists += std::to_string(i);
        }
        lists += "]";
    }
    try {
        parse_sweep_spec("{" + lists + "}", "huge.json", Catalog::built_in());
        ADD_FAILURE() << "expected InputError";
    } catch (const InputError& error) {
        EXPECT_STREQ(error.what(),
                     "huge.json: the cross product has 1,000,000,000,000 combinations, more than 1,000,000,000 "
                     "(about 500 TB of CSV): narrow a list, or split the spec");
    }
}

// Issue 45: the store's keys, named as predict's flags, cross as the others do; storage_tib and
// storage_tier size the fsx-lustre rows only (another store's row has no size, as a ring row has no
// servers), so one spec compares a local copy with a sized file system.
TEST(SweepSpec, StoreKeysCrossAndSizeTheFsxRowsOnly) {
    const SweepSpec spec = parse(R"({"storage": ["local-nvme", "fsx-lustre"], "storage_tib": [1.2, 2.4],
                                     "storage_tier": 250, "nodes": [1, 2]})");
    ASSERT_EQ(spec.combinations(), 8u);  // stores x sizes x nodes: the store varies slower than the cluster
    const Scenario local = spec.scenario_at(0, catalog());
    EXPECT_EQ(local.storage, Store::local_nvme);
    EXPECT_EQ(local.storage_tib, 0);
    EXPECT_EQ(local.storage_tier_MBps_per_TiB, 0);
    EXPECT_EQ(local.nodes, 1);
    EXPECT_EQ(spec.scenario_at(1, catalog()).nodes, 2);
    const Scenario small = spec.scenario_at(4, catalog());
    EXPECT_EQ(small.storage, Store::fsx_lustre);
    EXPECT_EQ(small.storage_tib, 1.2);
    EXPECT_EQ(small.storage_tier_MBps_per_TiB, 250);
    EXPECT_EQ(small.nodes, 1);
    const Scenario large = spec.scenario_at(7, catalog());
    EXPECT_EQ(large.storage_tib, 2.4);
    EXPECT_EQ(large.nodes, 2);
    // Left out: no store, as predict without --storage.
    EXPECT_EQ(parse("{}").scenario_at(0, catalog()).storage, Store::none);
}

// The spot keys take predict's --spot-interruptions-per-node-hour, --checkpoint-every (a duration
// such as "30min") and --spot-replacement-wait ("0": none), and apply to the spot rows only.
TEST(SweepSpec, SpotKeysCrossAndApplyToTheSpotRowsOnly) {
    const SweepSpec spec = parse(R"({"pricing": ["on-demand", "spot"], "checkpoint_every": ["10min", "1h30m"],
                                     "spot_replacement_wait": "0", "spot_interruptions_per_node_hour": 0.5})");
    ASSERT_EQ(spec.combinations(), 4u);
    const Scenario defaults;
    for (std::size_t i : {0u, 1u}) {
        const Scenario on_demand = spec.scenario_at(i, catalog());
        EXPECT_EQ(on_demand.pricing, Pricing::on_demand);
        EXPECT_EQ(on_demand.checkpoint_interval_s, defaults.checkpoint_interval_s);
        EXPECT_EQ(on_demand.spot_interruptions_per_node_hour, defaults.spot_interruptions_per_node_hour);
        EXPECT_EQ(on_demand.spot_replacement_wait_s, defaults.spot_replacement_wait_s);
    }
    const Scenario every_10min = spec.scenario_at(2, catalog());
    EXPECT_EQ(every_10min.pricing, Pricing::spot);
    EXPECT_EQ(every_10min.checkpoint_interval_s, 600);
    EXPECT_EQ(every_10min.spot_interruptions_per_node_hour, 0.5);
    EXPECT_EQ(every_10min.spot_replacement_wait_s, 0);
    EXPECT_EQ(spec.scenario_at(3, catalog()).checkpoint_interval_s, 5400);
}

// Issue 45: the evaluation and start-up keys cross as predict's --eval-every, --eval-images and
// --startup; left out, each row has the Scenario's defaults (no eval_every: the recipe's cadence).
TEST(SweepSpec, EvaluationAndStartUpKeysCross) {
    const SweepSpec spec = parse(R"({"eval_every": [0, 4], "eval_images": 10000, "startup": ["0", "5min"]})");
    ASSERT_EQ(spec.combinations(), 4u);
    const Scenario none_now = spec.scenario_at(0, catalog());
    EXPECT_EQ(none_now.eval_every_epochs, std::optional<int>(0));
    EXPECT_EQ(none_now.eval_images, 10000);
    EXPECT_EQ(none_now.startup_s, 0);
    EXPECT_EQ(spec.scenario_at(1, catalog()).startup_s, 300);
    const Scenario every_4 = spec.scenario_at(3, catalog());
    EXPECT_EQ(every_4.eval_every_epochs, std::optional<int>(4));
    EXPECT_EQ(every_4.startup_s, 300);
    const Scenario defaults = parse("{}").scenario_at(0, catalog());
    EXPECT_FALSE(defaults.eval_every_epochs.has_value());
    EXPECT_EQ(defaults.eval_images, Scenario{}.eval_images);
    EXPECT_EQ(defaults.startup_s, Scenario{}.startup_s);
}

/// The message predict's own check throws for a value, to find it inside the spec's error.
template <typename Check>
std::string predicts_message(Check&& check) {
    const std::string message = testing::input_error_of(std::forward<Check>(check));
    return message.empty() ? "(predict accepts it)" : message;
}

// Every bad value of the new keys is one line naming the key and the value, with the reason that
// predict's own check of its flag gives (the same code, not a copy of its rules).
TEST(SweepSpec, BadStoreAndSpotValuesAreRefusedWithPredictsReasons) {
    const StorageCatalog& data = StorageCatalog::built_in();
    const StoreSpec& fsx = data.store(Store::fsx_lustre);
    Scenario negative_tib;
    negative_tib.storage_tib = -1;
    const struct {
        const char* spec;
        std::string expected;
    } cases[] = {
        {R"({"storage": ["fsx-lustre", "nfs"]})",
         "spec.json: \"storage\" value \"nfs\" " + predicts_message([] { parse_store("nfs", "storage"); })},
        {R"({"storage": "fsx-lustre", "storage_tib": 0.5})",
         "spec.json: \"storage_tib\" value 0.5 is refused: " + predicts_message([&] { data.capacity_tib(fsx, 0.5); })},
        {R"({"storage": "fsx-lustre", "storage_tib": -1})",
         "spec.json: \"storage_tib\" value -1 is refused: " +
             predicts_message([&] { check_run_cost_limits(negative_tib); })},
        {R"({"storage": "fsx-lustre", "storage_tier": [125, 300]})",
         "spec.json: \"storage_tier\" value 300 is refused: " + predicts_message([&] { data.tier(fsx, 300); })},
        {R"({"storage": ["s3", "efs"], "storage_tib": 2.4})",
         "spec.json: \"storage_tib\" applies to fsx-lustre rows only: list \"fsx-lustre\" in \"storage\""},
        {R"({"pricing": "spot", "checkpoint_every": "soon"})",
         "spec.json: \"checkpoint_every\" value \"soon\" is refused: " +
             predicts_message([] { parse_duration_s("soon", "--checkpoint-every"); })},
        {R"({"pricing": "spot", "checkpoint_every": 1800})",
         "spec.json: \"checkpoint_every\" value 1800 is not a duration such as \"30min\" (a string)"},
        {R"({"pricing": "spot", "spot_replacement_wait": "5parsecs"})",
         "spec.json: \"spot_replacement_wait\" value \"5parsecs\" is refused: " +
             predicts_message([] { parse_duration_or_zero_s("5parsecs", "--spot-replacement-wait"); })},
        {R"({"pricing": "spot", "spot_interruptions_per_node_hour": -1})",
         "spec.json: \"spot_interruptions_per_node_hour\" value -1 is refused: " +
             predicts_message([] { check_given_spot_rate(-1); })},
        {R"({"pricing": "spot", "spot_interruptions_per_node_hour": 61})",
         "spec.json: \"spot_interruptions_per_node_hour\" value 61 is refused: " +
             predicts_message([] { check_given_spot_rate(61); })},
        {R"({"eval_every": [4, -1]})", "spec.json: \"eval_every\" value -1 is refused: " + predicts_message([] {
                                           Scenario s;
                                           s.eval_every_epochs = -1;
                                           check_run_cost_limits(s);
                                       })},
        {R"({"eval_images": 2000000000})",
         "spec.json: \"eval_images\" value 2000000000 is refused: " + predicts_message([] {
             Scenario s;
             s.eval_images = 2'000'000'000;
             check_run_cost_limits(s);
         })},
        {R"({"eval_every": 1.5})", "spec.json: \"eval_every\" value 1.5 is not a whole number"},
        {R"({"startup": "-5min"})", "spec.json: \"startup\" value \"-5min\" is refused: " +
                                        predicts_message([] { parse_duration_or_zero_s("-5min", "--startup"); })},
        {R"({"pricing": "on-demand", "spot_interruptions_per_node_hour": 0.1})",
         "spec.json: \"spot_interruptions_per_node_hour\" applies to spot rows only: list \"spot\" in "
         "\"pricing\""},
    };
    for (const auto& c : cases) {
        const std::string error = error_of(c.spec);
        EXPECT_EQ(error, c.expected) << c.spec;
        EXPECT_EQ(error.find('\n'), std::string::npos) << error;
        EXPECT_EQ(error.find("(predict accepts it)"), std::string::npos) << c.spec;
    }
    // A tier or a size of 0 is the store's default, as predict's flags take it.
    EXPECT_EQ(error_of(R"({"storage": "fsx-lustre", "storage_tib": 0, "storage_tier": 0})"), "(no error)");
}

// "compiled" crosses like any key (Scenario::compiled, eq. C9); true on a framework other than
// PyTorch is a row the model refuses, not a spec error (as --compile's check is predict's).
TEST(SweepSpec, CompiledCrossesAndIsABooleanList) {
    const SweepSpec spec = parse(R"({"compiled": [false, true], "framework": ["pytorch", "mxnet"]})");
    ASSERT_EQ(spec.combinations(), 4u);
    int compiled = 0;
    for (std::size_t i = 0; i < spec.combinations(); ++i) compiled += spec.scenario_at(i, catalog()).compiled;
    EXPECT_EQ(compiled, 2);
    EXPECT_NE(error_of(R"({"compiled": ["yes"]})").find("compiled"), std::string::npos)
        << error_of(R"({"compiled": ["yes"]})");
}

}  // namespace
}  // namespace epochcast
