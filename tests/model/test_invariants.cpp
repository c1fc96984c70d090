// The answers agree with each other (issue 38): over the whole built-in catalog, every framework,
// precision and loader, a few node counts and batches, turning one knob must move the prediction
// the way the physics says. Each check is a function that lists its violations; it runs on the
// built-in model (which must pass) and on a planted bug (which it must catch). A failure here is a
// bug in the model or its data, never a bound to loosen.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "model/compute_curve.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/whatif.hpp"

namespace epochcast {
namespace {

/// A model as the checks see it: a scenario in, a prediction out, or nothing where the model
/// refuses the scenario (a batch that does not fit, a precision the GPU lacks).
using Predictor = std::function<std::optional<Prediction>(const Scenario&)>;

Predictor predictor_of(const CostModel& model) {
    return [&model](const Scenario& s) -> std::optional<Prediction> {
        try {
            return model.checked_predict(s);
        } catch (const InputError&) {
            return std::nullopt;
        }
    };
}

const CostModel& built_in() {
    static const CostModel model(Catalog::built_in(), Calibration::built_in());
    return model;
}

constexpr Framework kFrameworks[] = {Framework::pytorch, Framework::tensorflow, Framework::mxnet};
constexpr Precision kPrecisions[] = {Precision::fp32, Precision::tf32, Precision::amp, Precision::bf16};
constexpr Loader kLoaders[] = {Loader::framework_default, Loader::cpu, Loader::dali_cpu, Loader::dali,
                               Loader::synthetic};

/// Every instance of the catalog with GPUs (CPU ranks of a host catalog are not in the built-in one).
std::vector<const InstanceSpec*> gpu_instances(const Catalog& catalog) {
    std::vector<const InstanceSpec*> out;
    for (const InstanceSpec& i : catalog.instances()) {
        if (i.gpus > 0 && catalog.device_kind(i) == DeviceKind::gpu) out.push_back(&i);
    }
    return out;
}

Scenario scenario(const std::string& instance, Framework f, Precision p, Loader l, int nodes, int batch) {
    Scenario s;
    s.instance = instance;
    s.framework = f;
    s.precision = p;
    s.loader = l;
    s.nodes = nodes;
    s.batch_per_gpu = batch;
    s.strategy = Strategy::nccl;
    return s;
}

std::string describe_scenario(const Scenario& s) {
    std::ostringstream out;
    out << s.nodes << " x " << s.instance << " (" << (s.gpus_per_node ? s.gpus_per_node : 0) << " GPUs/node), "
        << to_string(s.framework) << " " << to_string(s.precision) << " " << to_string(s.loader) << " batch "
        << s.batch_per_gpu;
    return out.str();
}

using Violations = std::vector<std::string>;

// 1. Precisions of equal tensor rate: bf16 within 5% of amp where the GPU's bf16 and fp16 peaks agree.
Violations bf16_tracks_amp(const Catalog& catalog, const Predictor& predict) {
    Violations v;
    for (const InstanceSpec* instance : gpu_instances(catalog)) {
        const GpuSpec& gpu = catalog.gpu_of(*instance);
        if (!same_family_rate(gpu, Precision::amp, Precision::bf16)) continue;
        for (Framework f : kFrameworks) {
            for (Loader l : kLoaders) {
                for (int nodes : {1, 8}) {
                    for (int batch : {32, 256}) {
                        const auto amp = predict(scenario(instance->name, f, Precision::amp, l, nodes, batch));
                        const auto bf16 = predict(scenario(instance->name, f, Precision::bf16, l, nodes, batch));
                        if (!amp || !bf16) continue;
                        const double ratio = bf16->throughput_images_per_s / amp->throughput_images_per_s;
                        if (std::abs(ratio - 1.0) > 0.05) {
                            v.push_back(
                                describe_scenario(scenario(instance->name, f, Precision::bf16, l, nodes, batch)) +
                                ": bf16 / amp = " + std::to_string(ratio));
                        }
                    }
                }
            }
        }
    }
    return v;
}

/// One GPU of `gpu` alone, on the first instance of the catalog that has it, synthetic data (so
/// that only the chip is compared, not the host's vCPUs).
std::optional<Scenario> one_gpu(const Catalog& catalog, const std::string& gpu, Framework f, Precision p, int batch) {
    for (const InstanceSpec* instance : gpu_instances(catalog)) {
        if (instance->gpu != gpu) continue;
        Scenario s = scenario(instance->name, f, p, Loader::synthetic, 1, batch);
        s.gpus_per_node = 1;
        return s;
    }
    return std::nullopt;
}

// 2. A chip's memory variants (GpuSpec::chip) within 10% of each other, one GPU each.
Violations memory_variants_agree(const Catalog& catalog, const Predictor& predict) {
    Violations v;
    for (const GpuSpec& a : catalog.gpus()) {
        for (const std::string& b : catalog.same_chip(a)) {
            if (b <= a.name) continue;  // each pair once
            for (Framework f : kFrameworks) {
                for (Precision p : kPrecisions) {
                    for (int batch : {32, 128, 256}) {
                        const auto sa = one_gpu(catalog, a.name, f, p, batch), sb = one_gpu(catalog, b, f, p, batch);
                        if (!sa || !sb) continue;
                        const auto pa = predict(*sa), pb = predict(*sb);
                        if (!pa || !pb) continue;
                        const double ratio = pb->throughput_images_per_s / pa->throughput_images_per_s;
                        if (std::abs(std::log(ratio)) > std::log(1.10)) {
                            v.push_back(b + " / " + a.name + " = " + std::to_string(ratio) + " at " +
                                        describe_scenario(*sa));
                        }
                    }
                }
            }
        }
    }
    return v;
}

/// Each GPU and the one that followed it in the same line of products (the same form factor and
/// role), from NVIDIA's datasheets' generations: Volta -> Ampere -> Hopper -> Blackwell for the SXM
/// flagships, and so on. The H200 is Hopper's memory refresh of 2024, B200's contemporary rather
/// than its predecessor: Lambda's published runs put the two at one speed (3,079 and 3,076 images/s
/// per GPU), so B200 is held to the H100, not the H200.
constexpr std::pair<const char*, const char*> kSuccessors[] = {
    {"K80", "V100-SXM2-16GB"},
    {"V100-SXM2-16GB", "A100-SXM4-40GB"},
    {"V100-SXM2-32GB", "A100-SXM4-80GB"},
    {"A100-SXM4-40GB", "H100-SXM5-80GB"},
    {"A100-SXM4-80GB", "H100-SXM5-80GB"},
    {"A100-SXM4-80GB", "H200-SXM-141GB"},
    {"H100-SXM5-80GB", "B200"},
    {"V100S-PCIE-32GB", "A100-PCIE-40GB"},
    {"A100-PCIE-80GB", "H100-PCIE-80GB"},
    {"T4", "L4"},
    {"A10G", "L40S"},
};

// 3. A newer generation is never slower than the one before it at equal settings in the same framework.
//    At a batch that does not fill the GPU (eq. C1b: half of it at h x SMs images, about 30 on an
//    A100) a kernel runs on part of the SMs, and a newer chip whose SMs are each slower at that
//    precision may trail: the A100's 108 SMs give 19.5 fp32 TFLOP/s, 0.18 each, the V100's 80 give
//    15.7, 0.20 each. There only a batch of 128 is held to it.
Violations newer_generation_not_slower(const Catalog& catalog, const Predictor& predict) {
    Violations v;
    for (const auto& [older, newer] : kSuccessors) {
        const GpuSpec &o = catalog.gpu(older), &n = catalog.gpu(newer);
        for (Framework f : kFrameworks) {
            for (Precision p : kPrecisions) {
                const bool slower_sms =
                    o.sms > 0 && n.sms > 0 && peak_flops_per_s(n, p) / n.sms < peak_flops_per_s(o, p) / o.sms;
                for (int batch : {32, 128}) {
                    if (slower_sms && batch < 128) continue;
                    const auto so = one_gpu(catalog, older, f, p, batch), sn = one_gpu(catalog, newer, f, p, batch);
                    if (!so || !sn) continue;
                    const auto po = predict(*so), pn = predict(*sn);
                    if (!po || !pn) continue;
                    if (pn->throughput_images_per_s < po->throughput_images_per_s * (1 - 1e-9)) {
                        v.push_back(std::string(newer) + " slower than " + older + " at " + describe_scenario(*sn) +
                                    ": " + std::to_string(pn->throughput_images_per_s) + " < " +
                                    std::to_string(po->throughput_images_per_s));
                    }
                }
            }
        }
    }
    return v;
}

// 4. Throughput per GPU never falls as the per-GPU batch grows, up to the largest that fits.
Violations per_gpu_rises_with_batch(const Catalog& catalog, const Predictor& predict) {
    Violations v;
    for (const InstanceSpec* instance : gpu_instances(catalog)) {
        for (Framework f : kFrameworks) {
            for (Precision p : kPrecisions) {
                for (Loader l : {Loader::framework_default, Loader::synthetic}) {
                    for (int nodes : {1, 2, 8}) {
                        double last = 0;
                        for (int batch = 1; batch <= 4096; batch *= 2) {
                            const Scenario s = scenario(instance->name, f, p, l, nodes, batch);
                            const auto prediction = predict(s);
                            if (!prediction) break;  // beyond memory (or a precision the GPU lacks)
                            if (prediction->per_gpu_images_per_s < last * (1 - 1e-9)) {
                                v.push_back(describe_scenario(s) + ": " +
                                            std::to_string(prediction->per_gpu_images_per_s) + " img/s per GPU after " +
                                            std::to_string(last) + " at half the batch");
                            }
                            last = prediction->per_gpu_images_per_s;
                        }
                    }
                }
            }
        }
    }
    return v;
}

// 5. Total throughput never falls as nodes are added at a fixed per-GPU batch, unless the output names
//    the network as the reason (bottleneck communication).
Violations throughput_rises_with_nodes(const Catalog& catalog, const Predictor& predict) {
    Violations v;
    for (const InstanceSpec* instance : gpu_instances(catalog)) {
        for (Framework f : kFrameworks) {
            for (Precision p : {Precision::amp, Precision::fp32}) {
                for (int batch : {32, 256}) {
                    double last = 0;
                    for (int nodes = 1; nodes <= 1024; nodes *= 2) {
                        const Scenario s = scenario(instance->name, f, p, Loader::framework_default, nodes, batch);
                        const auto prediction = predict(s);
                        if (!prediction) break;
                        if (prediction->throughput_images_per_s < last * (1 - 1e-9) &&
                            prediction->bottleneck != Bottleneck::communication) {
                            v.push_back(describe_scenario(s) + ": " +
                                        std::to_string(prediction->throughput_images_per_s) + " img/s after " +
                                        std::to_string(last) + " on half the nodes, bottleneck " +
                                        std::string(to_string(prediction->bottleneck)));
                        }
                        last = prediction->throughput_images_per_s;
                    }
                }
            }
        }
    }
    return v;
}

// 6. The bands hold their point: throughput, time to train and cost.
Violations bands_hold_their_point(const CostModel& model, const Predictor& predict) {
    Violations v;
    for (const InstanceSpec* instance : gpu_instances(model.catalog())) {
        for (Framework f : kFrameworks) {
            for (Precision p : kPrecisions) {
                for (int nodes : {1, 8, 64}) {
                    const Scenario s = scenario(instance->name, f, p, Loader::framework_default, nodes, 64);
                    const auto point = predict(s);
                    if (!point) continue;
                    const PredictionBand band = prediction_band(model.resolve(s), *point);
                    const bool throughput = point->interval.low <= point->throughput_images_per_s &&
                                            point->throughput_images_per_s <= point->interval.high;
                    const bool time = band.fast.time_to_train_s <= point->time_to_train_s &&
                                      point->time_to_train_s <= band.slow.time_to_train_s;
                    const bool cost = band.fast.cost_usd <= point->cost_usd && point->cost_usd <= band.slow.cost_usd;
                    if (!throughput || !time || !cost) {
                        v.push_back(describe_scenario(s) + ": a band misses its point (throughput " +
                                    (throughput ? "ok" : "off") + ", time " + (time ? "ok" : "off") + ", cost " +
                                    (cost ? "ok" : "off") + ")");
                    }
                }
            }
        }
    }
    return v;
}

// 7. Scaling efficiency measures communication and waiting only: exactly 1 on one GPU whatever feeds
//    it (its input bound is input_efficiency's), never above 1, band ends included.
Violations efficiency_is_communication_only(const CostModel& model, const Predictor& predict) {
    Violations v;
    for (const InstanceSpec* instance : gpu_instances(model.catalog())) {
        for (Framework f : kFrameworks) {
            for (Loader l : kLoaders) {
                for (int nodes : {1, 8}) {
                    for (int gpus : {1, 0}) {
                        Scenario s = scenario(instance->name, f, Precision::amp, l, nodes, 64);
                        s.gpus_per_node = gpus;
                        const auto point = predict(s);
                        if (!point) continue;
                        const PredictionBand band = prediction_band(model.resolve(s), *point);
                        const double e = point->scaling_efficiency;
                        const bool one_gpu = point->gpus == 1;
                        if ((one_gpu && std::abs(e - 1.0) > 1e-12) || e > 1.0 + 1e-12 ||
                            band.fast.scaling_efficiency > 1.0 + 1e-12 || band.slow.scaling_efficiency > 1.0 + 1e-12 ||
                            band.fast.node_scaling_efficiency > 1.0 + 1e-12 || !(point->input_efficiency <= 1.0)) {
                            v.push_back(describe_scenario(s) + ": scaling efficiency " + std::to_string(e) + " (band " +
                                        std::to_string(band.slow.scaling_efficiency) + " - " +
                                        std::to_string(band.fast.scaling_efficiency) + ") on " +
                                        std::to_string(point->gpus) + " GPUs, input efficiency " +
                                        std::to_string(point->input_efficiency));
                        }
                    }
                }
            }
        }
    }
    return v;
}

// 8. A bound never widens the band: the fast end of a run with an input pipeline is no faster than
//    the fast end of the same run on synthetic data, which decodes nothing.
Violations input_bound_never_widens_the_band(const Catalog& catalog, const Predictor& predict) {
    Violations v;
    for (const InstanceSpec* instance : gpu_instances(catalog)) {
        for (Framework f : kFrameworks) {
            for (Precision p : {Precision::amp, Precision::bf16, Precision::fp32}) {
                for (int nodes : {1, 8}) {
                    const auto unbound = predict(scenario(instance->name, f, p, Loader::synthetic, nodes, 64));
                    if (!unbound) continue;
                    for (Loader l : {Loader::framework_default, Loader::cpu, Loader::dali_cpu, Loader::dali}) {
                        const Scenario s = scenario(instance->name, f, p, l, nodes, 64);
                        const auto bound = predict(s);
                        if (bound && bound->interval.high > unbound->interval.high * (1 + 1e-9)) {
                            v.push_back(describe_scenario(s) + ": band's fast end " +
                                        std::to_string(bound->interval.high) + " img/s, past synthetic data's " +
                                        std::to_string(unbound->interval.high));
                        }
                    }
                }
            }
        }
    }
    return v;
}

// 9. DALI's GPU decoding follows the GPU's hardware JPEG decoders (eq. D2): a GPU with more decoder
//    cores is fed faster, one GPU for another, on the same host resources. One rate for every GPU
//    (the model before eq. D2) fails it.
Violations dali_follows_the_jpeg_decoders(const Catalog& catalog, const Predictor& predict) {
    struct Fed {
        const GpuSpec* gpu;
        double images_per_s;
    };
    std::vector<Fed> fed;
    for (const InstanceSpec* instance : gpu_instances(catalog)) {
        const auto p = predict(scenario(instance->name, Framework::pytorch, Precision::fp32, Loader::dali, 1, 32));
        if (p && p->data_s > 0) fed.push_back({&catalog.gpu_of(*instance), 32 / p->data_s});
    }
    Violations v;
    for (const Fed& a : fed) {
        for (const Fed& b : fed) {
            if (a.gpu->jpeg_decoder_cores > b.gpu->jpeg_decoder_cores && !(a.images_per_s > b.images_per_s)) {
                v.push_back(a.gpu->name + " (" + std::to_string(a.gpu->jpeg_decoder_cores) +
                            " JPEG decoder cores) fed " + std::to_string(a.images_per_s) + " img/s, not above " +
                            b.gpu->name + " (" + std::to_string(b.gpu->jpeg_decoder_cores) + ") at " +
                            std::to_string(b.images_per_s));
            }
        }
    }
    if (fed.empty()) v.push_back("no GPU instance predicted with DALI");
    return v;
}

// 10. Start-up never shortens as the cluster grows (eq. L1): more nodes to provision and more
//     ranks to bring into the communicators.
Violations startup_never_shortens_with_size(const Catalog& catalog, const Predictor& predict) {
    Violations v;
    for (const InstanceSpec* instance : gpu_instances(catalog)) {
        double previous = 0;
        for (int nodes : {1, 8, 32, 64, 256, 1024}) {
            const auto p =
                predict(scenario(instance->name, Framework::pytorch, Precision::fp32, Loader::synthetic, nodes, 64));
            if (!p) continue;
            if (p->startup_s < previous) {
                v.push_back(instance->name + " x " + std::to_string(nodes) + ": start-up " +
                            std::to_string(p->startup_s) + " s, below " + std::to_string(previous) +
                            " s on fewer nodes");
            }
            previous = p->startup_s;
        }
    }
    return v;
}

// 11. The layout changes the kernels' work per image, not the launches an iteration makes (eq.
//     C1b): its effect on one GPU is never larger at a small batch, where the fixed time is more of
//     the iteration, than at a large one. A software version's speed-up taken for a fixed time of
//     one layout's curve (the A100's TF32 NCHW curve at 31.5 ms) makes NCHW's penalty grow as the
//     batch shrinks, and fails it.
Violations layout_effect_never_grows_as_the_batch_shrinks(const Catalog& catalog, const Predictor& predict) {
    Violations v;
    for (const GpuSpec& gpu : catalog.gpus()) {
        for (Precision p : {Precision::tf32, Precision::amp, Precision::bf16}) {
            for (Framework f : kFrameworks) {
                double effect[2] = {0, 0};
                bool both = true;
                for (int i = 0; i < 2 && both; ++i) {
                    auto cl = one_gpu(catalog, gpu.name, f, p, i == 0 ? 32 : 256);
                    if (!cl) {
                        both = false;
                        break;
                    }
                    Scenario nchw = *cl;
                    cl->memory_format = MemoryFormat::channels_last;
                    nchw.memory_format = MemoryFormat::nchw;
                    const auto a = predict(*cl), b = predict(nchw);
                    if (!a || !b) {
                        both = false;
                        break;
                    }
                    effect[i] = std::abs(std::log(a->throughput_images_per_s / b->throughput_images_per_s));
                }
                if (both && effect[0] > effect[1] + std::log(1.02)) {
                    v.push_back(gpu.name + " " + std::string(to_string(f)) + " " + std::string(to_string(p)) +
                                ": channels_last against NCHW " + std::to_string(std::exp(effect[0])) +
                                "x at batch 32, " + std::to_string(std::exp(effect[1])) + "x at 256");
                }
            }
        }
    }
    return v;
}

// 12. torch.compile never slows a step (eq. C9: at most the whole fixed time kept, and each image
//     shorter), and its band's slow end is no slower than eager's, on every GPU at every batch.
//     A lognormal band around the split's middle alone put the slow end below eager's at batch 16.
Violations compile_never_slows_a_step(const Catalog& catalog, const Predictor& predict) {
    Violations v;
    for (const GpuSpec& gpu : catalog.gpus()) {
        for (Precision p : {Precision::amp, Precision::bf16}) {
            for (int batch : {16, 64, 256, 512}) {
                auto eager = one_gpu(catalog, gpu.name, Framework::pytorch, p, batch);
                if (!eager) continue;
                Scenario compiled = *eager;
                compiled.compiled = true;
                const auto a = predict(*eager), b = predict(compiled);
                if (!a || !b) continue;
                const std::string where =
                    gpu.name + " " + std::string(to_string(p)) + " batch " + std::to_string(batch) + ": ";
                if (b->throughput_images_per_s < a->throughput_images_per_s) {
                    v.push_back(where + "compiled " + std::to_string(b->throughput_images_per_s) + " img/s, eager " +
                                std::to_string(a->throughput_images_per_s));
                }
                if (b->interval.low < a->interval.low * (1 - 1e-9)) {
                    v.push_back(where + "compiled band from " + std::to_string(b->interval.low) + ", eager's from " +
                                std::to_string(a->interval.low));
                }
            }
        }
    }
    return v;
}

std::string first(const Violations& v) {
    std::string text = std::to_string(v.size()) + " violations";
    for (std::size_t i = 0; i < v.size() && i < 5; ++i) text += "\n  " + v[i];
    return text;
}

// ---- The built-in model keeps every invariant.

TEST(Invariants, Bf16TracksAmpWhereTheirTensorRatesAreEqual) {
    const Violations v = bf16_tracks_amp(built_in().catalog(), predictor_of(built_in()));
    EXPECT_TRUE(v.empty()) << first(v);
}

TEST(Invariants, AChipsMemoryVariantsAreWithinTenPercent) {
    const Violations v = memory_variants_agree(built_in().catalog(), predictor_of(built_in()));
    EXPECT_TRUE(v.empty()) << first(v);
}

TEST(Invariants, ANewerGenerationIsNeverSlower) {
    const Violations v = newer_generation_not_slower(built_in().catalog(), predictor_of(built_in()));
    EXPECT_TRUE(v.empty()) << first(v);
}

TEST(Invariants, ThroughputPerGpuNeverFallsAsTheBatchGrows) {
    const Violations v = per_gpu_rises_with_batch(built_in().catalog(), predictor_of(built_in()));
    EXPECT_TRUE(v.empty()) << first(v);
}

TEST(Invariants, ThroughputNeverFallsAsNodesAreAddedUnlessTheNetworkIsNamed) {
    const Violations v = throughput_rises_with_nodes(built_in().catalog(), predictor_of(built_in()));
    EXPECT_TRUE(v.empty()) << first(v);
}

TEST(Invariants, TimeAndCostBandsHoldTheirPoint) {
    const Violations v = bands_hold_their_point(built_in(), predictor_of(built_in()));
    EXPECT_TRUE(v.empty()) << first(v);
}

TEST(Invariants, ScalingEfficiencyIsOneOnOneGpuAndNeverAboveOne) {
    const Violations v = efficiency_is_communication_only(built_in(), predictor_of(built_in()));
    EXPECT_TRUE(v.empty()) << first(v);
}

TEST(Invariants, AnInputBoundNeverWidensTheBandPastSyntheticData) {
    const Violations v = input_bound_never_widens_the_band(built_in().catalog(), predictor_of(built_in()));
    EXPECT_TRUE(v.empty()) << first(v);
}

TEST(Invariants, DaliIsFedFasterOnAGpuWithMoreJpegDecoders) {
    const Violations v = dali_follows_the_jpeg_decoders(built_in().catalog(), predictor_of(built_in()));
    EXPECT_TRUE(v.empty()) << first(v);
}

TEST(Invariants, StartUpNeverShortensAsTheClusterGrows) {
    const Violations v = startup_never_shortens_with_size(built_in().catalog(), predictor_of(built_in()));
    EXPECT_TRUE(v.empty()) << first(v);
}

TEST(Invariants, TheLayoutsEffectNeverGrowsAsTheBatchShrinks) {
    const Violations v = layout_effect_never_grows_as_the_batch_shrinks(built_in().catalog(), predictor_of(built_in()));
    EXPECT_TRUE(v.empty()) << first(v);
}

TEST(Invariants, CompileNeverSlowsAStep) {
    const Violations v = compile_never_slows_a_step(built_in().catalog(), predictor_of(built_in()));
    EXPECT_TRUE(v.empty()) << first(v);
}

// ---- Each check catches a planted bug.

/// The built-in calibration with every curve of `gpu`'s chip at `precision` made `factor` slower.
Calibration with_slower_curves(const Catalog& catalog, const std::string& gpu, Precision precision, double factor) {
    Calibration c = Calibration::built_in();
    bool found = false;
    for (ComputeCurve& curve : c.compute) {
        const GpuSpec* g = catalog.find_gpu(curve.gpu);
        if (g && g->chip_or_name() == catalog.gpu(gpu).chip_or_name() && curve.precision == precision) {
            curve.time_per_image_s *= factor;
            found = true;
        }
    }
    EXPECT_TRUE(found) << "no curve of " << gpu << " to plant the bug in";
    return c;
}

TEST(Invariants, APlantedBf16CurveThatDisagreesWithAmpIsCaught) {
    // Data bug: a bf16 curve on the 80 GB A100 that does not share amp's.
    const Catalog catalog = Catalog::built_in();
    Calibration c = Calibration::built_in();
    const ComputeCurve* amp =
        own_curve(c.compute, catalog, catalog.gpu("A100-SXM4-80GB"), Precision::amp, Software{Framework::pytorch})
            .curve;
    ASSERT_NE(amp, nullptr);
    ComputeCurve bf16 = *amp;
    bf16.precision = Precision::bf16;
    bf16.time_per_image_s *= 1.3;
    c.compute.push_back(bf16);
    const CostModel model(catalog, c);
    EXPECT_FALSE(bf16_tracks_amp(catalog, predictor_of(model)).empty());
}

TEST(Invariants, APlantedMemoryVariantThatDriftsIsCaught) {
    // Data bug: the 80 GB A100 given eight times the bandwidth it has.
    Catalog catalog = Catalog::built_in();
    Catalog fast = Catalog::parse(
        R"({"schema": "epochcast.catalog/1", "gpus": [{"name": "A100-SXM4-80GB", "memory_GBps": 16000}],
            "instances": []})",
        "planted", catalog);
    catalog.merge(fast);
    const CostModel model(catalog, Calibration::built_in());
    EXPECT_FALSE(memory_variants_agree(catalog, predictor_of(model)).empty());
}

