// The analytic cost model: Scenario -> Prediction in closed form, derived in docs/model.md.
//
// Two steps so that sweeps are fast: resolve() validates a Scenario against the catalog and the
// calibration and reduces it to numbers (it may throw and allocate); predict() is arithmetic on
// those numbers only: it neither throws nor allocates. Each reads top to bottom as a sequence of
// calls into the rooms where the model's decisions live, one room per decision
// (docs/architecture.md, "The model's rooms"):
//
//   model/limits.hpp          what epochcast accepts: the scenario's limits and flags, checked first
//   model/cluster.hpp         the cluster the scenario names, as the catalog has it, and its batch
//   model/workload.hpp        the architecture's FLOPs, gradients and memory (eq. M1)
//   model/compute_curve.hpp   one GPU's compute curve (eqs. C0-C7)
//   model/iteration.hpp       one iteration: compute, stragglers, overlap, input pipeline (C1-I1)
//   model/collectives.hpp     communication: links, NCCL's algorithm, the all-reduce (N1-V1, B1)
//   model/uncertainty.hpp     the covariance, the sensitivities and the band (eq. U1)
//   model/convergence.hpp     the epochs to train (K1-K3) and the evaluation cadence (E2)
//   model/storage.hpp         the store the images are read from (F1-F8)
//   model/run_cost.hpp        the run's schedule and money, spot and elastic spot (X1-X7)
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "model/calibration.hpp"
#include "model/catalog.hpp"
#include "model/cluster.hpp"
#include "model/collectives.hpp"
#include "model/compute_curve.hpp"
#include "model/convergence.hpp"
#include "model/iteration.hpp"
#include "model/limits.hpp"
#include "model/observation.hpp"
#include "model/parameters.hpp"
#include "model/prediction.hpp"
#include "model/resolved_scenario.hpp"
#include "model/run_cost.hpp"
#include "model/scenario.hpp"
#include "model/storage.hpp"
#include "model/uncertainty.hpp"
#include "model/workload.hpp"

namespace epochcast {

class CostModel {
public:
    /// Throws InputError when the calibration's covariance names a parameter it does not have.
    CostModel(Catalog catalog, Calibration calibration);
    /// The same catalog and workloads (shared, not copied) with another calibration: cheap, for fitting.
    CostModel(const CostModel& base, Calibration calibration);

    /// Validate and reduce. Throws InputError naming the problem (unknown instance, a count out of
    /// range, ps without servers, ...) and InfeasibleError when the batch does not fit in memory.
    ResolvedScenario resolve(const Scenario& scenario) const;

    /// resolve() into `resolved`, except that a batch that does not fit in memory returns false with
    /// `infeasible` saying why (InfeasibleError's text) rather than throwing: a sweep's infeasible
    /// row costs no exception. Bad input still throws InputError.
    bool resolve_feasible(const Scenario& scenario, ResolvedScenario& resolved, std::string& infeasible) const;

    /// The closed form. No allocation, no exception.
    Prediction predict(const ResolvedScenario& scenario) const noexcept;

    Prediction predict(const Scenario& scenario) const { return predict(resolve(scenario)); }

    /// predict() followed by check_spot_run() and check_prediction(): what the CLI, the plan search,
    /// the sweep and the what-if curves show. Throws InfeasibleError for a spot run that cannot be
    /// given as asked and for a figure that is not finite and non-negative.
    Prediction checked_predict(const ResolvedScenario& scenario) const;
    Prediction checked_predict(const Scenario& scenario) const { return checked_predict(resolve(scenario)); }

    /// The architecture's workload figures, built once per (model, image size, classes).
    const Workload& workload(const std::string& model, int image_size, int classes) const;

    const Catalog& catalog() const { return *catalog_; }
    /// The training recipes that turn a target accuracy into epochs (built in).
    const Convergence& convergence() const { return *convergence_; }
    const Calibration& calibration() const { return *calibration_; }

    /// Relative 1-sigma of the predicted throughput (eq. U1), from the parameters' covariance and
    /// the calibration's model sigma (model/uncertainty.hpp).
    double throughput_relative_sigma(const ResolvedScenario& s) const noexcept;

    /// d ln(throughput) / d(parameter coordinate) through each sensitive field (0 where the field
    /// depends on no parameter); the rows are s.sensitivity[f].parameter.
    std::array<double, kSensitiveFields> throughput_gradient(const ResolvedScenario& s) const noexcept {
        return epochcast::throughput_gradient(s);
    }

    /// The covariance's rows but its last: every parameter of the calibration. The last row,
    /// index parameters().size(), is the roofline prior's (eq. C3), which has no ParameterId.
    const std::vector<ParameterId>& parameters() const { return covariance_.parameters(); }
    /// The prior/fitted covariance of the rows, row-major.
    const std::vector<double>& covariance() const { return covariance_.matrix(); }

private:
    /// resolve_feasible() into a default-constructed `r` and an empty `infeasible`.
    bool resolve_into(const Scenario& scenario, ResolvedScenario& r, std::string& infeasible) const;

    std::shared_ptr<const Catalog> catalog_;
    const Convergence* convergence_ = &Convergence::built_in();
    std::shared_ptr<const Calibration> calibration_;
    std::shared_ptr<Workloads> workloads_;
    ParameterCovariance covariance_;
    ComputeCurves curves_;
};

}  // namespace epochcast
