// `epochcast sweep SPEC.json [-o out.csv|out.json] [--jobs N] [--simulate] [--plot FILE]`: the
// cross product of a spec (model/sweep.hpp), one row per combination, an infeasible one with its
// reason. Threads evaluate chunks of rows while the main thread writes them in order through a
// temporary file (unique to the process) renamed at the end, or on Ctrl-C, SIGTERM or SIGHUP with
// the rows so far and a note that the sweep was interrupted. Rows streamed to stdout are checked as
// they go: a failed write stops the sweep (exit 2), a reader that stops early (`| head`) ends it
// quietly. Started under mpirun, the ranks share the rows and rank 0 writes.
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <system_error>
#include <thread>
#include <vector>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/interrupt.hpp"
#include "cli/mpi_world.hpp"
#include "cli/output.hpp"
#include "cli/plot.hpp"
#include "cli/report.hpp"
#include "cli/sweep.hpp"
#include "model/errors.hpp"
#include "model/search.hpp"
#include "model/sweep.hpp"
#include "model/text_io.hpp"

#ifdef EPOCHCAST_WITH_SIMULATOR
#include "simulator/prediction.hpp"
#include "simulator/simulation.hpp"
#endif

namespace epochcast::cli {
namespace {

/// The most threads --jobs may ask for.
constexpr int kMaxJobs = 1024;

enum class Format { csv, json };

Format format_of(const std::string& output) {
    const std::filesystem::path path(output);
    const std::string ext = path.extension().string();
    if (output.empty() || ext == ".csv" || ext == ".CSV") return Format::csv;
    if (ext == ".json" || ext == ".JSON") return Format::json;
    throw InputError("-o '" + output + "': the name must end in .csv or .json");
}

/// Removes the temporary files that sweeps writing `path` left when they were killed (SIGKILL, a
/// node that went down): the regular files of this user beside it named `path`.partial.<pid>[.<n>]
/// that no process holds locked. A sweep holds its own locked while it writes (RowWriter), and the
/// kernel lets go of the lock when the process ends however it ends; a link planted at such a name
/// is not followed, nor removed.
void remove_abandoned_partials(const std::filesystem::path& path) {
    const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    const std::string stem = path.filename().string();
    std::error_code error;
    std::filesystem::directory_iterator entries(folder, error);
    if (error) return;  // the write that follows names the problem
    for (const std::filesystem::directory_entry& entry : entries) {
        const std::string name = entry.path().filename().string();
        if (!is_name_beside(name, stem, "partial")) continue;
        struct stat before {};
        if (::lstat(entry.path().c_str(), &before) != 0 || !S_ISREG(before.st_mode) || before.st_uid != ::geteuid())
            continue;
        const int fd = ::open(entry.path().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat opened {};
        if (::fstat(fd, &opened) == 0 && opened.st_ino == before.st_ino && opened.st_dev == before.st_dev &&
            ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
            std::error_code ignored;
            std::filesystem::remove(entry.path(), ignored);
        }
        ::close(fd);
    }
}

/// The rows' destination: `out` (stdout) or a temporary file beside `path` (x.csv.partial.<pid>),
/// renamed on finish(). Destroyed unfinished, it removes the temporary file: nothing half-written
/// is left behind; those of killed sweeps to the same path it removes first. A failed write
/// throws InputError at once (ReaderGone when stdout's reader left).
class RowWriter {
public:
    RowWriter(const std::string& path, Format format, std::size_t total, const ColumnSelection& columns,
              std::ostream& out)
        : path_(path), format_(format), total_(total), columns_(columns), out_(out) {
        if (!path_.empty()) {
            remove_abandoned_partials(path_);
            // A new file (O_EXCL | O_NOFOLLOW): a link planted at the name is never written through.
            // Locked while this process lives, so that a later sweep tells it from an abandoned one.
            const NewFile partial = create_file_beside(path_, "partial");
            partial_ = partial.path;
            if (partial.fd >= 0) ::flock(partial.fd, LOCK_EX | LOCK_NB);
            file_ = partial.fd >= 0 ? ::fdopen(partial.fd, "wb") : nullptr;
            if (!file_) {
                if (partial.fd >= 0) ::close(partial.fd);
                throw InputError("-o '" + path + "' cannot be written: " + std::strerror(errno));
            }
            std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
        }
    }
    ~RowWriter() {
        if (file_) {
            std::fclose(file_);
            std::error_code ignored;
            std::filesystem::remove(partial_, ignored);
        }
    }
    RowWriter(const RowWriter&) = delete;
    RowWriter& operator=(const RowWriter&) = delete;

    /// Rows as append_row() made them.
    void write(std::string_view rows, std::size_t count) {
        if (rows.empty()) return;
        put_header();
        if (format_ == Format::json && written_ == 0) rows.remove_prefix(2);  // the first row's ",\n"
        put(rows);
        written_ += count;
    }

    /// Close the file (JSON: the list, whether the sweep is complete; CSV: a comment line when it
    /// was interrupted) and move it into place.
    void finish(bool interrupted) {
        put_header();
        if (format_ == Format::json) {
            put("\n],\n\"rows_written\": " + std::to_string(written_) +
                ", \"complete\": " + (written_ == total_ ? "true" : "false") +
                ", \"interrupted\": " + (interrupted ? "true" : "false") + "}\n");
        } else if (interrupted) {
            put("# interrupted: " + std::to_string(written_) + " of " + std::to_string(total_) + " rows written\n");
        }
        if (!file_) {
            check_written(out_);
            return;
        }
        const bool flushed = std::fflush(file_) == 0 && !std::ferror(file_);
        const int flush_error = errno;
        const bool closed = std::fclose(file_) == 0;
        const int close_error = errno;
        file_ = nullptr;
        std::error_code error;
        if (!flushed || !closed) {
            std::filesystem::remove(partial_, error);
            throw_write_error(!flushed ? flush_error : close_error);
        }
        std::filesystem::rename(partial_, path_, error);
        if (error) {
            std::error_code ignored;
            std::filesystem::remove(partial_, ignored);
            throw InputError("cannot write -o '" + path_.string() + "': " + error.message());
        }
    }

    std::size_t written() const { return written_; }

private:
    /// The CSV header or the JSON document's head, before the first row (not before: a sweep that
    /// fails to start prints nothing).
    void put_header() {
        if (header_written_) return;
        header_written_ = true;
        put(format_ == Format::csv ? prediction_csv_header(columns_)
                                   : "{\"schema\": \"epochcast.sweep/1\", \"combinations\": " + std::to_string(total_) +
                                         ",\n\"rows\": [\n");
    }

    void put(std::string_view text) {
        if (file_) {
            if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) throw_write_error(errno);
        } else {
            out_.write(text.data(), static_cast<std::streamsize>(text.size()));
            if (!out_) check_written(out_);
        }
    }

    /// The temporary file is removed by the destructor.
    [[noreturn]] void throw_write_error(int error) const {
        throw InputError("cannot write -o '" + path_.string() + "': " + std::strerror(error != 0 ? error : EIO));
    }

    std::filesystem::path path_;
    std::filesystem::path partial_;
    Format format_;
    std::size_t total_;
    ColumnSelection columns_;
    std::ostream& out_;
    std::FILE* file_ = nullptr;
    std::size_t written_ = 0;
    bool header_written_ = false;
};

/// A progress bar on stderr when it is a terminal, redrawn at most ten times a second.
class Progress {
public:
    explicit Progress(std::size_t total) : total_(total), shown_(isatty(STDERR_FILENO) != 0) {}
    void update(std::size_t done) {
        if (!shown_) return;
        const auto now = std::chrono::steady_clock::now();
        if (done < total_ && now - last_ < std::chrono::milliseconds(100)) return;
        last_ = now;
        const int width = 40;
        const double fraction = total_ ? double(done) / double(total_) : 1;
        const int filled = static_cast<int>(fraction * width);
        std::fprintf(stderr, "\r[%s%s] %5.1f%% %zu/%zu rows", std::string(filled, '#').c_str(),
                     std::string(width - filled, ' ').c_str(), 100 * fraction, done, total_);
        std::fflush(stderr);
    }
    ~Progress() {
        if (shown_) std::fputc('\n', stderr);
    }

private:
    std::size_t total_;
    bool shown_;
    std::chrono::steady_clock::time_point last_{};
};

/// Evaluates combinations into row text.
class RowText {
public:
    RowText(const PreparedSweep& sweep, Format format) : evaluator_(sweep), format_(format), columns_(sweep.columns) {}

