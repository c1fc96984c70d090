// The checks `epochcast run` makes of other hosts before it starts ranks there
// (cli/preflight.hpp), against small scripts standing in for ssh and srun: an unreachable host, a
// host without epochcast-train or without the shared folder, and a host that never answers are
// each named with their problem, within the deadline.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/preflight.hpp"
#include "model/errors.hpp"

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

// Issue 44: srun refused the check itself (SLURM_JOB_ID names a job that has ended): no node
// answered, and each was named as silent for 20 s, exit 1; it is Slurm's refusal, bad input.
TEST_F(Preflight, SrunRefusingTheCheckIsBadInputNamingWhy) {
    write_script("srun",
                 "echo 'srun: error: Unable to confirm allocation for job 99: Invalid job id specified' >&2\n"
                 "echo 'srun: Check SLURM_JOB_ID environment variable. Expired or invalid job 99' >&2\nexit 1\n");
    try {
        cli::check_hosts_by_srun({"gpu01", "gpu02"}, needs(), path("srun"));
        ADD_FAILURE() << "no InputError";
    } catch (const InputError& error) {
        EXPECT_EQ(std::string(error.what()),
                  "Slurm refused the hosts' check: Unable to confirm allocation for job 99: Invalid job id specified "
                  "(run inside a Slurm allocation that is still there: salloc, or an sbatch script)");
    }
}

/// Sets this process's soft limit of open files for its lifetime.
class OpenFileLimit {
public:
    explicit OpenFileLimit(rlim_t files) {
        ::getrlimit(RLIMIT_NOFILE, &saved_);
        rlimit lowered = saved_;
        lowered.rlim_cur = std::min(files, saved_.rlim_max);
        ::setrlimit(RLIMIT_NOFILE, &lowered);
    }
    ~OpenFileLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
    OpenFileLimit(const OpenFileLimit&) = delete;
    OpenFileLimit& operator=(const OpenFileLimit&) = delete;

private:
    rlimit saved_{};
};

/// The descriptors this process has open.
long open_descriptors() {
    long open = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++open;
    return open;
}

// Issue 42, item 12: `run` with 1,100 hosts under `ulimit -n 1024` started every check at once,
// ran out of file descriptors (exit 1) and left 1,018 ssh processes behind. The checks run a few at
// a time within the limit, every host is answered for, and no process is left running or unreaped.
TEST_F(Preflight, MoreHostsThanOpenFilesAreCheckedAFewAtATimeAndEveryCheckIsReaped) {
    std::vector<std::string> hosts;
    std::vector<std::string> down;
    for (int i = 0; i < 300; ++i) {
        hosts.push_back((i % 50 == 7 ? "down-" : "node-") + std::to_string(i));
        if (i % 50 == 7) down.push_back(hosts.back());
    }
    std::vector<cli::HostProblem> problems;
    {
        const OpenFileLimit limit(128);
        problems = cli::check_hosts_by_shell(hosts, needs(), {path("rsh")});
    }
    ASSERT_EQ(problems.size(), down.size());
    for (std::size_t i = 0; i < down.size(); ++i) {
        EXPECT_EQ(problems[i].host, down[i]);
        EXPECT_TRUE(contains(problems[i].problem, "is unreachable (")) << problems[i].problem;
    }
    errno = 0;
    EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1) << "a check's process is left running or unreaped";
    EXPECT_EQ(errno, ECHILD);

    // Too few descriptors for even one check: bad input naming the limit, nothing started.
    try {
        const OpenFileLimit limit(static_cast<rlim_t>(open_descriptors() + 4));
        cli::check_hosts_by_shell(hosts, needs(), {path("rsh")});
        ADD_FAILURE() << "checked with no descriptor to spare";
    } catch (const InputError& error) {
        EXPECT_TRUE(contains(error.what(), "cannot check the other hosts: this process may open ")) << error.what();
        EXPECT_TRUE(contains(error.what(), "(ulimit -n)")) << error.what();
    }
    errno = 0;
    EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD);
}

// The problems of a thousand hosts are one line that names the first ten and counts the rest.
TEST(PreflightProblems, ManyAreCountedBeyondTheFirstTen) {
    std::vector<cli::HostProblem> problems;
    for (int i = 0; i < 1100; ++i) problems.push_back({"node" + std::to_string(i), "is unreachable (ssh)"});
    const std::string line = cli::describe_problems(problems);
    EXPECT_TRUE(contains(line, "host node0 is unreachable (ssh); host node1 ")) << line;
    EXPECT_TRUE(contains(line, "; host node9 is unreachable (ssh); and 1,090 more hosts (node10, node11, ")) << line;
    EXPECT_TRUE(contains(line, "node19, ...)")) << line;
    EXPECT_FALSE(contains(line, "node20")) << line;
}

}  // namespace
}  // namespace epochcast
