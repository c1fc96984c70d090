// libFuzzer target: a sweep spec (model/sweep.cpp), as `epochcast sweep SPEC` reads it, and the
// decoding of its first and last combinations (what the sweep's workers do with each index).
#include "fuzz/harness.hpp"
#include "model/sweep.hpp"

using namespace epochcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const Catalog catalog = Catalog::built_in();
    return fuzz::run(data, size, [](std::string_view text) {
        const SweepSpec spec = parse_sweep_spec(text, "fuzz.json", catalog);
        const std::size_t n = spec.combinations();
        if (n == 0) fuzz::fail("a parsed spec has no combinations", "");
        for (std::size_t index : {std::size_t{0}, n - 1}) {
            const Scenario s = spec.scenario_at(index, catalog);
            if (s.nodes < 1 || s.image_size < 1 || s.classes < 1 || s.gpus_per_node < 0 || s.ps_nodes < 0) {
                fuzz::fail("a decoded scenario holds a count below its minimum", s.instance);
            }
            fuzz::require_finite_non_negative(s.epochs, "epochs");
        }
    });
}
