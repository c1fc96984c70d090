// Wall time and memory of one simulated ResNet-50 iteration at cluster scale (issue 4 targets:
// 256 GPUs <= 0.5 s, 1,024 GPUs <= 5 s, 4,096 GPUs under 2 GB; issue 25: a 256-GPU
// parameter-server iteration <= 0.5 s). Built only with SimGrid.
// Run: build/bench/simulate_bench --benchmark_repetitions=3 ; figures go to docs/performance.md.
// Each iteration of the benchmark is a whole simulate() call: fork, platform, actors, run, result.
#include <benchmark/benchmark.h>

#include "model/cost_model.hpp"
#include "simulator/simulation.hpp"

namespace {

using namespace epochcast;

const CostModel& model() {
    static const CostModel instance(Catalog::built_in(), Calibration::built_in());
    return instance;
}

/// Simulate one iteration of `s` per benchmark iteration and report the last run's figures.
void simulate_one_iteration(benchmark::State& state, const Scenario& s, const char* form) {
    sim::SimulationOptions options;
    options.iterations = 1;
    sim::SimulationResult last;
    for (auto _ : state) {
        last = sim::simulate(model(), s, options);
        benchmark::DoNotOptimize(last);
    }
    state.counters["child_wall_s"] = last.wall_s;
    state.counters["peak_MiB"] = last.peak_memory_MiB;
    state.counters["transfers"] = static_cast<double>(last.transfers);
    state.counters["coarse"] = last.granularity == sim::Granularity::coarse ? 1 : 0;
    state.SetLabel(std::string(to_string(last.granularity)) + " " + form);
}

/// 32, 128 or 512 x p3.16xlarge (8 V100 each), hierarchical all-reduce, Horovod's 64 MiB buckets.
void BM_SimulateOneIteration(benchmark::State& state) {
    Scenario s;
    s.instance = "p3.16xlarge";
    s.nodes = static_cast<int>(state.range(0));
    s.strategy = Strategy::hierarchical;
    s.fusion_threshold_MiB = 64;
    state.counters["gpus"] = s.nodes * 8;
    simulate_one_iteration(state, s, "collectives");
}
BENCHMARK(BM_SimulateOneIteration)->Arg(32)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();

/// Parameter servers under MXNet on `nodes` x p3.16xlarge: `servers` m4.16xlarge, or co-located (0).
Scenario parameter_servers(int nodes, int servers) {
    Scenario s;
    s.nodes = nodes;
    s.strategy = Strategy::ps;
    s.framework = Framework::mxnet;
    if (servers == 0) {
        s.ps_colocated = true;
    } else {
        s.ps_instance = "m4.16xlarge";
        s.ps_nodes = servers;
    }
    return s;
}

/// The 64-GPU parameter-server seed cluster (8 x p3.16xlarge, 16 x m4.16xlarge servers).
void BM_SimulateParameterServers(benchmark::State& state) {
    simulate_one_iteration(state, parameter_servers(8, 16), "push/pull");
}
BENCHMARK(BM_SimulateParameterServers)->Unit(benchmark::kMillisecond)->UseRealTime();

/// 256 GPUs on parameter servers (32 x p3.16xlarge): argument 0 co-located servers, else that many
/// m4.16xlarge servers; --granularity auto (coarse here, docs/model.md).
void BM_SimulateParameterServers256(benchmark::State& state) {
    simulate_one_iteration(state, parameter_servers(32, static_cast<int>(state.range(0))), "push/pull");
}
BENCHMARK(BM_SimulateParameterServers256)->Arg(0)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
