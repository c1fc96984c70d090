// Calibration by fitting: the model's free parameters (model/parameters.hpp) adjusted to measured
// runs and network measurements by regularised Levenberg-Marquardt in log/logit coordinates, the
// prior calibration's values acting as Gaussian priors (docs/model.md, "Calibration"). The result
// is a Calibration with the fitted values, their covariance and the residual scatter, which is
// what every later prediction's interval is propagated from.
#pragma once

#include <string>
#include <vector>

#include "model/calibration.hpp"
#include "model/cost_model.hpp"
#include "model/observation.hpp"

namespace epochcast {

/// How much each kind of data is trusted: the relative 1-sigma the fit weights its residuals by.
struct FitOptions {
    double run_sigma = 0.03;         ///< a run's measured throughput (measurement and model-form scatter)
    double efficiency_sigma = 0.02;  ///< a published scaling efficiency
    double network_sigma = 0.05;     ///< an nccl-tests bus bandwidth
    double comparison_sigma = 0.03;  ///< a published ratio of two configurations (outside its range)
    double jitter_sigma = 0.3;       ///< a worker's compute jitter from a run's per-step samples (eq. S2)
    int max_iterations = 200;
    /// Parameters (by name, as parameter_name spells them) that the fit takes from the prior's
    /// value with no more than a released prior's weak sigma (kReleasedSigma): a fitted prior's
    /// posterior no longer holds them. fit_calibration fills it where a user's runs contradict a
    /// fitted prior (docs/model.md, "A user's own runs").
    std::vector<std::string> released;
    /// GPUs (by name) whose runs get a compute curve of their own even where a memory variant of
    /// their chip has one: fit_calibration's answer to runs that contradict the variant's curve.
    std::vector<std::string> own_gpus;
};

/// The relative error within which a fit from a fitted prior must reproduce each of its runs'
/// throughput; a run further off has contradicted the prior, and the parameters it depends on are
/// released (FitOptions::released).
inline constexpr double kOwnRunTolerance = 0.02;
/// A released parameter's prior sigma in its coordinate: a factor of e^3 = 20 either way.
inline constexpr double kReleasedSigma = 3.0;

/// One parameter before and after the fit.
struct FittedParameter {
    std::string name;
    double prior_value = 0;
    double prior_sigma = 0;  ///< 1-sigma of the coordinate before the data
    double value = 0;
    double sigma = 0;  ///< 1-sigma of the coordinate after the data
};

struct CalibrationFit {
    Calibration calibration;                  ///< the prior with fitted values and their uncertainty
    std::vector<FittedParameter> parameters;  ///< the ones the data touched
    std::vector<FitResidual> residuals;       ///< per measured quantity, at the solution
    int iterations = 0;
    bool converged = false;
    double model_sigma = 0;           ///< relative scatter of the runs around the fitted model
    double effective_parameters = 0;  ///< how many parameters the data pinned down (trace of the hat matrix)
    /// Where the runs contradicted a fitted prior: one line saying which system, how far, and which
    /// parameters became the runs' own (empty where none did).
    std::string contradiction;
    std::vector<std::string> released;  ///< the parameters released (FitOptions::released)
};

/// The prior 1-sigma the fit gives a parameter's coordinate (weak, so that a few runs move what
/// they touch); docs/model.md, "Calibration".
double fit_prior_sigma(ParameterKind kind);

/// The ratio a comparison's two configurations have under `model`: the scenario's throughput over
/// the baseline's (speedup) or its epoch time over the baseline's (epoch_time_ratio).
double predicted_ratio(const CostModel& model, const Comparison& comparison);

/// Fit `prior`'s calibration to the runs, network measurements and published comparisons (a ratio
/// inside its published range costs nothing, one outside it its log distance to the range). Runs
/// whose GPU chip, precision family and software have no compute curve get one, started from the
/// roofline (or other software's curve on the same chip) with that prior's uncertainty. Where the
/// prior was itself fitted (it carries a covariance) and a run comes out more than
/// kOwnRunTolerance off, the runs contradict it: the parameters such runs depend on are released
/// (their compute curve; then their loader's rate; then their framework's overheads; then their
/// fabric and link), one group at a time, and the fit repeated, so that the user's own runs win
/// (`contradiction` says so).
/// Throws InputError when there is nothing to fit or a run cannot be resolved (its message names
/// the run's origin).
CalibrationFit fit_calibration(const CostModel& prior, const std::vector<Observation>& runs,
                               const std::vector<NetworkObservation>& networks,
                               const std::vector<Comparison>& comparisons = {}, const FitOptions& options = {});

/// What `calibrate` writes for `fit`: its calibration's JSON text, read back first. Throws
/// InputError when the reader refuses it (a NaN sigma from runs of equal steps, a rate beyond
/// its bound from runs 12 orders of magnitude apart): such runs fit no calibration epochcast can
/// use, and nothing is to be written.
std::string calibration_file_text(const CalibrationFit& fit);

}  // namespace epochcast
