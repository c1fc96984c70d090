// The calibration's free parameters, by name: what `epochcast calibrate` fits, what the
// calibration file's covariance is indexed by, and what a prediction's interval is propagated
// from (docs/model.md, "Calibration" and "Uncertainty").
//
// Every parameter lives in an internal coordinate where the fit and the covariance work: the log
// of a positive quantity (a time, a rate, a jitter), or the logit of a fraction (an efficiency, an
// overlap), so that no step of the fit can leave the valid range and a symmetric band in the
// coordinate is a relative band in the value.
#pragma once

#include <string>
#include <vector>

#include "model/calibration.hpp"

namespace epochcast {

enum class ParameterKind {
    curve_time_per_image,  ///< ComputeCurve::time_per_image_s of compute[index]
    curve_fixed,           ///< ComputeCurve::fixed_s of compute[index]
    fixed_overhead,        ///< FrameworkProfile::fixed_overhead_s of framework index
    sync_jitter,           ///< FrameworkProfile::sync_jitter
    allreduce_overlap,     ///< FrameworkProfile::allreduce_overlap
    ps_overlap,            ///< FrameworkProfile::ps_overlap
    fabric_efficiency,     ///< FabricParams::efficiency of Interconnect index
    fabric_latency,        ///< FabricParams::latency_s of Interconnect index
    fabric_cap,            ///< FabricParams::cap_GBps of Interconnect index (only where the cap is set)
    link_efficiency,       ///< LinkParams::efficiency of IntraLink index
    link_latency,          ///< LinkParams::latency_s of IntraLink index
    nvls_efficiency,       ///< NetworkParams::nvls_efficiency
    cpu_decode_rate,       ///< FrameworkProfile::cpu_decode_images_per_s_per_vcpu
    decode_rate,           ///< DALI's rate of the Loader index (dali-cpu, dali)
};

/// The coordinate a parameter is fitted in.
enum class Coordinate { log, logit };

/// One parameter of one Calibration. `index` is the compute curve for curve parameters, the
/// Framework for framework parameters, the Interconnect for fabric parameters, the IntraLink for
/// link parameters, the Loader for DALI's decode rates, and unused (0) otherwise.
struct ParameterId {
    ParameterKind kind = ParameterKind::decode_rate;
    int index = 0;
    friend bool operator==(const ParameterId&, const ParameterId&) = default;
};

Coordinate coordinate_of(ParameterKind kind);

/// The parameter's name as the calibration file's covariance lists it, e.g.
/// "compute[V100-SXM2-16GB/amp/tensorflow].time_per_image_s", "frameworks.mxnet.sync_jitter",
/// "network.tcp_cap_GBps", "network.infiniband_efficiency", "network.nvswitch_latency_s".
std::string parameter_name(const Calibration& calibration, ParameterId id);

/// The parameter whose name is `name`, or false when the calibration has none. The names of
/// calibrations written before the link classes existed, "network.intra_efficiency" and
/// "network.intra_latency_s", mean NVLink's.
bool find_parameter(const Calibration& calibration, const std::string& name, ParameterId* id);

/// The value itself (a reference into the calibration).
double& parameter_value(Calibration& calibration, ParameterId id);
double parameter_value(const Calibration& calibration, ParameterId id);

/// Every parameter of the calibration: each curve's two, each framework's four, each fabric's
/// efficiency and latency (and its cap where set), each link's two, NVLS's and each decoding
/// loader's rate.
std::vector<ParameterId> all_parameters(const Calibration& calibration);

/// The value's internal coordinate (log x or logit x) and back.
double to_coordinate(Coordinate coordinate, double value);
double from_coordinate(Coordinate coordinate, double u);

/// d ln(value) / d u at `value`: 1 in log coordinates, 1 - value in logit coordinates.
double log_value_per_coordinate(Coordinate coordinate, double value);

/// The 1-sigma of the parameter's coordinate that the calibration's group uncertainties give
/// when no covariance was fitted (the built-in default): a relative sigma s of a value x in logit
/// coordinates is s / (1 - x), so that both coordinates mean the same relative band.
double group_sigma(const Calibration& calibration, ParameterId id);

}  // namespace epochcast
