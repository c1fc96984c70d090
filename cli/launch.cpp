#include "cli/launch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "model/errors.hpp"

namespace epochcast::cli {
namespace {

/// How long output is still read after the child ended (its own children may hold the pipe).
constexpr std::chrono::milliseconds kDrainAfterExit{1500};
/// How often the child is checked for having ended while it is quiet.
constexpr int kPollMilliseconds = 200;
/// Lines of output kept for error messages.
constexpr std::size_t kTailLines = 12;

bool is_executable_file(const std::string& path) {
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

/// The last kTailLines non-empty lines of `text`.
std::string last_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
    }
    std::string tail;
    const std::size_t first = lines.size() > kTailLines ? lines.size() - kTailLines : 0;
    for (std::size_t i = first; i < lines.size(); ++i) tail += lines[i] + "\n";
    return tail;
}

}  // namespace

std::vector<std::string> mpirun_argv(const LaunchRequest& r) {
    std::vector<std::string> argv = {r.mpirun, "-np", std::to_string(r.ranks)};
    if (r.root) argv.push_back("--allow-run-as-root");
    if (r.ranks > r.online_cores) argv.push_back("--oversubscribe");
    // Each rank on cores of its own when they go round (one per compute thread); otherwise no
    // binding, so that a rank's threads are not pinned to the one core Open MPI would give it.
    int threads = 1;
    if (const std::optional<std::string> given = flag_value(r.train_flags, "--threads")) {
        try {
            threads = std::max(1, std::stoi(*given));
        } catch (const std::exception&) {
            threads = r.online_cores + 1;  // epochcast-train will name the bad value; bind nothing
        }
    }
    if (static_cast<long>(r.ranks) * threads <= r.online_cores) {
        if (threads > 1) argv.insert(argv.end(), {"--map-by", "slot:PE=" + std::to_string(threads)});
        argv.insert(argv.end(), {"--bind-to", "core"});
    } else {
        argv.insert(argv.end(), {"--bind-to", "none"});
    }
    argv.push_back(r.train_program);
    argv.insert(argv.end(), r.train_flags.begin(), r.train_flags.end());
    if (r.ps_ranks > 0) argv.insert(argv.end(), {"--ps-ranks", std::to_string(r.ps_ranks)});
    if (!r.trace_out.empty() && !flag_value(r.train_flags, "--trace-out")) {
        argv.insert(argv.end(), {"--trace-out", r.trace_out});
    }
    return argv;
}

std::optional<std::string> flag_value(const std::vector<std::string>& flags, std::string_view name) {
    std::optional<std::string> value;
    const std::string with_equals = std::string(name) + "=";
    for (std::size_t i = 0; i < flags.size(); ++i) {
        if (flags[i] == name && i + 1 < flags.size()) {
            value = flags[++i];
        } else if (flags[i].rfind(with_equals, 0) == 0) {
            value = flags[i].substr(with_equals.size());
        }
    }
    return value;
}

std::optional<std::string> find_program(const std::string& program) {
    if (program.empty()) return std::nullopt;
    if (program.find('/') != std::string::npos) {
        if (is_executable_file(program)) return program;
        return std::nullopt;
    }
    const char* path = std::getenv("PATH");
    std::istringstream folders(path ? path : "");
    std::string folder;
    while (std::getline(folders, folder, ':')) {
        if (folder.empty()) folder = ".";
        const std::string candidate = folder + "/" + program;
        if (is_executable_file(candidate)) return candidate;
    }
    return std::nullopt;
}

std::string find_train_program() {
    if (const char* env = std::getenv("EPOCHCAST_TRAIN"); env && *env) {
        if (!is_executable_file(env)) {
            throw RunError(std::string("EPOCHCAST_TRAIN is '") + env + "', which is not an executable file");
        }
        return env;
    }
    std::error_code error;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
    const std::string beside = (error ? std::filesystem::path("epochcast-train")
                                      : self.parent_path() / "epochcast-train")
                                   .string();
    if (!is_executable_file(beside)) {
        throw RunError("epochcast-train not found at " + beside +
                       " (it is built beside epochcast when MPI and oneDNN are found; or set EPOCHCAST_TRAIN to its "
                       "path)");
    }
    return beside;
}

std::string ChildExit::describe() const {
    if (exited) return "exited with status " + std::to_string(code);
    return "was killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
}

ChildExit run_child(const std::vector<std::string>& argv, std::ostream* out, std::string* captured, bool merge_stderr) {
    if (argv.empty()) throw RunError("run_child: no program to start");
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw RunError(std::string("cannot create a pipe: ") + std::strerror(errno));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (out) out->flush();
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        throw RunError(std::string("cannot start ") + argv[0] + ": " + std::strerror(errno));
    }
    if (pid == 0) {
        ::dup2(fds[1], STDOUT_FILENO);
        if (merge_stderr) ::dup2(fds[1], STDERR_FILENO);
        ::execvp(args[0], args.data());
        const std::string message = std::string("cannot execute ") + argv[0] + ": " + std::strerror(errno) + "\n";
        [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, message.data(), message.size());
        ::_exit(127);
    }
    ::close(fds[1]);

    ChildExit result;
    std::string output;
    bool ended = false;
    int status = 0;
    std::chrono::steady_clock::time_point drain_until{};
    char buffer[4096];
    for (;;) {
        if (!ended && ::waitpid(pid, &status, WNOHANG) == pid) {
            ended = true;
            drain_until = std::chrono::steady_clock::now() + kDrainAfterExit;
        }
        if (ended && std::chrono::steady_clock::now() >= drain_until) break;
        pollfd readable{fds[0], POLLIN, 0};
        const int ready = ::poll(&readable, 1, kPollMilliseconds);
        if (ready < 0 && errno != EINTR) break;
        if (ready <= 0) continue;
        const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) break;  // end of output: every writer has closed it
        output.append(buffer, static_cast<std::size_t>(n));
        if (out) {
            out->write(buffer, n);
            out->flush();
        }
    }
    ::close(fds[0]);
    if (!ended) {
        // The output ended; the child is ending or has ended.
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    result.exited = WIFEXITED(status);
    result.code = result.exited ? WEXITSTATUS(status) : 0;
    result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    result.output_tail = last_lines(output);
    if (captured) *captured = std::move(output);
    return result;
}

}  // namespace epochcast::cli
