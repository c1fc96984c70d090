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
#include "model/parameters.hpp"
#include "model/text_io.hpp"

namespace epochcast {
namespace {

// Prior widths of the fit, in the parameters' coordinates (log, or logit for fractions). They are
// deliberately weak, so that a few runs move what they touch; docs/model.md, "Calibration",
// discusses each.
/// A curve's marginal time per image: a quarter either way (the roofline prior's own spread).
constexpr double kTimePerImageSigma = 0.25;
/// The same GPU and precision under another framework (model/calibration.hpp).
constexpr double kSiblingFrameworkSigma = kSoftwareTransferSigma;
/// Fixed per-iteration overheads: known to a factor of e.
constexpr double kFixedOverheadSigma = 1.0;
/// Straggler jitter: its level across frameworks known to a factor of e, one framework's within a
/// factor of 1.6 of the level (seed 000/001: MXNet's 0.13 and TensorFlow's 0.077).
constexpr double kJitterSigma = 1.0;
constexpr double kJitterFrameworkSigma = 0.5;
/// Overlap fractions: logit sigma 1.5 lets a prior of 0.1 reach 0.5 at 1.5 sigma.
constexpr double kOverlapSigma = 1.5;
/// Network efficiencies (logit) and the socket ceiling and latencies (log).
constexpr double kEfficiencySigma = 1.0;
constexpr double kCapSigma = 0.5;
constexpr double kLatencySigma = 1.0;
/// Decode rate per vCPU: seed 002 gives a lower bound only.
constexpr double kDecodeSigma = 0.5;

/// The frameworks whose jitters share the level (the GPU frameworks of the seeds).
constexpr Framework kJitterLevelFrameworks[] = {Framework::mxnet, Framework::tensorflow, Framework::pytorch};

/// Forward-difference step of the Jacobian, in coordinate units.
constexpr double kJacobianStep = 1e-6;
/// A parameter is fitted when some residual moves by more than this per unit of its coordinate.
constexpr double kSensitivityFloor = 1e-8;
/// How far (in log) the decode rates are raised to see what a data-bound run's compute depends on.
constexpr double kDecodeBoundLift = 5.0;

/// One coordinate of the fit: a calibration parameter, or the shared level of the curves of one
/// GPU and precision that the fit creates (their time per image is level x own factor).
struct FitCoordinate {
    std::string name;
    double prior_mean = 0;
    double prior_sigma = 0;
};

/// A calibration parameter and where its value comes from: coordinate `own` (plus `level`, the
/// shared curve level, when >= 0).
struct FitMapping {
    ParameterId id;
    Coordinate coordinate = Coordinate::log;
    int own = -1;
    int level = -1;
};

class Problem {
public:
    Problem(const CostModel& prior, const std::vector<Observation>& runs,
            const std::vector<NetworkObservation>& networks, const std::vector<Comparison>& comparisons,
            const FitOptions& options)
        : prior_(prior),
          runs_(runs),
          networks_(networks),
          comparisons_(comparisons),
          options_(options),
          calibration_(prior.calibration()) {
        // The residuals need the values only: each evaluation's CostModel would otherwise rebuild
        // the prior's covariance by name. The fitted calibration gets its own below.
        calibration_.uncertainty = {};
        // Eq. S2 once per run here, not in every evaluation of the residuals.
        measured_jitter_.reserve(runs_.size());
        // A jitter past what a calibration holds (a loaded host that stopped a rank for seconds)
        // counts as the largest it holds: the fit must give a calibration that reads back.
        for (const Observation& run : runs_) {
            measured_jitter_.push_back(
                run.step_compute_s.size() >= kMinJitterSamples
                    ? std::optional<double>(std::min(compute_jitter(run.step_compute_s), kMaxSyncJitter))
                    : std::nullopt);
        }
        add_missing_curves();
        add_jitter_level();
        for (const ParameterId id : all_parameters(calibration_)) add_parameter(id);
    }

    std::size_t coordinates() const { return coordinates_.size(); }
    std::size_t data_rows() const { return data_rows_; }
    const std::vector<FitCoordinate>& coordinate_info() const { return coordinates_; }
    const std::vector<FitMapping>& mappings() const { return mappings_; }

