#include "cli/output.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <new>

#include "model/errors.hpp"
#include "model/text_io.hpp"

namespace epochcast::cli {
namespace {

namespace fs = std::filesystem;

/// The path as it will be resolved: absolute, with symbolic links and "..", "." resolved as far as
/// the path exists.
fs::path resolved(const std::string& path) {
    std::error_code error;
    fs::path canonical = fs::weakly_canonical(fs::absolute(path, error), error);
    return error ? fs::path(path).lexically_normal() : canonical;
}

bool same_file(const std::string& a, const std::string& b) {
    std::error_code error;
    if (fs::equivalent(a, b, error) && !error) return true;
    return resolved(a) == resolved(b);
}

void check_writable(const OutputFile& output) {
    const std::string named = output.flag + " '" + output.path + "'";
    std::error_code error;
    if (fs::is_directory(output.path, error)) throw InputError(named + " is a folder; give a file name");
    // Outputs are written beside the path and renamed over it: a device or a pipe would be replaced.
    const fs::file_status status = fs::status(output.path, error);
    if (fs::exists(status) && !fs::is_regular_file(status)) {
        throw InputError(named + " is not a regular file (the output replaces it whole); give a file name");
    }
    fs::path folder = fs::path(output.path).parent_path();
    if (folder.empty()) folder = ".";
    if (!fs::is_directory(folder, error)) {
        throw InputError(named + ": the folder '" + folder.string() + "' does not exist");
    }
    if (::access(folder.c_str(), W_OK) != 0) {
        throw InputError(named + ": the folder '" + folder.string() + "' is not writable (" + std::strerror(errno) +
                         ")");
    }
    if (fs::exists(output.path, error) && ::access(output.path.c_str(), W_OK) != 0) {
        throw InputError(named + " cannot be overwritten (" + std::string(std::strerror(errno)) + ")");
    }
}

[[noreturn]] void throw_write_error(int error) {
    if (error == EPIPE) throw ReaderGone();
    throw InputError(std::string("cannot write to standard output: ") +
                     (error != 0 ? std::strerror(error) : "write error"));
}

extern "C" void on_broken_pipe(int) {}

void reopen_if_closed(int fd, int flags) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) return;
    const int opened = ::open("/dev/null", flags);
    if (opened >= 0 && opened != fd) {
        ::dup2(opened, fd);
        ::close(opened);
    }
}

}  // namespace

void check_outputs(const std::vector<OutputFile>& outputs, const std::vector<std::string>& inputs) {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const OutputFile& output = outputs[i];
        if (output.path.empty()) continue;
        for (const std::string& input : inputs) {
            if (!input.empty() && same_file(output.path, input)) {
                throw InputError(output.flag + " " + output.path + " is also an input; write to another file");
            }
        }
        for (std::size_t j = 0; j < i; ++j) {
            if (!outputs[j].path.empty() && same_file(output.path, outputs[j].path)) {
                throw InputError(output.flag + " " + output.path + " is also " + outputs[j].flag + "; give two files");
            }
        }
        check_writable(output);
    }
}

std::string calibration_file(const std::string& name) { return name == "built-in" || name == "data-free" ? "" : name; }

std::string trace_file(const std::string& argument) {
    const auto hash = argument.rfind('#');
    return hash == std::string::npos ? argument : argument.substr(0, hash);
}

void check_written(std::ostream& out) {
    const int earlier = errno;  // set by the write that failed, when the stream failed just now
    if (out) {
        errno = 0;
        out.flush();
        if (out) return;
        throw_write_error(errno);
    }
    // An earlier write failed: ask the C stream again (its buffer still holds what was not written).
    errno = 0;
    if (&out == &std::cout) std::fflush(stdout);
    int error = errno;
    const bool plausible = earlier == ENOSPC || earlier == EBADF || earlier == EPIPE || earlier == EIO ||
                           earlier == EFBIG || earlier == EDQUOT || earlier == ENXIO;
    if (error == 0 && plausible) error = earlier;
    throw_write_error(error);
}

void check_written_after(std::ostream& out, const std::string& file) {
    try {
        check_written(out);
    } catch (const InputError& error) {
        throw InputError(std::string(error.what()) + " (" + escape_for_terminal(file) + " was written whole)");
    }
}

void guard_standard_streams() {
    reopen_if_closed(STDIN_FILENO, O_RDONLY);
    reopen_if_closed(STDOUT_FILENO, O_RDONLY);
    reopen_if_closed(STDERR_FILENO, O_WRONLY);
    struct sigaction action {};
    action.sa_handler = on_broken_pipe;
    sigemptyset(&action.sa_mask);
    sigaction(SIGPIPE, &action, nullptr);
    // A file past `ulimit -f` is a failed write (EFBIG), reported and cleaned up as one, rather than
    // a SIGXFSZ that kills the process and leaves its temporary file behind.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGXFSZ, &ignore, nullptr);
}

std::string escape_for_terminal(std::string_view text, bool keep_newlines) {
    // The message's parts that echo a user's text were cut where they were made; the whole is not.
    constexpr std::size_t kWhole = std::numeric_limits<std::size_t>::max();
    if (!keep_newlines) return escape_for_message(text, kWhole);
    std::string out;
    for (std::size_t start = 0;;) {
        const std::size_t end = text.find('\n', start);
        out += escape_for_message(text.substr(start, end == std::string_view::npos ? end : end - start), kWhole);
        if (end == std::string_view::npos) return out;
        out += '\n';
        start = end + 1;
    }
}

ErrorReport describe_error(const std::exception_ptr& error) {
    try {
        std::rethrow_exception(error);
    } catch (const ReaderGone&) {
        return {0, "", ""};
    } catch (const NoAnswer& answer) {
        return {3, "", escape_for_terminal(answer.what())};
    } catch (const InputError& input) {  // InfeasibleError included
        return {2, "error: ", escape_for_terminal(input.what())};
    } catch (const RunError& run) {
        return {1, "failed: ", escape_for_terminal(run.what(), /*keep_newlines=*/true)};
    } catch (const std::bad_alloc&) {
        return {1, "internal error: ", "out of memory"};
    } catch (const std::exception& other) {
        return {1, "internal error (a bug; please report): ", escape_for_terminal(other.what())};
    } catch (...) {
        return {1, "internal error (a bug; please report): ", "an unknown exception"};
    }
}

int report_error(const std::exception_ptr& error, std::ostream& err) {
    const ErrorReport report = describe_error(error);
    if (report.exit_code != 0) err << "epochcast: " << report.label << report.message << '\n';
    return report.exit_code;
}

}  // namespace epochcast::cli
