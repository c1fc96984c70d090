// The model's fitted parameters (schema "epochcast.calibration/1"): what `epochcast calibrate`
// writes and `--calibration` reads. The built-in one (model/default_calibration.json) is fitted to
// every published run by scripts/fit-built-in-calibration; docs/model.md shows how.
#pragma once

#include <array>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "model/types.hpp"

namespace epochcast {

/// A measured compute curve for one GPU type, precision and framework:
/// compute_s(batch) = fixed_s + batch x time_per_image_s, so throughput saturates at
/// 1 / time_per_image_s as the batch grows (docs/model.md, "Compute").
struct ComputeCurve {
    std::string gpu;  ///< GpuSpec::name
    Precision precision = Precision::amp;
    Framework framework = Framework::tensorflow;
    SoftwareStack stack = SoftwareStack::current;  ///< the software it was measured on
    /// The layout it was measured in (model/compute_curve.hpp says where it matters).
    MemoryFormat memory_format = MemoryFormat::channels_last;
    std::string model = "resnet50";  ///< architecture the curve was measured on; other models scale by FLOPs
    int image_size = 224;            ///< image side it was measured at
    double time_per_image_s = 0;     ///< marginal seconds per image on one GPU
    double fixed_s = 0;              ///< seconds per iteration independent of the batch
    /// The one per-GPU batch all its runs had (0: several): runs at one batch cannot tell the fixed
    /// time from the per-image time, so a prediction takes its software's fixed time and keeps the
    /// curve's time at this batch (docs/model.md, "The fixed time").
    int measured_batch = 0;
    double relative_sigma = 0;  ///< 1-sigma relative uncertainty of the curve's throughput
    std::string source;         ///< the runs it was fitted to
};

/// Where no curve was measured: a roofline prior from the catalog's peak figures,
/// time_per_image = FLOPs / (peak x compute efficiency) + bytes moved / (bandwidth x memory efficiency).
struct RooflinePrior {
    double fp32_compute_efficiency = 0;    ///< fraction of fp32 peak reached by convolutions
    double tensor_compute_efficiency = 0;  ///< fraction of fp16/bf16 tensor-core peak reached
    double memory_efficiency = 0;          ///< bandwidth reached over the unfused traffic count (Workload);
                                           ///< above 1 where frameworks fuse BN, ReLU and add into convolutions
    double relative_sigma = 0;             ///< 1-sigma relative uncertainty of a prior-only throughput
    std::string source;
};

/// The largest straggler jitter a calibration holds: a worker's step spread ten times its step. A
/// measured jitter above it (eq. S2 on a host that stops ranks for seconds) is taken as this.
inline constexpr double kMaxSyncJitter = 10.0;

/// A framework's overheads (MXNet, TensorFlow, PyTorch and epochcast's own executor each have one).
struct FrameworkProfile {
    double fixed_overhead_s = 0;   ///< per-iteration overhead of a GPU without a measured curve, in seconds
    double sync_jitter = 0;        ///< relative standard deviation of one worker's compute time (stragglers),
                                   ///< at most kMaxSyncJitter
    double allreduce_overlap = 0;  ///< fraction of the backward pass that hides all-reduce traffic, 0..1
    double ps_overlap = 0;         ///< same for parameter-server push/pull, 0..1
    /// Gradient bucket the framework all-reduces at once, in MiB: Horovod's fusion threshold (64),
    /// PyTorch DDP's bucket_cap_mb (25), epochcast-train's --fusion-mib (4). A Scenario's
    /// fusion_threshold_MiB overrides it.
    double bucket_MiB = 0;
    double relative_sigma = 0;  ///< 1-sigma relative uncertainty of the sync and overlap terms
    /// The framework's own CPU input pipeline (Loader::cpu: PyTorch's DataLoader with PIL, tf.data,
    /// MXNet's ImageRecordIter, epochcast-train's data threads): JPEG decode + augmentation, images/s
    /// per vCPU (docs/model.md, eq. D1). Files written before the key existed take their
    /// input_pipeline.decode_images_per_s_per_vcpu.
    double cpu_decode_images_per_s_per_vcpu = 0;
    std::string source;
};

/// One inter-node fabric's figures (docs/model.md, eq. N1), fitted to published nccl-tests tables.
struct FabricParams {
    double efficiency = 0;  ///< all-reduce bus bandwidth across nodes over the node's line rate
    double latency_s = 0;   ///< per inter-node hop of a collective (NCCL's per-step network latency), seconds
    /// Per inter-node hop of NCCL's Simple protocol, the one that reaches the full bandwidth, in
    /// seconds; latency_s is then the low-latency protocol's, which moves half the bytes per
    /// transfer (eq. N3). 0: one protocol, latency_s at full bandwidth.
    double simple_latency_s = 0;
    double cap_GBps = 0;  ///< per-node ceiling of that bus bandwidth, in 10^9 bytes/s; 0: none
};

/// One class of GPU-to-GPU link inside a node (pcie, nvlink, nvswitch).
struct LinkParams {
    double efficiency = 0;  ///< ring all-reduce bus bandwidth over the catalog's intra_node_GBps
    double latency_s = 0;   ///< per intra-node hop of a collective, seconds
};

/// Network priors (docs/model.md, "Communication"); `epochcast import-nccl` measurements refine them.
struct NetworkParams {
    std::array<FabricParams, kInterconnectCount> fabrics{};  ///< indexed by Interconnect
    std::array<LinkParams, kIntraLinkCount> links{};         ///< indexed by IntraLink
    /// NVLink SHARP's all-reduce bus bandwidth over intra_node_GBps (Hopper and later with NVSwitch).
    double nvls_efficiency = 0;
    double relative_sigma = 0;  ///< 1-sigma relative uncertainty of communication times
    std::string source;

