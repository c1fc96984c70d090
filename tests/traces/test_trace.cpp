// The epochcast.trace/1 format: the published traces parse, a trace round-trips with unknown
// keys kept, and every malformed run is rejected naming the file, the run index and the key.
// Comparisons and network entries: test_trace_comparisons.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <vector>

#include "model/errors.hpp"
#include "model/text_io.hpp"
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
    int runs = 0, comparisons = 0, networks = 0, findings = 0;
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
        // Writing it back loses nothing the reader sees.
        const Trace back = parse_trace(trace_json(trace), "back.json", catalog());
        EXPECT_EQ(back.runs.size(), trace.runs.size()) << entry.path();
        EXPECT_EQ(back.comparisons.size(), trace.comparisons.size()) << entry.path();
        EXPECT_EQ(back.networks.size(), trace.networks.size()) << entry.path();
        EXPECT_EQ(back.document, trace.document) << entry.path();
        runs += static_cast<int>(trace.runs.size());
        comparisons += static_cast<int>(trace.comparisons.size());
        networks += static_cast<int>(trace.networks.size());
        findings += static_cast<int>(finding_count);
    }
    EXPECT_GE(runs, 7);
    EXPECT_GE(comparisons, 3);
    EXPECT_GE(networks, 3);
    EXPECT_GE(findings, 10);
}

const Trace& published(const std::string& name) {
    static std::map<std::string, Trace> cache;
    auto it = cache.find(name);
    if (it == cache.end()) {
        it = cache.emplace(name, read_trace(EPOCHCAST_SOURCE_DIR "/traces/published/" + name, catalog())).first;
    }
    return it->second;
}

TEST(PublishedSeeds, Seed002SpeedupsAndTheApproximateRun) {
    const Trace& trace = published("seed002_mxnet_k80_v100_fine_tuning.json");
    ASSERT_EQ(trace.runs.size(), 1u);
    const Observation& run = trace.runs[0].observation;
    EXPECT_EQ(run.scenario.model, "resnet152");
    EXPECT_EQ(run.scenario.instance, "p2.8xlarge");
    EXPECT_EQ(run.scenario.classes, 256);
    EXPECT_EQ(run.scenario.dataset_images, 15240);
    EXPECT_DOUBLE_EQ(run.scenario.epochs, 6);
    EXPECT_DOUBLE_EQ(run.throughput_images_per_s, 6.0 * 15240 / 600);  // 6 epochs in about 10 minutes
    EXPECT_DOUBLE_EQ(run.time_to_train_s.value_or(0), 600);
    EXPECT_EQ(trace.runs[0].raw["approximate"], true);

    ASSERT_EQ(trace.comparisons.size(), 2u);
    for (const Comparison& c : trace.comparisons) {
        EXPECT_EQ(c.quantity, ComparisonQuantity::speedup);
        EXPECT_EQ(c.baseline.instance, "p2.xlarge");
        EXPECT_EQ(c.scenario.instance, "p2.8xlarge");
        EXPECT_EQ(c.scenario.gpus_per_node, 8);
        EXPECT_EQ(c.scenario.framework, Framework::mxnet);
        EXPECT_EQ(c.scenario.precision, Precision::fp32);
        EXPECT_EQ(c.scenario.batch_per_gpu, 32);
        EXPECT_DOUBLE_EQ(c.measured_low, c.measured_high);
    }
    EXPECT_EQ(trace.comparisons[0].scenario.model, "resnet152");
    EXPECT_DOUBLE_EQ(trace.comparisons[0].measured_low, 7.7);
    EXPECT_EQ(trace.comparisons[1].scenario.model, "resnet50");
    EXPECT_DOUBLE_EQ(trace.comparisons[1].measured_low, 0.94 * 8);  // from "94% efficiency"
}

TEST(PublishedSeeds, Seed003HasOnlyFindings) {
    const Trace& trace = published("seed003_dynamic_training.json");
    EXPECT_TRUE(trace.runs.empty());
    EXPECT_TRUE(trace.comparisons.empty());
    const auto& findings = trace.document["findings"];
    ASSERT_GE(findings.size(), 3u);
    EXPECT_EQ(findings[0]["configuration"]["instance"], "p3.16xlarge");
    EXPECT_EQ(findings[0]["value"]["low"], 8);
    EXPECT_EQ(findings[0]["value"]["high"], 96);
    EXPECT_DOUBLE_EQ(findings[1]["value"]["low"].get<double>(), 0.15);  // cost to train
    EXPECT_DOUBLE_EQ(findings[1]["value"]["high"].get<double>(), 0.50);
    EXPECT_DOUBLE_EQ(findings[2]["value"]["low"].get<double>(), 0.15);  // time to train
    EXPECT_DOUBLE_EQ(findings[2]["value"]["high"].get<double>(), 0.30);
}

