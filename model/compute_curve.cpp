#include "model/compute_curve.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace epochcast {

ComputeCurveChoice ComputeCurves::choose(const GpuSpec& gpu, const Scenario& scenario, const Workload& work,
                                         const ParameterCovariance& covariance) const {
    if (scenario.compiled) {
        // torch.compile carries the eager curve (eq. C9); the eager one is what is chosen and
        // remembered, and what the fallbacks' own look-ups (the other layout's) ask for.
        Scenario eager = scenario;
        eager.compiled = false;
        ComputeCurveChoice choice = choose(gpu, eager, work, covariance);
        compile(choice);
        return choice;
    }
    const auto key =
        std::make_tuple(&gpu, &work, scenario.precision, scenario.framework, scenario.stack, scenario.memory_format);
    {
        std::lock_guard<std::mutex> lock(remembered_->mutex);
        if (const auto found = remembered_->choices.find(key); found != remembered_->choices.end())
            return found->second;
    }
    const ComputeCurveChoice choice = fallbacks(gpu, scenario, work, covariance);
    std::lock_guard<std::mutex> lock(remembered_->mutex);
    remembered_->choices.emplace(key, choice);
    return choice;
}

namespace {

/// Eq. C9's pair: phi, the fixed time's share of the eager step at the pair's batch (eq. C1 through
/// the two eager batches), and the compiled step's share of the eager one there.
struct CompiledPair {
    double fixed_share = 0;
    double step_share = 1;
};

CompiledPair compiled_pair() {
    const double b = kCompiledPairBatch;
    const double eager_s = b / kCompiledPairEagerImagesPerS;
    const double large_s = kCompiledPairLargeBatch / kCompiledPairEagerLargeBatchImagesPerS;
    const double time_per_image_s = (large_s - eager_s) / (kCompiledPairLargeBatch - b);
    return {(eager_s - b * time_per_image_s) / eager_s, kCompiledPairEagerImagesPerS / kCompiledPairImagesPerS};
}

}  // namespace

CompiledExecution compiled_execution_at(double k) {
    // k phi + f (1 - phi) = step_share; d ln f / d ln ratio = -step_share / (f (1 - phi)).
    const CompiledPair pair = compiled_pair();
    CompiledExecution c;
    c.fixed_factor = k;
    c.time_per_image_factor = (pair.step_share - k * pair.fixed_share) / (1.0 - pair.fixed_share);
    c.ratio = {0.0, -kCompiledRatioSigma * pair.step_share / (c.time_per_image_factor * (1.0 - pair.fixed_share))};
    return c;
}

CompiledExecution compiled_execution() {
    // k anywhere in [0, 1]: at its middle, with a uniform law's sigma; d f / d k = -phi / (1 - phi).
    constexpr double kSplit = 0.5;
    const double split_sigma = 1.0 / std::sqrt(12.0);
    const CompiledPair pair = compiled_pair();
    CompiledExecution c = compiled_execution_at(kSplit);
    c.split = {split_sigma / kSplit,
               -split_sigma * pair.fixed_share / (1.0 - pair.fixed_share) / c.time_per_image_factor};
    return c;
}

std::string compiled_note() {
    char ratio[16];
    std::snprintf(ratio, sizeof ratio, "%.2f", kCompiledPairImagesPerS / kCompiledPairEagerImagesPerS);
    return "torch.compile is carried from the eager curve by one measured pair (PyTorch 2.11 on one H200, AMP, "
           "batch " +
           std::to_string(kCompiledPairBatch) + ": " + ratio +
           " times eager; docs/model.md, eq. C9); how its gain splits between the fixed and the per-image time is "
           "not known, so the band is wider at small batches, where the fixed time is most of a step.";
}

void ComputeCurves::compile(ComputeCurveChoice& c) {
    static const CompiledExecution compiled = compiled_execution();
    c.fixed_s *= compiled.fixed_factor;
    c.time_per_image_s *= compiled.time_per_image_factor;
    c.compiled = true;
    c.compiled_split = compiled.split;
    c.compiled_ratio = compiled.ratio;
}

