// Scenario files on the command line (issue 62): `predict --save-scenario` writes the configuration
// it predicted, `predict --scenario` predicts it again (the same JSON to the last digit as the flags
// gave), `compare` puts configurations side by side with the figures predict gives each; and the
// mixes that cannot mean one thing are refused, one line, exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "model/text_io.hpp"
#include "tests/cli/cli_process.hpp"
#include "tests/support/temp_folder.hpp"

namespace epochcast {
namespace {

using testing::TempFolder;

nlohmann::json predict_json(std::vector<std::string> args) {
    args.insert(args.begin(), "predict");
    args.push_back("--json");
    std::ostringstream out;
    cli::run(args, out);
    return nlohmann::json::parse(out.str());
}

TEST(ScenarioCli, ASavedScenarioPredictsAsItsFlagsDid) {
    const TempFolder folder;
    for (const std::vector<std::string>& flags : std::vector<std::vector<std::string>>{
             {"--instance", "p5.48xlarge", "--nodes", "4", "--target-top1", "75.9"},
             {"--instance", "p4d.24xlarge", "--nodes", "8", "--pricing", "spot", "--checkpoint-every", "45min",
              "--storage", "fsx-lustre", "--storage-tib", "4.8"},
             {"--instance", "p3.16xlarge", "--nodes", "8", "--framework", "mxnet", "--strategy", "ps", "--ps-instance",
              "m4.16xlarge", "--ps-nodes", "16", "--stack", "legacy"},
             {"--instance", "Standard_ND96isr_H100_v5", "--nodes", "2", "--global-batch", "4096", "--precision", "bf16",
              "--loader", "dali"},
         }) {
        const std::string file = folder / "s.json";
        std::vector<std::string> save = flags;
        save.insert(save.end(), {"--save-scenario", file});
        const nlohmann::json by_flags = predict_json(save);
        const nlohmann::json by_file = predict_json({"--scenario", file});
        EXPECT_EQ(by_file, by_flags) << read_text_file(file, "scenario");
    }
}

TEST(ScenarioCli, CompareShowsEachConfigurationsPredictionAndTheDifference) {
    const TempFolder folder;
    const std::string p5 = folder / "p5.json";
    const std::string a3 = folder / "a3.json";
    const nlohmann::json p5_prediction =
        predict_json({"--instance", "p5.48xlarge", "--nodes", "4", "--save-scenario", p5});
    const nlohmann::json a3_prediction =
        predict_json({"--instance", "a3-highgpu-8g", "--nodes", "2", "--save-scenario", a3});

    std::ostringstream json_out;
    cli::run({"compare", p5, a3, "--json"}, json_out);
    const nlohmann::json compared = nlohmann::json::parse(json_out.str());
    ASSERT_EQ(compared.size(), 2u);
    EXPECT_EQ(compared[0]["label"], p5);
    nlohmann::json first = compared[0];
    first.erase("label");
    EXPECT_EQ(first, p5_prediction);
    nlohmann::json second = compared[1];
    second.erase("label");
    EXPECT_EQ(second, a3_prediction);

    std::ostringstream text;
    cli::run({"compare", p5, a3}, text);
    const double p5_throughput = p5_prediction["throughput_images_per_s"].get<double>();
    const double a3_throughput = a3_prediction["throughput_images_per_s"].get<double>();
    EXPECT_NE(text.str().find(format_count(p5_throughput) + " (" +
                              format_count(p5_prediction["interval"]["low"].get<double>()) + " - "),
              std::string::npos)
        << text.str();
    EXPECT_NE(text.str().find(format_count(a3_throughput)), std::string::npos) << text.str();
    EXPECT_NE(text.str().find(a3 + " vs " + p5), std::string::npos) << text.str();
    // The second's difference in throughput, in percent of the first's.
    char difference[32];
    const double percent = 100.0 * (a3_throughput / p5_throughput - 1.0);
    std::snprintf(difference, sizeof difference, "%s%.1f %%", percent >= 0 ? "+" : "", percent);
    std::string expected = difference;
    if (expected.find(".0 %") != std::string::npos) expected.replace(expected.find(".0 %"), 4, " %");
    EXPECT_NE(text.str().find(expected), std::string::npos) << expected << "\n" << text.str();
}

TEST(ScenarioCli, ANamedListIsPredictedInOrderAndComparedUnderItsNames) {
    const TempFolder folder;
    const std::string list = folder / "list.json";
    std::ofstream(list) << R"({"schema": "epochcast.scenario/1", "scenarios": [
        {"name": "small", "instance": "p5.48xlarge", "nodes": 1},
        {"name": "large", "instance": "p5.48xlarge", "nodes": 8}]})";
    const nlohmann::json predicted = predict_json({"--scenario", list});
    ASSERT_TRUE(predicted.is_array());
    ASSERT_EQ(predicted.size(), 2u);
    EXPECT_EQ(predicted[0]["gpus"], 8);
    EXPECT_EQ(predicted[1]["gpus"], 64);
    std::ostringstream text;
    cli::run({"compare", list}, text);
    EXPECT_NE(text.str().find("large vs small"), std::string::npos) << text.str();
    EXPECT_NE(text.str().find("1 node, 8 GPUs"), std::string::npos) << text.str();
    EXPECT_NE(text.str().find("8 nodes, 64 GPUs"), std::string::npos) << text.str();
}

TEST(ScenarioCli, MixesThatCannotMeanOneThingAreRefused) {
    const TempFolder folder;
    const std::string one = folder / "one.json";
    std::ofstream(one) << R"({"schema": "epochcast.scenario/1", "instance": "p5.48xlarge", "nodes": 2})";
    const std::string two = folder / "two.json";
    std::ofstream(two) << R"({"schema": "epochcast.scenario/1", "scenarios": [{"nodes": 1}, {"nodes": 2}]})";
    struct Case {
        std::string args;
        std::string error;
    };
    for (const Case& c : std::vector<Case>{
             {"predict --scenario '" + one + "' --nodes 4", "--nodes: the configuration comes from --scenario"},
             {"predict --scenario '" + one + "' --pricing spot", "--pricing: the configuration comes from --scenario"},
             {"predict --scenario '" + one + "' --elastic-spot", "--elastic-spot: the configuration comes from"},
             {"predict --scenario '" + two + "' --emit sbatch -o '" + (folder / "job.sbatch") + "'",
              "--emit: a launch file is for one configuration; " + two + " holds 2"},
             {"predict --scenario '" + (folder / "missing.json") + "'", "missing.json"},
             {"compare '" + one + "'", "compare: 1 configuration in the files; it takes two or more"},
             {"compare '" + one + "' '" + (folder / "missing.json") + "'", "missing.json"},
         }) {
        const auto result = testing::run_epochcast(c.args);
        EXPECT_EQ(result.exit_code, 2) << c.args << "\n" << result.err;
        EXPECT_NE(result.err.find(c.error), std::string::npos) << c.args << "\n" << result.err;
        EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    }
    EXPECT_FALSE(std::filesystem::exists(folder / "job.sbatch"));
}

}  // namespace
}  // namespace epochcast
