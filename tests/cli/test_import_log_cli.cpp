// `epochcast import-log` (issue 61): a training script's log becomes a trace run that calibrate
// reads; the command a launch file's header gives, run as written on the log of the job it
// launches; and each configuration the log contradicts, or a missing one, refused with no file
// written. The reader itself is tested in tests/traces/test_log_import.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "model/catalog.hpp"
#include "tests/cli/cli_process.hpp"
#include "tests/support/temp_folder.hpp"
#include "tests/support/training_logs.hpp"
#include "traces/trace.hpp"

namespace epochcast {
namespace {

using testing::PrintedFigure;
using testing::TempFolder;

/// Two epochs of 313 steps of train.py on `world_size` ranks of batch 256: 5 s for the first step,
/// then `step_s` and a little more.
std::string train_log(int world_size, double step_s = 0.52) {
    std::vector<std::vector<PrintedFigure>> epochs(2);
    for (auto& epoch : epochs)
        for (long step = 0; step < 313; step += 10)
            epoch.push_back({step, step == 0 ? 5.0 : step_s + 0.0001 * static_cast<double>((step / 10) % 3)});
    return testing::torchvision_log(epochs, {170, 168}, 313, 256, world_size);
}

std::string write(const TempFolder& folder, const std::string& name, const std::string& text) {
    const std::string path = folder / name;
    std::ofstream(path) << text;
    return path;
}

TEST(ImportLogCli, ATorchvisionLogBecomesARunThatCalibrateReads) {
    const TempFolder folder;
    const std::string log = write(folder, "train.log", train_log(16));
    const std::string trace_path = folder / "run-trace.json";
    std::ostringstream out;
    cli::run(
        {"import-log", log, "--instance", "p4d.24xlarge", "--nodes", "2", "--batch-per-gpu", "256", "-o", trace_path},
        out);
    EXPECT_NE(out.str().find("torchvision  50 / 14"), std::string::npos) << out.str();

    const Trace trace = read_trace(trace_path, Catalog::built_in());
    ASSERT_EQ(trace.runs.size(), 1u);
    const Observation& run = trace.runs[0].observation;
    EXPECT_EQ(run.scenario.instance, "p4d.24xlarge");
    EXPECT_EQ(run.scenario.nodes, 2);
    EXPECT_EQ(run.scenario.gpus_per_node, 8);
    EXPECT_EQ(run.scenario.batch_per_gpu, 256);
    // Steps 70-310 of each epoch: 0.52, 0.5201 and 0.5202 s in turn; the median of the 50 is 0.5201.
    ASSERT_TRUE(run.iteration_s.has_value());
    EXPECT_NEAR(*run.iteration_s, 0.5201, 1e-12);
    EXPECT_NEAR(run.throughput_images_per_s, 16 * 256 / 0.5201, 1e-9);
    // 313 steps of 4,096 images are ImageNet's 1,281,167 within a batch: the epochs' median time.
    ASSERT_TRUE(run.epoch_s.has_value());
    EXPECT_DOUBLE_EQ(*run.epoch_s, 169);
    EXPECT_EQ(trace.runs[0].raw["imported_log"]["figures_used"], 50);

    std::ostringstream calibrated;
    cli::run({"calibrate", trace_path, "-o", folder / "calibration.json"}, calibrated);
    EXPECT_TRUE(std::filesystem::exists(folder / "calibration.json")) << calibrated.str();
}

TEST(ImportLogCli, TheLaunchFilesCheckCommandReadsTheJobsLog) {
    const TempFolder folder;
    const std::string job = folder / "job.sbatch";
    std::ostringstream emitted;
    cli::run({"predict", "--instance", "p4d.24xlarge", "--nodes", "2", "--batch-per-gpu", "256", "--emit", "sbatch",
              "-o", job},
             emitted);
    // The header's line, LOG the job's output as Slurm names it.
    std::ifstream in(job);
    std::string line;
    std::string command;
    while (std::getline(in, line)) {
        const auto at = line.find("epochcast import-log LOG ");
        if (at != std::string::npos) command = line.substr(at + 10);
    }
    ASSERT_FALSE(command.empty()) << "no import-log line in the header";
    EXPECT_NE(command.find("--format torchvision"), std::string::npos) << command;
    const std::string log = write(folder, "epochcast-42.out", train_log(16));
    command.replace(command.find("LOG"), 3, "'" + log + "'");
    command.replace(command.find("run-trace.json"), 14, "'" + (folder / "run-trace.json") + "'");
    const auto result = testing::run_epochcast(command);
    ASSERT_EQ(result.exit_code, 0) << command << "\n" << result.err;
    const Trace trace = read_trace(folder / "run-trace.json", Catalog::built_in());
    ASSERT_EQ(trace.runs.size(), 1u);
    EXPECT_EQ(trace.runs[0].observation.scenario.nodes, 2);
}

TEST(ImportLogCli, AConfigurationTheLogContradictsOrLeavesOutIsRefusedWithNoFile) {
    const TempFolder folder;
    const std::string log = write(folder, "train.log", train_log(16));
    const std::string trace_path = folder / "t.json";
    struct Case {
        std::string args;
        std::string error;
    };
    for (const Case& c : std::vector<Case>{
             {"--instance p4d.24xlarge --nodes 1 --batch-per-gpu 256", "the script ran 16 ranks, the flags say 8"},
             {"--instance p4d.24xlarge --nodes 2 --batch-per-gpu 128",
              "the script ran a batch of 256 per rank, the flags say 128"},
             {"--instance p4d.24xlarge --nodes 2", "--batch-per-gpu or --global-batch"},
             {"--nodes 2 --batch-per-gpu 256", "--instance is required"},
             {"--instance p4d.24xlarge --nodes 2 --batch-per-gpu 256 --format csv", "--format must be auto"},
             {"--instance p4d.24xlarge --nodes 2 --batch-per-gpu 256 --compile", "calibrate refuses"},
             {"--instance p4d.24xlarge --nodes 2 --batch-per-gpu 256 --skip-steps 400", "first 400 steps"},
         }) {
        const auto result = testing::run_epochcast("import-log '" + log + "' " + c.args + " -o '" + trace_path + "'");
        EXPECT_EQ(result.exit_code, 2) << c.args << "\n" << result.err;
        EXPECT_NE(result.err.find(c.error), std::string::npos) << c.args << "\n" << result.err;
        EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
        EXPECT_FALSE(std::filesystem::exists(trace_path)) << c.args;
    }
}

TEST(ImportLogCli, EpochsOfAnotherDatasetLeaveTheEpochTimeOut) {
    const TempFolder folder;
    const std::string log = write(folder, "train.log", train_log(16));
    std::ostringstream out;
    cli::run({"import-log", log, "--instance", "p4d.24xlarge", "--nodes", "2", "--batch-per-gpu", "256",
              "--dataset-images", "100000", "-o", folder / "t.json"},
             out);
    EXPECT_NE(out.str().find("epoch time left out: the log's epochs held 313 steps of 4,096 images, the "
                             "scenario's 100,000 (--dataset-images)"),
              std::string::npos)
        << out.str();
    const Trace trace = read_trace(folder / "t.json", Catalog::built_in());
    EXPECT_FALSE(trace.runs[0].observation.epoch_s.has_value());
    EXPECT_GT(trace.runs[0].observation.throughput_images_per_s, 0);
}

}  // namespace
}  // namespace epochcast
