// Which calibration runs to pay for (docs/model.md, "Planning calibration runs"), in the spirit of
// Ernest's experiment design (Venkataraman et al., NSDI 2016): among short benchmark runs on small
// clusters of the chosen instance, pick greedily the few that shrink the uncertainty of the
// prediction the user cares about most per dollar, using the fit's linearisation (each run adds
// g g' / sigma^2 to the parameters' information, g its throughput's gradient).
#pragma once

#include <vector>

#include "model/cost_model.hpp"
#include "model/scenario.hpp"

namespace epochcast {

/// The most timed iterations a planned calibration run may have: a benchmark of 10^6 iterations
/// runs for days on any GPU, and the product with the iteration time stays far from overflow.
inline constexpr int kMaxBenchmarkIterations = 1000000;

struct PlanOptions {
    int max_nodes = 2;               ///< largest cluster a calibration run may use
    int max_runs = 3;                ///< at most this many runs
    int benchmark_iterations = 100;  ///< timed iterations of one calibration run (after warm-up), at most
                                     ///< kMaxBenchmarkIterations
    double run_sigma = 0.03;         ///< relative scatter of one run's measured throughput
    double stop_fraction = 0.02;     ///< stop when a run would cut the target's variance by less than this share
};

struct PlannedRun {
    Scenario scenario;
    double duration_s = 0;          ///< startup plus the timed iterations
    double cost_usd = 0;            ///< what the run costs at the scenario's pricing
    double target_sigma_after = 0;  ///< relative 1-sigma of the target's throughput once this run is in
};

struct CalibrationPlan {
    Scenario target;
    double target_sigma_before = 0;  ///< relative 1-sigma of the target's throughput before any run
    std::vector<PlannedRun> runs;    ///< in the order chosen
    double total_cost_usd = 0;
    int candidates = 0;  ///< configurations considered
};

/// Plan calibration runs for `target` (its instance, framework, precision, model and batch) on
/// clusters of up to options.max_nodes nodes. Throws InputError when the target does not resolve.
CalibrationPlan plan_calibration(const CostModel& model, const Scenario& target, const PlanOptions& options = {});

}  // namespace epochcast
