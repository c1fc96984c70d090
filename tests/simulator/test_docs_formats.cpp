// docs/formats.md's elastic-schedule example, read by simulator/'s parser.
#include <gtest/gtest.h>

#include <string>

#include "simulator/elastic.hpp"
#include "tests/support/docs_text.hpp"

namespace epochcast::testing {
namespace {

TEST(DocsFormatsSimulator, TheElasticScheduleExampleParses) {
    const std::string text = json_example(docs_section(docs_page("formats.md"), "## Elastic schedule"));
    ASSERT_FALSE(text.empty()) << "docs/formats.md, \"## Elastic schedule\", has no ```json example";
    const sim::ElasticSchedule schedule = sim::parse_elastic_schedule(text, "docs/formats.md");
    ASSERT_EQ(schedule.phases.size(), 3u);
    EXPECT_DOUBLE_EQ(schedule.epochs(), 90.0);
    EXPECT_EQ(schedule.phases[1].nodes, 12);
    EXPECT_EQ(schedule.phases[1].spot_nodes, 8);
    EXPECT_EQ(schedule.phases[0].spot_nodes, 0);  // left out: none
    ASSERT_EQ(schedule.node_losses.size(), 1u);
    EXPECT_DOUBLE_EQ(schedule.node_losses[0].epoch, 35.5);
}

}  // namespace
}  // namespace epochcast::testing