    Eigen::VectorXd start() const {
        Eigen::VectorXd u(static_cast<Eigen::Index>(coordinates_.size()));
        for (std::size_t i = 0; i < coordinates_.size(); ++i)
            u[static_cast<Eigen::Index>(i)] = coordinates_[i].prior_mean;
        return u;
    }

    Calibration calibration_at(const Eigen::VectorXd& u) const {
        Calibration c = calibration_;
        for (const FitMapping& m : mappings_) {
            double x = u[m.own];
            if (m.level >= 0) x += u[m.level];
            double value = from_coordinate(m.coordinate, x);
            // A jitter past what a calibration holds saturates there: a run slower than any
            // jitter explains (a loaded host) must still fit a calibration that reads back.
            if (m.id.kind == ParameterKind::sync_jitter) value = std::min(value, kMaxSyncJitter);
            parameter_value(c, m.id) = value;
        }
        return c;
    }

    /// Data residuals (in sigma units) followed by the prior residuals; fills `record` when given.
    Eigen::VectorXd residuals(const Eigen::VectorXd& u, std::vector<FitResidual>* record = nullptr) const {
        const Calibration c = calibration_at(u);
        const CostModel model(prior_, c);
        std::vector<double> r;
        for (std::size_t i = 0; i < runs_.size(); ++i) {
            const Observation& run = runs_[i];
            const Prediction p = model.predict(model.resolve(run.scenario));
            r.push_back(std::log(p.throughput_images_per_s / run.throughput_images_per_s) / options_.run_sigma);
            if (record)
                record->push_back(
                    {run.origin, "throughput_images_per_s", run.throughput_images_per_s, p.throughput_images_per_s});
            if (const std::optional<double> measured = measured_jitter_[i]) {
                // Eq. S2 measures the very jitter eq. S1 charges, on one worker alone.
                const double jitter = c.framework(run.scenario.framework).sync_jitter;
                r.push_back(std::log(jitter / *measured) / options_.jitter_sigma);
                if (record) record->push_back({run.origin, "compute_jitter", *measured, jitter});
            }
            if (run.node_scaling_efficiency) {
                r.push_back(std::log(p.node_scaling_efficiency / *run.node_scaling_efficiency) /
                            options_.efficiency_sigma);
                if (record)
                    record->push_back({run.origin, "node_scaling_efficiency", *run.node_scaling_efficiency,
                                       p.node_scaling_efficiency});
            }
        }
        for (const NetworkObservation& n : networks_) {
            const double predicted_GBps = predict_allreduce(model.catalog(), n, c.network).bus_bandwidth_GBps;
            r.push_back(std::log(predicted_GBps / n.bus_bandwidth_GBps) / options_.network_sigma);
            if (record) record->push_back({n.origin, "bus_bandwidth_GBps", n.bus_bandwidth_GBps, predicted_GBps});
        }
        for (const Comparison& comparison : comparisons_) {
            const double ratio = predicted_ratio(model, comparison);
            // Inside the published range: no cost; outside: the log distance to its nearer end.
            const double nearest = std::clamp(ratio, comparison.measured_low, comparison.measured_high);
            r.push_back(std::log(ratio / nearest) / options_.comparison_sigma);
            if (record)
                record->push_back({comparison.origin, std::string(to_string(comparison.quantity)), nearest, ratio});
        }
        Eigen::VectorXd out(static_cast<Eigen::Index>(r.size() + coordinates_.size()));
        for (std::size_t i = 0; i < r.size(); ++i) out[static_cast<Eigen::Index>(i)] = r[i];
        for (std::size_t i = 0; i < coordinates_.size(); ++i) {
            const auto k = static_cast<Eigen::Index>(i);
            out[static_cast<Eigen::Index>(r.size()) + k] =
                (u[k] - coordinates_[i].prior_mean) / coordinates_[i].prior_sigma;
        }
        return out;
    }

    Eigen::MatrixXd jacobian(const Eigen::VectorXd& u, const Eigen::VectorXd& at) const {
        Eigen::MatrixXd j(at.size(), u.size());
        for (Eigen::Index k = 0; k < u.size(); ++k) {
            Eigen::VectorXd moved = u;
            moved[k] += kJacobianStep;
            j.col(k) = (residuals(moved) - at) / kJacobianStep;
        }
        return j;
    }

