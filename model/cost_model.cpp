#include "model/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "model/collectives.hpp"
#include "model/errors.hpp"
#include "model/spot.hpp"
#include "model/storage.hpp"
#include "model/text_io.hpp"

namespace epochcast {
namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kBitsPerByte = 8.0;
/// A checkpoint holds the fp32 weights and the fp32 momentum: 8 bytes per parameter.
constexpr double kCheckpointBytesPerParameter = 8.0;

std::string format_gib(double bytes) {
    std::ostringstream out;
    out.precision(3);
    out << bytes / kBytesPerGiB;
    return out.str();
}

}  // namespace

int per_gpu_batch(const Scenario& scenario, int instance_gpus) {
    if (scenario.global_batch == 0) return scenario.batch_per_gpu;
    if (scenario.global_batch < 0) {
        throw InputError("--global-batch must be at least 1 (got " + std::to_string(scenario.global_batch) + ")");
    }
    const long long gpus =
        static_cast<long long>(scenario.nodes) * (scenario.gpus_per_node > 0 ? scenario.gpus_per_node : instance_gpus);
    if (gpus < 1) return scenario.batch_per_gpu;  // resolve() rejects the count itself
    if (scenario.global_batch % gpus != 0) {
        throw InputError("global batch " + std::to_string(scenario.global_batch) + " does not divide over " +
                         std::to_string(gpus) + " GPUs (choose a multiple of the GPU count)");
    }
    return static_cast<int>(scenario.global_batch / gpus);
}

Interconnect fabric_in_use(const InstanceSpec& instance, int efa_adapters) {
    if (instance.interconnect == Interconnect::efa && efa_adapters == 0) return Interconnect::tcp;
    return instance.interconnect;
}

double node_network_Bps(const InstanceSpec& instance, int efa_adapters, const NetworkParams& network) {
    const Interconnect fabric = fabric_in_use(instance, efa_adapters);
    const FabricParams& params = network.fabric(fabric);
    double line_GBps = instance.network_gbps / kBitsPerByte;
    if (fabric == Interconnect::efa && efa_adapters > 0)
        line_GBps *= static_cast<double>(efa_adapters) / instance.efa_adapters;
    const double GBps = line_GBps * params.efficiency;
    return (params.cap_GBps > 0 ? std::min(GBps, params.cap_GBps) : GBps) * 1e9;
}

double intra_node_Bps(const InstanceSpec& instance, DeviceKind device, const NetworkParams& network) {
    if (device == DeviceKind::cpu) return instance.intra_node_GBps * 1e9;
    return instance.intra_node_GBps * network.link(instance.intra_link()).efficiency * 1e9;
}

namespace {

/// The network fields of a resolved scenario for `efa_adapters` of `instance`'s adapters in use
/// (eqs. N1-N3): what resolve() and the nccl-tests predictions share.
void set_network(ResolvedScenario& r, const InstanceSpec& instance, DeviceKind device, int efa_adapters,
                 const NetworkParams& network) {
    r.interconnect = fabric_in_use(instance, efa_adapters);
    r.intra_link = instance.intra_link();
    r.intra_bandwidth_Bps = intra_node_Bps(instance, device, network);
    r.intra_latency_s = network.link(r.intra_link).latency_s;
    r.inter_bandwidth_Bps = node_network_Bps(instance, efa_adapters, network);
    r.inter_latency_s = network.fabric(r.interconnect).latency_s;
    r.inter_simple_latency_s = network.fabric(r.interconnect).simple_latency_s;
    r.nvls_bandwidth_Bps = device != DeviceKind::cpu && instance.has_nvls()
                               ? instance.intra_node_GBps * network.nvls_efficiency * 1e9
                               : 0.0;
}

}  // namespace

std::string_view to_string(Bottleneck bottleneck) {
    switch (bottleneck) {
        case Bottleneck::compute:
            return "compute";
        case Bottleneck::communication:
            return "communication";
        case Bottleneck::data:
            return "data";
        case Bottleneck::storage:
            return "storage";
    }
    return "?";
}

double compute_time_s(double fixed_s, double time_per_image_s, int batch) { return fixed_s + batch * time_per_image_s; }

double backward_time_s(double time_per_image_s, int batch) { return 2.0 / 3.0 * batch * time_per_image_s; }

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

double straggler_factor(int workers) {
    if (workers <= 1) return 0.0;
    return std::sqrt(2.0 * std::log(static_cast<double>(workers)));
}

double compute_jitter(const std::vector<double>& step_seconds) {
    if (step_seconds.size() < kMinJitterSamples) {
        throw InputError("a compute jitter needs at least " + std::to_string(kMinJitterSamples) +
                         " per-step samples, got " + std::to_string(step_seconds.size()));
    }
    double sum = 0;
    double squared_steps = 0;
    for (std::size_t i = 0; i < step_seconds.size(); ++i) {
        if (!(step_seconds[i] > 0))
            throw InputError("per-step sample " + std::to_string(i) + " is not a positive time");
        sum += step_seconds[i];
        if (i > 0) squared_steps += std::pow(step_seconds[i] - step_seconds[i - 1], 2);
    }
    const double n = static_cast<double>(step_seconds.size());
    // E[(x_i+1 - x_i)^2] = 2 sigma^2 for independent draws; a drift adds only its squared slope.
    return std::sqrt(squared_steps / (2.0 * (n - 1.0))) / (sum / n);
}

double straggler_wait_s(double compute_s, double jitter, int workers) {
    return jitter * compute_s * straggler_factor(workers);
}

double exposed_communication_s(double communication_s, double backward_s, double overlap) {
    return std::max(0.0, communication_s - overlap * backward_s);
}

double data_time_s(int batch, double decode_images_per_s) { return batch / decode_images_per_s; }

double pipelined_s(double step_s, double data_s) {
    if (!(data_s > 0)) return step_s;
    // (a^p + b^p)^(1/p) = larger x (1 + r^p)^(1/p), r = smaller / larger in [0, 1], so that no
    // power overflows. p = 2^5: r^p is five squarings and the root five square roots, not three
    // pow() calls, which took half of predict()'s time (eq. U1's gradient evaluates eq. I1 once for
    // each parameter it moves).
    const double larger = std::max(step_s, data_s);
    double power = std::min(step_s, data_s) / larger;
    for (int i = 0; i < kPipelineSmoothnessLog2; ++i) power *= power;
    double root = 1.0 + power;
    for (int i = 0; i < kPipelineSmoothnessLog2; ++i) root = std::sqrt(root);
    return larger * root;
}

double decode_rate_per_gpu(const Calibration& calibration, Loader loader, Framework framework, int vcpus,
                           int gpus_per_node) {
    switch (loader) {
        case Loader::cpu:
        case Loader::dali_cpu:
            return calibration.decode_rate(loader, framework) * vcpus / gpus_per_node;
        case Loader::dali:
            return calibration.decode_rate(loader, framework);
        case Loader::synthetic:
        case Loader::framework_default:
            break;
    }
    return std::numeric_limits<double>::infinity();  // nothing to decode
}

double tree_node_Bps(const ResolvedScenario& s) {
    // The chain inside the node moves the buffer twice through each GPU; with NVLink SHARP
    // (NCCL's NVLSTree) the switch reduces, as fast as one NVLS all-reduce (eq. V1).
    const int k = s.gpus_per_node;
    return s.nvls_bandwidth_Bps > 0 && k > 1 ? s.nvls_bandwidth_Bps * k / (k - 1.0) : s.intra_bandwidth_Bps;
}

double allreduce_time_s(const ResolvedScenario& s, Algorithm algorithm, double bytes, const Protocol& protocol) {
    const int k = s.gpus_per_node;
    const int m = s.nodes;
    const double f = protocol.bandwidth_factor;
    const double intra_Bps = f * s.intra_bandwidth_Bps;
    const double inter_Bps = f * s.inter_bandwidth_Bps;
    // The slowest link of a ring or tree through every GPU: the NIC across nodes, NVLink/PCIe
    // inside; nodes of one GPU have no link inside (a p3.2xlarge's intra_node_GBps is 0).
    const double bandwidth = m == 1 ? intra_Bps : k > 1 ? std::min(intra_Bps, inter_Bps) : inter_Bps;
    switch (algorithm) {
        case Algorithm::ring:
            return nccl_ring_allreduce_s(bytes, m, k, s.intra_latency_s, protocol.inter_latency_s, bandwidth);
        case Algorithm::tree:
            return nccl_tree_allreduce_s(bytes, m, k, s.intra_latency_s, protocol.inter_latency_s, inter_Bps,
                                         f * tree_node_Bps(s));
        case Algorithm::nvls:
            return nvls_allreduce_s(bytes, k, s.intra_latency_s, s.nvls_bandwidth_Bps);
        case Algorithm::hierarchical:
            // Inside a node: reduce-scatter, then all-gather over NVLink/PCIe (half a ring each way).
            return 2.0 * ring_reduce_scatter_s(bytes, k, s.intra_latency_s, s.intra_bandwidth_Bps) +
                   ring_allreduce_s(bytes, m, s.inter_latency_s, s.inter_bandwidth_Bps);
        case Algorithm::none:
        case Algorithm::push_pull:
            break;
    }
    return 0.0;
}

Protocol nccl_protocol(const ResolvedScenario& s, Algorithm algorithm, double bytes) {
    const Protocol single{s.inter_latency_s, 1.0};
    const bool two =
        s.inter_simple_latency_s > 0 && s.nodes > 1 && (algorithm == Algorithm::ring || algorithm == Algorithm::tree);
    if (!two) return single;
    const Protocol low_latency{s.inter_latency_s, kLowLatencyBandwidthFactor};
    const Protocol simple{s.inter_simple_latency_s, 1.0};
    return allreduce_time_s(s, algorithm, bytes, low_latency) < allreduce_time_s(s, algorithm, bytes, simple)
               ? low_latency
               : simple;
}

double allreduce_time_s(const ResolvedScenario& s, Algorithm algorithm, double bytes) {
    return allreduce_time_s(s, algorithm, bytes, nccl_protocol(s, algorithm, bytes));
}

Algorithm nccl_algorithm(const ResolvedScenario& s, double bytes) {
    if (s.nodes * s.gpus_per_node <= 1) return Algorithm::none;
    Algorithm best = Algorithm::ring;
    double best_s = allreduce_time_s(s, Algorithm::ring, bytes);
    auto consider = [&](Algorithm algorithm) {
        const double t = allreduce_time_s(s, algorithm, bytes);
        if (t < best_s) {
            best = algorithm;
            best_s = t;
        }
    };
    if (s.nodes > 1) consider(Algorithm::tree);
    if (s.nodes == 1 && s.nvls_bandwidth_Bps > 0) consider(Algorithm::nvls);
    return best;
}

