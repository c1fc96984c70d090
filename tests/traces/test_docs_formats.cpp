// docs/formats.md's trace example, read by traces/'s parser: it must parse and hold what the doc
// says (a run, a comparison given as a range, a network entry without samples).
#include <gtest/gtest.h>

#include <string>

#include "model/catalog.hpp"
#include "tests/support/docs_text.hpp"
#include "traces/trace.hpp"

namespace epochcast::testing {
namespace {

TEST(DocsFormatsTraces, TheTraceExampleParses) {
    const std::string text = json_example(docs_section(docs_page("formats.md"), "## Trace"));
    ASSERT_FALSE(text.empty()) << "docs/formats.md, \"## Trace\", has no ```json example";
    const Trace trace = parse_trace(text, "docs/formats.md", Catalog::built_in());
    ASSERT_EQ(trace.runs.size(), 1u);
    const Observation& run = trace.runs[0].observation;
    EXPECT_EQ(run.scenario.instance, "p3.16xlarge");
    EXPECT_EQ(run.scenario.framework, Framework::pytorch);
    EXPECT_EQ(run.scenario.image_size, 224);  // left out: the default
    EXPECT_DOUBLE_EQ(run.throughput_images_per_s, 7600.0);
    ASSERT_TRUE(run.iteration_s.has_value());
    EXPECT_DOUBLE_EQ(*run.iteration_s, 0.27);

    ASSERT_EQ(trace.comparisons.size(), 1u);
    EXPECT_EQ(trace.comparisons[0].quantity, ComparisonQuantity::speedup);
    EXPECT_DOUBLE_EQ(trace.comparisons[0].measured_low, 6.5);
    EXPECT_DOUBLE_EQ(trace.comparisons[0].measured_high, 7.3);

    ASSERT_EQ(trace.networks.size(), 1u);
    EXPECT_EQ(trace.networks[0].ranks, 16);
    EXPECT_DOUBLE_EQ(trace.networks[0].latency_s, 0.0);  // no samples: unknown
    EXPECT_EQ(trace.networks[0].efa_adapters, -1);       // left out: all of them
}

}  // namespace
}  // namespace epochcast::testing
