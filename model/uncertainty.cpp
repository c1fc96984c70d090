#include "model/uncertainty.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>

#include "model/cluster.hpp"
#include "model/collectives.hpp"
#include "model/compute_curve.hpp"
#include "model/errors.hpp"
#include "model/iteration.hpp"

namespace epochcast {

ParameterCovariance::ParameterCovariance(const Calibration& calibration) {
    parameters_ = all_parameters(calibration);
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
        const auto kind = static_cast<std::size_t>(parameters_[i].kind);
        if (rows_.size() <= kind) rows_.resize(kind + 1);
        std::vector<int>& rows = rows_[kind];
        const auto index = static_cast<std::size_t>(parameters_[i].index);
        if (rows.size() <= index) rows.resize(index + 1, -1);
        if (rows[index] < 0) rows[index] = static_cast<int>(i);  // the first, as a search would find
    }
    const std::size_t n = parameters_.size() + 1;
    covariance_.assign(n * n, 0.0);
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
        const double sigma = group_sigma(calibration, parameters_[i]);
        covariance_[i * n + i] = sigma * sigma;
    }
    covariance_[n * n - 1] = calibration.roofline.relative_sigma * calibration.roofline.relative_sigma;
    // The fitted block replaces the group sigmas of the parameters it names.
    const Uncertainty& u = calibration.uncertainty;
    std::vector<std::size_t> rows;
    for (const std::string& name : u.parameters) {
        ParameterId id;
        if (!find_parameter(calibration, name, &id)) {
            throw InputError("calibration: uncertainty.parameters names '" + name +
                             "', which this calibration has not");
        }
        rows.push_back(
            static_cast<std::size_t>(std::find(parameters_.begin(), parameters_.end(), id) - parameters_.begin()));
    }
    for (std::size_t a = 0; a < rows.size(); ++a) {
        for (std::size_t b = 0; b < rows.size(); ++b) {
            covariance_[rows[a] * n + rows[b]] = u.covariance[a * rows.size() + b];
        }
    }
}

int ParameterCovariance::row(ParameterKind kind, int index) const {
    const auto k = static_cast<std::size_t>(kind);
    if (k >= rows_.size() || index < 0) return -1;
    const std::vector<int>& rows = rows_[k];
    return static_cast<std::size_t>(index) < rows.size() ? rows[static_cast<std::size_t>(index)] : -1;
}

FieldSensitivity ParameterCovariance::sensitivity(ParameterKind kind, int index, double value) const {
    return {row(kind, index), log_value_per_coordinate(coordinate_of(kind), value)};
}

std::array<FieldSensitivity, kSensitiveFields> field_sensitivities(
    const ResolvedScenario& r, FieldSensitivity time_per_image, FieldSensitivity fixed, Framework framework,
    const Cluster& cluster, const Calibration& calibration, const ParameterCovariance& covariance) {
    auto sensitivity = [&covariance](ParameterKind kind, int index, double value) {
        return covariance.sensitivity(kind, index, value);
    };
    const WorkerNodes& workers = cluster.workers;
    const InstanceSpec* server = cluster.server;
    std::array<FieldSensitivity, kSensitiveFields> s{};
    auto at = [&s](SensitiveField field) -> FieldSensitivity& { return s[static_cast<std::size_t>(field)]; };
    at(SensitiveField::time_per_image) = time_per_image;
    at(SensitiveField::fixed) = fixed;

    const FrameworkProfile& profile = calibration.framework(framework);
    const int framework_index = static_cast<int>(framework);
    at(SensitiveField::sync_jitter) = sensitivity(ParameterKind::sync_jitter, framework_index, profile.sync_jitter);
    // CPU ranks overlap nothing and have no link efficiency (resolve()).
    const bool cpu_ranks = workers.gpu->kind == DeviceKind::cpu;
    if (!cpu_ranks) {
        at(SensitiveField::overlap) =
            r.strategy == Strategy::ps
                ? sensitivity(ParameterKind::ps_overlap, framework_index, profile.ps_overlap)
                : sensitivity(ParameterKind::allreduce_overlap, framework_index, profile.allreduce_overlap);
    }

    const NetworkParams& net = calibration.network;
    const Interconnect latency_fabric = cross_node_latency(r.interconnect, server, net).fabric;
    const int link_index = static_cast<int>(r.intra_link);
    if (!cpu_ranks) {
        at(SensitiveField::intra_bandwidth) =
            sensitivity(ParameterKind::link_efficiency, link_index, net.link(r.intra_link).efficiency);
    }
    at(SensitiveField::intra_latency) = sensitivity(ParameterKind::link_latency, link_index, r.intra_latency_s);
    if (r.nvls_bandwidth_Bps > 0) {
        at(SensitiveField::nvls_bandwidth) = sensitivity(ParameterKind::nvls_efficiency, 0, net.nvls_efficiency);
    }
    auto bandwidth = [&](const InstanceSpec& spec, int adapters) {
        const NetworkParameter parameter = node_network_parameter(spec, adapters, net);
        return sensitivity(parameter.id.kind, parameter.id.index, parameter.value);
    };
    at(SensitiveField::inter_bandwidth) = bandwidth(*workers.instance, workers.efa_adapters);
    at(SensitiveField::inter_latency) =
        sensitivity(ParameterKind::fabric_latency, static_cast<int>(latency_fabric), r.inter_latency_s);
    if (server) at(SensitiveField::server_bandwidth) = bandwidth(*server, -1);

    if (const double rate = calibration.decode_rate(r.loader, framework); rate > 0) {
        at(SensitiveField::decode) = r.loader == Loader::cpu
                                         ? sensitivity(ParameterKind::cpu_decode_rate, framework_index, rate)
                                         : sensitivity(ParameterKind::decode_rate, static_cast<int>(r.loader), rate);
    }
    return s;
}