TEST(Invariants, APlantedSlowNewGenerationIsCaught) {
    // Data bug: the H100's curves twice as slow as measured.
    const Catalog catalog = Catalog::built_in();
    const CostModel model(catalog, with_slower_curves(catalog, "H100-SXM5-80GB", Precision::amp, 2.0));
    EXPECT_FALSE(newer_generation_not_slower(catalog, predictor_of(model)).empty());
}

TEST(Invariants, APlantedFallOfThroughputWithTheBatchIsCaught) {
    // Model bug: per-image time that grows past batch 64.
    const Predictor planted = [](const Scenario& s) -> std::optional<Prediction> {
        auto p = predictor_of(built_in())(s);
        if (p && s.batch_per_gpu > 64) p->per_gpu_images_per_s *= 0.8;
        return p;
    };
    EXPECT_FALSE(per_gpu_rises_with_batch(built_in().catalog(), planted).empty());
}

TEST(Invariants, APlantedFallOfThroughputWithNodesIsCaught) {
    // Model bug: throughput that drops past 4 nodes while compute is still named the bottleneck.
    const Predictor planted = [](const Scenario& s) -> std::optional<Prediction> {
        auto p = predictor_of(built_in())(s);
        if (p && s.nodes > 4) {
            p->throughput_images_per_s *= 0.3;
            p->bottleneck = Bottleneck::compute;
        }
        return p;
    };
    EXPECT_FALSE(throughput_rises_with_nodes(built_in().catalog(), planted).empty());
}

