// Which measured compute curve a scenario's GPU, precision and software take, and how far it is
// carried (docs/model.md, "The compute curve", eq. C0). The order of the fallbacks and what each
// adds to the uncertainty live here, in one place; CostModel::compute_curve walks them and the fit
// (model/fit.cpp) asks the same questions when it decides whether a run needs a curve of its own.
#pragma once

#include <string>
#include <vector>

#include "model/calibration.hpp"
#include "model/catalog.hpp"
#include "model/types.hpp"

namespace epochcast {

// Relative 1-sigmas of carrying a curve (docs/model.md, eq. C0).
/// To another precision of its family with the same tensor peak (amp <-> bf16): the same bytes
/// through the same units; published fp16 and bf16 runs of one code differ by a few percent.
inline constexpr double kPrecisionFamilySigma = 0.03;
/// To a memory variant of its chip, per unit of |ln| of the roofline ratio that carries it (eq.
/// C7): the unfused traffic count behind the memory term is known to about half.
inline constexpr double kMemoryVariantSigmaPerLogRatio = 0.5;
/// To other software on the same GPU and precision (eq. C4), at the least: seed 000's MXNet and
/// TensorFlow curves differ by 10% on the same V100s.
inline constexpr double kSoftwareTransferSigma = 0.15;
/// To another precision family on the same chip (TF32 from amp), at the least: the measured ratio
/// moves with each chip's ratio of peaks and with what else bounds it (Lambda's B200 runs TF32 as
/// fast as amp, where A100s take twice as long).
inline constexpr double kFamilyTransferSigma = 0.3;
/// Across precision families along the two families' lines (eq. C4b), at the least: the lines'
/// own floor (kRooflineFitMinSigma).
inline constexpr double kLineTransferMinSigma = 0.05;

/// The software a curve was measured on: the framework, the stack and the layout. The layout is
/// part of it only where it changes the kernels: tensor-core precisions on the current stack (the
/// legacy stack was NCHW throughout; plain fp32 runs the same CUDA-core kernels in either layout).
struct Software {
    Framework framework = Framework::pytorch;
    SoftwareStack stack = SoftwareStack::current;
    MemoryFormat memory_format = MemoryFormat::channels_last;
    friend bool operator==(const Software&, const Software&) = default;
};

/// Whether the layout is part of the software at this stack and precision (see Software).
bool layout_matters(SoftwareStack stack, Precision precision);

/// The software of a scenario or a curve, its layout folded to channels_last where it does not
/// matter, so that == compares what changes the kernels.
Software software_of(Framework framework, SoftwareStack stack, MemoryFormat format, Precision precision);
Software software_of(const ComputeCurve& curve);

/// "pytorch", "pytorch nchw", "tensorflow legacy": how messages name a software.
std::string describe(const Software& software);

/// The catalog's GPU of a curve, or nullptr where the catalog has none of that name.
const GpuSpec* curve_gpu(const Catalog& catalog, const ComputeCurve& curve);

/// The peak of `gpu` at `precision`, in FLOP/s (fp32, tf32, fp16 or bf16 tensor rate).
double peak_flops_per_s(const GpuSpec& gpu, Precision precision);

/// Whether a curve measured at `measured` on `gpu` holds at `wanted`: the same precision, or one
/// of its family (amp, bf16) at the same tensor peak (within 1%).
bool same_family_rate(const GpuSpec& gpu, Precision measured, Precision wanted);

/// Steps 1 and 2 of eq. C0: the curve measured on this GPU's chip (any memory variant) with this
/// software at this precision, else at another precision of its family with the same peak;
/// nullptr where there is none. `exact_precision` tells which it found.
struct OwnCurve {
    const ComputeCurve* curve = nullptr;
    bool exact_precision = true;
};
OwnCurve own_curve(const std::vector<ComputeCurve>& curves, const Catalog& catalog, const GpuSpec& gpu,
                   Precision precision, const Software& software);

/// Step 3: another curve of this GPU's chip, the nearest first: at this precision (or one of its
/// family at the same peak), the same framework and stack in the other layout, then another
/// framework on the same stack and layout, then the same framework on the other stack, then any;
/// after them, this software at another precision family (TF32 against amp), then any; nullptr
/// where the chip has no other curve.
const ComputeCurve* sibling_curve(const std::vector<ComputeCurve>& curves, const Catalog& catalog, const GpuSpec& gpu,
                                  Precision precision, const Software& software);

/// Eq. C4: how much longer an image takes under `to` at `to_precision`'s family than under `from`'s
/// software and precision family, on the evidence of the chips where both were measured at the
/// same model and image size: the geometric mean of their time-per-image ratios. Where no chip has
/// both, the product of two such ratios through a third software that chips share with each (the
/// path of least sigma); 1 where there is none. `relative_sigma` is the
/// scatter of the ratios' logarithms, never below kSoftwareTransferSigma (which it is with fewer
/// than two chips).
/// The first curve of software `to` at `to_family` on `a`'s chip, of `a`'s model and image size:
/// the pair eqs. C4 and C4b compare (nullptr where that chip has none).
const ComputeCurve* chip_partner(const std::vector<ComputeCurve>& curves, const Catalog& catalog, const ComputeCurve& a,
                                 const Software& to, PrecisionFamily to_family);

struct TransferRatio {
    double ratio = 1.0;
    double relative_sigma = kSoftwareTransferSigma;
    int chips = 0;  ///< chips with both curves
};
TransferRatio transfer_ratio(const std::vector<ComputeCurve>& curves, const Catalog& catalog, const ComputeCurve& from,
                             const Software& to, Precision to_precision);

}  // namespace epochcast
