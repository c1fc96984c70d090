// `epochcast catalog import-prices` (issue 58, item 7): the clouds' price files read into a catalog
// file that predict takes with --catalog; refusals leave nothing behind; a price read more than 90
// days ago is flagged by predict and plan.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_process.hpp"
#include "tests/support/temp_folder.hpp"

namespace epochcast::testing {
namespace {

std::string fixture(const std::string& name) {
    return std::string(EPOCHCAST_SOURCE_DIR) + "/tests/fixtures/prices/" + name;
}

TEST(ImportPricesCli, TheThreeCloudsFilesBecomeOneCatalogFileThatPredictReads) {
    const TempFolder folder;
    const std::string out = folder / "prices.json";
    const ProcessResult r = run_epochcast("catalog import-prices " + fixture("aws_ec2_offer.json") + " " +
                                          fixture("azure_retail_prices.json") + " " + fixture("gcp_compute_skus.json") +
                                          " --read 2026-11-28 -o " + out);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("AWS Price List offer file, 5 entries, 4 prices"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Azure Retail Prices API response, 8 entries, 5 prices"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("estimate (sum of parts)"), std::string::npos) << r.out;
    const nlohmann::json file = nlohmann::json::parse(read_text(out));
    EXPECT_EQ(file["schema"], "epochcast.catalog/1");
    bool h200 = false;
    for (const auto& entry : file["instances"]) {
        if (entry["name"] != "Standard_ND96isr_H200_v5") continue;
        h200 = true;
        EXPECT_EQ(entry["region"], "eastus2");
        EXPECT_EQ(entry["prices"]["on-demand"]["usd_per_hour"], 110.24);
        EXPECT_EQ(entry["prices"]["on-demand"]["read"], "2026-11-28");
    }
    EXPECT_TRUE(h200) << file.dump(2);
    // With the file, predict costs ND H200 v5 at the file's price, not the built-in 84.80.
    const ProcessResult priced = run_epochcast("predict --instance Standard_ND96isr_H200_v5 --json --catalog " + out);
    ASSERT_EQ(priced.exit_code, 0) << priced.err;
    EXPECT_DOUBLE_EQ(nlohmann::json::parse(priced.out)["cluster_usd_per_hour"].get<double>(), 110.24);
}

TEST(ImportPricesCli, ABadFileOrNoPriceForTheCatalogIsExitTwoAndWritesNothing) {
    const TempFolder folder;
    const std::string out = folder / "prices.json";
    const ProcessResult none =
        run_epochcast("catalog import-prices " + fixture("aws_ec2_offer.json") + " --region eu-west-1 -o " + out);
    EXPECT_EQ(none.exit_code, 2);
    EXPECT_NE(none.err.find("no price in the file is for an instance of the catalog in region eu-west-1"),
              std::string::npos)
        << none.err;
    EXPECT_FALSE(std::filesystem::exists(out));
    const ProcessResult date =
        run_epochcast("catalog import-prices " + fixture("aws_ec2_offer.json") + " --read 2026-13-01 -o " + out);
    EXPECT_EQ(date.exit_code, 2);
    EXPECT_NE(date.err.find("--read must be a date YYYY-MM-DD"), std::string::npos) << date.err;
    const ProcessResult missing = run_epochcast("catalog import-prices " + (folder / "none.json") + " -o " + out);
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_FALSE(std::filesystem::exists(out));
    // The plain catalog listing still answers.
    EXPECT_EQ(run_epochcast("catalog --cloud azure").exit_code, 0);
}

// p6-b200.48xlarge's on-demand price was read on 2026-01-21: stale on any day from 2026-04-22 on.
TEST(ImportPricesCli, APriceOlderThanNinetyDaysIsFlaggedByPredictAndPlan) {
    const ProcessResult predicted = run_epochcast("predict --instance p6-b200.48xlarge");
    ASSERT_EQ(predicted.exit_code, 0) << predicted.err;
    EXPECT_NE(predicted.out.find("note: the on-demand price of p6-b200.48xlarge ($113.93/h) was read 2026-01-21, "),
              std::string::npos)
        << predicted.out;
    EXPECT_NE(predicted.out.find("stale past 90 days; `epochcast catalog import-prices`"), std::string::npos);
    const ProcessResult plan = run_epochcast("plan --deadline 3h --instance p6-b200.48xlarge");
    ASSERT_EQ(plan.exit_code, 0) << plan.err;
    EXPECT_NE(plan.out.find("  price: the on-demand price of p6-b200.48xlarge"), std::string::npos) << plan.out;
}

}  // namespace
}  // namespace epochcast::testing