Algorithm algorithm_for(const ResolvedScenario& s, double bytes) {
    switch (s.strategy) {
        case Strategy::nccl:
            return nccl_algorithm(s, bytes);
        case Strategy::ring:
            return Algorithm::ring;
        case Strategy::tree:
            return Algorithm::tree;
        case Strategy::hierarchical:
            return s.nodes > 1 ? Algorithm::hierarchical : Algorithm::ring;
        case Strategy::ps:
            return Algorithm::push_pull;
    }
    return Algorithm::none;
}

Communication communication(const ResolvedScenario& s) {
    const double g = s.gradient_bytes;
    const int k = s.gpus_per_node;
    const int m = s.nodes;
    Communication c;
    if (s.strategy == Strategy::ps) {
        // Keys are pipelined: one push/pull round per iteration, after the reduce inside the node.
        c.algorithm = Algorithm::push_pull;
        c.buckets = 1;
        const double intra = 2.0 * ring_reduce_scatter_s(g, k, s.intra_latency_s, s.intra_bandwidth_Bps);
        c.seconds = intra + (s.ps_colocated ? ps_colocated_s(g, m, s.inter_latency_s, s.inter_bandwidth_Bps)
                                            : ps_push_pull_s(g, m, s.ps_nodes, s.inter_latency_s, s.inter_bandwidth_Bps,
                                                             s.server_bandwidth_Bps));
        return c;
    }
    if (m * k <= 1) return c;
    // Eq. B1: the gradients leave in equal buckets of at most the fusion buffer, one all-reduce each.
    c.buckets = std::max(1, static_cast<int>(std::ceil(g / s.bucket_bytes)));
    const double bucket = g / c.buckets;
    c.algorithm = algorithm_for(s, bucket);
    c.seconds = c.buckets * allreduce_time_s(s, c.algorithm, bucket);
    return c;
}

double communication_time_s(const ResolvedScenario& s) { return communication(s).seconds; }

namespace {

/// The network part of a resolved scenario for `ranks` GPUs of `instance` (whole nodes first) and
/// the all-reduce `strategy`.
ResolvedScenario network_only(const InstanceSpec& instance, DeviceKind device, int ranks, int efa_adapters,
                              const NetworkParams& network, Strategy strategy) {
    ResolvedScenario s;
    s.strategy = strategy;
    s.gpus_per_node = std::max(1, std::min(ranks, instance.gpus));
    s.nodes = (ranks + s.gpus_per_node - 1) / s.gpus_per_node;
    set_network(s, instance, device, efa_adapters, network);
    if (!(s.intra_bandwidth_Bps > 0)) s.intra_bandwidth_Bps = std::numeric_limits<double>::infinity();
    return s;
}

}  // namespace

AllReducePrediction predict_allreduce(const InstanceSpec& instance, DeviceKind device, int ranks, int efa_adapters,
                                      double bytes, const NetworkParams& network, Strategy strategy) {
    // A test runs an all-reduce: parameter servers have none, so `ps` means NCCL's choice.
    const ResolvedScenario s = network_only(instance, device, ranks, efa_adapters, network,
                                            strategy == Strategy::ps ? Strategy::nccl : strategy);
    AllReducePrediction p;
    if (s.nodes * s.gpus_per_node <= 1) return p;
    p.algorithm = algorithm_for(s, bytes);
    p.seconds = allreduce_time_s(s, p.algorithm, bytes);
    p.bus_bandwidth_GBps = bytes / p.seconds * allreduce_bus_factor(ranks) / 1e9;
    return p;
}

double allreduce_bus_bandwidth_GBps(const InstanceSpec& instance, DeviceKind device, int ranks, int efa_adapters,
                                    const NetworkParams& network, Strategy strategy) {
    return predict_allreduce(instance, device, ranks, efa_adapters, kLargeMessageBytes, network, strategy)
        .bus_bandwidth_GBps;
}

AllReducePrediction predict_allreduce(const Catalog& catalog, const NetworkObservation& measured,
                                      const NetworkParams& network) {
    const InstanceSpec& instance = catalog.instance(measured.instance);
    return predict_allreduce(instance, catalog.device_kind(instance), measured.ranks, measured.efa_adapters,
                             measured.message_bytes > 0 ? measured.message_bytes : kLargeMessageBytes, network,
                             measured.algorithm);
}

double& ResolvedScenario::field(SensitiveField f) {
    switch (f) {
        case SensitiveField::time_per_image:
            return time_per_image_s;
        case SensitiveField::fixed:
            return fixed_s;
        case SensitiveField::sync_jitter:
            return sync_jitter;
        case SensitiveField::overlap:
            return overlap;
        case SensitiveField::intra_bandwidth:
            return intra_bandwidth_Bps;
        case SensitiveField::intra_latency:
            return intra_latency_s;
        case SensitiveField::inter_bandwidth:
            return inter_bandwidth_Bps;
        case SensitiveField::inter_latency:
            return inter_latency_s;
        case SensitiveField::server_bandwidth:
            return server_bandwidth_Bps;
        case SensitiveField::nvls_bandwidth:
            return nvls_bandwidth_Bps;
        case SensitiveField::decode:
            return decode_images_per_s_per_gpu;
        case SensitiveField::count:
            break;
    }
    return decode_images_per_s_per_gpu;
}

CostModel::CostModel(Catalog catalog, Calibration calibration)
    : catalog_(std::make_shared<const Catalog>(std::move(catalog))),
      calibration_(std::move(calibration)),
      workloads_(std::make_shared<WorkloadCache>()),
      curves_(std::make_shared<CurveCache>()) {
    build_covariance();
    build_framework_rooflines();
}

CostModel::CostModel(const CostModel& base, Calibration calibration)
    : catalog_(base.catalog_),
      calibration_(std::move(calibration)),
      workloads_(base.workloads_),
      curves_(std::make_shared<CurveCache>()) {
    build_covariance();
    build_framework_rooflines();
}

double CostModel::roofline_s(const GpuSpec& gpu, Precision precision, SoftwareStack stack, const Workload& work) const {
    const RooflinePrior& prior = calibration_.roofline;
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

void CostModel::build_framework_rooflines() {
    framework_rooflines_.clear();
    reference_training_flops_ = workload(kReferenceModel, kReferenceImageSize, 1000).training_flops_per_image;
    std::vector<std::pair<SoftwareLine, std::vector<RooflinePoint>>> points;
    for (const ComputeCurve& curve : calibration_.compute) {
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
        key.line = fit_framework_roofline(list, calibration_.roofline.relative_sigma);
        framework_rooflines_.push_back(key);
    }
    // Eq. C1b: the half-saturation batch per SM, fixed / (SMs x time per image), that runs at several
    // batches measured, per framework and stack and over all.
    std::map<std::pair<Framework, SoftwareStack>, std::pair<double, int>> sums;
    std::pair<double, int> all{0.0, 0};
    for (const ComputeCurve& curve : calibration_.compute) {
        const GpuSpec* gpu = catalog_->find_gpu(curve.gpu);
        if (curve.measured_batch > 0 || !gpu || gpu->sms <= 0 || !(curve.fixed_s > 0)) continue;
        const double per_sm = std::log(curve.fixed_s / (gpu->sms * curve.time_per_image_s));
        auto& [sum, count] = sums[{curve.framework, curve.stack}];
        sum += per_sm;
        ++count;
        all.first += per_sm;
        ++all.second;
    }
    saturation_levels_.clear();
    for (const auto& [key, entry] : sums) saturation_levels_[key] = std::exp(entry.first / entry.second);
    saturation_level_all_ = all.second > 0 ? std::exp(all.first / all.second) : 0.0;
}

const CostModel::SoftwareLine* CostModel::framework_roofline(const Software& software, Precision precision) const {
    for (const SoftwareLine& entry : framework_rooflines_) {
        if (entry.software == software && entry.family == family_of(precision)) return &entry;
    }
    return nullptr;
}

double CostModel::line_time_s(const SoftwareLine& software_line, const GpuSpec& gpu, Precision precision,
                              const Workload& work) const {
    // The line is fitted per image of the reference model; its floor scales with the work (eq. C5).
    const FrameworkRoofline& line = software_line.line;
    const double from_reference = work.training_flops_per_image / reference_training_flops_;
    return line.factor * roofline_s(gpu, precision, software_line.software.stack, work) + line.floor_s * from_reference;
}

TransferRatio CostModel::sibling_transfer(const ComputeCurve& sibling, const Software& software, const GpuSpec& gpu,
                                          Precision precision, const Workload& work) const {
    const std::vector<ComputeCurve>& curves = calibration_.compute;
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

double CostModel::half_saturation_batch(Framework framework, SoftwareStack stack, const GpuSpec& gpu) const {
    const auto found = saturation_levels_.find({framework, stack});
    const double per_sm = found != saturation_levels_.end() ? found->second : saturation_level_all_;
    return per_sm > 0 && gpu.sms > 0 ? per_sm * gpu.sms : 0.0;
}

void CostModel::build_covariance() {
    parameters_ = all_parameters(calibration_);
    parameter_rows_.clear();
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
        const auto kind = static_cast<std::size_t>(parameters_[i].kind);
        if (parameter_rows_.size() <= kind) parameter_rows_.resize(kind + 1);
        std::vector<int>& rows = parameter_rows_[kind];
        const auto index = static_cast<std::size_t>(parameters_[i].index);
        if (rows.size() <= index) rows.resize(index + 1, -1);
        if (rows[index] < 0) rows[index] = static_cast<int>(i);  // the first, as a search would find
    }
    const std::size_t n = parameters_.size() + 1;
    covariance_.assign(n * n, 0.0);
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
        const double sigma = group_sigma(calibration_, parameters_[i]);
        covariance_[i * n + i] = sigma * sigma;
    }
    covariance_[n * n - 1] = calibration_.roofline.relative_sigma * calibration_.roofline.relative_sigma;
    // The fitted block replaces the group sigmas of the parameters it names.
    const Uncertainty& u = calibration_.uncertainty;
    std::vector<std::size_t> rows;
    for (const std::string& name : u.parameters) {
        ParameterId id;
        if (!find_parameter(calibration_, name, &id)) {
            throw InputError("calibration: uncertainty.parameters names '" + name +
                             "', which this calibration has not");
        }
        rows.push_back(
            static_cast<std::size_t>(std::find(parameters_.begin(), parameters_.end(), id) - parameters_.begin()));
    }
    for (std::size_t a = 0; a < rows.size(); ++a) {
        for (std::size_t b = 0; b < rows.size(); ++b) {
            covariance_[rows[a] * n + rows[b]] = u.covariance[a * rows.size() + b];
        }
    }
}

int CostModel::parameter_row(ParameterKind kind, int index) const {
    const auto k = static_cast<std::size_t>(kind);
    if (k >= parameter_rows_.size() || index < 0) return -1;
    const std::vector<int>& rows = parameter_rows_[k];
    return static_cast<std::size_t>(index) < rows.size() ? rows[static_cast<std::size_t>(index)] : -1;
}