    /// Keep only the coordinates some data residual depends on; the rest stay at their prior.
    void drop_untouched() {
        const Eigen::VectorXd u = start();
        const Eigen::VectorXd r = residuals(u);
        data_rows_ = static_cast<std::size_t>(r.size()) - coordinates_.size();
        std::vector<bool> touched(coordinates_.size(), false);
        // The data touch a parameter where some residual moves with it, at the prior or once the
        // input pipeline's bound is lifted: a run the prior's decode rate holds back (eq. I1's max)
        // still measures its compute, which the fit may reach by raising that rate.
        Eigen::VectorXd unbound = u;
        for (const FitMapping& m : mappings_) {
            if (m.id.kind == ParameterKind::cpu_decode_rate || m.id.kind == ParameterKind::decode_rate)
                unbound[m.own] += kDecodeBoundLift;
        }
        for (const Eigen::VectorXd& at : {u, unbound}) {
            const Eigen::MatrixXd j = jacobian(at, residuals(at));
            for (std::size_t k = 0; k < coordinates_.size(); ++k) {
                const double sensitivity = j.col(static_cast<Eigen::Index>(k))
                                               .head(static_cast<Eigen::Index>(data_rows_))
                                               .cwiseAbs()
                                               .maxCoeff();
                touched[k] = touched[k] || sensitivity > kSensitivityFloor;
            }
        }
        // Runs at one batch size see a curve's fixed time only in fixed + batch x time per image (eq.
        // C1b replaces it in every prediction): its time per image carries that sum alone.
        for (const FitMapping& m : mappings_) {
            if (m.id.kind == ParameterKind::curve_fixed &&
                calibration_.compute[static_cast<std::size_t>(m.id.index)].measured_batch > 0)
                touched[static_cast<std::size_t>(m.own)] = false;
        }
        // A parameter whose shared level the data moved moves with it, its own factor at its prior.
        std::vector<bool> keep = touched;
        for (const FitMapping& m : mappings_) {
            if (m.level >= 0 && touched[static_cast<std::size_t>(m.level)])
                keep[static_cast<std::size_t>(m.own)] = true;
        }
        std::vector<int> keep_index(coordinates_.size(), -1);
        std::vector<FitCoordinate> kept;
        for (std::size_t k = 0; k < coordinates_.size(); ++k) {
            if (!keep[k]) continue;
            keep_index[k] = static_cast<int>(kept.size());
            kept.push_back(coordinates_[k]);
        }
        std::vector<FitMapping> mappings;
        for (FitMapping m : mappings_) {
            const int own = keep_index[static_cast<std::size_t>(m.own)];
            if (own < 0) continue;  // untouched, and so is its level: stays as it was
            m.own = own;
            m.level = m.level >= 0 ? keep_index[static_cast<std::size_t>(m.level)] : -1;
            mappings.push_back(m);
        }
        coordinates_ = std::move(kept);
        mappings_ = std::move(mappings);
    }