TEST(Invariants, APlantedBandThatMissesItsPointIsCaught) {
    // Model bug: a band whose high end falls below the point.
    const Predictor planted = [](const Scenario& s) -> std::optional<Prediction> {
        auto p = predictor_of(built_in())(s);
        if (p) p->interval.high = 0.9 * p->throughput_images_per_s;
        return p;
    };
    EXPECT_FALSE(bands_hold_their_point(built_in(), planted).empty());
}

TEST(Invariants, APlantedEfficiencyThatCountsTheInputIsCaught) {
    // Model bug: the efficiency against one GPU with no input bound (b / t_compute), as it was.
    const Predictor planted = [](const Scenario& s) -> std::optional<Prediction> {
        auto p = predictor_of(built_in())(s);
        if (p) p->scaling_efficiency = p->per_gpu_images_per_s / (batch_per_gpu(*p) / p->compute_s);
        return p;
    };
    EXPECT_FALSE(efficiency_is_communication_only(built_in(), planted).empty());
}

TEST(Invariants, APlantedBandThatAnInputBoundWidensIsCaught) {
    // Model bug: a decoding loader's uncertainty stretching the fast end past the GPUs' own.
    const Predictor planted = [](const Scenario& s) -> std::optional<Prediction> {
        auto p = predictor_of(built_in())(s);
        if (p && s.loader != Loader::synthetic) p->interval.high *= 3;
        return p;
    };
    EXPECT_FALSE(input_bound_never_widens_the_band(built_in().catalog(), planted).empty());
}

