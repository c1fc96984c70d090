// The fit's problem (model/fit.cpp's): the coordinates it moves with their priors, the mapping
// from coordinates to a calibration, and the weighted residuals of runs, all-reduce measurements
// and comparisons (docs/model.md, "Calibration"). Internal to the fit: included by model/fit.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "model/compute_curve.hpp"
#include "model/errors.hpp"
#include "model/fit.hpp"
#include "model/holdout.hpp"
#include "model/parameters.hpp"
#include "model/text_io.hpp"

namespace epochcast::fit_detail {

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
/// Decode rates: the prior calibration's own `input_pipeline.relative_sigma` (0.3 in log, docs/model.md,
/// eq. D1), so that the fit holds them to the width a prediction from that prior shows; this only
/// where a file gives 0 there.
constexpr double kDecodeSigma = 0.3;

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
        // Every step equal (a jitter of 0) says only that the jitter is below the timer's resolution: its
        // logarithm is no residual, so such a run gives none (issue 59: eight equal steps made the fit NaN).
        for (const Observation& run : runs_) {
            std::optional<double> measured;
            if (run.step_compute_s.size() >= kMinJitterSamples) {
                const double jitter = compute_jitter(run.step_compute_s);
                if (jitter > 0) measured = std::min(jitter, kMaxSyncJitter);
            }
            measured_jitter_.push_back(measured);
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
            const std::string campaign_on_gpu = campaign_of(run) + " on " + gpu.name;
            if (existing && (!own_gpu || existing->gpu == gpu.name)) {
                curve_batches_[static_cast<int>(existing - calibration_.compute.data())][campaign_on_gpu].insert(
                    resolved.batch_per_gpu);
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
            curve_batches_[static_cast<int>(calibration_.compute.size())][campaign_on_gpu].insert(
                resolved.batch_per_gpu);
            calibration_.compute.push_back(curve);
        }
        // A curve's runs at one batch leave its fixed time to eq. C1b, during the fit as after it;
        // runs of one campaign on one GPU at a second batch (its prior's recorded one among them)
        // measure it. Batches of two campaigns, or of two memory variants, alone do not: their
        // software versions or their memories differ (DeepLearningExamples' 2020 container at 256
        // beside Lambda's 2022 one at 640 put 31.5 ms of one code's speed-up into the A100's TF32
        // fixed time), so their curve fits its time at one batch, the one most of its runs were
        // measured at (docs/model.md, eq. C1b).
        for (const auto& [index, campaigns] : curve_batches_) {
            ComputeCurve& curve = calibration_.compute[static_cast<std::size_t>(index)];
            const bool prior_curve = static_cast<std::size_t>(index) < prior_.calibration().compute.size();
            // A prior curve without a recorded batch was measured at several already.
            bool several = prior_curve && curve.measured_batch == 0;
            std::map<int, int> runs_at;  // batch -> campaigns and GPUs that measured it
            for (const auto& [campaign, sizes] : campaigns) {
                std::set<int> all = sizes;
                if (curve.measured_batch > 0) all.insert(curve.measured_batch);
                several = several || all.size() > 1;
                for (int b : sizes) ++runs_at[b];
            }
            if (several) {
                curve.measured_batch = 0;
            } else if (curve.measured_batch == 0 || !prior_curve) {
                curve.measured_batch =
                    std::max_element(runs_at.begin(), runs_at.end(), [](const auto& a, const auto& b) {
                        return a.second < b.second;
                    })->first;
            }
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
        if (id.kind == ParameterKind::cpu_decode_rate || id.kind == ParameterKind::decode_rate) {
            if (const double own = prior_.calibration().decode_relative_sigma; own > 0) c.prior_sigma = own;
        }
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
    std::map<int, int> new_curve_levels_;  // curve index -> level coordinate of its time per image
    /// curve index -> "campaign on GPU" (holdout.hpp's campaign_of, the memory variant) -> per-GPU
    /// batches of its runs there
    std::map<int, std::map<std::string, std::set<int>>> curve_batches_;
    int jitter_level_ = -1;
    std::vector<FitCoordinate> coordinates_;
    std::vector<FitMapping> mappings_;
    std::size_t data_rows_ = 0;
};

}  // namespace epochcast::fit_detail