    const Calibration& base_calibration() const { return calibration_; }

private:
    void add_missing_curves() {
        std::map<std::string, int> levels;  // "chip/precision/stack" -> level coordinate
        for (const Observation& run : runs_) {
            ResolvedScenario resolved;
            try {
                resolved = prior_.resolve(run.scenario);
            } catch (const InputError& error) {
                throw InputError(run.origin + ": " + error.what());
            }
            const Catalog& catalog = prior_.catalog();
            const GpuSpec& gpu = catalog.gpu_of(catalog.instance(run.scenario.instance));
            const Scenario& s = run.scenario;
            const Software software = software_of(s.framework, s.stack, s.memory_format, s.precision);
            // One curve per chip, precision family and software (eq. C0's steps 1 and 2): a run on
            // another memory variant, or at bf16 where amp was measured, fits the curve there is.
            const ComputeCurve* existing = own_curve(calibration_.compute, catalog, gpu, s.precision, software).curve;
            const bool own_gpu =
                std::find(options_.own_gpus.begin(), options_.own_gpus.end(), gpu.name) != options_.own_gpus.end();
            if (existing && (!own_gpu || existing->gpu == gpu.name)) {
                curve_batches_[static_cast<int>(existing - calibration_.compute.data())].insert(resolved.batch_per_gpu);
                continue;
            }
            ComputeCurve curve;
            curve.gpu = gpu.name;
            curve.precision = s.precision;
            curve.framework = s.framework;
            curve.stack = s.stack;
            curve.memory_format = software.memory_format;
            curve.model = s.model;
            curve.image_size = s.image_size;
            // The prior's fixed time for this very scenario (eq. C1b's half-saturation batch where
            // the chip's software has one, else the framework's overhead): runs at one batch size
            // cannot tell it from the per-image time, and the framework's overhead alone (50 ms
            // for epochcast, a CPU host's SGD step) is 25x an H200's whole step.
            curve.fixed_s = resolved.fixed_s;
            curve.source = "fitted by epochcast calibrate";
            const std::string key =
                gpu.chip_or_name() + "/" + std::string(to_string(s.precision)) + "/" + std::string(to_string(s.stack));
            if (!levels.contains(key)) {
                // Prior of the level: the prior calibration's curves of this chip and precision under
                // other software, carried to this architecture by FLOPs, or else the roofline.
                double sum = 0;
                int count = 0;
                for (const ComputeCurve& other : prior_.calibration().compute) {
                    const GpuSpec* other_gpu = curve_gpu(catalog, other);
                    if (!other_gpu || other_gpu->chip_or_name() != gpu.chip_or_name() ||
                        other.precision != s.precision || other.stack != s.stack) {
                        continue;
                    }
                    const double flops = prior_.workload(s.model, s.image_size, 1000).training_flops_per_image /
                                         prior_.workload(other.model, other.image_size, 1000).training_flops_per_image;
                    sum += std::log(other.time_per_image_s * flops);
                    ++count;
                }
                FitCoordinate level;
                level.name = "compute level " + key;
                if (count > 0) {
                    level.prior_mean = sum / count;
                    level.prior_sigma = kSiblingFrameworkSigma;
                } else {
                    level.prior_mean = std::log(resolved.time_per_image_s);
                    level.prior_sigma = prior_.calibration().roofline.relative_sigma;
                }
                levels[key] = static_cast<int>(coordinates_.size());
                coordinates_.push_back(level);
            }
            curve.time_per_image_s = std::exp(coordinates_[static_cast<std::size_t>(levels[key])].prior_mean);
            new_curve_levels_[static_cast<int>(calibration_.compute.size())] = levels[key];
            curve_batches_[static_cast<int>(calibration_.compute.size())].insert(resolved.batch_per_gpu);
            calibration_.compute.push_back(curve);
        }
        // A curve's runs at one batch leave its fixed time to eq. C1b, during the fit as after it;
        // runs at a second batch (its prior's recorded one among them) measure it.
        for (const auto& [index, sizes] : curve_batches_) {
            ComputeCurve& curve = calibration_.compute[static_cast<std::size_t>(index)];
            std::set<int> all = sizes;
            if (curve.measured_batch > 0) all.insert(curve.measured_batch);
            const bool prior_curve = static_cast<std::size_t>(index) < prior_.calibration().compute.size();
            // A prior curve without a recorded batch was measured at several already.
            curve.measured_batch = all.size() == 1 && (!prior_curve || curve.measured_batch > 0) ? *all.begin() : 0;
        }
    }

    /// The GPU frameworks' straggler jitters share a level: a framework no run measured follows the
    /// ones that were, within kJitterFrameworkSigma. epochcast's own executor (ranks sharing one
    /// host's cores and memory, not GPUs across a network) keeps a jitter of its own.
    void add_jitter_level() {
        double sum = 0;
        for (const Framework f : kJitterLevelFrameworks) {
            sum += to_coordinate(Coordinate::log, calibration_.framework(f).sync_jitter);
        }
        jitter_level_ = static_cast<int>(coordinates_.size());
        coordinates_.push_back({"sync jitter level", sum / std::size(kJitterLevelFrameworks), kJitterSigma});
    }

    bool released(const std::string& name) const {
        return std::find(options_.released.begin(), options_.released.end(), name) != options_.released.end();
    }

    /// The 1-sigma the prior calibration's fitted covariance gives the parameter, or 0 when that
    /// calibration was not fitted to it.
    double fitted_prior_sigma(const std::string& name) const {
        const Uncertainty& u = prior_.calibration().uncertainty;
        const auto found = std::find(u.parameters.begin(), u.parameters.end(), name);
        if (found == u.parameters.end()) return 0.0;
        const auto i = static_cast<std::size_t>(found - u.parameters.begin());
        return std::sqrt(std::max(u.covariance[i * u.parameters.size() + i], 0.0));
    }

