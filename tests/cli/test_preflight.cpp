// The checks `epochcast run` makes of other hosts before it starts ranks there
// (cli/preflight.hpp), against small scripts standing in for ssh and srun: an unreachable host, a
// host without epochcast-train or without the shared folder, and a host that never answers are
// each named with their problem, within the deadline.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/preflight.hpp"

namespace epochcast {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class Preflight : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ =
            std::filesystem::temp_directory_path() / ("epochcast-preflight-" + std::to_string(::getpid()) + "-" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(dir_ / "shared");
        // The trainer the hosts must have: any executable file.
        write_script("epochcast-train", "exit 0\n");
        // A remote shell that "reaches" any host by running the command here (`rsh HOST COMMAND`),
        // except hosts whose name starts with "down", which it cannot reach, and "slow", which hang.
        write_script("rsh",
                     "case \"$1\" in down*) echo \"rsh: connect to host $1: No route to host\" >&2; exit 255;;"
                     " slow*) exec sleep 30;; esac\nexec sh -c \"$2\"\n");
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::string path(const std::string& name) const { return (dir_ / name).string(); }
    void write_script(const std::string& name, const std::string& body) const {
        std::ofstream(path(name)) << "#!/bin/sh\n" << body;
        ::chmod(path(name).c_str(), 0755);
    }
    cli::HostRequirements needs() const { return {path("epochcast-train"), {path("shared")}}; }

    std::filesystem::path dir_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST_F(Preflight, HostsThatHaveWhatTheRunNeedsPass) {
    EXPECT_TRUE(cli::check_hosts_by_shell({"node1", "node2"}, needs(), {path("rsh")}).empty());
}

TEST_F(Preflight, EachProblemIsNamedWithItsHost) {
    cli::HostRequirements missing = needs();
    missing.train_program = path("no-such-trainer");
    std::vector<cli::HostProblem> problems = cli::check_hosts_by_shell({"node1", "down-7"}, missing, {path("rsh")});
    ASSERT_EQ(problems.size(), 2U);
    EXPECT_EQ(problems[0].host, "node1");
    EXPECT_EQ(problems[0].problem, "has no executable epochcast-train at " + path("no-such-trainer") +
                                       " (every host runs the same path: install it there, or build on a shared "
                                       "filesystem)");
    EXPECT_EQ(problems[1].host, "down-7");
    EXPECT_EQ(problems[1].problem, "is unreachable (" + path("rsh") +
                                       " exited with status 255: rsh: connect to host down-7: No route to host)");
    EXPECT_TRUE(contains(cli::describe_problems(problems), "host node1 has no executable epochcast-train at "));
    EXPECT_TRUE(contains(cli::describe_problems(problems), "; host down-7 is unreachable"));

    cli::HostRequirements unshared = needs();
    unshared.folders.push_back(path("not-mounted"));
    problems = cli::check_hosts_by_shell({"node1"}, unshared, {path("rsh")});
    ASSERT_EQ(problems.size(), 1U);
    EXPECT_TRUE(contains(problems[0].problem, "cannot see the folder " + path("not-mounted") + " ("))
        << problems[0].problem;
    EXPECT_TRUE(contains(problems[0].problem, "--shared-dir")) << problems[0].problem;
}

TEST_F(Preflight, AHostThatNeverAnswersIsNamedAtTheDeadline) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<cli::HostProblem> problems =
        cli::check_hosts_by_shell({"slow-1", "node2", "slow-2"}, needs(), {path("rsh")}, 1.0);
    EXPECT_LT(seconds_since(start), 4.0);
    ASSERT_EQ(problems.size(), 2U);
    EXPECT_EQ(problems[0].host, "slow-1");
    EXPECT_EQ(problems[0].problem, "did not answer within 1 s (" + path("rsh") + ")");
    EXPECT_EQ(problems[1].host, "slow-2");
}

TEST_F(Preflight, ThisHostIsNotAskedAndAMissingShellIsNamed) {
    // The shell fails for every host; only this host's names are given, so it is never started.
    EXPECT_TRUE(
        cli::check_hosts_by_shell({"localhost", "127.0.0.1", cli::this_host_name()}, needs(), {path("no-such-shell")})
            .empty());
    try {
        cli::check_hosts_by_shell({"node1"}, needs(), {path("no-such-shell")});
        FAIL() << "a missing remote shell must be an error";
    } catch (const std::exception& error) {
        EXPECT_TRUE(contains(error.what(), "which is not installed (install openssh-client")) << error.what();
    }
}

TEST_F(Preflight, RemoteShellFollowsOpenMpisSetting) {
    ::unsetenv("OMPI_MCA_plm_rsh_agent");
    EXPECT_EQ(cli::remote_shell(), std::vector<std::string>{"ssh"});
    ::setenv("OMPI_MCA_plm_rsh_agent", ("no-such-agent -q : " + path("rsh") + " -p 2222").c_str(), 1);
    EXPECT_EQ(cli::remote_shell(), (std::vector<std::string>{path("rsh"), "-p", "2222"}));
    ::unsetenv("OMPI_MCA_plm_rsh_agent");
}

TEST_F(Preflight, SrunNodesReportByHostnameAndSilentOnesAreNamed) {
    // srun runs the check once per node; the nodes answer with their host names.
    write_script("srun",
                 "echo 'EPOCHCAST-CHECK gpu01.cluster ok'\necho 'EPOCHCAST-CHECK gpu02 program'\n"
                 "echo 'srun: error: gpu03: task 2: Exited with exit code 1' >&2\nexit 1\n");
    const std::vector<cli::HostProblem> problems =
        cli::check_hosts_by_srun({"gpu01", "gpu02", "gpu03"}, needs(), path("srun"));
    ASSERT_EQ(problems.size(), 2U);
    EXPECT_EQ(problems[0].host, "gpu02");
    EXPECT_TRUE(contains(problems[0].problem, "has no executable epochcast-train")) << problems[0].problem;
    EXPECT_EQ(problems[1].host, "gpu03");
    EXPECT_EQ(
        problems[1].problem,
        "did not report back through srun within 20 s (srun: srun: error: gpu03: task 2: Exited with exit code 1)");
}

}  // namespace
}  // namespace epochcast