ComputeCurveChoice ComputeCurves::fallbacks(const GpuSpec& gpu, const Scenario& scenario, const Workload& work,
                                            const ParameterCovariance& covariance) const {
    // Eq. C0, the fallbacks in order:
    //  1. measured          this chip, software and precision (another memory variant: eq. C7)
    //  2. precision family  this chip and software, another precision of equal tensor peak (3%)
    //  2b. other layout     this chip and software in the other layout where that one was measured
    //                       here, by eq. C8's ratio, its fixed time kept (other_layout)
    //  3. other software    this chip, another framework, stack or layout by eq. C4's ratio (or
    //                       another precision family by eq. C4b's), pooled with 4 where both
    //                       exist (eq. C6)
    //  4. other GPUs        this software's curves on other chips along their rooflines (eq. C5)
    //  5. roofline          eq. C3 alone
    const Software software =
        software_of(scenario.framework, scenario.stack, scenario.memory_format, scenario.precision);
    const std::vector<ComputeCurve>& curves = calibration_->compute;
    if (const OwnCurve own = own_curve(curves, *catalog_, gpu, scenario.precision, software); own.curve) {
        return carried_curve(*own.curve, gpu, scenario.precision, work,
                             own.exact_precision ? CurveOrigin::measured : CurveOrigin::precision_family, covariance);
    }
    if (auto layout = other_layout(gpu, scenario, work, covariance)) return *layout;
    return borrowed(gpu, scenario, work, covariance);
}

std::optional<ComputeCurveChoice> ComputeCurves::other_layout(const GpuSpec& gpu, const Scenario& scenario,
                                                              const Workload& work,
                                                              const ParameterCovariance& covariance) const {
    if (!layout_matters(scenario.stack, scenario.precision)) return std::nullopt;
    const bool nchw = scenario.memory_format == MemoryFormat::nchw;
    Scenario other = scenario;
    other.memory_format = nchw ? MemoryFormat::channels_last : MemoryFormat::nchw;
    const Software other_software = software_of(other.framework, other.stack, other.memory_format, other.precision);
    // Only a layout measured on this chip lends the other its curve: where neither was, each layout
    // borrows its own way (step 3), from the curves of its own layout, which are not always the
    // fewer (Lambda's tables are NCHW on every chip, DeepLearningExamples' channels_last on two).
    if (!own_curve(calibration_->compute, *catalog_, gpu, other.precision, other_software).curve) return std::nullopt;
    ComputeCurveChoice c = choose(gpu, other, work, covariance);
    const TransferRatio layout =
        layout_ratio(calibration_->compute, *catalog_, family_of(scenario.precision), scenario.stack);
    c.time_per_image_s *= nchw ? layout.ratio : 1.0 / layout.ratio;
    c.transfer_sigma = std::hypot(c.transfer_sigma, layout.relative_sigma);
    c.origin = CurveOrigin::other_software;
    // Pooled with this layout's own curves on other chips along their rooflines (eqs. C5, C6), as
    // step 3 pools: the per-image time alone, so the fixed time stays the other layout's.
    const Software software =
        software_of(scenario.framework, scenario.stack, scenario.memory_format, scenario.precision);
    if (const SoftwareLine* line = framework_roofline(software, scenario.precision)) {
        pool_with_line(c, std::log(c.time_per_image_s), c.transfer_sigma, line->line,
                       std::log(line_time_s(*line, gpu, scenario.precision, work)));
    }
    // A curve measured at one batch (eq. C1b) keeps its time there in its own layout; in this
    // layout the time per image moves and the fixed time stays.
    c.one_batch_b0 = 0;
    c.one_batch_b_half = 0;
    return c;
}

void ComputeCurves::pool_with_line(ComputeCurveChoice& c, double own_log, double own_sigma,
                                   const FrameworkRoofline& line, double line_log) {
    const double weight = pooled_weight(own_sigma, line.relative_sigma);
    c.time_per_image.log_field_per_coordinate *= weight;
    c.time_per_image_s = std::exp(weight * own_log + (1.0 - weight) * line_log);
    c.transfer_sigma = pooled_sigma(own_sigma, line.relative_sigma);
    c.origin = CurveOrigin::pooled;
}

