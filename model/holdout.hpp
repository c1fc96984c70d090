// The held-out checks of a calibration (docs/validation.md): each run, system or system's larger
// runs predicted by a calibration fitted without them (model/fit.hpp), so that the error reported
// is the one a user meets on a run the model was not fitted to.
#pragma once

#include <string>
#include <vector>

#include "model/cost_model.hpp"
#include "model/fit.hpp"
#include "model/observation.hpp"

namespace epochcast {

/// Each run predicted by a calibration fitted to all the other runs (and every network
/// measurement), starting from `prior`: the held-out error is the honest one. Same order as `runs`.
std::vector<Prediction> leave_one_out_predictions(const CostModel& prior, const std::vector<Observation>& runs,
                                                  const std::vector<NetworkObservation>& networks,
                                                  const FitOptions& options = {});

/// The system a run was measured on, for the held-out checks: its instance, framework, precision
/// and software stack, e.g. "dgx-a100 mxnet amp current" (what a user calibrates as one).
std::string system_of(const Scenario& scenario);

/// The campaign a run belongs to: its trace's "campaign" (the runs measured together with one code
/// and software setup), else the trace file it came from (its origin before '#').
std::string campaign_of(const Observation& run);

/// What a held-out check holds out (docs/validation.md).
enum class HoldOut {
    run,       ///< each run, predicted by a fit to every other run
    system,    ///< each system's runs, predicted by a fit to every other system's (a system never seen)
    two_runs,  ///< each system of 3 or more runs of one campaign: a fit to every other run, then to its
               ///< two smallest runs (what a user does with two benchmark runs of their own setup)
};

/// What `mode` holds out together: under HoldOut::system a run's system_of; under two_runs its
/// system_of and campaign, e.g. "dgx-a100 mxnet amp current (MLPerf Training, NVIDIA)"; under run
/// the run's origin.
std::string held_out_group(const Observation& run, HoldOut mode);

/// One run's held-out prediction; `calibration_run` marks the two runs HoldOut::two_runs fitted to
/// (their prediction is in-sample). A system of fewer than 3 runs under two_runs gets no
/// prediction (`predicted` false). `group` is what was held out with it (held_out_group).
struct HeldOutPrediction {
    Prediction prediction;
    bool calibration_run = false;
    bool predicted = false;
    std::string group;
};

/// Every run's held-out prediction under `mode`, starting each fit from `prior`; comparisons that
/// involve a held-out system are held out with it. Same order as `runs`.
std::vector<HeldOutPrediction> held_out_predictions(const CostModel& prior, const std::vector<Observation>& runs,
                                                    const std::vector<NetworkObservation>& networks,
                                                    const std::vector<Comparison>& comparisons, HoldOut mode,
                                                    const FitOptions& options = {});

}  // namespace epochcast