    /// Append combination `index`'s row; a feasible one also goes to `plot` when it is given.
    /// Returns whether it was feasible.
    bool append_row(std::size_t index, std::string& text, std::vector<PlotPoint>* plot) {
        if (!evaluator_.evaluate(index, result_, reason_)) {  // the row says why
            if (format_ == Format::csv) {
                append_infeasible_csv(text, result_.scenario, reason_, columns_);
            } else {
                text += ",\n";
                text += infeasible_json(result_.scenario, reason_)
                            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
            }
            return false;
        }
        if (format_ == Format::csv) {
            append_prediction_csv(text, result_, columns_);
        } else {
            nlohmann::json row = prediction_json(result_);
            row["feasible"] = true;
            text += ",\n";
            text += row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        }
        if (plot) plot->push_back({result_.scenario, result_.prediction});
        return true;
    }

private:
    SweepEvaluator evaluator_;
    Format format_;
    ColumnSelection columns_;
    ScenarioResult result_;
    std::string reason_;
};

struct Chunk {
    std::string text;
    std::size_t rows = 0;
    std::size_t feasible = 0;
    std::vector<PlotPoint> plot;
};

/// Evaluate [range.first, range.last) as evaluate_range() does, each chunk as row text. Stops
/// early (between chunks) when g_interrupted is set and `stop_on_interrupt`; returns whether it did.
template <typename Sink>
bool evaluate_text(const PreparedSweep& sweep, Format format, IndexRange range, bool keep_plot, bool stop_on_interrupt,
                   Sink&& sink) {
    return evaluate_range(
        range, sweep.jobs, sweep.chunk_rows,
        [&](std::size_t first, std::size_t last) {
            RowText rows(sweep, format);
            Chunk chunk;
            chunk.text.reserve((last - first) * 420);
            for (std::size_t i = first; i < last; ++i) {
                chunk.feasible += rows.append_row(i, chunk.text, keep_plot ? &chunk.plot : nullptr) ? 1 : 0;
            }
            chunk.rows = last - first;
            return chunk;
        },
        sink, [stop_on_interrupt] { return stop_on_interrupt && g_interrupted != 0; });
}

#ifndef EPOCHCAST_WITH_SIMULATOR
constexpr const char* kNoSimulator =
    "--simulate: this epochcast was built without the SimGrid simulator: install libsimgrid-dev (>= 3.32) and "
    "rebuild";
#endif

/// Whether an interruption stopped a simulation in flight (its row not written).
std::atomic<bool> g_simulation_stopped{false};

/// The prediction from `sweep.iterations` simulated iterations of `s` (prepare_sweep refuses
/// --simulate where SimGrid is not built).
Prediction simulated(const PreparedSweep& sweep, const Scenario& s) {
#ifdef EPOCHCAST_WITH_SIMULATOR
    sim::SimulationOptions options;
    options.iterations = sweep.iterations;
    // Ctrl-C, SIGTERM or SIGHUP stops the simulation in flight (its child killed within about
    // 50 ms), not after it: one row can take minutes.
    options.cancel = &g_interrupt_requested;
    try {
        return sim::simulated_prediction(sweep.model, s, sim::simulate(sweep.model, s, options));
    } catch (const sim::SimulationCancelled&) {
        g_simulation_stopped = true;
        throw;
    }
#else
    (void)sweep;
    (void)s;
    throw InputError(kNoSimulator);
#endif
}

/// --jobs and --iterations within their bounds; InputError naming the flag otherwise.
void check_counts(const SweepOptions& o) {
    if ((o.jobs_option != nullptr && o.jobs_option->count() > 0 && o.jobs < 1) || o.jobs < 0 || o.jobs > kMaxJobs) {
        throw InputError("--jobs must be between 1 and " + std::to_string(kMaxJobs) + " (got " +
                         std::to_string(o.jobs) + ")");
    }
    if (o.iterations < 1)
        throw InputError("--iterations must be at least 1 (got " + std::to_string(o.iterations) + ")");
}

void run_sweep(SweepOptions& o, std::ostream& out) {
    const auto started = std::chrono::steady_clock::now();
    const std::unique_ptr<MpiWorld> world = MpiWorld::join();
    const bool root = world->rank() == 0;

    const Format format = format_of(o.output);
    check_counts(o);
    if (format == Format::json && o.columns != "all" && o.columns != "default") {
        throw InputError("--columns chooses a CSV's columns; -o '" + escape_for_message(o.output) +
                         "' is JSON, whose rows hold every figure");
    }
    if (!o.plot.empty()) check_plot_path(o.plot);
    // Every output is checked before any work: nothing is computed, printed or written for a sweep
    // whose rows or plot cannot be written, or that would overwrite what it reads.
    std::vector<std::string> inputs = o.catalogs;
    inputs.push_back(o.spec);
    inputs.push_back(calibration_file(o.calibration));
    check_outputs({{"-o", o.output}, {"--plot", o.plot}}, inputs);
    if (!o.plot.empty() && world->size() > 1) {
        throw InputError(
            "--plot is not available under mpirun (the rows stay on their ranks); run the sweep, then "
            "plot with a sweep of one process");
    }
    const PreparedSweep sweep = prepare_sweep(o);
    const std::size_t total = sweep.spec.combinations();
    check_simulated_work(sweep, block_of(total, world->rank(), world->size()));
    const bool keep_plot = !o.plot.empty();
    std::vector<PlotPoint> plot;
    std::size_t feasible = 0;

    if (world->size() > 1) {
        // Each rank evaluates its block; rank 0 gathers the text in rank order and writes it.
        std::string mine;
        std::size_t mine_feasible = 0;
        evaluate_text(sweep, format, block_of(total, world->rank(), world->size()), keep_plot, false,
                      [&](Chunk& chunk) {
                          mine += chunk.text;
                          mine_feasible += chunk.feasible;
                          std::move(chunk.plot.begin(), chunk.plot.end(), std::back_inserter(plot));
                      });
        const std::string all = world->gather_text(mine);
        const std::string feasible_counts = world->gather_text(std::to_string(mine_feasible) + "\n");
        if (!root) return;
        for (std::size_t pos = 0; pos < feasible_counts.size();) {
            const std::size_t end = feasible_counts.find('\n', pos);
            feasible += std::stoull(feasible_counts.substr(pos, end - pos));
            pos = end + 1;
        }
        RowWriter writer(o.output, format, total, sweep.columns, out);
        writer.write(all, total);
        writer.finish(false);
    } else {
        InterruptGuard guard;          // before the temporary file exists, so that no signal leaves it behind
        g_simulation_stopped = false;  // this sweep's, not an earlier one's in the same process
        RowWriter writer(o.output, format, total, sweep.columns, out);
        Progress progress(total);
        const bool interrupted = evaluate_text(sweep, format, {0, total}, keep_plot, true, [&](Chunk& chunk) {
            writer.write(chunk.text, chunk.rows);
            feasible += chunk.feasible;
            std::move(chunk.plot.begin(), chunk.plot.end(), std::back_inserter(plot));
            progress.update(writer.written());
        });
        writer.finish(interrupted);
        if (interrupted) {
            throw RunError("interrupted by " + interruption_name(g_interrupted) + ": " +
                           std::to_string(writer.written()) + " of " + std::to_string(total) + " rows written" +
                           (o.output.empty() ? "" : " to '" + o.output + "'") +
                           (g_simulation_stopped ? "; the simulation in flight was stopped" : ""));
        }
    }

    if (keep_plot) {
        PlotRequest request;
        request.path = o.plot;
        std::vector<TimeCost> points;
        for (const PlotPoint& p : plot) points.push_back({p.prediction.time_to_train_s, p.prediction.cost_usd});
        request.front = pareto_front(points);
        request.points = std::move(plot);
        request.title = "Sweep " + std::filesystem::path(o.spec).filename().string() + ": time against cost";
        request.catalog = &sweep.model.catalog();
        write_plots(request);
    }
    if (!o.output.empty()) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        char line[256];
        std::snprintf(line, sizeof line, "wrote %zu rows (%zu feasible, %zu not) to %s in %.2f s%s\n", total, feasible,
                      total - feasible, o.output.c_str(), seconds,
                      world->size() > 1 ? (" over " + std::to_string(world->size()) + " ranks").c_str() : "");
        out << line;
        if (!o.plot.empty()) out << "plots: " << o.plot << '\n';
        check_written_after(out, o.output);
    }
}

}  // namespace