namespace {

bool changes_communication(SensitiveField f) {
    switch (f) {
        case SensitiveField::intra_bandwidth:
        case SensitiveField::intra_latency:
        case SensitiveField::inter_bandwidth:
        case SensitiveField::inter_latency:
        case SensitiveField::server_bandwidth:
        case SensitiveField::nvls_bandwidth:
            return true;
        default:
            return false;
    }
}

/// d ln(iteration) / d ln(field) by a forward difference (eq. U1), around the iteration of
/// `base_s` seconds whose all-reduce takes `communication_s`; the all-reduce is recomputed only
/// for the network's fields. `moved` is a copy of the scenario, left as it was found.
double log_iteration_per_log_field(ResolvedScenario& moved, SensitiveField field, double base_s,
                                   double communication_s) noexcept {
    constexpr double kStep = 1e-4;
    double& value = moved.field(field);
    const double saved = value;
    value *= 1.0 + kStep;
    const double moved_communication_s = changes_communication(field) ? communication_time_s(moved) : communication_s;
    const double d_log_iteration =
        (iteration_times_with(moved, moved_communication_s).iteration_s / base_s - 1.0) / kStep;
    value = saved;
    return d_log_iteration;
}

}  // namespace

std::array<double, kSensitiveFields> throughput_gradient(const ResolvedScenario& s) noexcept {
    // d ln(throughput) = -d ln(iteration), through each field a parameter scales (eq. U1).
    const double communication_s = communication_time_s(s);
    const double base = iteration_times_with(s, communication_s).iteration_s;
    std::array<double, kSensitiveFields> gradient{};
    ResolvedScenario moved = s;
    for (std::size_t f = 0; f < kSensitiveFields; ++f) {
        const FieldSensitivity& sensitivity = s.sensitivity[f];
        if (sensitivity.parameter < 0 || sensitivity.log_field_per_coordinate == 0) continue;
        gradient[f] = -log_iteration_per_log_field(moved, static_cast<SensitiveField>(f), base, communication_s) *
                      sensitivity.log_field_per_coordinate;
    }
    return gradient;
}

double throughput_per_log_time_per_image(const ResolvedScenario& s) noexcept {
    const double communication_s = communication_time_s(s);
    ResolvedScenario moved = s;
    return -log_iteration_per_log_field(moved, SensitiveField::time_per_image,
                                        iteration_times_with(s, communication_s).iteration_s, communication_s);
}

double compiled_variance(const ResolvedScenario& s) noexcept {
    const LogShift& split = s.compiled_split;
    const LogShift& ratio = s.compiled_ratio;
    if (split.log_fixed == 0 && split.log_time_per_image == 0 && ratio.log_fixed == 0 &&
        ratio.log_time_per_image == 0) {
        return 0.0;
    }
    const double communication_s = communication_time_s(s);
    const double base = iteration_times_with(s, communication_s).iteration_s;
    ResolvedScenario moved = s;
    const double per_log_fixed = -log_iteration_per_log_field(moved, SensitiveField::fixed, base, communication_s);
    const double per_log_image =
        -log_iteration_per_log_field(moved, SensitiveField::time_per_image, base, communication_s);
    double variance = 0;
    for (const LogShift& shift : {split, ratio}) {
        const double d = per_log_fixed * shift.log_fixed + per_log_image * shift.log_time_per_image;
        variance += d * d;
    }
    return variance;
}