const Workload& CostModel::workload(const std::string& model, int image_size, int classes) const {
    std::lock_guard<std::mutex> lock(workloads_->mutex);
    const auto key = std::make_tuple(model, image_size, classes);
    auto found = workloads_->workloads.find(key);
    if (found == workloads_->workloads.end()) {
        found = workloads_->workloads.emplace(key, make_workload(build_resnet(model, image_size, classes))).first;
    }
    return found->second;
}

namespace {

/// "<flag> <value> is more than the <limit> <unit> epochcast models".
[[noreturn]] void beyond_limit(std::string_view flag, const std::string& value, double limit, std::string_view unit) {
    throw InputError(std::string(flag) + " " + value + " is more than the " + format_count(limit) + " " +
                     std::string(unit) + " epochcast models");
}

/// A count that must lie in [lowest, highest]: below, "<flag> must be at least <lowest> (got N)".
void check_count(std::string_view flag, std::int64_t value, std::int64_t lowest, std::int64_t highest,
                 std::string_view unit) {
    if (value < lowest) {
        throw InputError(std::string(flag) + " must be at least " + std::to_string(lowest) + " (got " +
                         std::to_string(value) + ")");
    }
    if (value > highest) beyond_limit(flag, std::to_string(value), static_cast<double>(highest), unit);
}

}  // namespace

void check_scenario_limits(const Scenario& scenario) {
    check_count("--nodes", scenario.nodes, 1, kMaxNodes, "nodes");
    if (scenario.gpus_per_node != 0)
        check_count("--gpus-per-node", scenario.gpus_per_node, 1, kMaxGpusPerNode, "GPUs per node");
    if (scenario.global_batch != 0) {
        check_count("--global-batch", scenario.global_batch, 1, kMaxGlobalBatch, "images per iteration");
    } else {
        check_count("--batch-per-gpu", scenario.batch_per_gpu, 1, kMaxBatchPerGpu, "images per GPU");
    }
    if (scenario.image_size > kMaxImageSizePx) {
        beyond_limit("--image-size", std::to_string(scenario.image_size), kMaxImageSizePx, "px");
    }
    check_count("--classes", scenario.classes, 1, kMaxClasses, "classes");
    check_count("--dataset-images", scenario.dataset_images, 1, kMaxDatasetImages, "images");
    if (scenario.target_top1_percent == 0) {
        if (!std::isfinite(scenario.epochs)) {
            throw InputError("--epochs must be a finite number (got " + shortest(scenario.epochs) + ")");
        }
        if (!(scenario.epochs > 0))
            throw InputError("--epochs must be positive (got " + shortest(scenario.epochs) + ")");
        if (scenario.epochs > kMaxEpochs) beyond_limit("--epochs", shortest(scenario.epochs), kMaxEpochs, "epochs");
    }
    if (scenario.efa_adapters < -1) {
        throw InputError("--efa-adapters must be 0 or more (got " + std::to_string(scenario.efa_adapters) + ")");
    }
    if (scenario.efa_adapters > kMaxEfaAdapters) {
        beyond_limit("--efa-adapters", std::to_string(scenario.efa_adapters), kMaxEfaAdapters, "adapters per node");
    }
    check_count("--ps-nodes", scenario.ps_nodes, 0, kMaxNodes, "server nodes");
    if (!(scenario.fusion_threshold_MiB >= 0) || !std::isfinite(scenario.fusion_threshold_MiB)) {
        throw InputError("the fusion threshold must be positive (0: the framework's bucket)");
    }
    check_spot_limits(scenario);
    check_run_cost_limits(scenario);
}

void check_run_cost_limits(const Scenario& scenario) {
    if (!(scenario.storage_tib >= 0) || !std::isfinite(scenario.storage_tib)) {
        throw InputError("--storage-tib must be a positive number of TiB (got " + shortest(scenario.storage_tib) + ")");
    }
    if (scenario.storage_tib > kMaxStorageTiB) {
        beyond_limit("--storage-tib", shortest(scenario.storage_tib), kMaxStorageTiB, "TiB");
    }
    if (!(scenario.storage_tier_MBps_per_TiB >= 0) || !std::isfinite(scenario.storage_tier_MBps_per_TiB)) {
        throw InputError("--storage-tier must be a throughput tier in MB/s per TiB (got " +
                         shortest(scenario.storage_tier_MBps_per_TiB) + ")");
    }
    check_count("--eval-images", scenario.eval_images, 0, kMaxEvalImages, "evaluation images");
    if (scenario.eval_every_epochs) {
        check_count("--eval-every", *scenario.eval_every_epochs, 0, kMaxEvalEveryEpochs, "epochs between evaluations");
    }
    if (scenario.startup_s != -1 && !(scenario.startup_s >= 0 && scenario.startup_s <= kMaxCheckpointIntervalS)) {
        throw InputError("--startup must be a duration of 0 to 3650d (got " + shortest(scenario.startup_s) + " s)");
    }
}

void check_given_spot_rate(double rate) {
    if (!(rate >= 0 && rate <= kMaxSpotInterruptionsPerNodeHour)) {
        throw InputError("--spot-interruptions-per-node-hour must be 0 to " +
                         shortest(kMaxSpotInterruptionsPerNodeHour) + " (got " + shortest(rate) + ")");
    }
}

void check_spot_limits(const Scenario& scenario) {
    const double rate = scenario.spot_interruptions_per_node_hour;
    if (rate != -1) check_given_spot_rate(rate);
    if (!(scenario.checkpoint_interval_s >= 0 && scenario.checkpoint_interval_s <= kMaxCheckpointIntervalS)) {
        throw InputError("--checkpoint-every must be a positive duration of at most 3650d (got " +
                         shortest(scenario.checkpoint_interval_s) + " s)");
    }
    if (!(scenario.spot_replacement_wait_s >= 0 && scenario.spot_replacement_wait_s <= kMaxCheckpointIntervalS)) {
        throw InputError("--spot-replacement-wait must be a duration of 0 to 3650d (got " +
                         shortest(scenario.spot_replacement_wait_s) + " s)");
    }
}

void check_prediction(const Prediction& p) {
    auto figures = [](auto&&... lists) {
        std::vector<PredictionFigure> all;
        (all.insert(all.end(), std::begin(lists), std::end(lists)), ...);
        return all;
    };
    for (const PredictionFigure& figure : figures(kPredictionFigures, kRunCostFigures)) {
        const double value = figure.get(p);
        if (std::isfinite(value) && value >= 0) continue;
        const std::string name = figure.name;
        if (name == "interval_low" || name == "interval_high") {
            throw InfeasibleError("the calibration's uncertainty gives no finite throughput band for this scenario (" +
                                  name + " " + shortest(value) + ")");
        }
        throw InfeasibleError("the model gives " + name + " " + shortest(value) +
                              " for this scenario, not a finite, non-negative figure");
    }
    if (!(p.throughput_images_per_s > 0)) throw InfeasibleError("the model gives no throughput for this scenario");
    if (!(p.interval.low <= p.throughput_images_per_s && p.throughput_images_per_s <= p.interval.high)) {
        throw InfeasibleError("the calibration's uncertainty gives a throughput band (" + shortest(p.interval.low) +
                              " - " + shortest(p.interval.high) + " img/s) that does not hold the throughput");
    }
}

Prediction CostModel::checked_predict(const ResolvedScenario& scenario) const {
    Prediction p = predict(scenario);
    if (p.spot.modelled && !p.spot.finishes) {
        const SpotRun& x = p.spot;
        std::string message = "on spot this run never finishes: ";
        message += std::to_string(scenario.nodes + scenario.ps_nodes);
        message += " nodes are interrupted ";
        message += shortest(x.cluster_interruptions_per_hour);
        message += " times an hour and each interruption costs ";
        message += shortest(x.loss_per_interruption_s / 60.0);
        message +=
            " min (restart, replacement wait, half a checkpoint interval of lost work); give fewer nodes, a "
            "shorter --checkpoint-every, ";
        if (x.elastic) {  // going on without the lost node would finish
            message += "--elastic-spot (it would take about " +
                       std::to_string(std::lround(x.elastic_time_to_train_s / 60.0)) + " min), ";
        }
        message += "or --pricing on-demand";
        throw InfeasibleError(message);
    }
    if (scenario.spot_elastic && !p.spot.modelled) {
        throw InfeasibleError(
            "--elastic-spot needs an interruption rate, and the catalog gives none for this instance: give "
            "--spot-interruptions-per-node-hour");
    }
    if (scenario.spot_elastic && !p.spot.elastic_priced) {
        throw InfeasibleError(
            "on spot this run cannot go on elastic: a node is lost again within the wait for its replacement "
            "(" +
            shortest(p.spot.interruptions_per_node_hour) + " interruptions per node-hour, a " +
            shortest(p.spot.replacement_wait_s / 60.0) +
            " min wait), or it would never finish so; leave out "
            "--elastic-spot, or give a shorter --spot-replacement-wait");
    }
    check_prediction(p);
    return p;
}

WorkerNodes resolve_workers(const Catalog& catalog, const Scenario& scenario) {
    const InstanceSpec& instance = catalog.instance(scenario.instance);
    if (instance.gpus == 0) {
        throw InputError("instance '" + instance.name +
                         "' has no GPUs: it can serve as --ps-instance, not as a worker");
    }
    const GpuSpec& gpu = catalog.gpu_of(instance);
    if (scenario.efa_adapters > instance.efa_adapters) {
        throw InputError("--efa-adapters " + std::to_string(scenario.efa_adapters) + " is more than " + instance.name +
                         " has (" + std::to_string(instance.efa_adapters) + ")");
    }
    const int efa = scenario.efa_adapters < 0 ? instance.efa_adapters : scenario.efa_adapters;
    const int k = scenario.gpus_per_node == 0 ? instance.gpus : scenario.gpus_per_node;
    if (k > kMaxGpusPerNode) {
        throw InputError("instance '" + instance.name + "' has " + std::to_string(k) + " GPUs, more than the " +
                         format_count(kMaxGpusPerNode) + " per node epochcast models");
    }
    if (k > instance.gpus) {
        throw InputError("--gpus-per-node " + std::to_string(k) + " is more than " + instance.name + " has (" +
                         std::to_string(instance.gpus) + ")");
    }
    if (k > 1 && !(instance.intra_node_GBps > 0)) {
        throw InputError("catalog entry '" + instance.name + "' gives no intra_node_GBps for its " +
                         std::to_string(instance.gpus) + " GPUs");
    }
    return {&instance, &gpu, k, efa};
}

const InstanceSpec* parameter_server_instance(const Catalog& catalog, const Scenario& scenario) {
    if (scenario.strategy != Strategy::ps) {
        if (scenario.ps_nodes != 0 || scenario.ps_colocated || !scenario.ps_instance.empty()) {
            throw InputError("--ps-nodes, --ps-instance and --ps-colocated go with --strategy ps (strategy is " +
                             std::string(to_string(scenario.strategy)) + ")");
        }
        return nullptr;
    }
    if (scenario.ps_colocated && scenario.ps_nodes > 0) {
        throw InputError("--ps-colocated puts one server on each worker: leave out --ps-nodes");
    }
    if (scenario.ps_colocated) return nullptr;
    if (scenario.ps_nodes < 1) {
        throw InputError(
            "--strategy ps needs parameter servers: --ps-nodes N (at least 1) with --ps-instance, "
            "or --ps-colocated");
    }
    if (scenario.ps_instance.empty()) {
        throw InputError("--strategy ps with --ps-nodes needs --ps-instance (e.g. m4.16xlarge)");
    }
    return &catalog.instance(scenario.ps_instance);
}

