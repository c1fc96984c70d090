// What the CLI shares with the Python module (python/): the sweep's row description, whose cells
// must match its columns' types for every kind of row (the Python module writes each cell into an
// array of its column's type); the sweep prepared from arguments and an in-memory spec; a
// subcommand's options as --help lists them; and the error line of each kind of exception.
#include <gtest/gtest.h>

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "cli/output.hpp"
#include "cli/sweep.hpp"
#include "cli/sweep_row.hpp"
#include "model/errors.hpp"
#include "tests/support/error_of.hpp"

namespace epochcast::testing {
namespace {

/// Checks every cell against its column's type, and counts them.
struct TypeCheckingCells {
    std::size_t k = 0;
    std::vector<std::string> mismatches;

    void expect(cli::ColumnType type) {
        constexpr auto columns = cli::sweep_columns();
        if (k >= columns.size()) {
            mismatches.push_back("cell " + std::to_string(k) + " past the last column");
        } else if (columns[k].type != type) {
            mismatches.push_back(std::string(columns[k].name));
        }
        ++k;
    }
    void text(std::string_view) { expect(cli::ColumnType::text); }
    void count(std::int64_t) { expect(cli::ColumnType::count); }
    void number(double) { expect(cli::ColumnType::number); }
    void flag(bool) { expect(cli::ColumnType::flag); }
    void none() { ++k; }
};

TEST(SweepRow, EveryKindOfRowHasOneCellOfItsColumnsTypeForEachColumn) {
    // Dedicated servers, co-located ones, a global batch its GPUs do not divide, a target accuracy
    // (epochs an output), a machine without a price, EFA adapters given, and rows the model refuses.
    const cli::PreparedSweep sweep = cli::prepare_sweep(
        {"spec"}, std::string(R"({"instance": ["p4d.24xlarge", "dgx-a100", "p3.2xlarge"], "nodes": [1, 3],
            "strategy": ["ps", "nccl"], "ps_instance": "m4.16xlarge", "ps_colocated": [false, true],
            "global_batch": [1000, 4096], "efa_adapters": [0, 4], "pricing": ["on-demand", "spot"]})"));
    const cli::SweepEvaluator evaluator(sweep);
    int feasible = 0;
    int infeasible = 0;
    for (std::size_t i = 0; i < sweep.spec.combinations(); ++i) {
        cli::ScenarioResult result;
        std::string reason;
        TypeCheckingCells cells;
        if (evaluator.evaluate(i, result, reason)) {
            cli::feasible_row(result, cells);
            ++feasible;
        } else {
            cli::infeasible_row(result.scenario, reason, cells);
            ++infeasible;
        }
        EXPECT_EQ(cells.k, cli::kSweepColumnCount) << "row " << i;
        EXPECT_TRUE(cells.mismatches.empty()) << "row " << i << ": " << cells.mismatches.front();
    }
    EXPECT_GT(feasible, 0);
    EXPECT_GT(infeasible, 0);
    const std::string header = cli::prediction_csv_header();
    EXPECT_EQ(header.substr(0, 12), "model,image_");
    EXPECT_EQ(std::count(header.begin(), header.end(), ','), static_cast<long>(cli::kSweepColumnCount) - 1);
}

TEST(SweepRow, ASpecGivenAsTextIsNamedByTheSpecArgumentInItsErrors) {
    EXPECT_EQ(input_error_of([] { cli::prepare_sweep({"spec"}, std::string(R"({"nodes": [4, 0]})")); }),
              "spec: \"nodes\" value 0 must be at least 1");
    EXPECT_EQ(input_error_of([] {
                  cli::prepare_sweep({"spec", "--jobs", "0"}, std::string("{}"));
              }),
              "--jobs must be between 1 and 1024 (got 0)");
    EXPECT_EQ(input_error_of([] {
                  cli::prepare_sweep({"spec", "--frobnicate"}, std::string("{}"));
              }),
              "The following argument was not expected: --frobnicate");
    const cli::PreparedSweep target =
        cli::prepare_sweep({"spec", "--target-top1", "75", "--jobs", "3"}, std::string(R"({"nodes": [1, 2]})"));
    EXPECT_EQ(target.spec.combinations(), 2u);
    EXPECT_EQ(target.spec.target_top1_percent, 75);
    EXPECT_EQ(target.jobs, 3);
}

TEST(SubcommandOptions, ListWhatHelpListsWithTheirDefaults) {
    auto find = [](const std::vector<cli::OptionInfo>& options, const std::string& name) {
        for (const cli::OptionInfo& o : options) {
            if (o.name == name) return o;
        }
        ADD_FAILURE() << name << " is not listed";
        return cli::OptionInfo{};
    };
    const auto predict = cli::subcommand_options("predict");
    EXPECT_EQ(find(predict, "instance").default_text, "p5.48xlarge");
    EXPECT_FALSE(find(predict, "instance").flag);
    EXPECT_TRUE(find(predict, "json").flag);
    EXPECT_TRUE(find(predict, "ps-colocated").flag);
    EXPECT_TRUE(find(predict, "catalog").repeatable);
    EXPECT_FALSE(find(predict, "nodes").repeatable);
    EXPECT_EQ(find(predict, "gpus-per-node").default_text, "") << "a sentinel default is not shown";
    for (const cli::OptionInfo& o : predict) {
        EXPECT_NE(o.name, "help");
        EXPECT_NE(o.name, "help-all");
    }
    const auto sweep = cli::subcommand_options("sweep");
    EXPECT_TRUE(find(sweep, "spec").positional);
    EXPECT_TRUE(find(sweep, "spec").required);
    EXPECT_TRUE(find(cli::subcommand_options("plan"), "nodes").repeatable);
    EXPECT_EQ(input_error_of([] { cli::subcommand_options("forecast"); }), "unknown subcommand 'forecast'");
}

TEST(DescribeError, GivesMainsExitCodeLabelAndOneLineMessage) {
    auto describe = [](auto error) { return cli::describe_error(std::make_exception_ptr(error)); };
    const cli::ErrorReport input = describe(InputError("bad\nvalue"));
    EXPECT_EQ(input.exit_code, 2);
    EXPECT_EQ(input.label, "error: ");
    EXPECT_EQ(input.message, "bad\\nvalue");
    EXPECT_EQ(describe(InfeasibleError("no fit")).exit_code, 2);
    const cli::ErrorReport run = describe(RunError("rank 1 died\ntail"));
    EXPECT_EQ(run.exit_code, 1);
    EXPECT_EQ(run.message, "rank 1 died\ntail");
    EXPECT_EQ(describe(cli::NoAnswer("none")).exit_code, 3);
    EXPECT_EQ(describe(cli::ReaderGone()).exit_code, 0);
    EXPECT_EQ(describe(std::logic_error("oops")).label, "internal error (a bug; please report): ");
}

}  // namespace
}  // namespace epochcast::testing
