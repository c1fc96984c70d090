// libFuzzer target: a calibration file (model/calibration.cpp), as `--calibration FILE` reads it,
// and a trace as `calibrate` fits it. A calibration that parses must hold finite figures and
// survive its own round trip through to_json(). A trace that parses (of at most 4 runs, 4 network
// measurements and 4 comparisons) is fitted as calibrate fits it (the built-in prior and catalog),
// and what calibrate would write (calibration_file_text) must read back: calibrate never writes a file its reader
// refuses (runs that fit none, such as eight equal steps, are an InputError instead, as calibrate's exit 2).
#include "fuzz/harness.hpp"
#include "model/calibration.hpp"
#include "model/cost_model.hpp"
#include "model/fit.hpp"
#include "traces/trace.hpp"

using namespace epochcast;

namespace {

void read_calibration(std::string_view text) {
    const Calibration c = Calibration::parse(text, "fuzz.json");
    for (const ComputeCurve& curve : c.compute) {
        fuzz::require_finite_non_negative(curve.time_per_image_s, "time_per_image_s");
        fuzz::require_finite_non_negative(curve.fixed_s, "fixed_s");
    }
    for (const Framework f : {Framework::mxnet, Framework::tensorflow, Framework::pytorch, Framework::epochcast}) {
        fuzz::require_finite_non_negative(c.framework(f).cpu_decode_images_per_s_per_vcpu,
                                          "cpu_decode_images_per_s_per_vcpu");
    }
    fuzz::require_finite_non_negative(c.dali_cpu_images_per_s_per_vcpu, "dali_cpu_images_per_s_per_vcpu");
    fuzz::require_finite_non_negative(c.dali_images_per_s_per_gpu, "dali_images_per_s_per_gpu");
    fuzz::require_finite_non_negative(c.startup_s_per_doubling, "startup_s_per_doubling");
    fuzz::require_finite_non_negative(c.uncertainty.model_sigma, "model_sigma");
    for (double value : c.uncertainty.covariance) {
        if (!std::isfinite(value)) fuzz::fail("a parsed covariance is not finite", "covariance");
    }
    try {
        (void)Calibration::parse(c.to_json(), "round trip");
    } catch (const InputError& error) {
        fuzz::fail("a calibration that parsed does not read back", error.what());
    }
}

void calibrate_from_trace(std::string_view text) {
    static const Catalog catalog = Catalog::built_in();
    static const CostModel prior(catalog, Calibration::built_in());
    const Trace trace = parse_trace(text, "fuzz.json", catalog);
    Evidence evidence;
    add_evidence(trace, catalog, "fuzz.json", evidence);
    // A fit's time grows with its evidence (0.1-0.5 s of CPU for one run here, more under the
    // sanitizers): traces of a few runs keep each input well inside libFuzzer's -timeout.
    constexpr std::size_t kMostFitted = 4;
    if (evidence.runs.size() > kMostFitted || evidence.networks.size() > kMostFitted ||
        evidence.comparisons.size() > kMostFitted) {
        return;
    }
    const CalibrationFit fit = fit_calibration(prior, evidence.runs, evidence.networks, evidence.comparisons);
    const std::string written = calibration_file_text(fit);
    try {
        (void)Calibration::parse(written, "the file calibrate writes");
    } catch (const InputError& error) {
        fuzz::fail("calibrate would write a file its reader refuses", error.what());
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::run(data, size, read_calibration);
    return fuzz::run(data, size, calibrate_from_trace);
}
