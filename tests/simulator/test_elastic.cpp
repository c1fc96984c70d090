// Elastic schedules (seed 003's Dynamic Training): the global batch stays fixed while the cluster
// changes size between phases, a lost node costs the work since the last checkpoint plus a restart,
// and the schedule is reported against the fixed cluster. Bad schedule files are InputErrors.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "simulator/elastic.hpp"
#include "tests/cli/cli_process.hpp"
#include "tests/support/temp_file.hpp"

namespace epochcast {
namespace {

using testing::TempFile;

const CostModel& model() {
    static const CostModel instance(Catalog::built_in(), Calibration::built_in());
    return instance;
}

sim::SimulationOptions quick() {
    sim::SimulationOptions o;
    o.iterations = 2;
    o.jitter = 0.0;
    return o;
}

/// `nodes` p3.16xlarge (seed 003's instances) under Horovod's hierarchical all-reduce.
Scenario cluster(int nodes, int batch) {
    Scenario s;
    s.instance = "p3.16xlarge";
    s.nodes = nodes;
    s.batch_per_gpu = batch;
    s.strategy = Strategy::hierarchical;
    return s;
}

sim::ElasticSchedule schedule(const std::string& json) { return sim::parse_elastic_schedule(json, "test.json"); }

TEST(Elastic, AConstantScheduleIsTheFixedCluster) {
    const auto r = sim::simulate_elastic(model(), cluster(4, 128), quick(),
                                         schedule(R"({"schema": "epochcast.elastic/1", "phases": [
                                             {"epochs": 30, "nodes": 4}, {"epochs": 60, "nodes": 4}]})"));
    EXPECT_DOUBLE_EQ(r.epochs, 90);
    ASSERT_EQ(r.segments.size(), 2u);
    EXPECT_NEAR(r.time_to_train_s, r.fixed_time_to_train_s, 1e-6 * r.fixed_time_to_train_s);
    EXPECT_NEAR(r.cost_usd, r.fixed_cost_usd, 1e-6 * r.fixed_cost_usd);
}

TEST(Elastic, TheGlobalBatchStaysFixed) {
    const auto r = sim::simulate_elastic(model(), cluster(4, 128), quick(),
                                         schedule(R"({"schema": "epochcast.elastic/1", "phases": [
                                             {"epochs": 10, "nodes": 2}, {"epochs": 10, "nodes": 8}]})"));
    ASSERT_EQ(r.segments.size(), 2u);
    EXPECT_EQ(r.segments[0].batch_per_gpu, 256);  // 4 x 8 x 128 over 16 GPUs
    EXPECT_EQ(r.segments[1].batch_per_gpu, 64);
    EXPECT_EQ(r.segments[0].global_batch, 4096);
    EXPECT_EQ(r.segments[1].global_batch, 4096);
    // More GPUs, the same images per epoch: faster, and each phase's cost is time x price.
    EXPECT_LT(r.segments[1].epoch_s, r.segments[0].epoch_s);
    for (const auto& s : r.segments) EXPECT_NEAR(s.cost_usd, s.time_s / 3600 * s.usd_per_hour, 1e-9);
    EXPECT_NEAR(r.segments[1].usd_per_hour, 4 * r.segments[0].usd_per_hour, 1e-9);
}

TEST(Elastic, ANodeLostMidEpochRestartsFromTheLastCheckpoint) {
    const std::string phases = R"("phases": [{"epochs": 20, "nodes": 4}])";
    const auto calm = sim::simulate_elastic(model(), cluster(4, 128), quick(),
                                            schedule(R"({"schema": "epochcast.elastic/1", )" + phases + "}"));
    const auto lost = sim::simulate_elastic(
        model(), cluster(4, 128), quick(),
        schedule(R"({"schema": "epochcast.elastic/1", )" + phases + R"(, "node_losses": [{"epoch": 5.25}]})"));
    ASSERT_EQ(lost.losses.size(), 1u);
    ASSERT_EQ(lost.segments.size(), 2u);
    const auto& loss = lost.losses.front();
    EXPECT_EQ(loss.nodes_after, 3);
    // A quarter of epoch 5 is lost and redone on 3 nodes, from the checkpoint at epoch 5.
    EXPECT_NEAR(loss.lost_work_s, 0.25 * lost.segments[0].epoch_s, 1e-9);
    EXPECT_DOUBLE_EQ(lost.segments[1].start_epoch, 5.0);
    EXPECT_DOUBLE_EQ(lost.segments[1].epochs, 15.0);
    EXPECT_EQ(lost.segments[1].nodes, 3);
    EXPECT_NEAR(loss.restart_s, model().resolve(cluster(4, 128)).startup_s, 1e-9);
    const double expected_s =
        lost.startup_s + 5.25 * lost.segments[0].epoch_s + loss.restart_s + 15 * lost.segments[1].epoch_s;
    EXPECT_NEAR(lost.time_to_train_s, expected_s, 1e-6 * expected_s);
    EXPECT_GT(lost.time_to_train_s, calm.time_to_train_s);
}

