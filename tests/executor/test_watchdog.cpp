// `epochcast run` over the real epochcast-train under mpirun: a rank stopped with SIGSTOP (a rank
// that stops without dying, as one hung in a collective does) is found by the watchdog, named
// with its host, and the whole job is killed within the deadline + 10 s, leaving no process
// behind; the trainer's bad input comes out as exit 2 with its message.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_process.hpp"
#include "tests/support/temp_folder.hpp"

namespace epochcast {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string kSmallRun =
    " --model resnet18 --image-size 32 --classes 4 --precision fp32 --threads 1"
    " --synthetic-images 4096 --seed 7 --batch-per-gpu 4";

/// `epochcast run --np RANKS` with the real trainer and mpirun, then `flags` (no all-reduce sweep:
/// these tests are about the training's ranks).
std::string epochcast_run(int ranks, const std::string& flags) {
    return std::string("EPOCHCAST_TRAIN='") + testing::test_program(EPOCHCAST_TRAIN_PATH) + "' '" +
           testing::test_program(EPOCHCAST_CLI_PATH) + "' run --np " + std::to_string(ranks) +
           " --no-network-test --mpirun '" + testing::test_program(EPOCHCAST_MPIEXEC) + "'" + flags;
}

/// A shell command running in the background with its output in files of a folder of its own.
class Background {
public:
    explicit Background(const std::string& command)
        : folder_(std::filesystem::temp_directory_path() / ("epochcast-watchdog-" + std::to_string(::getpid()))) {
        std::filesystem::create_directories(folder_);
        const std::string redirected = command + " > '" + out_path() + "' 2> '" + err_path() + "' < /dev/null";
        pid_ = ::fork();
        if (pid_ == 0) {
            ::execl("/bin/sh", "sh", "-c", redirected.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
    }
    ~Background() {
        if (pid_ > 0 && !status_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        std::error_code ignored;
        std::filesystem::remove_all(folder_, ignored);
    }
    Background(const Background&) = delete;
    Background& operator=(const Background&) = delete;

    /// The exit code once it ended within `limit`, else nullopt.
    std::optional<int> wait(std::chrono::duration<double> limit) {
        const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(limit);
        while (!status_ && Clock::now() < until) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            else std::this_thread::sleep_for(50ms);
        }
        return status_;
    }
    std::string out() const { return testing::read_text(out_path()); }
    std::string err() const { return testing::read_text(err_path()); }

private:
    std::string out_path() const { return (folder_ / "out").string(); }
    std::string err_path() const { return (folder_ / "err").string(); }
    std::filesystem::path folder_;
    pid_t pid_ = -1;
    std::optional<int> status_;
};

/// Polls `ready` every 100 ms for up to `limit`; true once it held.
template <typename Ready>
bool eventually(std::chrono::duration<double> limit, Ready ready) {
    const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(limit);
    while (Clock::now() < until) {
        if (ready()) return true;
        std::this_thread::sleep_for(100ms);
    }
    return ready();
}

/// Whether process `pid` still exists as more than a zombie.
bool alive(pid_t pid) {
    const std::string stat = testing::read_text("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t close = stat.rfind(')');
    return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

std::string hostname() {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    return name;
}

TEST(Watchdog, AStoppedRankIsReportedWithItsHostAndTheJobKilledWithinTheDeadlinePlusTenSeconds) {
    // run's TMPDIR, where its folder and mpirun's (with Open MPI's session folder) go.
    const testing::TempFolder temporary;
    Background run("TMPDIR='" + temporary.path.string() + "' " +
                   epochcast_run(2, " --watchdog 3" + kSmallRun + " --lr 0.05 --steps 1000000"));
    // The progress folder `run` names on its second line, then rank 1's report after two steps.
    std::string folder;
    ASSERT_TRUE(eventually(60s,
                           [&] {
                               const std::string out = run.out();
                               const std::size_t at = out.find("progress reports in ");
                               if (at == std::string::npos || out.find(';', at) == std::string::npos) return false;
                               folder = out.substr(at + 20, out.find(';', at) - at - 20);
                               return true;
                           }))
        << run.out() << run.err();
    nlohmann::json report;
    ASSERT_TRUE(eventually(180s,
                           [&] {
                               report =
                                   nlohmann::json::parse(testing::read_text(folder + "/rank-1.json"), nullptr, false);
                               return report.is_object() && report.value("steps", 0) >= 2;
                           }))
        << run.out() << run.err();
    const auto pid = static_cast<pid_t>(report.at("pid").get<int>());
    const nlohmann::json rank0 = nlohmann::json::parse(testing::read_text(folder + "/rank-0.json"), nullptr, false);
    const auto pid0 = static_cast<pid_t>(rank0.value("pid", 0));
    ASSERT_GT(pid, 0);
    ASSERT_EQ(::kill(pid, SIGSTOP), 0);
    const Clock::time_point stopped = Clock::now();
    const std::optional<int> code = run.wait(3s + 10s + 20s);
    const double elapsed = seconds_since(stopped);
    // Nothing left stopped or orphaned, whatever happened: the stopped rank is continued and killed.
    const bool rank_left = alive(pid) || (pid0 > 0 && alive(pid0));
    if (alive(pid)) ::kill(pid, SIGCONT), ::kill(pid, SIGKILL);
    ASSERT_TRUE(code.has_value()) << "epochcast run did not end after a rank stopped: " << run.out() << run.err();
    EXPECT_EQ(*code, 1) << run.err();
    EXPECT_LE(elapsed, 3 + 10.0) << run.err();
    EXPECT_TRUE(contains(run.err(), "rank 1 on host " + hostname() + " made no progress for")) << run.err();
    EXPECT_TRUE(contains(run.err(), "is stopped")) << run.err();
    EXPECT_TRUE(contains(run.err(), "the job was killed")) << run.err();
    EXPECT_FALSE(rank_left) << "a rank outlived the job";
    EXPECT_FALSE(std::filesystem::exists(folder)) << folder;
    // Nothing left in the temporary folder: neither run's folders nor Open MPI's (issue 44).
    std::string left;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(temporary.path)) {
        left += entry.path().string() + "\n";
    }
    EXPECT_EQ(left, "");
}

// The case: the trainer's exit 2 (bad input) became `run`'s exit 1.
TEST(Watchdog, TheTrainersBadInputIsRunsExitTwoWithTheTrainersMessage) {
    const testing::ProcessResult r = testing::run_command(epochcast_run(2, kSmallRun + " --steps 2 --lr 0"));
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "--lr must be a positive finite number")) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
}

}  // namespace
}  // namespace epochcast
