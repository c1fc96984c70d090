// `epochcast sweep`'s engine, shared by the subcommand (cli/sweep.cpp, which writes CSV or JSON) and
// the Python module (python/, which fills a DataFrame's columns): the flags, checked and read into a
// model and a spec; the evaluation of one combination; and the threads that evaluate the rows in
// chunks and hand them on in order.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "cli/common.hpp"
#include "cli/mpi_world.hpp"
#include "cli/report.hpp"
#include "cli/sweep_row.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/sweep.hpp"

namespace epochcast::cli {

/// sweep's flags (docs/cli.md, "sweep").
struct SweepOptions {
    std::string spec;
    std::optional<std::string> spec_text;  ///< the spec itself (not a flag: Python's dict); `spec` names it
    std::string output;
    int jobs = 0;  ///< 0: the machine's cores (the flag left out)
    CLI::Option* jobs_option = nullptr;
    bool simulate = false;
    int iterations = 10;
    std::vector<std::string> catalogs;
    std::string calibration = "built-in";
    std::string plot;
    std::string columns = "default";  ///< --columns: names and groups (parse_columns)
    TargetFlags target;
};

/// `--columns`: a comma-separated list of column names (sweep_columns()) and groups: `all` (every
/// column), `scenario` (the scenario's columns with `feasible` and `reason`), `results` (the GPUs,
/// global batch, throughput, time to train, cost and bill with their bands, the epochs and the
/// bottleneck) and `default` (scenario and results, what a sweep writes unless told: issue 60's
/// million rows in 1.5 s). They are written in sweep_columns()' order whatever the list's.
/// InputError naming an unknown name, and the groups.
ColumnSelection parse_columns(std::string_view list);

/// Register SPEC, --jobs, --simulate, --iterations, --catalog, --calibration, --target-top1 and
/// --recipe: every flag but the outputs (-o, --plot).
void add_sweep_flags(CLI::App& command, SweepOptions& options);

/// What a sweep evaluates: the model, the spec with --target-top1 applied, and how.
struct PreparedSweep {
    CostModel model;
    SweepSpec spec;
    int jobs = 1;                ///< threads evaluating rows
    std::size_t chunk_rows = 1;  ///< rows a thread evaluates at a time
    bool simulate = false;
    int iterations = 10;
    ColumnSelection columns = all_columns();  ///< what the rows hold (--columns)
};

/// Check `options` as `epochcast sweep` does (--jobs, --iterations, --simulate where SimGrid is not
/// built), read the catalogs, the calibration and the spec (spec_text when given, else the file) and
/// apply --target-top1. InputError naming the flag, the file or the spec's key otherwise.
PreparedSweep prepare_sweep(const SweepOptions& options);

/// `epochcast sweep ARGS` (the arguments after `sweep`, without -o and --plot) parsed as the
/// subcommand parses them and prepared; `spec_text`, when given, is the spec itself, which SPEC
/// then only names in errors.
PreparedSweep prepare_sweep(const std::vector<std::string>& args, const std::optional<std::string>& spec_text);

/// Refuses, before anything runs, a simulated sweep whose rows `rows` (a process's share: its block
/// under mpirun, or all of them) are estimated to take longer than `simulate`'s own limit
/// (sim::kMaxEstimatedWallS), with an InputError saying how long and what to change; a combination
/// that cannot be simulated is left to its row's error. Does nothing for a sweep without --simulate.
void check_simulated_work(const PreparedSweep& sweep, IndexRange rows);

/// Evaluates combinations of a prepared sweep.
class SweepEvaluator {
public:
    explicit SweepEvaluator(const PreparedSweep& sweep) : sweep_(sweep) {}

