// The epochcast.trace/1 format: the published traces parse, a trace round-trips with unknown
// keys kept, and every malformed run is rejected naming the file, the run index and the key.
// Comparisons and network entries: test_trace_comparisons.cpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "model/errors.hpp"
#include "tests/support/temp_file.hpp"
#include "traces/trace.hpp"

namespace epochcast {
namespace {

using testing::TempFile;

const Catalog& catalog() {
    static const Catalog built_in = Catalog::built_in();
    return built_in;
}

const char* kGoodRun = R"({ "source": "test", "model": "resnet50", "instance": "p3.16xlarge", "nodes": 2,
    "gpus_per_node": 8, "framework": "tensorflow", "strategy": "hierarchical", "precision": "amp",
    "batch_per_gpu": 128, "cluster_note": "kept", "measured": { "throughput_images_per_s": 9000, "epoch_s": 140,
    "loss": [6.9, 6.1] } })";

std::string trace_with(const std::string& run) {
    return R"({ "schema": "epochcast.trace/1", "description": "kept too", "runs": [ )" + run + " ] }";
}

/// Replace `"key": value` text of kGoodRun.
std::string good_run_with(const std::string& from, const std::string& to) {
    std::string run = kGoodRun;
    const auto at = run.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return run.replace(at, from.size(), to);
}

std::string error_of(const std::string& text, const Catalog& with = catalog()) {
    try {
        parse_trace(text, "t.json", with);
    } catch (const InputError& error) {
        return error.what();
    }
    ADD_FAILURE() << "expected an InputError";
    return "";
}

TEST(Trace, EveryPublishedTraceParses) {
    int runs = 0;
    for (const auto& entry : std::filesystem::directory_iterator(EPOCHCAST_SOURCE_DIR "/traces/published")) {
        if (entry.path().extension() != ".json") continue;
        const Trace trace = read_trace(entry.path(), catalog());
        EXPECT_TRUE(trace.document.contains("description")) << entry.path();
        // A published trace holds at least one figure: a run, a comparison, a network or a finding.
        const auto found = trace.document.find("findings");
        const std::size_t finding_count = found != trace.document.end() && found->is_array() ? found->size() : 0;
        EXPECT_GT(trace.runs.size() + trace.comparisons.size() + trace.networks.size() + finding_count, 0u)
            << entry.path();
        for (const TraceRun& run : trace.runs) {
            EXPECT_FALSE(run.observation.source.empty());
            EXPECT_GT(run.observation.throughput_images_per_s, 0);
        }
        for (const Comparison& comparison : trace.comparisons) EXPECT_FALSE(comparison.source.empty()) << entry.path();
        for (const NetworkMeasurement& network : trace.networks) EXPECT_FALSE(network.source.empty()) << entry.path();
        if (found != trace.document.end()) {
            ASSERT_TRUE(found->is_array()) << entry.path();
            for (const auto& finding : *found) {
                EXPECT_TRUE(finding.contains("source") && finding.contains("what")) << entry.path() << finding.dump();
            }
        }
        runs += static_cast<int>(trace.runs.size());
    }
    EXPECT_GE(runs, 6);
}

TEST(Trace, ReadsTheTypedView) {
    const Trace trace = parse_trace(trace_with(kGoodRun), "t.json", catalog());
    ASSERT_EQ(trace.runs.size(), 1u);
    const Observation& o = trace.runs[0].observation;
    EXPECT_EQ(o.origin, "t.json#0");
    EXPECT_EQ(o.scenario.nodes, 2);
    EXPECT_EQ(o.scenario.batch_per_gpu, 128);
    EXPECT_EQ(o.scenario.strategy, Strategy::hierarchical);
    EXPECT_EQ(o.scenario.image_size, 224);  // default
    EXPECT_DOUBLE_EQ(o.throughput_images_per_s, 9000);
    ASSERT_TRUE(o.epoch_s.has_value());
    EXPECT_DOUBLE_EQ(*o.epoch_s, 140);
    EXPECT_FALSE(o.time_to_train_s.has_value());
}

