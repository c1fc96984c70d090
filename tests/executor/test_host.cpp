// The host description (executor/host.hpp): what /proc and oneDNN say about this machine, and the
// `local-cpu` catalog entry measured on it, read back through the catalog loader the model uses.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <string>

#include "executor/cpu/layers.hpp"
#include "executor/host.hpp"
#include "model/catalog.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"

namespace epochcast {
namespace {

TEST(Host, InfoDescribesThisMachine) {
    const HostInfo host = host_info();
    EXPECT_FALSE(host.hostname.empty());
    EXPECT_FALSE(host.cpu_model.empty());
    EXPECT_FALSE(host.isa.empty());
    EXPECT_NE(host.isa, "unknown");
    EXPECT_EQ(host.cores, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
    EXPECT_GT(host.memory_gib, 0.1);
    EXPECT_EQ(host.native_bf16, host.isa == "avx512_core_bf16" || host.isa == "avx512_core_amx");
    const nlohmann::json json = host_json(host);
    EXPECT_EQ(json.at("cpu_model"), host.cpu_model);
    EXPECT_EQ(json.at("isa"), host.isa);
    EXPECT_EQ(json.at("cores"), host.cores);
}

// What the convolutions run here, so that a trace says whether AMX ran: one of the known ISAs,
// AMX only where oneDNN's ISA has it, and the layout oneDNN chose with it.
TEST(Host, InfoSaysWhichKernelsTheConvolutionsRun) {
    for (const bool bf16 : {true, false}) {
        const HostInfo host = host_info(bf16);
        EXPECT_FALSE(host.convolution_kernel.empty());
        EXPECT_EQ(host.convolution_isa, cpu::implementation_isa(host.convolution_kernel));
        EXPECT_NE(std::find(std::begin(cpu::kKernelIsas), std::end(cpu::kKernelIsas), host.convolution_isa),
                  std::end(cpu::kKernelIsas))
            << host.convolution_isa;
        EXPECT_NE(host.convolution_isa, "reference") << host.convolution_kernel;
        if (host.isa != "avx512_core_amx" || !bf16 || !host.native_bf16) {
            EXPECT_NE(host.convolution_isa, "avx512_core_amx") << "AMX without AMX, or in fp32";
        }
        EXPECT_EQ(host.activation_layout, host.convolution_isa == "avx512_core_amx"      ? "NHWC"
                                          : host.convolution_isa.rfind("avx512", 0) == 0 ? "nChw16c"
                                                                                         : "nChw8c");
        const nlohmann::json json = host_json(host);
        EXPECT_EQ(json.at("convolution_kernel"), host.convolution_kernel);
        EXPECT_EQ(json.at("convolution_isa"), host.convolution_isa);
        EXPECT_EQ(json.at("activation_layout"), host.activation_layout);
    }
}

TEST(Host, DescribedCatalogLoadsAndHasMeasuredPeaks) {
    const HostInfo host = host_info();
    const nlohmann::json document = describe_host_catalog(1);
    const Catalog catalog = Catalog::parse(document.dump(), "describe-host", Catalog::built_in());
    const GpuSpec& cpu = catalog.gpu("local-cpu");
    // Measured, so positive; below what a core can do (a few hundred GFLOP/s). No lower bound
    // but zero: a core shared with a busy suite measures as little as it is given.
    EXPECT_GT(cpu.fp32_tflops, 0.0);
    EXPECT_LT(cpu.fp32_tflops, 1.0);
    EXPECT_DOUBLE_EQ(cpu.fp16_tflops, 0.0);
    if (host.native_bf16) {
        // Positive, not "above fp32": both are timed, and a loaded machine can invert them.
        EXPECT_GT(cpu.bf16_tflops, 0.0);
    } else {
        EXPECT_DOUBLE_EQ(cpu.bf16_tflops, 0.0);
    }
    EXPECT_GT(cpu.memory_GBps, 0.0);
    EXPECT_LT(cpu.memory_GBps, 2000);
    EXPECT_NE(cpu.source.find(host.cpu_model), std::string::npos) << cpu.source;
    EXPECT_NE(cpu.source.find(host.isa), std::string::npos) << cpu.source;
    EXPECT_NE(cpu.source.find(host.convolution_kernel), std::string::npos) << cpu.source;
    EXPECT_EQ(document.at("host").at("convolution_isa"), host.convolution_isa);

    const InstanceSpec& instance = catalog.instance("local-cpu");
    EXPECT_EQ(instance.gpu, "local-cpu");
    EXPECT_EQ(instance.gpus, host.cores);  // one thread per rank
    EXPECT_EQ(instance.vcpus, host.cores);
    EXPECT_GT(instance.intra_node_GBps, 0.1);
    EXPECT_DOUBLE_EQ(instance.usd_per_hour(Pricing::on_demand), 0.0);
    EXPECT_FALSE(instance.source.empty());
    EXPECT_NEAR(cpu.memory_gib * instance.gpus, instance.memory_gib, 1e-9);

    // The model predicts a one-rank run on it.
    Catalog merged = Catalog::built_in();
    merged.merge(catalog);
    const CostModel model(merged, Calibration::built_in());
    Scenario s;
    s.instance = "local-cpu";
    s.nodes = 1;
    s.gpus_per_node = 1;
    s.batch_per_gpu = 8;
    s.image_size = 64;
    s.precision = Precision::fp32;
    s.strategy = Strategy::ring;
    s.framework = Framework::epochcast;
    EXPECT_GT(model.predict(s).throughput_images_per_s, 0.0);
}

TEST(Host, RanksPerHostFollowTheThreadsPerRank) {
    const HostInfo host = host_info();
    const nlohmann::json wide = describe_host_catalog(host.cores + 1);
    EXPECT_EQ(wide.at("instances").at(0).at("gpus"), 1);  // never fewer than one rank
    EXPECT_THROW(describe_host_catalog(0), InputError);
}

}  // namespace
}  // namespace epochcast