ComputeCurveChoice ComputeCurves::borrowed(const GpuSpec& gpu, const Scenario& scenario, const Workload& work,
                                           const ParameterCovariance& covariance) const {
    const Software software =
        software_of(scenario.framework, scenario.stack, scenario.memory_format, scenario.precision);
    const std::vector<ComputeCurve>& curves = calibration_->compute;
    ComputeCurveChoice c;
    const double roofline = roofline_s(gpu, scenario.precision, scenario.stack, work);
    const ComputeCurve* sibling = sibling_curve(curves, *catalog_, gpu, scenario.precision, software);
    const SoftwareLine* software_line = framework_roofline(software, scenario.precision);
    const FrameworkRoofline* line = software_line ? &software_line->line : nullptr;  // eq. C5
    const double line_log = line ? std::log(line_time_s(*software_line, gpu, scenario.precision, work)) : 0.0;
    if (sibling) {
        // Eq. C4 (C4b across families) on the sibling as carried to this GPU (eq. C7), pooled with
        // eq. C5 (eq. C6).
        const ComputeCurveChoice carried =
            carried_curve(*sibling, gpu, scenario.precision, work, CurveOrigin::other_software, covariance);
        const TransferRatio transfer = sibling_transfer(*sibling, software, gpu, scenario.precision, work);
        const double sibling_log = std::log(carried.time_per_image_s * transfer.ratio);
        const double sibling_sigma = std::hypot(transfer.relative_sigma, carried.transfer_sigma);
        c = carried;
        c.time_per_image_s = std::exp(sibling_log);
        c.transfer_sigma = sibling_sigma;
        c.origin = CurveOrigin::other_software;
        if (line) pool_with_line(c, sibling_log, sibling_sigma, *line, line_log);
        // The fixed time is the sibling's where it is this framework and stack at another precision
        // family (the same launches: PyTorch's fp32 on an A100 keeps its TF32 curve's), else this
        // software's (eq. C1b: its level, else every framework's, as steps 4 and 5 take it). A
        // framework's launches are its own: TensorFlow on an H100 took PyTorch's NCHW fixed time
        // there and on an A100 MXNet's, and came out slower on the H100.
        // Eq. C1c: a sibling measured at one batch b0 carries its time there, which is what was
        // measured, and this software's half-saturation batch splits it.
        const bool same_launches = sibling->framework == scenario.framework && sibling->stack == scenario.stack;
        if (const double b_half = half_saturation_batch(scenario.framework, scenario.stack, gpu);
            b_half > 0 && !same_launches) {
            if (carried.one_batch_b0 > 0) {
                c.time_per_image_s *=
                    (carried.one_batch_b_half + carried.one_batch_b0) / (b_half + carried.one_batch_b0);
            }
            c.fixed_s = b_half * c.time_per_image_s;
        }
        return c;
    }
    if (line) {
        c.time_per_image_s = std::exp(line_log);
        // The roofline row stands for what no curve of this GPU measured, scaled to the line's
        // sigma, so that a planned run (model/plan.cpp) can narrow it.
        const double roofline_sigma = calibration_->roofline.relative_sigma;
        if (roofline_sigma > 0) {
            c.time_per_image = {covariance.roofline_row(), line->relative_sigma / roofline_sigma};
        } else {
            c.transfer_sigma = line->relative_sigma;
        }
        c.origin = CurveOrigin::other_gpus;
    } else {
        c.time_per_image_s = roofline;
        c.time_per_image = {covariance.roofline_row(), 1.0};
        c.origin = CurveOrigin::roofline;
    }
    // Without a curve of this chip, the fixed time is the batch that half fills this GPU at the
    // per-image time (eq. C1b), else the framework's overhead; its uncertainty is the overhead's.
    const FrameworkProfile& profile = calibration_->framework(scenario.framework);
    const double b_half = half_saturation_batch(scenario.framework, scenario.stack, gpu);
    c.fixed_s = b_half > 0 ? b_half * c.time_per_image_s : profile.fixed_overhead_s;
    c.fixed = covariance.sensitivity(ParameterKind::fixed_overhead, static_cast<int>(scenario.framework),
                                     profile.fixed_overhead_s);
    return c;
}

