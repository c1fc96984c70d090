// `epochcast-train --allreduce-sweep`: started as `epochcast run` starts it (under mpirun, and on
// one rank), on small sizes. Checks nccl-tests' table column by column, as
// traces/nccl_import.hpp's parser will read it in `epochcast run` (tested there, in tests/cli).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_process.hpp"
#ifdef EPOCHCAST_WITH_CUDA
#include "executor/cuda/check.hpp"
#endif

namespace epochcast {
namespace {

using testing::ProcessResult;
using testing::run_command;

/// epochcast-train on one rank (a singleton MPI process).
ProcessResult train(const std::string& arguments) {
    return run_command(std::string("'") + testing::test_program(EPOCHCAST_TRAIN_PATH) + "'" + arguments);
}

/// epochcast-train under mpirun with `ranks` ranks.
ProcessResult mpirun(int ranks, const std::string& arguments) {
    return run_command(testing::mpirun_command(ranks) + " '" + testing::test_program(EPOCHCAST_TRAIN_PATH) + "'" +
                       arguments);
}

/// One placement's columns of a row.
struct Placement {
    double time_us = 0, algorithm_GBps = 0, bus_GBps = 0;
    long long wrong = -1;
    std::string time_text;  ///< the time as printed, for its rounding
};

/// Half a unit of the last digit `text` prints: how far the printed number may lie from the one it
/// rounds ("0.07" -> 0.005, "123.4" -> 0.05, "12345" -> 0.5).
double rounding_of(const std::string& text) {
    const auto point = text.find('.');
    const int decimals = point == std::string::npos ? 0 : static_cast<int>(text.size() - point - 1);
    return 0.5 * std::pow(10.0, -decimals);
}

/// A result row: size count type redop, then out-of-place and in-place.
struct Row {
    long long bytes = 0, count = 0;
    std::string type, redop;
    Placement placement[2];
};

/// The table's rows; every other line of `out` must be a comment ('#'), else the test fails.
std::vector<Row> rows_of(const std::string& out) {
    std::vector<Row> rows;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind('#', 0) == 0) continue;
        std::istringstream words(line);
        Row row;
        words >> row.bytes >> row.count >> row.type >> row.redop;
        for (Placement& p : row.placement) {
            words >> p.time_text >> p.algorithm_GBps >> p.bus_GBps >> p.wrong;
            p.time_us = words ? std::stod(p.time_text) : 0.0;
        }
        std::string rest;
        EXPECT_TRUE(words && !(words >> rest)) << "not a 12-column result row: '" << line << "'";
        rows.push_back(row);
    }
    return rows;
}

/// The number after `label` on its line of `out` (NaN when absent).
double figure_after(const std::string& out, const std::string& label) {
    const auto at = out.find(label);
    return at == std::string::npos ? std::nan("") : std::stod(out.substr(at + label.size()));
}

/// The table of a sweep of `ranks` ranks over sizes min_bytes, 2 min_bytes, ... up to max_bytes:
/// one row per size, sums all right, bandwidths as nccl-tests derives them from the time.
void expect_table(const std::string& out, int ranks, long long min_bytes, long long max_bytes) {
    EXPECT_NE(out.find("# epochcast-train --allreduce-sweep: nranks " + std::to_string(ranks) + ", nodes 1, "),
              std::string::npos)
        << out;
    for (int r = 0; r < ranks; ++r) {
        char line[32];
        std::snprintf(line, sizeof(line), "# Rank %2d on ", r);
        EXPECT_NE(out.find(line), std::string::npos) << out;
    }
    const std::vector<Row> rows = rows_of(out);
    long long bytes = min_bytes;
    std::size_t expected_rows = 0;
    for (; bytes <= max_bytes; bytes *= 2) ++expected_rows;
    ASSERT_EQ(rows.size(), expected_rows) << out;
    const double bus_factor = 2.0 * (ranks - 1) / ranks;
    double bus_sum = 0;
    bytes = min_bytes;
    for (const Row& row : rows) {
        SCOPED_TRACE("row of " + std::to_string(row.bytes) + " bytes");
        EXPECT_EQ(row.bytes, bytes);
        EXPECT_EQ(row.count, bytes / 4);
        EXPECT_EQ(row.type, "float");
        EXPECT_EQ(row.redop, "sum");
        for (const Placement& p : row.placement) {
            EXPECT_GE(p.time_us, 0);
            EXPECT_EQ(p.wrong, 0);
            // algbw is bytes / time in 10^9 bytes/s, computed from the unrounded time t and printed with
            // 2 decimals; the time is printed as t_p, within r of t (nccl-tests' 2, 1 or 0 decimals as it
            // grows). So algbw lies within 0.005 of bytes/t for some t in [t_p - r, t_p + r]: between
            // bytes/(t_p + r) and bytes/(t_p - r), the latter unbounded when t_p <= r.
            const double r_us = rounding_of(p.time_text);
            const double bytes_per_us_to_GBps = 1e-3;
            const double slowest_GBps = static_cast<double>(bytes) / (p.time_us + r_us) * bytes_per_us_to_GBps;
            EXPECT_GE(p.algorithm_GBps, slowest_GBps - 0.005 - 1e-9) << "time " << p.time_text;
            if (p.time_us > r_us) {
                const double fastest_GBps = static_cast<double>(bytes) / (p.time_us - r_us) * bytes_per_us_to_GBps;
                EXPECT_LE(p.algorithm_GBps, fastest_GBps + 0.005 + 1e-9) << "time " << p.time_text;
            }
            EXPECT_NEAR(p.bus_GBps, p.algorithm_GBps * bus_factor, 0.0051 + 0.005 * bus_factor);
            bus_sum += p.bus_GBps;
        }
        bytes *= 2;
    }
    EXPECT_NE(out.find("# Out of bounds values : 0 OK\n"), std::string::npos) << out;
    EXPECT_NEAR(figure_after(out, "# Avg bus bandwidth    : "), bus_sum / (2.0 * static_cast<double>(rows.size())),
                0.0051);
}

