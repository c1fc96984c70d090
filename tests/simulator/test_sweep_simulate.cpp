// `epochcast sweep --simulate`: every row from a SimGrid run (close to the closed form, not equal
// to it), and two MPI ranks sharing a simulated sweep write what one process writes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

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

// Issue 59, item 2: `sweep --simulate` checked SIGTERM, SIGINT and SIGHUP only between rows, and a
// row can take minutes (under `timeout 60` one ran on for 12). The signal now stops the simulation
// in flight (8 nodes pushing to 1,000 parameter servers: about 20 s here), and says so.
TEST(SweepSimulate, ASignalStopsTheSimulationInFlight) {
    TempFile spec(R"({"instance": "p3.16xlarge", "nodes": 8, "strategy": "ps", "ps_instance": "c5.18xlarge",
                      "ps_nodes": [1000, 1001]})");
    const std::string output = spec.path() + ".csv";
    const std::string err_path = spec.path() + ".stderr";
    const pid_t child = ::fork();
    if (child == 0) {
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(err, 2);
        ::execl(EPOCHCAST_CLI_PATH, EPOCHCAST_CLI_PATH, "sweep", spec.path().c_str(), "--simulate", "-o",
                output.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    // The signal goes once the first simulation's process runs (a child of one of the sweep's
    // threads): the sweep is then past its start-up and inside a row, however loaded the machine.
    const std::string partial = output + ".partial." + std::to_string(child);
    auto simulating = [child] {
        std::error_code ignored;
        const std::filesystem::path tasks = "/proc/" + std::to_string(child) + "/task";
        for (const auto& task : std::filesystem::directory_iterator(tasks, ignored)) {
            if (!read_text((task.path() / "children").string()).empty()) return true;
        }
        return false;
    };
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < give_up && !simulating()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const bool started = simulating();
    ::kill(child, SIGTERM);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(started) << "no simulation started";
    const std::string err = read_text(err_path);
    std::filesystem::remove(err_path);
    ASSERT_TRUE(WIFEXITED(status)) << err;
    EXPECT_EQ(WEXITSTATUS(status), 1) << err;
    EXPECT_NE(err.find("interrupted by SIGTERM: 0 of 2 rows written"), std::string::npos) << err;
    EXPECT_NE(err.find("; the simulation in flight was stopped"), std::string::npos) << err;
    const std::string rows = read_text(output);
    std::filesystem::remove(output);
    EXPECT_NE(rows.find("# interrupted: 0 of 2 rows written"), std::string::npos) << rows;
    EXPECT_FALSE(std::filesystem::exists(partial));
}

// Issue 59, item 2, its estimate: `sweep --simulate` started with no estimate of its work, however
// many rows and iterations it was given. This process's rows are estimated as simulate estimates
// one run, and a sweep estimated past simulate's limit is refused before any row, writing nothing.
TEST(SweepSimulate, ASweepEstimatedPastAnHourIsRefusedBeforeAnyRow) {
    // Each row alone within the hour (about 30 and 45 minutes), the two together past it.
    TempFile spec(R"({"instance": "p3.16xlarge", "nodes": [12, 16], "batch_per_gpu": 64})");
    const std::string output = spec.path() + ".csv";
    const ProcessResult r = run_epochcast("sweep " + spec.path() + " --simulate --iterations 250000 -o " + output);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("epochcast: error: sweep --simulate would run for more than ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(" rows): give fewer --iterations or combinations, spread the rows over mpirun ranks, or "
                         "sweep without --simulate\n"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(output));
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
