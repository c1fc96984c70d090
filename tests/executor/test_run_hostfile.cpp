// `epochcast run` with a hostfile, over the real epochcast-train and mpirun: the case of a
// hostfile `localhost slots=2` runs end to end (the all-reduce sweep, the training, the hosts
// measured or the instance named), and the trace records 2 workers, the layout, the instance,
// the launcher line and the network fit, ready for `calibrate` without editing.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_process.hpp"
#include "tests/support/local_cpu_catalog.hpp"
#include "tests/support/processes.hpp"
#include "tests/support/temp_folder.hpp"

namespace epochcast {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string kSmallRun =
    " --model resnet18 --image-size 32 --classes 4 --precision fp32 --threads 1 --synthetic-images 4096"
    " --seed 3 --batch-per-gpu 4 --steps 4 --network-test-max-mib 0.25";

/// `epochcast run --hostfile FILE` with the real trainer and mpirun, then `flags`.
testing::ProcessResult run_hostfile(const std::string& hostfile, const std::string& flags) {
    return testing::run_command(std::string("EPOCHCAST_TRAIN='") + testing::test_program(EPOCHCAST_TRAIN_PATH) + "' '" +
                                testing::test_program(EPOCHCAST_CLI_PATH) + "' run --hostfile '" + hostfile +
                                "' --mpirun '" + testing::test_program(EPOCHCAST_MPIEXEC) + "'" + flags);
}

TEST(RunHostfile, LocalhostWithTwoSlotsRecordsTwoWorkersTheInstanceAndTheNetwork) {
    testing::TempFolder folder;
    std::ofstream(folder / "hosts") << "localhost slots=2\n";
    // A catalog naming this host's kind of machine: the instance the user says the hosts are.
    nlohmann::json lab = testing::local_cpu_catalog_json();
    lab["gpus"][0]["name"] = "lab-cpu";
    lab["gpus"][0]["kind"] = "cpu";
    lab["instances"][0]["name"] = "lab-node";
    lab["instances"][0]["gpu"] = "lab-cpu";
    lab["instances"][0]["gpus"] = 2;
    std::ofstream(folder / "lab.json") << lab.dump();
    const std::string trace_path = folder / "run.json";
    const testing::ProcessResult r =
        run_hostfile(folder / "hosts", " --np 2 --instance lab-node --catalog '" + (folder / "lab.json") +
                                           "' --trace-out '" + trace_path + "'" + kSmallRun);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "--host localhost:2 --map-by ppr:2:node")) << r.out;
    EXPECT_TRUE(contains(r.out, "beside measured, lab-node x 1 node x 2 ranks x 1 thread")) << r.out;
    EXPECT_TRUE(contains(r.out, "95% band of the prediction")) << r.out;
    EXPECT_TRUE(contains(r.out, "All-reduce across the ranks, measured beside the catalog's lab-node")) << r.out;

    const nlohmann::json trace = nlohmann::json::parse(testing::read_text(trace_path));
    const nlohmann::json& run = trace["runs"][0];
    EXPECT_EQ(run["instance"], "lab-node");
    EXPECT_EQ(run["nodes"], 1);
    EXPECT_EQ(run["gpus_per_node"], 2);
    EXPECT_EQ(run["configuration"]["ranks"], 2);
    ASSERT_EQ(run["layout"].size(), 1U);
    EXPECT_EQ(run["layout"][0]["workers"], 2);
    EXPECT_EQ(run["layout"][0]["ranks"], nlohmann::json::array({0, 1}));
    EXPECT_EQ(run["launch"]["launcher"], "mpirun");
    EXPECT_EQ(run["launch"]["hosts"], nlohmann::json::array({"localhost"}));
    EXPECT_EQ(run["launch"]["ranks_per_node"], 2);
    ASSERT_EQ(trace["networks"].size(), 1U);
    EXPECT_EQ(trace["networks"][0]["instance"], "lab-node");
    EXPECT_EQ(trace["networks"][0]["ranks"], 2);
    EXPECT_GT(trace["networks"][0]["bus_bandwidth_GBps"].get<double>(), 0);
    // 8 bytes to 256 KiB, doubling: 16 sizes.
    EXPECT_EQ(trace["networks"][0]["samples"].size(), 16U);

    // The loop closes with no editing: calibrate reads the trace with the same catalog.
    const testing::ProcessResult calibrated = testing::run_command(
        std::string("'") + testing::test_program(EPOCHCAST_CLI_PATH) + "' calibrate '" + trace_path + "' --catalog '" +
        (folder / "lab.json") + "' -o '" + (folder / "cal.json") + "'");
    EXPECT_EQ(calibrated.exit_code, 0) << calibrated.out << calibrated.err;
}

