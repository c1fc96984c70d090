// `epochcast sweep` as a user runs it: one row per combination with every Prediction field, the
// reasons of infeasible rows, the store and spot columns (issue 45), errors that name the key and
// value and leave no file, Ctrl-C leaving a valid file with the rows so far, and the same rows from
// two MPI ranks.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "cli/plot.hpp"
#include "cli/table.hpp"
#include "model/catalog.hpp"
#include "model/storage.hpp"
#include "tests/cli/cli_process.hpp"
#include "tests/support/temp_file.hpp"
#include "tests/support/temp_folder.hpp"

namespace epochcast::testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::stringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

/// Fields of a CSV line (quoted fields with doubled quotes, as the sweep writes them).
std::vector<std::string> fields_of(const std::string& line) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
                fields.back() += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                fields.back() += c;
            }
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            fields.emplace_back();
        } else {
            fields.back() += c;
        }
    }
    return fields;
}

using Folder = TempFolder;

const char* kSpec = R"({"instance": ["p3.16xlarge", "p3.2xlarge"], "nodes": [1, 2, 4],
                        "batch_per_gpu": [128, 512], "strategy": ["ring", "ps"],
                        "ps_instance": "m4.16xlarge", "ps_ratio": 1})";

TEST(SweepCli, CsvHasARowForEveryCombinationWithEveryPredictionField) {
    TempFile spec(kSpec);
    const ProcessResult r = run_epochcast("sweep " + spec.path() + " --columns all");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> lines = lines_of(r.out);
    ASSERT_EQ(lines.size(), 1u + 2 * 3 * 2 * 2);
    const std::vector<std::string> header = fields_of(lines[0]);
    for (const char* key : {"throughput_images_per_s",
                            "iteration_s",
                            "compute_s",
                            "data_s",
                            "communication_s",
                            "exposed_communication_s",
                            "epoch_s",
                            "time_to_train_s",
                            "cost_usd",
                            "cost_per_epoch_usd",
                            "scaling_efficiency",
                            "gpus",
                            "interval_low",
                            "interval_high",
                            "feasible",
                            "reason",
                            "instance",
                            "nodes",
                            "batch_per_gpu",
                            "strategy",
                            "ps_nodes"}) {
        EXPECT_NE(std::find(header.begin(), header.end(), key), header.end()) << key;
    }
    auto column = [&](const std::string& name) {
        return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    };
    int feasible = 0;
    int infeasible = 0;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const std::vector<std::string> f = fields_of(lines[i]);
        ASSERT_EQ(f.size(), header.size()) << lines[i];
        if (f[column("feasible")] == "true") {
            ++feasible;
            EXPECT_GT(std::stod(f[column("throughput_images_per_s")]), 0);
            EXPECT_GT(std::stod(f[column("cost_usd")]), 0);
        } else {
            ++infeasible;
            EXPECT_EQ(f[column("batch_per_gpu")], "512");  // V100 16 GB cannot hold 512 images of ResNet-50
            EXPECT_NE(f[column("reason")].find("GiB"), std::string::npos) << f[column("reason")];
            EXPECT_TRUE(f[column("throughput_images_per_s")].empty());
        }
    }
    EXPECT_EQ(feasible, 12);
    EXPECT_EQ(infeasible, 12);
}

