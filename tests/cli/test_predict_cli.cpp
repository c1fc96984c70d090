// `epochcast predict` as a user runs it: the table, the --json contract, and a one-line error
// with exit code 2 for every kind of bad input named in issue 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "cli/report.hpp"
#include "model/calibration.hpp"
#include "model/errors.hpp"
#include "tests/cli/cli_process.hpp"
#include "tests/support/temp_file.hpp"

namespace epochcast {
namespace {

using testing::run_epochcast;
using testing::TempFile;

std::string run_in_process(const std::vector<std::string>& args) {
    std::ostringstream out;
    cli::run(args, out);
    return out.str();
}

TEST(PredictCli, DefaultIsTodaysSetupBesideTheSeedClusterWithBothOfItsSetups) {
    const std::string table = run_in_process({"predict"});
    EXPECT_NE(table.find("pytorch / nccl"), std::string::npos) << table;
    EXPECT_NE(table.find("1 x p5.48xlarge = 8 x H100-SXM5-80GB"), std::string::npos) << table;
    EXPECT_NE(table.find("mxnet / ps"), std::string::npos) << table;
    EXPECT_NE(table.find("tensorflow / ring"), std::string::npos);
    EXPECT_NE(table.find("16 x m4.16xlarge"), std::string::npos);
    EXPECT_NE(table.find("8 x p3.16xlarge = 64 x V100-SXM2-16GB"), std::string::npos);
    EXPECT_NE(table.find("throughput (images/s)"), std::string::npos);
    EXPECT_NE(table.find("cost to train"), std::string::npos);
}

TEST(PredictCli, DefaultJsonIsAListOfTheThreeSetupsAndAFlagMakesItOneObject) {
    // One object per configuration; the default's three (today's default, then seed 000's two
    // set-ups) are a list of three.
    const auto all = nlohmann::json::parse(run_in_process({"predict", "--json"}));
    ASSERT_TRUE(all.is_array()) << all.dump();
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0]["scenario"]["framework"], "pytorch");
    EXPECT_EQ(all[0]["scenario"]["instance"], "p5.48xlarge");
    EXPECT_EQ(all[0]["scenario"]["nodes"], 1);
    EXPECT_EQ(all[0]["scenario"]["strategy"], "nccl");
    EXPECT_EQ(all[0]["gpus"], 8);
    EXPECT_EQ(all[1]["scenario"]["framework"], "mxnet");
    EXPECT_EQ(all[1]["scenario"]["ps_nodes"], 16);
    EXPECT_EQ(all[2]["scenario"]["framework"], "tensorflow");
    EXPECT_EQ(all[2]["scenario"]["strategy"], "ring");
    for (std::size_t seed : {1u, 2u}) {
        EXPECT_EQ(all[seed]["scenario"]["instance"], "p3.16xlarge");
        EXPECT_EQ(all[seed]["gpus"], 64);
    }
    for (const auto& one : all) {
        EXPECT_EQ(one["scenario"]["batch_per_gpu"], 256);
        EXPECT_EQ(one["scenario"]["precision"], "amp");
        EXPECT_FALSE(one["scenario"].contains("stack")) << "today's software, which the JSON leaves unsaid";
    }
    EXPECT_TRUE(nlohmann::json::parse(run_in_process({"predict", "--nodes", "2", "--json"})).is_object());
}

TEST(PredictCli, PricingAppliesToTheDefaultsThreeSetupsAndStackToTheSeeds) {
    // README "Two commands": `--stack legacy` gives the seeds' cluster on the 2018 releases they ran,
    // the same figures as seed 000's set-up spelled out in flags; today's default stays on today's.
    const auto legacy =
        nlohmann::json::parse(run_in_process({"predict", "--stack", "legacy", "--pricing", "spot", "--json"}));
    ASSERT_TRUE(legacy.is_array()) << legacy.dump();
    ASSERT_EQ(legacy.size(), 3u);
    EXPECT_FALSE(legacy[0]["scenario"].contains("stack")) << legacy[0]["scenario"].dump();
    EXPECT_EQ(legacy[1]["scenario"]["stack"], "legacy");
    EXPECT_EQ(legacy[2]["scenario"]["stack"], "legacy");
    for (const auto& one : legacy) EXPECT_EQ(one["scenario"]["pricing"], "spot");
    const auto seed000 = nlohmann::json::parse(
        run_in_process({"predict",     "--instance",  "p3.16xlarge", "--nodes",     "8",     "--batch-per-gpu",
                        "256",         "--precision", "amp",         "--strategy",  "ps",    "--ps-instance",
                        "m4.16xlarge", "--ps-nodes",  "16",          "--framework", "mxnet", "--stack",
                        "legacy",      "--pricing",   "spot",        "--json"}));
    EXPECT_EQ(legacy[1]["throughput_images_per_s"], seed000["throughput_images_per_s"]);
    EXPECT_EQ(legacy[1]["cost_usd"], seed000["cost_usd"]);
    const auto current = nlohmann::json::parse(run_in_process({"predict", "--pricing", "spot", "--json"}));
    EXPECT_EQ(legacy[0], current[0]);
    EXPECT_NE(legacy[1]["throughput_images_per_s"], current[1]["throughput_images_per_s"]);
    EXPECT_NE(legacy[2]["throughput_images_per_s"], current[2]["throughput_images_per_s"]);
    const std::string table = run_in_process({"predict", "--stack", "legacy"});
    EXPECT_NE(table.find("under its two set-ups on the 2018 software the seeds ran:"), std::string::npos) << table;
    EXPECT_NE(table.find("tensorflow / ring"), std::string::npos) << table;
}

