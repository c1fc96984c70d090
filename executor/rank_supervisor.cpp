#include "executor/rank_supervisor.hpp"

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>

#include "executor/progress.hpp"

namespace epochcast {
namespace {

/// The signals a launcher sends to stop, suspend or resume a job, passed on to the rank.
constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT, SIGTSTP};

volatile sig_atomic_t g_rank_pid = 0;
/// Set when a signal that ends a job (not SIGCONT or SIGTSTP) was passed on to the rank.
volatile sig_atomic_t g_stop_passed_on = 0;

void pass_on(int signal) {
    const int saved = errno;
    if (signal != SIGCONT && signal != SIGTSTP) g_stop_passed_on = 1;
    if (g_rank_pid > 0) ::kill(static_cast<pid_t>(g_rank_pid), signal);
    errno = saved;
}

/// The supervisor's end: the rank's exit status, or its signal raised on ourselves.
[[noreturn]] void end_as(int status) {
    if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
    const int signal = WTERMSIG(status);
    const rlimit no_core = {0, 0};  // the rank dumped its core, if any: not a second one
    ::setrlimit(RLIMIT_CORE, &no_core);
    std::signal(signal, SIG_DFL);
    sigset_t just_this;
    sigemptyset(&just_this);
    sigaddset(&just_this, signal);
    ::sigprocmask(SIG_UNBLOCK, &just_this, nullptr);
    ::raise(signal);
    ::_exit(128 + signal);  // a signal that does not end a process by default
}

}  // namespace

bool started_by_launcher() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
        if (std::getenv(name) != nullptr) return true;
    }
    return false;
}

int launcher_rank() {
    for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
        if (const char* value = std::getenv(name)) return std::atoi(value);
    }
    return 0;
}

void supervise_this_rank() {
    const char* directory = std::getenv(kProgressDirVariable);
    if (directory == nullptr || *directory == '\0' || !started_by_launcher()) return;
    const pid_t supervisor = ::getpid();
    const pid_t child = ::fork();
    if (child < 0) return;  // no supervisor: the rank runs as before, unnamed if killed
    if (child == 0) {
        // The rank dies with its supervisor, also when the supervisor died before this line.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != supervisor) ::raise(SIGKILL);
        return;
    }
    g_rank_pid = child;
    struct sigaction forward = {};
    forward.sa_handler = pass_on;
    sigemptyset(&forward.sa_mask);
    for (const int signal : kForwarded) ::sigaction(signal, &forward, nullptr);
    int status = 0;
    while (::waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) ::_exit(1);
    }
    if (WIFSIGNALED(status) && !g_stop_passed_on) report_death(launcher_rank(), child, WTERMSIG(status));
    end_as(status);
}

}  // namespace epochcast
