// The timeline of a 16-GPU iteration: valid Chrome trace-event JSON (what Perfetto and
// chrome://tracing read), a named track per GPU and one for the collectives, and the first
// bucket's all-reduce running while the backward pass is still going.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_process.hpp"
#include "tests/support/temp_file.hpp"

namespace epochcast {
namespace {

using nlohmann::json;
using testing::run_epochcast;
using testing::TempFile;

/// A path in the temporary folder that does not exist yet (removed when the test ends).
struct OutputPath {
    TempFile file{""};
    OutputPath() { std::filesystem::remove(file.path()); }
    std::string path() const { return file.path(); }
};

json read_timeline(const std::string& path) { return json::parse(testing::read_text(path)); }

TEST(Timeline, SixteenGpuIterationIsValidTraceEventJson) {
    const OutputPath out;
    const auto r = run_epochcast(
        "simulate --instance p3.16xlarge --framework tensorflow --nodes 2 --strategy hierarchical --iterations 1 "
        "--jitter 0 --timeline '" +
        out.path() + "' --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["simulation"]["timeline"], out.path());
    const json trace = read_timeline(out.path());
    ASSERT_TRUE(trace.contains("traceEvents"));
    ASSERT_TRUE(trace["traceEvents"].is_array());
    EXPECT_EQ(trace["displayTimeUnit"], "ms");

    std::map<std::pair<int, int>, std::string> thread_names;
    std::map<int, std::string> process_names;
    int forwards = 0, backwards = 0;
    double backward_end_us = 0;
    std::vector<std::pair<double, double>> buckets_us;
    for (const json& e : trace["traceEvents"]) {
        ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("tid") && e.contains("name")) << e;
        ASSERT_TRUE(e["pid"].is_number_integer() && e["tid"].is_number_integer()) << e;
        if (e["ph"] == "M") {
            if (e["name"] == "thread_name") thread_names[{e["pid"], e["tid"]}] = e["args"]["name"];
            if (e["name"] == "process_name") process_names[e["pid"]] = e["args"]["name"];
            continue;
        }
        ASSERT_EQ(e["ph"], "X") << e;
        const double ts = e["ts"], dur = e["dur"];
        EXPECT_GE(ts, 0.0);
        EXPECT_GE(dur, 0.0);
        if (e["name"] == "forward") ++forwards;
        if (e["name"] == "backward") {
            ++backwards;
            backward_end_us = std::max(backward_end_us, ts + dur);
        }
        if (e["name"].get<std::string>().rfind("bucket ", 0) == 0) buckets_us.emplace_back(ts, ts + dur);
    }
    // A compute track per GPU (2 nodes x 8), each named, and a collectives track.
    EXPECT_EQ(forwards, 16);
    EXPECT_EQ(backwards, 16);
    EXPECT_EQ(process_names.size(), 3u);
    EXPECT_EQ(thread_names.at({1, 7}), "GPU 7 compute");
    EXPECT_EQ(thread_names.at({2, 0}), "hierarchical all-reduce");
    // Overlap: the first bucket starts before the backward pass ends (TensorFlow's window is the
    // last 8.7% of it) and the iteration's last bucket ends after it.
    ASSERT_GE(buckets_us.size(), 2u);
    std::sort(buckets_us.begin(), buckets_us.end());
    EXPECT_LT(buckets_us.front().first, backward_end_us);
    EXPECT_GT(buckets_us.front().second, backward_end_us);
    EXPECT_GE(buckets_us.back().first, backward_end_us);
    // Nothing left beside the file: it was written to a temporary name and renamed.
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(out.path()).parent_path())) {
        EXPECT_EQ(entry.path().string().find(out.path() + ".tmp"), std::string::npos) << entry.path();
    }
}

TEST(Timeline, ParameterServersHaveAPushPullTrackPerNode) {
    const OutputPath out;
    const auto r = run_epochcast(
        "simulate --nodes 2 --strategy ps --ps-instance m4.16xlarge --ps-nodes 4 "
        "--framework mxnet --iterations 2 --timeline '" +
        out.path() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("timeline written to"), std::string::npos);
    const json trace = read_timeline(out.path());
    int push_pull = 0;
    for (const json& e : trace["traceEvents"]) {
        if (e["ph"] == "X" && e["name"] == "push/pull") {
            ++push_pull;
            EXPECT_EQ(e["tid"], 8);  // the track after the node's 8 GPUs
        }
    }
    EXPECT_GT(push_pull, 4);
}

}  // namespace
}  // namespace epochcast
