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

/// d ln(throughput) / d ln(field) from d ln(iteration) / d ln(field): its negation (eq. U1).
std::array<double, kSensitiveFields> negated(std::array<double, kSensitiveFields> d) noexcept {
    for (double& x : d) x = -x;
    return d;
}

/// d ln(throughput) / d ln(field) of `s`, whose synchronisation is `comm` (eq. U1;
/// log_iteration_per_log_field's analytic derivatives).
std::array<double, kSensitiveFields> log_throughput_per_log_field(const ResolvedScenario& s,
                                                                  const Communication& comm) noexcept {
    return negated(log_iteration_per_log_field(s, comm, iteration_times_with(s, comm.seconds)));
}

/// The iteration a prediction's phases give (apply_iteration's, iteration_times_with's).
IterationTimes times_of(const Prediction& p) noexcept {
    IterationTimes t;
    t.compute_s = p.compute_s;
    t.data_s = p.data_s;
    t.communication_s = p.communication_s;
    t.exposed_communication_s = p.exposed_communication_s;
    t.sync_s = p.sync_s;
    t.iteration_s = p.iteration_s;
    return t;
}

/// The gradient over the parameters' coordinates from the log-derivatives `per_log_field`.
std::array<double, kSensitiveFields> gradient_of(const ResolvedScenario& s,
                                                 const std::array<double, kSensitiveFields>& per_log_field) noexcept {
    std::array<double, kSensitiveFields> gradient{};
    for (std::size_t f = 0; f < kSensitiveFields; ++f) {
        const FieldSensitivity& sensitivity = s.sensitivity[f];
        if (sensitivity.parameter < 0 || sensitivity.log_field_per_coordinate == 0) continue;
        gradient[f] = per_log_field[f] * sensitivity.log_field_per_coordinate;
    }
    return gradient;
}

bool has_compiled_shifts(const ResolvedScenario& s) noexcept {
    const LogShift& split = s.compiled_split;
    const LogShift& ratio = s.compiled_ratio;
    return split.log_fixed != 0 || split.log_time_per_image != 0 || ratio.log_fixed != 0 ||
           ratio.log_time_per_image != 0;
}

/// compiled_variance from the log-derivatives `per_log_field`.
double compiled_variance_of(const ResolvedScenario& s,
                            const std::array<double, kSensitiveFields>& per_log_field) noexcept {
    if (!has_compiled_shifts(s)) return 0.0;
    const double per_log_fixed = per_log_field[static_cast<std::size_t>(SensitiveField::fixed)];
    const double per_log_image = per_log_field[static_cast<std::size_t>(SensitiveField::time_per_image)];
    double variance = 0;
    for (const LogShift& shift : {s.compiled_split, s.compiled_ratio}) {
        const double d = per_log_fixed * shift.log_fixed + per_log_image * shift.log_time_per_image;
        variance += d * d;
    }
    return variance;
}

/// throughput_relative_sigma of `s` from its log-derivatives `per_log_throughput`
/// (log_throughput_per_log_field's).
double relative_sigma(const ResolvedScenario& s, const std::array<double, kSensitiveFields>& per_log_throughput,
                      const ParameterCovariance& covariance, double model_sigma) noexcept {
    // Delta method (eq. U1): g' C g over the parameters the scenario uses, plus the model's own scatter.
    const std::size_t n = covariance.parameters().size() + 1;
    const std::vector<double>& matrix = covariance.matrix();
    double variance = model_sigma * model_sigma + compiled_variance_of(s, per_log_throughput);
    if (s.transfer_sigma > 0) {
        // A borrowed curve's own uncertainty acts on the whole time per image, whatever share of it
        // a parameter moves: d ln(throughput) / d ln(t_img) times its relative sigma.
        const double transfer =
            per_log_throughput[static_cast<std::size_t>(SensitiveField::time_per_image)] * s.transfer_sigma;
        variance += transfer * transfer;
    }
    // The gradient's fields that move (gradient_of's), gathered first, so that the double sum runs
    // without a test; only the first `count` entries are read, so they need no zeroing.
    std::array<double, kSensitiveFields> moving;
    std::array<std::size_t, kSensitiveFields> rows;
    std::size_t count = 0;
    for (std::size_t f = 0; f < kSensitiveFields; ++f) {
        const FieldSensitivity& sensitivity = s.sensitivity[f];
        if (sensitivity.parameter < 0 || sensitivity.log_field_per_coordinate == 0) continue;
        const double g = per_log_throughput[f] * sensitivity.log_field_per_coordinate;
        if (g == 0) continue;
        moving[count] = g;
        rows[count++] = static_cast<std::size_t>(sensitivity.parameter);
    }
    // C is symmetric (a calibration's covariance must be): each row's diagonal term and twice its
    // terms left of the diagonal, each row's sum its own, so that the adds need not wait in one line.
    double quadratic = 0;
    for (std::size_t a = 0; a < count; ++a) {
        const double* row = &matrix[rows[a] * n];
        double left = 0;
        for (std::size_t b = 0; b < a; ++b) left += moving[b] * row[rows[b]];
        quadratic += moving[a] * (moving[a] * row[rows[a]] + 2.0 * left);
    }
    variance += quadratic;
    // A covariance too large for a double (1e308 in a calibration file) gives no band: an infinite
    // sigma, which check_prediction() refuses, rather than a NaN that prints as "0 - -0".
    if (!std::isfinite(variance)) return std::numeric_limits<double>::infinity();
    return std::sqrt(std::max(variance, 0.0));
}

}  // namespace