ComputeCurveChoice ComputeCurves::carried_curve(const ComputeCurve& curve, const GpuSpec& gpu, Precision precision,
                                                const Workload& work, CurveOrigin origin,
                                                const ParameterCovariance& covariance) const {
    ComputeCurveChoice c;
    c.origin = origin;
    const int index = static_cast<int>(&curve - calibration_->compute.data());
    c.time_per_image = covariance.sensitivity(ParameterKind::curve_time_per_image, index, curve.time_per_image_s);
    c.fixed = covariance.sensitivity(ParameterKind::curve_fixed, index, curve.fixed_s);
    c.fixed_s = curve.fixed_s;
    double curve_time_per_image_s = curve.time_per_image_s;
    const GpuSpec* measured_gpu = curve_gpu(*catalog_, curve);
    const double b_half = measured_gpu ? half_saturation_batch(curve.framework, curve.stack, *measured_gpu) : 0.0;
    if (curve.measured_batch > 0 && b_half > 0) {
        // Eq. C1b: runs at one batch b0 fix only fixed + b0 t_img. The fixed time is the batch that
        // half fills the GPU (its software's images per SM times the SMs) at the per-image time, and
        // the curve keeps its time at b0: t_img = time(b0) / (b_half + b0), fixed = b_half t_img.
        const double b0 = curve.measured_batch;
        const double at_b0 = curve.fixed_s + b0 * curve.time_per_image_s;
        curve_time_per_image_s = at_b0 / (b_half + b0);
        c.fixed_s = b_half * curve_time_per_image_s;
        // Both fields now follow the curve's time at b0, of which the per-image part is the share
        // w that its time per image moves (its fixed time, which runs at one batch cannot tell
        // apart, is left out of the band: its part 1 - w is small at the batches measured).
        const double w = b0 * curve.time_per_image_s / at_b0;
        c.time_per_image.log_field_per_coordinate *= w;
        c.fixed = c.time_per_image;
        c.one_batch_b0 = b0;
        c.one_batch_b_half = b_half;
    }
    // Eq. C1 per image of another depth or image size scales by training FLOPs; eq. C7 carries the
    // curve to another memory variant of its chip (or another precision of its family) by the
    // ratio of the two rooflines, which differ in the memory term alone.
    const Workload& measured = workload(curve.model, curve.image_size, 1000);
    const double flops_ratio = work.training_flops_per_image / measured.training_flops_per_image;
    // Across precision families (eq. C4's sibling at TF32 for amp) the ratio measured elsewhere
    // carries the precision; the roofline carries the memory variant only, at the curve's precision.
    const Precision at = family_of(precision) == family_of(curve.precision) ? precision : curve.precision;
    const double variant_ratio = measured_gpu ? roofline_s(gpu, at, curve.stack, measured) /
                                                    roofline_s(*measured_gpu, curve.precision, curve.stack, measured)
                                              : 1.0;
    c.time_per_image_s = curve_time_per_image_s * flops_ratio * variant_ratio;
    // A curve carried to another depth or image size is half as uncertain as a roofline prior.
    const double depth_sigma = flops_ratio != 1.0 ? 0.5 * calibration_->roofline.relative_sigma : 0.0;
    const double variant_sigma = kMemoryVariantSigmaPerLogRatio * std::abs(std::log(variant_ratio));
    const double family_sigma = origin == CurveOrigin::precision_family ? kPrecisionFamilySigma : 0.0;
    c.transfer_sigma =
        std::sqrt(depth_sigma * depth_sigma + variant_sigma * variant_sigma + family_sigma * family_sigma);
    return c;
}

