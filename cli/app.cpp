#include "cli/app.hpp"

#include <sstream>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/output.hpp"
#include "model/errors.hpp"

namespace epochcast::cli {

std::unique_ptr<CLI::App> make_app(std::ostream& out, std::ostream& progress) {
    auto app = std::make_unique<CLI::App>(
        "epochcast: what a ResNet training run on rented GPUs will cost and how long it will take", "epochcast");
    app->require_subcommand(1);
    // --help shows each option's default; the subcommands inherit this. Options whose default is a
    // sentinel ("all", "none") blank it and say what leaving them out means in their help.
    app->option_defaults()->always_capture_default();
    app->set_help_all_flag("--help-all", "Show the help of every subcommand");
    app->set_version_flag("--version", std::string("epochcast ") + EPOCHCAST_VERSION, "Print the version and exit");
    app->footer(
        "Exit codes: 0 an answer (also when stdout's reader stops early, as `| head` does); 1 a run that failed "
        "(a rank died; Ctrl-C, SIGTERM or SIGHUP on a sweep) or an internal error; 2 bad input, an output that "
        "cannot be written or a failed write (a full disk, a closed stdout); 3 plan: nothing meets the deadline "
        "or the budget.");
    register_catalog(*app, out);
    register_predict(*app, out);
    register_compare(*app, out);
    register_import_nccl(*app, out);
    register_import_log(*app, out);
    register_calibrate(*app, out);
    register_validate(*app, out);
    register_plan_calibration(*app, out);
    register_simulate(*app, out, progress);
    register_run(*app, out);
    register_sweep(*app, out);
    register_plan(*app, out);

    // An empty list ("[]") is no default worth showing, nor is the value a required option replaces.
    for (CLI::App* command : app->get_subcommands({})) {
        for (CLI::Option* option : command->get_options()) {
            if (option->get_default_str() == "[]" || option->get_required()) option->default_str("");
        }
    }
    return app;
}

void parse_and_run(CLI::App& app, const std::vector<std::string>& args, std::ostream& out) {
    // A first argument that is no option and no subcommand is named, with the valid ones (CLI11
    // would only say "A subcommand is required"); so is a missing subcommand.
    std::string names;
    bool known = false;
    for (const CLI::App* command : app.get_subcommands({})) {
        if (!names.empty()) names += ", ";
        names += command->get_name();
        known = known || (!args.empty() && command->check_name(args.front()));
    }
    if (args.empty()) throw InputError("a subcommand is required: " + names + " (--help says what each does)");
    if (!args.front().empty() && args.front().front() != '-' && !known) {
        throw InputError("unknown subcommand '" + args.front() + "'; the subcommands are " + names);
    }

    // CLI11 parses the arguments in reverse order when given a vector.
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
        app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
        out << app.help();
    } catch (const CLI::CallForAllHelp&) {
        out << app.help("", CLI::AppFormatMode::All);
    } catch (const CLI::CallForVersion& version) {
        out << version.what() << '\n';
    } catch (const CLI::ParseError& error) {
        throw InputError(error.what());
    }
}

void run(const std::vector<std::string>& args, std::ostream& out, std::ostream& progress) {
    const std::unique_ptr<CLI::App> app = make_app(out, progress);
    parse_and_run(*app, args, out);
    check_written(out);  // a full disk or a closed stdout is an error, not a truncated answer
}

std::vector<OptionInfo> subcommand_options(const std::string& name) {
    std::ostringstream unused;
    const std::unique_ptr<CLI::App> app = make_app(unused, unused);
    CLI::App* command = nullptr;
    try {
        command = app->get_subcommand(name);
    } catch (const CLI::OptionNotFound&) {
        throw InputError("unknown subcommand '" + name + "'");
    }
    std::vector<OptionInfo> options;
    for (const CLI::Option* option : command->get_options()) {
        if (option == command->get_help_ptr() || option == command->get_help_all_ptr()) continue;
        OptionInfo info;
        info.positional = !option->nonpositional();
        info.name =
            info.positional || option->get_lnames().empty() ? option->get_single_name() : option->get_lnames().front();
        info.flag = option->get_items_expected_max() == 0;
        info.repeatable = option->get_items_expected_max() > 1;
        info.required = option->get_required();
        const std::string type = option->get_type_name();
        if (type.find("FLOAT") != std::string::npos) {
            info.value_kind = "float";
        } else if (type.find("INT") != std::string::npos) {
            info.value_kind = "int";  // INT and UINT
        }
        info.default_text = option->get_default_str();
        info.help = option->get_description();
        options.push_back(std::move(info));
    }
    return options;
}

}  // namespace epochcast::cli