    FabricParams& fabric(Interconnect i) { return fabrics[static_cast<std::size_t>(i)]; }
    const FabricParams& fabric(Interconnect i) const { return fabrics[static_cast<std::size_t>(i)]; }
    LinkParams& link(IntraLink l) { return links[static_cast<std::size_t>(l)]; }
    const LinkParams& link(IntraLink l) const { return links[static_cast<std::size_t>(l)]; }
};

/// One calibration run's fit: what was measured and what the fitted model says.
struct FitResidual {
    std::string origin;    ///< the run ("file#index") or network measurement it belongs to
    std::string quantity;  ///< "throughput_images_per_s", "scaling_efficiency", "bus_bandwidth_GBps", ...
    double measured = 0;
    double predicted = 0;
};

/// The joint uncertainty of the fitted parameters (docs/model.md, "Uncertainty"): their
/// covariance in their internal coordinates (model/parameters.hpp) and the scatter the formulas
/// do not explain. Parameters not listed keep their group's sigma (group_sigma), uncorrelated.
struct Uncertainty {
    std::vector<std::string> parameters;  ///< names, as model/parameters.hpp spells them
    std::vector<double> covariance;       ///< row-major, parameters.size() squared
    double model_sigma = 0;               ///< relative 1-sigma of a prediction beyond the parameters' own
    std::vector<FitResidual> residuals;   ///< the fit's residuals, for the record
    std::string method;                   ///< how it was fitted
};

/// Everything the cost model reads besides the catalog.
struct Calibration {
    std::string description;               ///< what it was made from
    std::vector<std::string> fitted_from;  ///< the runs (file#index) it was fitted to
    RooflinePrior roofline;
    std::array<FrameworkProfile, kFrameworkCount> frameworks;  ///< indexed by Framework
    std::vector<ComputeCurve> compute;
    NetworkParams network;
    double dali_cpu_images_per_s_per_vcpu = 0;  ///< DALI's decode + augmentation on the CPU, per vCPU
    double dali_images_per_s_per_gpu = 0;       ///< DALI's decode + augmentation on an A100; other GPUs by eq. D2
    double startup_s = 0;                       ///< launch to first iteration up to 256 GPUs (seed 001: 1.5 minutes)
    double startup_s_per_doubling = 0;          ///< and its growth per doubling past 256 (eq. L1; MLPerf's logs)
    double checkpoint_write_GBps = 0;           ///< storage write rate for the per-epoch checkpoint, in 10^9 bytes/s
    double decode_relative_sigma = 0;           ///< 1-sigma relative uncertainty of the decode rates
    Uncertainty uncertainty;                    ///< empty for a calibration that was not fitted

    /// The rate field of a decoding loader under `framework` (cpu: the framework's own, per vCPU;
    /// dali-cpu: per vCPU; dali: per GPU); nullptr for the others (synthetic data decodes nothing).
    double* decode_rate_field(Loader loader, Framework framework);
    /// Its value; 0 for a loader that decodes nothing.
    double decode_rate(Loader loader, Framework framework) const {
        const double* field = const_cast<Calibration*>(this)->decode_rate_field(loader, framework);
        return field ? *field : 0.0;
    }

    const FrameworkProfile& framework(Framework f) const { return frameworks[static_cast<int>(f)]; }
    FrameworkProfile& framework(Framework f) { return frameworks[static_cast<int>(f)]; }

    /// The built-in default (model/default_calibration.json compiled in).
    static Calibration built_in();
    /// The priors `epochcast calibrate` starts from when asked to use no seed data
    /// (model/prior_calibration.json compiled in; docs/model.md, "Calibration").
    static Calibration data_free_prior();
    /// Parse calibration JSON; `origin` names it in errors. Throws InputError naming the key on a
    /// malformed file, a wrong schema, a missing or mistyped key, or an out-of-range value.
    static Calibration parse(std::string_view json_text, std::string_view origin);
    /// Read and parse a file; throws InputError when it is missing or unreadable.
    static Calibration load(const std::filesystem::path& path);
    /// The epochcast.calibration/1 JSON text.
    std::string to_json() const;
};

/// A calibration by name: "built-in" (also for ""), "data-free" (the prior with no seed run in it)
/// or the path of an epochcast.calibration/1 file (InputError naming it when it is bad or missing).
Calibration load_calibration(const std::string& name_or_path);

}  // namespace epochcast