TransferRatio ComputeCurves::sibling_transfer(const ComputeCurve& sibling, const Software& software, const GpuSpec& gpu,
                                              Precision precision, const Workload& work) const {
    const std::vector<ComputeCurve>& curves = calibration_->compute;
    const Software from = software_of(sibling);
    const SoftwareLine* from_line = framework_roofline(from, sibling.precision);
    const SoftwareLine* to_line = framework_roofline(software, precision);
    if (family_of(sibling.precision) == family_of(precision) || !from_line || !to_line) {
        return transfer_ratio(curves, *catalog_, sibling, software, precision);  // eq. C4
    }
    // Eq. C4b: t(g, to) = t(g, from) L_to(g) / L_from(g). What sets a chip apart from its line (a
    // board held below its clocks by its power limit, a memory system the roofline misjudges) it
    // shows in either family; the ratio of the lines carries what differs between the families
    // (this chip's tensor peaks and bandwidth as each family's software uses them). Its sigma is
    // the root mean square, over the chips measured in both, of their ratio's log around their
    // lines' ratio, never below kLineTransferMinSigma; with fewer than two such chips, eq. C4's
    // family floor.
    std::vector<double> logs;
    std::vector<std::string> chips;
    for (const ComputeCurve& a : curves) {
        const GpuSpec* a_gpu = curve_gpu(*catalog_, a);
        if (!a_gpu || software_of(a) != from || family_of(a.precision) != family_of(sibling.precision)) continue;
        const std::string chip = a_gpu->chip_or_name();
        if (chip == gpu.chip_or_name() || std::find(chips.begin(), chips.end(), chip) != chips.end()) continue;
        const ComputeCurve* b = chip_partner(curves, *catalog_, a, software, family_of(precision));
        const GpuSpec* b_gpu = b ? curve_gpu(*catalog_, *b) : nullptr;
        if (!b_gpu) continue;
        const Workload& measured = workload(a.model, a.image_size, 1000);
        const double lines = line_time_s(*to_line, *b_gpu, b->precision, measured) /
                             line_time_s(*from_line, *a_gpu, a.precision, measured);
        logs.push_back(std::log(b->time_per_image_s / a.time_per_image_s / lines));
        chips.push_back(chip);
    }
    TransferRatio t;
    t.chips = static_cast<int>(logs.size());
    t.ratio = line_time_s(*to_line, gpu, precision, work) / line_time_s(*from_line, gpu, sibling.precision, work);
    t.relative_sigma = kFamilyTransferSigma;
    if (logs.size() >= 2) {
        double squares = 0;
        for (const double l : logs) squares += l * l;
        t.relative_sigma = std::max(kLineTransferMinSigma, std::sqrt(squares / static_cast<double>(logs.size())));
    }
    return t;
}

const ComputeCurves::SoftwareLine* ComputeCurves::framework_roofline(const Software& software,
                                                                     Precision precision) const {
    for (const SoftwareLine& entry : framework_rooflines_) {
        if (entry.software == software && entry.family == family_of(precision)) return &entry;
    }
    return nullptr;
}

double ComputeCurves::line_time_s(const SoftwareLine& software_line, const GpuSpec& gpu, Precision precision,
                                  const Workload& work) const {
    // The line is fitted per image of the reference model; its floor scales with the work (eq. C5).
    const FrameworkRoofline& line = software_line.line;
    const double from_reference = work.training_flops_per_image / reference_training_flops_;
    return line.factor * roofline_s(gpu, precision, software_line.software.stack, work) + line.floor_s * from_reference;
}

double ComputeCurves::half_saturation_batch(Framework framework, SoftwareStack stack, const GpuSpec& gpu) const {
    const auto found = saturation_levels_.find({framework, stack});
    const double per_sm = found != saturation_levels_.end() ? found->second : saturation_level_all_;
    return per_sm > 0 && gpu.sms > 0 ? per_sm * gpu.sms : 0.0;
}

