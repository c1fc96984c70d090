// `epochcast import-log LOG <scenario flags> -o TRACE.json [--format F] [--skip-steps N]`: the
// throughput a training script printed (torchvision's train.py, DeepLearningExamples' DLLogger
// JSON, Lightning's progress bar; traces/log_import.hpp) becomes a trace run of the configuration
// the flags describe (the same flags as predict, as a launch file's header writes them), which
// `calibrate` and `validate` read. Prints the measured figure beside what predict says of it.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <memory>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/output.hpp"
#include "cli/table.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/text_io.hpp"
#include "traces/log_import.hpp"
#include "traces/trace.hpp"

namespace epochcast::cli {
namespace {

struct ImportLogOptions {
    std::string log;
    std::string format = "auto";
    long skip_steps = 50;
    std::string output;
    std::string source;
    std::string calibration = "built-in";
    ScenarioFlags flags;
    std::vector<std::string> catalogs;
    std::vector<const CLI::Option*> batch_given;  ///< --batch-per-gpu, --global-batch: one of them is needed
};

void run_import_log(const ImportLogOptions& o, std::ostream& out) {
    std::vector<std::string> inputs = o.catalogs;
    inputs.push_back(o.log);
    check_outputs({{"-o", o.output}}, inputs);
    const std::optional<TrainingLogFormat> format = parse_training_log_format(o.format);
    if (std::none_of(o.batch_given.begin(), o.batch_given.end(), [](const CLI::Option* b) { return b->count() > 0; })) {
        throw InputError("--batch-per-gpu or --global-batch: the batch the run trained with is needed");
    }
    if (o.skip_steps < 0) throw InputError("--skip-steps must be 0 or more (got " + std::to_string(o.skip_steps) + ")");
    const CostModel model(load_catalog(o.catalogs), load_calibration(o.calibration));
    Scenario scenario = o.flags.to_scenario();
    if (scenario.compiled) {
        throw InputError(
            "--compile: calibrate refuses a torch.compile run, so import-log writes none (docs/model.md, "
            "eq. C9)");
    }
    const ResolvedScenario resolved = model.resolve(scenario);
    scenario.nodes = resolved.nodes;
    scenario.gpus_per_node = resolved.gpus_per_node;
    scenario.batch_per_gpu = resolved.batch_per_gpu;
    scenario.global_batch = 0;
    const long ranks = static_cast<long>(resolved.nodes) * resolved.gpus_per_node;
    const long global_batch = ranks * resolved.batch_per_gpu;

    const TrainingLog log = read_training_log(read_text_file(o.log, "training log"), o.log, format);
    // Where the script says how it ran, the flags must say the same: a trace of another
    // configuration would calibrate the model wrongly.
    if (log.batch_per_gpu > 0 && log.batch_per_gpu != resolved.batch_per_gpu) {
        throw InputError(o.log + ": the script ran a batch of " + std::to_string(log.batch_per_gpu) +
                         " per rank, the flags say " + std::to_string(resolved.batch_per_gpu) + " (--batch-per-gpu)");
    }
    if (log.world_size > 0 && log.world_size != ranks) {
        throw InputError(o.log + ": the script ran " + std::to_string(log.world_size) + " ranks, the flags say " +
                         std::to_string(ranks) + " (--nodes " + std::to_string(resolved.nodes) + " x " +
                         std::to_string(resolved.gpus_per_node) + " a node)");
    }
    const LogThroughput measured = steady_throughput(log, o.skip_steps, global_batch, o.log);

    Observation run;
    run.scenario = scenario;
    run.source = o.source.empty() ? std::string(to_string(log.format)) + " log '" + o.log + "' (epochcast import-log)"
                                  : o.source;
    run.throughput_images_per_s = measured.throughput_images_per_s;
    run.iteration_s = measured.iteration_s;
    // An epoch's time is the scenario's only where its epochs held the scenario's dataset.
    std::string epoch_note;
    if (!log.epoch_s.empty() && log.steps_per_epoch > 0) {
        const double epoch_images = static_cast<double>(log.steps_per_epoch) * static_cast<double>(global_batch);
        if (std::fabs(epoch_images - static_cast<double>(scenario.dataset_images)) <=
            static_cast<double>(global_batch)) {
            run.epoch_s = median_of(log.epoch_s);
        } else {
            epoch_note = "epoch time left out: the log's epochs held " + format_count(log.steps_per_epoch) +
                         " steps of " + format_count(global_batch) + " images, the scenario's " +
                         format_count(static_cast<double>(scenario.dataset_images)) + " (--dataset-images)";
        }
    }

    Trace trace;
    trace.document = {{"description", "training run imported by epochcast import-log"}};
    TraceRun entry;
    entry.observation = run;
    entry.raw = {{"imported_log",
                  {{"log", o.log},
                   {"format", to_string(log.format)},
                   {"skip_steps", o.skip_steps},
                   {"figures_used", measured.figures_used},
                   {"figures_skipped", measured.figures_skipped}}}};
    trace.runs.push_back(entry);
    write_trace(trace, o.output);

    const Prediction p = model.predict(resolved);
    Table table({"log", "format", "figures (used / skipped)", "s per step", "measured img/s", "predicted img/s",
                 "95% band", "error"});
    table.add_row({o.log, std::string(to_string(log.format)),
                   std::to_string(measured.figures_used) + " / " + std::to_string(measured.figures_skipped),
                   format_number(measured.iteration_s, 4), format_count(measured.throughput_images_per_s),
                   format_count(p.throughput_images_per_s),
                   format_count(p.interval.low) + " - " + format_count(p.interval.high),
                   format_signed_percent(percent_error(p.throughput_images_per_s, measured.throughput_images_per_s))});
    table.print(out);
    if (!epoch_note.empty()) out << epoch_note << '\n';
    out << "wrote " << o.output << " (calibrate it: epochcast calibrate " << o.output << " -o calibration.json)\n";
    check_written_after(out, o.output);
}

}  // namespace

void register_import_log(CLI::App& app, std::ostream& out) {
    auto options = std::make_shared<ImportLogOptions>();
    CLI::App* cmd = app.add_subcommand(
        "import-log",
        "Read the throughput a training script logged (torchvision's train.py, DLLogger JSON, Lightning's progress "
        "bar) and write it as a trace run of the configuration the flags describe");
    cmd->add_option("log", options->log, "The training script's output")->required();
    cmd->add_option("-o,--output", options->output, "Trace file to write")->required();
    cmd->add_option("--format", options->format,
                    "auto (the first throughput line decides), torchvision (references/classification/train.py's "
                    "MetricLogger), dllogger (DeepLearningExamples' DLLL JSON lines) or lightning (its tqdm bar)");
    cmd->add_option("--skip-steps", options->skip_steps,
                    "Leave out each epoch's first steps (the loader starting, cuDNN's autotuning): figures that "
                    "average over any of them");
    cmd->add_option("--source", options->source, "Where the run comes from (default: the log's path)");
    add_scenario_flags(*cmd, options->flags);
    // The run's configuration is the user's to say: predict's defaults would describe another run.
    cmd->get_option("--instance")->required();
    cmd->get_option("--nodes")->required();
    options->batch_given = {cmd->get_option("--batch-per-gpu"), cmd->get_option("--global-batch")};
    add_calibration_option(*cmd, options->calibration);
    add_catalog_option(*cmd, options->catalogs);
    cmd->callback([options, &out] { run_import_log(*options, out); });
}

}  // namespace epochcast::cli
