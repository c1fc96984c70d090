// `epochcast plan` as a user runs it: seed 000's question answered within the deadline, the front
// printed, --spot and --elastic, and errors for what cannot be searched.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cli/report.hpp"
#include "model/text_io.hpp"
#include "tests/cli/cli_process.hpp"
#include "tests/support/temp_file.hpp"

namespace epochcast::testing {
namespace {

TEST(PlanCli, SeedZeroQuestionGetsAPlanWithinTheHour) {
    const ProcessResult r = run_epochcast("plan --deadline 1h --budget 500 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_FALSE(j["cheapest_within_deadline"].is_null());
    EXPECT_LE(j["cheapest_within_deadline"]["time_to_train_s"].get<double>(), 3600);
    EXPECT_EQ(j["cheapest_within_deadline"]["scenario"]["model"], "resnet50");
    // Without --epochs, each plan trains what the default recipe (goyal2017: the frameworks' own
    // 90-epoch schedule) needs at its global batch to the accuracy its published runs reached
    // (75.21% at 16,384), and no global batch beyond them is planned (issue 58, item 4).
    EXPECT_EQ(j["cheapest_within_deadline"]["scenario"]["target_top1_percent"], 75.21);
    EXPECT_EQ(j["cheapest_within_deadline"]["epochs_source"], "goyal2017 (published)");
    for (const auto& f : j["front"]) {
        EXPECT_FALSE(f["global_batch_beyond_published"].get<bool>()) << f.dump();
        EXPECT_EQ(f["epochs"].get<double>(), 90) << f.dump();
        EXPECT_LE(f["global_batch"].get<double>(), 16384) << f.dump();
    }
    ASSERT_FALSE(j["fastest_within_budget"].is_null());
    EXPECT_LE(j["fastest_within_budget"]["cost_usd"].get<double>(), 500);
    EXPECT_GT(j["front"].size(), 3u);
    EXPECT_GT(j["considered"].get<int>(), j["feasible"].get<int>());
    // The cheapest within the deadline is on the front: no front point at most an hour is cheaper.
    for (const auto& f : j["front"]) {
        if (f["time_to_train_s"].get<double>() <= 3600) {
            EXPECT_GE(f["cost_usd"].get<double>(), j["cheapest_within_deadline"]["cost_usd"].get<double>());
        }
    }
}

TEST(PlanCli, TextNamesTheAnswersAndTheFront) {
    const ProcessResult r = run_epochcast("plan --deadline 2h --instance p3.16xlarge --instance p3.8xlarge");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("Cheapest within the deadline of 2.00 h"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Pareto front"), std::string::npos);
    EXPECT_NE(r.out.find("x p3."), std::string::npos);
    EXPECT_EQ(r.out.find("p4d"), std::string::npos) << "only the instances asked for";
}

TEST(PlanCli, AOneNodePlanNamesTheGpusLinkNotTheFabric) {
    // Nothing crosses EFA on one p5.48xlarge: its all-reduce runs over NVSwitch.
    const ProcessResult one = run_epochcast("plan --deadline 2h --instance p5.48xlarge --nodes 1");
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_NE(one.out.find("nccl (nvls over nvswitch)"), std::string::npos) << one.out;
    EXPECT_EQ(one.out.find("over efa"), std::string::npos) << one.out;
    const ProcessResult four = run_epochcast("plan --deadline 2h --instance p5.48xlarge --nodes 4");
    ASSERT_EQ(four.exit_code, 0) << four.err;
    EXPECT_NE(four.out.find(" over efa)"), std::string::npos) << four.out;
}

TEST(PlanCli, TheTextSaysWhatTheJsonSaysWithThousandsSeparators) {
    const ProcessResult text = run_epochcast("plan --deadline 1h --budget 500");
    const ProcessResult json = run_epochcast("plan --deadline 1h --budget 500 --json");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const nlohmann::json j = nlohmann::json::parse(json.out);
    // plan's --framework defaults to PyTorch, as the Scenario does.
    EXPECT_EQ(j["cheapest_within_deadline"]["scenario"]["framework"], "pytorch");
    const double unpublished = j["unpublished_batch"].get<double>();
    const std::string searched =
        "Searched " + format_count(j["considered"].get<double>()) +
        " configurations of resnet50 (the epochs goyal2017 needs for 75.21% top-1 of 1,281,167 images, amp, "
        "pytorch, on-demand prices): " +
        format_count(j["feasible"].get<double>()) + " feasible" +
        (unpublished > 0 ? "; " + format_count(unpublished) +
                               " more at a global batch beyond every published recipe left out "
                               "(--allow-unpublished-batch keeps them)"
                         : std::string()) +
        ".\nNot sold on-demand, left out: p5e.48xlarge (capacity-block), a4-highgpu-8g (spot).\n\n";
    EXPECT_EQ(text.out.substr(0, searched.size()), searched) << text.out;
    EXPECT_GT(j["considered"].get<double>(), 9999) << "the test needs a count with a separator";
    const auto& cheapest = j["cheapest_within_deadline"];
    EXPECT_NE(text.out.find("(global " + format_count(cheapest["global_batch"].get<double>()) + ")"), std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find(format_count(cheapest["throughput_images_per_s"].get<double>()) + " images/s, bottleneck"),
              std::string::npos)
        << text.out;
    // Each front row ends in its images/s and $/h, as a count and dollars (right-aligned: a space
    // before each).
    for (const auto& f : j["front"]) {
        std::string images = " ";  // appended, not " " + ...: GCC 12 warns a false -Wrestrict on that
        images += format_count(f["throughput_images_per_s"].get<double>());
        images += "  ";
        std::string dollars = " ";
        dollars += cli::format_dollars(f["cluster_usd_per_hour"].get<double>());
        dollars += '\n';
        // Two clusters can share a throughput (both bound by their input pipelines): find the row by
        // its $/h, which ends the line, then its images/s on that line.
        const auto end = text.out.find(dollars);
        ASSERT_NE(end, std::string::npos) << dollars << text.out;
        const auto row = text.out.rfind('\n', end) + 1;
        const std::string line = text.out.substr(row, end + dollars.size() - row);
        EXPECT_NE(line.find(images), std::string::npos) << images << " not in " << line;
    }
}

TEST(PlanCli, AFixedGlobalBatchIsKeptOnEveryPlan) {
    const ProcessResult r = run_epochcast("plan --deadline 2h --global-batch 4096 --instance p4d.24xlarge --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_FALSE(j["front"].empty());
    for (const auto& f : j["front"]) {
        EXPECT_EQ(f["global_batch"], 4096);
        EXPECT_EQ(f["scenario"]["batch_per_gpu"].get<int>() * f["gpus"].get<int>(), 4096);
    }
    const ProcessResult both = run_epochcast("plan --deadline 2h --global-batch 4096 --batch-per-gpu 64");
    EXPECT_EQ(both.exit_code, 2);
    EXPECT_NE(both.err.find("--global-batch"), std::string::npos) << both.err;
}

TEST(PlanCli, ATargetAccuracyMakesEachPlanTrainWhatItsGlobalBatchNeeds) {
    const ProcessResult fixed = run_epochcast("plan --deadline 2h --instance p4d.24xlarge --epochs 90 --json");
    const ProcessResult target =
        run_epochcast("plan --deadline 2h --instance p4d.24xlarge --target-top1 75.9 --recipe mlperf-lars --json");
    ASSERT_EQ(target.exit_code, 0) << target.err;
    const nlohmann::json a = nlohmann::json::parse(fixed.out);
    const nlohmann::json b = nlohmann::json::parse(target.out);
    const auto& cheapest = b["cheapest_within_deadline"];
    EXPECT_LT(cheapest["cost_usd"].get<double>(), a["cheapest_within_deadline"]["cost_usd"].get<double>());
    EXPECT_EQ(cheapest["epochs_source"], "mlperf-lars (published)");
    EXPECT_EQ(cheapest["scenario"]["target_top1_percent"], 75.9);
    EXPECT_FALSE(cheapest["scenario"].contains("epochs"));
    for (const auto& f : b["front"]) EXPECT_GE(f["epochs"].get<double>(), 35) << f.dump();
    const ProcessResult text =
        run_epochcast("plan --deadline 2h --instance p4d.24xlarge --target-top1 75.9 --recipe mlperf-lars");
    EXPECT_NE(text.out.find("the epochs mlperf-lars needs for 75.9% top-1"), std::string::npos) << text.out;
    const ProcessResult both = run_epochcast("plan --deadline 2h --target-top1 75.9 --epochs 40");
    EXPECT_EQ(both.exit_code, 2);
    const ProcessResult other_model =
        run_epochcast("plan --deadline 2h --target-top1 70 --model resnet18 --recipe mlperf-lars");
    EXPECT_EQ(other_model.exit_code, 2);
    EXPECT_NE(other_model.err.find("recipe mlperf-lars is published for resnet50, not resnet18; for resnet18: "
                                   "--recipe torchvision"),
              std::string::npos)
        << other_model.err;
}

TEST(PlanCli, TheHeadlineCarriesTheRecipeTheBandsAndTheTablesFlags) {
    const ProcessResult text = run_epochcast("plan --deadline 2h --instance p4d.24xlarge --recipe mlperf-lars");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    const ProcessResult json = run_epochcast("plan --deadline 2h --instance p4d.24xlarge --recipe mlperf-lars --json");
    const nlohmann::json pick = nlohmann::json::parse(json.out)["cheapest_within_deadline"];
    // "35 epochs, mlperf-lars (published)" and "time to train 82.0 min (74.9 min - 89.9 min)".
    EXPECT_NE(text.out.find(" epochs, mlperf-lars (published)\n"), std::string::npos) << text.out;
    const auto& band = pick["time_to_train_interval"];
    EXPECT_LE(band["low"].get<double>(), pick["time_to_train_s"].get<double>());
    EXPECT_GE(band["high"].get<double>(), pick["time_to_train_s"].get<double>());
    EXPECT_NE(text.out.find(" - " + cli::format_dollars(pick["cost_interval"]["high"].get<double>()) + ") at "),
              std::string::npos)
        << text.out;
    // Asked for, a global batch beyond the recipes is planned, and its flag is in the headline too.
    const ProcessResult beyond = run_epochcast(
        "plan --budget 10000 --instance p5.48xlarge --nodes 64 --global-batch 131072 --epochs 90 "
        "--allow-unpublished-batch");
    ASSERT_EQ(beyond.exit_code, 0) << beyond.err;
    const std::string headline = beyond.out.substr(beyond.out.find("Fastest within the budget"));
    EXPECT_NE(headline.substr(0, headline.find("time to train")).find("[global batch beyond published recipes]"),
              std::string::npos)
        << beyond.out;
    // Without the flag the same space has nothing to plan: exit 3, and the text says why.
    const ProcessResult refused =
        run_epochcast("plan --budget 10000 --instance p5.48xlarge --nodes 64 --global-batch 131072 --epochs 90");
    EXPECT_EQ(refused.exit_code, 3) << refused.out << refused.err;
    EXPECT_NE(refused.out.find("--allow-unpublished-batch keeps them"), std::string::npos) << refused.out;
}

TEST(PlanCli, AConfidenceMeetsTheDeadlineAtItsQuantile) {
    const ProcessResult r = run_epochcast("plan --confidence 0.95 --deadline 2h --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["confidence"], 0.95);
    const auto& pick = j["cheapest_within_deadline"];
    EXPECT_LE(pick["at_confidence"]["time_to_train_s"].get<double>(), 7200);
    EXPECT_GT(pick["at_confidence"]["time_to_train_s"].get<double>(), pick["time_to_train_s"].get<double>());
    // No plan of the front is cheaper at 95% and meets the deadline at 95%.
    for (const auto& f : j["front"]) {
        if (f["at_confidence"]["time_to_train_s"].get<double>() <= 7200) {
            EXPECT_GE(f["at_confidence"]["cost_usd"].get<double>(), pick["at_confidence"]["cost_usd"].get<double>());
        }
    }
    const ProcessResult text = run_epochcast("plan --confidence 0.95 --deadline 2h");
    EXPECT_NE(text.out.find("at 95% confidence: done within "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("time at 95%"), std::string::npos) << text.out;
    for (const char* bad : {"--confidence 1", "--confidence 0.3", "--confidence nan", "--confidence 0.9 --elastic"}) {
        const ProcessResult e = run_epochcast(std::string("plan --deadline 2h ") + bad);
        EXPECT_EQ(e.exit_code, 2) << bad << e.err;
        EXPECT_NE(e.err.find("--"), std::string::npos) << e.err;
        EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e.err;
    }
}

TEST(PlanCli, SpotIsCheaperAndElasticIsConsidered) {
    const ProcessResult on_demand = run_epochcast("plan --deadline 3h --instance p3.16xlarge --json");
    const ProcessResult spot = run_epochcast("plan --deadline 3h --instance p3.16xlarge --spot --elastic --json");
    ASSERT_EQ(on_demand.exit_code, 0) << on_demand.err;
    ASSERT_EQ(spot.exit_code, 0) << spot.err;
    const nlohmann::json a = nlohmann::json::parse(on_demand.out);
    const nlohmann::json b = nlohmann::json::parse(spot.out);
    EXPECT_LT(b["cheapest_within_deadline"]["cost_usd"].get<double>(),
              a["cheapest_within_deadline"]["cost_usd"].get<double>());
    EXPECT_EQ(b["cheapest_within_deadline"]["scenario"]["pricing"], "spot");
    EXPECT_TRUE(b.contains("elastic_within_deadline"));
    EXPECT_FALSE(a.contains("elastic_within_deadline"));
}

TEST(PlanCli, AnOnDemandSearchNeverReturnsAnInstanceSoldOnlyAsCapacityBlocks) {
    const ProcessResult r = run_epochcast("plan --deadline 2h --pricing on-demand --batch-per-gpu 256 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["pricing"], "on-demand");
    EXPECT_EQ(j["not_sold"], nlohmann::json::array({"p5e.48xlarge", "a4-highgpu-8g"}));
    ASSERT_FALSE(j["front"].empty());
    for (const auto& plan : j["front"]) {
        EXPECT_NE(plan["scenario"]["instance"], "p5e.48xlarge") << plan.dump();
        EXPECT_EQ(plan["scenario"]["pricing"], "on-demand");
        EXPECT_GT(plan["cost_usd"].get<double>(), 0);
    }
    EXPECT_NE(j["cheapest_within_deadline"]["scenario"]["instance"], "p5e.48xlarge");
    // The text says what it left out, and why.
    const ProcessResult text = run_epochcast("plan --deadline 2h --batch-per-gpu 256");
    EXPECT_NE(text.out.find("Not sold on-demand, left out: p5e.48xlarge (capacity-block), a4-highgpu-8g (spot)."),
              std::string::npos)
        << text.out;
    // Named, it is refused in one line naming how it is sold; as capacity blocks it is planned.
    const ProcessResult named = run_epochcast("plan --deadline 2h --instance p5e.48xlarge");
    EXPECT_EQ(named.exit_code, 2);
    EXPECT_EQ(named.err,
              "epochcast: error: instance 'p5e.48xlarge' is not sold on-demand (it is sold as: "
              "capacity-block)\n");
    const ProcessResult blocks =
        run_epochcast("plan --deadline 2h --instance p5e.48xlarge --pricing capacity-block --nodes 2 --json");
    ASSERT_EQ(blocks.exit_code, 0) << blocks.err;
    const nlohmann::json b = nlohmann::json::parse(blocks.out);
    const auto& cheapest = b["cheapest_within_deadline"];
    EXPECT_EQ(cheapest["scenario"]["pricing"], "capacity-block");
    EXPECT_DOUBLE_EQ(cheapest["cluster_usd_per_hour"].get<double>(), 2 * 47.76);
}

// Issue 60: every way of buying the instances in one run, ranked against each other by what is paid.
TEST(PlanCli, EveryPricingIsSearchedInOneRunAndRankedByWhatIsPaid) {
    const std::string space =
        "plan --deadline 2h --budget 400 --instance p5.48xlarge --instance a2-highgpu-8g --instance g6.12xlarge "
        "--nodes 1,2,4,8 --batch-per-gpu 128,256 --pricing all";
    const ProcessResult bill = run_epochcast(space + " --json");
    ASSERT_EQ(bill.exit_code, 0) << bill.err;
    const nlohmann::json b = nlohmann::json::parse(bill.out);
    EXPECT_EQ(b["pricing"], "all");
    EXPECT_EQ(b["pricings"],
              nlohmann::json::array({"on-demand", "spot", "capacity-block", "reserved-1y", "reserved-3y"}));
    EXPECT_TRUE(b["not_sold"].empty());
    // 8 x p5 is the fastest within $400: by the bill on demand (eight whole days of a block are $8,000),
    // by the run's share on the Capacity Block, whose rate is lower.
    EXPECT_EQ(b["fastest_within_budget"]["scenario"]["instance"], "p5.48xlarge");
    EXPECT_EQ(b["fastest_within_budget"]["scenario"]["pricing"], "on-demand");
    const ProcessResult share = run_epochcast(space + " --rank-by share --json");
    ASSERT_EQ(share.exit_code, 0) << share.err;
    const nlohmann::json s = nlohmann::json::parse(share.out);
    EXPECT_EQ(s["fastest_within_budget"]["scenario"]["instance"], "p5.48xlarge");
    EXPECT_EQ(s["fastest_within_budget"]["scenario"]["pricing"], "capacity-block");
    EXPECT_LT(s["fastest_within_budget"]["cost_usd"].get<double>(), 400);
    EXPECT_GT(s["fastest_within_budget"]["bill_usd"].get<double>(), 400);

    // The text names the pricings searched, how each is billed, and each plan's.
    const ProcessResult text = run_epochcast(space + " --rank-by share");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("on-demand, spot, capacity-block, reserved-1y and reserved-3y prices): "),
              std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("the bill is for capacity-block each instance's whole Capacity Block"), std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("for on-demand and spot the run's own seconds."), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("8 x p5.48xlarge = 64 x H100-SXM5-80GB, capacity-block, "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("run's share"), std::string::npos) << text.out;

    // A list of pricings: what is sold none of those ways is left out, named.
    const ProcessResult two =
        run_epochcast("plan --deadline 2h --pricing on-demand,capacity-block --batch-per-gpu 256");
    ASSERT_EQ(two.exit_code, 0) << two.err;
    EXPECT_NE(two.out.find("Not sold on-demand or capacity-block, left out: a4-highgpu-8g (spot)."), std::string::npos)
        << two.out;

    struct Case {
        const char* arguments;
        const char* error;
    };
    for (const Case& c : {Case{"--pricing on-demand,on-demand", "--pricing names on-demand twice"},
                          Case{"--pricing all,spot", "--pricing: all names every pricing, alone (got 'all,spot')"},
                          Case{"--pricing on-demand,",
                               "--pricing: unknown value '' (expected on-demand, spot, "
                               "capacity-block, reserved-1y or reserved-3y, several separated "
                               "by commas, or all)"},
                          Case{"--spot --pricing all", "--spot and --pricing all contradict each other"},
                          Case{"--instance p5e.48xlarge --pricing on-demand,spot",
                               "instance 'p5e.48xlarge' is not sold on-demand or spot (it is sold as: "
                               "capacity-block)"}}) {
        const ProcessResult r = run_epochcast(std::string("plan --deadline 2h ") + c.arguments);
        EXPECT_EQ(r.exit_code, 2) << c.arguments;
        EXPECT_NE(r.err.find(c.error), std::string::npos) << c.arguments << ": " << r.err;
        EXPECT_TRUE(r.out.empty()) << c.arguments;
    }
}

TEST(PlanCli, PricingAndCloudNarrowTheSearch) {
    // --spot is the older spelling of --pricing spot.
    const ProcessResult spot = run_epochcast("plan --deadline 3h --instance p3.16xlarge --pricing spot --json");
    const ProcessResult older = run_epochcast("plan --deadline 3h --instance p3.16xlarge --spot --json");
    ASSERT_EQ(spot.exit_code, 0) << spot.err;
    EXPECT_EQ(spot.out, older.out);
    // A capacity-block search holds only what is sold that way.
    const ProcessResult blocks = run_epochcast("plan --deadline 20h --pricing capacity-block --nodes 1,2 --json");
    ASSERT_EQ(blocks.exit_code, 0) << blocks.err;
    const nlohmann::json blocks_out_json = nlohmann::json::parse(blocks.out);  // kept alive for the loop
    for (const auto& plan : blocks_out_json["front"]) {
        const std::string instance = plan["scenario"]["instance"];
        EXPECT_TRUE(instance == "p5.48xlarge" || instance == "p5e.48xlarge" || instance == "p5en.48xlarge" ||
                    instance == "p6-b200.48xlarge")
            << instance;
    }
    // --cloud gcp with 1-year commitments: Google's A2 machines, at their committed-use price.
    const ProcessResult gcp =
        run_epochcast("plan --deadline 30h --cloud gcp --pricing reserved-1y --nodes 1 --batch-per-gpu 256 --json");
    ASSERT_EQ(gcp.exit_code, 0) << gcp.err;
    const nlohmann::json g = nlohmann::json::parse(gcp.out);
    EXPECT_EQ(g["cloud"], "gcp");
    ASSERT_FALSE(g["front"].empty());
    for (const auto& plan : g["front"]) {
        const std::string instance = plan["scenario"]["instance"];
        EXPECT_EQ(instance.rfind("a2-highgpu-", 0), 0u) << instance;
    }
    const ProcessResult bad = run_epochcast("plan --deadline 2h --cloud ibm");
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_EQ(bad.err,
              "epochcast: error: --cloud 'ibm': no instance of the catalog is in that cloud (clouds: aws, "
              "azure, gcp, owned)\n");
    const ProcessResult other = run_epochcast("plan --deadline 2h --cloud gcp --instance p5.48xlarge");
    EXPECT_EQ(other.exit_code, 2);
    EXPECT_NE(other.err.find("instance 'p5.48xlarge' is in cloud 'aws', not 'gcp'"), std::string::npos) << other.err;
    const ProcessResult contradiction = run_epochcast("plan --deadline 2h --spot --pricing reserved-3y");
    EXPECT_EQ(contradiction.exit_code, 2);
    EXPECT_NE(contradiction.err.find("--spot and --pricing reserved-3y contradict each other"), std::string::npos)
        << contradiction.err;
}

TEST(PlanCli, AnOwnedSystemIsLeftOutUnlessNamedAndThenCostsNa) {
    const ProcessResult all = run_epochcast("plan --deadline 3h --batch-per-gpu 256 --json");
    ASSERT_EQ(all.exit_code, 0) << all.err;
    const nlohmann::json all_out_json = nlohmann::json::parse(all.out);  // kept alive for the loop
    for (const auto& plan : all_out_json["front"]) {
        EXPECT_NE(plan["scenario"]["instance"].get<std::string>().rfind("dgx-", 0), 0u) << plan.dump();
    }
    const ProcessResult named = run_epochcast("plan --deadline 3h --instance dgx-a100 --batch-per-gpu 256 --nodes 1");
    ASSERT_EQ(named.exit_code, 0) << named.err;
    EXPECT_NE(named.out.find("cost n/a (no price by the hour)"), std::string::npos) << named.out;
    EXPECT_EQ(named.out.find("$0.00"), std::string::npos) << named.out;
    const ProcessResult json =
        run_epochcast("plan --deadline 3h --instance dgx-a100 --batch-per-gpu 256 --nodes 1 --json");
    const nlohmann::json j = nlohmann::json::parse(json.out);
    EXPECT_TRUE(j["cheapest_within_deadline"]["cost_usd"].is_null()) << json.out;
    EXPECT_TRUE(j["cheapest_within_deadline"]["cluster_usd_per_hour"].is_null()) << json.out;
}

// Issue 58 item 1: naming an instance the catalog has no price for beside one it prices must not
// crown it: its plans (cost n/a) are set apart, named on one line with their fastest, and the
// answer and the front are the priced instance's.
TEST(PlanCli, AnUnpricedInstanceBesideAPricedOneIsSetApartNotCrowned) {
    const std::string flags =
        "plan --deadline 4h --precision bf16 --loader dali --instance p5.48xlarge --instance Standard_ND96asr_v4";
    const ProcessResult json = run_epochcast(flags + " --json");
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const nlohmann::json j = nlohmann::json::parse(json.out);
    EXPECT_EQ(j["cheapest_within_deadline"]["scenario"]["instance"], "p5.48xlarge") << json.out;
    EXPECT_GT(j["cheapest_within_deadline"]["cost_usd"].get<double>(), 0);
    ASSERT_FALSE(j["front"].empty());
    for (const auto& plan : j["front"]) {
        EXPECT_EQ(plan["scenario"]["instance"], "p5.48xlarge") << plan.dump();
        EXPECT_TRUE(plan["cost_usd"].is_number()) << plan.dump();
    }
    EXPECT_EQ(j["unpriced"]["instances"], nlohmann::json::array({"Standard_ND96asr_v4"}));
    EXPECT_GT(j["unpriced"]["plans"].get<int>(), 0);
    EXPECT_EQ(j["unpriced"]["fastest"]["scenario"]["instance"], "Standard_ND96asr_v4");
    EXPECT_TRUE(j["unpriced"]["fastest"]["cost_usd"].is_null());
    // Every feasible plan is one instance's or the other's: the priced one's are those it has alone.
    const ProcessResult alone =
        run_epochcast("plan --deadline 4h --precision bf16 --loader dali --instance p5.48xlarge --json");
    ASSERT_EQ(alone.exit_code, 0) << alone.err;
    EXPECT_EQ(j["feasible"].get<std::size_t>(), j["unpriced"]["plans"].get<std::size_t>() +
                                                    nlohmann::json::parse(alone.out)["feasible"].get<std::size_t>());

    const ProcessResult text = run_epochcast(flags);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("No price by the hour for Standard_ND96asr_v4 (under on-demand): its "), std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("left out of the ranking"), std::string::npos) << text.out;
    const std::size_t answer = text.out.find("Cheapest within the deadline");
    ASSERT_NE(answer, std::string::npos);
    EXPECT_NE(text.out.find("x p5.48xlarge", answer), std::string::npos) << text.out;
    EXPECT_EQ(text.out.find("n/a", answer), std::string::npos) << text.out;
}

// Issue 59, item 4: the search built every configuration in memory (ten --nodes values up to
// 100,000 and twenty batches reached 20 GB; a 200,000-instance catalog ran out of a 4 GB limit).
// The space is counted before anything is built, and one over the bound is bad input.
TEST(PlanCli, ASearchTooLargeToHoldIsRefusedBeforeItIsBuilt) {
    std::string instances;
    for (int i = 0; i < 20'000; ++i) {
        instances += (i == 0 ? "" : ",") + std::string(R"({"name": "i)") + std::to_string(i) +
                     R"(.big", "gpu": "G", "gpus": 8, "vcpus": 64, "memory_gib": 512, "network_gbps": 100,
                        "price_usd_per_hour": 10, "source": "t"})";
    }
    TempFile catalog(R"({"schema": "epochcast.catalog/1", "gpus": [{"name": "G", "fp32_tflops": 10,
        "fp16_tflops": 20, "memory_gib": 16, "memory_GBps": 500, "source": "t"}], "instances": [)" +
                         instances + "]}",
                     ".json");
    const ProcessResult r = run_epochcast("plan --deadline 2h --catalog " + catalog.path());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("epochcast: error: the search would hold ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(" configurations, over its limit of 1,000,000: name fewer instances (--instance, --cloud), "
                         "--nodes or --batch-per-gpu values\n"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    // One of the same instances, named: within the bound, searched.
    const ProcessResult named = run_epochcast("plan --deadline 30h --catalog " + catalog.path() + " --instance i7.big");
    EXPECT_EQ(named.exit_code, 0) << named.err;
    EXPECT_NE(named.out.find("Searched "), std::string::npos) << named.out;
}

// Issue 59, item 15: "--budget must be at most $1,000,000,000,000.00 (got 1e+12)" was said of
// 1.0000001e12, and a duplicate --instance doubled "Searched N configurations".
TEST(PlanCli, ABudgetIsEchoedAsGivenAndAnInstanceNamedTwiceIsSearchedOnce) {
    const ProcessResult budget = run_epochcast("plan --budget 1.0000001e12");
    EXPECT_EQ(budget.exit_code, 2);
    EXPECT_EQ(budget.err, "epochcast: error: --budget must be at most $1,000,000,000,000.00 (got 1.0000001e+12)\n");
    const ProcessResult once = run_epochcast("plan --deadline 2h --instance p5.48xlarge");
    const ProcessResult twice = run_epochcast("plan --deadline 2h --instance p5.48xlarge --instance p5.48xlarge");
    ASSERT_EQ(once.exit_code, 0) << once.err;
    ASSERT_EQ(twice.exit_code, 0) << twice.err;
    EXPECT_EQ(once.out, twice.out);
    EXPECT_NE(once.out.find("Searched 3,300 configurations"), std::string::npos) << once.out;
}

TEST(PlanCli, BadInputsAreExitCodeTwoNamingTheProblem) {
    struct Case {
        const char* arguments;
        const char* expected;
    };
    for (const Case& c :
         {Case{"plan", "--deadline"}, Case{"plan --deadline soon", "--deadline 'soon'"},
          Case{"plan --deadline 0h", "--deadline '0h'"}, Case{"plan --budget -5", "--budget"},
          Case{"plan --deadline 1h --instance p9.mega", "p9.mega"}, Case{"plan --deadline 1h --model vgg16", "vgg16"},
          Case{"plan --deadline 1h --nodes 0", "--nodes"}, Case{"plan --deadline 1h --plot out.gif", "out.gif"},
          // Issue 42: no "inf days", no repeated or hexadecimal durations, no budget past a double's cents.
          Case{"plan --deadline 1e308", "--deadline '1e308'"}, Case{"plan --deadline 1h1h", "--deadline '1h1h'"},
          Case{"plan --deadline 0x10h", "--deadline '0x10h'"}, Case{"plan --deadline 30m1h", "--deadline '30m1h'"},
          Case{"plan --deadline 3651d", "beyond 10 years"}, Case{"plan --budget 1e308", "--budget must be at most"},
          Case{"plan --budget inf", "--budget"},
          // Issue 59, item 8: a budget of 0 (or -0) is not "no budget", a global batch of 0 not "none".
          Case{"plan --deadline 1h --budget 0", "--budget must be positive US dollars (got 0)"},
          Case{"plan --deadline 1h --budget -0", "--budget must be positive"},
          Case{"plan --deadline 1h --global-batch 0", "--global-batch must be at least 1 (got 0)"}}) {
        const ProcessResult r = run_epochcast(c.arguments);
        EXPECT_EQ(r.exit_code, 2) << c.arguments;
        EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.arguments << ": " << r.err;
    }
}

TEST(PlanCliLimits, DurationsAndDollarsPrintAtAnyMagnitude) {
    // Issue 42: format_dollars found no '.' past 63 characters and threw; "$1e+18.00".
    EXPECT_EQ(cli::format_dollars(1234.567), "$1,234.57");
    EXPECT_EQ(cli::format_dollars(0.004), "$0.00");
    EXPECT_EQ(cli::format_dollars(19.999), "$20.00");
    EXPECT_EQ(cli::format_dollars(1e18), "$1e+18");
    EXPECT_EQ(cli::format_dollars(1e308), "$1e+308");
    EXPECT_EQ(cli::format_dollars(-5), "-$5.00");
    EXPECT_EQ(cli::format_dollars(INFINITY), "$inf");
    EXPECT_EQ(cli::format_duration(90), "90.0 s");
    EXPECT_EQ(cli::format_duration(3.0 * 86400), "3.00 days");
    EXPECT_EQ(cli::format_duration(1e300), "1.16e+295 days");
    EXPECT_EQ(cli::format_duration(INFINITY), "forever");
    // The largest budget and the longest deadline plan takes answer with finite figures.
    const ProcessResult r = run_epochcast("plan --deadline 3650d --budget 1e12 --instance p3.2xlarge --nodes 1");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("Fastest within the budget of $1,000,000,000,000.00"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Cheapest within the deadline of 3,650.00 days"), std::string::npos) << r.out;
}

TEST(PlanCliLimits, NodeCountsPastTheLimitAreRefusedBeforeAnySearch) {
    // plan --nodes 2147483647 recommended a plan lasting -1.66e14 s; plan-calibration --max-nodes
    // 1073741824 looped forever as nodes *= 2 overflowed.
    for (const char* arguments : {"plan --deadline 1h --nodes 2147483647", "plan --deadline 1h --nodes 4,8388608",
                                  "plan-calibration --instance p3.16xlarge --max-nodes 1073741824"}) {
        const ProcessResult r = run_epochcast(arguments);
        EXPECT_EQ(r.exit_code, 2) << arguments;
        EXPECT_TRUE(r.out.empty()) << arguments << ": " << r.out;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << arguments << ": " << r.err;
        EXPECT_NE(r.err.find("is more than the 100,000 nodes epochcast models"), std::string::npos)
            << arguments << ": " << r.err;
    }
    const ProcessResult epochs = run_epochcast("plan --deadline 1h --epochs 1e15");
    EXPECT_EQ(epochs.exit_code, 2);
    EXPECT_NE(epochs.err.find("--epochs 1e+15 is more than the 10,000 epochs"), std::string::npos) << epochs.err;
    const ProcessResult size = run_epochcast("plan --deadline 1h --image-size 2147483647");
    EXPECT_EQ(size.exit_code, 2);
    EXPECT_NE(size.err.find("--image-size 2147483647 is more than the 4,096 px"), std::string::npos) << size.err;
}

// issue 45: a spot plan weighs its expected interruptions against its elastic and on-demand twins.
// At the catalog's band for p3 (the Spot Instance Advisor's >20% a month) spot's discount (83%)
// wins, elastic by a hair (a restart costs less than the wait would have trained: R < W eta). At
// 0.13 interruptions per node-hour on 64 nodes (8.3 an hour) waiting for each replacement makes
// the run 8 times longer (52 min against 6.3) and dearer than on demand, while going on without
// the lost node (seed 003's dynamic training) still wins; at 0.28 (17.9 an hour) both lose.
TEST(PlanCli, SpotWinsWhenInterruptionsAreRareAndLosesWhenTheyEatTheDiscount) {
    auto cheapest = [](const std::string& rate) {
        const ProcessResult r =
            run_epochcast("plan --deadline 3h --instance p3.16xlarge --nodes 64 --spot --recipe mlperf-lars --json" +
                          (rate.empty() ? "" : " --spot-interruptions-per-node-hour " + rate));
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return nlohmann::json::parse(r.out);
    };
    const nlohmann::json a = cheapest("");
    const nlohmann::json& cheap = a["cheapest_within_deadline"];
    EXPECT_EQ(cheap["scenario"]["pricing"], "spot");
    EXPECT_EQ(cheap["scenario"]["spot_elastic"], true);
    ASSERT_TRUE(cheap["spot"].is_object());
    EXPECT_TRUE(cheap["spot"]["elastic_priced"].get<bool>());
    EXPECT_GT(cheap["spot"]["expected_interruptions"].get<double>(), 0);
    EXPECT_LT(cheap["spot"]["expected_interruptions"].get<double>(), 0.1);
    EXPECT_LT(cheap["cost_usd"].get<double>(), cheap["spot"]["waiting_cost_usd"].get<double>());
    const ProcessResult text =
        run_epochcast("plan --deadline 3h --instance p3.16xlarge --nodes 64 --spot --recipe mlperf-lars");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find(", spot elastic ("), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("waiting for each replacement instead: "), std::string::npos) << text.out;

    // Waiting loses to on demand; elastic wins, as predict --elastic-spot prices it.
    const nlohmann::json b = cheapest("0.13");
    const nlohmann::json& elastic = b["cheapest_within_deadline"];
    EXPECT_EQ(elastic["scenario"]["spot_elastic"], true) << elastic.dump();
    double on_demand_usd = 0;  // the cheapest on-demand plan of the front, whatever its strategy
    for (const nlohmann::json& f : b["front"]) {
        if (f["scenario"]["pricing"] == "on-demand" &&
            (on_demand_usd == 0 || f["cost_usd"].get<double>() < on_demand_usd)) {
            on_demand_usd = f["cost_usd"].get<double>();
        }
    }
    ASSERT_GT(on_demand_usd, 0) << b["front"].dump();
    EXPECT_GT(elastic["spot"]["waiting_cost_usd"].get<double>(), on_demand_usd);
    EXPECT_LT(elastic["cost_usd"].get<double>(), on_demand_usd);
    const ProcessResult predicted = run_epochcast(
        "predict --instance p3.16xlarge --nodes 64 --batch-per-gpu 64 --target-top1 75.9 --recipe mlperf-lars "
        "--pricing spot "
        "--spot-interruptions-per-node-hour 0.13 --elastic-spot --json");
    ASSERT_EQ(predicted.exit_code, 0) << predicted.err;
    EXPECT_NEAR(nlohmann::json::parse(predicted.out)["cost_usd"].get<double>(), elastic["cost_usd"].get<double>(),
                1e-6);

    const nlohmann::json c = cheapest("0.28");
    const nlohmann::json& chosen = c["cheapest_within_deadline"];
    EXPECT_EQ(chosen["scenario"]["pricing"], "on-demand") << chosen.dump();
    EXPECT_FALSE(chosen.contains("spot"));  // an on-demand plan has no spot figures
    // A spot plan left on the front (a faster one, dearer than on demand) pays for its interruptions.
    for (const nlohmann::json& f : c["front"]) {
        if (f["scenario"]["pricing"] == "spot") {
            EXPECT_GT(f["spot"]["expected_interruptions"].get<double>(), 1);
        }
    }
    const ProcessResult bad = run_epochcast("plan --deadline 3h --spot --checkpoint-every 0min");
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("--checkpoint-every"), std::string::npos) << bad.err;
}

// GCP and Azure publish no interruption rate for their spot VMs, so their spot plans are priced as
// if never interrupted: plan names those instances in one line (and the JSON's spot_rate_unknown),
// and a given rate weighs them, leaving none unnamed. AWS's, with their Spot Instance Advisor band,
// are never named.
TEST(PlanCli, SpotPlansWithoutAnInterruptionRateAreNamed) {
    const std::string space =
        "plan --deadline 4h --spot --instance Standard_ND96amsr_A100_v4 --instance a2-highgpu-8g "
        "--instance p4d.24xlarge --nodes 1,2 --batch-per-gpu 128 --epochs 35";
    const ProcessResult text = run_epochcast(space);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("No interruption rate is known for Standard_ND96amsr_A100_v4, a2-highgpu-8g (the catalog "
                            "has no frequency band for them): their spot plans (\"interruptions unknown\") are "
                            "priced as if never interrupted; --spot-interruptions-per-node-hour gives every spot "
                            "plan one rate.\n"),
              std::string::npos)
        << text.out;
    const nlohmann::json unknown = nlohmann::json::parse(run_epochcast(space + " --json").out);
    EXPECT_EQ(unknown["spot_rate_unknown"], nlohmann::json::array({"Standard_ND96amsr_A100_v4", "a2-highgpu-8g"}));
    for (const nlohmann::json& f : unknown["front"]) {
        const std::string& name = f["scenario"]["instance"].get_ref<const std::string&>();
        if (f["scenario"]["pricing"] == "spot") {
            EXPECT_EQ(f["spot"].is_null(), name != "p4d.24xlarge") << f.dump();
        }
    }

    const ProcessResult rated = run_epochcast(space + " --spot-interruptions-per-node-hour 0.01");
    ASSERT_EQ(rated.exit_code, 0) << rated.err;
    EXPECT_EQ(rated.out.find("No interruption rate"), std::string::npos) << rated.out;
    EXPECT_EQ(rated.out.find("interruptions unknown"), std::string::npos) << rated.out;
    EXPECT_EQ(nlohmann::json::parse(
                  run_epochcast(space + " --spot-interruptions-per-node-hour 0.01 --json").out)["spot_rate_unknown"],
              nlohmann::json::array());
}

// Issue 45, point 5: plan ranks with the store. From a 1.2 TiB FSx for Lustre file system (150 MB/s,
// some 1,300 images/s while the page caches fill) every p4d plan waits on the store and the staging
// copy, and the cheapest plan within 4 hours changes from a p4d to a p5; its time and cost are
// predict's with the same store, the store's bill among them, and its text names the store.
TEST(PlanCli, PlansAreRankedWithTheStoreAndItsBill) {
    const std::string space =
        "plan --deadline 4h --instance p5.48xlarge --instance p4d.24xlarge --nodes 1,2 --batch-per-gpu 256 "
        "--epochs 90";
    const ProcessResult none = run_epochcast(space + " --json");
    const ProcessResult fsx = run_epochcast(space + " --storage fsx-lustre --json");
    ASSERT_EQ(none.exit_code, 0) << none.err;
    ASSERT_EQ(fsx.exit_code, 0) << fsx.err;
    const nlohmann::json unstored = nlohmann::json::parse(none.out)["cheapest_within_deadline"];
    const nlohmann::json stored = nlohmann::json::parse(fsx.out)["cheapest_within_deadline"];
    ASSERT_FALSE(unstored.is_null());
    ASSERT_FALSE(stored.is_null());
    EXPECT_EQ(unstored["scenario"]["instance"], "p4d.24xlarge");
    EXPECT_EQ(stored["scenario"]["instance"], "p5.48xlarge");
    EXPECT_EQ(stored["storage"]["store"], "fsx-lustre");
    EXPECT_EQ(stored["storage"]["first_epoch_bound"], true);
    EXPECT_GT(stored["storage_usd"].get<double>(), 0);
    EXPECT_GT(stored["storage"]["staging_s"].get<double>(), 3600);

    const nlohmann::json& s = stored["scenario"];
    const ProcessResult predict = run_epochcast(
        "predict --instance p5.48xlarge --nodes " + std::to_string(s["nodes"].get<int>()) + " --strategy " +
        s["strategy"].get<std::string>() + " --batch-per-gpu 256 --epochs 90 --storage fsx-lustre --json");
    ASSERT_EQ(predict.exit_code, 0) << predict.err;
    const nlohmann::json p = nlohmann::json::parse(predict.out);
    for (const char* key : {"time_to_train_s", "cost_usd", "storage_usd", "data_transfer_usd", "cluster_usd"}) {
        EXPECT_NEAR(stored[key].get<double>(), p[key].get<double>(), 1e-9 * p[key].get<double>()) << key;
    }

    const ProcessResult text = run_epochcast(space + " --storage fsx-lustre");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("bottleneck storage (first epoch"), std::string::npos) << text.out;
}

// Issue 58, item 2: `plan --deadline 2h --pricing capacity-block` answered "1 x p5.48xlarge ...
// $15.16", the run's minutes at the block's rate. The answer now bills the day AWS sells (24 h at
// the catalog's rate per instance) and gives the run's share beside it; --rank-by share ranks by
// the share, and a word that is neither is refused.
TEST(PlanCli, ACapacityBlockIsBilledByTheDayAndTheShareIsShownBeside) {
    const ProcessResult json = run_epochcast("plan --deadline 2h --pricing capacity-block --json");
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const nlohmann::json j = nlohmann::json::parse(json.out);
    EXPECT_EQ(j["ranked_by"], "bill");
    const nlohmann::json& answer = j["cheapest_within_deadline"];
    const int nodes = answer["scenario"]["nodes"].get<int>();
    const double rate = answer["cluster_usd_per_hour"].get<double>();
    EXPECT_EQ(answer["billing"], "a 1-day Capacity Block");
    EXPECT_DOUBLE_EQ(answer["billed_hours_per_node"].get<double>(), 24.0);
    EXPECT_NEAR(answer["bill_usd"].get<double>(), 24.0 * rate, 1e-6) << nodes;
    EXPECT_NEAR(answer["at_confidence"]["cost_usd"].get<double>(), answer["bill_usd"].get<double>(), 1e-6);
    EXPECT_LT(answer["cost_usd"].get<double>(), answer["bill_usd"].get<double>() / 10);
    // The front is ranked by the bill: cheaper bills come with slower plans.
    double previous_bill = INFINITY;
    for (const auto& plan : j["front"]) {
        EXPECT_LT(plan["bill_usd"].get<double>(), previous_bill);
        previous_bill = plan["bill_usd"].get<double>();
    }

    const ProcessResult text = run_epochcast("plan --deadline 2h --pricing capacity-block");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("Ranked by the bill"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("for a 1-day Capacity Block at "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("the run's share $"), std::string::npos) << text.out;

    const ProcessResult share = run_epochcast("plan --deadline 2h --pricing capacity-block --rank-by share --json");
    ASSERT_EQ(share.exit_code, 0) << share.err;
    const nlohmann::json s = nlohmann::json::parse(share.out);
    EXPECT_EQ(s["ranked_by"], "share");
    EXPECT_NEAR(s["cheapest_within_deadline"]["at_confidence"]["cost_usd"].get<double>(),
                s["cheapest_within_deadline"]["cost_usd"].get<double>(), 1e-6);

    const ProcessResult bad = run_epochcast("plan --deadline 2h --rank-by cheapest");
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("--rank-by must be bill or share"), std::string::npos) << bad.err;
    EXPECT_TRUE(bad.out.empty());
}

// Issue 58, item 5: `plan --spot` picked Azure's ND96amsr A100 at $3.60/h (11% of on-demand) with
// no word of doubt. Each spot answer now names its price's kind, age and share of on-demand, flags
// the implausible share and the unknown interruption rate, and the search says capacity is not
// modelled.
TEST(PlanCli, ASpotAnswerFlagsAnImplausiblePriceAndSaysCapacityIsNotModelled) {
    const ProcessResult r =
        run_epochcast("plan --deadline 3h --spot --instance Standard_ND96amsr_A100_v4 --instance p4d.24xlarge");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("Spot capacity: whether that many spot instances can be had at once"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("spot inputs: $3.60/h a quote read 2026-11-23 ("), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("11% of on-demand (implausibly low"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("interruptions: unknown, priced as never interrupted"), std::string::npos) << r.out;
    const ProcessResult on_demand = run_epochcast("plan --deadline 3h --instance p4d.24xlarge");
    EXPECT_EQ(on_demand.out.find("spot"), std::string::npos) << on_demand.out;
}

// Issue 58, item 3: a cluster whose nodes have fewer vCPUs per GPU than the loader needs beside
// each GPU's training process (eq. D3: 4 for DALI) is left out with a count; the same node on
// fewer of its GPUs is planned.
TEST(PlanCli, NodesTooThinForTheLoaderAreLeftOutWithACount) {
    TempFile catalog(
        R"({"schema": "epochcast.catalog/1", "instances": [{"name": "l4.thin", "gpu": "L4", "gpus": 4, "vcpus": 12, "memory_gib": 64, "intra_node_GBps": 32,
        "network_gbps": 25, "cloud": "aws", "prices": {"on-demand": {"usd_per_hour": 4, "read": "2026-12-01"}},
        "source": "test"}]})",
        ".json");
    const std::string flags = "plan --deadline 30h --loader dali --instance l4.thin --catalog " + catalog.path();
    const ProcessResult json = run_epochcast(flags + " --json");
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const nlohmann::json j = nlohmann::json::parse(json.out);
    EXPECT_GT(j["host_vcpus_short"].get<int>(), 0) << json.out;
    ASSERT_FALSE(j["front"].empty());
    for (const auto& plan : j["front"]) {
        EXPECT_LT(plan["scenario"]["gpus_per_node"].get<int>(), 4) << plan.dump();
        EXPECT_FALSE(plan["host_vcpus_short"].get<bool>()) << plan.dump();
    }
    const ProcessResult text = run_epochcast(flags);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find(" more on nodes with fewer vCPUs per GPU than the loader needs beside the training "
                            "process left out (4 for DALI, 2 for a CPU loader)"),
              std::string::npos)
        << text.out;
    // With synthetic data nothing is decoded: every GPU count is planned.
    const ProcessResult synthetic =
        run_epochcast("plan --deadline 30h --loader synthetic --instance l4.thin --json --catalog " + catalog.path());
    ASSERT_EQ(synthetic.exit_code, 0) << synthetic.err;
    EXPECT_EQ(nlohmann::json::parse(synthetic.out)["host_vcpus_short"], 0) << synthetic.out;
    // predict says so of the thin cluster, and predicts it.
    const ProcessResult predict =
        run_epochcast("predict --instance l4.thin --gpus-per-node 4 --loader dali --catalog " + catalog.path());
    ASSERT_EQ(predict.exit_code, 0) << predict.err;
    EXPECT_NE(predict.out.find("note: l4.thin has 3 vCPUs per GPU; the dali loader needs 4 beside each GPU's "
                               "training process"),
              std::string::npos)
        << predict.out;
}