double ComputeCurves::roofline_s(const GpuSpec& gpu, Precision precision, SoftwareStack stack,
                                 const Workload& work) const {
    const RooflinePrior& prior = calibration_->roofline;
    const double peak = peak_flops_per_s(gpu, precision);
    // Devices whose reduced-precision peak is not well above fp32 (K80 and M60 have no tensor
    // cores) run it at the fp32 efficiency; dedicated units (tensor cores, a CPU's AMX or
    // AVX-512 BF16) at the tensor efficiency.
    const bool tensor = precision != Precision::fp32 && peak > 1.5 * gpu.fp32_tflops * 1e12;  // tf32 too
    const double efficiency = tensor ? prior.tensor_compute_efficiency : prior.fp32_compute_efficiency;
    const double traffic_bytes = work.memory_traffic_elements_per_image * activation_element_bytes(precision);
    return roofline_time_per_image_s(work.training_flops_per_image, peak, efficiency, traffic_bytes,
                                     gpu.memory_GBps * 1e9, roofline_memory_efficiency(prior, stack, precision));
}

ComputeCurves::ComputeCurves(std::shared_ptr<const Catalog> catalog, std::shared_ptr<const Calibration> calibration,
                             std::shared_ptr<Workloads> workloads)
    : catalog_(std::move(catalog)),
      calibration_(std::move(calibration)),
      workloads_(std::move(workloads)),
      remembered_(std::make_shared<Remembered>()) {
    reference_training_flops_ = workload(kReferenceModel, kReferenceImageSize, 1000).training_flops_per_image;
    std::vector<std::pair<SoftwareLine, std::vector<RooflinePoint>>> points;
    for (const ComputeCurve& curve : calibration_->compute) {
        const GpuSpec* gpu = catalog_->find_gpu(curve.gpu);
        if (!gpu || gpu->kind == DeviceKind::cpu || !(peak_flops_per_s(*gpu, curve.precision) > 0)) continue;
        const Workload& work = workload(curve.model, curve.image_size, 1000);
        // Per reference-model image: the floor is a per-image cost that scales with the work.
        const double to_reference = reference_training_flops_ / work.training_flops_per_image;
        const RooflinePoint point{roofline_s(*gpu, curve.precision, curve.stack, work) * to_reference,
                                  curve.time_per_image_s * to_reference};
        const Software software = software_of(curve);
        const PrecisionFamily family = family_of(curve.precision);
        auto found = std::find_if(points.begin(), points.end(), [&](const auto& entry) {
            return entry.first.software == software && entry.first.family == family;
        });
        if (found == points.end()) {
            points.push_back({SoftwareLine{software, family, {}}, {}});
            found = points.end() - 1;
        }
        found->second.push_back(point);
    }
    for (auto& [key, list] : points) {
        key.line = fit_framework_roofline(list, calibration_->roofline.relative_sigma);
        framework_rooflines_.push_back(key);
    }
    // Eq. C1b: the half-saturation batch per SM, fixed / (SMs x time per image), that runs at several
    // batches measured, per framework and stack and over all.
    std::map<std::pair<Framework, SoftwareStack>, std::pair<double, int>> sums;
    std::pair<double, int> all{0.0, 0};
    for (const ComputeCurve& curve : calibration_->compute) {
        const GpuSpec* gpu = catalog_->find_gpu(curve.gpu);
        if (curve.measured_batch > 0 || !gpu || gpu->sms <= 0 || !(curve.fixed_s > 0)) continue;
        const double per_sm = std::log(curve.fixed_s / (gpu->sms * curve.time_per_image_s));
        auto& [sum, count] = sums[{curve.framework, curve.stack}];
        sum += per_sm;
        ++count;
        all.first += per_sm;
        ++all.second;
    }
    for (const auto& [key, entry] : sums) saturation_levels_[key] = std::exp(entry.first / entry.second);
    saturation_level_all_ = all.second > 0 ? std::exp(all.first / all.second) : 0.0;
}

void set_compute_curve(ResolvedScenario& r, const ComputeCurveChoice& curve) {
    r.time_per_image_s = curve.time_per_image_s;
    r.fixed_s = curve.fixed_s;
    r.transfer_sigma = curve.transfer_sigma;
    r.curve_origin = curve.origin;
    r.compiled = curve.compiled;
    r.compiled_split = curve.compiled_split;
    r.compiled_ratio = curve.compiled_ratio;
}

}  // namespace epochcast
