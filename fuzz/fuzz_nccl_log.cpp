// libFuzzer target: an nccl-tests all_reduce_perf log (traces/nccl_import.cpp), the way
// `epochcast import-nccl` reads it: parse the rows, fit alpha and beta, and write the measurement
// as a trace, which `calibrate` must then read back (a NaN that slipped through would not).
#include "fuzz/harness.hpp"
#include "traces/nccl_import.hpp"
#include "traces/trace.hpp"

using namespace epochcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const Catalog catalog = Catalog::built_in();
    return fuzz::run(data, size, [](std::string_view text) {
        int ranks = 0;
        const std::vector<NcclSample> samples = parse_nccl_all_reduce(text, "fuzz.log", &ranks);
        if (ranks < 2) fuzz::fail("a parsed log has fewer than 2 ranks", std::to_string(ranks));
        for (const NcclSample& s : samples) {
            fuzz::require_finite_non_negative(s.bytes, "bytes");
            fuzz::require_finite_non_negative(s.time_s, "time_s");
            fuzz::require_finite_non_negative(s.algorithm_GBps, "algorithm_GBps");
            fuzz::require_finite_non_negative(s.bus_GBps, "bus_GBps");
        }
        NetworkMeasurement m = fit_alpha_beta(samples, ranks);
        fuzz::require_finite_non_negative(m.latency_s, "latency_s");
        fuzz::require_finite_non_negative(m.bus_bandwidth_GBps, "bus_bandwidth_GBps");
        m.instance = "p3dn.24xlarge";
        m.source = "fuzz";
        Trace trace;
        trace.networks.push_back(m);
        try {
            (void)parse_trace(trace_json(trace), "imported trace", catalog);
        } catch (const InputError& error) {
            fuzz::fail("import-nccl would write a trace that does not read back", error.what());
        }
    });
}
