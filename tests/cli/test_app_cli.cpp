// The program's own options and its subcommand dispatch (cli/app.cpp): --version, an unknown or a
// missing subcommand, usage lines that name the program.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_process.hpp"

namespace epochcast::testing {
namespace {

std::size_t count_lines(const std::string& text) {
    std::size_t lines = 0;
    for (const char c : text) lines += c == '\n';
    return lines;
}

TEST(AppCli, VersionPrintsTheProjectsVersionAndExitsZero) {
    const ProcessResult r = run_epochcast("--version");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "epochcast " EPOCHCAST_TEST_VERSION "\n");
    EXPECT_EQ(r.err, "");
}

TEST(AppCli, AnUnknownSubcommandIsNamedWithTheValidOnes) {
    const ProcessResult r = run_epochcast("frobnicate --nodes 2");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find("unknown subcommand 'frobnicate'"), std::string::npos) << r.err;
    for (const char* name : {"catalog", "predict", "compare", "import-nccl", "import-log", "calibrate", "validate",
                             "plan-calibration", "simulate", "run", "sweep", "plan"}) {
        EXPECT_NE(r.err.find(name), std::string::npos) << name << " missing from: " << r.err;
    }
}

TEST(AppCli, NoSubcommandSaysOneIsRequiredAndListsThem) {
    const ProcessResult r = run_epochcast("");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find("a subcommand is required: catalog, predict,"), std::string::npos) << r.err;
}

TEST(AppCli, UsageLinesNameTheProgram) {
    EXPECT_NE(run_epochcast("--help").out.find("Usage: epochcast [OPTIONS] SUBCOMMAND"), std::string::npos);
    EXPECT_NE(run_epochcast("predict --help").out.find("Usage: epochcast predict [OPTIONS]"), std::string::npos);
    // An option before the subcommand is still CLI11's to judge (one line, exit 2).
    const ProcessResult r = run_epochcast("--bogus predict");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
}

}  // namespace
}  // namespace epochcast::testing
