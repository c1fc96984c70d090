// Comparisons and network entries of epochcast.trace/1: published relative figures parse into
// typed Comparisons, round-trip with unknown keys kept, and malformed ones are rejected naming
// the file, "comparisons[I]", the part and the key; network entries carry efa_adapters and may
// come from a published table without samples.
#include <gtest/gtest.h>

#include <string>

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

// Seed 004's shape: 3 x p4d.24xlarge, EFA against TCP sockets, epochs 5-8% shorter with EFA.
const char* kComparison = R"({ "source": "test", "quantity": "epoch_time_ratio", "note": "kept",
    "baseline": { "model": "resnet50", "instance": "p4d.24xlarge", "nodes": 3, "gpus_per_node": 8,
                  "framework": "pytorch", "strategy": "ring", "precision": "fp32", "batch_per_gpu": 64,
                  "efa_adapters": 0, "baseline_note": "kept" },
    "scenario": { "model": "resnet50", "instance": "p4d.24xlarge", "nodes": 3, "gpus_per_node": 8,
                  "framework": "pytorch", "strategy": "ring", "precision": "fp32", "batch_per_gpu": 64 },
    "measured": { "low": 0.92, "high": 0.95, "wording": "kept" } })";

// Seed 002's shape: one value, 1 to 8 K80.
const char* kSpeedup = R"({ "source": "test", "quantity": "speedup",
    "baseline": { "model": "resnet152", "classes": 256, "dataset_images": 15240, "instance": "p2.xlarge",
                  "nodes": 1, "framework": "mxnet", "strategy": "ring", "precision": "fp32", "batch_per_gpu": 32 },
    "scenario": { "model": "resnet152", "classes": 256, "dataset_images": 15240, "instance": "p2.8xlarge",
                  "nodes": 1, "framework": "mxnet", "strategy": "ring", "precision": "fp32", "batch_per_gpu": 32 },
    "measured": { "ratio": 7.7 } })";

std::string trace_with_comparisons(const std::string& entries) {
    return R"({ "schema": "epochcast.trace/1", "runs": [], "comparisons": [ )" + entries + " ] }";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at == std::string::npos) return text;
    return text.replace(at, from.size(), to);
}

