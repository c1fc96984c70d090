// Reading a catalog file of N entries (half GPUs, half instances naming them), then merging it over
// the built-in one, as `--catalog FILE` does: the time per entry stays flat as N grows (linear;
// issue 42, item 9: 100,000 entries took over a minute when each lookup of a name scanned them).
// Run: build/bench/catalog_bench
#include <benchmark/benchmark.h>

#include <string>

#include "model/catalog.hpp"

namespace {

using namespace epochcast;

/// `entries` / 2 GPUs and as many instances, each of its own GPU.
std::string catalog_text(int entries) {
    const int each = entries / 2;
    std::string text = R"({"schema": "epochcast.catalog/1", "gpus": [)";
    for (int i = 0; i < each; ++i) {
        if (i > 0) text += ',';
        text += R"({"name": "gpu-)" + std::to_string(i) +
                R"(", "fp32_tflops": 15, "fp16_tflops": 120, "memory_gib": 32, "memory_GBps": 900, "source": "b"})";
    }
    text += R"(], "instances": [)";
    for (int i = 0; i < each; ++i) {
        if (i > 0) text += ',';
        text += R"({"name": "node-)" + std::to_string(i) + R"(", "gpu": "gpu-)" + std::to_string(i) +
                R"(", "gpus": 8, "vcpus": 96, "memory_gib": 768, "network_gbps": 100, "price_usd_per_hour": 3,
                   "source": "b"})";
    }
    return text + "]}";
}

void BM_LoadCatalog(benchmark::State& state) {
    const std::string text = catalog_text(static_cast<int>(state.range(0)));
    for (auto _ : state) {
        Catalog catalog = Catalog::built_in();
        catalog.merge(Catalog::parse(text, "bench.json", catalog));
        benchmark::DoNotOptimize(catalog);
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_LoadCatalog)->Arg(10'000)->Arg(30'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
