// Training throughput of the CPU backend (executor/cpu/) on this machine, beside the bf16 matmul
// peak measured in the same program (issue 5). Figures go to docs/performance.md.
// Run: build/bench/cpu_train_bench                      (all configurations)
//      build/bench/cpu_train_bench --benchmark_filter=224  (ResNet-50 at 224 px only)
//      build/bench/cpu_train_bench --benchmark_filter=weight_gradient  (the 1x1 and 3x3 weight
//                        gradients: our kernels against oneDNN's, per ResNet-50 layer shape)
// Counters: images_per_s (whole steps: forward, backward, SGD update, weight refresh);
// update_ms_per_step (the SGD update and the refresh); fraction_of_bf16_peak = images_per_s x training FLOP per image
// (model/'s make_workload: 3 x forward MACs x 2, 24.5 GFLOP for ResNet-50 at 224 px) / the bf16
// matmul peak on the same thread count.
#include <benchmark/benchmark.h>

#include <omp.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "executor/cpu/kernels.hpp"
#include "executor/cpu/layers.hpp"
#include "executor/cpu/network.hpp"
#include "model/workload.hpp"

namespace {

using namespace epochcast;

/// GFLOP/s of oneDNN's bf16 matmul, 2048 x 2048 x 2048, best of 5 after a warm-up, on `threads`.
double bf16_matmul_peak_gflops(int threads) {
    static std::map<int, double> measured;
    if (auto found = measured.find(threads); found != measured.end()) return found->second;
    omp_set_num_threads(threads);
    constexpr dnnl::memory::dim kSide = 2048;
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    const dnnl::memory::desc a({kSide, kSide}, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::ab);
    const dnnl::memory::desc c({kSide, kSide}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
    const auto pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, a, c), engine);
    dnnl::memory src(a, engine), weights(a, engine), dst(c, engine);
    std::fill_n(static_cast<std::uint16_t*>(src.get_data_handle()), kSide * kSide, 0x3f80);  // 1.0
    std::fill_n(static_cast<std::uint16_t*>(weights.get_data_handle()), kSide * kSide, 0x3f80);
    const dnnl::matmul matmul(pd);
    double best_s = 1e30;
    for (int rep = 0; rep < 6; ++rep) {
        const auto start = std::chrono::steady_clock::now();
        matmul.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}});
        stream.wait();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (rep > 0) best_s = std::min(best_s, seconds);
    }
    return measured[threads] = 2.0 * kSide * kSide * kSide / best_s / 1e9;
}

/// One training step per iteration: ResNet-50, `image` px, batch 16, synthetic normal images.
/// own_kernels false: oneDNN computes everything (executor/cpu/kernels.hpp's kernels not used).
/// No layout: the one make_cpu_network chooses on this CPU (default_layout).
void train(benchmark::State& state, int image, Precision precision, int threads, std::optional<cpu::Layout> layout,
           bool own_kernels = true) {
    constexpr int kBatch = 16;
    NetworkSpec spec;
    spec.architecture = build_resnet("resnet50", image, 1000);
    spec.batch = kBatch;
    spec.precision = precision;
    spec.threads = threads;
    const double peak_gflops = bf16_matmul_peak_gflops(threads);
    cpu::set_own_kernels_enabled(own_kernels);
    auto network = make_cpu_network(spec, layout.value_or(default_layout(spec)));
    cpu::set_own_kernels_enabled(true);
    std::vector<float> images(static_cast<std::size_t>(kBatch) * 3 * image * image);
    std::mt19937_64 generator(1);
    std::normal_distribution<float> normal;
    for (float& value : images) value = normal(generator);
    std::vector<std::int32_t> labels(kBatch);
    for (int n = 0; n < kBatch; ++n) labels[n] = n * 37 % 1000;
    // One iteration is one whole training step as epochcast-train runs it on one rank (and as
    // PyTorch's step in bench/pytorch_resnet50.py): forward, backward, the SGD update, and the
    // refresh of the bf16 working weights from the fp32 master weights (optimizer_step does both,
    // layer by layer).
    constexpr double kLearningRate = 1e-4;
    double update_s = 0;
    auto step = [&] {
        const double loss = network->train_step(images.data(), labels.data(), nullptr);
        const auto update_start = std::chrono::steady_clock::now();
        network->optimizer_step(kLearningRate);  // refreshes the working copies too
        update_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - update_start).count();
        return loss;
    };
    for (int warmup = 0; warmup < 2; ++warmup) step();
    update_s = 0;
    for (auto _ : state) benchmark::DoNotOptimize(step());
    state.counters["images_per_s"] = benchmark::Counter(kBatch, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["update_ms_per_step"] = 1e3 * update_s / static_cast<double>(state.iterations());
    const double flops_per_image = make_workload(spec.architecture).training_flops_per_image;
    // FLOP per image / peak FLOP per second: multiplied by images/s it is the fraction of peak.
    state.counters["fraction_of_bf16_peak"] = benchmark::Counter(kBatch * flops_per_image / (peak_gflops * 1e9),
                                                                 benchmark::Counter::kIsIterationInvariantRate);
    state.counters["bf16_peak_GFLOPps"] = peak_gflops;
    state.SetLabel(network->implementation());
}