void add_sweep_flags(CLI::App& cmd, SweepOptions& options) {
    cmd.add_option("spec", options.spec, "Sweep spec file (JSON)")->required();
    options.jobs_option =
        cmd.add_option("--jobs", options.jobs, "Threads evaluating rows, 1 to 1024 (default: the machine's cores)");
    without_default(options.jobs_option);
    cmd.add_flag("--simulate", options.simulate,
                 "Simulate each combination with SimGrid instead of the closed form (one at a time per process)");
    cmd.add_option("--iterations", options.iterations, "Iterations simulated per combination with --simulate");
    cmd.add_option("--columns", options.columns,
                   "The CSV's columns: names and groups, comma-separated: default (scenario and results), all "
                   "(every column: the phases, bandwidths, efficiencies, memory, storage, spot, ...), scenario (its "
                   "inputs, feasible and reason), results (GPUs, global batch, throughput, time to train, cost and "
                   "bill with their bands, epochs, bottleneck); written in the full set's order");
    add_catalog_option(cmd, options.catalogs);
    add_calibration_option(cmd, options.calibration);
    add_target_flags(cmd, options.target, nullptr);
}

// Issue 59, item 2: a simulated sweep started with no estimate of its work (`--simulate
// --iterations 1000000` was still running after 12 minutes); estimated as simulate estimates one
// run (sim::estimated_simulation_s).
void check_simulated_work(const PreparedSweep& sweep, IndexRange rows) {
    if (!sweep.simulate) return;
#ifdef EPOCHCAST_WITH_SIMULATOR
    sim::SimulationOptions options;
    options.iterations = sweep.iterations;
    double total_s = 0;
    for (std::size_t i = rows.first; i < rows.last; ++i) {
        try {
            total_s +=
                sim::estimated_simulation_s(sweep.model, sweep.spec.scenario_at(i, sweep.model.catalog()), options);
        } catch (const InputError&) {
            continue;
        }
        if (total_s > sim::kMaxEstimatedWallS) {
            throw InputError("sweep --simulate would run for more than " +
                             sim::wall_time_text(sim::kMaxEstimatedWallS) + " (about " + sim::wall_time_text(total_s) +
                             " for the first " + format_count(static_cast<double>(i - rows.first + 1)) + " of its " +
                             format_count(static_cast<double>(rows.last - rows.first)) +
                             " rows): give fewer --iterations or combinations, spread the rows over mpirun ranks, "
                             "or sweep without --simulate");
        }
    }
#else
    (void)sweep;
    (void)rows;
#endif
}

