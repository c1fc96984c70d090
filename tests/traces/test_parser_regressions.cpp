// Hostile input to the trace and nccl-tests parsers (issue 25): a one-line InputError naming the
// file, the line or entry and the key, never "stod", "stoi" or nlohmann's own text, and never a
// NaN written into a trace. The inputs are the issue's cases and what the fuzz targets found.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "model/errors.hpp"
#include "tests/cli/cli_process.hpp"
#include "tests/support/error_of.hpp"
#include "tests/support/temp_file.hpp"
#include "traces/nccl_import.hpp"
#include "traces/trace.hpp"

namespace epochcast {
namespace {

using nlohmann::json;

using testing::input_error_of;

void expect_one_line(const std::string& message, const std::string& expected) {
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const char* internal : {"stod", "stoi", "stoll", "json.exception"}) {
        EXPECT_EQ(message.find(internal), std::string::npos) << message;
    }
}

/// An all_reduce_perf table of two rows on 8 ranks, the second row's time, algbw and busbw given.
std::string log_with(const std::string& time, const std::string& algbw, const std::string& busbw,
                     const std::string& size = "16777216") {
    return "#  nranks 8\n"
           "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
           "     1048576        262144     float     sum      -1    100.0   10.49   18.35      0\n"
           "    " +
           size + "       4194304     float     sum      -1   " + time + "   " + algbw + "   " + busbw + "      0\n";
}

std::string parse_error(const std::string& log) {
    return input_error_of([&] {
        int ranks = 0;
        fit_alpha_beta(parse_nccl_all_reduce(log, "perf.log", &ranks), ranks);
    });
}

TEST(NcclLogParser, NonFiniteFiguresAreErrorsNamingTheLine) {
    // A NaN bandwidth was written into the trace, which `calibrate` then rejected.
    expect_one_line(parse_error(log_with("1000.0", "16.78", "nan")),
                    "perf.log: line 4: the busbw column is nan, not a finite");
    expect_one_line(parse_error(log_with("1000.0", "inf", "29.36")), "perf.log: line 4: the algbw column is inf");
    expect_one_line(parse_error(log_with("-nan", "16.78", "29.36")), "perf.log: line 4: the time column is -nan");
    expect_one_line(parse_error(log_with("1000.0", "16.78", "-29.36")), "perf.log: line 4: the busbw column is -29.36");
}

TEST(NcclLogParser, NumbersBeyondADoubleAreErrorsNotStod) {
    // std::stod threw out_of_range ("stod") on these.
    expect_one_line(parse_error(log_with("1e400", "16.78", "29.36")), "perf.log: line 4: the time column is 1e400");
    expect_one_line(parse_error(log_with("1000.0", "16.78", "29.36", std::string(400, '9'))),
                    "perf.log: line 4: the size column is 999");
}

TEST(NcclLogParser, BandwidthsBeyondAnyLinkAreErrors) {
    // Issue 42's seeds: a bus bandwidth of 1e300 GB/s was fitted on and printed as 300 digits.
    expect_one_line(parse_error(log_with("1000.0", "16.78", "1e300")),
                    "perf.log: line 4: the busbw column is 1e300, more than 1e+09 GB/s");
    expect_one_line(parse_error(log_with("1000.0", "2e9", "29.36")),
                    "perf.log: line 4: the algbw column is 2e9, more than 1e+09 GB/s");
    int ranks = 0;
    EXPECT_NO_THROW(parse_nccl_all_reduce(log_with("1000.0", "1e9", "1e9"), "perf.log", &ranks));
}

TEST(NcclLogParser, AHugeNranksIsAnErrorNotStoi) {
    // std::stoi threw out_of_range ("stoi").
    const std::string log = "# nranks 99999999999999999999\n" + log_with("1000.0", "16.78", "29.36").substr(11);
    expect_one_line(parse_error(log), "perf.log: line 1: nranks 99999999999999999999 is more than 16777216");
}

TEST(NcclLogParser, ZeroByteRowsAreSkipped) {
    // nccl-tests -b 0 prints a 0-byte row; a trace holds only positive message sizes.
    std::string log = log_with("1000.0", "16.78", "29.36");
    log += "           0             0     float     sum      -1     5.2    0.00    0.00      0\n";
    int ranks = 0;
    const auto samples = parse_nccl_all_reduce(log, "perf.log", &ranks);
    ASSERT_EQ(samples.size(), 2u);
    EXPECT_DOUBLE_EQ(samples[0].bytes, 1048576);
    EXPECT_DOUBLE_EQ(samples[1].bytes, 16777216);
}

// Issue 59, item 9: logs that fitted a network where none was measured.
TEST(NcclLogParser, ARowGivenAgainIsASecondTableNotMorePoints) {
    // Three copies of one row gave "sizes 3" and alpha 0, where the row alone is refused.
    const std::string row = "    16777216       4194304     float     sum      -1   1000.0   16.78   29.36      0\n";
    expect_one_line(parse_error("#  nranks 8\n" + row + row + row),
                    "perf.log: line 3: the message size 16777216 is given again (line 2)");
    expect_one_line(parse_error(log_with("1000.0", "16.78", "29.36") + log_with("1000.0", "16.78", "29.36")),
                    "perf.log: line 7: the message size 1048576 is given again (line 3)");
}

TEST(NcclLogParser, TimesThatDoNotGrowWithTheSizeMeasureNoBandwidth) {
    // The larger message took less time: the largest busbw was taken for a plateau.
    expect_one_line(parse_error(log_with("50.0", "335.54", "587.2")),
                    "no finite, positive bus bandwidth: the times do not grow with the message size");
}

TEST(NcclLogParser, NranksBelowTwoOrTwoCountsAreErrors) {
    const std::string table = log_with("1000.0", "16.78", "29.36").substr(11);  // without "#  nranks 8"
    expect_one_line(parse_error("# nranks 0\n" + table), "perf.log: line 1: nranks 0: an all-reduce test measures");
    expect_one_line(parse_error("# nranks -4\n" + table), "perf.log: line 1: nranks -4: an all-reduce test");
    expect_one_line(parse_error("# nranks 8\n# nranks 16\n" + table),
                    "perf.log: line 2: nranks 16 where line 1 said 8: one all_reduce_perf test per log");
    // NCCL's INFO lines repeat one count, once per rank: one test.
    int ranks = 0;
    EXPECT_NO_THROW(
        parse_nccl_all_reduce("rank 0 nranks 8 cudaDev 0\nrank 1 nranks 8 cudaDev 1\n" + table, "perf.log", &ranks));
    EXPECT_EQ(ranks, 8);
}

TEST(NcclLogParser, ATableWithoutBandwidthIsAnErrorNotAZeroInTheTrace) {
    // Every busbw 0 fitted a bus bandwidth of 0, which a trace refuses.
    const std::string log =
        "#  nranks 8\n"
        "     1048576        262144     float     sum      -1    100.0   0   0      0\n"
        "    16777216       4194304     float     sum      -1    100.0   0   0      0\n";
    expect_one_line(parse_error(log), "no finite, positive bus bandwidth");
}

TEST(ImportNcclCli, ALogHoldingNanExitsWith2AndWritesNoTrace) {
    // Was exit 0, "nan" in the table and a trace that `calibrate` rejected.
    const testing::TempFile log(log_with("1000.0", "16.78", "nan"), ".log");
    const std::string output = log.path() + ".trace.json";
    const auto result =
        testing::run_epochcast("import-nccl '" + log.path() + "' --instance p3dn.24xlarge -o '" + output + "'");
    EXPECT_EQ(result.exit_code, 2) << result.err;
    expect_one_line(result.err.substr(0, result.err.size() - 1), log.path() + ": line 4: the busbw column is nan");
    EXPECT_EQ(result.out.find("nan"), std::string::npos) << result.out;
    EXPECT_FALSE(std::filesystem::exists(output));
}

TEST(ImportNcclCli, AFitWithoutBandwidthNamesTheLog) {
    const testing::TempFile log(
        "#  nranks 8\n"
        "     1048576        262144     float     sum      -1    100.0   0   0      0\n"
        "    16777216       4194304     float     sum      -1    100.0   0   0      0\n",
        ".log");
    const auto result = testing::run_epochcast("import-nccl '" + log.path() + "' --instance p3dn.24xlarge -o '" +
                                               log.path() + ".json'");
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find(log.path() + ": the alpha-beta fit gives no finite"), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(log.path() + ".json"));
}

