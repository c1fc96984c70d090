#include "model/fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <optional>
#include <set>

#include <Eigen/Dense>

#include "model/compute_curve.hpp"
#include "model/errors.hpp"
#include "model/fit_problem.hpp"
#include "model/parameters.hpp"
#include "model/text_io.hpp"

namespace epochcast {

// The problem's coordinates, priors and residuals (model/fit_problem.hpp).
using namespace fit_detail;

double fit_prior_sigma(ParameterKind kind) {
    switch (kind) {
        case ParameterKind::curve_time_per_image:
            return kTimePerImageSigma;
        case ParameterKind::curve_fixed:
        case ParameterKind::fixed_overhead:
            return kFixedOverheadSigma;
        case ParameterKind::sync_jitter:
            return kJitterSigma;
        case ParameterKind::allreduce_overlap:
        case ParameterKind::ps_overlap:
            return kOverlapSigma;
        case ParameterKind::fabric_efficiency:
        case ParameterKind::link_efficiency:
        case ParameterKind::nvls_efficiency:
            return kEfficiencySigma;
        case ParameterKind::fabric_cap:
            return kCapSigma;
        case ParameterKind::fabric_latency:
        case ParameterKind::link_latency:
            return kLatencySigma;
        case ParameterKind::cpu_decode_rate:
        case ParameterKind::decode_rate:
            return kDecodeSigma;
    }
    return 1.0;
}

double predicted_ratio(const CostModel& model, const Comparison& comparison) {
    const Prediction scenario = model.predict(comparison.scenario);
    const Prediction baseline = model.predict(comparison.baseline);
    switch (comparison.quantity) {
        case ComparisonQuantity::speedup:
            return scenario.throughput_images_per_s / baseline.throughput_images_per_s;
        case ComparisonQuantity::epoch_time_ratio:
            return scenario.epoch_s / baseline.epoch_s;
    }
    return 0;
}

namespace {

/// Parameters the prior calibration had fitted and these data do not touch keep their variances
/// and covariances (uncorrelated with the ones refitted here): `before`'s rows that `uncertainty`
/// lacks are appended to it.
void carry_untouched_covariance(Uncertainty& uncertainty, const Uncertainty& before_u) {
    std::vector<std::size_t> carried;
    for (std::size_t i = 0; i < before_u.parameters.size(); ++i) {
        if (std::find(uncertainty.parameters.begin(), uncertainty.parameters.end(), before_u.parameters[i]) ==
            uncertainty.parameters.end()) {
            carried.push_back(i);
        }
    }
    if (carried.empty()) return;
    const std::size_t fitted_n = uncertainty.parameters.size();
    const std::size_t n = fitted_n + carried.size();
    std::vector<double> merged(n * n, 0.0);
    for (std::size_t a = 0; a < fitted_n; ++a) {
        for (std::size_t b = 0; b < fitted_n; ++b) merged[a * n + b] = uncertainty.covariance[a * fitted_n + b];
    }
    const std::size_t before_n = before_u.parameters.size();
    for (std::size_t a = 0; a < carried.size(); ++a) {
        for (std::size_t b = 0; b < carried.size(); ++b) {
            merged[(fitted_n + a) * n + fitted_n + b] = before_u.covariance[carried[a] * before_n + carried[b]];
        }
    }
    for (const std::size_t i : carried) uncertainty.parameters.push_back(before_u.parameters[i]);
    uncertainty.covariance = std::move(merged);
}

/// What the fitted calibration was fitted to: every run's, network measurement's and comparison's
/// origin once, and each curve the fit created named after its runs.
void record_provenance(Calibration& c, const Catalog& catalog, const std::vector<Observation>& runs,
                       const std::vector<NetworkObservation>& networks, const std::vector<Comparison>& comparisons) {
    std::set<std::string> origins;
    c.fitted_from.clear();
    for (const Observation& run : runs) {
        if (origins.insert(run.origin).second) c.fitted_from.push_back(run.origin);
    }
    for (const NetworkObservation& n : networks) {
        if (origins.insert(n.origin).second) c.fitted_from.push_back(n.origin);
    }
    for (const Comparison& comparison : comparisons) {
        if (origins.insert(comparison.origin).second) c.fitted_from.push_back(comparison.origin);
    }
    for (ComputeCurve& curve : c.compute) {
        if (curve.source == "fitted by epochcast calibrate") {
            std::string from;
            for (const Observation& run : runs) {
                const Scenario& s = run.scenario;
                const GpuSpec& gpu = catalog.gpu_of(catalog.instance(s.instance));
                const OwnCurve own = own_curve(c.compute, catalog, gpu, s.precision,
                                               software_of(s.framework, s.stack, s.memory_format, s.precision));
                if (own.curve == &curve) from += (from.empty() ? "" : ", ") + run.origin;
            }
            curve.source = "fitted by epochcast calibrate to " + from;
        }
    }
}

}  // namespace

namespace {

/// Levenberg-Marquardt with Marquardt's diagonal scaling from `problem.start()`: the coordinates at
/// the (local) minimum of the squared residuals. Sets `fit.iterations` and `fit.converged`.
Eigen::VectorXd minimise_residuals(const Problem& problem, int max_iterations, CalibrationFit& fit) {
    Eigen::VectorXd u = problem.start();
    Eigen::VectorXd r = problem.residuals(u);
    double cost = r.squaredNorm();
    double lambda = 1e-3;
    for (int iteration = 0; iteration < max_iterations; ++iteration) {
        fit.iterations = iteration + 1;
        const Eigen::MatrixXd j = problem.jacobian(u, r);
        const Eigen::MatrixXd a = j.transpose() * j;
        const Eigen::VectorXd g = j.transpose() * r;
        bool improved = false;
        for (int attempt = 0; attempt < 30 && !improved; ++attempt) {
            Eigen::MatrixXd damped = a;
            damped.diagonal() += lambda * a.diagonal().cwiseMax(1e-12);
            const Eigen::VectorXd step = damped.ldlt().solve(-g);
            const Eigen::VectorXd candidate = u + step;
            const Eigen::VectorXd candidate_r = problem.residuals(candidate);
            const double candidate_cost = candidate_r.squaredNorm();
            if (std::isfinite(candidate_cost) && candidate_cost < cost) {
                const double gain = cost - candidate_cost;
                u = candidate;
                r = candidate_r;
                cost = candidate_cost;
                lambda = std::max(lambda / 3.0, 1e-12);
                improved = true;
                if (gain < 1e-12 * (1.0 + cost) || step.cwiseAbs().maxCoeff() < 1e-9) fit.converged = true;
            } else {
                lambda *= 4.0;
            }
        }
        if (!improved) fit.converged = true;  // no step lowers the cost: a (local) minimum
        if (fit.converged) break;
    }
    return u;
}

/// Covariance of the coordinates at the solution `u`: (J'J)^-1, J holding the data rows and the
/// prior rows. Where the runs scatter more than the assumed run sigma, the data rows count for less
/// (their information is divided by the inflation), never the priors: a parameter the data do not
/// touch keeps its prior's uncertainty, and none comes out wider than its prior. Sets
/// `fit.effective_parameters` and `fit.model_sigma`; `record` receives the residuals at `u`.
Eigen::MatrixXd coordinate_covariance(const Problem& problem, const Eigen::VectorXd& u, const FitOptions& options,
                                      double prior_model_sigma, CalibrationFit& fit, std::vector<FitResidual>& record) {
    const std::size_t n_data = problem.data_rows();
    const Eigen::MatrixXd j = problem.jacobian(u, problem.residuals(u, &record));
    const auto data_rows = static_cast<Eigen::Index>(n_data);
    const Eigen::MatrixXd jd = j.topRows(data_rows);
    const Eigen::MatrixXd jp = j.bottomRows(j.rows() - data_rows);
    const Eigen::MatrixXd identity = Eigen::MatrixXd::Identity(j.cols(), j.cols());
    const Eigen::MatrixXd unscaled_u = (j.transpose() * j).ldlt().solve(identity);
    fit.effective_parameters = (jd * unscaled_u * jd.transpose()).trace();
    double run_squares = 0;
    int run_count = 0;
    for (const FitResidual& residual : record) {
        if (residual.quantity != "throughput_images_per_s") continue;
        run_squares += std::pow(std::log(residual.predicted / residual.measured), 2);
        ++run_count;
    }
    const double dof = static_cast<double>(n_data) - fit.effective_parameters;
    // Too few runs to measure their own scatter: the prior's, where it measured one.
    fit.model_sigma = std::max(options.run_sigma, prior_model_sigma);
    if (run_count > 0 && dof >= 1.0) fit.model_sigma = std::max(options.run_sigma, std::sqrt(run_squares / dof));
    const double inflation = std::pow(fit.model_sigma / options.run_sigma, 2);
    const Eigen::MatrixXd information = jd.transpose() * jd / inflation + jp.transpose() * jp;
    return information.ldlt().solve(identity);
}

/// The calibration parameters' covariance from the coordinates': each parameter is its own
/// coordinate plus, where it has one, the shared level (A C A').
Eigen::MatrixXd parameter_covariance(const std::vector<FitMapping>& mappings, const Eigen::MatrixXd& covariance_u) {
    const auto p = static_cast<Eigen::Index>(mappings.size());
    Eigen::MatrixXd a = Eigen::MatrixXd::Zero(p, covariance_u.cols());
    for (Eigen::Index i = 0; i < p; ++i) {
        const FitMapping& m = mappings[static_cast<std::size_t>(i)];
        a(i, m.own) = 1.0;
        if (m.level >= 0) a(i, m.level) = 1.0;
    }
    const Eigen::MatrixXd c = a * covariance_u * a.transpose();
    return 0.5 * (c + c.transpose());  // exactly symmetric, as a calibration file's covariance must be
}

/// Writes each fitted parameter's covariance row into `fit.calibration`'s uncertainty and its
/// before/after figures into `fit.parameters`; a curve's time per image also carries its own sigma.
void record_parameters(const Problem& problem, const Eigen::MatrixXd& covariance, CalibrationFit& fit) {
    Calibration& c = fit.calibration;
    Uncertainty& uncertainty = c.uncertainty;
    const std::vector<FitMapping>& mappings = problem.mappings();
    const Calibration& before = problem.base_calibration();
    const auto p = static_cast<Eigen::Index>(mappings.size());
    for (Eigen::Index i = 0; i < p; ++i) {
        const FitMapping& m = mappings[static_cast<std::size_t>(i)];
        const std::string name = parameter_name(c, m.id);
        uncertainty.parameters.push_back(name);
        for (Eigen::Index k = 0; k < p; ++k) uncertainty.covariance.push_back(covariance(i, k));
        double prior_sigma = problem.coordinate_info()[static_cast<std::size_t>(m.own)].prior_sigma;
        if (m.level >= 0) {
            prior_sigma =
                std::hypot(prior_sigma, problem.coordinate_info()[static_cast<std::size_t>(m.level)].prior_sigma);
        }
        fit.parameters.push_back({name, parameter_value(before, m.id), prior_sigma, parameter_value(c, m.id),
                                  std::sqrt(std::max(covariance(i, i), 0.0))});
        if (m.id.kind == ParameterKind::curve_time_per_image) {
            c.compute[static_cast<std::size_t>(m.id.index)].relative_sigma = std::sqrt(std::max(covariance(i, i), 0.0));
        }
    }
}

/// The fitted calibration's one-line description: what it was fitted to and from which prior.
std::string fit_description(const CalibrationFit& fit, std::size_t parameter_count, std::size_t run_count,
                            std::size_t network_count, std::size_t comparison_count,
                            const std::string& prior_description) {
    return "Fitted by epochcast calibrate to " + std::to_string(run_count) + " runs and " +
           std::to_string(network_count) + " network measurements" +
           (comparison_count == 0 ? "" : " and " + std::to_string(comparison_count) + " published comparisons") + " (" +
           std::to_string(parameter_count) + " parameters, " + std::to_string(fit.effective_parameters).substr(0, 4) +
           " pinned down by the data), starting from: " + prior_description;
}

}  // namespace

namespace {

/// One fit of `prior` to the data under `options` (fit_calibration without the release of
/// contradicted parameters).
/// One fit of `prior` to the data under `options` (fit_calibration without the release of
/// contradicted parameters).
CalibrationFit fit_once(const CostModel& prior, const std::vector<Observation>& runs,
                        const std::vector<NetworkObservation>& networks, const std::vector<Comparison>& comparisons,
                        const FitOptions& options) {
    for (const NetworkObservation& n : networks) {
        if (!(n.bus_bandwidth_GBps > 0)) throw InputError(n.origin + ": bus bandwidth must be positive");
        prior.catalog().instance(n.instance);
    }
    Problem problem(prior, runs, networks, comparisons, options);
    problem.drop_untouched();

    CalibrationFit fit;
    const Eigen::VectorXd u = minimise_residuals(problem, options.max_iterations, fit);
    std::vector<FitResidual> record;
    const Eigen::MatrixXd covariance_u =
        coordinate_covariance(problem, u, options, prior.calibration().uncertainty.model_sigma, fit, record);
    const Eigen::MatrixXd covariance = parameter_covariance(problem.mappings(), covariance_u);

    fit.calibration = problem.calibration_at(u);
    Calibration& c = fit.calibration;
    c.uncertainty = {};
    c.uncertainty.method =
        "Levenberg-Marquardt on log/logit coordinates with Gaussian priors; covariance (J_d'J_d / inflation + "
        "J_p'J_p)^-1";
    c.uncertainty.model_sigma = fit.model_sigma;
    record_parameters(problem, covariance, fit);
    carry_untouched_covariance(c.uncertainty, prior.calibration().uncertainty);
    c.uncertainty.residuals = record;
    fit.residuals = record;
    record_provenance(c, prior.catalog(), runs, networks, comparisons);
    c.description = fit_description(fit, problem.mappings().size(), runs.size(), networks.size(), comparisons.size(),
                                    prior.calibration().description);
    fit.released = options.released;
    return fit;
}

/// "+124%", "-3.5%": a relative error for a message.
std::string signed_percent(double error) {
    char text[32];
    std::snprintf(text, sizeof text, "%+.*f%%", std::abs(error) < 0.1 ? 1 : 0, 100.0 * error);
    return text;
}

/// A run of `fit` further than kOwnRunTolerance from its measured throughput, with how far.
struct Contradiction {
    const Observation* run = nullptr;
    double error = 0;  ///< predicted / measured - 1 under the fit
};

std::vector<Contradiction> contradicted_runs(const CostModel& prior, const CalibrationFit& fit,
                                             const std::vector<Observation>& runs) {
    const CostModel model(prior, fit.calibration);
    std::vector<Contradiction> off;
    for (const Observation& run : runs) {
        const double error =
            model.predict(model.resolve(run.scenario)).throughput_images_per_s / run.throughput_images_per_s - 1.0;
        if (std::abs(error) > kOwnRunTolerance) off.push_back({&run, error});
    }
    return off;
}

/// The parameters a contradicted run depends on, group by group (0: its compute curve; 2: its
/// framework's overheads and overlaps; 3: its fabric and its node's link; group 1, its loader's
/// rate, fit_calibration raises instead), by name.
std::vector<std::string> parameters_of(const CostModel& model, const Observation& run, int group) {
    const Calibration& c = model.calibration();
    const Scenario& s = run.scenario;
    std::vector<std::string> names;
    if (group == 0) {
        const GpuSpec& gpu = model.catalog().gpu_of(model.catalog().instance(s.instance));
        const ComputeCurve* curve = own_curve(c.compute, model.catalog(), gpu, s.precision,
                                              software_of(s.framework, s.stack, s.memory_format, s.precision))
                                        .curve;
        if (curve) {
            const int index = static_cast<int>(curve - c.compute.data());
            names.push_back(parameter_name(c, {ParameterKind::curve_time_per_image, index}));
            names.push_back(parameter_name(c, {ParameterKind::curve_fixed, index}));
        }
    } else if (group == 2) {
        const int f = static_cast<int>(s.framework);
        for (const ParameterKind kind : {ParameterKind::fixed_overhead, ParameterKind::sync_jitter,
                                         ParameterKind::allreduce_overlap, ParameterKind::ps_overlap}) {
            names.push_back(parameter_name(c, {kind, f}));
        }
    } else {
        const ResolvedScenario r = model.resolve(s);
        names.push_back(parameter_name(c, {ParameterKind::fabric_efficiency, static_cast<int>(r.interconnect)}));
        names.push_back(parameter_name(c, {ParameterKind::fabric_latency, static_cast<int>(r.interconnect)}));
        names.push_back(parameter_name(c, {ParameterKind::link_efficiency, static_cast<int>(r.intra_link)}));
        names.push_back(parameter_name(c, {ParameterKind::link_latency, static_cast<int>(r.intra_link)}));
    }
    return names;
}

}  // namespace

CalibrationFit fit_calibration(const CostModel& prior, const std::vector<Observation>& runs,
                               const std::vector<NetworkObservation>& networks,
                               const std::vector<Comparison>& comparisons, const FitOptions& options) {
    if (runs.empty() && networks.empty()) throw InputError("calibrate: no measured run or network to fit");
    for (const Observation& run : runs) {
        // Every curve is an eager one, which eq. C9 carries to torch.compile; a compiled run would
        // be fitted as eager and move that curve by the compiler's gain.
        if (run.scenario.compiled) {
            throw InputError(run.origin +
                             ": a torch.compile run (\"compiled\": true) is not fitted: the model's "
                             "curves are eager PyTorch's, carried to compiled by eq. C9 (docs/model.md); `epochcast "
                             "validate` predicts it");
        }
    }
    CalibrationFit fit = fit_once(prior, runs, networks, comparisons, options);
    // Only a fitted prior (a posterior, with a covariance) can be contradicted: the data-free
    // prior's weak priors already let the runs move what they touch.
    if (prior.calibration().uncertainty.parameters.empty()) return fit;
    std::vector<Contradiction> off = contradicted_runs(prior, fit, runs);
    if (off.empty()) return fit;
    const Contradiction first = off.front();
    const double first_error_before = first.error;
    FitOptions released = options;
    // The prior the refits start from: the given one, its decode rates raised where the runs show
    // a faster loader (group 1).
    std::optional<CostModel> start;
    const CostModel* from = &prior;
    std::string loader_note;
    for (int group = 0; group < 4 && !off.empty(); ++group) {
        const CostModel fitted(*from, fit.calibration);
        if (group == 1) {
            // Runs faster than the prior's loader allows show a faster loader, not how fast: the
            // rate is raised to half again what the fastest of them needed, where it no longer binds
            // them, and left out of the fit (a run there tells nothing more about it).
            Calibration raised = from->calibration();
            for (const Contradiction& c : off) {
                const ResolvedScenario r = fitted.resolve(c.run->scenario);
                double* rate = raised.decode_rate_field(r.loader, c.run->scenario.framework);
                if (!rate || !(r.decode_images_per_s_per_gpu > 0)) continue;
                const double per_gpu = c.run->throughput_images_per_s / (r.nodes * r.gpus_per_node);
                const double needed = *rate * per_gpu / r.decode_images_per_s_per_gpu;
                if (1.5 * needed > *rate) {
                    *rate = 1.5 * needed;
                    loader_note = "; their loader (" + std::string(to_string(r.loader)) + ") runs faster than the " +
                                  "prior's, its rate raised to " + format_count(*rate) +
                                  (r.loader == Loader::dali ? " images/s per GPU" : " images/s per vCPU");
                }
            }
            start.emplace(*from, raised);
            from = &*start;
        } else {
            for (const Contradiction& c : off) {
                if (group == 0) {
                    // A run on a memory variant of the chip whose curve it contradicts gets a curve
                    // for its own GPU (named like the fitted one, as the refit will name it).
                    const Scenario& s = c.run->scenario;
                    const GpuSpec& gpu = fitted.catalog().gpu_of(fitted.catalog().instance(s.instance));
                    const ComputeCurve* curve =
                        own_curve(fitted.calibration().compute, fitted.catalog(), gpu, s.precision,
                                  software_of(s.framework, s.stack, s.memory_format, s.precision))
                            .curve;
                    const bool asked = std::find(released.own_gpus.begin(), released.own_gpus.end(), gpu.name) !=
                                       released.own_gpus.end();
                    if (asked) continue;
                    if (curve && curve->gpu != gpu.name) {
                        released.own_gpus.push_back(gpu.name);
                        ComputeCurve own = *curve;
                        own.gpu = gpu.name;
                        for (const ParameterKind kind :
                             {ParameterKind::curve_time_per_image, ParameterKind::curve_fixed}) {
                            Calibration named;
                            named.compute = {own};
                            released.released.push_back(parameter_name(named, {kind, 0}));
                        }
                        continue;
                    }
                }
                for (const std::string& name : parameters_of(fitted, *c.run, group)) {
                    if (std::find(released.released.begin(), released.released.end(), name) == released.released.end())
                        released.released.push_back(name);
                }
            }
        }
        fit = fit_once(*from, runs, networks, comparisons, released);
        off = contradicted_runs(*from, fit, runs);
    }
    const Scenario& s = first.run->scenario;
    const std::string gpu = prior.catalog().instance(s.instance).gpu;
    std::string names;
    for (const std::string& name : fit.released) names += (names.empty() ? "" : ", ") + name;
    fit.contradiction = "the runs contradict the prior calibration (" + first.run->origin + ", " + gpu + " / " +
                        std::string(to_string(s.precision)) + " / " +
                        describe(software_of(s.framework, s.stack, s.memory_format, s.precision)) + ": " +
                        signed_percent(first_error_before) + " under its posterior), so they get parameters of " +
                        "their own: " + names + loader_note;
    return fit;
}

std::string calibration_file_text(const CalibrationFit& fit) {
    std::string text = fit.calibration.to_json();
    try {
        (void)Calibration::parse(text, "the fitted calibration");
    } catch (const InputError& error) {
        throw InputError("the runs fit no calibration epochcast can read back (" + std::string(error.what()) +
                         "): check their figures; nothing was written");
    }
    return text;
}

}  // namespace epochcast