TEST(Trace, RoundTripKeepsUnknownKeys) {
    const Trace first = parse_trace(trace_with(kGoodRun), "t.json", catalog());
    const TempFile file("{}");
    write_trace(first, file.path());
    const Trace second = read_trace(file.path(), catalog());
    ASSERT_EQ(second.runs.size(), 1u);
    EXPECT_EQ(second.runs[0].raw["cluster_note"], "kept");
    EXPECT_EQ(second.runs[0].raw["measured"]["loss"].size(), 2u);
    EXPECT_EQ(second.document["description"], "kept too");
    EXPECT_DOUBLE_EQ(second.runs[0].observation.throughput_images_per_s, 9000);
    EXPECT_EQ(second.runs[0].observation.scenario.nodes, 2);
}

TEST(Trace, WriteIntoMissingFolderFailsAndLeavesNothing) {
    const Trace trace = parse_trace(trace_with(kGoodRun), "t.json", catalog());
    const auto path = std::filesystem::temp_directory_path() / "epochcast-no-such-dir" / "out.json";
    EXPECT_THROW(write_trace(trace, path), InputError);
    EXPECT_FALSE(std::filesystem::exists(path.parent_path()));
}

TEST(TraceErrors, MissingKeyNamesFileRunAndKey) {
    const std::string message = error_of(trace_with(good_run_with(R"("instance": "p3.16xlarge", )", "")));
    EXPECT_NE(message.find("t.json: run 0: key \"instance\" is missing"), std::string::npos) << message;
}

TEST(TraceErrors, WrongTypeNegativeThroughputUnknownInstance) {
    EXPECT_NE(error_of(trace_with(good_run_with(R"("nodes": 2)", R"("nodes": "two")"))).find("key \"nodes\""),
              std::string::npos);
    const std::string negative =
        error_of(trace_with(good_run_with(R"("throughput_images_per_s": 9000)", R"("throughput_images_per_s": -5)")));
    EXPECT_NE(negative.find("key \"measured.throughput_images_per_s\" must be positive"), std::string::npos)
        << negative;
    const std::string unknown =
        error_of(trace_with(good_run_with(R"("instance": "p3.16xlarge")", R"("instance": "p7.huge")")));
    EXPECT_NE(unknown.find("run 0: key \"instance\""), std::string::npos) << unknown;
    EXPECT_NE(unknown.find("p7.huge"), std::string::npos) << unknown;
    const std::string second_run = error_of(
        R"({ "schema": "epochcast.trace/1", "runs": [ )" + std::string(kGoodRun) + ", " +
        good_run_with(R"("batch_per_gpu": 128)", R"("batch_per_gpu": 0)") + " ] }");
    EXPECT_NE(second_run.find("run 1: key \"batch_per_gpu\""), std::string::npos) << second_run;
    EXPECT_NE(error_of(trace_with(good_run_with(R"("strategy": "hierarchical")", R"("strategy": "gossip")")))
                  .find("key \"strategy\""),
              std::string::npos);
}

TEST(TraceErrors, InstanceFromAnExtraCatalogIsAccepted) {
    const std::string run = good_run_with(R"("instance": "p3.16xlarge")", R"("instance": "lab.v100x8")");
    EXPECT_NE(error_of(trace_with(run)).find("lab.v100x8"), std::string::npos);
    Catalog extended = catalog();
    extended.merge(Catalog::parse(R"({ "schema": "epochcast.catalog/1", "instances": [ { "name": "lab.v100x8",
        "gpu": "V100-SXM2-16GB", "gpus": 8, "vcpus": 64, "memory_gib": 512, "network_gbps": 100,
        "intra_node_GBps": 300, "price_usd_per_hour": 20, "source": "test" } ] })",
                                  "lab.json", catalog()));
    EXPECT_NO_THROW(parse_trace(trace_with(run), "t.json", extended));
}

TEST(TraceErrors, MalformedDocuments) {
    EXPECT_NE(error_of("{ \"schema\": ").find("t.json: malformed JSON"), std::string::npos);
    EXPECT_NE(error_of(R"({ "schema": "epochcast.catalog/1", "runs": [] })").find("schema"), std::string::npos);
    EXPECT_NE(error_of(R"({ "schema": "epochcast.trace/1" })").find("runs"), std::string::npos);
    EXPECT_NE(error_of(trace_with(good_run_with(R"("measured": {)", R"("measuredx": {)"))).find("\"measured\" is missing"),
              std::string::npos);
    EXPECT_THROW(read_trace("/nonexistent/trace.json", catalog()), InputError);
}

}  // namespace
}  // namespace epochcast