ColumnSelection parse_columns(std::string_view list) {
    static constexpr std::string_view kResults[] = {
        "gpus",          "global_batch",    "throughput_images_per_s", "interval_low",
        "interval_high", "time_to_train_s", "time_to_train_low_s",     "time_to_train_high_s",
        "cost_usd",      "cost_low_usd",    "cost_high_usd",           "bill_usd",
        "bill_low_usd",  "bill_high_usd",   "epochs_to_train",         "bottleneck"};
    constexpr auto kColumns = sweep_columns();
    auto place = [&](std::string_view name) -> std::size_t {
        for (std::size_t k = 0; k < kColumns.size(); ++k) {
            if (kColumns[k].name == name) return k;
        }
        return kColumns.size();
    };
    ColumnSelection selected;
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        const std::string_view name = list.substr(start, comma - start);
        start = comma + 1;
        const bool scenario = name == "scenario" || name == "default";
        const bool results = name == "results" || name == "default";
        if (name == "all") {
            selected.set();
        } else if (scenario || results) {
            if (scenario) {
                for (std::size_t k = 0; k < std::size(detail::kScenarioColumns); ++k) selected.set(k);
            }
            if (results) {
                for (std::string_view result : kResults) selected.set(place(result));
            }
        } else if (const std::size_t k = place(name); k < kColumns.size()) {
            selected.set(k);
        } else {
            throw InputError("--columns: no column or group '" + escape_for_message(name) +
                             "' (groups: default, all, scenario, results; the columns are the header of a sweep's "
                             "CSV)");
        }
    }
    return selected;
}

