#include "model/parameters.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace epochcast {
namespace {

/// Values are kept this far inside their range before taking a logit, so that a parameter set to
/// exactly 0 (no overlap) or 1 still has a finite coordinate.
constexpr double kCoordinateFloor = 1e-6;
/// The smallest value a log coordinate takes: far below any time the model uses (NVSwitch's
/// per-hop latency is 0.9 us), so that none is clamped.
constexpr double kLogFloor = 1e-15;

struct NamedKind {
    ParameterKind kind;
    const char* name;  ///< the part after the group's prefix
};
constexpr std::array<NamedKind, 2> kCurveKinds{
    {{ParameterKind::curve_time_per_image, "time_per_image_s"}, {ParameterKind::curve_fixed, "fixed_s"}}};
constexpr std::array<NamedKind, 5> kFrameworkKinds{
    {{ParameterKind::fixed_overhead, "fixed_overhead_s"},
     {ParameterKind::sync_jitter, "sync_jitter"},
     {ParameterKind::allreduce_overlap, "allreduce_overlap"},
     {ParameterKind::ps_overlap, "ps_overlap"},
     {ParameterKind::cpu_decode_rate, "cpu_decode_images_per_s_per_vcpu"}}};
constexpr std::array<NamedKind, 3> kFabricKinds{{{ParameterKind::fabric_efficiency, "efficiency"},
                                                 {ParameterKind::fabric_latency, "latency_s"},
                                                 {ParameterKind::fabric_cap, "cap_GBps"}}};
constexpr std::array<NamedKind, 2> kLinkKinds{
    {{ParameterKind::link_efficiency, "efficiency"}, {ParameterKind::link_latency, "latency_s"}}};
constexpr std::array<NamedKind, 1> kGlobalKinds{{{ParameterKind::nvls_efficiency, "network.nvls_efficiency"}}};
/// DALI's loaders (their rate is a parameter, index = the Loader) and their rates' names; the
/// frameworks' own CPU loaders are framework parameters (cpu_decode_rate).
struct NamedLoader {
    Loader loader;
    const char* name;
};
constexpr std::array<NamedLoader, 2> kDaliLoaders{{{Loader::dali_cpu, "input_pipeline.dali_cpu_images_per_s_per_vcpu"},
                                                   {Loader::dali, "input_pipeline.dali_images_per_s_per_gpu"}}};

std::string curve_prefix(const ComputeCurve& curve) {
    // A legacy-stack curve's name says so; a current one's is the name it always had.
    // Appended piece by piece: GCC 12 reports a false -Wrestrict for the chain of operator+.
    std::string prefix = "compute[";
    prefix += curve.gpu;
    prefix += '/';
    prefix += to_string(curve.precision);
    prefix += '/';
    prefix += to_string(curve.framework);
    if (curve.stack != SoftwareStack::current) {
        prefix += '/';
        prefix += to_string(curve.stack);
    }
    if (curve.memory_format != MemoryFormat::channels_last) {
        prefix += '/';
        prefix += to_string(curve.memory_format);
    }
    prefix += ']';
    return prefix;
}

}  // namespace

Coordinate coordinate_of(ParameterKind kind) {
    switch (kind) {
        case ParameterKind::allreduce_overlap:
        case ParameterKind::ps_overlap:
        case ParameterKind::fabric_efficiency:
        case ParameterKind::link_efficiency:
        case ParameterKind::nvls_efficiency:
            return Coordinate::logit;
        default:
            return Coordinate::log;
    }
}

std::string parameter_name(const Calibration& calibration, ParameterId id) {
    for (const NamedKind& k : kCurveKinds) {
        if (k.kind == id.kind)
            return curve_prefix(calibration.compute.at(static_cast<std::size_t>(id.index))) + "." + k.name;
    }
    for (const NamedKind& k : kFrameworkKinds) {
        if (k.kind == id.kind)
            return "frameworks." + std::string(to_string(static_cast<Framework>(id.index))) + "." + k.name;
    }
    for (const NamedKind& k : kFabricKinds) {
        if (k.kind == id.kind)
            return "network." + std::string(to_string(static_cast<Interconnect>(id.index))) + "_" + k.name;
    }
    for (const NamedKind& k : kLinkKinds) {
        if (k.kind == id.kind)
            return "network." + std::string(to_string(static_cast<IntraLink>(id.index))) + "_" + k.name;
    }
    for (const NamedKind& k : kGlobalKinds) {
        if (k.kind == id.kind) return k.name;
    }
    for (const NamedLoader& l : kDaliLoaders) {
        if (id.kind == ParameterKind::decode_rate && static_cast<Loader>(id.index) == l.loader) return l.name;
    }
    return "?";
}

bool find_parameter(const Calibration& calibration, const std::string& name, ParameterId* id) {
    if (name == "network.intra_efficiency") return find_parameter(calibration, "network.nvlink_efficiency", id);
    if (name == "network.intra_latency_s") return find_parameter(calibration, "network.nvlink_latency_s", id);
    for (const ParameterId candidate : all_parameters(calibration)) {
        if (parameter_name(calibration, candidate) == name) {
            *id = candidate;
            return true;
        }
    }
    return false;
}

