#include "model/iteration.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "model/collectives.hpp"
#include "model/errors.hpp"

namespace epochcast {

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

namespace {

double straggler_factor_of(int workers) { return std::sqrt(2.0 * std::log(static_cast<double>(workers))); }

/// Workers up to which straggler_factor reads a table: every cluster of up to 128 eight-GPU nodes
/// (predict() asks for one node's workers every time, resolve() for the cluster's).
constexpr int kTabledWorkers = 1024;

}  // namespace

double straggler_factor(int workers) {
    if (workers <= 1) return 0.0;
    static const std::array<double, kTabledWorkers + 1> table = [] {
        std::array<double, kTabledWorkers + 1> t{};
        for (int n = 2; n <= kTabledWorkers; ++n) t[static_cast<std::size_t>(n)] = straggler_factor_of(n);
        return t;
    }();
    return workers <= kTabledWorkers ? table[static_cast<std::size_t>(workers)] : straggler_factor_of(workers);
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

namespace {

/// Eq. I1's root near 1: (1 + x)^(1/p) - 1 for x at most kRootSeriesMaxPower, by the binomial
/// series to x^8, whose coefficients c_k = c_(k-1) (1/p - k + 1) / k are computed here once. The
/// first term left out is |c_9| x^9 < 0.0045 x 2^-54 = 2.5e-19, far below half a double's step
/// at 1 (1.1e-16), so the sum agrees with the five square roots to their rounding; eight
/// multiply-adds, not five square roots one after another.
constexpr int kRootSeriesTerms = 8;
constexpr double kRootSeriesMaxPower = 1.0 / 64;

constexpr std::array<double, kRootSeriesTerms> root_series() {
    std::array<double, kRootSeriesTerms> c{};
    const double exponent = 1.0 / kPipelineSmoothness;
    double coefficient = 1.0;
    for (int k = 1; k <= kRootSeriesTerms; ++k) {
        coefficient *= (exponent - (k - 1)) / k;
        c[static_cast<std::size_t>(k - 1)] = coefficient;
    }
    return c;
}

double root_less_one_by_series(double x) {
    static constexpr std::array<double, kRootSeriesTerms> c = root_series();
    static_assert(kRootSeriesTerms == 8);
    // x (c1 + c2 x + ... + c8 x^7) in pairs (Estrin's scheme): four short sums side by side, not
    // seven multiply-adds each waiting for the last.
    const double x2 = x * x;
    const double x4 = x2 * x2;
    const double low = (c[0] + c[1] * x) + x2 * (c[2] + c[3] * x);
    const double high = (c[4] + c[5] * x) + x2 * (c[6] + c[7] * x);
    return x * (low + x4 * high);
}

}  // namespace

double pipelined_s(double step_s, double data_s) {
    if (!(data_s > 0)) return step_s;
    // (a^p + b^p)^(1/p) = larger x (1 + r^p)^(1/p), r = smaller / larger in [0, 1], so that no
    // power overflows. p = 2^5: r^p is five squarings; the root, near 1, the binomial series, and
    // where r^p passes 1/64 (r > 0.88, near balance) five square roots (pow() took half of
    // predict()'s time).
    const double larger = std::max(step_s, data_s);
    double power = std::min(step_s, data_s) / larger;
    for (int i = 0; i < kPipelineSmoothnessLog2; ++i) power *= power;
    double root = 1.0 + power;
    // Below a ratio of about 0.32 the power is lost beside 1, and so is the root: the larger alone.
    if (root == 1.0) return larger;
    if (power <= kRootSeriesMaxPower) return larger + larger * root_less_one_by_series(power);
    for (int i = 0; i < kPipelineSmoothnessLog2; ++i) root = std::sqrt(root);
    return larger * root;
}

PipelinedSlopes pipelined_slopes(double step_s, double data_s, double pipelined) {
    if (!(data_s > 0)) return {1.0, 0.0};
    // d/da (a^p + b^p)^(1/p) = (a / t)^(p-1), t the pipelined time: a^(p-1) = a a^2 a^4 a^8 a^16.
    auto power_less_one = [](double ratio) {
        double result = ratio;
        double square = ratio;
        for (int i = 1; i < kPipelineSmoothnessLog2; ++i) {
            square *= square;
            result *= square;
        }
        return result;
    };
    return {power_less_one(step_s / pipelined), power_less_one(data_s / pipelined)};
}

namespace {

/// Eq. D2's capacity, in images/s: with a share h of the images on the hardware and 1 - h on the
/// CUDA path, whichever fills first limits the decoder.
double dali_capacity_images_per_s(int jpeg_decoder_cores) {
    const double split = std::min(jpeg_decoder_cores * kHardwareJpegImagesPerSPerCore / kDaliHardwareShare,
                                  kHybridJpegImagesPerS / (1 - kDaliHardwareShare));
    return std::max(kHybridJpegImagesPerS, split);
}

}  // namespace

double dali_decode_factor(int jpeg_decoder_cores) {
    return dali_capacity_images_per_s(std::max(jpeg_decoder_cores, 0)) /
           dali_capacity_images_per_s(kReferenceJpegDecoderCores);
}

double decode_rate_per_gpu(const Calibration& calibration, Loader loader, Framework framework, int vcpus,
                           int gpus_per_node, int jpeg_decoder_cores) {
    switch (loader) {
        case Loader::cpu:
        case Loader::dali_cpu:
            return calibration.decode_rate(loader, framework) * vcpus / gpus_per_node;
        case Loader::dali:
            return calibration.decode_rate(loader, framework) * dali_decode_factor(jpeg_decoder_cores);
        case Loader::synthetic:
        case Loader::framework_default:
            break;
    }
    return std::numeric_limits<double>::infinity();  // nothing to decode
}

int host_vcpus_per_gpu_needed(Loader loader) {
    switch (loader) {
        case Loader::cpu:
        case Loader::dali_cpu:
            return kFrameworkVcpusPerGpu + kCpuLoaderLeastWorkersPerGpu;
        case Loader::dali:
            return kFrameworkVcpusPerGpu + kDaliHostThreadsPerGpu;
        case Loader::synthetic:
        case Loader::framework_default:
            break;
    }
    return kFrameworkVcpusPerGpu;
}

void set_framework_profile(ResolvedScenario& r, const FrameworkProfile& profile, DeviceKind device) {
    const bool cpu_ranks = device == DeviceKind::cpu;
    r.sync_jitter = profile.sync_jitter;
    r.straggler_factor = straggler_factor(r.nodes * r.gpus_per_node);
    r.overlap = cpu_ranks ? 0.0 : r.strategy == Strategy::ps ? profile.ps_overlap : profile.allreduce_overlap;
    r.node_overlap = cpu_ranks ? 0.0 : profile.allreduce_overlap;
}

void set_input_pipeline(ResolvedScenario& r, const Scenario& scenario, const Calibration& calibration, int vcpus,
                        int jpeg_decoder_cores, DeviceKind device) {
    r.loader = scenario.loader == Loader::framework_default ? default_loader(scenario.framework, scenario.stack)
                                                            : scenario.loader;
    r.decode_images_per_s_per_gpu =
        decode_rate_per_gpu(calibration, r.loader, scenario.framework, vcpus, r.gpus_per_node, jpeg_decoder_cores);
    r.host_vcpus_per_gpu = static_cast<double>(vcpus) / r.gpus_per_node;
    r.host_vcpus_short = device == DeviceKind::gpu && r.host_vcpus_per_gpu < host_vcpus_per_gpu_needed(r.loader);
}

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

IterationTimes iteration_times(const ResolvedScenario& s) { return iteration_times_with(s, communication_time_s(s)); }

StepDerivatives step_derivatives(const ResolvedScenario& s, const Communication& comm,
                                 const IterationTimes& t) noexcept {
    // d step / d ln(field), field by field, through eqs. C1, C2, S1 and O1.
    StepDerivatives d;
    std::array<double, kSensitiveFields>& step = d.step_s_per_log_field;
    auto at = [&step](SensitiveField f) -> double& { return step[static_cast<std::size_t>(f)]; };
    const double sync_per_compute = s.sync_jitter * s.straggler_factor;
    const double batch_s = s.batch_per_gpu * s.time_per_image_s;  // d compute / d ln(t_img)
    const bool exposed = t.exposed_communication_s > 0;
    // d exposed / d ln(overlap) = d exposed / d ln(t_img)'s backward share = -overlap x backward
    const double hidden_s = exposed ? -s.overlap * backward_time_s(s.time_per_image_s, s.batch_per_gpu) : 0.0;
    at(SensitiveField::fixed) = s.fixed_s * (1.0 + sync_per_compute);
    at(SensitiveField::time_per_image) = batch_s * (1.0 + sync_per_compute) + hidden_s;
    at(SensitiveField::sync_jitter) = t.sync_s;
    at(SensitiveField::overlap) = hidden_s;
    if (exposed) {
        for (std::size_t f = 0; f < kSensitiveFields; ++f) step[f] += comm.per_log_field[f];
    }
    // d data / d ln(decode) = -data where the decoding, not the store, is the slower input.
    d.data_s_per_log_decode = s.decode_images_per_s_per_gpu < s.storage_images_per_s_per_gpu ? -t.data_s : 0.0;
    return d;
}

std::array<double, kSensitiveFields> log_iteration_per_log_field(const StepDerivatives& d,
                                                                 const IterationTimes& t) noexcept {
    const PipelinedSlopes slopes =
        pipelined_slopes(t.compute_s + t.sync_s + t.exposed_communication_s, t.data_s, t.iteration_s);
    std::array<double, kSensitiveFields> result{};
    for (std::size_t f = 0; f < kSensitiveFields; ++f)
        result[f] = slopes.per_step * d.step_s_per_log_field[f] / t.iteration_s;
    result[static_cast<std::size_t>(SensitiveField::decode)] +=
        slopes.per_data * d.data_s_per_log_decode / t.iteration_s;
    return result;
}

std::array<double, kSensitiveFields> log_step_per_log_field(const StepDerivatives& d,
                                                            const IterationTimes& t) noexcept {
    const double step_s = t.compute_s + t.sync_s + t.exposed_communication_s;
    std::array<double, kSensitiveFields> result{};
    for (std::size_t f = 0; f < kSensitiveFields; ++f) result[f] = d.step_s_per_log_field[f] / step_s;
    return result;
}

std::array<double, kSensitiveFields> log_iteration_per_log_field(const ResolvedScenario& s, const Communication& comm,
                                                                 const IterationTimes& t) noexcept {
    return log_iteration_per_log_field(step_derivatives(s, comm, t), t);
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

double one_gpu_images_per_s(int batch, double compute_s, double data_s) {
    return batch / pipelined_s(compute_s, data_s);
}

double input_efficiency(double compute_s, double data_s) { return compute_s / pipelined_s(compute_s, data_s); }

void apply_iteration(const ResolvedScenario& s, const Communication& comm, Prediction& p) noexcept {
    p.nodes = s.nodes;
    p.gpus = s.nodes * s.gpus_per_node;
    p.global_batch = p.gpus * s.batch_per_gpu;

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
    // One GPU alone under the same input (one_gpu_images_per_s and input_efficiency, eq. I1 once).
    const double one_gpu_s = pipelined_s(p.compute_s, p.data_s);
    p.scaling_efficiency = p.per_gpu_images_per_s / (s.batch_per_gpu / one_gpu_s);
    p.input_efficiency = p.compute_s / one_gpu_s;
    // One node alone (node_allreduce_s), its iteration pipelined with the same input.
    const double node_step_s =
        p.compute_s + straggler_wait_s(p.compute_s, s.sync_jitter, s.gpus_per_node) +
        exposed_communication_s(node_allreduce_s(s), backward_time_s(s.time_per_image_s, s.batch_per_gpu),
                                s.node_overlap);
    const double node_throughput = s.gpus_per_node * s.batch_per_gpu / pipelined_s(node_step_s, p.data_s);
    p.node_scaling_efficiency = p.throughput_images_per_s / (s.nodes * node_throughput);
}

}  // namespace epochcast