TEST(PredictCli, EveryCalibrationWordIsAcceptedAsInTheOtherSubcommands) {
    // predict once read "data-free" and "built-in" as file names (exit 2) while plan and sweep took them.
    // No input pipeline: its decode rates are the same in both calibrations; the compute differs.
    const std::vector<std::string> flags = {"predict", "--nodes",      "2", "--loader", "synthetic",
                                            "--json",  "--calibration"};
    auto with = [&flags](const std::string& word) {
        std::vector<std::string> args = flags;
        args.push_back(word);
        return nlohmann::json::parse(run_in_process(args));
    };
    const auto plain =
        nlohmann::json::parse(run_in_process({"predict", "--nodes", "2", "--loader", "synthetic", "--json"}));
    EXPECT_EQ(with("built-in"), plain);
    const auto data_free = with("data-free");
    EXPECT_NE(data_free["throughput_images_per_s"], plain["throughput_images_per_s"]);
    const Calibration prior = load_calibration("data-free");
    const TempFile file(prior.to_json());
    EXPECT_EQ(with(file.path()), data_free);
}

TEST(PredictCli, TimeAndCostHaveBandsInTheTextAndTheJson) {
    const testing::ProcessResult json = run_epochcast("predict --instance p4d.24xlarge --nodes 2 --json");
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const nlohmann::json j = nlohmann::json::parse(json.out);
    const auto& time = j["time_to_train_interval"];
    const auto& cost = j["cost_interval"];
    EXPECT_LT(time["low"].get<double>(), j["time_to_train_s"].get<double>());
    EXPECT_GT(time["high"].get<double>(), j["time_to_train_s"].get<double>());
    EXPECT_NEAR(cost["high"].get<double>(), time["high"].get<double>() / 3600 * j["cluster_usd_per_hour"].get<double>(),
                1e-9 * cost["high"].get<double>());
    const testing::ProcessResult text = run_epochcast("predict --instance p4d.24xlarge --nodes 2");
    const std::string dollars =
        cli::format_dollars(cost["low"].get<double>()) + " - " + cli::format_dollars(cost["high"].get<double>());
    EXPECT_NE(text.out.find("  95% band                         " + dollars), std::string::npos) << text.out;
}

TEST(PredictCli, CountsInTheTableHaveThousandsSeparators) {
    const std::string table =
        run_in_process({"predict", "--instance", "dgx-h100", "--nodes", "316", "--global-batch", "40448"});
    EXPECT_NE(table.find("316 x dgx-h100 = 2,528 x H100-SXM5-80GB"), std::string::npos) << table;
    EXPECT_NE(table.find("(global 40,448, fixed)"), std::string::npos) << table;
}

TEST(PredictCli, JsonHasTheContractKeys) {
    const auto json = nlohmann::json::parse(
        run_in_process({"predict",     "--instance",  "p3.16xlarge", "--nodes",     "8",     "--batch-per-gpu",
                        "256",         "--precision", "amp",         "--strategy",  "ps",    "--ps-instance",
                        "m4.16xlarge", "--ps-nodes",  "16",          "--framework", "mxnet", "--stack",
                        "legacy",      "--json"}));
    for (const char* key :
         {"throughput_images_per_s", "iteration_s", "compute_s", "data_s", "communication_s", "exposed_communication_s",
          "epoch_s", "time_to_train_s", "cost_usd", "cost_per_epoch_usd", "scaling_efficiency", "gpus", "interval"}) {
        EXPECT_TRUE(json.contains(key)) << key;
    }
    EXPECT_EQ(json["gpus"], 64);
    const double throughput = json["throughput_images_per_s"];
    EXPECT_NEAR(throughput, 44000, 0.05 * 44000);
    EXPECT_LT(json["interval"]["low"].get<double>(), throughput);
    EXPECT_GT(json["interval"]["high"].get<double>(), throughput);
    EXPECT_EQ(json["scenario"]["ps_nodes"], 16);
}

TEST(PredictCli, GlobalBatchSetsThePerGpuBatchAndAnIndivisibleOneIsExitCode2) {
    const auto json = nlohmann::json::parse(
        run_in_process({"predict", "--instance", "dgx-a100", "--nodes", "16", "--global-batch", "2048", "--json"}));
    EXPECT_EQ(json["global_batch"], 2048);
    EXPECT_EQ(json["scenario"]["batch_per_gpu"], 16);
    EXPECT_EQ(json["scenario"]["global_batch"], 2048);
    EXPECT_EQ(json["interconnect"], "infiniband");
    const auto bad = testing::run_epochcast("predict --nodes 3 --global-batch 1000");
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("does not divide over 24 GPUs"), std::string::npos) << bad.err;
}

TEST(PredictCli, GpusPerNodeAndDefaultStrategy) {
    // Seed 001's 4-GPU run: half a p3.16xlarge, TensorFlow on the 2018 releases.
    const auto json =
        nlohmann::json::parse(run_in_process({"predict", "--instance", "p3.16xlarge", "--nodes", "1", "--gpus-per-node",
                                              "4", "--framework", "tensorflow", "--stack", "legacy", "--json"}));
    EXPECT_EQ(json["gpus"], 4);
    EXPECT_EQ(json["scenario"]["strategy"], "nccl");  // NCCL chooses: a ring inside one node
    EXPECT_NEAR(json["throughput_images_per_s"].get<double>(), 3012, 0.05 * 3012);
}

TEST(PredictCli, ProcessPrintsTableAndExitsZero) {
    const auto result = run_epochcast("predict");
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_NE(result.out.find("time to train"), std::string::npos);
    EXPECT_TRUE(result.err.empty()) << result.err;
}

/// Exit code 2, nothing on stdout, exactly one line on stderr that contains `fragment`.
void expect_bad_input(const std::string& arguments, const std::string& fragment) {
    const auto result = run_epochcast(arguments);
    EXPECT_EQ(result.exit_code, 2) << arguments << "\n" << result.err;
    EXPECT_TRUE(result.out.empty()) << arguments << "\n" << result.out;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << arguments << "\n" << result.err;
    EXPECT_NE(result.err.find(fragment), std::string::npos) << arguments << "\n" << result.err;
}