    /// Combination `index`: sets result.scenario; when the model accepts it (finite, non-negative
    /// figures), result.prediction and result.curve_origin and returns true; else `reason` (an
    /// InputError's message, InfeasibleError's included; a batch too large for the GPU's memory
    /// without an exception: CostModel::resolve_feasible) and returns false. Reusing `result` and
    /// `reason` from row to row saves their allocations.
    bool evaluate(std::size_t index, ScenarioResult& result, std::string& reason) const;

private:
    const PreparedSweep& sweep_;
};

/// Evaluate rows [range.first, range.last) on `jobs` threads in chunks of `chunk_rows`:
/// `make(first, last)` builds a chunk on a worker thread, `sink(chunk)` takes them on the calling
/// thread in index order, with at most four chunks per thread waiting for it. `interrupted()` is
/// asked on the calling thread before each chunk and every 50 ms while it waits; when it says true
/// the work stops and this returns true (false when every chunk went to `sink`). The threads are
/// joined on every path: an exception from `sink` or from a worker (rethrown here, unless
/// `interrupted()` says true by then: the interruption's own doing) stops them first, and a thread
/// that cannot be started is an InputError naming --jobs.
template <typename Make, typename Sink, typename Interrupted>
bool evaluate_range(IndexRange range, int jobs, std::size_t chunk_rows, Make&& make, Sink&& sink,
                    Interrupted&& interrupted) {
    using Chunk = std::invoke_result_t<Make&, std::size_t, std::size_t>;
    const std::size_t count = range.last - range.first;
    const std::size_t chunks = (count + chunk_rows - 1) / chunk_rows;
    const std::size_t window = static_cast<std::size_t>(jobs) * 4;  // chunks ahead of the sink, at most
    std::atomic<std::size_t> next{0};
    std::mutex mutex;
    std::condition_variable ready;
    std::condition_variable space;
    bool stop = false;                  // guarded by mutex
    std::exception_ptr worker_failure;  // guarded by mutex: the first exception a worker threw
    std::map<std::size_t, Chunk> done;
    std::size_t consumed = 0;

    auto worker = [&] {
        try {
            for (;;) {
                const std::size_t c = next.fetch_add(1);
                if (c >= chunks) return;
                {
                    std::unique_lock lock(mutex);
                    space.wait(lock, [&] { return c < consumed + window || stop; });
                    if (stop) return;
                }
                const std::size_t first = range.first + c * chunk_rows;
                Chunk chunk = make(first, std::min(range.last, first + chunk_rows));
                std::lock_guard lock(mutex);
                done.emplace(c, std::move(chunk));
                ready.notify_all();
            }
        } catch (...) {
            std::lock_guard lock(mutex);
            if (!worker_failure) worker_failure = std::current_exception();
            stop = true;
            ready.notify_all();
            space.notify_all();
        }
    };
    std::vector<std::thread> threads;
    struct Joiner {  // stops and joins the workers however this function ends
        std::vector<std::thread>& threads;
        std::mutex& mutex;
        bool& stop;
        std::condition_variable& space;
        ~Joiner() {
            {
                std::lock_guard lock(mutex);
                stop = true;
            }
            space.notify_all();
            for (std::thread& t : threads) t.join();
        }
    } joiner{threads, mutex, stop, space};
    threads.reserve(static_cast<std::size_t>(jobs));
    for (int j = 0; j < jobs; ++j) {
        try {
            threads.emplace_back(worker);
        } catch (const std::system_error& error) {
            throw InputError("--jobs " + std::to_string(jobs) + ": could not start thread " + std::to_string(j + 1) +
                             " (" + error.code().message() + "); give fewer");
        }
    }

    for (std::size_t c = 0; c < chunks; ++c) {
        for (;;) {  // wake now and then to notice an interruption while a slow chunk (a simulation) runs
            if (interrupted()) return true;  // the joiner stops the workers
            std::unique_lock lock(mutex);
            if (ready.wait_for(lock, std::chrono::milliseconds(50),
                               [&] { return done.count(c) > 0 || worker_failure; }))
                break;
        }
        Chunk chunk;
        {
            std::lock_guard lock(mutex);
            if (worker_failure) {
                if (interrupted()) return true;  // a chunk the interruption cancelled (a simulation)
                std::rethrow_exception(worker_failure);
            }
            chunk = std::move(done.at(c));
            done.erase(c);
            ++consumed;
        }
        space.notify_all();
        sink(chunk);
    }
    return false;
}

}  // namespace epochcast::cli
