#include "model/compute_curve.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>

namespace epochcast {
namespace {

/// The chip a curve was measured on: its GPU's chip, or its GPU's name where the catalog has no
/// such GPU (a curve of another catalog).
std::string_view chip_of(const Catalog& catalog, const ComputeCurve& curve) {
    const GpuSpec* gpu = curve_gpu(catalog, curve);
    return gpu ? gpu->chip_or_name() : curve.gpu;
}

/// Whether `curve` was measured on `gpu`'s chip at a precision that holds at `precision`.
bool on_chip_at(const Catalog& catalog, const ComputeCurve& curve, const GpuSpec& gpu, Precision precision) {
    if (chip_of(catalog, curve) != gpu.chip_or_name()) return false;
    return curve.precision == precision || same_family_rate(gpu, curve.precision, precision);
}

}  // namespace

bool layout_matters(SoftwareStack stack, Precision precision) {
    return stack == SoftwareStack::current && precision != Precision::fp32;
}

Software software_of(Framework framework, SoftwareStack stack, MemoryFormat format, Precision precision) {
    return {framework, stack, layout_matters(stack, precision) ? format : MemoryFormat::channels_last};
}

Software software_of(const ComputeCurve& curve) {
    return software_of(curve.framework, curve.stack, curve.memory_format, curve.precision);
}

std::string describe(const Software& software) {
    // Appended piece by piece: GCC 12 reports a false -Wrestrict for a chain of operator+.
    std::string text(to_string(software.framework));
    if (software.stack != SoftwareStack::current) {
        text += ' ';
        text += to_string(software.stack);
    }
    if (software.memory_format != MemoryFormat::channels_last) {
        text += ' ';
        text += to_string(software.memory_format);
    }
    return text;
}

const GpuSpec* curve_gpu(const Catalog& catalog, const ComputeCurve& curve) { return catalog.find_gpu(curve.gpu); }

double peak_flops_per_s(const GpuSpec& gpu, Precision precision) {
    switch (precision) {
        case Precision::fp32:
            return gpu.fp32_tflops * 1e12;
        case Precision::tf32:
            return gpu.tf32_tflops * 1e12;
        case Precision::amp:
            return gpu.fp16_tflops * 1e12;
        case Precision::bf16:
            return gpu.bf16_tflops * 1e12;
    }
    return gpu.fp32_tflops * 1e12;
}

bool same_family_rate(const GpuSpec& gpu, Precision measured, Precision wanted) {
    if (family_of(measured) != family_of(wanted)) return false;
    const double a = peak_flops_per_s(gpu, measured), b = peak_flops_per_s(gpu, wanted);
    return a > 0 && b > 0 && std::abs(a - b) <= 0.01 * std::max(a, b);
}

OwnCurve own_curve(const std::vector<ComputeCurve>& curves, const Catalog& catalog, const GpuSpec& gpu,
                   Precision precision, const Software& software) {
    // This very GPU first, then a memory variant of its chip; the exact precision before its family.
    const ComputeCurve* family = nullptr;
    const ComputeCurve* variant = nullptr;
    for (const ComputeCurve& curve : curves) {
        if (software_of(curve) != software || !on_chip_at(catalog, curve, gpu, precision)) continue;
        if (curve.precision != precision) {
            if (!family) family = &curve;
            continue;
        }
        if (curve.gpu == gpu.name) return {&curve, true};
        if (!variant) variant = &curve;
    }
    if (variant) return {variant, true};
    return {family, family == nullptr};
}

const ComputeCurve* sibling_curve(const std::vector<ComputeCurve>& curves, const Catalog& catalog, const GpuSpec& gpu,
                                  Precision precision, const Software& software) {
    const ComputeCurve* best = nullptr;
    int best_rank = 6;
    for (const ComputeCurve& curve : curves) {
        if (chip_of(catalog, curve) != gpu.chip_or_name()) continue;
        const bool same_family = on_chip_at(catalog, curve, gpu, precision);
        const Software other = software_of(curve);
        if (other == software && same_family) continue;  // the own curve: step 1 or 2
        const bool same_framework = other.framework == software.framework;
        const bool same_stack = other.stack == software.stack;
        const bool same_layout = other.memory_format == software.memory_format;
        int rank = same_framework && same_stack ? 0 : same_stack && same_layout ? 1 : same_framework ? 2 : 3;
        // Another precision family: this software's first, after every other software at this one.
        if (!same_family) rank = other == software ? 4 : 5;
        if (rank < best_rank) {
            best = &curve;
            best_rank = rank;
        }
    }
    return best;
}

const ComputeCurve* chip_partner(const std::vector<ComputeCurve>& curves, const Catalog& catalog, const ComputeCurve& a,
                                 const Software& to, PrecisionFamily to_family) {
    const std::string_view chip = chip_of(catalog, a);
    for (const ComputeCurve& b : curves) {
        if (family_of(b.precision) == to_family && software_of(b) == to && b.model == a.model &&
            b.image_size == a.image_size && chip_of(catalog, b) == chip) {
            return &b;
        }
    }
    return nullptr;
}

namespace {

/// Eq. C4 from the chips' log time-per-image ratios: their geometric mean, and the sample scatter
/// of the logs as the sigma, never below `floor` (which it is with fewer than two chips).
TransferRatio ratio_of_logs(const std::vector<double>& logs, double floor) {
    TransferRatio t;
    t.chips = static_cast<int>(logs.size());
    t.relative_sigma = floor;
    if (logs.empty()) return t;
    double mean = 0;
    for (const double l : logs) mean += l / static_cast<double>(logs.size());
    t.ratio = std::exp(mean);
    if (logs.size() >= 2) {
        double squares = 0;
        for (const double l : logs) squares += (l - mean) * (l - mean);
        t.relative_sigma = std::max(floor, std::sqrt(squares / static_cast<double>(logs.size() - 1)));
    }
    return t;
}

/// Eq. C4 on direct evidence only: chips where both were measured.
TransferRatio direct_ratio(const std::vector<ComputeCurve>& curves, const Catalog& catalog, const ComputeCurve& from,
                           const Software& to, Precision to_precision) {
    const Software from_software = software_of(from);
    const PrecisionFamily to_family = family_of(to_precision);
    std::vector<double> logs;
    std::vector<std::string_view> chips;
    for (const ComputeCurve& a : curves) {
        if (family_of(a.precision) != family_of(from.precision) || software_of(a) != from_software ||
            a.model != from.model || a.image_size != from.image_size) {
            continue;
        }
        const std::string_view chip = chip_of(catalog, a);
        if (std::find(chips.begin(), chips.end(), chip) != chips.end()) continue;  // one ratio per chip
        // Two curves of one chip compare as measured (a memory variant's share is eq. C7's).
        if (const ComputeCurve* b = chip_partner(curves, catalog, a, to, to_family)) {
            logs.push_back(std::log(b->time_per_image_s / a.time_per_image_s));
            chips.push_back(chip);
        }
    }
    // Across precision families the peaks' ratio differs from chip to chip: a wider floor.
    return ratio_of_logs(logs, to_family == family_of(from.precision) ? kSoftwareTransferSigma : kFamilyTransferSigma);
}

/// The ratio of one dimension of the software (framework, stack or layout) changing from `from`'s
/// value to `to`'s, on the chips where two curves of one precision family differ in that
/// dimension alone: the geometric mean of their time-per-image ratios (one per chip).
TransferRatio dimension_ratio(const std::vector<ComputeCurve>& curves, const Catalog& catalog, PrecisionFamily family,
                              const Software& from, const Software& to, int dimension) {
    auto value = [dimension](const Software& s) {
        return dimension == 0   ? static_cast<int>(s.framework)
               : dimension == 1 ? static_cast<int>(s.stack)
                                : static_cast<int>(s.memory_format);
    };
    // A framework's ratio is read at one stack and layout; a stack's within one framework; a layout's
    // within one framework and stack, of any framework (the layout is cuDNN's, the same under each).
    // A pair that differs in a second dimension measures that one too: MXNet's channels_last curve
    // against PyTorch's NCHW one put MXNet's speed-up over PyTorch, 1.4x, into the layout's ratio.
    auto others_equal = [dimension](const Software& a, const Software& b) {
        const bool stack = a.stack == b.stack, framework = a.framework == b.framework;
        const bool layout = a.memory_format == b.memory_format;
        return dimension == 0 ? stack && layout : dimension == 1 ? framework : stack && framework;
    };
    std::vector<double> logs;
    std::vector<std::string_view> chips;
    for (const ComputeCurve& a : curves) {
        const Software sa = software_of(a);
        if (family_of(a.precision) != family || value(sa) != value(from)) continue;
        // The pair's shared dimensions are those of `from` (stack for every dimension but the stack's).
        if (dimension != 1 && sa.stack != from.stack) continue;
        const std::string_view chip = chip_of(catalog, a);
        if (std::find(chips.begin(), chips.end(), chip) != chips.end()) continue;
        for (const ComputeCurve& b : curves) {
            const Software sb = software_of(b);
            if (family_of(b.precision) != family || value(sb) != value(to) || !others_equal(sa, sb) ||
                b.model != a.model || b.image_size != a.image_size || chip_of(catalog, b) != chip) {
                continue;
            }
            logs.push_back(std::log(b.time_per_image_s / a.time_per_image_s));
            chips.push_back(chip);
            break;
        }
    }
    return ratio_of_logs(logs, kSoftwareTransferSigma);
}

}  // namespace

TransferRatio transfer_ratio(const std::vector<ComputeCurve>& curves, const Catalog& catalog, const ComputeCurve& from,
                             const Software& to, Precision to_precision) {
    const TransferRatio direct = direct_ratio(curves, catalog, from, to, to_precision);
    if (direct.chips > 0 || family_of(from.precision) != family_of(to_precision)) return direct;
    // No chip has both: the software changes one dimension at a time (framework, stack, layout),
    // each by the ratio of curves that differ in it alone; the ratios multiply and their log
    // sigmas add in quadrature. A dimension no pair shows counts 1 at the floor sigma.
    const Software from_software = software_of(from);
    TransferRatio composed;
    composed.ratio = 1.0;
    double variance = 0;
    int chips = std::numeric_limits<int>::max();
    for (int dimension = 0; dimension < 3; ++dimension) {
        if (dimension == 0 && from_software.framework == to.framework) continue;
        if (dimension == 1 && from_software.stack == to.stack) continue;
        if (dimension == 2 && from_software.memory_format == to.memory_format) continue;
        const TransferRatio r =
            dimension_ratio(curves, catalog, family_of(from.precision), from_software, to, dimension);
        composed.ratio *= r.ratio;
        variance += r.relative_sigma * r.relative_sigma;
        chips = std::min(chips, r.chips);
    }
    composed.relative_sigma = std::sqrt(variance);
    composed.chips = chips == std::numeric_limits<int>::max() ? 0 : chips;
    return composed;
}

TransferRatio layout_ratio(const std::vector<ComputeCurve>& curves, const Catalog& catalog, PrecisionFamily family,
                           SoftwareStack stack) {
    const Software channels_last{Framework::pytorch, stack, MemoryFormat::channels_last};
    const Software nchw{Framework::pytorch, stack, MemoryFormat::nchw};
    return dimension_ratio(curves, catalog, family, channels_last, nchw, 2);
}

double roofline_time_per_image_s(double training_flops, double peak_flops_per_s, double compute_efficiency,
                                 double memory_bytes, double memory_Bps, double memory_efficiency) {
    return training_flops / (peak_flops_per_s * compute_efficiency) + memory_bytes / (memory_Bps * memory_efficiency);
}

double roofline_memory_efficiency(const RooflinePrior& prior, SoftwareStack stack, Precision precision) {
    return stack == SoftwareStack::legacy && precision == Precision::fp32 ? kUnfusedMemoryEfficiency
                                                                          : prior.memory_efficiency;
}

FrameworkRoofline fit_framework_roofline(const std::vector<RooflinePoint>& points, double roofline_sigma) {
    FrameworkRoofline line;
    line.curves = static_cast<int>(points.size());
    if (points.empty()) return line;
    // Least squares in relative terms: minimise sum ((a r_i + c) / t_i - 1)^2, i.e. a linear fit of
    // 1 to x_i = r_i / t_i and y_i = 1 / t_i.
    double sxx = 0, sxy = 0, syy = 0, sx = 0, sy = 0, lowest = points[0].roofline_s, highest = lowest;
    for (const RooflinePoint& p : points) {
        const double x = p.roofline_s / p.measured_s, y = 1.0 / p.measured_s;
        sxx += x * x;
        sxy += x * y;
        syy += y * y;
        sx += x;
        sy += y;
        lowest = std::min(lowest, p.roofline_s);
        highest = std::max(highest, p.roofline_s);
    }
    int parameters = 1;
    line.factor = sx / sxx;
    if (points.size() >= 3 && highest >= 1.5 * lowest) {
        const double det = sxx * syy - sxy * sxy;
        const double factor = (sx * syy - sy * sxy) / det, floor = (sxx * sy - sxy * sx) / det;
        if (det > 0 && factor > 0 && floor > 0) {
            line.factor = factor;
            line.floor_s = floor;
            parameters = 2;
        }
    }
    // The scatter around the line, with the roofline prior's sigma as one more pseudo-observation
    // (few curves say little about how far a GPU they did not measure can stray).
    const int dof = std::max(line.curves - parameters, 0);
    double squares = roofline_sigma * roofline_sigma;
    for (const RooflinePoint& p : points) {
        const double off = std::log((line.factor * p.roofline_s + line.floor_s) / p.measured_s);
        squares += off * off;
    }
    line.relative_sigma = std::max(kRooflineFitMinSigma, std::sqrt(squares / (dof + 1)));
    return line;
}

double pooled_weight(double sigma_a, double sigma_b) {
    return sigma_b * sigma_b / (sigma_a * sigma_a + sigma_b * sigma_b);
}

double pooled_sigma(double sigma_a, double sigma_b) {
    return sigma_a * sigma_b / std::sqrt(sigma_a * sigma_a + sigma_b * sigma_b);
}

std::string_view to_string(CurveOrigin origin) {
    switch (origin) {
        case CurveOrigin::measured:
            return "measured";
        case CurveOrigin::precision_family:
            return "another precision's";
        case CurveOrigin::other_software:
            return "other software's";
        case CurveOrigin::pooled:
            return "pooled";
        case CurveOrigin::other_gpus:
            return "other GPUs'";
        case CurveOrigin::roofline:
            return "roofline prior";
    }
    return "?";
}

std::string curve_origin_note(const std::string& gpu, const Scenario& s, CurveOrigin origin) {
    if (origin == CurveOrigin::measured) return "";
    const Software software = software_of(s.framework, s.stack, s.memory_format, s.precision);
    std::string note = "no measured compute curve for " + gpu + " / " + std::string(to_string(s.precision)) + " / " +
                       describe(software);
    switch (origin) {
        case CurveOrigin::measured:
            break;
        case CurveOrigin::precision_family:
            note += "; the curve of its precision family at the same tensor peak stands in (docs/model.md, eq. C0)";
            break;
        case CurveOrigin::other_software:
            note += "; other software's curve on the same GPU stands in, by the ratio where both ran (eq. C4)";
            break;
        case CurveOrigin::pooled:
            note +=
                "; other software's curve on the same GPU and this software's curves on other GPUs stand in, pooled "
                "(eqs. C4-C6)";
            break;
        case CurveOrigin::other_gpus:
            note += "; this software's curves on other GPUs, carried by their roofline times, stand in (eq. C5)";
            break;
        case CurveOrigin::roofline:
            note += "; the roofline prior is used (eq. C3)";
            break;
    }
    return note + ", hence the wider band.";
}

}  // namespace epochcast