    void add_parameter(ParameterId id) {
        FitMapping m;
        m.id = id;
        m.coordinate = coordinate_of(id.kind);
        FitCoordinate c;
        c.name = parameter_name(calibration_, id);
        c.prior_sigma = fit_prior_sigma(id.kind);
        c.prior_mean = to_coordinate(m.coordinate, parameter_value(calibration_, id));
        if (released(c.name)) {
            // The runs contradicted the fitted prior here: the prior's value is where the fit
            // starts, no longer what it is held to (docs/model.md, "A user's own runs").
            c.prior_sigma = kReleasedSigma;
            m.own = static_cast<int>(coordinates_.size());
            coordinates_.push_back(c);
            mappings_.push_back(m);
            return;
        }
        if (const double fitted = fitted_prior_sigma(c.name); fitted > 0) {
            // A prior that was itself fitted (the built-in calibration, fitted to the corpus) is
            // the posterior of its data: it is this fit's prior as it stands, so that what the new
            // runs touch can only narrow and what they do not keeps the corpus's width.
            c.prior_sigma = std::min(c.prior_sigma, fitted);
            m.own = static_cast<int>(coordinates_.size());
            coordinates_.push_back(c);
            mappings_.push_back(m);
            return;
        }
        if (id.kind == ParameterKind::sync_jitter && static_cast<Framework>(id.index) != Framework::epochcast) {
            m.level = jitter_level_;
            c.prior_mean -= coordinates_[static_cast<std::size_t>(jitter_level_)].prior_mean;
            c.prior_sigma = kJitterFrameworkSigma;
        }
        if (id.kind == ParameterKind::curve_time_per_image && new_curve_levels_.contains(id.index)) {
            // A new curve: level x own factor, the factor centred on 1.
            m.level = new_curve_levels_[id.index];
            c.prior_mean = 0;
            c.prior_sigma = kSiblingFrameworkSigma;
        }
        m.own = static_cast<int>(coordinates_.size());
        coordinates_.push_back(c);
        mappings_.push_back(m);
    }

    const CostModel& prior_;
    const std::vector<Observation>& runs_;
    const std::vector<NetworkObservation>& networks_;
    const std::vector<Comparison>& comparisons_;
    FitOptions options_;
    std::vector<std::optional<double>> measured_jitter_;  ///< eq. S2 of each run with enough per-step samples
    Calibration calibration_;
    std::map<int, int> new_curve_levels_;         // curve index -> level coordinate of its time per image
    std::map<int, std::set<int>> curve_batches_;  // curve index -> per-GPU batches of its runs
    int jitter_level_ = -1;
    std::vector<FitCoordinate> coordinates_;
    std::vector<FitMapping> mappings_;
    std::size_t data_rows_ = 0;
};

}  // namespace

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

std::vector<Prediction> leave_one_out_predictions(const CostModel& prior, const std::vector<Observation>& runs,
                                                  const std::vector<NetworkObservation>& networks,
                                                  const FitOptions& options) {
    std::vector<Prediction> predictions;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        std::vector<Observation> others = runs;
        others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
        const CalibrationFit fit = fit_calibration(prior, others, networks, {}, options);
        const CostModel model(prior, fit.calibration);
        predictions.push_back(model.predict(runs[i].scenario));
    }
    return predictions;
}

std::string system_of(const Scenario& s) {
    return s.instance + " " + std::string(to_string(s.framework)) + " " + std::string(to_string(s.precision)) + " " +
           std::string(to_string(s.stack));
}

namespace {

/// The comparisons that involve none of `system`'s configurations.
std::vector<Comparison> comparisons_without(const std::vector<Comparison>& comparisons, const std::string& system) {
    std::vector<Comparison> kept;
    for (const Comparison& c : comparisons) {
        if (system_of(c.scenario) != system && system_of(c.baseline) != system) kept.push_back(c);
    }
    return kept;
}

/// One run of a held-out group and its size: GPUs, then the per-GPU batch.
struct SizedRun {
    std::size_t index = 0;
    std::pair<int, int> size;
};

/// The runs whose group (`group_of`, one per run) is `group`, smallest first (fewest GPUs, then
/// smallest batch, then file order); each run resolved once.
std::vector<SizedRun> runs_of(const CostModel& model, const std::vector<Observation>& runs,
                              const std::vector<std::string>& group_of, const std::string& group) {
    std::vector<SizedRun> mine;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        if (group_of[i] != group) continue;
        const ResolvedScenario r = model.resolve(runs[i].scenario);
        mine.push_back({i, {r.nodes * r.gpus_per_node, r.batch_per_gpu}});
    }
    std::stable_sort(mine.begin(), mine.end(), [](const SizedRun& a, const SizedRun& b) { return a.size < b.size; });
    return mine;
}

}  // namespace