json trace_with_run(const json& changes) {
    json run = {{"source", "s"},
                {"instance", "p3.16xlarge"},
                {"nodes", 2},
                {"batch_per_gpu", 32},
                {"precision", "amp"},
                {"strategy", "ring"},
                {"framework", "pytorch"},
                {"measured", {{"throughput_images_per_s", 1000}}}};
    run.update(changes);
    return {{"schema", "epochcast.trace/1"}, {"runs", json::array({run})}};
}

std::string trace_error(const json& document) {
    return input_error_of([&] { parse_trace(document.dump(), "t.json", Catalog::built_in()); });
}

TEST(TraceParser, ACountBeyondAnIntIsRefusedNotWrapped) {
    // 4294967298 nodes became 2 (the int kept the low 32 bits).
    expect_one_line(trace_error(trace_with_run({{"nodes", 4294967298LL}})),
                    "t.json: run 0: key \"nodes\" must be at most 2147483647, got 4294967298");
    expect_one_line(trace_error(trace_with_run({{"batch_per_gpu", 18446744073709551615ULL}})),
                    "t.json: run 0: key \"batch_per_gpu\" must be at most 2147483647, got 18446744073709551615");
    // dataset_images is a 64-bit count: a large one stays.
    EXPECT_EQ(trace_error(trace_with_run({{"dataset_images", 4294967298LL}})), "");
}

TEST(TraceParser, ANumberBeyondADoubleIsAOneLineError) {
    const std::string text =
        R"({"schema": "epochcast.trace/1", "runs": [], "networks": [{"bus_bandwidth_GBps": 1e400}]})";
    expect_one_line(input_error_of([&] { parse_trace(text, "t.json", Catalog::built_in()); }),
                    "t.json: a number is beyond the range of a double");
}

TEST(TraceParser, AnUnknownInstanceIsEchoedEscaped) {
    expect_one_line(trace_error(trace_with_run({{"instance", "p3\n16xlarge"}})),
                    "t.json: run 0: key \"instance\" names unknown instance 'p3\\n16xlarge'");
}

}  // namespace
}  // namespace epochcast