void check_precision(const GpuSpec& gpu, Precision precision) {
    if (peak_flops_per_s(gpu, precision) > 0) return;
    std::string available = "fp32";
    if (gpu.fp16_tflops > 0) available += " or amp";
    if (gpu.bf16_tflops > 0) available += " or bf16";
    throw InputError("GPU " + gpu.name + " has no " + std::string(to_string(precision)) +
                     " arithmetic; use --precision " + available);
}

double checked_global_batch(const Scenario& scenario, int gpus_per_node, int batch_per_gpu) {
    if (batch_per_gpu < 1) {
        throw InputError("the per-GPU batch must be at least 1 (got " + std::to_string(batch_per_gpu) + ")");
    }
    const double global_batch = static_cast<double>(scenario.nodes) * gpus_per_node * batch_per_gpu;
    if (global_batch > kMaxGlobalBatch) {
        throw InputError("a global batch of " + format_count(global_batch) + " images (" +
                         std::to_string(scenario.nodes) + " nodes x " + std::to_string(gpus_per_node) + " GPUs x " +
                         std::to_string(batch_per_gpu) + ") is more than the " + format_count(kMaxGlobalBatch) +
                         " images per iteration epochcast models");
    }
    if (global_batch > static_cast<double>(scenario.dataset_images)) {
        throw InputError("a global batch of " + format_count(global_batch) + " images is more than the dataset's " +
                         format_count(static_cast<double>(scenario.dataset_images)) +
                         ": one iteration would exceed an epoch");
    }
    return global_batch;
}

MemoryEstimate checked_training_memory(const Workload& work, const std::string& model, Precision precision,
                                       int batch_per_gpu, const GpuSpec& gpu) {
    const MemoryEstimate memory = training_memory(work, precision, batch_per_gpu);
    const double capacity = gpu.memory_gib * kBytesPerGiB;
    if (memory.total_bytes() > capacity) {
        const int fits = largest_batch_that_fits(work, precision, capacity);
        throw InfeasibleError("batch " + std::to_string(batch_per_gpu) + " per GPU of " + model + " at " +
                              std::string(to_string(precision)) + " needs " + format_gib(memory.total_bytes()) +
                              " GiB with the CUDA context and the allocator's slack, more than the " +
                              format_gib(capacity) + " GiB of a " + gpu.name +
                              (fits > 0 ? " (the largest batch that fits is " + std::to_string(fits) + ")"
                                        : " (not even a batch of 1 fits)"));
    }
    return memory;
}

FabricLatency cross_node_latency(Interconnect worker_fabric, const InstanceSpec* server, const NetworkParams& network) {
    FabricLatency latency{worker_fabric, network.fabric(worker_fabric).latency_s};
    if (!server) return latency;
    const Interconnect server_fabric = fabric_in_use(*server, -1);
    if (network.fabric(server_fabric).latency_s > latency.latency_s) {
        latency = {server_fabric, network.fabric(server_fabric).latency_s};
    }
    return latency;
}

NetworkParameter node_network_parameter(const InstanceSpec& instance, int efa_adapters, const NetworkParams& network) {
    const Interconnect fabric = fabric_in_use(instance, efa_adapters);
    const int index = static_cast<int>(fabric);
    const FabricParams& params = network.fabric(fabric);
    if (params.cap_GBps > 0 && node_network_Bps(instance, efa_adapters, network) >= params.cap_GBps * 1e9) {
        return {{ParameterKind::fabric_cap, index}, params.cap_GBps};
    }
    return {{ParameterKind::fabric_efficiency, index}, params.efficiency};
}

/// Eq. E2's K: --eval-every where given, else the cadence of the recipe the epochs come from
/// (--target-top1) where it publishes one, else none.
void set_evaluation_cadence(ResolvedScenario& r, const Convergence& convergence, const Scenario& scenario) {
    const int recipes =
        r.epochs_recipe >= 0 ? convergence.recipes[static_cast<std::size_t>(r.epochs_recipe)].eval_every_epochs : 0;
    r.eval_every_epochs = scenario.eval_every_epochs.value_or(recipes);
    r.eval_every_from_recipe = !scenario.eval_every_epochs && recipes > 0;
}

void set_epochs(ResolvedScenario& r, const Convergence& convergence, const Scenario& scenario, double global_batch) {
    r.epochs = r.epochs_low = r.epochs_high = scenario.epochs;
    if (scenario.target_top1_percent != 0) {
        const std::string& name = scenario.recipe.empty() ? convergence.default_recipe : scenario.recipe;
        r.epochs_recipe = convergence.recipe_index(name, scenario.model);
        const EpochsToTarget needed = epochs_to_target(convergence.recipes[static_cast<std::size_t>(r.epochs_recipe)],
                                                       global_batch, scenario.target_top1_percent, scenario.model,
                                                       scenario.dataset_images, scenario.image_size);
        r.epochs = needed.epochs;
        r.epochs_low = needed.epochs_low;
        r.epochs_high = needed.epochs_high;
        r.epochs_basis = needed.basis;
    }
    const double largest_published = convergence.largest_published_batch(scenario.model);
    r.global_batch_beyond_published = largest_published > 0 && global_batch > largest_published;
}

double cluster_price_usd_per_hour(const Scenario& scenario, const InstanceSpec& worker, const InstanceSpec* server) {
    auto hourly = [&](const InstanceSpec& spec) {
        if (!spec.priced()) return 0.0;  // a machine you own: no price by the hour (cluster_priced says so)
        const Price* price = spec.price(scenario.pricing);
        if (!price) {
            throw InputError("the catalog has no " + std::string(to_string(scenario.pricing)) + " price for '" +
                             spec.name + "' (it is sold as: " + spec.pricings_text() + ")");
        }
        return price->usd_per_hour;
    };
    return scenario.nodes * hourly(worker) + (server ? scenario.ps_nodes * hourly(*server) : 0.0);
}

bool cluster_priced(const InstanceSpec& worker, const InstanceSpec* server) {
    return worker.priced() && (!server || server->priced());
}

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// What the store bills and delivers, from its entry in model/storage.json.
struct StoreBounds {
    double aggregate_read_Bps = 0;  ///< 0: no bound
    double aggregate_write_Bps = 0;
    double capacity_GB = 0;  ///< billed by the month (fsx-lustre: provisioned; else the data held)
    double usd_per_GB_month = 0;
};

/// fsx-lustre's tier and capacity (eq. F2's aggregate: the tier's baseline disk throughput, under
/// its network throughput, per TiB provisioned); the others' figures as the data gives them.
StoreBounds store_bounds(const StorageCatalog& data, const StoreSpec& spec, const Scenario& scenario, double held_bytes,
                         double image_bytes) {
    StoreBounds b;
    b.aggregate_read_Bps = spec.aggregate_read_Bps;
    b.aggregate_write_Bps = spec.aggregate_write_Bps;
    b.capacity_GB = held_bytes / kBytesPerGiB;
    b.usd_per_GB_month = spec.usd_per_GB_month;
    if (spec.get_per_s_per_prefix > 0) b.aggregate_read_Bps = spec.get_per_s_per_prefix * spec.prefixes * image_bytes;
    if (spec.tiers.empty()) return b;
    const StorageTier& tier = data.tier(spec, scenario.storage_tier_MBps_per_TiB);
    const double tib = data.capacity_tib(spec, scenario.storage_tib);
    if (tib * 1024 * kBytesPerGiB < held_bytes) {
        throw InputError("--storage-tib " + shortest(tib) + " cannot hold the dataset's " + format_gib(held_bytes) +
                         " GiB; give at least " + shortest(std::ceil(held_bytes / (1024 * kBytesPerGiB) * 10) / 10) +
                         " TiB");
    }
    b.aggregate_read_Bps = tib * std::min(tier.disk_read_MBps_per_TiB, tier.network_MBps_per_TiB) * 1e6;
    b.aggregate_write_Bps = tib * tier.MBps_per_TiB * 1e6;
    b.capacity_GB = tib * 1024;
    b.usd_per_GB_month = tier.usd_per_GB_month;
    return b;
}

}  // namespace

