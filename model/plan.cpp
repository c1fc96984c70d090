#include "model/plan.hpp"

#include <algorithm>
#include <cmath>

#include <Eigen/Dense>

#include "model/errors.hpp"
#include "model/text_io.hpp"
#include "model/uncertainty.hpp"
#include "model/whatif.hpp"

namespace epochcast {
namespace {

/// Warm-up iterations a benchmark run discards before timing (tf_cnn_benchmarks' default is 10).
constexpr int kWarmupIterations = 10;

struct Candidate {
    Scenario scenario;
    Eigen::VectorXd gradient;  ///< d ln(throughput) / d(coordinates), over all covariance rows
    double duration_s = 0;
    double cost_usd = 0;
};

/// The gradient over the calibration's `rows` coordinates and, where `coordinates` has one more,
/// the borrowed curve's own factor (eq. U1's transfer term): a run on the target's GPU, precision
/// and software measures that curve, so it narrows that factor as it narrows a parameter.
Eigen::VectorXd dense_gradient(const CostModel& model, const ResolvedScenario& resolved, Eigen::Index rows,
                               Eigen::Index coordinates) {
    Eigen::VectorXd g = Eigen::VectorXd::Zero(coordinates);
    const auto sparse = model.throughput_gradient(resolved);
    for (std::size_t f = 0; f < kSensitiveFields; ++f) {
        if (resolved.sensitivity[f].parameter >= 0) g[resolved.sensitivity[f].parameter] += sparse[f];
    }
    if (coordinates > rows && resolved.transfer_sigma > 0) g[rows] = throughput_per_log_time_per_image(resolved);
    return g;
}

std::vector<Scenario> candidate_scenarios(const CostModel& model, const Scenario& target, const PlanOptions& options) {
    const InstanceSpec& instance = model.catalog().instance(target.instance);
    // The target's own per-GPU batch (a fixed global batch over its GPUs) and others around it:
    // runs at two batch sizes are what separate the fixed per-iteration cost from the per-image
    // one (eq. C1), which matters most when the target's batch is small.
    const int target_batch = per_gpu_batch(target, instance.gpus);
    std::vector<int> batches;
    for (const int b : {target_batch, target_batch / 2, 2 * target_batch, 8 * target_batch}) {
        if (b >= 1 && std::find(batches.begin(), batches.end(), b) == batches.end()) batches.push_back(b);
    }
    std::vector<Scenario> out;
    for (const int nodes : powers_of_two_up_to(options.max_nodes)) {
        std::vector<int> gpus{instance.gpus};
        if (nodes == 1) {
            gpus = {1};
            if (instance.gpus >= 4) gpus.push_back(instance.gpus / 2);
            if (instance.gpus > 1) gpus.push_back(instance.gpus);
        }
        for (const int k : gpus) {
            for (const int batch : batches) {
                Scenario s = target;
                s.nodes = nodes;
                s.gpus_per_node = k;
                s.batch_per_gpu = batch;
                s.global_batch = 0;  // a calibration run's batch is its own
                if (s.strategy == Strategy::ps && !s.ps_colocated) {
                    const long long servers =
                        static_cast<long long>(target.ps_nodes) * nodes / std::max(1, target.nodes);
                    s.ps_nodes = std::max(1, clamped_count(static_cast<double>(servers)));
                }
                out.push_back(s);
            }
        }
    }
    return out;
}

}  // namespace

CalibrationPlan plan_calibration(const CostModel& model, const Scenario& target, const PlanOptions& options) {
    if (options.max_nodes < 1) throw InputError("--max-nodes must be at least 1");
    check_max_nodes(options.max_nodes);
    if (options.max_runs < 1) throw InputError("--max-runs must be at least 1");
    if (options.benchmark_iterations < 1) throw InputError("--iterations must be at least 1");
    if (options.benchmark_iterations > kMaxBenchmarkIterations) {
        throw InputError("--iterations must be at most " + format_count(kMaxBenchmarkIterations) + " (got " +
                         format_count(options.benchmark_iterations) +
                         "): a calibration run is a short benchmark, a few hundred iterations");
    }

    const auto rows = static_cast<Eigen::Index>(model.parameters().size() + 1);
    const Eigen::Map<const Eigen::MatrixXd> covariance(model.covariance().data(), rows, rows);
    const ResolvedScenario resolved_target = model.resolve(target);
    // Information before any run: the inverse of what the calibration knows now, and where the
    // target's curve is borrowed (eqs. C4-C6), its own factor's prior, so that the variance before
    // any run is predict's (eq. U1) and a run that measures the curve narrows it.
    const double transfer_sigma = resolved_target.transfer_sigma;
    const Eigen::Index coordinates = rows + (transfer_sigma > 0 ? 1 : 0);
    Eigen::MatrixXd information = Eigen::MatrixXd::Zero(coordinates, coordinates);
    information.topLeftCorner(rows, rows) = covariance.ldlt().solve(Eigen::MatrixXd::Identity(rows, rows));
    if (coordinates > rows) information(rows, rows) = 1.0 / (transfer_sigma * transfer_sigma);
    // torch.compile's own uncertainty (eq. C9) stays: calibration runs are fitted as eager ones.
    const double model_variance =
        std::pow(model.calibration().uncertainty.model_sigma, 2) + compiled_variance(resolved_target);

    const Eigen::VectorXd target_gradient = dense_gradient(model, resolved_target, rows, coordinates);
    auto target_variance = [&](const Eigen::MatrixXd& info) {
        return target_gradient.dot(info.ldlt().solve(target_gradient)) + model_variance;
    };

    std::vector<Candidate> candidates;
    for (const Scenario& s : candidate_scenarios(model, target, options)) {
        ResolvedScenario r;
        Prediction p;
        try {
            r = model.resolve(s);
            p = model.checked_predict(r);
        } catch (const InputError&) {
            continue;  // e.g. half the batch of a configuration that does not fit
        }
        Candidate c;
        c.scenario = s;
        c.gradient = dense_gradient(model, r, rows, coordinates);
        c.duration_s =
            p.startup_s + (kWarmupIterations + static_cast<double>(options.benchmark_iterations)) * p.iteration_s;
        c.cost_usd = c.duration_s / 3600.0 * p.cluster_usd_per_hour;
        candidates.push_back(c);
    }

    CalibrationPlan plan;
    plan.target = target;
    plan.candidates = static_cast<int>(candidates.size());
    double variance = target_variance(information);
    plan.target_sigma_before = std::sqrt(variance);
    const double weight = 1.0 / (options.run_sigma * options.run_sigma);
    std::vector<bool> used(candidates.size(), false);
    for (int step = 0; step < options.max_runs; ++step) {
        int best = -1;
        double best_score = 0, best_variance = variance;
        for (std::size_t i = 0; i < candidates.size(); ++i) {
            if (used[i]) continue;
            const Eigen::MatrixXd with =
                information + weight * candidates[i].gradient * candidates[i].gradient.transpose();
            const double v = target_variance(with);
            const double score = (variance - v) / std::max(candidates[i].cost_usd, 1e-6);
            if (variance - v > options.stop_fraction * variance && score > best_score) {
                best = static_cast<int>(i);
                best_score = score;
                best_variance = v;
            }
        }
        if (best < 0) break;
        const Candidate& chosen = candidates[static_cast<std::size_t>(best)];
        used[static_cast<std::size_t>(best)] = true;
        information += weight * chosen.gradient * chosen.gradient.transpose();
        variance = best_variance;
        plan.runs.push_back({chosen.scenario, chosen.duration_s, chosen.cost_usd, std::sqrt(variance)});
        plan.total_cost_usd += chosen.cost_usd;
    }
    return plan;
}

}  // namespace epochcast