TEST(PredictCliErrors, EachBadInputIsOneLineAndExitCode2) {
    expect_bad_input("predict --instance p9.large", "unknown instance 'p9.large'");
    expect_bad_input("predict --nodes 0", "--nodes must be at least 1");
    expect_bad_input("predict --batch-per-gpu -8", "--batch-per-gpu");
    expect_bad_input("predict --batch-per-gpu lots", "--batch-per-gpu");
    expect_bad_input("predict --batch-per-gpu 2048", "largest batch that fits");  // 80 GiB H100s
    expect_bad_input("predict --gpus-per-node 16", "more than p5.48xlarge has (8)");
    expect_bad_input("predict --strategy allgather", "--strategy: unknown value 'allgather'");
    expect_bad_input("predict --strategy ps", "needs parameter servers");
    expect_bad_input("predict --precision fp8", "--precision");
    expect_bad_input("predict --framework caffe", "--framework");
    expect_bad_input("predict --pricing cheap", "--pricing");
    expect_bad_input("predict --model resnet51", "resnet51");
    expect_bad_input("predict --catalog /nonexistent/catalog.json", "/nonexistent/catalog.json");
    expect_bad_input("predict --calibration /nonexistent/cal.json", "/nonexistent/cal.json");
    expect_bad_input("predict --frobnicate", "frobnicate");
    expect_bad_input("predict --nodes 1000", "a global batch of 2,048,000 images is more than the dataset's 1,281,167");
    expect_bad_input("predict --target-top1 0", "--target-top1 must be a top-1 accuracy in percent");
    expect_bad_input("predict --target-top1 inf", "--target-top1");
    expect_bad_input("predict --target-top1 75.9 --epochs 40", "--epochs excludes --target-top1");
    expect_bad_input("predict --target-top1 75 --recipe lamb", "unknown recipe 'lamb'");
    expect_bad_input("predict --recipe goyal2017", "--recipe goes with --target-top1");
    expect_bad_input("predict --target-top1 77", "recipe goyal2017 reaches 76.32% top-1 at a global batch of 2,048");
    expect_bad_input("predict --target-top1 76 --recipe mlperf-lars", "recipe mlperf-lars reaches 75.9% top-1");
    expect_bad_input("predict --model resnet152 --target-top1 75",
                     "recipe torchvision is published up to a global "
                     "batch of 256; 2,048 is beyond it (give --epochs");
    // The data, evaluation and start-up (issue 45)
    expect_bad_input("predict --storage nfs", "--storage: unknown value 'nfs'");
    expect_bad_input("predict --storage fsx-lustre --storage-tib -1", "--storage-tib must be a positive number");
    expect_bad_input("predict --storage fsx-lustre --storage-tib nan", "--storage-tib");
    expect_bad_input("predict --storage fsx-lustre --storage-tib 0.1", "below the smallest fsx-lustre");
    expect_bad_input("predict --storage fsx-lustre --storage-tier 200", "--storage-tier 200 is no throughput tier");
    expect_bad_input("predict --storage s3 --storage-tib 2.4", "go with --storage fsx-lustre");
    expect_bad_input("predict --eval-every -2", "--eval-every must be at least 0");
    expect_bad_input("predict --startup soon", "--startup 'soon'");
}