std::string error_of(const std::string& text) {
    try {
        parse_trace(text, "t.json", catalog());
    } catch (const InputError& error) {
        return error.what();
    }
    ADD_FAILURE() << "expected an InputError";
    return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(TraceComparisons, ParseTheTypedView) {
    const Trace trace =
        parse_trace(trace_with_comparisons(std::string(kComparison) + ", " + kSpeedup), "t.json", catalog());
    EXPECT_TRUE(trace.runs.empty());
    ASSERT_EQ(trace.comparisons.size(), 2u);

    const Comparison& efa = trace.comparisons[0];
    EXPECT_EQ(efa.origin, "t.json#comparisons[0]");
    EXPECT_EQ(efa.source, "test");
    EXPECT_EQ(efa.quantity, ComparisonQuantity::epoch_time_ratio);
    EXPECT_DOUBLE_EQ(efa.measured_low, 0.92);
    EXPECT_DOUBLE_EQ(efa.measured_high, 0.95);
    EXPECT_EQ(efa.baseline.efa_adapters, 0);
    EXPECT_EQ(efa.scenario.efa_adapters, -1);  // absent: all the instance has
    EXPECT_EQ(efa.scenario.instance, "p4d.24xlarge");
    EXPECT_EQ(efa.scenario.nodes, 3);
    EXPECT_EQ(efa.scenario.batch_per_gpu, 64);
    EXPECT_EQ(efa.scenario.framework, Framework::pytorch);
    EXPECT_EQ(efa.scenario.precision, Precision::fp32);

    const Comparison& k80 = trace.comparisons[1];
    EXPECT_EQ(k80.origin, "t.json#comparisons[1]");
    EXPECT_EQ(k80.quantity, ComparisonQuantity::speedup);
    EXPECT_DOUBLE_EQ(k80.measured_low, 7.7);
    EXPECT_DOUBLE_EQ(k80.measured_high, 7.7);  // a single ratio: low == high
    EXPECT_EQ(k80.baseline.instance, "p2.xlarge");
    EXPECT_EQ(k80.scenario.instance, "p2.8xlarge");
    EXPECT_EQ(k80.scenario.model, "resnet152");
    EXPECT_EQ(k80.scenario.classes, 256);
    EXPECT_EQ(k80.scenario.dataset_images, 15240);
}

TEST(TraceComparisons, RoundTripKeepsUnknownKeys) {
    const Trace first =
        parse_trace(trace_with_comparisons(std::string(kComparison) + ", " + kSpeedup), "t.json", catalog());
    const TempFile file("{}");
    write_trace(first, file.path());
    const Trace second = read_trace(file.path(), catalog());
    ASSERT_EQ(second.comparisons.size(), 2u);
    ASSERT_EQ(second.comparisons_raw.size(), 2u);
    EXPECT_EQ(second.comparisons_raw[0]["note"], "kept");
    EXPECT_EQ(second.comparisons_raw[0]["baseline"]["baseline_note"], "kept");
    EXPECT_EQ(second.comparisons_raw[0]["measured"]["wording"], "kept");
    EXPECT_FALSE(second.comparisons_raw[0]["measured"].contains("ratio"));
    EXPECT_EQ(second.comparisons_raw[0]["baseline"]["efa_adapters"], 0);
    EXPECT_FALSE(second.comparisons_raw[0]["scenario"].contains("efa_adapters"));
    EXPECT_DOUBLE_EQ(second.comparisons_raw[1]["measured"]["ratio"], 7.7);
    EXPECT_FALSE(second.comparisons_raw[1]["measured"].contains("low"));

    EXPECT_EQ(second.comparisons[0].quantity, ComparisonQuantity::epoch_time_ratio);
    EXPECT_DOUBLE_EQ(second.comparisons[0].measured_low, 0.92);
    EXPECT_DOUBLE_EQ(second.comparisons[0].measured_high, 0.95);
    EXPECT_EQ(second.comparisons[0].baseline.efa_adapters, 0);
    EXPECT_EQ(second.comparisons[1].scenario.model, "resnet152");
    EXPECT_DOUBLE_EQ(second.comparisons[1].measured_high, 7.7);
}

TEST(TraceComparisons, ComparisonsAddedInCodeAreWrittenFromTheTypedView) {
    Trace trace;
    Comparison c;
    c.source = "code";
    c.quantity = ComparisonQuantity::speedup;
    c.baseline.nodes = 1;
    c.scenario.nodes = 4;
    c.measured_low = 3.5;
    c.measured_high = 3.8;
    trace.comparisons.push_back(c);
    const Trace back = parse_trace(trace_json(trace), "back.json", catalog());
    ASSERT_EQ(back.comparisons.size(), 1u);
    EXPECT_EQ(back.comparisons[0].baseline.nodes, 1);
    EXPECT_EQ(back.comparisons[0].scenario.nodes, 4);
    EXPECT_DOUBLE_EQ(back.comparisons[0].measured_low, 3.5);
    EXPECT_DOUBLE_EQ(back.comparisons[0].measured_high, 3.8);
}

TEST(TraceComparisonsErrors, MissingQuantity) {
    const std::string message =
        error_of(trace_with_comparisons(replaced(kComparison, R"("quantity": "epoch_time_ratio", )", "")));
    EXPECT_TRUE(contains(message, "t.json: comparisons[0]: key \"quantity\" is missing")) << message;
}

TEST(TraceComparisonsErrors, UnknownQuantityNamesTheAcceptedValues) {
    const std::string message =
        error_of(trace_with_comparisons(replaced(kComparison, R"("epoch_time_ratio")", R"("slowdown")")));
    EXPECT_TRUE(contains(message, "comparisons[0]: key \"quantity\"")) << message;
    EXPECT_TRUE(contains(message, "speedup")) << message;
}

TEST(TraceComparisonsErrors, LowAboveHigh) {
    const std::string message = error_of(
        trace_with_comparisons(replaced(kComparison, R"("low": 0.92, "high": 0.95)", R"("low": 0.98, "high": 0.95)")));
    EXPECT_TRUE(contains(message, "t.json: comparisons[0]: key \"measured.low\" must not exceed")) << message;
    EXPECT_TRUE(contains(message, "0.98")) << message;
}

TEST(TraceComparisonsErrors, MeasuredMustBeARatioOrARange) {
    const std::string none =
        error_of(trace_with_comparisons(replaced(kComparison, R"("low": 0.92, "high": 0.95, )", "")));
    EXPECT_TRUE(contains(none, "comparisons[0]: key \"measured.ratio\" is missing")) << none;
    const std::string half = error_of(trace_with_comparisons(replaced(kComparison, R"("high": 0.95, )", "")));
    EXPECT_TRUE(contains(half, "comparisons[0]: key \"measured.high\" is missing")) << half;
    const std::string both =
        error_of(trace_with_comparisons(replaced(kSpeedup, R"("ratio": 7.7)", R"("ratio": 7.7, "low": 7)")));
    EXPECT_TRUE(contains(both, "comparisons[0]: key \"measured.low\" cannot be given with \"ratio\"")) << both;
    const std::string zero = error_of(trace_with_comparisons(replaced(kSpeedup, R"("ratio": 7.7)", R"("ratio": 0)")));
    EXPECT_TRUE(contains(zero, "comparisons[0]: key \"measured.ratio\" must be positive")) << zero;
    const std::string missing = error_of(trace_with_comparisons(replaced(kSpeedup, R"("measured")", R"("measure")")));
    EXPECT_TRUE(contains(missing, "comparisons[0]: key \"measured\" is missing")) << missing;
}

TEST(TraceComparisonsErrors, UnknownInstanceInBaselineNamesThePart) {
    const std::string message =
        error_of(trace_with_comparisons(std::string(kComparison) + ", " +
                                        replaced(kSpeedup, R"("instance": "p2.xlarge")", R"("instance": "p9.tiny")")));
    EXPECT_TRUE(contains(message, "t.json: comparisons[1]: key \"baseline.instance\"")) << message;
    EXPECT_TRUE(contains(message, "p9.tiny")) << message;
}

TEST(TraceComparisonsErrors, ScenarioKeysNameTheirPart) {
    const std::string nodes = error_of(trace_with_comparisons(replaced(kSpeedup, R"("instance": "p2.8xlarge",
                  "nodes": 1)",
                                                                       R"("instance": "p2.8xlarge",
                  "nodes": 0)")));
    EXPECT_TRUE(contains(nodes, "comparisons[0]: key \"scenario.nodes\" must be at least 1")) << nodes;
    const std::string no_baseline = error_of(trace_with_comparisons(replaced(kSpeedup, R"("baseline")", R"("base")")));
    EXPECT_TRUE(contains(no_baseline, "comparisons[0]: key \"baseline\" is missing")) << no_baseline;
    // p4d.24xlarge has 4 EFA adapters: 5 is too many, and the message says how many there are.
    const std::string efa =
        error_of(trace_with_comparisons(replaced(kComparison, R"("efa_adapters": 0)", R"("efa_adapters": 5)")));
    EXPECT_TRUE(contains(efa, "comparisons[0]: key \"baseline.efa_adapters\" must be at most 4")) << efa;
}

TEST(TraceComparisonsErrors, ComparisonsMustBeAnArray) {
    const std::string message = error_of(R"({ "schema": "epochcast.trace/1", "runs": [], "comparisons": {} })");
    EXPECT_TRUE(contains(message, "key \"comparisons\" must be an array")) << message;
}

TEST(TraceRuns, EfaAdaptersOfARunAreCheckedAgainstTheInstance) {
    const std::string run = R"({ "source": "t", "instance": "p3.16xlarge", "nodes": 2, "framework": "mxnet",
        "strategy": "ring", "precision": "amp", "batch_per_gpu": 64, "efa_adapters": 1,
        "measured": { "throughput_images_per_s": 100 } })";
    const std::string message = error_of(R"({ "schema": "epochcast.trace/1", "runs": [ )" + run + " ] }");
    EXPECT_TRUE(contains(message, "t.json: run 0: key \"efa_adapters\" must be at most 0")) << message;
}

