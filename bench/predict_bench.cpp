// Predictions per second of the analytic model on one core (issue 2 target: >= 2 million/s).
// Run: build/bench/predict_bench --benchmark_min_time=1 ; figures go to docs/performance.md.
#include <benchmark/benchmark.h>

#include <vector>

#include "model/cost_model.hpp"

namespace {

using namespace epochcast;

const CostModel& model() {
    static const CostModel instance(Catalog::built_in(), Calibration::built_in());
    return instance;
}

/// A spread of resolved scenarios (strategies, node counts, batches) so nothing is constant-folded.
std::vector<ResolvedScenario> scenarios() {
    std::vector<ResolvedScenario> out;
    for (Strategy strategy : {Strategy::nccl, Strategy::ring, Strategy::hierarchical, Strategy::tree, Strategy::ps}) {
        for (int nodes : {1, 2, 4, 8, 16, 32, 64}) {
            for (int batch : {32, 64, 128, 256}) {
                Scenario s;
                s.strategy = strategy;
                s.nodes = nodes;
                s.batch_per_gpu = batch;
                if (strategy == Strategy::ps) {
                    s.ps_instance = "m4.16xlarge";
                    s.ps_nodes = 2 * nodes;
                }
                out.push_back(model().resolve(s));
            }
        }
    }
    return out;
}

void BM_Predict(benchmark::State& state) {
    const std::vector<ResolvedScenario> inputs = scenarios();
    std::size_t i = 0;
    for (auto _ : state) {
        Prediction p = model().predict(inputs[i]);
        benchmark::DoNotOptimize(p);
        if (++i == inputs.size()) i = 0;
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Predict);

void BM_ResolveAndPredict(benchmark::State& state) {
    Scenario s;
    s.nodes = 16;
    for (auto _ : state) {
        Prediction p = model().predict(s);
        benchmark::DoNotOptimize(p);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ResolveAndPredict);

}  // namespace

BENCHMARK_MAIN();