TEST(PredictCliStorage, AStoreAddsItsStagingBoundAndCostToTextAndJson) {
    const auto json = run_epochcast("predict --instance p3.8xlarge --storage fsx-lustre --storage-tib 1.2 --json");
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const auto j = nlohmann::json::parse(json.out);
    const auto& store = j["storage"];
    EXPECT_EQ(store["store"], "fsx-lustre");
    EXPECT_NEAR(store["staging_s"].get<double>(), 1'331'167 * 0.05 / 10, 1e-6);  // seed 004: a couple of hours
    EXPECT_NEAR(store["storage_read_GBps"].get<double>(), 0.15, 1e-12);
    EXPECT_NEAR(j["cost_usd"].get<double>(),
                j["cluster_usd"].get<double>() + j["storage_usd"].get<double>() + j["data_transfer_usd"].get<double>(),
                1e-9);
    EXPECT_EQ(j["evaluations"].get<double>(), 0);  // none unless --eval-every asks
    // Seed 004's p3.8xlarge: the store bounds the first epoch, the page cache serves the later ones
    // (docs/model.md, eqs. F7, F8): the throughput is the CPU loader's, the first epoch the store's.
    EXPECT_EQ(j["bottleneck"], "data");
    EXPECT_NEAR(j["first_epoch_images_per_s"].get<double>(), 1'299, 1);
    EXPECT_NEAR(j["throughput_images_per_s"].get<double>(),
                Calibration::built_in().framework(Framework::pytorch).cpu_decode_images_per_s_per_vcpu * 32, 1);
    EXPECT_EQ(store["bound"], false);
    EXPECT_EQ(store["first_epoch_bound"], true);
    EXPECT_EQ(store["store_bound_epochs"].get<double>(), 1);
    EXPECT_NEAR(store["page_cache_hit_fraction"].get<double>(), 0.5 * 244 * 1024 * 1024 * 1024 / 147'897'477'120.0,
                1e-12);
    const auto seed004 = run_epochcast("predict --instance p3.8xlarge --storage fsx-lustre --storage-tib 1.2");
    ASSERT_EQ(seed004.exit_code, 0) << seed004.err;
    EXPECT_NE(seed004.out.find("storage (first epoch; later epochs from each node's page cache: data)"),
              std::string::npos)
        << seed004.out;
    EXPECT_NE(seed004.out.find("  first epoch (images/s)            1,299"), std::string::npos) << seed004.out;
    EXPECT_NE(seed004.out.find("note: the store bounds this run in its first epoch: fsx-lustre delivers 0.15 GB/s"),
              std::string::npos)
        << seed004.out;
    // 8 x p4d.24xlarge: each node reads its own copy into its cache over the first 35 epochs.
    const auto text = run_epochcast("predict --instance p4d.24xlarge --nodes 8 --loader dali --storage fsx-lustre");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("staging (copy from S3)"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("storage (first 35 epochs, as each node's page cache fills; later: compute)"),
              std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("note: the store bounds this run in its first 35 epochs: fsx-lustre delivers 0.15 GB/s"),
              std::string::npos)
        << text.out;
    const auto none = run_epochcast("predict --json");
    ASSERT_EQ(none.exit_code, 0) << none.err;
    EXPECT_FALSE(nlohmann::json::parse(none.out)[0].contains("storage"));  // absent without a store, as spot is
    EXPECT_EQ(nlohmann::json::parse(none.out)[0]["first_epoch_images_per_s"],
              nlohmann::json::parse(none.out)[0]["throughput_images_per_s"]);
}

TEST(PredictCliPricing, AnInstanceNotSoldOnDemandIsRefusedAndItsOwnPricingWorks) {
    // p5e.48xlarge is sold only through EC2 Capacity Blocks: on demand it has no price.
    expect_bad_input("predict --instance p5e.48xlarge --pricing on-demand",
                     "the catalog has no on-demand price for 'p5e.48xlarge' (it is sold as: capacity-block)");
    expect_bad_input("predict --instance p5e.48xlarge",
                     "the catalog has no on-demand price for 'p5e.48xlarge' (it is sold as: capacity-block)");
    expect_bad_input("predict --instance p5en.48xlarge --pricing reserved-3y",
                     "the catalog has no reserved-3y price for 'p5en.48xlarge' (it is sold as: on-demand, spot, "
                     "capacity-block)");
    const auto blocks = run_epochcast("predict --instance p5e.48xlarge --pricing capacity-block --nodes 2 --json");
    ASSERT_EQ(blocks.exit_code, 0) << blocks.err;
    const nlohmann::json j = nlohmann::json::parse(blocks.out);
    EXPECT_EQ(j["scenario"]["pricing"], "capacity-block");
    EXPECT_DOUBLE_EQ(j["cluster_usd_per_hour"].get<double>(), 2 * 47.76);
    EXPECT_NEAR(j["cost_usd"].get<double>(), j["time_to_train_s"].get<double>() / 3600 * 2 * 47.76, 1e-6);
    const auto text = run_epochcast("predict --instance p5e.48xlarge --pricing capacity-block --nodes 2");
    EXPECT_NE(text.out.find("$95.52 capacity-block"), std::string::npos) << text.out;
    // Every pricing model is a word --pricing takes.
    const auto reserved = run_epochcast("predict --instance a2-highgpu-8g --pricing reserved-3y --json");
    ASSERT_EQ(reserved.exit_code, 0) << reserved.err;
    EXPECT_NEAR(nlohmann::json::parse(reserved.out)["cluster_usd_per_hour"].get<double>(), 10.285667, 1e-9);
}

TEST(PredictCliPricing, AnOwnedSystemCostsNaNeverZero) {
    const auto text = run_epochcast("predict --instance dgx-a100");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    for (const char* row : {"cluster price ($/h)", "cost per epoch", "cost to train"}) {
        const auto at = text.out.find(row);
        ASSERT_NE(at, std::string::npos) << row << "\n" << text.out;
        const std::string line = text.out.substr(at, text.out.find('\n', at) - at);
        EXPECT_NE(line.find("n/a"), std::string::npos) << line;
    }
    EXPECT_EQ(text.out.find("$0.00"), std::string::npos) << text.out;
    const auto json = run_epochcast("predict --instance dgx-a100 --json");
    const nlohmann::json j = nlohmann::json::parse(json.out);
    for (const char* key : {"cluster_usd_per_hour", "cost_usd", "cost_per_epoch_usd"}) {
        EXPECT_TRUE(j.contains(key)) << key;
        EXPECT_TRUE(j[key].is_null()) << key << ": " << j[key];
    }
    EXPECT_GT(j["time_to_train_s"].get<double>(), 0);
    // Spot or any other pricing: still no price, still n/a.
    const auto spot = run_epochcast("predict --instance dgx-h100 --pricing spot");
    ASSERT_EQ(spot.exit_code, 0) << spot.err;
    EXPECT_EQ(spot.out.find("$0.00"), std::string::npos) << spot.out;
    // A price given with --catalog makes it priced.
    testing::TempFile priced(R"({"schema": "epochcast.catalog/1", "instances": [
        {"name": "dgx-a100", "prices": {"on-demand": {"usd_per_hour": 20, "read": "2026-11-26", "source": "ours"}}}]})");
    const auto given = run_epochcast("predict --instance dgx-a100 --json --catalog " + priced.path());
    ASSERT_EQ(given.exit_code, 0) << given.err;
    EXPECT_DOUBLE_EQ(nlohmann::json::parse(given.out)["cluster_usd_per_hour"].get<double>(), 20);
}