double& parameter_value(Calibration& c, ParameterId id) {
    switch (id.kind) {
        case ParameterKind::curve_time_per_image:
            return c.compute.at(static_cast<std::size_t>(id.index)).time_per_image_s;
        case ParameterKind::curve_fixed:
            return c.compute.at(static_cast<std::size_t>(id.index)).fixed_s;
        case ParameterKind::fixed_overhead:
            return c.framework(static_cast<Framework>(id.index)).fixed_overhead_s;
        case ParameterKind::sync_jitter:
            return c.framework(static_cast<Framework>(id.index)).sync_jitter;
        case ParameterKind::allreduce_overlap:
            return c.framework(static_cast<Framework>(id.index)).allreduce_overlap;
        case ParameterKind::ps_overlap:
            return c.framework(static_cast<Framework>(id.index)).ps_overlap;
        case ParameterKind::fabric_efficiency:
            return c.network.fabric(static_cast<Interconnect>(id.index)).efficiency;
        case ParameterKind::fabric_latency:
            return c.network.fabric(static_cast<Interconnect>(id.index)).latency_s;
        case ParameterKind::fabric_cap:
            return c.network.fabric(static_cast<Interconnect>(id.index)).cap_GBps;
        case ParameterKind::link_efficiency:
            return c.network.link(static_cast<IntraLink>(id.index)).efficiency;
        case ParameterKind::link_latency:
            return c.network.link(static_cast<IntraLink>(id.index)).latency_s;
        case ParameterKind::nvls_efficiency:
            return c.network.nvls_efficiency;
        case ParameterKind::cpu_decode_rate:
            return c.framework(static_cast<Framework>(id.index)).cpu_decode_images_per_s_per_vcpu;
        case ParameterKind::decode_rate:
            // all_parameters lists DALI's loaders only, whose field exists
            return *c.decode_rate_field(static_cast<Loader>(id.index), Framework::pytorch);
    }
    return c.dali_images_per_s_per_gpu;
}

double parameter_value(const Calibration& calibration, ParameterId id) {
    return parameter_value(const_cast<Calibration&>(calibration), id);
}

std::vector<ParameterId> all_parameters(const Calibration& calibration) {
    std::vector<ParameterId> ids;
    for (std::size_t i = 0; i < calibration.compute.size(); ++i) {
        for (const NamedKind& k : kCurveKinds) ids.push_back({k.kind, static_cast<int>(i)});
    }
    for (const Framework f : kAllFrameworks) {
        for (const NamedKind& k : kFrameworkKinds) ids.push_back({k.kind, static_cast<int>(f)});
    }
    for (const Interconnect i : kAllInterconnects) {
        for (const NamedKind& k : kFabricKinds) {
            if (k.kind == ParameterKind::fabric_cap && !(calibration.network.fabric(i).cap_GBps > 0)) continue;
            ids.push_back({k.kind, static_cast<int>(i)});
        }
    }
    for (const IntraLink l : kAllIntraLinks) {
        for (const NamedKind& k : kLinkKinds) ids.push_back({k.kind, static_cast<int>(l)});
    }
    for (const NamedKind& k : kGlobalKinds) ids.push_back({k.kind, 0});
    for (const NamedLoader& l : kDaliLoaders) ids.push_back({ParameterKind::decode_rate, static_cast<int>(l.loader)});
    return ids;
}

double to_coordinate(Coordinate coordinate, double value) {
    if (coordinate == Coordinate::log) return std::log(std::max(value, kLogFloor));
    const double x = std::clamp(value, kCoordinateFloor, 1.0 - kCoordinateFloor);
    return std::log(x / (1.0 - x));
}

double from_coordinate(Coordinate coordinate, double u) {
    if (coordinate == Coordinate::log) return std::exp(u);
    return 1.0 / (1.0 + std::exp(-u));
}

double log_value_per_coordinate(Coordinate coordinate, double value) {
    return coordinate == Coordinate::log ? 1.0 : 1.0 - std::clamp(value, 0.0, 1.0);
}

double group_sigma(const Calibration& c, ParameterId id) {
    double relative = 0;
    switch (id.kind) {
        case ParameterKind::curve_time_per_image:
        case ParameterKind::curve_fixed:
            relative = c.compute.at(static_cast<std::size_t>(id.index)).relative_sigma;
            break;
        case ParameterKind::fixed_overhead:
        case ParameterKind::sync_jitter:
        case ParameterKind::allreduce_overlap:
        case ParameterKind::ps_overlap:
            relative = c.framework(static_cast<Framework>(id.index)).relative_sigma;
            break;
        case ParameterKind::cpu_decode_rate:
        case ParameterKind::decode_rate:
            relative = c.decode_relative_sigma;
            break;
        default:
            relative = c.network.relative_sigma;
            break;
    }
    const Coordinate coordinate = coordinate_of(id.kind);
    return relative / std::max(log_value_per_coordinate(coordinate, parameter_value(c, id)), kCoordinateFloor);
}

}  // namespace epochcast