// Seed 004's table: 4 adapters (with samples), 1 adapter and sockets (average and max only).
const char* kNetworks = R"({ "schema": "epochcast.trace/1", "runs": [], "networks": [
    { "instance": "p4d.24xlarge", "source": "log", "ranks": 16, "latency_s": 0.0006, "bus_bandwidth_GBps": 42.5,
      "max_bus_bandwidth_GBps": 42.03, "average_bus_bandwidth_GBps": 8.24, "note": "kept",
      "samples": [ { "bytes": 8, "time_s": 0.0006297, "algorithm_GBps": 0, "bus_GBps": 0 },
                   { "bytes": 1073741824, "time_s": 0.047904, "algorithm_GBps": 22.41, "bus_GBps": 42.03 } ] },
    { "instance": "p4d.24xlarge", "source": "table", "ranks": 16, "efa_adapters": 1, "bus_bandwidth_GBps": 5.89,
      "max_bus_bandwidth_GBps": 5.89, "average_bus_bandwidth_GBps": 3.02, "assumptions": "kept" },
    { "instance": "p4d.24xlarge", "source": "table", "ranks": 16, "efa_adapters": 0, "bus_bandwidth_GBps": 2.38,
      "max_bus_bandwidth_GBps": 2.38, "average_bus_bandwidth_GBps": 0.97 } ] })";