TEST(PredictCliLimits, EveryScenarioNumberPastItsLimitIsOneLineNamingTheFlag) {
    // Issue 25's hostile inputs, each once exit 0 with a wrong figure or an internal error.
    expect_bad_input("predict --nodes 2147483647",
                     "--nodes 2147483647 is more than the 100,000 nodes epochcast models");
    expect_bad_input("predict --nodes 8388608 --json", "--nodes 8388608 is more than the 100,000 nodes");
    expect_bad_input("predict --nodes 100000000", "--nodes 100000000 is more than");
    expect_bad_input("predict --nodes 99999999999", "--nodes");
    expect_bad_input("predict --image-size 2147483647", "--image-size 2147483647 is more than the 4,096 px");
    expect_bad_input("predict --epochs 1e15", "--epochs 1e+15 is more than the 10,000 epochs");
    expect_bad_input("predict --epochs 1e308", "--epochs 1e+308 is more than the 10,000 epochs");
    expect_bad_input("predict --epochs inf", "--epochs must be a finite number (got inf)");
    expect_bad_input("predict --epochs nan", "--epochs must be a finite number");
    expect_bad_input("predict --epochs 0", "--epochs must be positive");
    expect_bad_input("predict --gpus-per-node 0", "--gpus-per-node must be at least 1 (got 0; leave it out");
    expect_bad_input("predict --gpus-per-node 2000", "--gpus-per-node 2000 is more than the 1,024 GPUs per node");
    expect_bad_input("predict --efa-adapters -1", "--efa-adapters must be at least 0 (got -1");
    expect_bad_input("predict --instance p4d.24xlarge --efa-adapters 99", "--efa-adapters 99 is more than the 64");
    expect_bad_input("predict --ps-nodes 0", "--ps-nodes must be at least 1 (got 0");
    expect_bad_input("predict --strategy ps --ps-colocated --ps-nodes 0", "--ps-nodes must be at least 1");
    expect_bad_input("predict --strategy ps --ps-instance m4.16xlarge --ps-nodes 2147483647",
                     "--ps-nodes 2147483647 is more than the 100,000 server nodes");
    expect_bad_input("predict --global-batch 0", "--global-batch must be at least 1 (got 0");
    expect_bad_input("predict --global-batch -512", "--global-batch must be at least 1");
    expect_bad_input("predict --global-batch 2147483647", "--global-batch 2147483647 is more than the 100,000,000");
    expect_bad_input("predict --global-batch inf", "--global-batch");
    expect_bad_input("predict --batch-per-gpu 0", "--batch-per-gpu must be at least 1");
    expect_bad_input("predict --batch-per-gpu 2147483647", "--batch-per-gpu 2147483647 is more than the 1,000,000");
    expect_bad_input("predict --classes 0", "--classes must be at least 1");
    expect_bad_input("predict --classes 2147483647", "--classes 2147483647 is more than the 1,000,000 classes");
    expect_bad_input("predict --classes nan", "--classes");
    expect_bad_input("predict --dataset-images 0", "--dataset-images must be at least 1");
    expect_bad_input("predict --dataset-images -5", "--dataset-images must be at least 1");
    expect_bad_input("predict --dataset-images 9223372036854775807",
                     "--dataset-images 9223372036854775807 is more than");
}

TEST(PredictCliLimits, AtTheLimitsEveryFigureIsFiniteAndNonNegative) {
    // 100,000 single-V100 nodes at batch 8: 800,000 images per iteration.
    const auto result =
        run_epochcast("predict --instance p3.2xlarge --nodes 100000 --batch-per-gpu 8 --strategy ring --json");
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const auto json = nlohmann::json::parse(result.out);
    EXPECT_EQ(json["gpus"], 100000);
    EXPECT_EQ(json["global_batch"], 800000);
    int numbers = 0;
    std::function<void(const nlohmann::json&, const std::string&)> visit = [&](const nlohmann::json& j,
                                                                               const std::string& where) {
        if (j.is_object()) {
            for (auto it = j.begin(); it != j.end(); ++it) visit(it.value(), where + "." + it.key());
        } else if (j.is_number()) {
            ++numbers;
            EXPECT_TRUE(std::isfinite(j.get<double>()) && j.get<double>() >= 0) << where << " " << j;
        } else {
            EXPECT_FALSE(j.is_null()) << where;
        }
    };
    visit(json, "");
    EXPECT_GT(numbers, 20);
    // The table at 10,000 epochs, the most epochcast models: every count printable, no internal text,
    // the time to train in days as the JSON has it in seconds.
    const auto table = run_epochcast("predict --epochs 10000");
    EXPECT_EQ(table.exit_code, 0) << table.err;
    EXPECT_NE(table.out.find("10000, given"), std::string::npos) << table.out;
    const auto days = nlohmann::json::parse(run_epochcast("predict --epochs 10000 --json").out);
    char time_to_train[32];
    std::snprintf(time_to_train, sizeof time_to_train, "%.2f days", days["time_to_train_s"].get<double>() / 86400);
    EXPECT_NE(table.out.find(time_to_train), std::string::npos) << time_to_train << "\n" << table.out;
    EXPECT_EQ(table.out.find("-$"), std::string::npos) << table.out;
    EXPECT_EQ(table.out.find("nan"), std::string::npos) << table.out;
}

TEST(PredictCliLimits, ACalibrationWhoseCovarianceHolds1e308IsRefusedNotPrintedAsZeroToMinusZero) {
    Calibration calibration = Calibration::built_in();
    for (double& entry : calibration.uncertainty.covariance) entry = 1e308;
    const TempFile file(calibration.to_json());
    expect_bad_input("predict --calibration " + file.path(), "uncertainty.covariance has a variance of 1e+308");
}

TEST(PredictCliLimits, SweepRowsPastTheLimitsAreInfeasibleWithTheReason) {
    // A sweep once wrote rows marked feasible that held inf and -nan.
    const TempFile spec(R"({"instance": "p3.16xlarge", "nodes": [1, 8388608, 2147483647], "batch_per_gpu": 64})");
    const auto result = run_epochcast("sweep " + spec.path());
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out.find("inf"), std::string::npos) << result.out;
    EXPECT_EQ(result.out.find("nan"), std::string::npos) << result.out;
    // The reason names the spec's key (quoted, its quotes doubled in CSV), not the flag.
    EXPECT_NE(result.out.find("\"\"nodes\"\" 8388608 is more than the 100,000 nodes"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("\"\"nodes\"\" 2147483647 is more than the 100,000 nodes"), std::string::npos)
        << result.out;
}