// Issue 58, item 3: the 2-hour answer's own band ran past the deadline, unsaid. Where it does, plan
// says so and names the cheapest plan that meets the deadline nine times in ten.
TEST(PlanCli, AnAnswerWhoseBandRunsPastTheDeadlineComesWithOneThatMeetsItNineTimesInTen) {
    const double deadline_s = 70 * 60;
    const ProcessResult json = run_epochcast("plan --deadline 70min --json");
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const nlohmann::json j = nlohmann::json::parse(json.out);
    const auto& answer = j["cheapest_within_deadline"];
    ASSERT_TRUE(answer.is_object()) << json.out;
    EXPECT_LE(answer["time_to_train_s"].get<double>(), deadline_s);
    ASSERT_GT(answer["time_to_train_interval"]["high"].get<double>(), deadline_s) << "the case needs a wide band";
    const auto& safer = j["safer_within_deadline"];
    ASSERT_TRUE(safer.is_object()) << json.out;
    EXPECT_EQ(safer["at_confidence"]["confidence"], 0.9);
    EXPECT_LE(safer["at_confidence"]["time_to_train_s"].get<double>(), deadline_s);
    EXPECT_GT(safer["at_confidence"]["time_to_train_s"].get<double>(), safer["time_to_train_s"].get<double>());
    EXPECT_GE(safer["cost_usd"].get<double>(), answer["cost_usd"].get<double>());  // safety costs, never saves
    const ProcessResult text = run_epochcast("plan --deadline 70min");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("  Its 95% band runs past the deadline (to "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("Cheapest meeting the deadline at 90% confidence (--confidence 0.9):"), std::string::npos)
        << text.out;
    // Asked at 90% already, the answer is that one, and nothing more is said.
    const ProcessResult at_90 = run_epochcast("plan --deadline 70min --confidence 0.9 --json");
    ASSERT_EQ(at_90.exit_code, 0) << at_90.err;
    const nlohmann::json k = nlohmann::json::parse(at_90.out);
    EXPECT_TRUE(k["safer_within_deadline"].is_null());
    EXPECT_EQ(k["cheapest_within_deadline"]["scenario"], safer["scenario"]);
    const ProcessResult at_90_text = run_epochcast("plan --deadline 70min --confidence 0.9");
    ASSERT_EQ(at_90_text.exit_code, 0) << at_90_text.err;
    EXPECT_EQ(at_90_text.out.find("Its 95% band runs past the deadline"), std::string::npos) << at_90_text.out;
}

}  // namespace
}  // namespace epochcast::testing
