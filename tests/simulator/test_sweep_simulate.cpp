// `epochcast sweep --simulate`: every row from a SimGrid run (close to the closed form, not equal
// to it), and two MPI ranks sharing a simulated sweep write what one process writes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_process.hpp"
#include "tests/support/temp_file.hpp"

namespace epochcast::testing {
namespace {

const char* kSpec = R"({"instance": "p3.16xlarge", "nodes": [1, 2, 4], "batch_per_gpu": [128, 512]})";

TEST(SweepSimulate, RowsComeFromTheSimulation) {
    TempFile spec(kSpec);
    TempFile simulated("", ".json");
    TempFile analytic("", ".json");
    ASSERT_EQ(run_epochcast("sweep " + spec.path() + " --simulate --iterations 3 -o " + simulated.path()).exit_code, 0);
    ASSERT_EQ(run_epochcast("sweep " + spec.path() + " -o " + analytic.path()).exit_code, 0);
    const nlohmann::json s = nlohmann::json::parse(read_text(simulated.path()));
    const nlohmann::json a = nlohmann::json::parse(read_text(analytic.path()));
    ASSERT_EQ(s["rows"].size(), 6u);
    int compared = 0;
    for (std::size_t i = 0; i < 6; ++i) {
        ASSERT_EQ(s["rows"][i]["feasible"], a["rows"][i]["feasible"]);
        if (!s["rows"][i]["feasible"].get<bool>()) {
            EXPECT_EQ(s["rows"][i]["reason"], a["rows"][i]["reason"]);
            continue;
        }
        const double sim = s["rows"][i]["throughput_images_per_s"].get<double>();
        const double closed = a["rows"][i]["throughput_images_per_s"].get<double>();
        EXPECT_NEAR(sim / closed, 1.0, 0.15) << "row " << i;
        EXPECT_NE(sim, closed) << "row " << i << " was not simulated";
        ++compared;
    }
    EXPECT_EQ(compared, 3);
}

#ifdef EPOCHCAST_MPIEXEC
TEST(SweepSimulate, TwoRanksShareTheRowsAndWriteWhatOneProcessWrites) {
    TempFile spec(kSpec);
    TempFile one("", ".csv");
    TempFile two("", ".csv");
    ASSERT_EQ(run_epochcast("sweep " + spec.path() + " --simulate --iterations 3 -o " + one.path()).exit_code, 0);
    const ProcessResult r = run_command(mpirun_command(2) + " '" + EPOCHCAST_CLI_PATH + "' sweep " + spec.path() +
                                        " --simulate --iterations 3 -o " + two.path());
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("6 rows (3 feasible, 3 not)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("over 2 ranks"), std::string::npos) << r.out;
    EXPECT_EQ(read_text(one.path()), read_text(two.path()));
}
#endif

}  // namespace
}  // namespace epochcast::testing