void set_storage(ResolvedScenario& r, const Scenario& scenario, const InstanceSpec& worker, double checkpoint_bytes) {
    r.storage = scenario.storage;
    r.storage_images_per_s_per_gpu = r.storage_first_epoch_images_per_s_per_gpu = r.storage_deliverable_Bps = kInfinity;
    r.page_cache_hit_fraction = 0;
    if (scenario.storage != Store::fsx_lustre &&
        (scenario.storage_tib != 0 || scenario.storage_tier_MBps_per_TiB != 0)) {
        throw InputError("--storage-tib and --storage-tier go with --storage fsx-lustre (got --storage " +
                         std::string(to_string(scenario.storage)) + ")");
    }
    if (scenario.storage == Store::none) return;
    const StorageCatalog& data = StorageCatalog::built_in();
    const StoreSpec& spec = data.store(scenario.storage);
    r.image_bytes = data.train_image_bytes();
    const double train_bytes = r.dataset_images * r.image_bytes;
    // The dataset held and staged is the training set and its validation set (seed 004 copies both);
    // the validation set is read once per evaluation pass (none unless the run evaluates).
    const double eval_bytes = r.eval_images * data.val_image_bytes();
    const StoreBounds bounds = store_bounds(data, spec, scenario, train_bytes + eval_bytes, r.image_bytes);
    const double network_Bps = worker.network_gbps * 1e9 / kBitsPerByte;
    const double per_client_Bps = spec.per_client_is_instance_network ? network_Bps : spec.per_client_Bps;

    // Reads (eqs. F2, F3)
    r.storage_deliverable_Bps = store_deliverable_Bps(bounds.aggregate_read_Bps, per_client_Bps, r.nodes);
    r.storage_first_epoch_images_per_s_per_gpu =
        store_images_per_s_per_gpu(r.storage_deliverable_Bps, r.image_bytes, r.nodes * r.gpus_per_node);
    // The page cache (eq. F7): what each node's RAM may hold of the images the run reads (the
    // validation set too where it evaluates) serves that share of its reads once warm.
    const double read_bytes = train_bytes + (r.eval_every_epochs > 0 ? eval_bytes : 0.0);
    r.page_cache_hit_fraction =
        page_cache_hit_fraction(spec.page_cache_fraction_of_ram * worker.memory_gib * kBytesPerGiB, read_bytes);
    r.storage_images_per_s_per_gpu =
        warm_store_images_per_s_per_gpu(r.storage_first_epoch_images_per_s_per_gpu, r.page_cache_hit_fraction);

    // The checkpoint (rank 0 writes it): one client's bound under the store's write bound; a local
    // copy keeps the calibration's write rate.
    r.checkpoint_GB = checkpoint_bytes / kBytesPerGiB;
    if (scenario.storage != Store::local_nvme) {
        const double write_Bps = store_deliverable_Bps(bounds.aggregate_write_Bps, per_client_Bps, 1);
        if (std::isfinite(write_Bps)) r.checkpoint_s = checkpoint_bytes / write_Bps;
    }

    // Money (eqs. F5, F6)
    r.storage_capacity_GB = spec.usd_per_GB_month > 0 || !spec.tiers.empty() ? bounds.capacity_GB : 0.0;
    r.storage_usd_per_GB_month = bounds.usd_per_GB_month;
    r.storage_read_GB_per_epoch = train_bytes / kBytesPerGiB;
    r.storage_read_GB_per_eval = eval_bytes / kBytesPerGiB;
    if (!spec.staged) {
        r.storage_gets_per_epoch = r.dataset_images;  // one GET per image streamed
        r.storage_gets_per_eval = r.eval_images;
    }
    r.storage_usd_per_GB_read = spec.usd_per_GB_read;
    r.storage_usd_per_GB_written = spec.usd_per_GB_written;
    r.storage_usd_per_1000_get = spec.usd_per_1000_get;
    r.storage_usd_per_1000_put = spec.usd_per_1000_put;

    // Staging (eq. F4): every worker its own copy at once, or one copy by one client, through that
    // client's network under the store's write bound.
    if (spec.staged) {
        const double files = r.dataset_images + r.eval_images;
        const double bandwidth_Bps =
            store_deliverable_Bps(spec.staged_on_workers ? 0.0 : bounds.aggregate_write_Bps, network_Bps, 1);
        r.staging_s = staging_time_s(files, train_bytes + eval_bytes, data.staging_per_file_s,
                                     data.staging_concurrent_files, bandwidth_Bps);
        r.staging_on_workers = spec.staged_on_workers;
        const double copies = spec.staged_on_workers ? r.nodes : 1.0;
        r.staging_usd = transfer_usd(0, 0, copies * (train_bytes + eval_bytes) / kBytesPerGiB, spec.usd_per_GB_written,
                                     copies * files, data.store(Store::s3).usd_per_1000_get, 0, 0);
    }
}

/// The interruption rate of a spot cluster: the scenario's, else the catalog's band for its workers
/// (and dedicated servers: the higher of the two); none known, no spot model (eqs. X0-X6).
void set_spot(ResolvedScenario& r, const Scenario& scenario, const InstanceSpec& worker, const InstanceSpec* server) {
    if (scenario.spot_elastic) {
        if (scenario.pricing != Pricing::spot) throw InputError("--elastic-spot needs --pricing spot");
        if (scenario.nodes < kElasticSpotMinNodes) {
            throw InputError("--elastic-spot needs " + std::to_string(kElasticSpotMinNodes) +
                             " nodes or more: a run on one node has none to go on without");
        }
        if (server) throw InputError("--elastic-spot needs no dedicated parameter servers: each one must stay");
    }
    r.spot_elastic = scenario.spot_elastic;
    if (scenario.pricing != Pricing::spot) return;
    double rate = scenario.spot_interruptions_per_node_hour;
    if (rate < 0) {
        auto catalog_rate = [](const InstanceSpec& spec) {
            const Price* price = spec.price(Pricing::spot);
            return price && price->interruptions ? price->interruptions->per_node_hour : -1.0;
        };
        rate = catalog_rate(worker);
        if (server && rate >= 0) rate = std::max(rate, catalog_rate(*server));
    }
    if (rate < 0) return;
    r.spot_modelled = true;
    r.spot_interruptions_per_node_hour = rate;
    r.checkpoint_interval_s = scenario.checkpoint_interval_s;
    r.spot_replacement_wait_s = scenario.spot_replacement_wait_s;
}

FieldSensitivity CostModel::sensitivity(ParameterKind kind, int index, double value) const {
    return {parameter_row(kind, index), log_value_per_coordinate(coordinate_of(kind), value)};
}

CostModel::ComputeCurveChoice CostModel::carried_curve(const ComputeCurve& curve, const GpuSpec& gpu,
                                                       Precision precision, const Workload& work,
                                                       CurveOrigin origin) const {
    ComputeCurveChoice c;
    c.origin = origin;
    const int index = static_cast<int>(&curve - calibration_.compute.data());
    c.time_per_image = sensitivity(ParameterKind::curve_time_per_image, index, curve.time_per_image_s);
    c.fixed = sensitivity(ParameterKind::curve_fixed, index, curve.fixed_s);
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
    const double depth_sigma = flops_ratio != 1.0 ? 0.5 * calibration_.roofline.relative_sigma : 0.0;
    const double variant_sigma = kMemoryVariantSigmaPerLogRatio * std::abs(std::log(variant_ratio));
    const double family_sigma = origin == CurveOrigin::precision_family ? kPrecisionFamilySigma : 0.0;
    c.transfer_sigma =
        std::sqrt(depth_sigma * depth_sigma + variant_sigma * variant_sigma + family_sigma * family_sigma);
    return c;
}

CostModel::ComputeCurveChoice CostModel::remembered_compute_curve(const GpuSpec& gpu, const Scenario& scenario,
                                                                  const Workload& work) const {
    const auto key =
        std::make_tuple(&gpu, &work, scenario.precision, scenario.framework, scenario.stack, scenario.memory_format);
    {
        std::lock_guard<std::mutex> lock(curves_->mutex);
        if (const auto found = curves_->choices.find(key); found != curves_->choices.end()) return found->second;
    }
    const ComputeCurveChoice choice = compute_curve(gpu, scenario, work);
    std::lock_guard<std::mutex> lock(curves_->mutex);
    curves_->choices.emplace(key, choice);
    return choice;
}

CostModel::ComputeCurveChoice CostModel::compute_curve(const GpuSpec& gpu, const Scenario& scenario,
                                                       const Workload& work) const {
    // Eq. C0, the fallbacks in order:
    //  1. measured          this chip, software and precision (another memory variant: eq. C7)
    //  2. precision family  this chip and software, another precision of equal tensor peak (3%)
    //  3. other software    this chip, another framework, stack or layout by eq. C4's ratio (or
    //                       another precision family by eq. C4b's), pooled with 4 where both
    //                       exist (eq. C6)
    //  4. other GPUs        this software's curves on other chips along their rooflines (eq. C5)
    //  5. roofline          eq. C3 alone
    const Software software =
        software_of(scenario.framework, scenario.stack, scenario.memory_format, scenario.precision);
    const std::vector<ComputeCurve>& curves = calibration_.compute;
    if (const OwnCurve own = own_curve(curves, *catalog_, gpu, scenario.precision, software); own.curve) {
        return carried_curve(*own.curve, gpu, scenario.precision, work,
                             own.exact_precision ? CurveOrigin::measured : CurveOrigin::precision_family);
    }
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
            carried_curve(*sibling, gpu, scenario.precision, work, CurveOrigin::other_software);
        const TransferRatio transfer = sibling_transfer(*sibling, software, gpu, scenario.precision, work);
        const double sibling_log = std::log(carried.time_per_image_s * transfer.ratio);
        const double sibling_sigma = std::hypot(transfer.relative_sigma, carried.transfer_sigma);
        const double weight = line ? pooled_weight(sibling_sigma, line->relative_sigma) : 1.0;  // eq. C6
        c = carried;
        c.time_per_image.log_field_per_coordinate *= weight;
        c.time_per_image_s = std::exp(weight * sibling_log + (1.0 - weight) * line_log);
        c.transfer_sigma = line ? pooled_sigma(sibling_sigma, line->relative_sigma) : sibling_sigma;
        c.origin = line ? CurveOrigin::pooled : CurveOrigin::other_software;
        // The fixed time is this software's (eq. C1b) where its curves measured one, else the sibling's.
        // Eq. C1c: a sibling measured at one batch b0 carries its time there, which is what was
        // measured, and this software's half-saturation batch splits it.
        if (saturation_levels_.contains({scenario.framework, scenario.stack}) && gpu.sms > 0) {
            const double b_half = half_saturation_batch(scenario.framework, scenario.stack, gpu);
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
        const double roofline_sigma = calibration_.roofline.relative_sigma;
        if (roofline_sigma > 0) {
            c.time_per_image = {static_cast<int>(parameters_.size()), line->relative_sigma / roofline_sigma};
        } else {
            c.transfer_sigma = line->relative_sigma;
        }
        c.origin = CurveOrigin::other_gpus;
    } else {
        c.time_per_image_s = roofline;
        c.time_per_image = {static_cast<int>(parameters_.size()), 1.0};
        c.origin = CurveOrigin::roofline;
    }
    // Without a curve of this chip, the fixed time is the batch that half fills this GPU at the
    // per-image time (eq. C1b), else the framework's overhead; its uncertainty is the overhead's.
    const FrameworkProfile& profile = calibration_.framework(scenario.framework);
    const double b_half = half_saturation_batch(scenario.framework, scenario.stack, gpu);
    c.fixed_s = b_half > 0 ? b_half * c.time_per_image_s : profile.fixed_overhead_s;
    c.fixed =
        sensitivity(ParameterKind::fixed_overhead, static_cast<int>(scenario.framework), profile.fixed_overhead_s);
    return c;
}