std::array<double, kSensitiveFields> throughput_gradient(const ResolvedScenario& s) noexcept {
    // d ln(throughput) = -d ln(iteration), through each field a parameter scales (eq. U1).
    return gradient_of(s, log_throughput_per_log_field(s, communication(s)));
}

double throughput_per_log_time_per_image(const ResolvedScenario& s) noexcept {
    return log_throughput_per_log_field(s, communication(s))[static_cast<std::size_t>(SensitiveField::time_per_image)];
}

double compiled_variance(const ResolvedScenario& s) noexcept {
    if (!has_compiled_shifts(s)) return 0.0;
    return compiled_variance_of(s, log_throughput_per_log_field(s, communication(s)));
}

double throughput_relative_sigma(const ResolvedScenario& s, const ParameterCovariance& covariance,
                                 double model_sigma) noexcept {
    return relative_sigma(s, log_throughput_per_log_field(s, communication(s)), covariance, model_sigma);
}

Interval throughput_interval(double throughput, double sigma) noexcept {
    const double spread = std::exp(kInterval95Sigmas * sigma);  // one exp(), its inverse a division
    return {throughput / spread, throughput * spread};
}

namespace {

/// The band of an eager curve's throughput `p` for `s`: its fast end no faster than the same
/// cluster's with no input bound (throughput_band's first rule).
Interval band_no_faster_than_unbound(const ResolvedScenario& s, const Communication& comm, const Prediction& p,
                                     const ParameterCovariance& covariance, double model_sigma) noexcept {
    const double throughput = p.throughput_images_per_s;
    const IterationTimes t = times_of(p);
    const StepDerivatives d = step_derivatives(s, comm, t);
    Interval band = throughput_interval(
        throughput, relative_sigma(s, negated(log_iteration_per_log_field(d, t)), covariance, model_sigma));
    const double unbound_throughput = p.global_batch / (p.compute_s + p.sync_s + p.exposed_communication_s);
    if (!(band.high > unbound_throughput)) return band;
    // The same cluster with an infinitely fast loader and store: the step alone, whose derivatives
    // are the same step's.
    const double unbound_high =
        throughput_interval(unbound_throughput,
                            relative_sigma(s, negated(log_step_per_log_field(d, t)), covariance, model_sigma))
            .high;
    band.high = std::max(throughput, std::min(band.high, unbound_high));
    return band;
}

/// The band of `s` with its compute curve at eq. C9's split end `end` (k = 0 or 1) of the eager
/// curve, its fixed and per-image times `eager_fixed_s` and `eager_time_per_image_s`: the
/// measured ratio's sigma kept, the split's left out (at an end it is no longer unknown).
Interval band_at_split_end(const ResolvedScenario& s, const Communication& comm, const Prediction& p,
                           const CompiledExecution& end, double eager_fixed_s, double eager_time_per_image_s,
                           const ParameterCovariance& covariance, double model_sigma) noexcept {
    ResolvedScenario at = s;
    at.compiled = false;
    at.compiled_split = {};
    at.compiled_ratio = end.ratio;
    at.fixed_s = end.fixed_factor * eager_fixed_s;
    at.time_per_image_s = end.time_per_image_factor * eager_time_per_image_s;
    const IterationTimes t = iteration_times_with(at, comm.seconds);  // the split moves no network field
    Prediction q = p;
    q.throughput_images_per_s = p.global_batch / t.iteration_s;
    q.compute_s = t.compute_s;
    q.sync_s = t.sync_s;
    q.exposed_communication_s = t.exposed_communication_s;
    q.iteration_s = t.iteration_s;
    return band_no_faster_than_unbound(at, comm, q, covariance, model_sigma);
}

}  // namespace

Interval throughput_band(const ResolvedScenario& s, const Communication& comm, const Prediction& p,
                         const ParameterCovariance& covariance, double model_sigma) noexcept {
    Interval band = band_no_faster_than_unbound(s, comm, p, covariance, model_sigma);
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
        band_at_split_end(s, comm, p, kept, eager_fixed_s, eager_time_per_image_s, covariance, model_sigma);
    const Interval fast_end =
        band_at_split_end(s, comm, p, none, eager_fixed_s, eager_time_per_image_s, covariance, model_sigma);
    band.low = std::min(throughput, std::max(band.low, slow_end.low));
    band.high = std::max(throughput, std::min(band.high, fast_end.high));
    return band;
}

}  // namespace epochcast
