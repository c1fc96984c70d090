// The uncertainty of a prediction (docs/model.md, "Uncertainty", eq. U1): the calibration
// parameters' covariance, which parameter each sensitive field of a resolved scenario follows and
// how strongly, the throughput's gradient through those fields, and the band it gives. What a fit
// narrows (model/fit.hpp) and a planned run would narrow (model/plan.hpp) is this covariance.
#pragma once

#include <array>
#include <vector>

#include "model/calibration.hpp"
#include "model/collectives.hpp"
#include "model/parameters.hpp"
#include "model/prediction.hpp"
#include "model/resolved_scenario.hpp"

namespace epochcast {

struct Cluster;

/// The covariance of a calibration's parameters, in their coordinates (model/parameters.hpp): the
/// group sigmas of the calibration, with its fitted block where it has one, and one last row for
/// the roofline prior (eq. C3), which has no ParameterId.
class ParameterCovariance {
public:
    /// Throws InputError when the calibration's covariance names a parameter it does not have.
    explicit ParameterCovariance(const Calibration& calibration);

    /// The rows but the last: every parameter of the calibration. The last row, index
    /// parameters().size() (roofline_row()), is the roofline prior's.
    const std::vector<ParameterId>& parameters() const { return parameters_; }
    /// The covariance of the rows, (parameters().size() + 1) squared, row-major.
    const std::vector<double>& matrix() const { return covariance_; }
    int roofline_row() const { return static_cast<int>(parameters_.size()); }
    /// The row of a parameter, -1 where the calibration has none.
    int row(ParameterKind kind, int index) const;
    /// The row of a parameter of `value` and d ln(value) / d(its coordinate).
    FieldSensitivity sensitivity(ParameterKind kind, int index, double value) const;

private:
    std::vector<ParameterId> parameters_;
    std::vector<double> covariance_;
    /// parameters_ inverted: the row of {kind, index} at [kind][index], -1 where there is none
    /// (row() is asked for every field of every scenario resolved).
    std::vector<std::vector<int>> rows_;
};

/// Which parameter each field of `r` comes from and how strongly (eq. U1): the compute curve's
/// (`time_per_image` and `fixed`, as the curve's choice gives them), the framework's jitter and
/// overlap, the links' and fabrics' bandwidths and latencies (the latency of the slower fabric of
/// the cluster's workers and servers), the decode rate. CostModel::resolve's step, after every
/// field it names is set.
std::array<FieldSensitivity, kSensitiveFields> field_sensitivities(
    const ResolvedScenario& r, FieldSensitivity time_per_image, FieldSensitivity fixed, Framework framework,
    const Cluster& cluster, const Calibration& calibration, const ParameterCovariance& covariance);

/// d ln(throughput) / d(parameter coordinate) through each sensitive field (0 where the field
/// depends on no parameter); the rows are s.sensitivity[f].parameter.
std::array<double, kSensitiveFields> throughput_gradient(const ResolvedScenario& s) noexcept;

/// d ln(throughput) / d ln(time per image) of `s`: how a borrowed curve's own uncertainty
/// (s.transfer_sigma, in ln time per image) reaches the throughput (eq. U1).
double throughput_per_log_time_per_image(const ResolvedScenario& s) noexcept;

/// The variance of ln(throughput) that torch.compile's two unknowns add (eq. C9, s.compiled_split
/// and s.compiled_ratio); 0 for an eager run. No calibration run narrows it: runs are fitted eager.
double compiled_variance(const ResolvedScenario& s) noexcept;

/// Relative 1-sigma of the predicted throughput (eq. U1), from the parameters' covariance, a
/// borrowed curve's own sigma, torch.compile's (eq. C9) and the calibration's model sigma;
/// infinite where the variance is.
double throughput_relative_sigma(const ResolvedScenario& s, const ParameterCovariance& covariance,
                                 double model_sigma) noexcept;

/// The 95% band of a throughput of relative 1-sigma `sigma`, lognormal: throughput x exp(-/+ 1.96 sigma).
Interval throughput_interval(double throughput, double sigma) noexcept;

/// The band of the throughput `p` predicts for `s` (eq. U1; p's iteration is set), its fast end no
/// faster than the fast end of the same cluster with no input bound (no decoding, no store): the
/// input pipeline can only slow an iteration (eq. I1), so for every value of the parameters the
/// bound run is no faster than the unbound one, and neither is its 97.5% quantile. The unbound
/// run's iteration is p's step (compute, straggler wait, exposed communication); its band is
/// evaluated only where the bound band's fast end passes that run's point. Under torch.compile
/// (eq. C9) the band lies within the ends of its split's range: its slow end no slower than the
/// run that keeps the whole fixed time, its fast end no faster than the one that keeps none.
/// `comm` is s's synchronisation (communication(s)), which none of the band's variants moves.
Interval throughput_band(const ResolvedScenario& s, const Communication& comm, const Prediction& p,
                         const ParameterCovariance& covariance, double model_sigma) noexcept;

}  // namespace epochcast
