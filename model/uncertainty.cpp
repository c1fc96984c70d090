#include "model/uncertainty.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>

#include "model/cluster.hpp"
#include "model/collectives.hpp"
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

double throughput_relative_sigma(const ResolvedScenario& s, const ParameterCovariance& covariance,
                                 double model_sigma) noexcept {
    // Delta method (eq. U1): g' C g over the parameters the scenario uses, plus the model's own scatter.
    const std::array<double, kSensitiveFields> gradient = throughput_gradient(s);
    const std::size_t n = covariance.parameters().size() + 1;
    const std::vector<double>& matrix = covariance.matrix();
    double variance = model_sigma * model_sigma;
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

Interval throughput_band(const ResolvedScenario& s, const Prediction& p, const ParameterCovariance& covariance,
                         double model_sigma) noexcept {
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

}  // namespace epochcast
