// simulate()'s progress reports and cancellation (what the GUI's background run relies on).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "model/cost_model.hpp"
#include "simulator/simulation.hpp"
#include "tests/support/temp_folder.hpp"

namespace epochcast {
namespace {

const CostModel& model() {
    static const CostModel instance(Catalog::built_in(), Calibration::built_in());
    return instance;
}

TEST(SimulationProgress, ReportsEveryIterationInOrder) {
    Scenario s;
    s.nodes = 2;
    sim::SimulationOptions o;
    o.iterations = 6;
    std::vector<int> done;
    o.on_progress = [&](int k, int total) {
        EXPECT_EQ(total, 6);
        done.push_back(k);
    };
    const sim::SimulationResult r = sim::simulate(model(), s, o);
    EXPECT_EQ(done, (std::vector<int>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(r.iteration_s.size(), 6u);
}

TEST(SimulationProgress, CancelKillsTheRunAndLeavesNoTimeline) {
    Scenario s;
    s.nodes = 32;  // 256 GPUs step by step: seconds of work, long enough to cancel
    sim::SimulationOptions o;
    o.iterations = 400;
    const testing::TempFolder folder;
    const std::filesystem::path timeline = folder.path / "epochcast-cancelled-timeline.json";
    o.timeline_path = timeline.string();
    std::atomic<bool> cancel{false};
    o.cancel = &cancel;
    int reports = 0;
    o.on_progress = [&](int, int) {
        if (++reports == 2) cancel = true;  // cancel once the run is under way
    };
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(sim::simulate(model(), s, o), sim::SimulationCancelled);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 60.0);
    EXPECT_GE(reports, 2);
    EXPECT_FALSE(std::filesystem::exists(timeline));
}

TEST(SimulationProgress, ACancelSetBeforehandRunsNothing) {
    Scenario s;
    s.nodes = 2;
    sim::SimulationOptions o;
    std::atomic<bool> cancel{true};
    o.cancel = &cancel;
    EXPECT_THROW(sim::simulate(model(), s, o), sim::SimulationCancelled);
    // and the next simulation in the same process runs normally
    o.cancel = nullptr;
    EXPECT_EQ(sim::simulate(model(), s, o).iteration_s.size(), 10u);
}

}  // namespace
}  // namespace epochcast

#include "simulator/timeline.hpp"

namespace epochcast {
namespace {

TEST(TimelineRead, ReadsBackWhatTheSimulationWrote) {
    Scenario s;
    s.nodes = 2;
    sim::SimulationOptions o;
    o.iterations = 2;
    const testing::TempFolder folder;
    const std::filesystem::path path = folder.path / "epochcast-read-timeline.json";
    o.timeline_path = path.string();
    sim::simulate(model(), s, o);
    const sim::Timeline t = sim::Timeline::read(path);
    std::filesystem::remove(path);
    int forward = 0;
    for (const sim::TimelineEvent& e : t.events()) {
        EXPECT_LE(e.start_s, e.end_s);
        if (e.name == "forward") ++forward;
    }
    EXPECT_EQ(forward, 2 * 16);  // every GPU of 2 x p3.16xlarge, every iteration
    EXPECT_FALSE(t.name_of(0).empty());
}

TEST(TimelineRead, ABadFileIsAnInputErrorNamingIt) {
    EXPECT_THROW(sim::Timeline::read("/nonexistent/t.json"), InputError);
    EXPECT_THROW(sim::Timeline::from_json(nlohmann::json{{"x", 1}}, "t.json"), InputError);
}

}  // namespace
}  // namespace epochcast

#include <sstream>

#include "simulator/progress.hpp"

namespace epochcast {
namespace {

// Issue 25: `simulate --nodes 100000` ran for over a minute with no progress shown.
TEST(ProgressPrinter, TheLineSaysIterationsPercentAndSeconds) {
    EXPECT_EQ(sim::progress_line(3, 10, 41.2), "simulated 3 of 10 iterations (30%), 41 s");
    EXPECT_EQ(sim::progress_line(0, 1, 0.4), "simulated 0 of 1 iterations (0%), 0 s");
}

TEST(ProgressPrinter, ATerminalIsRewrittenEverySecondALogEveryTen) {
    const sim::ProgressPace terminal = sim::progress_pace(true);
    EXPECT_TRUE(terminal.rewrite);
    EXPECT_DOUBLE_EQ(terminal.first_s, 2);
    EXPECT_DOUBLE_EQ(terminal.every_s, 1);
    const sim::ProgressPace log = sim::progress_pace(false);
    EXPECT_FALSE(log.rewrite);
    EXPECT_DOUBLE_EQ(log.first_s, 10);
    EXPECT_DOUBLE_EQ(log.every_s, 10);
}

TEST(ProgressPrinter, PrintsAtItsPaceWhileTheRunLasts) {
    std::ostringstream out;
    sim::ProgressPrinter printer(out, {0.05, 0.05, false});
    printer.update(3, 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    printer.stop();
    const std::string text = out.str();
    const auto lines = std::count(text.begin(), text.end(), '\n');
    EXPECT_GE(lines, 2) << text;
    EXPECT_LE(lines, 9) << text;
    EXPECT_EQ(text.rfind("simulated 3 of 10 iterations (30%), 0 s\n", 0), 0u) << text;
}

TEST(ProgressPrinter, RewritesOneLineOnATerminalAndEndsIt) {
    std::ostringstream out;
    {
        sim::ProgressPrinter printer(out, {0.05, 0.05, true});
        printer.update(1, 4);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }  // the destructor stops it
    const std::string text = out.str();
    EXPECT_EQ(text.rfind("\rsimulated 1 of 4 iterations (25%)", 0), 0u) << text;
    EXPECT_GE(std::count(text.begin(), text.end(), '\r'), 2) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
    EXPECT_EQ(text.back(), '\n');
}

TEST(ProgressPrinter, AShortRunPrintsNothing) {
    std::ostringstream out;
    sim::ProgressPrinter printer(out, sim::progress_pace(true));
    printer.update(10, 10);
    printer.stop();
    EXPECT_TRUE(out.str().empty());
}

}  // namespace
}  // namespace epochcast
