// The training-log reader (traces/log_import.hpp) on logs written as torchvision's train.py,
// DLLogger and Lightning print them (tests/support/training_logs.hpp): each figure's steps and
// value as printed, the lines of other kinds left out, and the steady throughput recomputed here
// as the median of the figures past the skipped steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model/errors.hpp"
#include "tests/support/error_of.hpp"
#include "tests/support/training_logs.hpp"
#include "traces/log_import.hpp"

namespace epochcast {
namespace {

using testing::PrintedFigure;

/// Every tenth step of a 313-step epoch, as MetricLogger prints them (print_freq 10): the first
/// slow (the loader starting), then seconds that vary by a tenth of a millisecond per line.
std::vector<PrintedFigure> torchvision_epoch(double base_s) {
    std::vector<PrintedFigure> figures;
    for (long step = 0; step < 313; step += 10) {
        figures.push_back({step, step == 0 ? 5.0 : base_s + 0.0001 * static_cast<double>((step / 10) % 7)});
    }
    return figures;
}

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

TEST(LogImport, TorchvisionFiguresAverageTheEpochsLastTwentySteps) {
    const std::vector<std::vector<PrintedFigure>> epochs = {torchvision_epoch(0.4), torchvision_epoch(0.41)};
    const std::string text = testing::torchvision_log(epochs, {131, 128}, 313, 256, 16);
    const TrainingLog log = read_training_log(text, "train.log");
    EXPECT_EQ(log.format, TrainingLogFormat::torchvision);
    ASSERT_EQ(log.figures.size(), 64u);  // 32 a epoch; the evaluation's lines are not training's
    EXPECT_EQ(log.steps_per_epoch, 313);
    EXPECT_EQ(log.batch_per_gpu, 256);
    EXPECT_EQ(log.world_size, 16);
    ASSERT_EQ(log.epoch_s.size(), 2u);
    EXPECT_DOUBLE_EQ(log.epoch_s[0], 131);
    EXPECT_DOUBLE_EQ(log.epoch_s[1], 128);
    EXPECT_EQ(log.figures[1].epoch, 0);
    EXPECT_EQ(log.figures[1].first_step, 0);   // step 10: steps 0-10 in the window of 20
    EXPECT_EQ(log.figures[3].first_step, 11);  // step 30: steps 11-30
    EXPECT_EQ(log.figures[3].last_step, 30);
    EXPECT_DOUBLE_EQ(log.figures[3].iteration_s, 0.4003);
    EXPECT_EQ(log.figures[32].epoch, 1);
    EXPECT_DOUBLE_EQ(log.figures[32].iteration_s, 5.0);

    // Skipping 50 steps leaves the figures from step 70 (window 51-70) of each epoch.
    std::vector<double> kept;
    for (const auto& epoch : epochs)
        for (const PrintedFigure& f : epoch)
            if (f.step - 19 >= 50) kept.push_back(f.value);
    const LogThroughput t = steady_throughput(log, 50, 4096, "train.log");
    EXPECT_EQ(t.figures_used, static_cast<int>(kept.size()));
    EXPECT_EQ(t.figures_used + t.figures_skipped, 64);
    EXPECT_NEAR(t.iteration_s, median_of(kept), 1e-12);
    EXPECT_NEAR(t.throughput_images_per_s, 4096 / median_of(kept), 1e-9);
    // Without skipping, the slow first lines count, but the median holds.
    EXPECT_EQ(steady_throughput(log, 0, 4096, "train.log").figures_skipped, 0);
}

TEST(LogImport, LinesMayCarryALaunchersPrefix) {
    // srun --label and torchrun's --tee prefix each line with the rank.
    const std::string text = testing::torchvision_log({torchvision_epoch(0.4)}, {131}, 313, 256, 8, "0: ");
    const TrainingLog log = read_training_log(text, "slurm-7.out");
    EXPECT_EQ(log.figures.size(), 32u);
    EXPECT_EQ(log.world_size, 8);
    EXPECT_EQ(log.epoch_s.size(), 1u);
}

TEST(LogImport, DlloggerFiguresAverageTheStepsSinceTheLineBefore) {
    const std::vector<std::vector<PrintedFigure>> epochs = {
        {{100, 6000.5}, {200, 7100.25}, {300, 7200.75}, {400, 7150.0}}, {{100, 6900.0}, {200, 7190.5}, {300, 7210.0}}};
    const TrainingLog log = read_training_log(testing::dllogger_log(epochs, 256), "raport.json");
    EXPECT_EQ(log.format, TrainingLogFormat::dllogger);
    ASSERT_EQ(log.figures.size(), 7u);  // no verbose, validation, epoch or run summary line
    EXPECT_EQ(log.batch_per_gpu, 256);
    EXPECT_EQ(log.world_size, 0);  // not logged
    EXPECT_EQ(log.steps_per_epoch, 0);
    EXPECT_TRUE(log.epoch_s.empty());
    EXPECT_EQ(log.figures[0].first_step, 0);
    EXPECT_EQ(log.figures[1].first_step, 101);
    EXPECT_EQ(log.figures[1].last_step, 200);
    EXPECT_EQ(log.figures[4].epoch, 1);
    EXPECT_EQ(log.figures[4].first_step, 0);
    EXPECT_DOUBLE_EQ(log.figures[2].images_per_s, 7200.75);

    // Skip 100: the figures from step 101 on; the images per second are all ranks' already.
    const LogThroughput t = steady_throughput(log, 100, 2048, "raport.json");
    EXPECT_EQ(t.figures_used, 5);
    const double median = median_of({7100.25, 7200.75, 7150.0, 7190.5, 7210.0});
    EXPECT_DOUBLE_EQ(t.throughput_images_per_s, median);
    EXPECT_DOUBLE_EQ(t.iteration_s, 2048 / median);
}

TEST(LogImport, LightningRedrawsBecomeOneFigureEach) {
    // 2.5 it/s is 0.4 s a step; below one a second tqdm prints seconds per step.
    const std::vector<std::vector<PrintedFigure>> epochs = {{{60, 0.5}, {120, 0.4}, {180, 0.4}, {313, 1.25}},
                                                            {{60, 0.4}, {200, 0.5}, {313, 0.4}}};
    const TrainingLog log = read_training_log(testing::lightning_log(epochs, {0, 130}, 313), "lightning.log");
    EXPECT_EQ(log.format, TrainingLogFormat::lightning);
    ASSERT_EQ(log.figures.size(), 7u);  // each redraw once, the "?it/s" bar none
    EXPECT_EQ(log.steps_per_epoch, 313);
    EXPECT_EQ(log.figures[1].first_step, 60);
    EXPECT_EQ(log.figures[1].last_step, 119);
    EXPECT_DOUBLE_EQ(log.figures[3].iteration_s, 1.25);
    EXPECT_DOUBLE_EQ(log.figures[0].iteration_s, 1 / 2.0);
    EXPECT_EQ(log.figures[4].epoch, 1);
    EXPECT_EQ(log.figures[4].first_step, 0);
    ASSERT_EQ(log.epoch_s.size(), 1u);  // the first epoch's bar shows 00:00 (none), the second's 02:10
    EXPECT_DOUBLE_EQ(log.epoch_s[0], 130);

    const LogThroughput t = steady_throughput(log, 60, 512, "lightning.log");
    EXPECT_EQ(t.figures_used, 5);  // those from step 60 on: three of epoch 0, two of epoch 1
    EXPECT_NEAR(t.iteration_s, median_of({0.4, 0.4, 1.25, 0.5, 0.4}), 1e-12);
}

TEST(LogImport, TheFormatIsTheFirstThroughputLinesKindUnlessNamed) {
    const std::string tv = testing::torchvision_log({torchvision_epoch(0.4)}, {131}, 313, 256, 8);
    EXPECT_EQ(read_training_log(tv, "a").format, TrainingLogFormat::torchvision);
    EXPECT_EQ(read_training_log(tv, "a", TrainingLogFormat::torchvision).figures.size(), 32u);
    // Named as another kind, the log has none of its lines.
    const std::string error =
        testing::input_error_of([&] { read_training_log(tv, "a.log", TrainingLogFormat::dllogger); });
    EXPECT_NE(error.find("a.log: no training step's throughput in the log as dllogger prints it"), std::string::npos)
        << error;
    EXPECT_EQ(parse_training_log_format("auto"), std::nullopt);
    EXPECT_EQ(parse_training_log_format("lightning"), TrainingLogFormat::lightning);
    EXPECT_NE(testing::input_error_of([] {
                  parse_training_log_format("tensorboard");
              }).find("--format must be auto, torchvision, dllogger or lightning"),
              std::string::npos);
}

TEST(LogImport, ALogWithoutThroughputOrWithBrokenLinesIsAnErrorNamingIt) {
    const std::string none =
        testing::input_error_of([] { read_training_log("Using cache found in /root/.cache\nloss 6.9\n", "job.out"); });
    EXPECT_NE(none.find("job.out: no throughput line of torchvision's train.py"), std::string::npos) << none;
    const std::string json = testing::input_error_of([] {
        read_training_log(
            "DLLL {\"type\": \"LOG\", \"step\": [0, 10], \"data\": {\"train.total_ips\": 5}}\n"
            "DLLL {\"type\": \"LOG\", \"step\": [0, 2\n",
            "raport.json");
    });
    EXPECT_NE(json.find("raport.json: line 2: a DLLL line that is not JSON"), std::string::npos) << json;
    const std::string zero = testing::input_error_of(
        [] { read_training_log("Epoch: [0]  [10/313]  eta: 0:01:00  time: 0.0000  data: 0.1\n", "t.log"); });
    EXPECT_NE(zero.find("t.log: line 1: a step time that is no positive number of seconds"), std::string::npos) << zero;
}

TEST(LogImport, SkippingEveryFigureIsAnErrorThatSaysHowToGetOne) {
    const TrainingLog log =
        read_training_log(testing::torchvision_log({torchvision_epoch(0.4)}, {131}, 313, 256, 8), "short.log");
    const std::string error = testing::input_error_of([&] { steady_throughput(log, 400, 2048, "short.log"); });
    EXPECT_NE(error.find("short.log: each of its 32 throughput figures averages over one of an epoch's first 400 "
                         "steps (--skip-steps)"),
              std::string::npos)
        << error;
    EXPECT_NE(testing::input_error_of([&] {
                  steady_throughput(log, -1, 2048, "short.log");
              }).find("--skip-steps must be 0 or more"),
              std::string::npos);
}

TEST(LogImport, EpochTimesOfADayOrMoreReadAsPythonWritesThem) {
    const std::string text =
        "Epoch: [0]  [100/313]  eta: 1 day, 0:00:00  time: 280.0000  data: 0.1\n"
        "Epoch: [0] Total time: 1 day, 2:03:04\n";
    const TrainingLog log = read_training_log(text, "slow.log");
    ASSERT_EQ(log.epoch_s.size(), 1u);
    EXPECT_DOUBLE_EQ(log.epoch_s[0], 86400 + 2 * 3600 + 3 * 60 + 4);
}

// train.py prints an epoch's time in whole seconds: a short epoch (a test's, a tiny model's) reads
// 0:00:00, which is no time at all; it is left out rather than recorded as an epoch of 0 s, which a
// trace may not hold (the torchrun test's real log, tests/cli/torchrun_lines.sh, had one).
TEST(LogImport, AnEpochPrintedAsNoTimeIsNotAnEpochTime) {
    const std::string text =
        "Epoch: [0]  [ 0/100]  eta: 0:00:01  time: 0.0100  data: 0.0010\n"
        "Epoch: [0] Total time: 0:00:00\n"
        "Epoch: [1]  [ 0/100]  eta: 0:00:01  time: 0.0100  data: 0.0010\n"
        "Epoch: [1] Total time: 0:00:02\n";
    const TrainingLog log = read_training_log(text, "short.log");
    ASSERT_EQ(log.epoch_s.size(), 1u);
    EXPECT_DOUBLE_EQ(log.epoch_s[0], 2);
}

}  // namespace
}  // namespace epochcast
