// One iteration of data-parallel training on the resolved cluster: one GPU's compute (eq. C1),
// the backward pass that hides communication (eqs. C2, O1), the wait for the slowest worker (eqs.
// S1, S2), the input pipeline (eq. D1) and the two run together (eq. I1), then what bounds the
// iteration and the throughput and scaling it gives. One small function per formula; derivations in
// docs/model.md.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "model/calibration.hpp"
#include "model/collectives.hpp"
#include "model/prediction.hpp"
#include "model/resolved_scenario.hpp"
#include "model/scenario.hpp"

namespace epochcast {

/// Per-iteration compute of one GPU: fixed + batch x per-image time (docs/model.md, eq. C1).
double compute_time_s(double fixed_s, double time_per_image_s, int batch);

/// Backward share of the batch-proportional compute: backward is 2 of the 3 forward-equivalents
/// of a training step (docs/model.md, eq. C2).
double backward_time_s(double time_per_image_s, int batch);

/// Expected wait for the slowest of `workers` whose compute time has relative std `jitter`:
/// E[max of n normals] ~ mu + sigma sqrt(2 ln n) (eq. S1). Zero for one worker.
double straggler_wait_s(double compute_s, double jitter, int workers);

/// sqrt(2 ln n), the expected maximum of n standard normals in standard deviations (eq. S1); 0 for one.
double straggler_factor(int workers);

/// Fewest per-step samples compute_jitter accepts.
inline constexpr std::size_t kMinJitterSamples = 8;
/// The relative standard deviation of one worker's compute time from its per-step samples, by
/// successive differences, so that a slow drift shared by every worker (a host that speeds up and
/// slows down) does not count (eq. S2). Throws InputError for fewer than kMinJitterSamples samples
/// or a sample that is not positive.
double compute_jitter(const std::vector<double>& step_seconds);

/// Communication the backward pass cannot hide: max(0, comm - overlap x backward) (eq. O1).
double exposed_communication_s(double communication_s, double backward_s, double overlap);

/// Input pipeline time for one GPU's batch (eq. D1).
double data_time_s(int batch, double decode_images_per_s);

/// The exponent of eq. I1's smooth maximum of the training step and the input pipeline, 2^5: a
/// power of two, so that pipelined_s raises and roots it by squarings and square roots.
inline constexpr int kPipelineSmoothnessLog2 = 5;
inline constexpr double kPipelineSmoothness = 1 << kPipelineSmoothnessLog2;
/// Eq. I1: one iteration when the input pipeline prepares the next batch while the GPU trains on
/// this one: (step^p + data^p)^(1/p) with p = kPipelineSmoothness, the larger of the two but for a
/// stall near balance (at most 2^(1/p) - 1 = 2.2% where they are equal: the queue between them
/// runs dry now and then), and differentiable, so that a fit reaches a run at the boundary from
/// both sides. `step_s` alone where there is no pipeline time.
double pipelined_s(double step_s, double data_s);

/// Eq. I1's partial derivatives at a step of `step_s` and an input time of `data_s` whose
/// pipelined time is `pipelined` (pipelined_s's): d t / d step = (step / t)^(p-1) and d t / d data
/// = (data / t)^(p-1); 1 and 0 where there is no input time.
struct PipelinedSlopes {
    double per_step = 1;
    double per_data = 0;
};
PipelinedSlopes pipelined_slopes(double step_s, double data_s, double pipelined);

/// Eq. D2's figures: DALI's GPU decoding splits the images between the hardware JPEG decoder and
/// nvJPEG's CUDA (hybrid) path, a share kDaliHardwareShare to the hardware (DALI's documented
/// default `hw_decoder_load`, 0.65); on an A100, NVIDIA measured about 5,000 images/s with every
/// image on its 5 hardware cores and 6,000 with every image on the CUDA path
/// (traces/published/external_decode_rates.json).
inline constexpr double kDaliHardwareShare = 0.65;
inline constexpr double kHardwareJpegImagesPerSPerCore = 1000;
inline constexpr double kHybridJpegImagesPerS = 6000;
inline constexpr int kReferenceJpegDecoderCores = 5;  ///< the A100's, where the calibrated rate is measured

/// Eq. D2: what DALI's GPU decoding sustains on a GPU with `jpeg_decoder_cores` hardware JPEG
/// decoder cores, relative to an A100 (5 cores): the better of the default split, limited by
/// whichever path fills first, and the CUDA path alone (where the hardware is slower or absent).
/// 1 for an A100; 1.4 for 7 cores (H100, H200, B200); 0.78 for none (V100, T4); never above the
/// CUDA path's own limit at the default split, 2.23; non-decreasing in the cores.
double dali_decode_factor(int jpeg_decoder_cores);

/// The rate at which `loader` feeds one of `gpus_per_node` GPUs on a node of `vcpus` (eq. D1): a CPU
/// loader's rate per vCPU (the framework's own pipeline's, or DALI's on the CPU) times the node's
/// vCPUs over its GPUs, DALI's on-GPU rate per GPU (the calibrated A100 rate times eq. D2's factor
/// for a GPU of `jpeg_decoder_cores`), infinite for synthetic data (nothing to decode), in images/s.
double decode_rate_per_gpu(const Calibration& calibration, Loader loader, Framework framework, int vcpus,
                           int gpus_per_node, int jpeg_decoder_cores);

/// The host side (eq. D3, issue 58 item 3): each GPU's training process keeps one vCPU busy (its
/// Python thread launching kernels and the optimizer step), and the loader needs threads of its
/// own beside it. DALI's host stages (the reader, the JPEG parse and the CUDA path's Huffman
/// decoding) run on `--dali-threads` CPU threads per GPU: 3 in NVIDIA's MXNet ResNet-50 recipe as
/// first published (NVIDIA/DeepLearningExamples MxNet/Classification/RN50v1.5/dali.py; 6 in its
/// current version), the fewest NVIDIA's ResNet-50 recipes give it. A CPU loader decodes at its
/// calibrated rate per vCPU (eq. D1), so its floor is one worker: fewer vCPUs only slow it.
inline constexpr int kFrameworkVcpusPerGpu = 1;
inline constexpr int kDaliHostThreadsPerGpu = 3;
inline constexpr int kCpuLoaderLeastWorkersPerGpu = 1;

/// Eq. D3: the fewest vCPUs per GPU a node must have for `loader` to run beside the training
/// process: 1 with nothing to decode (synthetic), 2 for a CPU loader, 4 for DALI on the GPU.
int host_vcpus_per_gpu_needed(Loader loader);

/// The framework's share of a resolved scenario (eqs. S1, O1): its jitter, the straggler factor of
/// the cluster's GPUs and the overlap of the backward pass with the strategy's communication (and
/// with an all-reduce inside one node, for the one-node baseline). CPU ranks (`device` cpu) move
/// their gradients with the cores that compute: nothing overlaps (docs/model.md, "CPU ranks").
void set_framework_profile(ResolvedScenario& r, const FrameworkProfile& profile, DeviceKind device);

/// The input pipeline of a resolved scenario (eqs. D1-D3): the loader (the framework's where the
/// scenario names none), its decode rate per GPU on a node of `vcpus` for GPUs of
/// `jpeg_decoder_cores`, and whether the node has fewer vCPUs per GPU than the loader needs beside
/// the training process (never for CPU ranks, `device` cpu, whose cores are the compute).
void set_input_pipeline(ResolvedScenario& r, const Scenario& scenario, const Calibration& calibration, int vcpus,
                        int jpeg_decoder_cores, DeviceKind device);

/// One iteration's phases (eqs. C1-O1, S1, D1).
struct IterationTimes {
    double compute_s = 0;
    double data_s = 0;
    double communication_s = 0;
    double exposed_communication_s = 0;
    double sync_s = 0;
    double iteration_s = 0;  ///< max(compute + sync + exposed communication, data)
};
IterationTimes iteration_times(const ResolvedScenario& s);

/// The same given the synchronisation's time, `communication_s` (communication_time_s(s)): what
/// eq. U1's gradient re-evaluates with the all-reduce kept where no network field moves.
IterationTimes iteration_times_with(const ResolvedScenario& s, double communication_s);

/// Eq. U1's derivatives of one iteration: d ln(iteration) / d ln(field) for each SensitiveField of
/// `s`, whose synchronisation is `comm` (communication(s), with its network derivatives) and whose
/// iteration is `t` (iteration_times_with(s, comm.seconds)), by the chain rule through eqs. C1, C2,
/// S1, O1, D1 and I1 (docs/model.md, "The interval's gradient"). The branches are held as `t`
/// has them: communication the backward pass hides wholly moves nothing, and the decoding moves
/// the input only where it, not the store, is the slower.
std::array<double, kSensitiveFields> log_iteration_per_log_field(const ResolvedScenario& s, const Communication& comm,
                                                                 const IterationTimes& t) noexcept;

/// The parts of log_iteration_per_log_field before eq. I1 joins them: d step / d ln(field), the
/// step being compute, the wait for the slowest worker and the exposed communication (eqs. C1,
/// C2, S1, O1), and d data / d ln(decode) (eq. D1), in seconds, at `t`'s branches.
struct StepDerivatives {
    std::array<double, kSensitiveFields> step_s_per_log_field{};
    double data_s_per_log_decode = 0;
};
StepDerivatives step_derivatives(const ResolvedScenario& s, const Communication& comm,
                                 const IterationTimes& t) noexcept;

/// d ln(iteration) / d ln(field) from `d` (step_derivatives(s, comm, t)): eq. I1's slopes at `t`.
std::array<double, kSensitiveFields> log_iteration_per_log_field(const StepDerivatives& d,
                                                                 const IterationTimes& t) noexcept;

/// The same for the iteration with no input to wait for (eq. I1 with no data time, the step
/// alone): d ln(step) / d ln(field), what log_iteration_per_log_field gives for `s` with an
/// infinitely fast loader and store.
std::array<double, kSensitiveFields> log_step_per_log_field(const StepDerivatives& d, const IterationTimes& t) noexcept;

/// The rate at which the input pipeline feeds one GPU (eqs. D1, F3): the lower of the loader's
/// decoding and what the store delivers, in images/s.
double input_images_per_s_per_gpu(const ResolvedScenario& s);

/// The bottleneck named for a resolved scenario: bottleneck_of's, with data named storage where
/// the store, not the decoding, bounds the input pipeline (eq. F3).
Bottleneck named_bottleneck(const ResolvedScenario& s, Bottleneck bottleneck) noexcept;

/// What bounds an iteration: the input pipeline when it is the longest phase, else communication
/// when the time spent in the collective (its exposed part plus the wait there for the slowest
/// worker) exceeds compute, else compute.
Bottleneck bottleneck_of(double compute_s, double sync_s, double exposed_communication_s, double data_s) noexcept;

/// One GPU alone at `batch` images under the same per-GPU input pipeline, in images/s: eq. I1 of its
/// compute and its input's time, with no worker to wait for and nothing to communicate. The
/// baseline of the scaling efficiency, which then measures communication and waiting only.
double one_gpu_images_per_s(int batch, double compute_s, double data_s);

/// The share of one GPU's compute rate its input pipeline sustains: compute_s over eq. I1 of the
/// compute and the input's time (1 with no input time, 2^(-1/32) = 0.978 at balance).
double input_efficiency(double compute_s, double data_s);

/// The prediction's iteration (CostModel::predict's first step): the cluster's shape, the
/// communication `comm` (communication(s): its algorithm, buckets and bandwidths), the phases of one iteration, what
/// bounds it, the throughput, the scaling efficiencies against one GPU and against one node alone (each under the same
/// per-GPU input pipeline), and the input's own bound (input_efficiency).
void apply_iteration(const ResolvedScenario& s, const Communication& comm, Prediction& p) noexcept;

}  // namespace epochcast
