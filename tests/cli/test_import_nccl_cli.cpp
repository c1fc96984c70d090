// `epochcast import-nccl` on the real all_reduce_perf table that seed 004 prints (p4d.24xlarge,
// 2 nodes x 8 A100, 4 EFA adapters): what the trace it writes records, and the adapter counts it
// refuses. The parser and the fit themselves are tested in tests/traces/test_nccl_import.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "tests/cli/cli_process.hpp"
#include "tests/support/temp_file.hpp"
#include "traces/trace.hpp"

namespace epochcast {
namespace {

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
    const auto result = testing::run_epochcast("import-nccl '" + kSeed004Log +
                                               "' --instance p4d.24xlarge --efa-adapters 5 -o '" + output.path() + "'");
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find("--efa-adapters 5 is more than p4d.24xlarge has (4 EFA adapters)"), std::string::npos)
        << result.err;
    EXPECT_FALSE(std::filesystem::exists(output.path()));  // nothing written
    // An instance without EFA takes only 0.
    const auto p3 = testing::run_epochcast("import-nccl '" + kSeed004Log +
                                           "' --instance p3.16xlarge --efa-adapters 1 -o '" + output.path() + "'");
    EXPECT_EQ(p3.exit_code, 2) << p3.err;
    EXPECT_NE(p3.err.find("p3.16xlarge has (0 EFA adapters)"), std::string::npos) << p3.err;
    const auto negative = testing::run_epochcast(
        "import-nccl '" + kSeed004Log + "' --instance p4d.24xlarge --efa-adapters -3 -o '" + output.path() + "'");
    EXPECT_EQ(negative.exit_code, 2) << negative.err;
}

}  // namespace
}  // namespace epochcast