TEST(TraceNetworks, EfaAdaptersAndEntriesWithoutSamples) {
    const Trace trace = parse_trace(kNetworks, "n.json", catalog());
    ASSERT_EQ(trace.networks.size(), 3u);
    EXPECT_EQ(trace.networks[0].efa_adapters, -1);
    EXPECT_EQ(trace.networks[0].samples.size(), 2u);
    EXPECT_DOUBLE_EQ(trace.networks[0].samples[1].bus_GBps, 42.03);
    EXPECT_DOUBLE_EQ(trace.networks[0].latency_s, 0.0006);
    EXPECT_EQ(trace.networks[1].efa_adapters, 1);
    EXPECT_TRUE(trace.networks[1].samples.empty());
    EXPECT_DOUBLE_EQ(trace.networks[1].latency_s, 0);  // absent: unknown
    EXPECT_DOUBLE_EQ(trace.networks[1].bus_bandwidth_GBps, 5.89);
    EXPECT_DOUBLE_EQ(trace.networks[1].average_bus_bandwidth_GBps, 3.02);
    EXPECT_EQ(trace.networks[2].efa_adapters, 0);
    EXPECT_DOUBLE_EQ(trace.networks[2].bus_bandwidth_GBps, 2.38);
    EXPECT_DOUBLE_EQ(trace.networks[2].average_bus_bandwidth_GBps, 0.97);
    EXPECT_EQ(trace.networks[2].ranks, 16);
}

TEST(TraceNetworks, RoundTripKeepsEfaAdaptersAndUnknownKeys) {
    const Trace first = parse_trace(kNetworks, "n.json", catalog());
    const nlohmann::json written = nlohmann::json::parse(trace_json(first));
    const auto& networks = written["networks"];
    ASSERT_EQ(networks.size(), 3u);
    EXPECT_EQ(networks[0]["note"], "kept");
    EXPECT_FALSE(networks[0].contains("efa_adapters"));
    EXPECT_EQ(networks[1]["assumptions"], "kept");
    EXPECT_EQ(networks[1]["efa_adapters"], 1);
    EXPECT_FALSE(networks[1].contains("samples"));
    EXPECT_FALSE(networks[1].contains("latency_s"));  // no made-up latency for a table
    EXPECT_EQ(networks[2]["efa_adapters"], 0);
    const Trace second = parse_trace(written.dump(), "n2.json", catalog());
    EXPECT_EQ(second.networks[1].efa_adapters, 1);
    EXPECT_DOUBLE_EQ(second.networks[1].bus_bandwidth_GBps, 5.89);
    EXPECT_EQ(second.networks[0].samples.size(), 2u);
}

TEST(TraceNetworksErrors, NameTheEntryAndTheKey) {
    const std::string too_many = error_of(replaced(kNetworks, R"("efa_adapters": 1)", R"("efa_adapters": 8)"));
    EXPECT_TRUE(contains(too_many, "t.json: networks[1]: key \"efa_adapters\" must be at most 4")) << too_many;
    const std::string negative = error_of(replaced(kNetworks, R"("efa_adapters": 1)", R"("efa_adapters": -1)"));
    EXPECT_TRUE(contains(negative, "networks[1]: key \"efa_adapters\" must be at least 0")) << negative;
    const std::string fraction = error_of(replaced(kNetworks, R"("efa_adapters": 1)", R"("efa_adapters": 1.5)"));
    EXPECT_TRUE(contains(fraction, "networks[1]: key \"efa_adapters\" must be a whole number")) << fraction;
    // With samples the fitted latency is required; without, it is not.
    const std::string latency = error_of(replaced(kNetworks, R"("latency_s": 0.0006, )", ""));
    EXPECT_TRUE(contains(latency, "networks[0]: key \"latency_s\" is missing")) << latency;
    const std::string bandwidth =
        error_of(replaced(kNetworks, R"("bus_bandwidth_GBps": 2.38)", R"("bus_bandwidth_GBps": 0)"));
    EXPECT_TRUE(contains(bandwidth, "networks[2]: key \"bus_bandwidth_GBps\" must be positive")) << bandwidth;
    const std::string ranks =
        error_of(replaced(kNetworks, R"("source": "log", "ranks": 16)", R"("source": "log", "ranks": 1)"));
    EXPECT_TRUE(contains(ranks, "networks[0]: key \"ranks\" must be at least 2")) << ranks;
    const std::string sample = error_of(replaced(kNetworks, R"("bytes": 8, )", ""));
    EXPECT_TRUE(contains(sample, "networks[0]: key \"samples[0].bytes\" is missing")) << sample;
}

}  // namespace
}  // namespace epochcast
