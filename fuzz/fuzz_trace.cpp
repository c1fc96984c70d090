// libFuzzer target: a trace file (traces/trace.cpp) against the built-in catalog, as `calibrate`
// and `validate` read them. A trace that parses must hold finite, non-negative measurements and
// read back from what write_trace would write.
#include "fuzz/harness.hpp"
#include "traces/trace.hpp"

using namespace epochcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const Catalog catalog = Catalog::built_in();
    return fuzz::run(data, size, [](std::string_view text) {
        const Trace trace = parse_trace(text, "fuzz.json", catalog);
        for (const TraceRun& run : trace.runs) {
            fuzz::require_finite_non_negative(run.observation.throughput_images_per_s, "throughput_images_per_s");
            const Scenario& s = run.observation.scenario;
            if (s.nodes < 1 || s.image_size < 1 || s.classes < 1 || s.gpus_per_node < 0 || s.batch_per_gpu < 0) {
                fuzz::fail("a parsed run holds a count below its minimum", run.observation.origin);
            }
        }
        for (const NetworkMeasurement& m : trace.networks) {
            fuzz::require_finite_non_negative(m.bus_bandwidth_GBps, "bus_bandwidth_GBps");
            fuzz::require_finite_non_negative(m.latency_s, "latency_s");
        }
        try {
            (void)parse_trace(trace_json(trace), "round trip", catalog);
        } catch (const InputError& error) {
            fuzz::fail("a trace that parsed does not read back", error.what());
        }
    });
}
