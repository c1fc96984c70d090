// The `epochcast` command line, as a function the tests can call in-process. It throws the
// typed errors of model/errors.hpp; only main() turns them into exit codes.
#pragma once

#include <iostream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace epochcast::cli {

/// Run `epochcast` with `args` (without the program name), writing results to `out` and the
/// progress lines of a long simulation to `progress`. --help prints to `out` and returns. Bad
/// arguments throw InputError naming the flag.
void run(const std::vector<std::string>& args, std::ostream& out, std::ostream& progress = std::cerr);

/// The `epochcast` command line with every subcommand registered, as run() parses it: answers go
/// to `out`, a simulation's progress lines to `progress`.
std::unique_ptr<CLI::App> make_app(std::ostream& out, std::ostream& progress);

/// Parse `args` into `app` as `epochcast` does and run the subcommand they name: --help and
/// --version print to `out`; a first argument that names no subcommand of `app`, and any argument
/// CLI11 refuses, is an InputError with CLI11's message.
void parse_and_run(CLI::App& app, const std::vector<std::string>& args, std::ostream& out);

/// One option of a subcommand, as its --help describes it (the Python module's keyword arguments
/// are these, python/epochcast/).
struct OptionInfo {
    std::string name;  ///< the long name without dashes ("batch-per-gpu"), or a positional's ("spec")
    bool positional = false;
    bool flag = false;        ///< takes no value (--json)
    bool repeatable = false;  ///< takes several values (--catalog A --catalog B)
    bool required = false;
    std::string value_kind = "text";  ///< what a value must be: "int", "float" (CLI11's INT, FLOAT) or "text"
    std::string default_text;         ///< what --help shows as the default ("" for none)
    std::string help;
};

/// The options of subcommand `name` in --help's order, without --help; InputError for a name that
/// is no subcommand.
std::vector<OptionInfo> subcommand_options(const std::string& name);

// One registration function per subcommand, each in its own file (cli/<name>.cpp).
void register_catalog(CLI::App& app, std::ostream& out);
void register_predict(CLI::App& app, std::ostream& out);
void register_import_nccl(CLI::App& app, std::ostream& out);
void register_import_log(CLI::App& app, std::ostream& out);
void register_compare(CLI::App& app, std::ostream& out);
void register_calibrate(CLI::App& app, std::ostream& out);
void register_validate(CLI::App& app, std::ostream& out);
void register_plan_calibration(CLI::App& app, std::ostream& out);
void register_simulate(CLI::App& app, std::ostream& out, std::ostream& progress);
void register_run(CLI::App& app, std::ostream& out);
void register_sweep(CLI::App& app, std::ostream& out);
void register_plan(CLI::App& app, std::ostream& out);

}  // namespace epochcast::cli
