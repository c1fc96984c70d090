// libFuzzer target: a calibration file (model/calibration.cpp), as `--calibration FILE` reads it.
// One that parses must hold finite figures and survive its own round trip through to_json().
#include "fuzz/harness.hpp"
#include "model/calibration.hpp"

using namespace epochcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return fuzz::run(data, size, [](std::string_view text) {
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
        fuzz::require_finite_non_negative(c.uncertainty.model_sigma, "model_sigma");
        for (double value : c.uncertainty.covariance) {
            if (!std::isfinite(value)) fuzz::fail("a parsed covariance is not finite", "covariance");
        }
        try {
            (void)Calibration::parse(c.to_json(), "round trip");
        } catch (const InputError& error) {
            fuzz::fail("a calibration that parsed does not read back", error.what());
        }
    });
}
