// The options the subcommands share (cli/common.hpp: --catalog, --calibration, --json) read the same
// words with the same help everywhere, and --help shows each option's default (issue 26).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "tests/cli/cli_process.hpp"

namespace epochcast {
namespace {

std::string help_of(const std::string& subcommand) {
    std::ostringstream out;
    cli::run({subcommand, "--help"}, out);
    return out.str();
}

/// The help of `flag` in `help`: its line and the lines that continue it, spaces squeezed so that
/// where CLI11 wraps does not matter.
std::string option_help(const std::string& help, const std::string& flag) {
    const auto start = help.find("  " + flag + " ");
    if (start == std::string::npos) return "";
    std::string text;
    std::istringstream lines(help.substr(start));
    std::string line;
    std::getline(lines, line);
    text = line;
    while (std::getline(lines, line) && line.find_first_not_of(' ') != std::string::npos &&
           line[line.find_first_not_of(' ')] != '-') {
        text += ' ' + line;
    }
    std::string squeezed;
    for (const char c : text) {
        if (c != ' ' || (!squeezed.empty() && squeezed.back() != ' ')) squeezed += c;
    }
    return squeezed;
}

const std::vector<std::string> kCalibrationCommands = {
    "predict", "plan", "sweep", "validate", "simulate", "run", "plan-calibration", "import-log", "compare"};
const std::vector<std::string> kCatalogCommands = {"catalog",   "predict",     "plan",       "sweep",
                                                   "validate",  "simulate",    "run",        "plan-calibration",
                                                   "calibrate", "import-nccl", "import-log", "compare"};

TEST(SharedOptions, CalibrationHasTheSameWordsHelpAndDefaultEverywhere) {
    const std::string reference = option_help(help_of("predict"), "--calibration");
    EXPECT_NE(reference.find("--calibration CAL=built-in "), std::string::npos) << reference;
    EXPECT_NE(reference.find("built-in (fitted to the published runs), data-free (the prior, no published run in it) "
                             "or a calibration file (epochcast.calibration/1)"),
              std::string::npos)
        << reference;
    for (const std::string& command : kCalibrationCommands) {
        EXPECT_EQ(option_help(help_of(command), "--calibration"), reference) << command;
    }
    // --prior takes the same words; validate's refits start from the data-free prior.
    EXPECT_NE(option_help(help_of("validate"), "--prior").find("--prior CAL=data-free "), std::string::npos);
    EXPECT_NE(option_help(help_of("calibrate"), "--prior").find("--prior CAL=built-in "), std::string::npos);
}

TEST(SharedOptions, CatalogHasTheSameHelpEverywhereAndTakesOneFilePerFlag) {
    const std::string reference = option_help(help_of("catalog"), "--catalog");
    EXPECT_NE(reference.find("--catalog FILE"), std::string::npos) << reference;
    EXPECT_NE(reference.find("repeatable, later files override earlier ones by name"), std::string::npos) << reference;
    for (const std::string& command : kCatalogCommands) {
        EXPECT_EQ(option_help(help_of(command), "--catalog"), reference) << command;
    }
    // A positional argument after --catalog FILE is the subcommand's, not a second catalog.
    const std::string trace = std::string(EPOCHCAST_SOURCE_DIR) + "/traces/published/seed001_horovod_256_gpus.json";
    const std::string catalog = std::string(EPOCHCAST_SOURCE_DIR) + "/model/catalog.json";
    const auto r = testing::run_epochcast("validate --catalog '" + catalog + "' '" + trace + "' --json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("seed001_horovod_256_gpus.json#3"), std::string::npos) << r.out;
}

TEST(SharedOptions, HelpShowsDefaultsButNotTheModelsSentinels) {
    const std::string predict = help_of("predict");
    EXPECT_NE(option_help(predict, "--precision").find("TEXT=amp "), std::string::npos) << predict;
    EXPECT_NE(option_help(predict, "--framework").find("TEXT=pytorch "), std::string::npos) << predict;
    EXPECT_NE(option_help(predict, "--pricing").find("TEXT=on-demand "), std::string::npos) << predict;
    EXPECT_NE(option_help(predict, "--instance").find("TEXT=p5.48xlarge "), std::string::npos) << predict;
    EXPECT_NE(option_help(predict, "--nodes").find("INT=1 "), std::string::npos) << predict;
    EXPECT_NE(option_help(predict, "--loader").find("TEXT=default "), std::string::npos) << predict;
    EXPECT_NE(option_help(predict, "--memory-format").find("TEXT=channels_last "), std::string::npos) << predict;
    EXPECT_NE(option_help(help_of("plan"), "--framework").find("TEXT=pytorch "), std::string::npos);
    // 0 GPUs per node means "all", -1 adapters "all", 0 servers "none": the help says so in words.
    for (const char* flag : {"--gpus-per-node", "--efa-adapters", "--ps-nodes", "--global-batch"}) {
        const std::string help = option_help(predict, flag);
        EXPECT_EQ(help.find("INT="), std::string::npos) << help;
    }
    EXPECT_NE(option_help(help_of("plan"), "--nodes").find("default 1,2,3,4,6,8,12,16,24,32,48,64"), std::string::npos);
}

}  // namespace
}  // namespace epochcast
