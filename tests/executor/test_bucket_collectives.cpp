// executor/cpu/bucket_collectives.hpp under mpirun: tests/executor/programs/bucket_collectives_check
// runs every collective on every rank and checks the sums (exact bits on two ranks, within the
// rounding of n - 1 additions beyond) and that every rank holds the same bits.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_process.hpp"

namespace epochcast {
namespace {

testing::ProcessResult run_check(int ranks, const std::string& algorithm) {
    return testing::run_command(testing::mpirun_command(ranks) + " --timeout 120 '" +
                                testing::test_program(EPOCHCAST_COLLECTIVES_CHECK_PATH) + "' " + algorithm);
}

class RingCollectives : public ::testing::TestWithParam<int> {};

TEST_P(RingCollectives, SumAndGatherEveryBucketAlikeOnEveryRank) {
    const testing::ProcessResult result = run_check(GetParam(), "ring");
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    EXPECT_NE(result.out.find("0 failed checks"), std::string::npos) << result.out << result.err;
}

INSTANTIATE_TEST_SUITE_P(Ranks, RingCollectives, ::testing::Values(1, 2, 3, 4));

TEST(MpiCollectives, AllReduceSumsEveryBucketAlikeOnEveryRank) {
    for (const int ranks : {2, 3}) {
        const testing::ProcessResult result = run_check(ranks, "mpi");
        EXPECT_EQ(result.exit_code, 0) << ranks << " ranks: " << result.out << result.err;
        EXPECT_NE(result.out.find("0 failed checks"), std::string::npos) << result.out << result.err;
    }
}

}  // namespace
}  // namespace epochcast
