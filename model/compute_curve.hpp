// The compute curve: how long one GPU takes for an iteration of a batch (docs/model.md, "The
// compute curve", eqs. C0-C7). Which measured curve a scenario's GPU, precision and software
// take, and how far it is carried: the order of eq. C0's fallbacks and what each adds to the
// uncertainty live here, in one place. ComputeCurves::choose is where a reader starts (its steps
// in model/compute_curve.cpp, in eq. C0's order); the searches over the calibration's curves it
// asks (own_curve, sibling_curve, transfer_ratio) are in model/curve_evidence.cpp, and the fit
// (model/fit.cpp) asks the same questions when it decides whether a run needs a curve of its own.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "model/calibration.hpp"
#include "model/catalog.hpp"
#include "model/resolved_scenario.hpp"
#include "model/scenario.hpp"
#include "model/types.hpp"
#include "model/uncertainty.hpp"
#include "model/workload.hpp"

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

/// Eq. C8: how much longer an image takes in NCHW than in channels_last at `family` under `stack`,
/// on the chips where one framework's curves were measured in both layouts (any framework: the
/// layout is cuDNN's): the geometric mean of their time-per-image ratios, 1 where no chip has
/// both; `relative_sigma` their scatter, never below kSoftwareTransferSigma.
TransferRatio layout_ratio(const std::vector<ComputeCurve>& curves, const Catalog& catalog, PrecisionFamily family,
                           SoftwareStack stack);

/// One sentence for a user on where a curve that was not measured came from and why its band is
/// wider ("no measured compute curve for H100-SXM5-80GB / bf16 / pytorch: its amp curve stands in
/// ..."); empty for a measured one. The CLI's notes and the window's message say it alike.
std::string curve_origin_note(const std::string& gpu, const Scenario& scenario, CurveOrigin origin);

/// Eq. C3's memory efficiency of the legacy stack's fp32: the 2017-2018 stock fp32 kernels ran the
/// network unfused (batch norm, ReLU and the residual add each a kernel of its own, NCHW), so they
/// move the unfused traffic count itself at the memory's bandwidth: 1. The prior's
/// memory_efficiency (above 1) is the fused stacks'; docs/model.md, eq. C3.
inline constexpr double kUnfusedMemoryEfficiency = 1.0;

/// Eq. C3's memory efficiency under `stack` at `precision`: kUnfusedMemoryEfficiency for the
/// legacy stack's fp32, the prior's elsewhere (the legacy half-precision runs are of one chip, the
/// V100, and show no bandwidth term of their own).
double roofline_memory_efficiency(const RooflinePrior& prior, SoftwareStack stack, Precision precision);

/// Roofline prior for one image: FLOPs / (peak x efficiency) + bytes / (bandwidth x efficiency) (eq. C3).
double roofline_time_per_image_s(double training_flops, double peak_flops_per_s, double compute_efficiency,
                                 double memory_bytes, double memory_Bps, double memory_efficiency);

/// One measured curve against its GPU's roofline (eq. C3 at the prior's efficiencies), both in
/// seconds per image, for eq. C5.
struct RooflinePoint {
    double roofline_s = 0;
    double measured_s = 0;
};

/// Eq. C5: a framework's measured curves over the GPUs it ran on, against each GPU's roofline:
/// t_img = factor x roofline + floor. `floor_s` is the per-image time no faster GPU removes (0
/// unless three or more curves span a 1.5x range of roofline times); `relative_sigma` the scatter
/// of the curves' logarithms around the line with the roofline prior's sigma (`roofline_sigma`)
/// counted as one more residual, over the degrees of freedom plus one, never below
/// kRooflineFitMinSigma: the roofline prior's own sigma when the points leave no freedom.
struct FrameworkRoofline {
    double factor = 0;
    double floor_s = 0;
    double relative_sigma = 0;
    int curves = 0;
};
inline constexpr double kRooflineFitMinSigma = 0.05;
FrameworkRoofline fit_framework_roofline(const std::vector<RooflinePoint>& points, double roofline_sigma);

/// Eq. C6: two independent estimates of ln t_img with relative sigmas `sigma_a` and `sigma_b`,
/// pooled by inverse variance: the first one's weight, and the pooled estimate's sigma.
double pooled_weight(double sigma_a, double sigma_b);
double pooled_sigma(double sigma_a, double sigma_b);

/// Eq. C5 fits its line per image of this model (other depths and sizes scale by their FLOPs).
inline constexpr const char* kReferenceModel = "resnet50";
inline constexpr int kReferenceImageSize = 224;

