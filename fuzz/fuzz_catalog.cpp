// libFuzzer target: a catalog file (model/catalog.cpp), alone and merged over the built-in one as
// `--catalog FILE` does. A catalog that parses must hold finite, non-negative figures.
#include "fuzz/harness.hpp"
#include "model/catalog.hpp"

using namespace epochcast;

namespace {

void check(const Catalog& catalog) {
    for (const GpuSpec& gpu : catalog.gpus()) {
        fuzz::require_finite_non_negative(gpu.fp32_tflops, "fp32_tflops");
        fuzz::require_finite_non_negative(gpu.fp16_tflops, "fp16_tflops");
        fuzz::require_finite_non_negative(gpu.bf16_tflops, "bf16_tflops");
        fuzz::require_finite_non_negative(gpu.memory_gib, "memory_gib");
        fuzz::require_finite_non_negative(gpu.memory_GBps, "memory_GBps");
    }
    for (const InstanceSpec& instance : catalog.instances()) {
        for (Pricing pricing : kAllPricings) {
            if (const Price* price = instance.price(pricing)) {
                fuzz::require_finite_non_negative(price->usd_per_hour, "prices");
                if (!(price->usd_per_hour > 0)) fuzz::fail("a parsed price is not positive", instance.name);
            }
        }
        fuzz::require_finite_non_negative(instance.memory_gib, "memory_gib");
        fuzz::require_finite_non_negative(instance.network_gbps, "network_gbps");
        fuzz::require_finite_non_negative(instance.intra_node_GBps, "intra_node_GBps");
        if (instance.gpus < 0 || instance.vcpus < 1 || instance.nics < 1 || instance.efa_adapters < 0) {
            fuzz::fail("a parsed instance holds a negative count", instance.name);
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const Catalog built_in = Catalog::built_in();
    return fuzz::run(data, size, [](std::string_view text) {
        try {
            check(Catalog::parse(text, "fuzz.json"));
        } catch (const InputError&) {
        }
        Catalog merged = built_in;
        merged.merge(Catalog::parse(text, "fuzz.json", built_in));
        check(merged);
    });
}