// --columns (issue 60): the chosen columns, in the full set's order whatever the list's, each cell
// as the full set writes it; groups and names mix; an unknown name, or a JSON output, is refused
// with nothing written.
TEST(SweepCli, ColumnsWritesTheChosenColumnsAsTheFullSetWritesThem) {
    TempFile spec(kSpec);
    Folder folder;
    const ProcessResult full = run_epochcast("sweep " + spec.path() + " --columns all -o " + (folder / "full.csv"));
    ASSERT_EQ(full.exit_code, 0) << full.err;
    const ProcessResult part =
        run_epochcast("sweep " + spec.path() + " --columns reason,results,instance -o " + (folder / "part.csv"));
    ASSERT_EQ(part.exit_code, 0) << part.err;
    const std::vector<std::string> full_lines = lines_of(read_text(folder / "full.csv"));
    const std::vector<std::string> part_lines = lines_of(read_text(folder / "part.csv"));
    ASSERT_EQ(part_lines.size(), full_lines.size());
    const std::vector<std::string> full_header = fields_of(full_lines[0]);
    const std::vector<std::string> header = fields_of(part_lines[0]);
    ASSERT_EQ(header.size(), 18u);  // the 16 results, instance and reason
    EXPECT_EQ(header[0], "instance");
    EXPECT_EQ(header[1], "reason");
    EXPECT_EQ(header[2], "gpus");
    std::vector<std::size_t> places;
    for (const std::string& name : header) {
        const auto at = std::find(full_header.begin(), full_header.end(), name);
        ASSERT_NE(at, full_header.end()) << name;
        places.push_back(static_cast<std::size_t>(at - full_header.begin()));
    }
    EXPECT_TRUE(std::is_sorted(places.begin(), places.end()));
    for (std::size_t i = 1; i < part_lines.size(); ++i) {
        const std::vector<std::string> full_row = fields_of(full_lines[i]);
        const std::vector<std::string> row = fields_of(part_lines[i]);
        ASSERT_EQ(row.size(), header.size()) << part_lines[i];
        for (std::size_t k = 0; k < header.size(); ++k) EXPECT_EQ(row[k], full_row[places[k]]) << header[k];
    }
    // With no --columns, the default group: the scenario's columns and the results, in the full
    // set's order (38 of its 89 columns), as `--columns default` and `scenario,results` write them.
    const ProcessResult plain = run_epochcast("sweep " + spec.path());
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(plain.out, run_epochcast("sweep " + spec.path() + " --columns default").out);
    EXPECT_EQ(plain.out, run_epochcast("sweep " + spec.path() + " --columns results,scenario").out);
    const std::vector<std::string> plain_header = fields_of(lines_of(plain.out)[0]);
    ASSERT_EQ(plain_header.size(), 38u);
    EXPECT_EQ(plain_header.front(), full_header.front());  // model
    EXPECT_EQ(plain_header[21], "reason");
    EXPECT_EQ(plain_header[22], "gpus");
    EXPECT_EQ(plain_header.back(), "bill_high_usd");
    for (const char* left_out : {"compute_s", "communication_s", "memory_per_gpu_GiB", "compiled"}) {
        EXPECT_EQ(std::find(plain_header.begin(), plain_header.end(), left_out), plain_header.end()) << left_out;
    }
    // A JSON output holds every figure, with or without the default named.
    for (const char* columns : {"", " --columns default", " --columns all"}) {
        const ProcessResult json = run_epochcast("sweep " + spec.path() + columns + " -o " + (folder / "rows.json"));
        ASSERT_EQ(json.exit_code, 0) << columns << json.err;
        EXPECT_NE(read_text(folder / "rows.json").find("\"compute_s\""), std::string::npos) << columns;
    }
    fs::remove(folder / "rows.json");

    for (const std::string& bad : {std::string("--columns results,bogus -o ") + (folder / "bad.csv"),
                                   std::string("--columns '' -o ") + (folder / "bad.csv"),
                                   std::string("--columns results -o ") + (folder / "bad.json")}) {
        const ProcessResult r = run_epochcast("sweep " + spec.path() + " " + bad);
        EXPECT_EQ(r.exit_code, 2) << bad;
        EXPECT_NE(r.err.find("--columns"), std::string::npos) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
    EXPECT_NE(run_epochcast("sweep " + spec.path() + " --columns bogus").err.find("'bogus'"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(folder / "bad.csv"));
    EXPECT_FALSE(std::filesystem::exists(folder / "bad.json"));
}

TEST(SweepCli, JsonRowsAreThePredictContract) {
    TempFile spec(R"({"instance": "p3.16xlarge", "nodes": [2, 8], "strategy": "ring", "framework": "tensorflow"})");
    Folder folder;
    const ProcessResult r = run_epochcast("sweep " + spec.path() + " -o " + (folder / "out.json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("wrote 2 rows (2 feasible, 0 not)"), std::string::npos) << r.out;
    const nlohmann::json j = nlohmann::json::parse(read_text(folder / "out.json"));
    EXPECT_EQ(j["schema"], "epochcast.sweep/1");
    EXPECT_EQ(j["complete"], true);
    EXPECT_EQ(j["interrupted"], false);
    ASSERT_EQ(j["rows"].size(), 2u);
    const ProcessResult predict =
        run_epochcast("predict --instance p3.16xlarge --nodes 8 --strategy ring --framework tensorflow --json");
    ASSERT_EQ(predict.exit_code, 0) << predict.err;
    const nlohmann::json p = nlohmann::json::parse(predict.out);
    const nlohmann::json& row = j["rows"][1];
    EXPECT_EQ(row["feasible"], true);
    for (const char* key :
         {"throughput_images_per_s", "iteration_s", "epoch_s", "time_to_train_s", "cost_usd", "gpus"}) {
        EXPECT_DOUBLE_EQ(row[key].get<double>(), p[key].get<double>()) << key;
    }
    EXPECT_EQ(std::distance(fs::directory_iterator(folder.path), fs::directory_iterator()), 1)
        << "a temporary file is left";
}

TEST(SweepCli, AGlobalBatchRowHoldsTheGlobalBatchOverItsGpusAndSaysWhatRan) {
    TempFile spec(R"({"instance": "dgx-h100", "nodes": [4, 8, 12], "global_batch": 4096, "framework": "pytorch"})");
    Folder folder;
    const ProcessResult r = run_epochcast("sweep " + spec.path() + " -o " + (folder / "out.json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(read_text(folder / "out.json"));
    ASSERT_EQ(j["rows"].size(), 3u);
    EXPECT_EQ(j["rows"][0]["scenario"]["batch_per_gpu"], 128);
    EXPECT_EQ(j["rows"][1]["scenario"]["batch_per_gpu"], 64);
    EXPECT_EQ(j["rows"][1]["global_batch"], 4096);
    EXPECT_EQ(j["rows"][1]["interconnect"], "infiniband");
    EXPECT_NE(j["rows"][1]["algorithm"], "none");
    EXPECT_EQ(j["rows"][2]["feasible"], false);  // 96 GPUs do not divide 4,096
    EXPECT_NE(j["rows"][2]["reason"].get<std::string>().find("96 GPUs"), std::string::npos);
    TempFile both(R"({"global_batch": 4096, "batch_per_gpu": 64})");
    const ProcessResult refused = run_epochcast("sweep " + both.path() + " -o " + (folder / "both.csv"));
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_NE(refused.err.find("global_batch"), std::string::npos) << refused.err;
}

TEST(SweepCli, ATargetAccuracyGivesEachRowTheEpochsItsGlobalBatchNeeds) {
    TempFile spec(R"({"instance": "p4d.24xlarge", "nodes": [1, 16, 40, 100], "batch_per_gpu": 256})");
    Folder folder;
    const ProcessResult r =
        run_epochcast("sweep " + spec.path() + " --target-top1 75.9 --recipe mlperf-lars -o " + (folder / "out.json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(read_text(folder / "out.json"));
    ASSERT_EQ(j["rows"].size(), 4u);
    EXPECT_EQ(j["rows"][0]["epochs"], 35);  // global 2,048
    EXPECT_EQ(j["rows"][0]["epochs_source"], "mlperf-lars (published)");
    EXPECT_GT(j["rows"][1]["epochs"].get<double>(), 50);                     // global 32,768
    EXPECT_EQ(j["rows"][2]["epochs_source"], "mlperf-lars (extrapolated)");  // 81,920
    EXPECT_EQ(j["rows"][2]["global_batch_beyond_published"], true);
    EXPECT_EQ(j["rows"][3]["feasible"], false);  // 204,800: past twice the largest published batch
    EXPECT_NE(j["rows"][3]["reason"].get<std::string>().find("published up to a global batch of 67,456"),
              std::string::npos);
    TempFile with_epochs(R"({"epochs": [30]})");
    const ProcessResult refused = run_epochcast("sweep " + with_epochs.path() + " --target-top1 75.9");
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_NE(refused.err.find("exclude each other"), std::string::npos) << refused.err;
}

TEST(SweepCli, SpecErrorsNameTheKeyAndValueAndLeaveNoFile) {
    Folder folder;
    const std::string out = folder / "out.csv";
    struct Case {
        const char* spec;
        const char* expected;
    };
    for (const Case& c :
         {Case{R"({"nodes": [4, 0]})", "\"nodes\" value 0"},
          Case{R"({"instance": "p9.mega"})", "\"instance\" value \"p9.mega\""},
          Case{R"({"precision": ["amp", "fp7"]})", "\"precision\" value \"fp7\""},
          Case{R"({"nodes": [1, 2)", "malformed JSON"}, Case{R"({"gpus": 8})", "unknown key \"gpus\""}}) {
        TempFile spec(c.spec);
        const ProcessResult r = run_epochcast("sweep " + spec.path() + " -o " + out);
        EXPECT_EQ(r.exit_code, 2) << c.spec;
        EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
        EXPECT_TRUE(fs::is_empty(folder.path)) << "a file was left behind for " << c.spec;
    }
    const ProcessResult missing = run_epochcast("sweep " + (folder / "nope.json"));
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find("nope.json"), std::string::npos);
    TempFile spec(R"({"nodes": 2})");
    const ProcessResult bad_output = run_epochcast("sweep " + spec.path() + " -o " + (folder / "out.xlsx"));
    EXPECT_EQ(bad_output.exit_code, 2);
    EXPECT_NE(bad_output.err.find(".csv or .json"), std::string::npos);
    const ProcessResult no_folder = run_epochcast("sweep " + spec.path() + " -o " + (folder / "none/out.csv"));
    EXPECT_EQ(no_folder.exit_code, 2);
    EXPECT_NE(no_folder.err.find("does not exist"), std::string::npos) << no_folder.err;
    EXPECT_TRUE(fs::is_empty(folder.path));
}

/// A CSV sweep's rows, each a map from the header's names to its fields.
std::vector<std::map<std::string, std::string>> csv_rows(const std::string& text) {
    const std::vector<std::string> lines = lines_of(text);
    std::vector<std::map<std::string, std::string>> rows;
    if (lines.empty()) return rows;
    const std::vector<std::string> header = fields_of(lines[0]);
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const std::vector<std::string> f = fields_of(lines[i]);
        EXPECT_EQ(f.size(), header.size()) << lines[i];
        std::map<std::string, std::string> row;
        for (std::size_t k = 0; k < header.size() && k < f.size(); ++k) row[header[k]] = f[k];
        rows.push_back(row);
    }
    return rows;
}

/// What the built-in fsx-lustre file system of `tib` at `tier` MB/s per TiB delivers to `nodes`
/// workers of `instance`, bytes/s (docs/model.md, eq. F2: the tier's disk throughput under its
/// network throughput, per TiB, and one client at its instance's line rate).
double fsx_deliverable_Bps(const std::string& instance, int nodes, double tib, double tier) {
    const StorageCatalog& data = StorageCatalog::built_in();
    const StorageTier& t = data.tier(data.store(Store::fsx_lustre), tier);
    const double client_Bps = Catalog::built_in().instance(instance).network_gbps * 1e9 / 8;
    return store_deliverable_Bps(tib * std::min(t.disk_read_MBps_per_TiB, t.network_MBps_per_TiB) * 1e6, client_Bps,
                                 nodes);
}

/// A CSV number within the 7 significant digits the sweep writes.
void expect_cell(const std::string& cell, double expected, const std::string& what) {
    ASSERT_FALSE(cell.empty()) << what;
    EXPECT_NEAR(std::stod(cell), expected, 1e-6 * std::abs(expected)) << what;
}

/// The CSV rows of a sweep of `nodes` x `instance` over a local NVMe copy and a 1.2 TiB FSx for
/// Lustre file system, in that order.
std::vector<std::map<std::string, std::string>> local_and_fsx_rows(const std::string& instance, int nodes) {
    TempFile spec(R"({"instance": ")" + instance + R"(", "nodes": )" + std::to_string(nodes) +
                  R"(, "storage": ["local-nvme", "fsx-lustre"], "storage_tib": 1.2})");
    const ProcessResult r = run_epochcast("sweep " + spec.path() + " --columns all");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return csv_rows(r.out);
}

// Issue 45, point 5: a sweep over two stores. 8 x p3.2xlarge (one V100 and 61 GiB each) from a
// 1.2 TiB FSx for Lustre file system stay bound by it: 150 MB/s for the cluster, each node's page
// cache (half its RAM, eq. F7) holding a fifth of the images, so the row's throughput is the store's
// warm rate (eqs. F2, F3, F7) and its first epoch the store's cold one; the same cluster reading its
// own NVMe copy is bound by its all-reduce over the 2.5 Gb/s each node sustains (the "up to 10 Gb/s"
// is a burst: issue 58, item 3). The store's bill (eq. F5) is in the fsx row only, and the
// last columns say which store each row priced.
TEST(SweepCli, ASweepOverTwoStoresNamesTheOneThatBoundsAndPricesIt) {
    const auto rows = local_and_fsx_rows("p3.2xlarge", 8);
    ASSERT_EQ(rows.size(), 2u);
    const auto& local = rows[0];
    const auto& fsx = rows[1];

    const StorageCatalog& data = StorageCatalog::built_in();
    const StoreSpec& lustre = data.store(Store::fsx_lustre);
    const double image_bytes = data.train_image_bytes();
    const double deliverable_Bps = fsx_deliverable_Bps("p3.2xlarge", 8, 1.2, 125);
    EXPECT_DOUBLE_EQ(deliverable_Bps, 150e6);  // the aggregate: 8 clients at 10 Gb/s are more
    const double cold = store_images_per_s_per_gpu(deliverable_Bps, image_bytes, 8);
    const double cached = page_cache_hit_fraction(
        lustre.page_cache_fraction_of_ram * Catalog::built_in().instance("p3.2xlarge").memory_gib * 1024 * 1024 * 1024,
        data.train_bytes);
    EXPECT_NEAR(cached, 0.22, 0.01);
    const double warm = warm_store_images_per_s_per_gpu(cold, cached);

    EXPECT_EQ(fsx.at("storage"), "fsx-lustre");
    EXPECT_EQ(fsx.at("storage_tib"), "1.2");
    EXPECT_EQ(fsx.at("storage_tier"), "125");  // the store's default tier
    EXPECT_EQ(fsx.at("feasible"), "true");
    EXPECT_EQ(fsx.at("bottleneck"), "storage");
    EXPECT_EQ(fsx.at("first_epoch_bottleneck"), "storage");
    EXPECT_EQ(fsx.at("store_bound_epochs"), "90");
    expect_cell(fsx.at("throughput_images_per_s"), 8 * warm, "throughput: the store's warm rate");
    expect_cell(fsx.at("first_epoch_images_per_s"), 8 * cold, "first epoch: the store's cold rate");
    expect_cell(fsx.at("storage_read_GBps"), deliverable_Bps / 1e9, "storage_read_GBps");
    const double hours = std::stod(fsx.at("time_to_train_s")) / 3600;
    const double bill = storage_usd(1.2 * 1024, data.tier(lustre, 125).usd_per_GB_month, hours);
    EXPECT_GT(bill, 0);
    expect_cell(fsx.at("storage_usd"), bill, "storage_usd: 1.2 TiB for the run's hours (eq. F5)");

    EXPECT_EQ(local.at("storage"), "local-nvme");
    EXPECT_EQ(local.at("storage_tib"), "");
    EXPECT_EQ(local.at("storage_tier"), "");
    EXPECT_EQ(local.at("bottleneck"), "communication");
    EXPECT_EQ(local.at("first_epoch_bottleneck"), "communication");
    EXPECT_EQ(local.at("store_bound_epochs"), "0");
    EXPECT_EQ(local.at("storage_usd"), "0");
    EXPECT_EQ(local.at("storage_read_GBps"), "0");  // no read bound
    EXPECT_EQ(local.at("first_epoch_images_per_s"), local.at("throughput_images_per_s"));
    EXPECT_GT(std::stod(local.at("throughput_images_per_s")), 2.5 * std::stod(fsx.at("throughput_images_per_s")));
    EXPECT_LT(std::stod(local.at("time_to_train_s")), std::stod(fsx.at("time_to_train_s")));
    for (const auto& row : rows) EXPECT_EQ(row.at("spot_interruptions_per_node_hour"), "") << "on-demand rows";
}

// The larger cluster of the issue: 32 x p5.48xlarge, whose nodes' page caches (1 TiB each) hold the
// images, so the store bounds the epochs while the caches fill (all 90 on 32 nodes, eq. F8): the
// steady throughput is the loader's in both rows, and the columns that say so are the first
// epoch's, its bottleneck and the epochs the store bounded.
TEST(SweepCli, AStoreThatBoundsOnlyTheColdEpochsSaysSoInItsColumns) {
    const auto rows = local_and_fsx_rows("p5.48xlarge", 32);
    ASSERT_EQ(rows.size(), 2u);
    const auto& local = rows[0];
    const auto& fsx = rows[1];
    const double deliverable_Bps = fsx_deliverable_Bps("p5.48xlarge", 32, 1.2, 125);
    const double cold =
        store_images_per_s_per_gpu(deliverable_Bps, StorageCatalog::built_in().train_image_bytes(), 256);
    EXPECT_EQ(fsx.at("bottleneck"), "data");
    EXPECT_EQ(fsx.at("first_epoch_bottleneck"), "storage");
    EXPECT_EQ(fsx.at("store_bound_epochs"), "90");
    expect_cell(fsx.at("first_epoch_images_per_s"), 256 * cold, "first epoch: the store's rate");
    EXPECT_EQ(fsx.at("throughput_images_per_s"), local.at("throughput_images_per_s"));
    EXPECT_GT(std::stod(fsx.at("storage_usd")), 0);
    EXPECT_GT(std::stod(fsx.at("time_to_train_s")), 4 * std::stod(local.at("time_to_train_s")));
    EXPECT_EQ(local.at("first_epoch_bottleneck"), "data");
    EXPECT_EQ(local.at("storage_usd"), "0");
}

// The store and spot columns come after every earlier column (which keep their places), and a
// spot row says the rate, the checkpoint interval and the wait it priced; one that never finishes
// is infeasible with predict's reason, its columns as the spec gave them.
TEST(SweepCli, SpotKeysAreCrossedAndTheirColumnsComeLast) {
    TempFile spec(R"({"instance": "p3.16xlarge", "nodes": 4, "pricing": "spot",
                      "spot_interruptions_per_node_hour": [0.5, 60], "checkpoint_every": ["10min", "30min"]})");
    const ProcessResult r = run_epochcast("sweep " + spec.path() + " --columns all");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> header = fields_of(lines_of(r.out)[0]);
    const std::vector<std::string> last(header.end() - 15, header.end());
    EXPECT_EQ(last, (std::vector<std::string>{
                        "bill_high_usd", "storage", "storage_tib", "storage_tier", "first_epoch_bottleneck",
                        "store_bound_epochs", "spot_interruptions_per_node_hour", "checkpoint_interval_s",
                        "spot_replacement_wait_s", "eval_every_epochs", "eval_images", "elastic_time_to_train_s",
                        "elastic_cost_usd", "elastic_spot", "compiled"}));
    const auto rows = csv_rows(r.out);
    ASSERT_EQ(rows.size(), 4u);
    for (std::size_t i : {0u, 1u}) {
        EXPECT_EQ(rows[i].at("feasible"), "true");
        EXPECT_EQ(rows[i].at("spot_interruptions_per_node_hour"), "0.5");
        EXPECT_EQ(rows[i].at("spot_replacement_wait_s"), "300");
        EXPECT_EQ(rows[i].at("storage"), "none");
    }
    EXPECT_EQ(rows[0].at("checkpoint_interval_s"), "600");
    EXPECT_EQ(rows[1].at("checkpoint_interval_s"), "1800");
    EXPECT_NE(rows[0].at("time_to_train_s"), rows[1].at("time_to_train_s"));
    // Each feasible row's elastic alternative, as predict gives it for the same run.
    const ProcessResult predicted = run_epochcast(
        "predict --instance p3.16xlarge --nodes 4 --pricing spot --spot-interruptions-per-node-hour 0.5 "
        "--checkpoint-every 10min --json");
    ASSERT_EQ(predicted.exit_code, 0) << predicted.err;
    const nlohmann::json elastic = nlohmann::json::parse(predicted.out)["spot"]["elastic"];
    ASSERT_TRUE(elastic.is_object()) << predicted.out;
    expect_cell(rows[0].at("elastic_time_to_train_s"), elastic["time_to_train_s"].get<double>(), "elastic time");
    expect_cell(rows[0].at("elastic_cost_usd"), elastic["cost_usd"].get<double>(), "elastic cost");
    EXPECT_LT(std::stod(rows[1].at("elastic_time_to_train_s")), std::stod(rows[1].at("time_to_train_s")));
    for (std::size_t i : {2u, 3u}) {
        EXPECT_EQ(rows[i].at("feasible"), "false");
        EXPECT_NE(rows[i].at("reason").find("never finishes"), std::string::npos) << rows[i].at("reason");
        EXPECT_EQ(rows[i].at("spot_interruptions_per_node_hour"), "60");
        EXPECT_EQ(rows[i].at("elastic_time_to_train_s"), "");
        EXPECT_EQ(rows[i].at("elastic_cost_usd"), "");
    }
    EXPECT_EQ(rows[3].at("checkpoint_interval_s"), "1800");
    for (const auto& row : rows) EXPECT_EQ(row.at("elastic_spot"), "false");
}

// Issue 45: `elastic_spot` prices spot rows elastic, as predict's --elastic-spot: the row's time and
// cost are then the elastic run's (the waiting row's elastic columns), and a row that cannot shrink
// (one node) is infeasible with predict's reason. On-demand rows leave the column empty.
TEST(SweepCli, ElasticSpotKeyPricesSpotRowsElastic) {
    TempFile spec(R"({"instance": "p3.16xlarge", "nodes": [1, 8], "pricing": ["on-demand", "spot"],
                      "spot_interruptions_per_node_hour": 0.13, "elastic_spot": [false, true]})");
    const ProcessResult r = run_epochcast("sweep " + spec.path() + " --columns all");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rows = csv_rows(r.out);
    // The cross product: pricing varies slowest of the three, then elastic_spot, then nodes. The
    // on-demand rows (twice each, as with every spot key) leave the column empty.
    ASSERT_EQ(rows.size(), 8u);
    for (std::size_t i : {0u, 1u, 2u, 3u}) {
        EXPECT_EQ(rows[i].at("pricing"), "on-demand");
        EXPECT_EQ(rows[i].at("elastic_spot"), "");
        EXPECT_EQ(rows[i].at("time_to_train_s"), rows[i % 2].at("time_to_train_s"));
    }
    const auto& waiting_one = rows[4];
    const auto& waiting = rows[5];
    const auto& elastic_one = rows[6];
    const auto& elastic = rows[7];
    EXPECT_EQ(waiting.at("elastic_spot"), "false");
    EXPECT_EQ(elastic.at("elastic_spot"), "true");
    EXPECT_EQ(waiting.at("nodes"), "8");
    EXPECT_EQ(elastic.at("nodes"), "8");
    EXPECT_EQ(waiting_one.at("feasible"), "true");
    EXPECT_EQ(elastic_one.at("feasible"), "false");
    EXPECT_NE(elastic_one.at("reason").find("\"elastic_spot\" needs 2 nodes or more"), std::string::npos)
        << elastic_one.at("reason");
    EXPECT_EQ(elastic_one.at("elastic_spot"), "true");
    EXPECT_EQ(elastic.at("time_to_train_s"), waiting.at("elastic_time_to_train_s"));
    EXPECT_EQ(elastic.at("cost_usd"), waiting.at("elastic_cost_usd"));
    EXPECT_LT(std::stod(elastic.at("cost_usd")), std::stod(waiting.at("cost_usd")));
    // As predict --elastic-spot gives the same run.
    const ProcessResult predicted = run_epochcast(
        "predict --instance p3.16xlarge --nodes 8 --pricing spot --spot-interruptions-per-node-hour 0.13 "
        "--elastic-spot --json");
    ASSERT_EQ(predicted.exit_code, 0) << predicted.err;
    const nlohmann::json j = nlohmann::json::parse(predicted.out);
    expect_cell(elastic.at("time_to_train_s"), j["time_to_train_s"].get<double>(), "elastic time to train");
    expect_cell(elastic.at("cost_usd"), j["cost_usd"].get<double>(), "elastic cost");
}

// Issue 45: the evaluation's keys cross as predict's flags, and the last columns say the cadence
// each row priced: the recipe's every 4 epochs with --target-top1 unless eval_every says otherwise.
TEST(SweepCli, EvaluationKeysAndColumns) {
    TempFile spec(R"({"instance": "p4d.24xlarge", "nodes": 2, "eval_every": [0, 1], "eval_images": 10000,
                      "startup": ["0", "10min"]})");
    const ProcessResult r = run_epochcast("sweep " + spec.path() + " --columns all");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rows = csv_rows(r.out);
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[0].at("eval_every_epochs"), "0");
    EXPECT_EQ(rows[0].at("evaluations"), "0");
    EXPECT_EQ(rows[0].at("startup_s"), "0");
    EXPECT_EQ(rows[1].at("startup_s"), "600");
    EXPECT_EQ(rows[2].at("eval_every_epochs"), "1");
    EXPECT_EQ(rows[2].at("evaluations"), "90");
    EXPECT_EQ(rows[2].at("eval_images"), "10000");
    TempFile target(R"({"instance": "p4d.24xlarge", "nodes": 2})");
    const ProcessResult t =
        run_epochcast("sweep " + target.path() + " --target-top1 75.9 --recipe mlperf-lars --columns all");
    ASSERT_EQ(t.exit_code, 0) << t.err;
    const auto recipe = csv_rows(t.out);
    ASSERT_EQ(recipe.size(), 1u);
    EXPECT_EQ(recipe[0].at("eval_every_epochs"), "4");
    EXPECT_EQ(recipe[0].at("evaluations"),
              std::to_string(static_cast<int>(std::floor(std::stod(recipe[0].at("epochs_to_train")) / 4))));
}

// A bad store or spot value in a spec stops the sweep before any row: exit 2, one line naming the
// key and the value.
TEST(SweepCli, BadStoreAndSpotValuesAreOneLineErrorsNamingTheKey) {
    Folder folder;
    const std::string out = folder / "out.csv";
    struct Case {
        const char* spec;
        const char* expected;
    };
    for (const Case& c :
         {Case{R"({"storage": ["local-nvme", "nfs"]})", "\"storage\" value \"nfs\""},
          Case{R"({"storage": "fsx-lustre", "storage_tib": 0.6})", "\"storage_tib\" value 0.6"},
          Case{R"({"storage": "fsx-lustre", "storage_tier": 200})", "\"storage_tier\" value 200"},
          Case{R"({"storage": "s3", "storage_tier": 250})", "\"storage_tier\" applies to fsx-lustre"},
          Case{R"({"pricing": "spot", "checkpoint_every": "soon"})", "\"checkpoint_every\" value \"soon\""},
          Case{R"({"pricing": "spot", "spot_interruptions_per_node_hour": -1})",
               "\"spot_interruptions_per_node_hour\" value -1"},
          Case{R"({"pricing": "spot", "elastic_spot": "yes"})", "\"elastic_spot\" value \"yes\""},
          Case{R"({"elastic_spot": true})", "\"elastic_spot\" applies to spot rows only"}}) {
        TempFile spec(c.spec);
        const ProcessResult r = run_epochcast("sweep " + spec.path() + " -o " + out);
        EXPECT_EQ(r.exit_code, 2) << c.spec;
        EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_TRUE(r.out.empty()) << r.out;
        EXPECT_TRUE(fs::is_empty(folder.path)) << "a file was left behind for " << c.spec;
    }
}

/// Start `epochcast sweep` on the million-row spec, wait until its temporary file holds 8 KiB (more
/// than the header: rows), then `seconds` more, press Ctrl-C (or send `signal`). Waiting for the rows rather than a
/// fixed time keeps the test true on a loaded machine or a sanitized build, where start-up is slow.
ProcessResult interrupt_sweep(const std::string& output, double seconds, int signal = SIGINT) {
    const std::string spec = std::string(EPOCHCAST_SOURCE_DIR) + "/bench/specs/million.json";
    const std::string err_path = output + ".stderr";
    const pid_t child = ::fork();
    if (child == 0) {
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(err, 2);
        ::execl(EPOCHCAST_CLI_PATH, EPOCHCAST_CLI_PATH, "sweep", spec.c_str(), "-o", output.c_str(), "--jobs", "1",
                static_cast<char*>(nullptr));
        ::_exit(127);
    }
    const std::string partial = output + ".partial." + std::to_string(child);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::error_code ignored;
    while (std::chrono::steady_clock::now() < give_up && !(fs::file_size(partial, ignored) >= 8192 && !ignored)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    ::kill(child, signal);
    int status = 0;
    ::waitpid(child, &status, 0);
    ProcessResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = read_text(err_path);
    fs::remove(err_path);
    return r;
}

TEST(SweepCli, CtrlCLeavesAValidCsvWithTheRowsSoFar) {
    Folder folder;
    const std::string out = folder / "big.csv";
    const ProcessResult r = interrupt_sweep(out, 0.2);
    ASSERT_EQ(r.exit_code, 1) << r.err;  // a run that did not finish
    EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
    ASSERT_TRUE(fs::exists(out));
    EXPECT_EQ(std::distance(fs::directory_iterator(folder.path), fs::directory_iterator()), 1)
        << "a temporary file is left";
    const std::vector<std::string> lines = lines_of(read_text(out));
    ASSERT_GE(lines.size(), 3u);
    const std::size_t columns = fields_of(lines[0]).size();
    const std::size_t rows = lines.size() - 2;  // header and the closing note
    EXPECT_GT(rows, 0u);
    EXPECT_LT(rows, 1'000'000u);
    for (std::size_t i = 1; i + 1 < lines.size(); ++i) ASSERT_EQ(fields_of(lines[i]).size(), columns) << "line " << i;
    EXPECT_EQ(lines.back(), "# interrupted: " + std::to_string(rows) + " of 1000000 rows written");
}

// Issue 59, item 16: a sweep killed with SIGKILL left OUT.partial.PID (176 MB of a million rows)
// that no later sweep removed. The next sweep to OUT removes it; a partial file a live process
// holds locked (a sweep still writing), a link at such a name and other names stay.
TEST(SweepCli, TheNextSweepRemovesTheTemporaryFileOfAKilledOne) {
    Folder folder;
    const std::string out = folder / "big.csv";
    const ProcessResult killed = interrupt_sweep(out, 0.2, SIGKILL);
    ASSERT_EQ(killed.exit_code, -1);  // killed: no exit of its own
    std::vector<std::string> left;
    for (const auto& entry : fs::directory_iterator(folder.path)) left.push_back(entry.path().filename().string());
    ASSERT_EQ(left.size(), 1u);
    EXPECT_EQ(left[0].rfind("big.csv.partial.", 0), 0u) << left[0];

    const std::string live = out + ".partial.1";  // another sweep, still writing: locked
    const int held = ::open(live.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    ASSERT_GE(held, 0);
    ASSERT_EQ(::flock(held, LOCK_EX), 0);
    fs::create_symlink("/dev/null", out + ".partial.2");
    { std::ofstream(out + ".partial.notes") << "mine\n"; }

    TempFile spec(R"({"instance": "p3.16xlarge", "nodes": [1, 2]})");
    const ProcessResult r = run_epochcast("sweep " + spec.path() + " -o " + out);
    ::close(held);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(lines_of(read_text(out)).size(), 3u);  // the header and two rows
    EXPECT_FALSE(fs::exists(folder / left[0])) << "the killed sweep's temporary file is still there";
    EXPECT_TRUE(fs::exists(live));
    EXPECT_TRUE(fs::is_symlink(out + ".partial.2"));
    EXPECT_TRUE(fs::exists(out + ".partial.notes"));
}

TEST(SweepCli, SigtermAndSighupAreHandledAsCtrlC) {
    // A batch system's time limit (SIGTERM) or a closed terminal (SIGHUP) keeps the rows so far,
    // as Ctrl-C does, and leaves no temporary file.
    for (const int signal : {SIGTERM, SIGHUP}) {
        Folder folder;
        const std::string out = folder / "big.csv";
        const ProcessResult r = interrupt_sweep(out, 0.2, signal);
        ASSERT_EQ(r.exit_code, 1) << r.err;
        EXPECT_NE(r.err.find(signal == SIGTERM ? "interrupted by SIGTERM: " : "interrupted by SIGHUP: "),
                  std::string::npos)
            << r.err;
        EXPECT_EQ(std::distance(fs::directory_iterator(folder.path), fs::directory_iterator()), 1)
            << "a temporary file is left";
        const std::vector<std::string> lines = lines_of(read_text(out));
        ASSERT_GE(lines.size(), 3u);
        const std::size_t rows = lines.size() - 2;
        EXPECT_GT(rows, 0u);
        EXPECT_EQ(lines.back(), "# interrupted: " + std::to_string(rows) + " of 1000000 rows written");
    }
}

TEST(SweepCli, CtrlCLeavesAValidJsonThatSaysSo) {
    Folder folder;
    const std::string out = folder / "big.json";
    const ProcessResult r = interrupt_sweep(out, 0.2);
    ASSERT_EQ(r.exit_code, 1) << r.err;
    const nlohmann::json j = nlohmann::json::parse(read_text(out));  // throws if not valid JSON
    EXPECT_EQ(j["interrupted"], true);
    EXPECT_EQ(j["complete"], false);
    EXPECT_EQ(j["rows_written"].get<std::size_t>(), j["rows"].size());
    EXPECT_GT(j["rows"].size(), 0u);
    EXPECT_EQ(j["combinations"], 1000000);
}

TEST(SweepCli, PlotWithoutChartSupportIsABadInput) {
    if (cli::plots_supported()) GTEST_SKIP() << "this build draws charts (tests/gui checks the pictures)";
    TempFile spec(R"({"nodes": 2})");
    const ProcessResult r = run_epochcast("sweep " + spec.path() + " --plot x.png");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("without chart support"), std::string::npos) << r.err;
}

#ifdef EPOCHCAST_MPIEXEC
TEST(SweepCli, TwoMpiRanksWriteTheSameRowsAsOneProcess) {
    TempFile spec(kSpec);
    Folder folder;
    const ProcessResult one = run_epochcast("sweep " + spec.path() + " -o " + (folder / "one.csv"));
    ASSERT_EQ(one.exit_code, 0) << one.err;
    const ProcessResult two = run_command(mpirun_command(2) + " '" + EPOCHCAST_CLI_PATH + "' sweep " + spec.path() +
                                          " -o " + (folder / "two.csv"));
    ASSERT_EQ(two.exit_code, 0) << two.err << two.out;
    EXPECT_NE(two.out.find("over 2 ranks"), std::string::npos) << two.out;
    EXPECT_EQ(read_text(folder / "one.csv"), read_text(folder / "two.csv"));
}

// Issue 44: Slurm's srun --mpi=pmix starts ranks with PMIx's PMIX_RANK and no count of Open MPI's
// or PMI's; each took itself for the only process and swept every row. Open MPI's mpirun without
// its OMPI_COMM_WORLD_SIZE starts them the same way.
TEST(SweepCli, RanksOfAPmixLauncherWithoutOpenMpisVariablesShareTheRows) {
    TempFile spec(kSpec);
    Folder folder;
    const ProcessResult one = run_epochcast("sweep " + spec.path() + " -o " + (folder / "one.csv"));
    ASSERT_EQ(one.exit_code, 0) << one.err;
    const ProcessResult two =
        run_command(mpirun_command(2) + " env -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_RANK '" + EPOCHCAST_CLI_PATH +
                    "' sweep " + spec.path() + " -o " + (folder / "two.csv"));
    ASSERT_EQ(two.exit_code, 0) << two.err << two.out;
    EXPECT_NE(two.out.find("over 2 ranks"), std::string::npos) << two.out;
    EXPECT_EQ(read_text(folder / "one.csv"), read_text(folder / "two.csv"));
}
#endif

std::string significant(double value) {
    std::string out;
    cli::append_significant(out, value);
    return out;
}

TEST(AppendSignificant, WritesWhatPrintfPercentPoint7gWrites) {
    for (double v : {0.0, 1.0, -1.0, 90.0, 24.48, 0.918, 1281167.0, 9999999.4, 9999999.6, 0.0001, 0.00012345678,
                     0.000099999, 123.4567849, 5778.146, 1e7, 3.2e12, -0.5, 1e-9}) {
        char expected[64];
        std::snprintf(expected, sizeof expected, "%.7g", v);
        EXPECT_EQ(significant(v), expected) << v;
    }
    EXPECT_EQ(significant(NAN), "nan");
    // A million values over the range the sweep writes: the same text as printf but where a
    // value sits within rounding of a half in its 7th digit; never further than that.
    std::mt19937_64 random(7);
    std::uniform_real_distribution<double> exponent(-5, 8);
    int differ = 0;
    for (int i = 0; i < 1'000'000; ++i) {
        const double v = std::pow(10.0, exponent(random));
        char expected[64];
        std::snprintf(expected, sizeof expected, "%.7g", v);
        const std::string got = significant(v);
        if (got != expected) {
            ++differ;
            EXPECT_NEAR(std::stod(got), std::stod(expected), 1.01e-6 * std::stod(expected)) << v;
        }
    }
    EXPECT_LT(differ, 100);
}

// The spec's "compiled" crosses like any key: the compiled row of one GPU at batch 32 is predict
// --compile's, faster than the eager row, and says so in its last column.
TEST(SweepCli, CompiledRowsArePredictsCompileAndSaySo) {
    TempFile spec(R"({"instance": "p5.48xlarge", "gpus_per_node": 1, "batch_per_gpu": 32, "loader": "synthetic",
                      "compiled": [false, true]})");
    const ProcessResult r = run_epochcast("sweep " + spec.path() + " --columns all");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rows = csv_rows(r.out);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].at("compiled"), "false");
    EXPECT_EQ(rows[1].at("compiled"), "true");
    const ProcessResult predicted = run_epochcast(
        "predict --instance p5.48xlarge --gpus-per-node 1 --batch-per-gpu 32 --loader synthetic --compile --json");
    ASSERT_EQ(predicted.exit_code, 0) << predicted.err;
    expect_cell(rows[1].at("throughput_images_per_s"),
                nlohmann::json::parse(predicted.out)["throughput_images_per_s"].get<double>(), "compiled throughput");
    EXPECT_GT(std::stod(rows[1].at("throughput_images_per_s")), std::stod(rows[0].at("throughput_images_per_s")));
}

}  // namespace
}  // namespace epochcast::testing
