// `epochcast simulate` as a user runs it: predict's JSON contract plus the distribution and the
// granularity, reproducible with a seed, and a one-line error with exit code 2 for bad input.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_process.hpp"
#include "model/calibration.hpp"

namespace epochcast {
namespace {

using testing::run_epochcast;

const char* kSmall = "simulate --nodes 2 --strategy ring --iterations 4 ";

TEST(SimulateCli, JsonHasPredictsKeysAndTheDistribution) {
    const auto r = run_epochcast(std::string(kSmall) + "--json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.err.empty()) << r.err;  // SimGrid stays silent
    const auto json = nlohmann::json::parse(r.out);
    for (const char* key : {"throughput_images_per_s", "iteration_s", "compute_s", "data_s", "communication_s",
                            "exposed_communication_s", "epoch_s", "time_to_train_s", "cost_usd", "cost_per_epoch_usd",
                            "scaling_efficiency", "gpus", "interval", "collective_granularity",
                            "iteration_distribution", "simulation"}) {
        EXPECT_TRUE(json.contains(key)) << key;
    }
    EXPECT_EQ(json["gpus"], 16);
    EXPECT_EQ(json["collective_granularity"], "step");
    EXPECT_EQ(json["iteration_distribution"]["samples_s"].size(), 4u);
    EXPECT_NEAR(json["iteration_s"].get<double>(), json["iteration_distribution"]["mean_s"].get<double>(), 1e-12);
    EXPECT_NEAR(json["throughput_images_per_s"].get<double>(), 16 * 256 / json["iteration_s"].get<double>(), 1e-6);
    // Default jitter is the built-in calibration's TensorFlow one: iterations vary and someone waits.
    EXPECT_NEAR(json["simulation"]["jitter"].get<double>(),
                Calibration::built_in().framework(Framework::tensorflow).sync_jitter, 1e-9);
    EXPECT_GT(json["sync_s"].get<double>(), 0.0);
}

TEST(SimulateCli, SameSeedSameRunOtherSeedOtherRun) {
    const auto a = nlohmann::json::parse(run_epochcast(std::string(kSmall) + "--seed 7 --json").out);
    const auto b = nlohmann::json::parse(run_epochcast(std::string(kSmall) + "--seed 7 --json").out);
    const auto c = nlohmann::json::parse(run_epochcast(std::string(kSmall) + "--seed 8 --json").out);
    EXPECT_EQ(a["iteration_distribution"]["samples_s"], b["iteration_distribution"]["samples_s"]);
    EXPECT_NE(a["iteration_distribution"]["samples_s"], c["iteration_distribution"]["samples_s"]);
}

TEST(SimulateCli, TableNamesTheSimulation) {
    const auto r = run_epochcast(std::string(kSmall) + "--jitter 0");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("throughput (images/s)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("simulated 4 iterations (SimGrid, cm02, step collectives, jitter 0"), std::string::npos)
        << r.out;
}

TEST(SimulateCli, BadInputIsExitCodeTwoWithOneLine) {
    const auto missing = std::filesystem::temp_directory_path() / "epochcast-no-such-folder" / "timeline.json";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"--instance p9.nothing", "p9.nothing"},
        {"--nodes 0", "--nodes"},
        {"--iterations 0", "--iterations"},
        {"--jitter -0.1", "--jitter"},
        {"--overlap 1.5", "--overlap"},
        {"--slow-node 3", "--slow-node"},
        {"--slow-node 1:0", "--slow-node"},
        {"--slow-node 9:2", "nodes 0 to 1"},
        {"--granularity fine", "--granularity"},
        {"--network-model ns3", "--network-model"},
        {"--timeline " + missing.string(), "timeline"},
    };
    for (const auto& [flags, named] : cases) {
        const auto r = run_epochcast("simulate --nodes 2 --iterations 1 " + flags);
        EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
        EXPECT_NE(r.err.find(named), std::string::npos) << flags << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << flags << ": " << r.err;
        EXPECT_TRUE(r.out.empty()) << flags;
    }
    EXPECT_FALSE(std::filesystem::exists(missing));
}

}  // namespace
}  // namespace epochcast