/// The weight gradient of one stride-1 bf16 convolution of ResNet-50 at 224 px (1x1, or 3x3 padded
/// by 1), batch 16, nChw16c, 2 threads, as the Convolution layer computes it (backward_parameters:
/// the fp32 gradient in the plain arena): with our kernel (executor/cpu/kernels.hpp), or with
/// oneDNN 2.6's primitive and its reorder to the arena (`own` false).
void weight_gradient(benchmark::State& state, int kernel, int in_channels, int out_channels, int side, bool own) {
    constexpr int kBatch = 16, kThreads = 2;
    if (own && !cpu::conv1x1_weight_gradient_applies({kBatch, in_channels, out_channels, side * side})) {
        state.SkipWithError("no AVX512-BF16 on this CPU");
        return;
    }
    cpu::Context context(kThreads);
    cpu::Activation x = cpu::make_activation(context, cpu::activation_desc(kBatch, Shape{in_channels, side, side},
                                                                           cpu::DataType::bf16, cpu::Layout::blocked));
    cpu::Activation y = cpu::make_activation(context, cpu::activation_desc(kBatch, Shape{out_channels, side, side},
                                                                           cpu::DataType::bf16, cpu::Layout::blocked));
    std::vector<float> weights(std::size_t(out_channels) * in_channels * kernel * kernel), gradient(weights.size());
    cpu::set_own_kernels_enabled(own);
    cpu::Convolution convolution(context, cpu::Window{kernel, 1, kernel / 2}, x, y,
                                 cpu::ParameterView{weights.data(), gradient.data()}, cpu::DataType::bf16,
                                 /*input_gradient=*/true);
    y.diff = dnnl::memory(y.value.get_desc(), context.engine());
    convolution.bind_backward(context);
    cpu::set_own_kernels_enabled(true);
    if (convolution.own_weight_gradient() != own) {
        state.SkipWithError("the layer did not take the path asked for");
        return;
    }
    context.finalize();
    std::mt19937 generator(1);
    std::uniform_real_distribution<float> uniform(0.125f, 1.0f);
    for (dnnl::memory* tensor : {&x.value, &y.diff}) {
        std::vector<float> values(tensor->get_desc().get_size() / sizeof(std::uint16_t));
        for (float& value : values) value = uniform(generator);
        cpu::write_plain(context, *tensor, values.data());
    }
    omp_set_num_threads(kThreads);
    convolution.backward_parameters(context);
    for (auto _ : state) convolution.backward_parameters(context);
    state.SetLabel(own ? "own kernel" : "oneDNN primitive + reorder");
    const double flops = 2.0 * kBatch * side * side * double(in_channels) * out_channels * kernel * kernel;
    state.counters["GFLOPps"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
    struct Config {
        const char* name;
        int image;
        Precision precision;
        int threads;
        std::optional<cpu::Layout> layout;  ///< none: the default (oneDNN's choice on this CPU)
        int iterations;
        bool own_kernels = true;
    };
    const Config configs[] = {
        // The layout make_cpu_network chooses here (nChw16c without AMX, NHWC with), then each
        // layout by name, to compare them on one CPU.
        {"resnet50/224px/b16/bf16/2t/default", 224, Precision::bf16, 2, std::nullopt, 5},
        {"resnet50/224px/b16/bf16/2t/blocked", 224, Precision::bf16, 2, cpu::Layout::blocked, 5},
        // The same with oneDNN for every layer: with --benchmark_enable_random_interleaving and
        // repetitions, the two alternate, so a host whose speed drifts affects both alike.
        {"resnet50/224px/b16/bf16/2t/blocked/onednn-only", 224, Precision::bf16, 2, cpu::Layout::blocked, 5, false},
        {"resnet50/224px/b16/fp32/2t/blocked", 224, Precision::fp32, 2, cpu::Layout::blocked, 3},
        {"resnet50/64px/b16/bf16/1t/blocked", 64, Precision::bf16, 1, cpu::Layout::blocked, 10},
        {"resnet50/64px/b16/bf16/1t/blocked/onednn-only", 64, Precision::bf16, 1, cpu::Layout::blocked, 10, false},
        {"resnet50/64px/b16/fp32/1t/blocked", 64, Precision::fp32, 1, cpu::Layout::blocked, 10},
        {"resnet50/224px/b16/fp32/2t/nhwc", 224, Precision::fp32, 2, cpu::Layout::nhwc, 3},
        {"resnet50/224px/b16/bf16/2t/nhwc", 224, Precision::bf16, 2, cpu::Layout::nhwc, 5},
    };
    for (const Config& config : configs) {
        if (config.precision == Precision::bf16 && !cpu::cpu_has_native_bf16()) continue;
        benchmark::RegisterBenchmark(config.name,
                                     [config](benchmark::State& state) {
                                         train(state, config.image, config.precision, config.threads, config.layout,
                                               config.own_kernels);
                                     })
            ->Iterations(config.iterations)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    }
    // Every 1x1 stride-1 shape of ResNet-50's bottlenecks at 224 px (input, output channels, side).
    const int shapes[][3] = {{64, 64, 56},    {64, 256, 56},   {256, 64, 56},  {256, 128, 56},
                             {128, 512, 28},  {512, 128, 28},  {512, 256, 28}, {256, 1024, 14},
                             {1024, 256, 14}, {1024, 512, 14}, {512, 2048, 7}, {2048, 512, 7}};
    if (!cpu::cpu_has_native_bf16()) return;
    for (const auto& [in, out, side] : shapes) {
        for (const bool own : {false, true}) {
            const std::string name = "conv1x1_weight_gradient/" + std::to_string(in) + "to" + std::to_string(out) +
                                     "@" + std::to_string(side) + (own ? "/own" : "/onednn");
            benchmark::RegisterBenchmark(
                name.c_str(), [=](benchmark::State& state) { weight_gradient(state, 1, in, out, side, own); })
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime()
                ->MinTime(0.3);
        }
    }
    // The 3x3 stride-1 shapes (channels in = out, side) of the bottlenecks after each stage's first,
    // where the layer takes our kernel (not 512 @ 7: conv3x3_weight_gradient_preferred).
    for (const auto& [channels, side] : {std::pair{64, 56}, std::pair{128, 28}, std::pair{256, 14}}) {
        for (const bool own : {false, true}) {
            const std::string name = "conv3x3_weight_gradient/" + std::to_string(channels) + "@" +
                                     std::to_string(side) + (own ? "/own" : "/onednn");
            benchmark::RegisterBenchmark(
                name.c_str(),
                [=](benchmark::State& state) { weight_gradient(state, 3, channels, channels, side, own); })
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime()
                ->MinTime(0.3);
        }
    }
}

const bool registered = (register_all(), true);

}  // namespace

BENCHMARK_MAIN();