std::array<FieldSensitivity, kSensitiveFields> CostModel::field_sensitivities(
    const ResolvedScenario& r, const ComputeCurveChoice& curve, Framework framework, const WorkerNodes& workers,
    const InstanceSpec* server, Interconnect latency_fabric) const {
    std::array<FieldSensitivity, kSensitiveFields> s{};
    auto at = [&s](SensitiveField field) -> FieldSensitivity& { return s[static_cast<std::size_t>(field)]; };
    at(SensitiveField::time_per_image) = curve.time_per_image;
    at(SensitiveField::fixed) = curve.fixed;

    const FrameworkProfile& profile = calibration_.framework(framework);
    const int framework_index = static_cast<int>(framework);
    at(SensitiveField::sync_jitter) = sensitivity(ParameterKind::sync_jitter, framework_index, profile.sync_jitter);
    // CPU ranks overlap nothing and have no link efficiency (resolve()).
    const bool cpu_ranks = workers.gpu->kind == DeviceKind::cpu;
    if (!cpu_ranks) {
        at(SensitiveField::overlap) =
            r.strategy == Strategy::ps
                ? sensitivity(ParameterKind::ps_overlap, framework_index, profile.ps_overlap)
                : sensitivity(ParameterKind::allreduce_overlap, framework_index, profile.allreduce_overlap);
    }

    const NetworkParams& net = calibration_.network;
    const int link_index = static_cast<int>(r.intra_link);
    if (!cpu_ranks) {
        at(SensitiveField::intra_bandwidth) =
            sensitivity(ParameterKind::link_efficiency, link_index, net.link(r.intra_link).efficiency);
    }
    at(SensitiveField::intra_latency) = sensitivity(ParameterKind::link_latency, link_index, r.intra_latency_s);
    if (r.nvls_bandwidth_Bps > 0) {
        at(SensitiveField::nvls_bandwidth) = sensitivity(ParameterKind::nvls_efficiency, 0, net.nvls_efficiency);
    }
    auto bandwidth = [&](const InstanceSpec& spec, int adapters) {
        const NetworkParameter parameter = node_network_parameter(spec, adapters, net);
        return sensitivity(parameter.id.kind, parameter.id.index, parameter.value);
    };
    at(SensitiveField::inter_bandwidth) = bandwidth(*workers.instance, workers.efa_adapters);
    at(SensitiveField::inter_latency) =
        sensitivity(ParameterKind::fabric_latency, static_cast<int>(latency_fabric), r.inter_latency_s);
    if (server) at(SensitiveField::server_bandwidth) = bandwidth(*server, -1);

    if (const double rate = calibration_.decode_rate(r.loader, framework); rate > 0) {
        at(SensitiveField::decode) = r.loader == Loader::cpu
                                         ? sensitivity(ParameterKind::cpu_decode_rate, framework_index, rate)
                                         : sensitivity(ParameterKind::decode_rate, static_cast<int>(r.loader), rate);
    }
    return s;
}

ResolvedScenario CostModel::resolve(const Scenario& scenario) const {
    // Validation: the scenario against epochcast's limits, the catalog and the GPU.
    check_scenario_limits(scenario);
    const WorkerNodes workers = resolve_workers(*catalog_, scenario);
    const InstanceSpec& instance = *workers.instance;
    const GpuSpec& gpu = *workers.gpu;
    const int k = workers.gpus_per_node;
    const InstanceSpec* server = parameter_server_instance(*catalog_, scenario);
    const Workload& work = workload(scenario.model, scenario.image_size, scenario.classes);
    check_precision(gpu, scenario.precision);

    // Memory
    const int batch = per_gpu_batch(scenario, instance.gpus);
    const double global_batch = checked_global_batch(scenario, k, batch);
    const MemoryEstimate memory = checked_training_memory(work, scenario.model, scenario.precision, batch, gpu);

    ResolvedScenario r;
    r.nodes = scenario.nodes;
    r.gpus_per_node = k;
    r.batch_per_gpu = batch;
    r.strategy = scenario.strategy;
    r.ps_nodes = server ? scenario.ps_nodes : 0;
    r.ps_colocated = scenario.strategy == Strategy::ps && scenario.ps_colocated;

    // Compute curve
    const ComputeCurveChoice curve = remembered_compute_curve(gpu, scenario, work);
    r.time_per_image_s = curve.time_per_image_s;
    r.fixed_s = curve.fixed_s;
    r.transfer_sigma = curve.transfer_sigma;
    r.curve_origin = curve.origin;

    // Framework profile. CPU ranks move their gradients with the cores that compute (docs/model.md,
    // "CPU ranks"): nothing overlaps (overlap 0), and the host's intra_node_GBps is its measured
    // all-reduce bus bandwidth, to which no link efficiency applies.
    const FrameworkProfile& profile = calibration_.framework(scenario.framework);
    const bool cpu_ranks = gpu.kind == DeviceKind::cpu;
    r.sync_jitter = profile.sync_jitter;
    r.straggler_factor = straggler_factor(scenario.nodes * k);
    r.overlap = cpu_ranks ? 0.0 : scenario.strategy == Strategy::ps ? profile.ps_overlap : profile.allreduce_overlap;
    r.node_overlap = cpu_ranks ? 0.0 : profile.allreduce_overlap;

    // Network (eqs. N1-N3)
    const NetworkParams& net = calibration_.network;
    set_network(r, instance, gpu.kind, workers.efa_adapters, net);
    r.gradient_bytes = gradient_bytes(work, scenario.precision);
    r.bucket_bytes =
        (scenario.fusion_threshold_MiB > 0 ? scenario.fusion_threshold_MiB : profile.bucket_MiB) * 1024.0 * 1024.0;
    if (server) r.server_bandwidth_Bps = node_network_Bps(*server, -1, net);
    const FabricLatency latency = cross_node_latency(r.interconnect, server, net);
    r.inter_latency_s = latency.latency_s;

    // Input pipeline (eq. D1)
    r.loader = scenario.loader == Loader::framework_default ? default_loader(scenario.framework, scenario.stack)
                                                            : scenario.loader;
    r.decode_images_per_s_per_gpu = decode_rate_per_gpu(calibration_, r.loader, scenario.framework, instance.vcpus, k);

    // Uncertainty (eq. U1)
    r.sensitivity = field_sensitivities(r, curve, scenario.framework, workers, server, latency.fabric);

    // Run (eqs. K1-K3)
    r.dataset_images = static_cast<double>(scenario.dataset_images);
    set_epochs(r, *convergence_, scenario, global_batch);
    const double checkpoint_bytes = work.parameters * kCheckpointBytesPerParameter;
    r.checkpoint_s = checkpoint_bytes / (calibration_.checkpoint_write_GBps * 1e9);
    r.startup_s = scenario.startup_s >= 0 ? scenario.startup_s : calibration_.startup_s;  // eq. L1
    r.eval_images = scenario.eval_images;                                                 // eqs. E1, E2
    set_evaluation_cadence(r, *convergence_, scenario);

    // The data (eqs. F1-F6)
    set_storage(r, scenario, instance, checkpoint_bytes);

    // Money and memory
    r.cluster_usd_per_hour = cluster_price_usd_per_hour(scenario, instance, server);
    r.priced = cluster_priced(instance, server);
    set_spot(r, scenario, instance, server);
    r.memory_per_gpu_bytes = memory.total_bytes();
    r.memory_headroom_bytes = memory.context_bytes + memory.slack_bytes;
    return r;
}

namespace {

/// One iteration's phases given its all-reduce time (eqs. C1-O1, S1, D1).
IterationTimes iteration_times_with(const ResolvedScenario& s, double communication_s) {
    IterationTimes t;
    t.compute_s = compute_time_s(s.fixed_s, s.time_per_image_s, s.batch_per_gpu);
    t.data_s = data_time_s(s.batch_per_gpu, input_images_per_s_per_gpu(s));
    t.communication_s = communication_s;
    t.exposed_communication_s =
        exposed_communication_s(communication_s, backward_time_s(s.time_per_image_s, s.batch_per_gpu), s.overlap);
    // eq. S1 with sqrt(2 ln N) computed once, in resolve()
    t.sync_s = s.sync_jitter * t.compute_s * s.straggler_factor;
    t.iteration_s = pipelined_s(t.compute_s + t.sync_s + t.exposed_communication_s, t.data_s);
    return t;
}

bool changes_communication(SensitiveField f) {
    switch (f) {
        case SensitiveField::intra_bandwidth:
        case SensitiveField::intra_latency:
        case SensitiveField::inter_bandwidth:
        case SensitiveField::inter_latency:
        case SensitiveField::server_bandwidth:
        case SensitiveField::nvls_bandwidth:
            return true;
        default:
            return false;
    }
}

/// d ln(iteration) / d ln(field) by a forward difference (eq. U1), around the iteration of
/// `base_s` seconds whose all-reduce takes `communication_s`; the all-reduce is recomputed only
/// for the network's fields. `moved` is a copy of the scenario, left as it was found.
double log_iteration_per_log_field(ResolvedScenario& moved, SensitiveField field, double base_s,
                                   double communication_s) noexcept {
    constexpr double kStep = 1e-4;
    double& value = moved.field(field);
    const double saved = value;
    value *= 1.0 + kStep;
    const double moved_communication_s = changes_communication(field) ? communication_time_s(moved) : communication_s;
    const double d_log_iteration =
        (iteration_times_with(moved, moved_communication_s).iteration_s / base_s - 1.0) / kStep;
    value = saved;
    return d_log_iteration;
}

}  // namespace

IterationTimes iteration_times(const ResolvedScenario& s) { return iteration_times_with(s, communication_time_s(s)); }

std::array<double, kSensitiveFields> CostModel::throughput_gradient(const ResolvedScenario& s) const noexcept {
    // d ln(throughput) = -d ln(iteration), through each field a parameter scales (eq. U1).
    const double communication_s = communication_time_s(s);
    const double base = iteration_times_with(s, communication_s).iteration_s;
    std::array<double, kSensitiveFields> gradient{};
    ResolvedScenario moved = s;
    for (std::size_t f = 0; f < kSensitiveFields; ++f) {
        const FieldSensitivity& sensitivity = s.sensitivity[f];
        if (sensitivity.parameter < 0 || sensitivity.log_field_per_coordinate == 0) continue;
        gradient[f] = -log_iteration_per_log_field(moved, static_cast<SensitiveField>(f), base, communication_s) *
                      sensitivity.log_field_per_coordinate;
    }
    return gradient;
}

double CostModel::throughput_relative_sigma(const ResolvedScenario& s) const noexcept {
    // Delta method (eq. U1): g' C g over the parameters the scenario uses, plus the model's own scatter.
    const std::array<double, kSensitiveFields> gradient = throughput_gradient(s);
    const std::size_t n = parameters_.size() + 1;
    double variance = calibration_.uncertainty.model_sigma * calibration_.uncertainty.model_sigma;
    if (s.transfer_sigma > 0) {
        // A borrowed curve's own uncertainty acts on the whole time per image, whatever share of it
        // a parameter moves: d ln(throughput) / d ln(t_img) times its relative sigma.
        const double communication_s = communication_time_s(s);
        ResolvedScenario moved = s;
        const double transfer =
            log_iteration_per_log_field(moved, SensitiveField::time_per_image,
                                        iteration_times_with(s, communication_s).iteration_s, communication_s) *
            s.transfer_sigma;
        variance += transfer * transfer;
    }
    for (std::size_t a = 0; a < kSensitiveFields; ++a) {
        if (gradient[a] == 0) continue;
        for (std::size_t b = 0; b < kSensitiveFields; ++b) {
            if (gradient[b] == 0) continue;
            const auto row = static_cast<std::size_t>(s.sensitivity[a].parameter);
            const auto column = static_cast<std::size_t>(s.sensitivity[b].parameter);
            variance += gradient[a] * gradient[b] * covariance_[row * n + column];
        }
    }
    // A covariance too large for a double (1e308 in a calibration file) gives no band: an infinite
    // sigma, which check_prediction() refuses, rather than a NaN that prints as "0 - -0".
    if (!std::isfinite(variance)) return std::numeric_limits<double>::infinity();
    return std::sqrt(std::max(variance, 0.0));
}

