// `epochcast sweep` end to end: 1,000,000 analytic scenarios (bench/specs/million.json: five
// instances, four strategies, 50 node counts, five batches, ten epoch counts, two precisions, two
// price lists, five image sizes; 23% of them infeasible, each with its reason) written to a CSV
// file. Targets: the default columns (the scenario and its results, 38) in at most 1.5 s with 2
// jobs (issue 60); every column (`--columns all`, 89) in at most 2 s (issue 7), on the 2-core
// development machine.
// Run: build/bench/sweep_bench --benchmark_min_time=1 ; figures go to docs/performance.md.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "cli/app.hpp"

namespace {

#ifndef EPOCHCAST_SOURCE_DIR
#define EPOCHCAST_SOURCE_DIR "."
#endif

void sweep_million(benchmark::State& state, const std::string& columns) {
    const std::string spec = std::string(EPOCHCAST_SOURCE_DIR) + "/bench/specs/million.json";
    const std::filesystem::path output = std::filesystem::temp_directory_path() / "epochcast_sweep_bench.csv";
    const std::string jobs = std::to_string(state.range(0));
    std::size_t rows = 0;
    for (auto _ : state) {
        std::ostringstream out;
        epochcast::cli::run({"sweep", spec, "-o", output.string(), "--jobs", jobs, "--columns", columns}, out);
        state.PauseTiming();
        std::ifstream in(output);
        rows = 0;
        std::string line;
        while (std::getline(in, line)) ++rows;
        --rows;  // the header
        if (rows != 1'000'000) throw std::runtime_error("expected 1,000,000 rows, got " + std::to_string(rows));
        state.ResumeTiming();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * rows));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * std::filesystem::file_size(output)));
    std::filesystem::remove(output);
}
/// The default columns (an earlier revision's benchmark of this name wrote its own default).
void BM_SweepMillionToCsv(benchmark::State& state) { sweep_million(state, "default"); }
BENCHMARK(BM_SweepMillionToCsv)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_SweepMillionAllColumnsToCsv(benchmark::State& state) { sweep_million(state, "all"); }
BENCHMARK(BM_SweepMillionAllColumnsToCsv)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