TEST(Elastic, SpotNodesAreBilledAtTheSpotPriceAndLostFirst) {
    const auto r = sim::simulate_elastic(
        model(), cluster(4, 128), quick(),
        schedule(R"({"schema": "epochcast.elastic/1", "phases": [{"epochs": 10, "nodes": 4, "spot_nodes": 2}],
                     "node_losses": [{"epoch": 5}]})"));
    const InstanceSpec& p3 = model().catalog().instance("p3.16xlarge");
    ASSERT_EQ(r.segments.size(), 2u);
    EXPECT_NEAR(r.segments[0].usd_per_hour,
                2 * p3.usd_per_hour(Pricing::on_demand) + 2 * p3.usd_per_hour(Pricing::spot), 1e-9);
    EXPECT_EQ(r.segments[1].spot_nodes, 1);
    EXPECT_NEAR(r.segments[1].usd_per_hour,
                2 * p3.usd_per_hour(Pricing::on_demand) + 1 * p3.usd_per_hour(Pricing::spot), 1e-9);
}

// Seed 003 (traces/published/seed003_dynamic_training.json) found Dynamic Training 15-30% faster
// and 15-50% cheaper than fixed clusters, over 8 to 96 GPUs. Its schedule was not published; this
// one is plausible: 4 on-demand p3.16xlarge throughout, up to 8 more on spot, one interrupted,
// against 6 on-demand nodes, MXNet with co-located servers, the global batch of 6 x 8 x 128.
TEST(Elastic, APlausibleDynamicTrainingScheduleLandsInSeed003sRanges) {
    std::ifstream file(std::string(EPOCHCAST_SOURCE_DIR) + "/traces/published/seed003_dynamic_training.json");
    const auto seed = nlohmann::json::parse(file);
    const auto& findings = seed.at("findings");
    const auto& cost = findings.at(1).at("value");
    const auto& time = findings.at(2).at("value");
    Scenario s = cluster(6, 128);
    s.framework = Framework::mxnet;
    s.stack = SoftwareStack::legacy;  // MXNet's 2018 release
    s.strategy = Strategy::ps;
    s.ps_colocated = true;
    sim::SimulationOptions o;
    o.iterations = 3;  // with the calibrated MXNet jitter
    const auto r = sim::simulate_elastic(model(), s, o, schedule(R"({"schema": "epochcast.elastic/1", "phases": [
        {"epochs": 10, "nodes": 4}, {"epochs": 60, "nodes": 12, "spot_nodes": 8},
        {"epochs": 20, "nodes": 8, "spot_nodes": 4}], "node_losses": [{"epoch": 40.5}]})"));
    const double time_saving = 1 - r.time_to_train_s / r.fixed_time_to_train_s;
    const double cost_saving = 1 - r.cost_usd / r.fixed_cost_usd;
    EXPECT_GE(time_saving, time.at("low").get<double>());
    EXPECT_LE(time_saving, time.at("high").get<double>());
    EXPECT_GE(cost_saving, cost.at("low").get<double>());
    EXPECT_LE(cost_saving, cost.at("high").get<double>());
}

TEST(Elastic, BadSchedulesNameTheProblem) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"not json", "malformed JSON"},
        {R"({"phases": [{"epochs": 1, "nodes": 1}]})", "schema"},
        {R"({"schema": "epochcast.elastic/1"})", "phases"},
        {R"({"schema": "epochcast.elastic/1", "phases": []})", "phases"},
        {R"({"schema": "epochcast.elastic/1", "phases": [{"epochs": 1}]})", "phases[0]: missing key 'nodes'"},
        {R"({"schema": "epochcast.elastic/1", "phases": [{"epochs": 0, "nodes": 2}]})", "phases[0]: 'epochs'"},
        {R"({"schema": "epochcast.elastic/1", "phases": [{"epochs": 5, "nodes": 0}]})", "phases[0]: 'nodes'"},
        {R"({"schema": "epochcast.elastic/1", "phases": [{"epochs": 5, "nodes": 2.5}]})", "phases[0]: 'nodes'"},
        {R"({"schema": "epochcast.elastic/1", "phases": [{"epochs": 5, "nodes": 2}], "node_losses": [{"epoch": 7}]})",
         "node_losses[0]: 'epoch'"},
        {R"({"schema": "epochcast.elastic/1", "phases": [{"epochs": 5, "nodes": 1}], "node_losses": [{"epoch": 2}]})",
         "leave none"},
        {R"({"schema": "epochcast.elastic/1", "phases": [{"epochs": 5, "nodes": 2, "spot_nodes": 3}]})",
         "phases[0]: 'spot_nodes'"},
    };
    for (const auto& [text, named] : cases) {
        try {
            schedule(text);
            ADD_FAILURE() << "accepted: " << text;
        } catch (const InputError& error) {
            EXPECT_NE(std::string(error.what()).find(named), std::string::npos) << error.what();
            EXPECT_NE(std::string(error.what()).find("test.json"), std::string::npos) << error.what();
        }
    }
}

