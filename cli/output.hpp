// What the CLI writes, checked: output files are checked before the work starts (their folder
// exists and is writable, none of them is an input), temporary files are unique per process,
// stdout's writes are checked, and main()'s error line is escaped and mapped to an exit code.
//
// Exit codes (main(), `epochcast --help`, README "Exit codes"):
//   0 an answer; also when stdout's reader stops early (`| head`): the rows it read are what it
//     asked for, so the command stops quietly;
//   1 a run that started and failed (a rank died, Ctrl-C or SIGTERM on a sweep), or an internal
//     error (a bug);
//   2 bad input, an output that cannot be written, a failed write (a full disk, a closed stdout);
//   3 plan: the input is fine, but no configuration meets the deadline or the budget.
#pragma once

#include <exception>
#include <filesystem>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace epochcast::cli {

/// stdout's reader went away (EPIPE, as when `| head -1` has read its line): main() stops quietly
/// with exit code 0.
class ReaderGone : public std::runtime_error {
public:
    ReaderGone() : std::runtime_error("standard output's reader stopped reading") {}
};

/// A well-formed question whose answer is "none": plan found no configuration that meets the
/// deadline or the budget. main() prints the message and exits with code 3.
class NoAnswer : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// An output file a subcommand will write, with the flag that names it.
struct OutputFile {
    std::string flag;  ///< "-o", "--plot", "--trace-out", ...
    std::string path;
};

/// Check, before any work, that every non-empty output can be written: its folder exists and is a
/// writable folder, the path is not a folder (nor a device or a pipe), it is none of `inputs` (the files the command
/// reads: compared with std::filesystem::equivalent and weakly_canonical, so "./x" and a hard link count) and no two
/// outputs are the same file. Empty paths are skipped. Throws InputError naming the flag:
/// "-o sweep.json is also an input", "--plot '/none/p.png': the folder '/none' does not exist".
void check_outputs(const std::vector<OutputFile>& outputs, const std::vector<std::string>& inputs);

/// The file a --calibration or --prior value reads: empty for the built-in names ("", built-in,
/// data-free), which read no file.
std::string calibration_file(const std::string& name);

/// The file a trace argument reads: "FILE#I" reads FILE.
std::string trace_file(const std::string& argument);

/// Flush `out` and throw when a write to it failed: InputError "cannot write to standard output:
/// No space left on device" (EBADF for a closed stdout reads "Bad file descriptor"), or ReaderGone
/// when its reader stopped (EPIPE).
void check_written(std::ostream& out);

/// check_written, for a command that has written `file` whole before its summary on `out`: the
/// error says so ("cannot write to standard output: ... (FILE was written whole)"), so that exit 2
/// does not read as "nothing written".
void check_written_after(std::ostream& out, const std::string& file);

/// Make the process safe to write to a broken or closed stdout: SIGPIPE becomes EPIPE on the
/// write (a no-op handler, which exec resets for children), and a closed stdin, stdout or stderr
/// is reopened on /dev/null (stdout read-only, so its writes still fail with EBADF) so that no
/// file the program opens takes its descriptor; SIGXFSZ is ignored, so that a file past `ulimit -f`
/// is a failed write (EFBIG) like any other. Call once, first thing in main().
void guard_standard_streams();

/// `text` made one line of valid UTF-8 by model's escape_for_message (control characters become
/// \n, \r, \t or \xnn, bytes that are not UTF-8 \xnn). With `keep_newlines`, '\n' is kept.
std::string escape_for_terminal(std::string_view text, bool keep_newlines = false);

/// What main() says of an error: its exit code (listed above) and its line, "epochcast: " + label +
/// message. The Python module raises its exceptions with the same message (python/).
struct ErrorReport {
    int exit_code = 1;
    std::string label;    ///< "error: ", "failed: ", "internal error: ", ...; "" for NoAnswer
    std::string message;  ///< what() escaped to one line (a RunError keeps its lines); "" for ReaderGone
};

/// main()'s error policy, for the exception `error`: InputError: "error: <what>", 2; RunError:
/// "failed: <what>" (multi-line output tails kept), 1; NoAnswer: "<what>", 3; ReaderGone: nothing,
/// 0; std::bad_alloc: "internal error: out of memory", 1; any other exception: "internal error
/// (a bug; please report): <what>", 1.
ErrorReport describe_error(const std::exception_ptr& error);

/// Write describe_error()'s line on `err` (nothing for ReaderGone) and return its exit code.
int report_error(const std::exception_ptr& error, std::ostream& err);

}  // namespace epochcast::cli
