// The scenario file (model/scenario_file.hpp, docs/formats.md "Scenario"): what it writes reads back
// as the same Scenario, field for field, for configurations that use each group of keys (spot, a
// store, parameter servers, a target, a fixed global batch); a named list keeps its order and
// names; and each malformed file is one error naming the file, the entry and the key.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/catalog.hpp"
#include "model/errors.hpp"
#include "model/scenario_file.hpp"
#include "tests/support/error_of.hpp"

namespace epochcast {
namespace {

using testing::input_error_of;

/// The fields of two Scenarios that differ, by name, for a failure's message.
std::string differences(const Scenario& a, const Scenario& b) {
    std::string out;
    auto field = [&out](const char* name, bool equal) {
        if (!equal) out += std::string(" ") + name;
    };
    field("model", a.model == b.model);
    field("image_size", a.image_size == b.image_size);
    field("classes", a.classes == b.classes);
    field("dataset_images", a.dataset_images == b.dataset_images);
    field("epochs", a.epochs == b.epochs);
    field("target_top1_percent", a.target_top1_percent == b.target_top1_percent);
    field("recipe", a.recipe == b.recipe);
    field("instance", a.instance == b.instance);
    field("nodes", a.nodes == b.nodes);
    field("gpus_per_node", a.gpus_per_node == b.gpus_per_node);
    field("batch_per_gpu", a.batch_per_gpu == b.batch_per_gpu);
    field("global_batch", a.global_batch == b.global_batch);
    field("precision", a.precision == b.precision);
    field("strategy", a.strategy == b.strategy);
    field("framework", a.framework == b.framework);
    field("stack", a.stack == b.stack);
    field("memory_format", a.memory_format == b.memory_format);
    field("loader", a.loader == b.loader);
    field("compiled", a.compiled == b.compiled);
    field("ps_instance", a.ps_instance == b.ps_instance);
    field("ps_nodes", a.ps_nodes == b.ps_nodes);
    field("ps_colocated", a.ps_colocated == b.ps_colocated);
    field("efa_adapters", a.efa_adapters == b.efa_adapters);
    field("pricing", a.pricing == b.pricing);
    field("spot_interruptions_per_node_hour", a.spot_interruptions_per_node_hour == b.spot_interruptions_per_node_hour);
    field("checkpoint_interval_s", a.checkpoint_interval_s == b.checkpoint_interval_s);
    field("spot_replacement_wait_s", a.spot_replacement_wait_s == b.spot_replacement_wait_s);
    field("spot_elastic", a.spot_elastic == b.spot_elastic);
    field("fusion_threshold_MiB", a.fusion_threshold_MiB == b.fusion_threshold_MiB);
    field("storage", a.storage == b.storage);
    field("storage_tib", a.storage_tib == b.storage_tib);
    field("storage_tier_MBps_per_TiB", a.storage_tier_MBps_per_TiB == b.storage_tier_MBps_per_TiB);
    field("eval_images", a.eval_images == b.eval_images);
    field("eval_every_epochs", a.eval_every_epochs == b.eval_every_epochs);
    field("startup_s", a.startup_s == b.startup_s);
    return out;
}

std::vector<Scenario> varied_scenarios() {
    std::vector<Scenario> out;
    Scenario plain;  // the defaults: 1 x p5.48xlarge, 90 epochs
    out.push_back(plain);

    Scenario spot;
    spot.instance = "p4d.24xlarge";
    spot.nodes = 4;
    spot.pricing = Pricing::spot;
    spot.spot_interruptions_per_node_hour = 0.05;
    spot.checkpoint_interval_s = 1800;
    spot.spot_replacement_wait_s = 0;
    spot.spot_elastic = true;
    spot.epochs = 41.5;
    out.push_back(spot);

    Scenario store;
    store.instance = "p5.48xlarge";
    store.nodes = 16;
    store.global_batch = 32768;
    store.storage = Store::fsx_lustre;
    store.storage_tib = 4.8;
    store.storage_tier_MBps_per_TiB = 500;
    store.eval_every_epochs = 4;
    store.eval_images = 10'000;
    store.startup_s = 0;
    store.target_top1_percent = 75.9;
    store.recipe = "goyal2017";
    store.loader = Loader::dali;
    store.precision = Precision::bf16;
    out.push_back(store);

    Scenario ps;
    ps.instance = "p3.16xlarge";
    ps.nodes = 8;
    ps.framework = Framework::mxnet;
    ps.strategy = Strategy::ps;
    ps.ps_instance = "m4.16xlarge";
    ps.ps_nodes = 16;
    ps.stack = SoftwareStack::legacy;
    ps.efa_adapters = 0;
    ps.gpus_per_node = 4;
    ps.memory_format = MemoryFormat::nchw;
    ps.model = "resnet101";
    ps.image_size = 160;
    ps.classes = 100;
    ps.dataset_images = 130'000;
    ps.startup_s = 123.25;
    out.push_back(ps);

    Scenario compiled;
    compiled.compiled = true;
    compiled.strategy = Strategy::tree;
    compiled.pricing = Pricing::capacity_block;
    out.push_back(compiled);
    return out;
}

TEST(ScenarioFile, EachConfigurationWrittenReadsBackAsTheSameScenario) {
    const Catalog& catalog = Catalog::built_in();
    for (const Scenario& s : varied_scenarios()) {
        const std::string text = scenario_file_json({{"", s}});
        const std::vector<NamedScenario> back = parse_scenario_file(text, "a.json", catalog);
        ASSERT_EQ(back.size(), 1u) << text;
        EXPECT_TRUE(back[0].scenario == s) << "differs in" << differences(back[0].scenario, s) << "\n" << text;
        EXPECT_EQ(back[0].name, "");
        // The schema comes first, the instance next: the file reads top to bottom.
        EXPECT_EQ(text.find("\"schema\": \"epochcast.scenario/1\""), 4u) << text;
        EXPECT_LT(text.find("\"instance\""), text.find("\"nodes\"")) << text;
    }
}

TEST(ScenarioFile, ANamedListKeepsItsOrderAndNames) {
    const Catalog& catalog = Catalog::built_in();
    std::vector<NamedScenario> list;
    const std::vector<Scenario> scenarios = varied_scenarios();
    for (std::size_t i = 0; i < scenarios.size(); ++i) list.push_back({"option " + std::to_string(i), scenarios[i]});
    const std::string text = scenario_file_json(list);
    const nlohmann::json document = nlohmann::json::parse(text);
    EXPECT_EQ(document.size(), 2u);  // schema and scenarios
    ASSERT_EQ(document["scenarios"].size(), scenarios.size());
    const std::vector<NamedScenario> back = parse_scenario_file(text, "list.json", catalog);
    ASSERT_EQ(back.size(), scenarios.size());
    for (std::size_t i = 0; i < back.size(); ++i) {
        EXPECT_EQ(back[i].name, "option " + std::to_string(i));
        EXPECT_TRUE(back[i].scenario == scenarios[i])
            << i << " differs in" << differences(back[i].scenario, scenarios[i]);
    }
}

TEST(ScenarioFile, KeysAtTheirDefaultsAreLeftOutButTheMainOnesAreWritten) {
    const nlohmann::json o = nlohmann::json::parse(scenario_file_json({{"", Scenario{}}}));
    for (const char* key : {"instance", "nodes", "batch_per_gpu", "precision", "strategy", "framework", "model",
                            "image_size", "epochs", "pricing"}) {
        EXPECT_TRUE(o.contains(key)) << key;
    }
    for (const char* key : {"gpus_per_node", "global_batch", "storage", "startup", "eval_every", "efa_adapters",
                            "spot_interruptions_per_node_hour", "ps_instance", "target_top1", "name"}) {
        EXPECT_FALSE(o.contains(key)) << key;
    }
    EXPECT_EQ(o["epochs"], 90);  // a whole number stays one
}

TEST(ScenarioFile, HandWrittenFilesReadAsTheirKeysSay) {
    const std::vector<NamedScenario> read = parse_scenario_file(
        R"({"schema": "epochcast.scenario/1", "name": "big", "instance": "p5.48xlarge", "nodes": 8,
            "target_top1": 75.9, "pricing": "spot", "checkpoint_every": "30min"})",
        "big.json", Catalog::built_in());
    ASSERT_EQ(read.size(), 1u);
    EXPECT_EQ(read[0].name, "big");
    EXPECT_EQ(read[0].scenario.nodes, 8);
    EXPECT_DOUBLE_EQ(read[0].scenario.target_top1_percent, 75.9);
    EXPECT_DOUBLE_EQ(read[0].scenario.checkpoint_interval_s, 1800);
    EXPECT_EQ(read[0].scenario.pricing, Pricing::spot);
    EXPECT_EQ(read[0].scenario.batch_per_gpu, 256);  // the sweep's (and predict's) default
}

