// docs/cli.md against the program: every subcommand `epochcast --help` lists has a section, and
// every long flag a subcommand's --help prints is named in that section, so a flag added, renamed
// or removed without the doc fails here instead of drifting silently.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_process.hpp"
#include "tests/support/docs_text.hpp"

namespace epochcast::testing {
namespace {

/// The subcommands of `epochcast --help`: the first word of each line under "Subcommands:".
std::vector<std::string> subcommands(const std::string& help) {
    std::vector<std::string> names;
    std::istringstream lines(help);
    bool listing = false;
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("Subcommands:", 0) == 0) {
            listing = true;
            continue;
        }
        if (!listing) continue;
        if (line.empty() || line[0] != ' ') break;
        std::istringstream words(line);
        std::string name;
        words >> name;
        names.push_back(name);
    }
    return names;
}

/// The long flags of a --help text: the names ("-o,--output" gives --output) in the first column
/// of each option line. Flags mentioned in descriptions are not options of the command.
std::set<std::string> long_flags(const std::string& help) {
    std::set<std::string> flags;
    std::istringstream lines(help);
    for (std::string line; std::getline(lines, line);) {
        const std::size_t first = line.find_first_not_of(' ');
        if (first == 0 || first == std::string::npos || line[first] != '-') continue;
        std::istringstream words(line.substr(first));
        std::string names;
        words >> names;
        std::istringstream parts(names);
        for (std::string name; std::getline(parts, name, ',');) {
            if (name.rfind("--", 0) == 0) flags.insert(name);
        }
    }
    return flags;
}

/// `flag` as docs/cli.md writes it: in backquotes, alone or followed by its argument.
bool names_flag(const std::string& text, const std::string& flag) {
    return text.find("`" + flag + "`") != std::string::npos || text.find("`" + flag + " ") != std::string::npos;
}

TEST(DocsCli, TheHelpParsersFindTheFlagsTheyShould) {
    // Guards the test itself: were the help's layout to change, the checks below would pass on
    // empty sets.
    const ProcessResult top = run_epochcast("--help");
    ASSERT_EQ(top.exit_code, 0) << top.err;
    const std::vector<std::string> names = subcommands(top.out);
    EXPECT_EQ(names.size(), 12u) << top.out;
    const std::set<std::string> predict = long_flags(run_epochcast("predict --help").out);
    for (const char* flag : {"--instance", "--nodes", "--target-top1", "--catalog", "--json", "--help"}) {
        EXPECT_EQ(predict.count(flag), 1u) << flag;
    }
    EXPECT_EQ(long_flags(run_epochcast("import-nccl --help").out).count("--output"), 1u);  // from "-o,--output"
    EXPECT_EQ(predict.count("--batch-per-gpu"), 1u);
    EXPECT_EQ(predict.count("--strategy"), 1u);
    EXPECT_EQ(names_flag("`--nodes` | x", "--nodes"), true);
    EXPECT_EQ(names_flag("`--nodes-x` | x", "--nodes"), false);
}

TEST(DocsCli, EverySubcommandHasASectionNamingEachOfItsFlags) {
    const std::string doc = docs_page("cli.md");
    ASSERT_FALSE(doc.empty()) << "docs/cli.md is missing";
    const std::string common = docs_section(doc, "## Every subcommand");
    ASSERT_FALSE(common.empty());
    // The scenario flags are tabled once, under predict; simulate and plan-calibration refer to them.
    const std::string predict = docs_section(doc, "## predict");
    const std::size_t table = predict.find("**Scenario flags**");
    const std::size_t table_end = predict.find("`predict`'s own flags");
    ASSERT_NE(table, std::string::npos);
    ASSERT_NE(table_end, std::string::npos);
    const std::string scenario_flags = predict.substr(table, table_end - table);
    for (const std::string& name : subcommands(run_epochcast("--help").out)) {
        const std::string section = docs_section(doc, "## " + name);
        EXPECT_FALSE(section.empty()) << "docs/cli.md has no section \"## " << name << "\"";
        const ProcessResult help = run_epochcast(name + " --help");
        ASSERT_EQ(help.exit_code, 0) << name << ": " << help.err;
        const bool takes_scenario = section.find("scenario flags") != std::string::npos;
        for (const std::string& flag : long_flags(help.out)) {
            // --help and --help-all are every subcommand's, named once for all.
            const bool everywhere = flag == "--help" || flag == "--help-all";
            const bool named = everywhere
                                   ? names_flag(common, flag)
                                   : names_flag(section, flag) || (takes_scenario && names_flag(scenario_flags, flag));
            EXPECT_TRUE(named) << "docs/cli.md, \"## " << name << "\", does not name " << flag << " that `epochcast "
                               << name << " --help` prints";
        }
    }
}

TEST(DocsCli, TheProgramsOwnFlagsAreNamed) {
    const std::string common = docs_section(docs_page("cli.md"), "## Every subcommand");
    for (const std::string& flag : long_flags(run_epochcast("--help").out)) {
        EXPECT_TRUE(names_flag(common, flag)) << "docs/cli.md, \"## Every subcommand\", does not name " << flag;
    }
}

}  // namespace
}  // namespace epochcast::testing