Bottleneck bottleneck_of(double compute_s, double sync_s, double exposed_communication_s, double data_s) noexcept {
    if (data_s >= compute_s + sync_s + exposed_communication_s) return Bottleneck::data;
    // Time in the collective, its own or waiting there for the slowest worker, beyond the compute.
    if (exposed_communication_s + sync_s > compute_s) return Bottleneck::communication;
    return Bottleneck::compute;
}

double input_images_per_s_per_gpu(const ResolvedScenario& s) {
    return std::fmin(s.decode_images_per_s_per_gpu, s.storage_images_per_s_per_gpu);
}

Bottleneck named_bottleneck(const ResolvedScenario& s, Bottleneck bottleneck) noexcept {
    if (bottleneck == Bottleneck::data && s.storage_images_per_s_per_gpu < s.decode_images_per_s_per_gpu)
        return Bottleneck::storage;
    return bottleneck;
}

void apply_run_costs(const ResolvedScenario& s, Prediction& p) noexcept {
    p.storage = s.storage;
    const int gpus = s.nodes * s.gpus_per_node;
    const double data_s = data_time_s(s.batch_per_gpu, input_images_per_s_per_gpu(s));
    p.evaluation_s = evaluation_pass_s(s.eval_images, gpus, s.batch_per_gpu,
                                       compute_time_s(s.fixed_s, s.time_per_image_s, s.batch_per_gpu), data_s);
    p.evaluations = evaluations(s.epochs, s.eval_every_epochs);
    p.eval_every_epochs = s.eval_every_epochs;
    p.eval_every_from_recipe = s.eval_every_from_recipe;
    p.staging_s = s.staging_s;
    if (s.storage != Store::none) {
        // Eq. F1 at the throughput the GPUs and the loader would reach with no store bound.
        ResolvedScenario unbound = s;
        unbound.storage_images_per_s_per_gpu = std::numeric_limits<double>::infinity();
        const double images_per_s = gpus * s.batch_per_gpu / iteration_times(unbound).iteration_s;
        p.demanded_read_GBps = demanded_read_Bps(images_per_s, s.image_bytes) / 1e9;
    }
    p.storage_read_GBps = std::isfinite(s.storage_deliverable_Bps) ? s.storage_deliverable_Bps / 1e9 : 0.0;

    // The first epoch (eqs. F3, F7): every node reads its shard from the store, its page cache cold;
    // its throughput is the iteration's at the steady rate scaled by eq. D1's ratio of the two (a
    // simulated iteration's too), and never more than eq. D1's with the store at its cold rate.
    p.page_cache_hit_fraction = s.page_cache_hit_fraction;
    p.first_epoch_images_per_s = p.throughput_images_per_s;
    p.first_epoch_bottleneck = p.bottleneck;
    if (s.storage_first_epoch_images_per_s_per_gpu < s.storage_images_per_s_per_gpu) {
        ResolvedScenario cold = s;
        cold.storage_images_per_s_per_gpu = s.storage_first_epoch_images_per_s_per_gpu;
        const IterationTimes warm_times = iteration_times(s);
        const IterationTimes cold_times = iteration_times(cold);
        p.first_epoch_images_per_s =
            std::fmin(p.throughput_images_per_s * warm_times.iteration_s / cold_times.iteration_s,
                      static_cast<double>(gpus) * s.batch_per_gpu / cold_times.iteration_s);
        p.first_epoch_bottleneck =
            named_bottleneck(cold, bottleneck_of(cold_times.compute_s, cold_times.sync_s,
                                                 cold_times.exposed_communication_s, cold_times.data_s));
    }
}

namespace {

/// The money of a run of `time_s` wall time (staging included), `epochs` epochs and `passes`
/// evaluations: the instances for the time they run (all of it but a staging copy made before they
/// start), the store's capacity for all of it (eq. F5), its traffic (eq. F6), one checkpoint an epoch.
struct RunMoney {
    double cluster_usd = 0;
    double storage_usd = 0;
    double transfer_usd = 0;
    double total() const { return cluster_usd + storage_usd + transfer_usd; }
};
RunMoney run_money(const ResolvedScenario& s, double time_s, double epochs, double passes) {
    RunMoney m;
    const double instance_s = s.staging_on_workers ? time_s : time_s - s.staging_s;
    m.cluster_usd = instance_s / 3600.0 * s.cluster_usd_per_hour;
    m.storage_usd = storage_usd(s.storage_capacity_GB, s.storage_usd_per_GB_month, time_s / 3600.0);
    const double checkpoints = s.storage == Store::none ? 0.0 : std::ceil(epochs);
    // What the store serves (eqs. F7, F8): the epochs' worth of training reads that miss the page
    // caches, and every evaluation after the first read at the warm miss share.
    const double miss = 1.0 - s.page_cache_hit_fraction;
    const double epoch_reads = cached_epochs_s(epochs, s.nodes, 1.0, miss);
    const double eval_reads = std::fmin(passes, 1.0) + std::fmax(passes - 1.0, 0.0) * miss;
    m.transfer_usd =
        s.staging_usd +
        transfer_usd(epoch_reads * s.storage_read_GB_per_epoch + eval_reads * s.storage_read_GB_per_eval,
                     s.storage_usd_per_GB_read, checkpoints * s.checkpoint_GB, s.storage_usd_per_GB_written,
                     epoch_reads * s.storage_gets_per_epoch + eval_reads * s.storage_gets_per_eval,
                     s.storage_usd_per_1000_get, checkpoints, s.storage_usd_per_1000_put);
    return m;
}

void set_money(Prediction& p, const RunMoney& m) {
    p.cluster_usd = m.cluster_usd;
    p.storage_usd = m.storage_usd;
    p.data_transfer_usd = m.transfer_usd;
    p.cost_usd = m.total();
}

/// The iterations of `epochs` epochs at a steady `throughput` (eq. F8): the first at the first
/// epoch's rate, the next ones at the steady rate as each node's page cache fills. At a throughput
/// band's slow end the first epoch's rate moves with it, as at_throughput() moves it; at the fast
/// end the store holds it.
double epochs_iterations_s(const ResolvedScenario& s, const Prediction& p, double epochs, double throughput) {
    if (p.first_epoch_bottleneck != Bottleneck::storage) return epochs * s.dataset_images / throughput;
    const double first_epoch_images_per_s =
        p.first_epoch_images_per_s * std::fmin(1.0, throughput / p.throughput_images_per_s);
    return cached_epochs_s(epochs, s.nodes, s.dataset_images / first_epoch_images_per_s, s.dataset_images / throughput);
}

/// The cost band of `p`'s time band: the money of its fast end with the fewest epochs and of its
/// slow end with the most (each with its evaluation passes), never narrower than the point.
Interval cost_band(const ResolvedScenario& s, const Prediction& p) {
    const double low =
        run_money(s, p.time_to_train_interval.low, s.epochs_low, evaluations(s.epochs_low, s.eval_every_epochs))
            .total();
    const double high =
        run_money(s, p.time_to_train_interval.high, s.epochs_high, evaluations(s.epochs_high, s.eval_every_epochs))
            .total();
    return {std::min(p.cost_usd, low), std::max(p.cost_usd, high)};
}

}  // namespace

void apply_schedule(const ResolvedScenario& s, Prediction& p) noexcept {
    apply_run_costs(s, p);
    p.checkpoint_s = s.checkpoint_s;
    p.epoch_s = s.dataset_images / p.throughput_images_per_s + s.checkpoint_s;
    // The epochs the store bounds: all of them where it bounds the warm ones too, else those before
    // the page caches are warm (eq. F8's k).
    p.store_bound_epochs = p.bottleneck == Bottleneck::storage ? s.epochs
                           : p.first_epoch_bottleneck == Bottleneck::storage
                               ? store_bound_epochs(s.epochs, s.nodes, s.dataset_images / p.first_epoch_images_per_s,
                                                    s.dataset_images / p.throughput_images_per_s)
                               : 0.0;
    p.startup_s = s.startup_s;
    p.epochs = s.epochs;
    p.epochs_interval = {s.epochs_low, s.epochs_high};
    p.epochs_basis = s.epochs_basis;
    p.epochs_recipe = s.epochs_recipe;
    p.global_batch_beyond_published = s.global_batch_beyond_published;
    // Staging, start-up, the epochs and the evaluation passes (eqs. F4, L1, E1, E2)
    p.time_to_train_s = s.staging_s + s.startup_s + epochs_iterations_s(s, p, s.epochs, p.throughput_images_per_s) +
                        s.epochs * s.checkpoint_s + p.evaluations * p.evaluation_s;
    p.memory_per_gpu_GiB = s.memory_per_gpu_bytes / kBytesPerGiB;
    p.memory_headroom_GiB = s.memory_headroom_bytes / kBytesPerGiB;

    p.priced = s.priced;
    p.cluster_usd_per_hour = s.cluster_usd_per_hour;
    p.cost_per_epoch_usd = p.epoch_s / 3600.0 * s.cluster_usd_per_hour;
    set_money(p, run_money(s, p.time_to_train_s, s.epochs, p.evaluations));

    // The run's band: the slow end of the throughput with the most epochs, the fast end with the
    // fewest (a prediction without a band yet, or beyond its ends, keeps its own figure).
    auto time_at = [&](double throughput, double epochs) {
        if (!(throughput > 0)) return p.time_to_train_s;
        return s.staging_s + s.startup_s + epochs_iterations_s(s, p, epochs, throughput) + epochs * s.checkpoint_s +
               evaluations(epochs, s.eval_every_epochs) * p.evaluation_s;
    };
    p.time_to_train_interval = {std::min(p.time_to_train_s, time_at(p.interval.high, s.epochs_low)),
                                std::max(p.time_to_train_s, time_at(p.interval.low, s.epochs_high))};
    p.cost_interval = cost_band(s, p);
    if (s.spot_modelled) apply_spot(s, p);
}

