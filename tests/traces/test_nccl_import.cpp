// nccl-tests import against the real all_reduce_perf table that seed 004 prints (p4d.24xlarge,
// 2 nodes x 8 A100, 4 EFA adapters): the fitted large-message bus bandwidth must match the
// table's within 5% (issue 3).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/app.hpp"
#include "model/errors.hpp"
#include "tests/cli/cli_process.hpp"
#include "tests/support/temp_file.hpp"
#include "traces/nccl_import.hpp"
#include "traces/trace.hpp"

namespace epochcast {
namespace {

std::string seed004_log() {
    std::ifstream in(EPOCHCAST_SOURCE_DIR "/tests/traces/data/seed004_all_reduce_perf.log");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

TEST(NcclImport, ParsesSeed004Table) {
    int ranks = 0;
    const auto samples = parse_nccl_all_reduce(seed004_log(), "seed004", &ranks);
    EXPECT_EQ(ranks, 16);
    ASSERT_EQ(samples.size(), 28u);  // 8 B to 1 GiB
    EXPECT_DOUBLE_EQ(samples.front().bytes, 8);
    EXPECT_NEAR(samples.front().time_s, 629.7e-6, 1e-12);
    EXPECT_DOUBLE_EQ(samples.back().bytes, 1073741824);
    EXPECT_DOUBLE_EQ(samples.back().bus_GBps, 42.03);
}

TEST(NcclImport, FittedBusBandwidthMatchesTheTableWithin5Percent) {
    int ranks = 0;
    const auto samples = parse_nccl_all_reduce(seed004_log(), "seed004", &ranks);
    const NetworkMeasurement m = fit_alpha_beta(samples, ranks);
    EXPECT_LT(std::abs(m.bus_bandwidth_GBps - 42.03) / 42.03, 0.05) << m.bus_bandwidth_GBps;
    // The fitted plateau never exceeds the table's largest figure (the unconstrained line's is 43.05).
    EXPECT_LE(m.bus_bandwidth_GBps, m.max_bus_bandwidth_GBps);
    EXPECT_DOUBLE_EQ(m.max_bus_bandwidth_GBps, 42.03);
    // nccl-tests printed "Avg bus bandwidth : 8.23785".
    EXPECT_NEAR(m.average_bus_bandwidth_GBps, 8.238, 0.02);
    // The latency floor: the smallest messages take about 0.63 ms.
    EXPECT_GT(m.latency_s, 0.5e-3);
    EXPECT_LT(m.latency_s, 2e-3);
}

TEST(NcclImport, RanksFromBandwidthRatioWhenNoNranksLine) {
    const std::string log =
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        "     1048576        262144     float     sum      -1    100.0   10.49   18.35      0    100.0   10.49   18.35      0\n"
        "    16777216       4194304     float     sum      -1   1000.0   16.78   29.36      0   1000.0   16.78   29.36      0\n";
    int ranks = 0;
    const auto samples = parse_nccl_all_reduce(log, "new-format", &ranks);
    EXPECT_EQ(ranks, 8);  // 29.36 / 16.78 = 1.75 = 2 x 7/8
    ASSERT_EQ(samples.size(), 2u);
    EXPECT_NEAR(samples[1].time_s, 1e-3, 1e-12);  // the root column is skipped
}

TEST(NcclImport, RejectsLogsWithoutATable) {
    EXPECT_THROW(parse_nccl_all_reduce("hello\nworld\n", "x.log", nullptr), InputError);
    EXPECT_THROW(fit_alpha_beta({}, 8), InputError);
}

const std::string kSeed004Log = EPOCHCAST_SOURCE_DIR "/tests/traces/data/seed004_all_reduce_perf.log";

/// `epochcast import-nccl` in-process; returns the trace it wrote.
Trace import_seed004(const std::vector<std::string>& extra) {
    const testing::TempFile output("", ".json");
    std::vector<std::string> args = {"import-nccl", kSeed004Log, "--instance", "p4d.24xlarge", "-o", output.path()};
    args.insert(args.end(), extra.begin(), extra.end());
    std::ostringstream out;
    cli::run(args, out);
    EXPECT_NE(out.str().find("wrote"), std::string::npos) << out.str();
    return read_trace(output.path(), Catalog::built_in());
}

TEST(ImportNcclCli, EfaAdaptersAreRecorded) {
    const Trace all = import_seed004({});
    ASSERT_EQ(all.networks.size(), 1u);
    EXPECT_EQ(all.networks[0].efa_adapters, -1);  // not given: all 4 of the p4d.24xlarge
    EXPECT_EQ(all.networks[0].ranks, 16);
    EXPECT_EQ(all.networks[0].samples.size(), 28u);
    EXPECT_DOUBLE_EQ(all.networks[0].max_bus_bandwidth_GBps, 42.03);

    const Trace one = import_seed004({"--efa-adapters", "1"});
    ASSERT_EQ(one.networks.size(), 1u);
    EXPECT_EQ(one.networks[0].efa_adapters, 1);
    const Trace sockets = import_seed004({"--efa-adapters", "0"});
    EXPECT_EQ(sockets.networks[0].efa_adapters, 0);
}

TEST(ImportNcclCli, TooManyEfaAdaptersExitsWith2) {
    const testing::TempFile output("", ".json");
    std::filesystem::remove(output.path());
    const auto result = testing::run_epochcast("import-nccl '" + kSeed004Log + "' --instance p4d.24xlarge --efa-adapters 5 -o '" +
                                               output.path() + "'");
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find("--efa-adapters 5 is more than p4d.24xlarge has (4 EFA adapters)"), std::string::npos)
        << result.err;
    EXPECT_FALSE(std::filesystem::exists(output.path()));  // nothing written
    // An instance without EFA takes only 0.
    const auto p3 = testing::run_epochcast("import-nccl '" + kSeed004Log + "' --instance p3.16xlarge --efa-adapters 1 -o '" +
                                           output.path() + "'");
    EXPECT_EQ(p3.exit_code, 2) << p3.err;
    EXPECT_NE(p3.err.find("p3.16xlarge has (0 EFA adapters)"), std::string::npos) << p3.err;
    const auto negative = testing::run_epochcast("import-nccl '" + kSeed004Log +
                                                 "' --instance p4d.24xlarge --efa-adapters -3 -o '" + output.path() + "'");
    EXPECT_EQ(negative.exit_code, 2) << negative.err;
}

}  // namespace
}  // namespace epochcast