/// A schedule of one phase on `nodes` nodes that loses `losses` of them, one every 0.04 epochs.
std::string losing_schedule(int nodes, int losses) {
    nlohmann::json document = {{"schema", "epochcast.elastic/1"},
                               {"phases", {{{"epochs", 90}, {"nodes", nodes}}}},
                               {"node_losses", nlohmann::json::array()}};
    for (int i = 0; i < losses; ++i) document["node_losses"].push_back({{"epoch", i * 0.02}});
    return document.dump();
}

// Issue 42, item 9: 2,000 node losses are 2,001 cluster sizes, each simulated once: about 10 hours
// without a word. The sizes' estimated simulations together must fit simulate's own limit (an
// hour), checked before anything is simulated; a few losses pass. (The simulator has since become
// faster: 2,001 sizes of 2,000 to 4,000 one-GPU nodes now take about 40 minutes, so the refused case
// is 4,000 losses of 8,000 nodes, some 3 hours: 8,000 nodes of 1 GPU, 1 iteration, take about 6 s.)
TEST(Elastic, TheSizesSimulationsTogetherMustFitSimulatesLimit) {
    Scenario s;
    s.nodes = 8000;
    s.gpus_per_node = 1;
    s.batch_per_gpu = 4;
    sim::SimulationOptions one = quick();
    one.iterations = 1;
    try {
        sim::check_elastic_cost(model(), s, one, schedule(losing_schedule(8000, 4000)));
        ADD_FAILURE() << "4,000 node losses accepted";
    } catch (const InputError& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("elastic schedule: its 4,001 cluster sizes"), std::string::npos) << message;
        EXPECT_NE(message.find("over simulate's limit of 60 minutes: give fewer node losses"), std::string::npos)
            << message;
    }
    EXPECT_NO_THROW(sim::check_elastic_cost(model(), cluster(4, 128), quick(), schedule(losing_schedule(4, 2))));
}

TEST(ElasticCli, ASchedulePastTheLimitIsRefusedBeforeAnythingIsSimulated) {
    const TempFile file(losing_schedule(8000, 4000));
    // `timeout` only ends the command the issue saw run for hours; nothing is timed.
    const auto r = testing::run_command("timeout 600 '" + testing::test_program(EPOCHCAST_CLI_PATH) +
                                        "' simulate --nodes 8000 --gpus-per-node 1 --batch-per-gpu 4 --iterations 1 "
                                        "--elastic '" +
                                        file.path() + "'");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("elastic schedule: its 4,001 cluster sizes"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(ElasticCli, ReportsAgainstTheFixedClusterAndRejectsBadFiles) {
    const TempFile file(
        R"({"schema": "epochcast.elastic/1", "phases": [{"epochs": 45, "nodes": 2}, {"epochs": 45, "nodes": 8}]})");
    const auto r = testing::run_epochcast("simulate --nodes 4 --batch-per-gpu 128 --iterations 2 --elastic '" +
                                          file.path() + "' --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto json = nlohmann::json::parse(r.out);
    ASSERT_TRUE(json.contains("elastic"));
    EXPECT_EQ(json["elastic"]["segments"].size(), 2u);
    EXPECT_EQ(json["elastic"]["fixed"]["nodes"], 4);
    EXPECT_DOUBLE_EQ(json["elastic"]["epochs"].get<double>(), 90);
    EXPECT_TRUE(json["elastic"].contains("cost_saving"));

    const auto missing = testing::run_epochcast("simulate --nodes 4 --elastic /nonexistent/schedule.json");
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find("/nonexistent/schedule.json"), std::string::npos) << missing.err;
    const TempFile bad(R"({"schema": "epochcast.elastic/1", "phases": [{"epochs": 5, "nodes": -1}]})");
    const auto malformed = testing::run_epochcast("simulate --nodes 4 --elastic '" + bad.path() + "'");
    EXPECT_EQ(malformed.exit_code, 2);
    EXPECT_NE(malformed.err.find("phases[0]: 'nodes'"), std::string::npos) << malformed.err;
    EXPECT_TRUE(malformed.out.empty());
}

}  // namespace
}  // namespace epochcast