PreparedSweep prepare_sweep(const SweepOptions& o) {
    check_counts(o);
    const ColumnSelection columns = parse_columns(o.columns);
#ifndef EPOCHCAST_WITH_SIMULATOR
    if (o.simulate) {
        throw InputError(kNoSimulator);
    }
#endif
    CostModel model(load_catalog(o.catalogs), load_calibration(o.calibration));
    SweepSpec spec = o.spec_text ? parse_sweep_spec(*o.spec_text, o.spec, model.catalog())
                                 : read_sweep_spec(o.spec, model.catalog());
    Scenario target;
    o.target.apply(target);
    if (target.target_top1_percent > 0) {
        if (spec.epochs_given)
            throw InputError(o.spec + ": the spec's \"epochs\" and --target-top1 exclude each other");
        spec.target_top1_percent = target.target_top1_percent;
        spec.recipe = target.recipe;
    }
    // The SimGrid runs fork a child each; forking from several threads is not safe, so a simulated
    // sweep evaluates one scenario at a time per process (use mpirun ranks to spread it).
    const int jobs = o.simulate   ? 1
                     : o.jobs > 0 ? o.jobs
                                  : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    return {std::move(model), std::move(spec), jobs,   o.simulate ? std::size_t{1} : std::size_t{4096},
            o.simulate,       o.iterations,    columns};
}

