// How long the what-if window takes from an input change to updated outputs (issue 8 target:
// within 50 ms). Google Benchmark drives the real window offscreen: each iteration changes the
// node count through the spin box (as typing does), which recomputes synchronously: the
// prediction, its band, the scaling curve (1..64 nodes), the scatter over every GPU instance type
// (1..32 nodes) with its Pareto front, the pin table and the three charts, rebuilt through
// gui/charts (epochcast_charts, as the CLI's --plot draws them). Then the window is
// painted (grab), the part a user sees. Run: QT_QPA_PLATFORM=offscreen build/bench/gui_update_bench
#include <benchmark/benchmark.h>

#include <QApplication>
#include <QSpinBox>

#include "gui/app/main_window.hpp"

namespace {

epochcast::gui::MainWindow& window() {
    static epochcast::gui::MainWindow* instance = [] {
        auto* w = new epochcast::gui::MainWindow;
        w->resize(1500, 960);
        w->show();
        QApplication::processEvents();
        return w;
    }();
    return *instance;
}

void BM_InputChangeToOutputs(benchmark::State& state) {
    auto& w = window();
    auto* nodes = w.findChild<QSpinBox*>("nodes");
    int n = 1;
    double recompute_max_s = 0, recompute_sum_s = 0;
    for (auto _ : state) {
        n = n % 32 + 1;
        nodes->setValue(n);  // emits valueChanged: the window recomputes at once
        // The replaced charts go as the event loop would take them (deleteLater), inside the timing.
        QApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
        recompute_sum_s += w.lastRecomputeSeconds();
        recompute_max_s = std::max(recompute_max_s, w.lastRecomputeSeconds());
    }
    state.counters["recompute_mean_ms"] = 1e3 * recompute_sum_s / static_cast<double>(state.iterations());
    state.counters["recompute_max_ms"] = 1e3 * recompute_max_s;
}
BENCHMARK(BM_InputChangeToOutputs)->Unit(benchmark::kMillisecond);

void BM_InputChangeToPaintedWindow(benchmark::State& state) {
    auto& w = window();
    auto* nodes = w.findChild<QSpinBox*>("nodes");
    int n = 1;
    for (auto _ : state) {
        n = n % 32 + 1;
        nodes->setValue(n);
        // The replaced charts go as the event loop would take them (deleteLater), inside the timing.
        QApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
        benchmark::DoNotOptimize(w.grab());  // lays out and paints every widget and chart
    }
}
BENCHMARK(BM_InputChangeToPaintedWindow)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