double throughput_relative_sigma(const ResolvedScenario& s, const ParameterCovariance& covariance,
                                 double model_sigma) noexcept {
    // Delta method (eq. U1): g' C g over the parameters the scenario uses, plus the model's own scatter.
    const std::array<double, kSensitiveFields> gradient = throughput_gradient(s);
    const std::size_t n = covariance.parameters().size() + 1;
    const std::vector<double>& matrix = covariance.matrix();
    double variance = model_sigma * model_sigma + compiled_variance(s);
    if (s.transfer_sigma > 0) {
        // A borrowed curve's own uncertainty acts on the whole time per image, whatever share of it
        // a parameter moves: d ln(throughput) / d ln(t_img) times its relative sigma.
        const double transfer = throughput_per_log_time_per_image(s) * s.transfer_sigma;
        variance += transfer * transfer;
    }
    for (std::size_t a = 0; a < kSensitiveFields; ++a) {
        if (gradient[a] == 0) continue;
        for (std::size_t b = 0; b < kSensitiveFields; ++b) {
            if (gradient[b] == 0) continue;
            const auto row = static_cast<std::size_t>(s.sensitivity[a].parameter);
            const auto column = static_cast<std::size_t>(s.sensitivity[b].parameter);
            variance += gradient[a] * gradient[b] * matrix[row * n + column];
        }
    }
    // A covariance too large for a double (1e308 in a calibration file) gives no band: an infinite
    // sigma, which check_prediction() refuses, rather than a NaN that prints as "0 - -0".
    if (!std::isfinite(variance)) return std::numeric_limits<double>::infinity();
    return std::sqrt(std::max(variance, 0.0));
}

Interval throughput_interval(double throughput, double sigma) noexcept {
    return {throughput * std::exp(-kInterval95Sigmas * sigma), throughput * std::exp(kInterval95Sigmas * sigma)};
}

namespace {

/// The band of an eager curve's throughput `p` for `s`: its fast end no faster than the same
/// cluster's with no input bound (throughput_band's first rule).
Interval band_no_faster_than_unbound(const ResolvedScenario& s, const Prediction& p,
                                     const ParameterCovariance& covariance, double model_sigma) noexcept {
    const double throughput = p.throughput_images_per_s;
    Interval band = throughput_interval(throughput, throughput_relative_sigma(s, covariance, model_sigma));
    const double unbound_throughput = p.global_batch / (p.compute_s + p.sync_s + p.exposed_communication_s);
    if (!(band.high > unbound_throughput)) return band;
    ResolvedScenario unbound = s;
    unbound.decode_images_per_s_per_gpu = std::numeric_limits<double>::infinity();
    unbound.storage_images_per_s_per_gpu = std::numeric_limits<double>::infinity();
    const double unbound_high =
        throughput_interval(unbound_throughput, throughput_relative_sigma(unbound, covariance, model_sigma)).high;
    band.high = std::max(throughput, std::min(band.high, unbound_high));
    return band;
}

/// The band of `s` with its compute curve at eq. C9's split end `end` (k = 0 or 1) of the eager
/// curve, its fixed and per-image times `eager_fixed_s` and `eager_time_per_image_s`: the
/// measured ratio's sigma kept, the split's left out (at an end it is no longer unknown).
Interval band_at_split_end(const ResolvedScenario& s, const Prediction& p, const CompiledExecution& end,
                           double eager_fixed_s, double eager_time_per_image_s, const ParameterCovariance& covariance,
                           double model_sigma) noexcept {
    ResolvedScenario at = s;
    at.compiled = false;
    at.compiled_split = {};
    at.compiled_ratio = end.ratio;
    at.fixed_s = end.fixed_factor * eager_fixed_s;
    at.time_per_image_s = end.time_per_image_factor * eager_time_per_image_s;
    const IterationTimes t = iteration_times_with(at, communication_time_s(at));
    Prediction q = p;
    q.throughput_images_per_s = p.global_batch / t.iteration_s;
    q.compute_s = t.compute_s;
    q.sync_s = t.sync_s;
    q.exposed_communication_s = t.exposed_communication_s;
    return band_no_faster_than_unbound(at, q, covariance, model_sigma);
}

}  // namespace

Interval throughput_band(const ResolvedScenario& s, const Prediction& p, const ParameterCovariance& covariance,
                         double model_sigma) noexcept {
    Interval band = band_no_faster_than_unbound(s, p, covariance, model_sigma);
    if (!s.compiled) return band;
    // Eq. C9's split k is a range, [0, 1], not a bell: for every value of the parameters the
    // compiled step lies between the one that keeps the whole fixed time (k = 1, faster than eager
    // at every batch) and the one that keeps none (k = 0). So the band's slow end is no slower than
    // k = 1's and its fast end no faster than k = 0's, each with the measured ratio's sigma.
    static const CompiledExecution middle = compiled_execution();
    static const CompiledExecution kept = compiled_execution_at(1.0);
    static const CompiledExecution none = compiled_execution_at(0.0);
    const double eager_fixed_s = s.fixed_s / middle.fixed_factor;
    const double eager_time_per_image_s = s.time_per_image_s / middle.time_per_image_factor;
    const double throughput = p.throughput_images_per_s;
    const Interval slow_end =
        band_at_split_end(s, p, kept, eager_fixed_s, eager_time_per_image_s, covariance, model_sigma);
    const Interval fast_end =
        band_at_split_end(s, p, none, eager_fixed_s, eager_time_per_image_s, covariance, model_sigma);
    band.low = std::min(throughput, std::max(band.low, slow_end.low));
    band.high = std::max(throughput, std::min(band.high, fast_end.high));
    return band;
}

}  // namespace epochcast