std::string campaign_of(const Observation& run) {
    if (!run.campaign.empty()) return run.campaign;
    return run.origin.substr(0, run.origin.rfind('#'));
}

std::string held_out_group(const Observation& run, HoldOut mode) {
    switch (mode) {
        case HoldOut::run:
            return run.origin;
        case HoldOut::system:
            return system_of(run.scenario);
        case HoldOut::two_runs:
            return system_of(run.scenario) + " (" + campaign_of(run) + ")";
    }
    return run.origin;
}

std::vector<HeldOutPrediction> held_out_predictions(const CostModel& prior, const std::vector<Observation>& runs,
                                                    const std::vector<NetworkObservation>& networks,
                                                    const std::vector<Comparison>& comparisons, HoldOut mode,
                                                    const FitOptions& options) {
    std::vector<HeldOutPrediction> out(runs.size());
    std::vector<std::string> group_of;
    for (const Observation& run : runs) group_of.push_back(held_out_group(run, mode));
    if (mode == HoldOut::run) {
        const std::vector<Prediction> predictions = leave_one_out_predictions(prior, runs, networks, options);
        for (std::size_t i = 0; i < runs.size(); ++i) out[i] = {predictions[i], false, true, group_of[i]};
        return out;
    }
    std::vector<std::string> groups;
    for (const std::string& group : group_of) {
        if (std::find(groups.begin(), groups.end(), group) == groups.end()) groups.push_back(group);
    }
    for (const std::string& group : groups) {
        const std::vector<SizedRun> mine = runs_of(prior, runs, group_of, group);
        if (mode == HoldOut::two_runs && mine.size() < 3) continue;  // nothing left to predict
        std::vector<Observation> others;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            if (group_of[i] != group) others.push_back(runs[i]);
        }
        // A comparison involving the group's instance, framework, precision and stack is held out
        // with it, whatever its campaign.
        const std::string system = system_of(runs[mine[0].index].scenario);
        // With nothing else to fit, the prior alone stands for the rest of the corpus.
        std::optional<CostModel> model;
        if (others.empty() && networks.empty()) {
            model.emplace(prior, prior.calibration());
        } else {
            model.emplace(prior,
                          fit_calibration(prior, others, networks, comparisons_without(comparisons, system), options)
                              .calibration);
        }
        std::vector<std::size_t> calibration_runs;
        if (mode == HoldOut::two_runs) {
            // The smallest run, and the next smallest on more GPUs (a second GPU count tells the
            // fit how the system scales: a user benchmarks one GPU and a node), else the next
            // smallest of another batch, else the next smallest.
            calibration_runs.push_back(mine[0].index);
            auto next_where = [&](auto differs) -> std::optional<std::size_t> {
                for (std::size_t k = 1; k < mine.size(); ++k) {
                    if (differs(mine[k])) return mine[k].index;
                }
                return std::nullopt;
            };
            const std::size_t second = next_where([&](const SizedRun& r) {
                                           return r.size.first != mine[0].size.first;
                                       }).value_or(next_where([&](const SizedRun& r) {
                                                       return r.size != mine[0].size;
                                                   }).value_or(mine[1].index));
            calibration_runs.push_back(second);
            const CalibrationFit own =
                fit_calibration(*model, {runs[calibration_runs[0]], runs[calibration_runs[1]]}, {}, {}, options);
            model.emplace(prior, own.calibration);
        }
        for (const SizedRun& run : mine) {
            const std::size_t i = run.index;
            const bool used = std::find(calibration_runs.begin(), calibration_runs.end(), i) != calibration_runs.end();
            out[i] = {model->predict(runs[i].scenario), used, true, group};
        }
    }
    return out;
}

}  // namespace epochcast