/// Eq. C9: PyTorch under torch.compile (TorchInductor's default mode) against eager, from the one
/// pair measured in one call of one version (docs/performance.md, "Training on a GPU": PyTorch 2.11,
/// AMP, channels_last, synthetic data, one H200): eager 5,880.0 img/s at batch 256 and 6,396.6 at
/// 1,056, compiled 6,667.7 at 256. The eager pair fixes the fixed time's share of the eager step at
/// 256 (eq. C1); the compiled run fixes how much shorter that step is.
inline constexpr double kCompiledPairEagerImagesPerS = 5880.0;
inline constexpr double kCompiledPairEagerLargeBatchImagesPerS = 6396.6;
inline constexpr int kCompiledPairLargeBatch = 1056;
inline constexpr double kCompiledPairImagesPerS = 6667.7;
inline constexpr int kCompiledPairBatch = 256;
/// The measured ratio's own 1-sigma, in its log: one call of one version, and Inductor's kernels
/// change between releases (a judgment, not a scatter: there is one pair).
inline constexpr double kCompiledRatioSigma = 0.05;

/// Eq. C9's factors on an eager curve: compiled t_fixed = k t_fixed, compiled t_img = f t_img. How
/// the measured gain splits between the fixed time (fewer kernels to launch) and the per-image time
/// (element-wise work fused into fewer passes over memory) one pair cannot tell: k, the share of
/// the fixed time left, lies anywhere in [0, 1], taken at 1/2 with a uniform law's sigma, and f is
/// what keeps the measured step at the pair's batch. Each LogShift is per 1-sigma of one of the two
/// unknowns (k, the measured ratio).
struct CompiledExecution {
    double fixed_factor = 1;
    double time_per_image_factor = 1;
    LogShift ratio;  ///< per 1-sigma of the measured ratio (kCompiledRatioSigma)
    LogShift split;  ///< per 1-sigma of the split k (zero at either end of its range)
};
/// Eq. C9 at k = 1/2, the split's sigma with it.
CompiledExecution compiled_execution();
/// Eq. C9 at the split `k` (0 to 1): the ends of its range, which bound the band (throughput_band).
CompiledExecution compiled_execution_at(double k);

/// One sentence for a user on what a torch.compile prediction rests on (eq. C9); the CLI's notes
/// and the window's message say it alike.
std::string compiled_note();

/// A scenario's compute curve (eq. C1's terms) and where it came from (eq. C0).
struct ComputeCurveChoice {
    double time_per_image_s = 0;
    double fixed_s = 0;
    double transfer_sigma = 0;  ///< ResolvedScenario::transfer_sigma
    CurveOrigin origin = CurveOrigin::roofline;
    FieldSensitivity time_per_image;  ///< which parameter the time per image comes from
    FieldSensitivity fixed;           ///< and the fixed time
    /// Where the curve was measured at one batch b0 (eq. C1b): b0 and the half-saturation batch
    /// that split its time there; 0 where its runs measured the fixed time.
    double one_batch_b0 = 0;
    double one_batch_b_half = 0;
    /// Under torch.compile (eq. C9; Scenario::compiled): its two uncertainties; zero when eager.
    bool compiled = false;
    LogShift compiled_split;
    LogShift compiled_ratio;
};

/// The compute-curve fields of a resolved scenario from its choice: the time per image, the fixed
/// time, the carried curve's own sigma and the origin.
void set_compute_curve(ResolvedScenario& r, const ComputeCurveChoice& curve);

/// Eq. C0 over one calibration's curves: its lines (eq. C5) and saturation levels (eq. C1b) fitted
/// once, and each answer kept for the next scenario of the same GPU, workload and software. Cheap
/// to copy: copies share the catalog, the calibration, the workloads and the answers.
class ComputeCurves {
public:
    ComputeCurves(std::shared_ptr<const Catalog> catalog, std::shared_ptr<const Calibration> calibration,
                  std::shared_ptr<Workloads> workloads);

    /// The compute curve of `scenario`'s software and precision on `gpu` for `work` (eq. C0), its
    /// sensitivities as rows of `covariance` (the calibration's own). A sweep or a plan asks again
    /// for every node count and batch: the answer is remembered (eqs. C4-C6 compare each pair of
    /// curves, most of resolve()'s time otherwise).
    /// Under torch.compile (Scenario::compiled) the eager curve chosen is carried by eq. C9.
    ComputeCurveChoice choose(const GpuSpec& gpu, const Scenario& scenario, const Workload& work,
                              const ParameterCovariance& covariance) const;

    /// Eq. C3 for one image of `work` on `gpu` at `precision` under `stack`, at the calibration's
    /// prior efficiencies (the memory term's by roofline_memory_efficiency).
    double roofline_s(const GpuSpec& gpu, Precision precision, SoftwareStack stack, const Workload& work) const;

private:
    /// Eq. C9 on an eager curve (compiled_execution's factors and uncertainties).
    static void compile(ComputeCurveChoice& c);

