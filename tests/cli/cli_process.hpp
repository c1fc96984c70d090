// Runs the built `epochcast` binary as a user would, capturing exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace epochcast::testing {

struct ProcessResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

inline std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

/// Runs `program_and_arguments` through the shell (as written), capturing exit code and output.
inline ProcessResult run_command(const std::string& program_and_arguments) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("epochcast-cli-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
    std::filesystem::create_directories(dir);
    const std::string command =
        program_and_arguments + " > '" + (dir / "out").string() + "' 2> '" + (dir / "err").string() + "' < /dev/null";
    const int status = std::system(command.c_str());
    ProcessResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = read_text(dir / "out");
    result.err = read_text(dir / "err");
    std::filesystem::remove_all(dir);
    return result;
}

/// A program the tests run: `built`, the path CMake compiled in, or, when EPOCHCAST_TEST_BIN_DIR
/// is set, the file of the same name in that folder: the GPU bundle's copies of epochcast,
/// epochcast-train and mpirun (bench/gpu-bundle), which run its executor tests elsewhere.
inline std::string test_program(const char* built) {
    const char* folder = std::getenv("EPOCHCAST_TEST_BIN_DIR");
    if (folder == nullptr || *folder == '\0') return built;
    return (std::filesystem::path(folder) / std::filesystem::path(built).filename()).string();
}

#ifdef EPOCHCAST_MPIEXEC
/// The start of an mpirun line for `ranks` ranks on this host: more ranks than cores allowed, and
/// root allowed when the tests run as root. The program and its arguments follow.
inline std::string mpirun_command(int ranks) {
    // Appended piece by piece: "'" + std::string warns (GCC 12's -Wrestrict false positive).
    std::string command = "'";
    command += test_program(EPOCHCAST_MPIEXEC) + "' -np " + std::to_string(ranks) + " --oversubscribe";
    if (::geteuid() == 0) command += " --allow-run-as-root";
    return command;
}
#endif

#ifdef EPOCHCAST_CLI_PATH
/// Runs `EPOCHCAST_CLI_PATH <arguments>` through the shell (arguments are passed as written).
inline ProcessResult run_epochcast(const std::string& arguments) {
    std::string command = "'";
    command += test_program(EPOCHCAST_CLI_PATH) + "' " + arguments;
    return run_command(command);
}
#endif

}  // namespace epochcast::testing