TEST(PredictCliLimits, TheMemoryFigureHoldsTheHeadroomAndSaysWhatFits) {
    // "A batch that leaves 30 MiB of a 16 GiB GPU free 'fits'": the figure holds the CUDA context
    // (781 MiB) and 2% of the tensors for the allocator (docs/model.md, eq. M1), and says so.
    const auto json =
        nlohmann::json::parse(run_in_process({"predict", "--instance", "p3.16xlarge", "--nodes", "1", "--json"}));
    const double tensors_GiB = 14'694'707'680.0 / (1024.0 * 1024 * 1024);
    EXPECT_NEAR(json["memory_headroom_GiB"].get<double>(), 781.0 / 1024 + 0.02 * tensors_GiB, 1e-9);
    EXPECT_NEAR(json["memory_per_gpu_GiB"].get<double>(), 1.02 * tensors_GiB + 781.0 / 1024, 1e-9);
    const std::string table = run_in_process({"predict", "--instance", "p3.16xlarge", "--nodes", "1"});
    // The table says it as the GUI does: what the run needs of the GPU's memory, and the largest batch that fits.
    EXPECT_NE(table.find("14.7 of the GPU's 16 (a batch of up to 279 fits)"), std::string::npos) << table;
    // The largest batch that fits a 16 GiB V100 at amp is 279; the refusal counts the headroom.
    expect_bad_input("predict --instance p3.16xlarge --nodes 1 --batch-per-gpu 280",
                     "with the CUDA context and the allocator's slack, more than the 16 GiB of a V100-SXM2-16GB (the "
                     "largest batch that fits is 279)");
}

TEST(PredictCli, ATargetAccuracyMakesTheEpochsAnOutputWithTheirSource) {
    const auto json = nlohmann::json::parse(
        run_in_process({"predict", "--instance", "p4d.24xlarge", "--nodes", "1", "--batch-per-gpu", "256",
                        "--target-top1", "75.9", "--recipe", "mlperf-lars", "--json"}));
    EXPECT_EQ(json["epochs"], 35);
    EXPECT_EQ(json["epochs_source"], "mlperf-lars (published)");
    EXPECT_EQ(json["epochs_interval"]["low"], 35);
    EXPECT_EQ(json["global_batch_beyond_published"], false);
    EXPECT_EQ(json["scenario"]["recipe"], "mlperf-lars");
    // The recipe's evaluation every 4 epochs is in the time (issue 45): 8 passes in 35 epochs.
    EXPECT_EQ(json["eval_every_epochs"], 4);
    EXPECT_EQ(json["eval_every_source"], "recipe");
    EXPECT_EQ(json["evaluations"], 8);
    const double time = json["time_to_train_s"];
    EXPECT_NEAR(
        time,
        json["startup_s"].get<double>() + 35 * json["epoch_s"].get<double>() + 8 * json["evaluation_s"].get<double>(),
        1e-6 * time);
    const auto given = nlohmann::json::parse(run_in_process({"predict", "--nodes", "2", "--json"}));
    EXPECT_EQ(given["epochs"], 90);
    EXPECT_EQ(given["epochs_source"], "--epochs");
    EXPECT_EQ(given["eval_every_source"], "none");
    // The plan issue 24 found, 196,608 images per iteration, is flagged in the JSON and the table.
    const std::vector<std::string> big = {"predict", "--instance",      "p4d.24xlarge", "--nodes",
                                          "48",      "--batch-per-gpu", "512"};
    std::vector<std::string> as_json = big;
    as_json.push_back("--json");
    EXPECT_EQ(nlohmann::json::parse(run_in_process(as_json))["global_batch_beyond_published"], true);
    const std::string table = run_in_process(big);
    EXPECT_NE(table.find("beyond every published recipe"), std::string::npos) << table;
}

TEST(PredictCliErrors, MalformedFilesAreNamed) {
    const TempFile broken_catalog("{ \"schema\": \"epochcast.catalog/1\", \"gpus\": [ ");
    expect_bad_input("predict --catalog " + broken_catalog.path(), broken_catalog.path());
    const TempFile negative_catalog(R"({ "schema": "epochcast.catalog/1", "gpus": [],
        "instances": [ { "name": "p3.16xlarge", "gpu": "V100-SXM2-16GB", "gpus": -8, "vcpus": 64, "memory_gib": 488,
        "network_gbps": 25, "efa_adapters": 0, "intra_node_GBps": 300, "price_usd_per_hour": 24.48,
        "spot_usd_per_hour": 7.34, "source": "test" } ] })");
    expect_bad_input("predict --catalog " + negative_catalog.path(), "gpus");
    const TempFile broken_calibration("not json at all");
    expect_bad_input("predict --calibration " + broken_calibration.path(), broken_calibration.path());
    const TempFile wrong_schema(R"({ "schema": "epochcast.trace/1" })");
    expect_bad_input("predict --calibration " + wrong_schema.path(), "schema");
}

TEST(PredictCli, UserCatalogAddsAnInstance) {
    const TempFile extra(R"({ "schema": "epochcast.catalog/1", "gpus": [],
        "instances": [ { "name": "my.v100x4", "gpu": "V100-SXM2-16GB", "gpus": 4, "vcpus": 32, "memory_gib": 244,
        "network_gbps": 10, "efa_adapters": 0, "intra_node_GBps": 300, "price_usd_per_hour": 10,
        "spot_usd_per_hour": 3, "source": "test" } ] })");
    const auto json = nlohmann::json::parse(
        run_in_process({"predict", "--instance", "my.v100x4", "--nodes", "2", "--catalog", extra.path(), "--json"}));
    EXPECT_EQ(json["gpus"], 8);
    EXPECT_NEAR(json["cost_usd"].get<double>(), json["time_to_train_s"].get<double>() / 3600 * 20, 1e-6);
}

}  // namespace
}  // namespace epochcast