    /// Eq. C5's line of one software and precision family.
    struct SoftwareLine {
        Software software;
        PrecisionFamily family = PrecisionFamily::half;
        FrameworkRoofline line;
    };
    /// The answers, by the catalog's GpuSpec and the workload cache's Workload (both stay where
    /// they are while the model lives) and the software.
    struct Remembered {
        std::mutex mutex;
        std::map<std::tuple<const GpuSpec*, const Workload*, Precision, Framework, SoftwareStack, MemoryFormat>,
                 ComputeCurveChoice>
            choices;
    };

    /// Eq. C0's fallbacks, in their order (choose() without its memory).
    ComputeCurveChoice fallbacks(const GpuSpec& gpu, const Scenario& scenario, const Workload& work,
                                 const ParameterCovariance& covariance) const;
    /// Eq. C8 (step 2b): the curve of `scenario`'s layout from the other layout's curve measured on
    /// this chip, by layout_ratio and pooled with this layout's line (eq. C6), its fixed time kept:
    /// the layout changes the kernels' work per image, not the launches. Nothing where eq. C8 does
    /// not apply (a layout that does not matter, or no curve of the other layout on the chip).
    std::optional<ComputeCurveChoice> other_layout(const GpuSpec& gpu, const Scenario& scenario, const Workload& work,
                                                   const ParameterCovariance& covariance) const;
    /// Eq. C6 on `c`: its per-image time, ln `own_log` at `own_sigma`, pooled with eq. C5's `line`
    /// at this GPU (ln `line_log`); its sensitivity scaled by its weight, its sigma the pooled one.
    /// Steps 2b and 3 pool alike.
    static void pool_with_line(ComputeCurveChoice& c, double own_log, double own_sigma, const FrameworkRoofline& line,
                               double line_log);
    /// Steps 3 to 5 of eq. C0.
    ComputeCurveChoice borrowed(const GpuSpec& gpu, const Scenario& scenario, const Workload& work,
                                const ParameterCovariance& covariance) const;
    /// A measured curve taken as it stands for `gpu` and `precision` (steps 1 and 2 of eq. C0): scaled
    /// by FLOPs to the scenario's architecture, by eq. C7's roofline ratio to this memory variant.
    ComputeCurveChoice carried_curve(const ComputeCurve& curve, const GpuSpec& gpu, Precision precision,
                                     const Workload& work, CurveOrigin origin,
                                     const ParameterCovariance& covariance) const;
    /// Eq. C0's step 3: the ratio that carries `sibling` (a curve of this chip, other software or
    /// another precision family) to `software` at `precision` on `gpu`: across precision families,
    /// the ratio of the two families' lines at this GPU (eq. C4b) where both lines exist, its sigma
    /// the chips' measured ratios around their lines' ratios; else eq. C4's ratio of other chips.
    TransferRatio sibling_transfer(const ComputeCurve& sibling, const Software& software, const GpuSpec& gpu,
                                   Precision precision, const Workload& work) const;
    /// Eq. C5's line for the software and precision family, or nullptr where no curve of theirs exists.
    const SoftwareLine* framework_roofline(const Software& software, Precision precision) const;
    /// Eq. C5's line's time for one image of `work` on `gpu` at `precision`, in seconds.
    double line_time_s(const SoftwareLine& line, const GpuSpec& gpu, Precision precision, const Workload& work) const;
    /// Eq. C1b's half-saturation batch of `gpu` under a framework and stack (the fixed time over the
    /// time per image): their level (else every framework's) x the GPU's SMs; 0 where no curve
    /// measured a level or the GPU's SMs are unknown.
    double half_saturation_batch(Framework framework, SoftwareStack stack, const GpuSpec& gpu) const;
    const Workload& workload(const std::string& model, int image_size, int classes) const {
        return workloads_->get(model, image_size, classes);
    }

    std::shared_ptr<const Catalog> catalog_;
    std::shared_ptr<const Calibration> calibration_;
    std::shared_ptr<Workloads> workloads_;
    std::shared_ptr<Remembered> remembered_;
    /// Training FLOPs of one image of the reference model, in which eq. C5's lines are fitted.
    double reference_training_flops_ = 0;
    /// Eq. C5 per software and precision family that has curves.
    std::vector<SoftwareLine> framework_rooflines_;
    /// Eq. C1b: per framework and stack, the geometric mean over their curves measured at several
    /// batches of the half-saturation batch per SM, fixed_s / (SMs x time_per_image_s); and over all.
    std::map<std::pair<Framework, SoftwareStack>, double> saturation_levels_;
    double saturation_level_all_ = 0;  ///< over every framework and stack; 0 where no curve measured one
};

}  // namespace epochcast