TEST(PublishedSeeds, Seed004NetworksAndTheEfaComparison) {
    const Trace& trace = published("seed004_pytorch_eks_efa.json");
    ASSERT_EQ(trace.networks.size(), 3u);
    const NetworkMeasurement& four = trace.networks[0];
    EXPECT_EQ(four.efa_adapters, -1);  // all 4
    EXPECT_EQ(four.ranks, 16);
    ASSERT_EQ(four.samples.size(), 28u);
    EXPECT_DOUBLE_EQ(four.max_bus_bandwidth_GBps, 42.03);
    // The stored entry is what import-nccl fits to the kept log.
    int ranks = 0;
    const auto samples = parse_nccl_all_reduce(
        read_text_file(EPOCHCAST_SOURCE_DIR "/tests/traces/data/seed004_all_reduce_perf.log", "log"), "log", &ranks);
    const NetworkMeasurement refit = fit_alpha_beta(samples, ranks);
    // The file keeps 10 significant digits.
    EXPECT_NEAR(four.bus_bandwidth_GBps, refit.bus_bandwidth_GBps, 1e-6);
    EXPECT_NEAR(four.latency_s, refit.latency_s, 1e-11);
    EXPECT_NEAR(four.average_bus_bandwidth_GBps, refit.average_bus_bandwidth_GBps, 1e-9);

    EXPECT_EQ(trace.networks[1].efa_adapters, 1);
    EXPECT_TRUE(trace.networks[1].samples.empty());
    EXPECT_DOUBLE_EQ(trace.networks[1].bus_bandwidth_GBps, 5.89);
    EXPECT_DOUBLE_EQ(trace.networks[1].average_bus_bandwidth_GBps, 3.02);
    EXPECT_EQ(trace.networks[2].efa_adapters, 0);
    EXPECT_DOUBLE_EQ(trace.networks[2].bus_bandwidth_GBps, 2.38);
    EXPECT_DOUBLE_EQ(trace.networks[2].average_bus_bandwidth_GBps, 0.97);

    ASSERT_EQ(trace.comparisons.size(), 1u);
    const Comparison& efa = trace.comparisons[0];
    EXPECT_EQ(efa.quantity, ComparisonQuantity::epoch_time_ratio);
    EXPECT_DOUBLE_EQ(efa.measured_low, 0.92);   // 8% shorter epochs
    EXPECT_DOUBLE_EQ(efa.measured_high, 0.95);  // 5% shorter
    EXPECT_EQ(efa.baseline.efa_adapters, 0);
    EXPECT_EQ(efa.scenario.efa_adapters, -1);
    EXPECT_EQ(efa.scenario.instance, "p4d.24xlarge");
    EXPECT_EQ(efa.scenario.nodes, 3);
    EXPECT_EQ(efa.scenario.batch_per_gpu, 64);
    EXPECT_EQ(efa.scenario.framework, Framework::pytorch);
    EXPECT_EQ(efa.scenario.dataset_images, 1281167);
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
    const std::string second_run =
        error_of(R"({ "schema": "epochcast.trace/1", "runs": [ )" + std::string(kGoodRun) + ", " +
                 good_run_with(R"("batch_per_gpu": 128)", R"("batch_per_gpu": 0)") + " ] }");
    EXPECT_NE(second_run.find("run 1: key \"batch_per_gpu\""), std::string::npos) << second_run;
    EXPECT_NE(error_of(trace_with(good_run_with(R"("strategy": "hierarchical")", R"("strategy": "gossip")")))
                  .find("key \"strategy\""),
              std::string::npos);
}

TEST(Trace, PerStepComputeSamplesAreReadAndWrittenBack) {
    const std::string run =
        good_run_with(R"("loss": [6.9, 6.1])", R"("loss": [6.9, 6.1], "step_compute_s": [0.5, 0.52, 0.49])");
    const Trace first = parse_trace(trace_with(run), "t.json", catalog());
    EXPECT_EQ(first.runs[0].observation.step_compute_s, (std::vector<double>{0.5, 0.52, 0.49}));
    EXPECT_EQ(run_json(first.runs[0].observation)["measured"]["step_compute_s"].size(), 3u);
    EXPECT_TRUE(parse_trace(trace_with(kGoodRun), "t.json", catalog()).runs[0].observation.step_compute_s.empty());

    const std::string negative =
        error_of(trace_with(good_run_with(R"("loss": [6.9, 6.1])", R"("step_compute_s": [0.5, -1])")));
    EXPECT_NE(negative.find("run 0: key \"measured.step_compute_s\" must hold positive numbers, got -1 at index 1"),
              std::string::npos)
        << negative;
    const std::string not_array =
        error_of(trace_with(good_run_with(R"("loss": [6.9, 6.1])", R"("step_compute_s": 0.5)")));
    EXPECT_NE(not_array.find("key \"measured.step_compute_s\" must be an array"), std::string::npos) << not_array;
}

// A run's campaign (the runs measured together with one code and software setup) is read and
// written back; an empty one is refused; none leaves the trace file as the campaign.
TEST(Trace, TheCampaignIsReadAndWrittenBack) {
    const std::string run = good_run_with(R"("source": "test", )", R"("source": "test", "campaign": "lab table v2", )");
    const Trace trace = parse_trace(trace_with(run), "t.json", catalog());
    EXPECT_EQ(trace.runs[0].observation.campaign, "lab table v2");
    EXPECT_EQ(run_json(trace.runs[0].observation)["campaign"], "lab table v2");
    const Trace plain = parse_trace(trace_with(kGoodRun), "t.json", catalog());
    EXPECT_TRUE(plain.runs[0].observation.campaign.empty());
    EXPECT_FALSE(run_json(plain.runs[0].observation).contains("campaign"));
    const std::string empty =
        error_of(trace_with(good_run_with(R"("source": "test", )", R"("source": "test", "campaign": "", )")));
    EXPECT_NE(empty.find("run 0: key \"campaign\" must not be empty"), std::string::npos) << empty;
    const std::string number =
        error_of(trace_with(good_run_with(R"("source": "test", )", R"("source": "test", "campaign": 2, )")));
    EXPECT_NE(number.find("key \"campaign\" must be a string"), std::string::npos) << number;
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
    EXPECT_NE(
        error_of(trace_with(good_run_with(R"("measured": {)", R"("measuredx": {)"))).find("\"measured\" is missing"),
        std::string::npos);
    EXPECT_THROW(read_trace("/nonexistent/trace.json", catalog()), InputError);
}

}  // namespace
}  // namespace epochcast