TEST(ScenarioFile, EachMalformedFileIsOneErrorNamingTheFileAndTheKey) {
    const Catalog& catalog = Catalog::built_in();
    struct Case {
        std::string text;
        std::string error;
    };
    for (const Case& c : std::vector<Case>{
             {"{\"instance\": \"p5.48xlarge\"}",
              "s.json: not a scenario file (\"schema\" must be \"epochcast.scenario/1\")"},
             {"{\"schema\": \"epochcast.trace/1\", \"runs\": []}", "s.json: not a scenario file"},
             {"[1, 2]", "s.json: a scenario file is a JSON object"},
             {"{\"schema\": \"epochcast.scenario/1\", \"nodes\": [1, 2]}",
              "s.json: \"nodes\" is a list: a scenario is one configuration (a sweep spec takes lists)"},
             {"{\"schema\": \"epochcast.scenario/1\", \"nodes\": 0}", "s.json: \"nodes\" value 0"},
             {"{\"schema\": \"epochcast.scenario/1\", \"instance\": \"p9.mega\"}",
              "s.json: \"instance\" value \"p9.mega\""},
             {"{\"schema\": \"epochcast.scenario/1\", \"nodez\": 2}", "s.json: unknown key \"nodez\""},
             {"{\"schema\": \"epochcast.scenario/1\", \"epochs\": 40, \"target_top1\": 75.9}",
              "s.json: \"epochs\" and \"target_top1\" both given"},
             {"{\"schema\": \"epochcast.scenario/1\", \"recipe\": \"goyal2017\"}",
              "s.json: \"recipe\" goes with \"target_top1\""},
             {"{\"schema\": \"epochcast.scenario/1\", \"target_top1\": 75.9, \"recipe\": \"magic\"}",
              "s.json: \"recipe\": "},
             {"{\"schema\": \"epochcast.scenario/1\", \"name\": 3}", "s.json: \"name\" must be a string"},
             {"{\"schema\": \"epochcast.scenario/1\", \"scenarios\": []}",
              "s.json: \"scenarios\" must be a non-empty list of configurations"},
             {"{\"schema\": \"epochcast.scenario/1\", \"scenarios\": [{\"nodes\": 2}, {\"nodes\": -1}]}",
              "s.json#scenarios[1]: \"nodes\" value -1"},
             {"{\"schema\": \"epochcast.scenario/1\", \"nodes\": 2, \"scenarios\": [{\"nodes\": 2}]}",
              "s.json: a file with \"scenarios\" has no other keys than \"schema\""},
             {"{\"schema\": \"epochcast.scenario/1\",", "s.json: not JSON"},
         }) {
        const std::string error = input_error_of([&] { parse_scenario_file(c.text, "s.json", catalog); });
        EXPECT_NE(error.find(c.error), std::string::npos) << c.text << "\n" << error;
        EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    }
}

}  // namespace
}  // namespace epochcast