TEST(AllreduceSweep, TwoRanksOfTheRingSumRightAtEverySize) {
    const ProcessResult run =
        mpirun(2, " --allreduce-sweep --allreduce ring --sweep-max-bytes 65536 --sweep-iterations 3");
    ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
    EXPECT_NE(run.out.find("backend cpu (ring)"), std::string::npos) << run.out;
    expect_table(run.out, 2, 8, 65536);  // 14 rows
}

TEST(AllreduceSweep, TwoRanksOfMpiSumRightAtEverySize) {
    const ProcessResult run =
        mpirun(2, " --allreduce-sweep --allreduce mpi --sweep-max-bytes 65536 --sweep-iterations 3");
    ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
    EXPECT_NE(run.out.find("backend cpu (mpi)"), std::string::npos) << run.out;
    expect_table(run.out, 2, 8, 65536);
}

// Three ranks cut a bucket into uneven ring chunks (a 12-byte message: one element each).
TEST(AllreduceSweep, ThreeRanksOfTheRingSumRightFromAnOddSize) {
    const ProcessResult run = mpirun(3,
                                     " --allreduce-sweep --sweep-min-bytes 12 --sweep-max-bytes 6000 "
                                     "--sweep-iterations 2");
    ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
    expect_table(run.out, 3, 12, 6000);  // 12 .. 3072: the largest size is not reached exactly
}

// One rank: the table, with no bus bandwidth (nccl-tests' 2(n-1)/n is 0), and no progress report:
// those are the training's (executor/progress.hpp).
TEST(AllreduceSweep, OneRankPrintsTheTableAndNoProgressReport) {
    const std::filesystem::path reports =
        std::filesystem::temp_directory_path() / ("epochcast-sweep-reports-" + std::to_string(::getpid()));
    std::filesystem::create_directories(reports);
    const ProcessResult run = run_command("EPOCHCAST_PROGRESS_DIR='" + reports.string() + "' '" +
                                          testing::test_program(EPOCHCAST_TRAIN_PATH) +
                                          "' --allreduce-sweep --sweep-max-bytes 1024 --sweep-iterations 2");
    const bool no_reports = std::filesystem::is_empty(reports);
    std::filesystem::remove_all(reports);
    ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
    EXPECT_TRUE(no_reports);
    expect_table(run.out, 1, 8, 1024);
    for (const Row& row : rows_of(run.out)) {
        EXPECT_EQ(row.placement[0].bus_GBps, 0.0);
        EXPECT_EQ(row.placement[1].bus_GBps, 0.0);
    }
}

TEST(AllreduceSweep, BadValuesAreExitCodeTwoNamingTheFlag) {
    const struct {
        std::string arguments, flag;
    } cases[] = {
        {" --allreduce-sweep --sweep-min-bytes 2", "--sweep-min-bytes"},
        {" --allreduce-sweep --sweep-min-bytes 10", "--sweep-min-bytes"},
        {" --allreduce-sweep --sweep-min-bytes -8", "--sweep-min-bytes"},
        {" --allreduce-sweep --sweep-min-bytes 64 --sweep-max-bytes 32", "--sweep-max-bytes"},
        {" --allreduce-sweep --sweep-max-bytes 8589934592", "--sweep-max-bytes"},
        {" --allreduce-sweep --sweep-max-bytes lots", "--sweep-max-bytes"},
        {" --allreduce-sweep --sweep-iterations 0", "--sweep-iterations"},
        {" --allreduce-sweep --sweep-iterations 1000000", "--sweep-iterations"},
        {" --allreduce-sweep --allreduce tree", "--allreduce"},
        {" --allreduce-sweep --backend tpu", "--backend"},
        {" --sweep-iterations 5", "--allreduce-sweep"},  // a sweep flag without the sweep
        {" --allreduce-sweep --describe-host", "--describe-host"},
    };
    for (const auto& c : cases) {
        const ProcessResult run = train(c.arguments);
        EXPECT_EQ(run.exit_code, 2) << c.arguments << "\n" << run.err << run.out;
        EXPECT_NE(run.err.find(c.flag), std::string::npos) << c.arguments << "\n" << run.err;
        EXPECT_EQ(run.out, "") << c.arguments;
    }
}

#ifdef EPOCHCAST_WITH_CUDA
TEST(AllreduceSweep, CudaWithoutAGpuIsExitCodeTwoWithAMessage) {
    if (cuda::visible_gpus() > 0) GTEST_SKIP() << "a GPU is visible";
    const ProcessResult run = train(" --allreduce-sweep --backend cuda --sweep-max-bytes 1024");
    EXPECT_EQ(run.exit_code, 2) << run.err << run.out;
    EXPECT_NE(run.err.find("GPU(s) are visible"), std::string::npos) << run.err;
}

// One rank per GPU, as training runs: every GPU of the machine, at most 2.
TEST(AllreduceSweep, NcclSumsRightOnTheGpus) {
    const int gpus = cuda::visible_gpus();
    if (gpus == 0) GTEST_SKIP() << "no GPU visible";
    const int ranks = gpus > 1 ? 2 : 1;
    const ProcessResult run =
        mpirun(ranks, " --allreduce-sweep --backend cuda --sweep-max-bytes 1048576 --sweep-iterations 3");
    ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
    EXPECT_NE(run.out.find("backend cuda (nccl)"), std::string::npos) << run.out;
    expect_table(run.out, ranks, 8, 1048576);
}
#endif

}  // namespace
}  // namespace epochcast
