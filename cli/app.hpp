// The `epochcast` command line, as a function the tests can call in-process. It throws the
// typed errors of model/errors.hpp; only main() turns them into exit codes.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace epochcast::cli {

/// Run `epochcast` with `args` (without the program name), writing results to `out`.
/// --help prints to `out` and returns. Bad arguments throw InputError naming the flag.
void run(const std::vector<std::string>& args, std::ostream& out);

// One registration function per subcommand, each in its own file (cli/<name>.cpp).
void register_catalog(CLI::App& app, std::ostream& out);
void register_predict(CLI::App& app, std::ostream& out);
void register_import_nccl(CLI::App& app, std::ostream& out);
void register_calibrate(CLI::App& app, std::ostream& out);
void register_validate(CLI::App& app, std::ostream& out);
void register_plan_calibration(CLI::App& app, std::ostream& out);
void register_simulate(CLI::App& app, std::ostream& out);
void register_run(CLI::App& app, std::ostream& out);
void register_sweep(CLI::App& app, std::ostream& out);
void register_plan(CLI::App& app, std::ostream& out);

}  // namespace epochcast::cli