namespace epochcast {
namespace {

TEST(ImportNcclCli, WritesATraceThatReadsBack) {
    const auto out =
        std::filesystem::temp_directory_path() / ("epochcast-nccl-" + std::to_string(::getpid()) + ".json");
    const auto result =
        testing::run_epochcast("import-nccl " EPOCHCAST_SOURCE_DIR
                               "/tests/traces/data/seed004_all_reduce_perf.log --instance p4d.24xlarge -o " +
                               out.string());
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_NE(result.out.find("p4d.24xlarge"), std::string::npos) << result.out;
    const auto json = nlohmann::json::parse(testing::read_text(out));
    EXPECT_EQ(json["schema"], "epochcast.trace/1");
    EXPECT_EQ(json["networks"][0]["ranks"], 16);
    EXPECT_NEAR(json["networks"][0]["bus_bandwidth_GBps"].get<double>(), 42.03, 0.05 * 42.03);
    EXPECT_FALSE(json["networks"][0].contains("algorithm"));  // NCCL chose
    std::filesystem::remove(out);
}

TEST(ImportNcclCli, RecordsTheForcedAlgorithmAndRefusesAnUnknownOne) {
    const auto out =
        std::filesystem::temp_directory_path() / ("epochcast-nccl-algo-" + std::to_string(::getpid()) + ".json");
    const std::string log = EPOCHCAST_SOURCE_DIR "/tests/traces/data/seed004_all_reduce_perf.log";
    auto result =
        testing::run_epochcast("import-nccl " + log + " --instance p4d.24xlarge --nccl-algo ring -o " + out.string());
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_NE(result.out.find("efa x 4"), std::string::npos) << result.out;  // the fabric it measured
    EXPECT_EQ(nlohmann::json::parse(testing::read_text(out))["networks"][0]["algorithm"], "ring");
    std::filesystem::remove(out);
    result = testing::run_epochcast("import-nccl " + log + " --instance p4d.24xlarge --nccl-algo hierarchical -o " +
                                    out.string());
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_NE(result.err.find("--nccl-algo"), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(ImportNcclCli, UnknownInstanceOrMissingLogIsExitCode2AndWritesNothing) {
    const auto out =
        std::filesystem::temp_directory_path() / ("epochcast-nccl-bad-" + std::to_string(::getpid()) + ".json");
    auto result = testing::run_epochcast("import-nccl " EPOCHCAST_SOURCE_DIR
                                         "/tests/traces/data/seed004_all_reduce_perf.log --instance p9.large -o " +
                                         out.string());
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_NE(result.err.find("p9.large"), std::string::npos);
    result = testing::run_epochcast("import-nccl /nonexistent.log --instance p4d.24xlarge -o " + out.string());
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_NE(result.err.find("/nonexistent.log"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(out));
}

// issue 45: predict --pricing spot says the interruptions, the lost work, the expected time and cost
// with their range, and the chance to finish by --deadline; bad spot flags are one-line errors.
TEST(PredictCli, SpotShowsInterruptionsAndTheChanceToFinishByTheDeadline) {
    const std::string run =
        "predict --instance p3.16xlarge --nodes 16 --pricing spot --spot-interruptions-per-node-hour 0.2";
    const testing::ProcessResult text = run_epochcast(run + " --deadline 40min");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    for (const char* words : {"interruptions an hour over the cluster", "of work lost", "recommended: every",
                              "expected time", "probability to finish by the deadline of 40.0 min",
                              "elastic (go on without a lost node until its replacement joins, seed 003): "}) {
        EXPECT_NE(text.out.find(words), std::string::npos) << words << "\n" << text.out;
    }
    const testing::ProcessResult json = run_epochcast(run + " --deadline 40min --json");
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const nlohmann::json j = nlohmann::json::parse(json.out);
    const nlohmann::json& spot = j["spot"];
    EXPECT_DOUBLE_EQ(spot["cluster_interruptions_per_hour"].get<double>(), 3.2);
    const double rate_per_s = 3.2 / 3600;
    const double expected_s = j["time_to_train_s"].get<double>() - j["startup_s"].get<double>();
    EXPECT_NEAR(spot["expected_interruptions"].get<double>(), rate_per_s * expected_s, 1e-9);
    // Young's interval recommended; a checkpoint each epoch (no evaluation here) where that is shorter.
    const double young_s = std::sqrt(2 * spot["checkpoint_write_s"].get<double>() / rate_per_s);
    EXPECT_NEAR(spot["recommended_checkpoint_interval_s"].get<double>(), young_s, 1e-6);
    EXPECT_NEAR(spot["checkpoint_interval_s"].get<double>(),
                std::min(young_s, j["epoch_s"].get<double>() - j["checkpoint_s"].get<double>()), 1e-6);
    EXPECT_GT(j["time_to_train_s"].get<double>(), spot["uninterrupted_time_s"].get<double>());
    EXPECT_NEAR(j["cost_usd"].get<double>(),
                j["time_to_train_s"].get<double>() / 3600 * j["cluster_usd_per_hour"].get<double>(), 1e-6);
    // The same run elastic (eq. X7): faster and cheaper than waiting for each replacement here.
    const nlohmann::json& elastic = spot["elastic"];
    ASSERT_TRUE(elastic.is_object()) << spot.dump();
    EXPECT_LT(elastic["time_to_train_s"].get<double>(), j["time_to_train_s"].get<double>());
    EXPECT_LT(elastic["cost_usd"].get<double>(), j["cost_usd"].get<double>());
    EXPECT_NEAR(elastic["expected_interruptions"].get<double>(),
                rate_per_s * (elastic["time_to_train_s"].get<double>() - j["startup_s"].get<double>()), 1e-9);
    const double p = j["deadline"]["finish_probability"].get<double>();
    EXPECT_GT(p, 0);
    EXPECT_LE(p, 1);
    // --elastic-spot prices that elastic run, with the run that waits beside it.
    const testing::ProcessResult priced = run_epochcast(run + " --elastic-spot --deadline 40min --json");
    ASSERT_EQ(priced.exit_code, 0) << priced.err;
    const nlohmann::json e = nlohmann::json::parse(priced.out);
    EXPECT_TRUE(e["spot"]["elastic_priced"].get<bool>());
    EXPECT_DOUBLE_EQ(e["time_to_train_s"].get<double>(), elastic["time_to_train_s"].get<double>());
    EXPECT_DOUBLE_EQ(e["spot"]["waiting_time_to_train_s"].get<double>(), j["time_to_train_s"].get<double>());
    EXPECT_GT(e["deadline"]["finish_probability"].get<double>(), p);  // each interruption costs less
    const testing::ProcessResult priced_text = run_epochcast(run + " --elastic-spot");
    ASSERT_EQ(priced_text.exit_code, 0) << priced_text.err;
    EXPECT_NE(priced_text.out.find("spot, elastic: "), std::string::npos) << priced_text.out;
    EXPECT_NE(priced_text.out.find("waiting for each replacement instead: "), std::string::npos) << priced_text.out;

    for (const char* bad : {" --spot-interruptions-per-node-hour -1", " --spot-interruptions-per-node-hour 1e9",
                            " --checkpoint-every soon", " --deadline 0h", " --spot-replacement-wait 5parsecs",
                            " --elastic-spot", " --nodes 2 --elastic-spot --pricing on-demand"}) {
        const testing::ProcessResult r =
            run_epochcast("predict --instance p3.16xlarge --pricing spot" + std::string(bad));
        EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
    const testing::ProcessResult never =
        run_epochcast("predict --instance p3.16xlarge --nodes 64 --pricing spot --spot-interruptions-per-node-hour 2");
    EXPECT_EQ(never.exit_code, 2);
    EXPECT_NE(never.err.find("never finishes"), std::string::npos) << never.err;
}

// Issue 58, item 2: predict's table shows what a Capacity Block bills beside the run's share, and
// says nothing of a bill where the run is billed by the second.
TEST(PredictCli, ACapacityBlockPrintsItsBillBesideTheRunsShare) {
    const testing::ProcessResult block = run_epochcast("predict --instance p5.48xlarge --pricing capacity-block");
    ASSERT_EQ(block.exit_code, 0) << block.err;
    EXPECT_NE(block.out.find("(the run's share)"), std::string::npos) << block.out;
    EXPECT_NE(block.out.find("bill, as sold"), std::string::npos) << block.out;
    EXPECT_NE(block.out.find("$996.67, a 1-day Capacity Block"), std::string::npos) << block.out;  // 24 x $41.528
    const testing::ProcessResult on_demand = run_epochcast("predict --instance p5.48xlarge");
    ASSERT_EQ(on_demand.exit_code, 0) << on_demand.err;
    EXPECT_EQ(on_demand.out.find("bill"), std::string::npos) << on_demand.out;
}

// Issue 58, item 5: a spot answer names what it rests on. p6-b200's spot price is a January quote
// at 18% of on-demand and its interruption band an assumption; the text says so, and that
// capacity is not modelled.
TEST(PredictCli, ASpotAnswerNamesTheKindAgeAndShareOfItsInputs) {
    const testing::ProcessResult r = run_epochcast("predict --instance p6-b200.48xlarge --pricing spot");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* words :
         {"spot inputs: $21.01/h a quote read 2026-01-21 (",
          " days ago: stale, past 90 days), 18% of on-demand "
          "(implausibly low",
          "interruptions: band >20% assumed 2026-11-26", "spot capacity: whether that many spot instances"}) {
        EXPECT_NE(r.out.find(words), std::string::npos) << words << "\n" << r.out;
    }
    const testing::ProcessResult given =
        run_epochcast("predict --instance p4d.24xlarge --pricing spot --spot-interruptions-per-node-hour 0.01");
    ASSERT_EQ(given.exit_code, 0) << given.err;
    EXPECT_NE(given.out.find("of on-demand; interruptions: given, 0.01 per node-hour"), std::string::npos) << given.out;
    EXPECT_EQ(given.out.find("implausibly low"), std::string::npos) << given.out;  // 37% of on-demand
    const testing::ProcessResult on_demand = run_epochcast("predict --instance p4d.24xlarge");
    EXPECT_EQ(on_demand.out.find("spot"), std::string::npos) << on_demand.out;
}

// --compile (eq. C9): one GPU at batch 32, synthetic data, is faster compiled than eager, with a
// wider band, the scenario echoed with "compiled", and a note saying what it rests on; another
// framework is refused with one line and exit code 2.
TEST(PredictCli, CompileCarriesTheEagerCurveAndSaysWhatItRestsOn) {
    const std::string flags = "predict --instance p5.48xlarge --gpus-per-node 1 --batch-per-gpu 32 --loader synthetic";
    const auto eager = nlohmann::json::parse(run_epochcast(flags + " --json").out);
    const testing::ProcessResult compiled = run_epochcast(flags + " --compile --json");
    ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
    const auto c = nlohmann::json::parse(compiled.out);
    EXPECT_EQ(c["scenario"]["compiled"], true);
    EXPECT_FALSE(eager["scenario"].contains("compiled"));
    const double gain = c["throughput_images_per_s"].get<double>() / eager["throughput_images_per_s"].get<double>();
    EXPECT_GT(gain, 1.2);
    EXPECT_LT(gain, 2.0);
    const auto width = [](const nlohmann::json& p) {
        return p["interval"]["high"].get<double>() / p["interval"]["low"].get<double>();
    };
    EXPECT_GT(width(c), 1.2 * width(eager));
    const testing::ProcessResult text = run_epochcast(flags + " --compile");
    EXPECT_NE(text.out.find("note: torch.compile is carried from the eager curve by one measured pair"),
              std::string::npos)
        << text.out;

    const testing::ProcessResult mxnet = run_epochcast("predict --compile --framework mxnet");
    EXPECT_EQ(mxnet.exit_code, 2);
    EXPECT_NE(mxnet.err.find("--compile is PyTorch's torch.compile: it needs --framework pytorch (framework is mxnet)"),
              std::string::npos)
        << mxnet.err;
    EXPECT_EQ(std::count(mxnet.err.begin(), mxnet.err.end(), '\n'), 1) << mxnet.err;
    EXPECT_TRUE(mxnet.out.empty()) << mxnet.out;
}

}  // namespace
}  // namespace epochcast