// Without --instance the hosts are measured under the same line, and each node's peaks printed.
TEST(RunHostfile, WithoutAnInstanceEachNodesPeaksArePrinted) {
    testing::TempFolder folder;
    std::ofstream(folder / "hosts") << "localhost slots=2\n";
    const testing::ProcessResult r = run_hostfile(folder / "hosts", " --no-network-test" + kSmallRun);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "Measured peaks per node")) << r.out;
    EXPECT_TRUE(contains(r.out, "beside measured, local-cpu x 1 node x 2 ranks")) << r.out;
    EXPECT_FALSE(contains(r.out, "All-reduce across the ranks")) << r.out;
}

// Issue 42, item 11: resuming a checkpoint whose run had finished exited 1, "epochcast-train
// finished but wrote no trace". The trainer's one line comes through: exit 2, nothing to resume.
TEST(RunHostfile, ResumingAFinishedCheckpointIsBadInputNamingIt) {
    testing::TempFolder folder;
    std::ofstream(folder / "hosts") << "localhost slots=1\n";
    const std::string checkpoint = folder / "ck";
    std::string train = testing::test_program(EPOCHCAST_TRAIN_PATH);
    train.insert(0, 1, '\'');
    train += "' --model resnet18 --image-size 32 --classes 4 --synthetic-images 4096 --seed 3 --batch-per-gpu 4";
    train += " --steps 4 --checkpoint-dir '" + checkpoint + "'";
    const testing::ProcessResult first = testing::run_command(train);
    ASSERT_EQ(first.exit_code, 0) << first.err;
    const testing::ProcessResult r =
        run_hostfile(folder / "hosts", kSmallRun + " --resume --checkpoint-dir '" + checkpoint + "'");
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "nothing to resume: the checkpoint in '" + checkpoint + "' has finished all 4 steps"))
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(contains(r.err, "wrote no trace")) << r.err;
}

// Issue 42, item 8: `kill -KILL` of run left mpirun and the ranks training. mpirun gets SIGTERM
// when run dies, and ends its ranks. (Open MPI 4.1 may also end the job when its output's pipe
// breaks at the next step's row; FakePrograms.KillingRunEndsTheLauncher, whose launcher writes
// nothing, is the test that fails without the death signal.)
TEST(RunHostfile, KillingRunEndsMpirunAndTheRanks) {
    testing::TempFolder folder;
    std::ofstream(folder / "hosts") << "localhost slots=1\n";
    const std::string train = "EPOCHCAST_TRAIN=" + testing::test_program(EPOCHCAST_TRAIN_PATH);
    const pid_t run = testing::start_process({"/usr/bin/env",
                                              train,
                                              testing::test_program(EPOCHCAST_CLI_PATH),
                                              "run",
                                              "--hostfile",
                                              folder / "hosts",
                                              "--mpirun",
                                              testing::test_program(EPOCHCAST_MPIEXEC),
                                              "--shared-dir",
                                              folder.path.string(),
                                              "--model",
                                              "resnet18",
                                              "--image-size",
                                              "32",
                                              "--classes",
                                              "4",
                                              "--synthetic-images",
                                              "4096",
                                              "--batch-per-gpu",
                                              "2",
                                              "--steps",
                                              "1000000"},
                                             folder / "out", folder / "err");
    ASSERT_GT(run, 0);
    std::vector<pid_t> children;
    const bool training = testing::wait_until(
        [&] {
            children = testing::descendants(run);
            return std::any_of(children.begin(), children.end(), [](pid_t pid) {  // a rank
                return testing::command_line_of(pid).rfind(testing::test_program(EPOCHCAST_TRAIN_PATH) + " ", 0) == 0;
            });
        },
        std::chrono::seconds(120));
    ::kill(run, SIGKILL);
    ::waitpid(run, nullptr, 0);
    ASSERT_TRUE(training) << testing::read_text(folder / "err");
    EXPECT_TRUE(testing::all_gone(children, std::chrono::seconds(60)));
}

}  // namespace
}  // namespace epochcast
