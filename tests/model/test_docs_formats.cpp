// docs/formats.md's examples of the model's formats, read by the model's own parsers: the doc
// promises files the code accepts, so each must parse and mean what the doc says.
#include <gtest/gtest.h>

#include <string>

#include "model/calibration.hpp"
#include "model/catalog.hpp"
#include "model/scenario_file.hpp"
#include "model/sweep.hpp"
#include "tests/support/docs_text.hpp"

namespace epochcast::testing {
namespace {

std::string example(const std::string& heading) { return json_example(docs_section(docs_page("formats.md"), heading)); }

TEST(DocsFormatsModel, TheCatalogExampleAddsEntriesAndOverridesOnlyTheKeysItGives) {
    const std::string text = example("## Catalog");
    ASSERT_FALSE(text.empty()) << "docs/formats.md, \"## Catalog\", has no ```json example";
    Catalog catalog = Catalog::built_in();
    const InstanceSpec before = catalog.instance("p4d.24xlarge");
    catalog.merge(Catalog::parse(text, "docs/formats.md", catalog));

    const InstanceSpec& box = catalog.instance("our-box");
    EXPECT_EQ(box.gpu, "example-gpu");
    EXPECT_EQ(box.cloud, "owned");
    EXPECT_FALSE(box.priced());  // no price by the hour: its cost is n/a
    EXPECT_EQ(box.gpus, 4);
    EXPECT_EQ(box.intra_node_link, "pcie");  // 32 GB/s: PCIe by default
    EXPECT_EQ(box.interconnect, Interconnect::tcp);
    EXPECT_DOUBLE_EQ(catalog.gpu("example-gpu").bf16_tflops, 0.0);

    const InstanceSpec& l4 = catalog.instance("our-l4-box");
    EXPECT_EQ(l4.gpu, "L4");  // the built-in GPU, named only
    EXPECT_EQ(l4.interconnect, Interconnect::roce);
    EXPECT_EQ(l4.nics, 2);
    EXPECT_TRUE(l4.gpudirect_rdma);  // RoCE's default

    const InstanceSpec& p4d = catalog.instance("p4d.24xlarge");
    EXPECT_DOUBLE_EQ(p4d.usd_per_hour(Pricing::on_demand), 19.5);
    EXPECT_NE(before.usd_per_hour(Pricing::on_demand), 19.5);
    EXPECT_EQ(p4d.gpus, before.gpus);
    EXPECT_EQ(p4d.efa_adapters, before.efa_adapters);
    EXPECT_DOUBLE_EQ(p4d.usd_per_hour(Pricing::spot), before.usd_per_hour(Pricing::spot));
    EXPECT_FALSE(catalog.instance("our-l4-box").priced());  // price_usd_per_hour 0: none

    // A price added under a pricing model keeps the others.
    const InstanceSpec& p5 = catalog.instance("p5.48xlarge");
    ASSERT_NE(p5.price(Pricing::reserved_1y), nullptr);
    EXPECT_DOUBLE_EQ(p5.price(Pricing::reserved_1y)->usd_per_hour, 36.5);
    EXPECT_EQ(p5.price(Pricing::reserved_1y)->read, "2026-11-26");
    EXPECT_DOUBLE_EQ(p5.usd_per_hour(Pricing::on_demand),
                     Catalog::built_in().instance("p5.48xlarge").usd_per_hour(Pricing::on_demand));
}

TEST(DocsFormatsModel, TheCalibrationExampleTakesWhatItLeavesOutFromThePrior) {
    const std::string text = example("## Calibration");
    ASSERT_FALSE(text.empty()) << "docs/formats.md, \"## Calibration\", has no ```json example";
    const Calibration c = Calibration::parse(text, "docs/formats.md");
    const Calibration prior = Calibration::data_free_prior();
    ASSERT_EQ(c.compute.size(), 1u);
    EXPECT_EQ(c.compute[0].gpu, "V100-SXM2-16GB");
    EXPECT_EQ(c.compute[0].image_size, 224);
    EXPECT_DOUBLE_EQ(c.framework(Framework::pytorch).sync_jitter, 0.05);
    EXPECT_DOUBLE_EQ(c.framework(Framework::pytorch).bucket_MiB, prior.framework(Framework::pytorch).bucket_MiB);
    EXPECT_DOUBLE_EQ(c.framework(Framework::epochcast).fixed_overhead_s,
                     prior.framework(Framework::epochcast).fixed_overhead_s);
    EXPECT_DOUBLE_EQ(c.network.fabric(Interconnect::efa).efficiency,
                     prior.network.fabric(Interconnect::efa).efficiency);
    EXPECT_DOUBLE_EQ(c.network.nvls_efficiency, prior.network.nvls_efficiency);
    EXPECT_DOUBLE_EQ(c.network.relative_sigma, 0.3);
    EXPECT_DOUBLE_EQ(c.startup_s, 90.0);
    EXPECT_TRUE(c.uncertainty.parameters.empty());
}

TEST(DocsFormatsModel, TheScenarioExampleIsTheNamedListItShows) {
    const std::string text = example("## Scenario (`epochcast.scenario/1`)");
    ASSERT_FALSE(text.empty()) << "docs/formats.md, \"## Scenario\", has no ```json example";
    const std::vector<NamedScenario> list = parse_scenario_file(text, "docs/formats.md", Catalog::built_in());
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0].name, "p5, a day");
    EXPECT_EQ(list[0].scenario.instance, "p5.48xlarge");
    EXPECT_DOUBLE_EQ(list[0].scenario.target_top1_percent, 75.9);
    EXPECT_EQ(list[1].scenario.pricing, Pricing::spot);
    EXPECT_DOUBLE_EQ(list[1].scenario.checkpoint_interval_s, 1800);
}

TEST(DocsFormatsModel, TheSweepSpecExampleIsTheCrossProductItShows) {
    const std::string text = example("## Sweep spec");
    ASSERT_FALSE(text.empty()) << "docs/formats.md, \"## Sweep spec\", has no ```json example";
    const Catalog catalog = Catalog::built_in();
    const SweepSpec spec = parse_sweep_spec(text, "docs/formats.md", catalog);
    ASSERT_EQ(spec.combinations(), 2u * 5u * 2u);  // instances x nodes x strategies
    // The last combination: every list at its last value; ps_ratio 0.5 of 16 nodes is 8 servers.
    const Scenario last = spec.scenario_at(spec.combinations() - 1, catalog);
    EXPECT_EQ(last.instance, "p4d.24xlarge");
    EXPECT_EQ(last.nodes, 16);
    EXPECT_EQ(last.strategy, Strategy::ps);
    EXPECT_EQ(last.ps_instance, "c5n.18xlarge");
    EXPECT_EQ(last.ps_nodes, 8);
    // The first: a ring row has no servers, whatever the spec's parameter-server keys.
    const Scenario first = spec.scenario_at(0, catalog);
    EXPECT_EQ(first.strategy, Strategy::ring);
    EXPECT_EQ(first.ps_nodes, 0);
    EXPECT_EQ(first.nodes, 1);
}

}  // namespace
}  // namespace epochcast::testing
