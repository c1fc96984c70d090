// Processes a test starts in the background and watches through /proc: a command started with its
// output in files, its descendants, and whether they are gone. A zombie counts as gone: where
// PID 1 does not reap orphans (a container's), a dead orphan stays one.
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace epochcast::testing {

/// A process's parent and state letter (R, S, Z, ...) from /proc/PID/stat; nullopt once it is gone.
struct ProcessState {
    pid_t parent = 0;
    char state = '?';
};

inline std::optional<ProcessState> process_state(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!std::getline(in, text)) return std::nullopt;
    const std::size_t name_end = text.rfind(')');  // the name may hold spaces and parentheses
    if (name_end == std::string::npos || name_end + 2 > text.size()) return std::nullopt;
    std::istringstream rest(text.substr(name_end + 2));
    ProcessState state;
    rest >> state.state >> state.parent;
    if (!rest) return std::nullopt;
    return state;
}

/// True while `pid` exists and is not a zombie.
inline bool running(pid_t pid) {
    const std::optional<ProcessState> state = process_state(pid);
    return state && state->state != 'Z' && state->state != 'X';
}

/// Every running descendant of `root` (children, their children, ...).
inline std::vector<pid_t> descendants(pid_t root) {
    std::multimap<pid_t, pid_t> children;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            continue;
        }
        const pid_t pid = static_cast<pid_t>(std::stol(name));
        if (const std::optional<ProcessState> state = process_state(pid); state && running(pid)) {
            children.emplace(state->parent, pid);
        }
    }
    std::vector<pid_t> found;
    std::vector<pid_t> pending = {root};
    while (!pending.empty()) {
        const pid_t parent = pending.back();
        pending.pop_back();
        for (auto [it, end] = children.equal_range(parent); it != end; ++it) {
            found.push_back(it->second);
            pending.push_back(it->second);
        }
    }
    return found;
}

/// The command line of `pid`, its arguments joined by spaces ("" once it is gone).
inline std::string command_line_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::replace(text.begin(), text.end(), '\0', ' ');
    return text;
}

/// Starts `argv` (argv[0] a path) in the background, stdin /dev/null, stdout and stderr into the
/// files `out` and `err`. The caller reaps it (waitpid).
inline pid_t start_process(const std::vector<std::string>& argv, const std::filesystem::path& out,
                           const std::filesystem::path& err) {
    std::vector<char*> args;
    std::vector<std::string> copies = argv;
    for (std::string& a : copies) args.push_back(a.data());
    args.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int in = ::open("/dev/null", O_RDONLY);
        const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(in, STDIN_FILENO);
        ::dup2(out_fd, STDOUT_FILENO);
        ::dup2(err_fd, STDERR_FILENO);
        ::execv(args[0], args.data());
        ::_exit(127);
    }
    return pid;
}

/// Polls `done` every 50 ms until it holds or `limit` has passed; returns its last answer. A
/// generous limit: only the answer is tested, never how soon it came.
inline bool wait_until(const std::function<bool()>& done, std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() > until) return done();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
}

/// True once none of `pids` is running, within `limit`.
inline bool all_gone(const std::vector<pid_t>& pids, std::chrono::seconds limit) {
    return wait_until([&] { return std::none_of(pids.begin(), pids.end(), running); }, limit);
}

}  // namespace epochcast::testing