namespace {

/// The money of a spot run that ends at `time_s` after `interruptions` (eqs. X3, X7): run_money's,
/// less `unpaid_node_s` of one node's time for each (the elastic run's wait without the lost node;
/// 0 for the run that waits), plus each replacement's own staging copy (SpotRun::
/// replacement_staging_usd).
RunMoney spot_run_money(const ResolvedScenario& s, const SpotRun& x, double time_s, double epochs, double passes,
                        double interruptions, double unpaid_node_s) {
    RunMoney m = run_money(s, time_s, epochs, passes);
    m.cluster_usd -= interruptions * unpaid_node_s * s.cluster_usd_per_hour / 3600.0 / s.nodes;
    m.transfer_usd += interruptions * x.replacement_staging_usd;
    return m;
}

/// Eq. X7 beside apply_spot's fixed cluster: the same spot run elastic (SpotRun::elastic...), where
/// its cluster can shrink.
void apply_elastic_spot(const ResolvedScenario& s, Prediction& p) noexcept {
    SpotRun& x = p.spot;
    if (s.nodes < 2 || s.ps_nodes > 0) return;  // nothing to shrink to, or servers that must stay
    // One node missing at a time: a node is lost again within the wait for its replacement less
    // often than not (lambda W < 1), which also keeps the cost below the whole cluster's.
    if (!(x.interruptions_per_node_hour / 3600.0 * x.replacement_wait_s < 1.0)) return;
    ResolvedScenario smaller = s;
    smaller.nodes = s.nodes - 1;
    const double smaller_images_per_s =
        static_cast<double>(smaller.nodes) * s.gpus_per_node * s.batch_per_gpu / iteration_times(smaller).iteration_s;
    x.elastic_throughput_ratio = std::min(1.0, smaller_images_per_s / p.throughput_images_per_s);
    x.elastic_loss_per_interruption_s = elastic_loss_per_interruption_s(
        x.restart_s, x.replacement_wait_s, x.checkpoint_interval_s, x.elastic_throughput_ratio);
    const double rate_per_s = x.cluster_interruptions_per_hour / 3600.0;
    const double expected_s =
        spot_expected_time_s(x.checkpointed_work_s, rate_per_s, x.elastic_loss_per_interruption_s);
    if (!std::isfinite(expected_s)) return;
    x.elastic = true;
    x.elastic_expected_interruptions = rate_per_s * expected_s;
    x.elastic_time_to_train_s = s.staging_s + s.startup_s + expected_s;
    // Each lost node is not paid for while the run waits without it (the others are).
    x.elastic_cost_usd = spot_run_money(s, x, x.elastic_time_to_train_s, s.epochs, p.evaluations,
                                        x.elastic_expected_interruptions, x.replacement_wait_s)
                             .total();
}

/// Prices the spot run of `p.spot` whose interruptions each cost `loss_s` of wall time (eqs. X3,
/// X6) and each leave `unpaid_node_s` of one node's time unpaid (the elastic run's wait, eq. X7;
/// 0 when the run waits): its time to train and cost, and their bands from X6's 2.5% quantile at
/// the fast end of the throughput with the fewest epochs and its 97.5% at the slow end with the
/// most, each quantile a + k loss_s with its k interruptions. False where it never finishes.
bool price_spot_run(const ResolvedScenario& s, Prediction& p, double loss_s, double unpaid_node_s) {
    const SpotRun& x = p.spot;
    const double rate_per_s = x.cluster_interruptions_per_hour / 3600.0;
    const double expected_s = spot_expected_time_s(x.checkpointed_work_s, rate_per_s, loss_s);
    if (!std::isfinite(expected_s)) return false;
    const double before_s = s.staging_s + s.startup_s;
    p.time_to_train_s = before_s + expected_s;
    set_money(p,
              spot_run_money(s, x, p.time_to_train_s, s.epochs, p.evaluations, rate_per_s * expected_s, unpaid_node_s));
    auto work_at = [&](double throughput, double epochs) {
        const double work_s = throughput > 0 ? epochs_iterations_s(s, p, epochs, throughput) +
                                                   evaluations(epochs, s.eval_every_epochs) * p.evaluation_s
                                             : x.work_s;
        return checkpointed_work_s(work_s, x.checkpoint_write_s, x.checkpoint_interval_s);
    };
    auto end_of_band = [&](double throughput, double epochs, double probability) {
        const double a = work_at(throughput, epochs);
        const double t = spot_time_quantile_s(a, rate_per_s, loss_s, probability);
        const double interruptions = std::max(0.0, (t - a) / loss_s);
        return std::pair{before_s + t,
                         spot_run_money(s, x, before_s + t, epochs, evaluations(epochs, s.eval_every_epochs),
                                        interruptions, unpaid_node_s)
                             .total()};
    };
    const auto [low_s, low_usd] = end_of_band(p.interval.high, s.epochs_low, 0.025);
    const auto [high_s, high_usd] = end_of_band(p.interval.low, s.epochs_high, 0.975);
    p.time_to_train_interval = {std::min(p.time_to_train_s, low_s), std::max(p.time_to_train_s, high_s)};
    p.cost_interval = {std::min(p.cost_usd, low_usd), std::max(p.cost_usd, high_usd)};
    return true;
}

}  // namespace

void apply_spot(const ResolvedScenario& s, Prediction& p) noexcept {
    SpotRun& x = p.spot;
    x.modelled = true;
    x.interruptions_per_node_hour = s.spot_interruptions_per_node_hour;
    x.cluster_interruptions_per_hour = (s.nodes + s.ps_nodes) * s.spot_interruptions_per_node_hour;
    const double rate_per_s = x.cluster_interruptions_per_hour / 3600.0;
    x.checkpoint_write_s = s.checkpoint_s;
    const double young_s = young_checkpoint_interval_s(s.checkpoint_s, rate_per_s);
    x.recommended_checkpoint_interval_s = std::isfinite(young_s) ? young_s : 0.0;
    // The iterations and the evaluation passes (eqs. E1, E2): both are lost and done again alike.
    x.work_s = epochs_iterations_s(s, p, s.epochs, p.throughput_images_per_s) + p.evaluations * p.evaluation_s;
    // Given, else a checkpoint each epoch as the on-demand run writes them (eq. t_checkpoint), or
    // Young's interval where that is shorter: the spot run never checkpoints less often than its
    // on-demand twin unless told to. An interval past the whole run is one checkpoint, at the end.
    const double default_s = std::min(young_s, x.work_s / s.epochs);
    x.checkpoint_interval_s = std::min(s.checkpoint_interval_s > 0 ? s.checkpoint_interval_s : default_s, x.work_s);
    x.restart_s = s.startup_s;
    // A replacement node that stages the dataset on its own drives (local-nvme) copies it before it
    // joins, as each worker did before training: the wait grows by that copy, its requests are paid.
    x.replacement_wait_s = s.spot_replacement_wait_s + (s.staging_on_workers ? s.staging_s : 0.0);
    x.replacement_staging_usd = s.staging_on_workers ? s.staging_usd / s.nodes : 0.0;
    x.loss_per_interruption_s = loss_per_interruption_s(x.restart_s, x.replacement_wait_s, x.checkpoint_interval_s);
    x.checkpointed_work_s = checkpointed_work_s(x.work_s, x.checkpoint_write_s, x.checkpoint_interval_s);
    x.uninterrupted_time_s = s.staging_s + s.startup_s + x.checkpointed_work_s;
    const double never = std::numeric_limits<double>::infinity();
    const bool waiting_finishes = price_spot_run(s, p, x.loss_per_interruption_s, 0.0);
    x.waiting_time_to_train_s = waiting_finishes ? p.time_to_train_s : never;
    x.waiting_cost_usd = waiting_finishes ? p.cost_usd : never;
    if (waiting_finishes) {
        x.expected_interruptions = rate_per_s * (p.time_to_train_s - s.staging_s - s.startup_s);
        x.expected_lost_work_s = x.expected_interruptions * x.checkpoint_interval_s / 2.0;
        x.expected_downtime_s = x.expected_interruptions * (x.restart_s + x.replacement_wait_s);
    }
    apply_elastic_spot(s, p);
    // Priced elastic (Scenario::spot_elastic): eq. X7's run, which may finish where waiting would
    // not. Each interruption costs d_e, restarts twice and leaves the lost node unpaid through the
    // wait, while the others train on.
    if (s.spot_elastic && x.elastic) {
        x.elastic_priced = price_spot_run(s, p, x.elastic_loss_per_interruption_s, x.replacement_wait_s);
        x.loss_per_interruption_s = x.elastic_loss_per_interruption_s;
        x.expected_interruptions = x.elastic_expected_interruptions;
        x.expected_lost_work_s = x.expected_interruptions * x.checkpoint_interval_s / 2.0;
        x.expected_downtime_s = x.expected_interruptions * 2.0 * x.restart_s;
    }
    x.finishes = waiting_finishes || x.elastic_priced;
    if (!x.finishes) {
        // The run never finishes: checked_predict() refuses it, naming why; the figures say so too.
        p.time_to_train_s = p.cost_usd = never;
        p.time_to_train_interval = {never, never};
        p.cost_interval = {never, never};
        x.expected_interruptions = x.expected_lost_work_s = x.expected_downtime_s = never;
    }
}

Prediction CostModel::predict(const ResolvedScenario& s) const noexcept {
    Prediction p;
    p.nodes = s.nodes;
    p.gpus = s.nodes * s.gpus_per_node;
    p.global_batch = p.gpus * s.batch_per_gpu;

    const Communication comm = communication(s);
    const IterationTimes times = iteration_times_with(s, comm.seconds);
    p.interconnect = s.interconnect;
    p.algorithm = comm.algorithm;
    p.buckets = comm.buckets;
    p.compute_s = times.compute_s;
    p.data_s = times.data_s;
    p.communication_s = times.communication_s;
    p.exposed_communication_s = times.exposed_communication_s;
    p.sync_s = times.sync_s;
    p.iteration_s = times.iteration_s;
    p.bottleneck = named_bottleneck(s, bottleneck_of(p.compute_s, p.sync_s, p.exposed_communication_s, p.data_s));
    p.loader = s.loader;

    if (p.communication_s > 0) {
        p.algorithm_bandwidth_GBps = s.gradient_bytes / p.communication_s / 1e9;
        p.bus_bandwidth_GBps = p.algorithm_bandwidth_GBps * allreduce_bus_factor(p.gpus);
    }

    p.throughput_images_per_s = p.global_batch / p.iteration_s;
    p.per_gpu_images_per_s = p.throughput_images_per_s / p.gpus;
    p.scaling_efficiency = p.per_gpu_images_per_s / (s.batch_per_gpu / p.compute_s);
    // One node alone: the same GPUs all-reducing inside the node only (MXNet's 'device' kvstore in
    // seed 000), by NCCL's choice where the strategy leaves it to NCCL, else by a ring.
    ResolvedScenario node = s;
    node.nodes = 1;
    const Algorithm node_algorithm =
        s.strategy == Strategy::nccl ? nccl_algorithm(node, s.gradient_bytes) : Algorithm::ring;
    const double node_communication_s =
        node_algorithm == Algorithm::none ? 0.0 : allreduce_time_s(node, node_algorithm, s.gradient_bytes);
    const double node_step_s =
        p.compute_s + straggler_wait_s(p.compute_s, s.sync_jitter, s.gpus_per_node) +
        exposed_communication_s(node_communication_s, backward_time_s(s.time_per_image_s, s.batch_per_gpu),
                                s.node_overlap);
    const double node_throughput = s.gpus_per_node * s.batch_per_gpu / pipelined_s(node_step_s, p.data_s);
    p.node_scaling_efficiency = p.throughput_images_per_s / (s.nodes * node_throughput);

    // Uncertainty: the parameters' covariance propagated to the throughput (eq. U1).
    const double sigma = throughput_relative_sigma(s);
    p.interval.low = p.throughput_images_per_s * std::exp(-kInterval95Sigmas * sigma);
    p.interval.high = p.throughput_images_per_s * std::exp(kInterval95Sigmas * sigma);

    apply_schedule(s, p);
    return p;
}

}  // namespace epochcast