PreparedSweep prepare_sweep(const std::vector<std::string>& args, const std::optional<std::string>& spec_text) {
    CLI::App app("epochcast sweep", "epochcast");
    app.require_subcommand(1);
    CLI::App* cmd = app.add_subcommand("sweep");
    SweepOptions options;
    add_sweep_flags(*cmd, options);
    std::vector<std::string> all{"sweep"};
    all.insert(all.end(), args.begin(), args.end());
    std::ostringstream unused;
    parse_and_run(app, all, unused);
    options.spec_text = spec_text;
    return prepare_sweep(options);
}

bool SweepEvaluator::evaluate(std::size_t index, ScenarioResult& result, std::string& reason) const {
    result.scenario = sweep_.spec.scenario_at(index, sweep_.model.catalog());
    const Scenario& s = result.scenario;
    try {
        // Most infeasible rows are batches too large for the GPU's memory: said without an exception.
        ResolvedScenario resolved;
        if (!sweep_.model.resolve_feasible(s, resolved, reason)) {
            reason = in_spec_terms(reason);
            return false;
        }
        // A row marked feasible holds finite, non-negative figures; the closed form's check also
        // says why a spot run never finishes, as predict does.
        if (sweep_.simulate) {
            result.prediction = simulated(sweep_, s);
            check_prediction(result.prediction);
        } else {
            result.prediction = sweep_.model.checked_predict(resolved);
        }
        result.curve_origin = resolved.curve_origin;
        return true;
    } catch (const InputError& error) {  // InfeasibleError included: the row says why, in the spec's keys
        reason = in_spec_terms(error.what());
        return false;
    }
}

void register_sweep(CLI::App& app, std::ostream& out) {
    auto options = std::make_shared<SweepOptions>();
    CLI::App* cmd = app.add_subcommand(
        "sweep",
        "Predict every combination of a sweep spec (a JSON object of Scenario fields, each a value or a list; "
        "docs/formats.md, \"Sweep spec\"). One row per combination: its scenario and results (--columns all: every "
        "Prediction field); an infeasible "
        "one says why. CSV to "
        "stdout unless -o names a .csv or .json file. Under mpirun the ranks share the rows and rank 0 writes.");
    add_sweep_flags(*cmd, *options);
    cmd->add_option("-o,--output", options->output, "Output file, .csv or .json (default: CSV to stdout)");
    cmd->add_option("--plot", options->plot,
                    "Also draw the scaling curve, time against cost and the breakdown (.png or .svg)");
    cmd->callback([options, &out] { run_sweep(*options, out); });
}

}  // namespace epochcast::cli
