// One iteration's formulas (model/iteration.hpp), each against its derivation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "model/catalog.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/iteration.hpp"

namespace epochcast {
namespace {

TEST(Prediction, DataWaitIsTheInputPipelinesUnhiddenPart) {
    Prediction p;
    p.compute_s = 0.30;
    p.sync_s = 0.02;
    p.exposed_communication_s = 0.08;
    p.data_s = 0.25;
    EXPECT_EQ(data_wait_s(p), 0.0);  // the step (0.40 s) hides it
    p.data_s = 0.55;
    EXPECT_NEAR(data_wait_s(p), 0.15, 1e-12);
}

// Eq. I1's smooth maximum, (a^32 + b^32)^(1/32), recomputed with pow(): the larger of the two but
// for 2^(1/32) - 1 = 2.2% at balance, the larger alone where the other is under a third of it, the
// step alone without a pipeline, and an infinite step infinite (no inf / inf).
TEST(Prediction, PipelinedIsTheSmoothMaximumOfStepAndData) {
    for (const double step : {1e-6, 0.01, 0.3, 1.0, 250.0}) {
        for (const double ratio : {0.01, 0.3, 0.5, 0.8, 0.95, 1.0, 1.05, 1.25, 2.0, 4.0, 100.0}) {
            const double data = step * ratio;
            const double larger = std::max(step, data);
            const double expected =
                larger * std::pow(std::pow(step / larger, 32.0) + std::pow(data / larger, 32.0), 1.0 / 32.0);
            EXPECT_NEAR(pipelined_s(step, data), expected, 1e-14 * expected) << step << " " << data;
            EXPECT_EQ(pipelined_s(step, data), pipelined_s(data, step));
        }
    }
    // Either side of where the root turns from the binomial series to square roots (r^32 = 1/64,
    // r = 2^(-6/32) = 0.8787): both within a few of a double's steps of pow()'s, in long double.
    for (const double ratio : {0.5, 0.75, 0.87, 0.8786, 0.8787, 0.8788, 0.89, 0.99}) {
        const long double exact = std::pow(1.0L + std::pow(static_cast<long double>(ratio), 32.0L), 1.0L / 32.0L);
        EXPECT_NEAR(pipelined_s(1.0, ratio), static_cast<double>(exact), 4e-16) << ratio;
    }
    EXPECT_NEAR(pipelined_s(0.2, 0.2), 0.2 * std::pow(2.0, 1.0 / 32.0), 1e-16);
    EXPECT_EQ(pipelined_s(0.3, 0.09), 0.3);  // 0.3^32 = 2e-17: below a double's resolution at 1
    EXPECT_EQ(pipelined_s(0.3, 0.0), 0.3);
    EXPECT_EQ(pipelined_s(std::numeric_limits<double>::infinity(), 0.5), std::numeric_limits<double>::infinity());
}

// Eq. D2 recomputed from NVIDIA's A100 figures: 65% of the images to the hardware decoder (1,000
// img/s per core), 35% to the CUDA path (6,000 img/s alone); whichever fills first limits the
// decoder, and the CUDA path alone where that is faster. An A100 (5 cores) is the reference.
TEST(Prediction, DaliDecodingFollowsTheHardwareJpegDecoders) {
    const double a100 = std::min(5 * 1000 / 0.65, 6000 / 0.35);  // 7,692 img/s: the hardware fills first
    EXPECT_NEAR(a100, 7692.3, 0.1);
    EXPECT_DOUBLE_EQ(dali_decode_factor(5), 1.0);
    EXPECT_NEAR(dali_decode_factor(7), (7 * 1000 / 0.65) / a100, 1e-12);  // H100, H200, B200: 1.4
    EXPECT_NEAR(dali_decode_factor(7), 1.4, 1e-12);
    EXPECT_NEAR(dali_decode_factor(4), (4 * 1000 / 0.65) / a100, 1e-12);  // L4: 6,154 > the CUDA path's 6,000
    EXPECT_NEAR(dali_decode_factor(0), 6000 / a100, 1e-12);               // V100, T4: the CUDA path alone
    EXPECT_DOUBLE_EQ(dali_decode_factor(1), dali_decode_factor(0));       // one core: the CUDA path is faster
    EXPECT_NEAR(dali_decode_factor(1000), (6000 / 0.35) / a100, 1e-12);   // the CUDA path's share fills: 2.23
    EXPECT_DOUBLE_EQ(dali_decode_factor(-3), dali_decode_factor(0));
    for (int cores = 0; cores < 20; ++cores) EXPECT_LE(dali_decode_factor(cores), dali_decode_factor(cores + 1));

    Calibration c;
    c.dali_images_per_s_per_gpu = 6000;
    EXPECT_NEAR(decode_rate_per_gpu(c, Loader::dali, Framework::pytorch, 192, 8, 7), 8400, 1e-9);
    EXPECT_NEAR(decode_rate_per_gpu(c, Loader::dali, Framework::pytorch, 96, 8, 5), 6000, 1e-9);
    c.dali_cpu_images_per_s_per_vcpu = 275;  // DALI on the CPU: the node's vCPUs, whatever the GPU's decoders
    EXPECT_NEAR(decode_rate_per_gpu(c, Loader::dali_cpu, Framework::pytorch, 96, 8, 7), 275 * 96 / 8.0, 1e-9);
    EXPECT_EQ(decode_rate_per_gpu(c, Loader::synthetic, Framework::pytorch, 96, 8, 7),
              std::numeric_limits<double>::infinity());
}

TEST(CostModelTerms, StragglerWaitGrowsWithWorkers) {
    EXPECT_EQ(straggler_wait_s(1.0, 0.1, 1), 0.0);
    EXPECT_NEAR(straggler_wait_s(1.0, 0.1, 64), 0.1 * std::sqrt(2 * std::log(64.0)), 1e-12);
    EXPECT_LT(straggler_wait_s(1.0, 0.1, 8), straggler_wait_s(1.0, 0.1, 256));
    EXPECT_EQ(exposed_communication_s(0.05, 0.2, 0.5), 0.0);
    EXPECT_NEAR(exposed_communication_s(0.05, 0.2, 0.1), 0.03, 1e-12);
}

// Eq. S2: the relative standard deviation of per-step compute times from successive differences.
TEST(CostModelTerms, ComputeJitterIsTheRelativeSpreadOfStepsAndIgnoresASlowDrift) {
    // Alternating 1.0 and 1.2 s: every difference is 0.2 s, so the estimate is 0.2 / sqrt(2) over
    // the mean 1.1 s.
    std::vector<double> alternating;
    for (int i = 0; i < 10; ++i) alternating.push_back(i % 2 == 0 ? 1.0 : 1.2);
    EXPECT_NEAR(compute_jitter(alternating), 0.2 / std::sqrt(2.0) / 1.1, 1e-12);
    // A host slowing steadily from 1.0 to 1.19 s: the plain relative standard deviation is 5.3%,
    // the jitter 0.65%, what one step adds.
    std::vector<double> drift;
    for (int i = 0; i < 20; ++i) drift.push_back(1.0 + 0.01 * i);
    EXPECT_NEAR(compute_jitter(drift), 0.01 / std::sqrt(2.0) / 1.095, 1e-12);
    EXPECT_THROW(compute_jitter(std::vector<double>(kMinJitterSamples - 1, 1.0)), InputError);
    std::vector<double> with_zero(kMinJitterSamples, 1.0);
    with_zero[3] = 0.0;
    EXPECT_THROW(compute_jitter(with_zero), InputError);
}

// Issue 58, item 3 (eq. D3): a node must hold a vCPU for each GPU's training process and the
// loader's threads beside it, DALI's 3 per GPU, a CPU loader's one worker; a thin node is flagged,
// and CPU ranks, whose cores are the compute, never are.
TEST(HostSide, AThinNodeIsShortOfVcpusForItsLoaderAndCpuRanksNeverAre) {
    EXPECT_EQ(host_vcpus_per_gpu_needed(Loader::dali), 4);
    EXPECT_EQ(host_vcpus_per_gpu_needed(Loader::cpu), 2);
    EXPECT_EQ(host_vcpus_per_gpu_needed(Loader::dali_cpu), 2);
    EXPECT_EQ(host_vcpus_per_gpu_needed(Loader::synthetic), 1);

    Catalog catalog = Catalog::built_in();
    catalog.merge(Catalog::parse(
        R"({"schema": "epochcast.catalog/1", "instances": [{"name": "l4.thin", "gpu": "L4", "gpus": 4, "vcpus": 12,
        "memory_gib": 64, "intra_node_GBps": 32, "network_gbps": 25, "prices": {}, "source": "test"}]})",
        "thin.json", catalog));
    const CostModel model(catalog, Calibration::built_in());
    Scenario s;
    s.instance = "l4.thin";
    s.framework = Framework::pytorch;
    s.precision = Precision::amp;
    s.batch_per_gpu = 128;
    s.gpus_per_node = 4;
    s.loader = Loader::dali;  // 3 vCPUs per GPU: one short of DALI's floor
    ResolvedScenario r = model.resolve(s);
    EXPECT_DOUBLE_EQ(r.host_vcpus_per_gpu, 3.0);
    EXPECT_TRUE(r.host_vcpus_short);
    EXPECT_TRUE(model.predict(r).host_vcpus_short);
    s.gpus_per_node = 3;  // 4 vCPUs per GPU used: enough
    EXPECT_FALSE(model.resolve(s).host_vcpus_short);
    s.gpus_per_node = 4;
    s.loader = Loader::cpu;  // a CPU loader on 3 per GPU: slow, not short
    EXPECT_FALSE(model.resolve(s).host_vcpus_short);
    s.loader = Loader::synthetic;
    EXPECT_FALSE(model.resolve(s).host_vcpus_short);

    // Every GPU instance of the built-in catalog has room for DALI on all its GPUs, and so every
    // published run, each on one of them.
    const Catalog built_in = Catalog::built_in();
    for (const InstanceSpec& instance : built_in.instances()) {
        if (instance.gpus == 0) continue;
        EXPECT_GE(static_cast<double>(instance.vcpus) / instance.gpus, host_vcpus_per_gpu_needed(Loader::dali))
            << instance.name;
    }
}

}  // namespace
}  // namespace epochcast