TEST(Invariants, APlantedDaliRateThatIgnoresTheDecodersIsCaught) {
    // Model bug: one DALI rate for every GPU, as before eq. D2 (6,000 img/s per GPU).
    const Predictor planted = [](const Scenario& s) -> std::optional<Prediction> {
        auto p = predictor_of(built_in())(s);
        if (p && s.loader == Loader::dali) p->data_s = s.batch_per_gpu / 6000.0;
        return p;
    };
    EXPECT_FALSE(dali_follows_the_jpeg_decoders(built_in().catalog(), planted).empty());
}

TEST(Invariants, APlantedStartUpThatShrinksWithTheClusterIsCaught) {
    // Model bug: a start-up divided among the nodes.
    const Predictor planted = [](const Scenario& s) -> std::optional<Prediction> {
        auto p = predictor_of(built_in())(s);
        if (p) p->startup_s /= s.nodes;
        return p;
    };
    EXPECT_FALSE(startup_never_shortens_with_size(built_in().catalog(), planted).empty());
}

TEST(Invariants, APlantedFixedTimeOfOneLayoutIsCaught) {
    // Model bug: NCHW with a fixed time of its own, 31.5 ms an iteration more than channels_last's
    // (what the A100's TF32 NCHW curve was fitted to before eq. C1b's campaign rule, two software
    // versions at two batches, and what NCHW kept before eq. C8 carried one layout's fixed time to
    // the other).
    const Predictor planted = [](const Scenario& s) -> std::optional<Prediction> {
        auto p = predictor_of(built_in())(s);
        if (p && s.memory_format == MemoryFormat::nchw) {
            p->throughput_images_per_s = s.batch_per_gpu / (s.batch_per_gpu / p->throughput_images_per_s + 0.0315);
        }
        return p;
    };
    EXPECT_FALSE(layout_effect_never_grows_as_the_batch_shrinks(built_in().catalog(), planted).empty());
}

TEST(Invariants, APlantedCompiledBandBelowEagersIsCaught) {
    // Model bug: the compiled band's slow end stretched as a lognormal around the split's middle
    // alone would (eq. C9 before its ends bounded the band).
    const Predictor planted = [](const Scenario& s) -> std::optional<Prediction> {
        auto p = predictor_of(built_in())(s);
        if (p && s.compiled && s.batch_per_gpu <= 16) p->interval.low *= 0.8;
        return p;
    };
    EXPECT_FALSE(compile_never_slows_a_step(built_in().catalog(), planted).empty());
}

}  // namespace
}  // namespace epochcast
