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
    double jitter_sigma = 0.3;       ///< a worker's compute jitter from a run's per-step samples (eq. S2)
    int max_iterations = 200;
};

/// One parameter before and after the fit.
struct FittedParameter {
    std::string name;
    double prior_value = 0;
    double prior_sigma = 0;   ///< 1-sigma of the coordinate before the data
    double value = 0;
    double sigma = 0;         ///< 1-sigma of the coordinate after the data
};

struct CalibrationFit {
    Calibration calibration;                ///< the prior with fitted values and their uncertainty
    std::vector<FittedParameter> parameters;  ///< the ones the data touched
    std::vector<FitResidual> residuals;     ///< per measured quantity, at the solution
    int iterations = 0;
    bool converged = false;
    double model_sigma = 0;                 ///< relative scatter of the runs around the fitted model
    double effective_parameters = 0;        ///< how many parameters the data pinned down (trace of the hat matrix)
};

/// The prior 1-sigma the fit gives a parameter's coordinate (weak, so that a few runs move what
/// they touch); docs/model.md, "Calibration".
double fit_prior_sigma(ParameterKind kind);

/// Fit `prior`'s calibration to the runs and network measurements. Runs whose GPU, precision and
/// framework have no compute curve get one, started from the roofline (or a sibling framework's
/// curve on the same GPU) with that prior's uncertainty. Throws InputError when there is nothing
/// to fit or a run cannot be resolved (its message names the run's origin).
CalibrationFit fit_calibration(const CostModel& prior, const std::vector<Observation>& runs,
                               const std::vector<NetworkObservation>& networks, const FitOptions& options = {});

/// Each run predicted by a calibration fitted to all the other runs (and every network
/// measurement), starting from `prior`: the held-out error is the honest one. Same order as `runs`.
std::vector<Prediction> leave_one_out_predictions(const CostModel& prior, const std::vector<Observation>& runs,
                                                  const std::vector<NetworkObservation>& networks,
                                                  const FitOptions& options = {});

}  // namespace epochcast
