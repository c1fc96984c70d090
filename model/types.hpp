// Small closed vocabularies of the model (precision, strategy, framework, pricing), each with
// the one spelling the CLI, the JSON files and the GUI use. No stringly-typed configuration
// past the edges: parse once, then carry the enum.
#pragma once

#include <string_view>

namespace epochcast {

/// Bytes in a GiB (2^30): memory, store capacities and checkpoints are counted in GiB.
inline constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
/// Bits in a byte: network line rates are in bits per second.
inline constexpr double kBitsPerByte = 8.0;

/// Arithmetic of the training step.
enum class Precision {
    fp32,  ///< single precision everywhere, strict (no TF32: NVIDIA_TF32_OVERRIDE=0, torch's allow_tf32 off)
    amp,   ///< fp16 compute on tensor cores, fp32 master weights, fp16 gradients (NVIDIA AMP)
    bf16,  ///< bf16 compute, fp32 master weights, bf16 gradients
    tf32,  ///< fp32 storage with convolutions on TF32 tensor cores (Ampere and later: what PyTorch, TensorFlow
           ///< and NGC containers run "fp32" as by default there)
};

/// Precisions whose tensor arithmetic moves the same bytes at the same peak share one compute curve
/// (docs/model.md, "The compute curve"): amp and bf16 are the 16-bit family.
enum class PrecisionFamily { fp32, tf32, half };
PrecisionFamily family_of(Precision precision);

/// The activation layout the convolutions run in. Tensor cores read NHWC: NCHW tensors are
/// transposed around every convolution (cuDNN does it inside), which costs time a curve measured
/// in one layout does not carry to the other (docs/model.md, "Software").
enum class MemoryFormat {
    channels_last,  ///< NHWC (PyTorch channels_last, MXNet/TensorFlow NHWC, NVIDIA's tuned code and MLPerf)
    nchw,           ///< NCHW, PyTorch's default memory format and the 2017-2018 stock releases'
};

/// How images reach the GPU (docs/model.md, "Input pipeline", eq. D1).
enum class Loader {
    framework_default,  ///< the framework's usual loader (default_loader): resolved when the scenario is
    synthetic,          ///< no decoding: data made on the GPU or a fixed batch (benchmarks)
    cpu,                ///< the framework's own CPU pipeline: PyTorch DataLoader, tf.data, MXNet ImageRecordIter
    dali_cpu,           ///< NVIDIA DALI decoding and augmenting on the CPU
    dali,               ///< NVIDIA DALI decoding on the GPU (nvJPEG; the hardware JPEG decoder from A100 on)
};
inline constexpr int kLoaderCount = 5;

/// Where the training images are read from (docs/model.md, "The data", eqs. F1-F6; issue 45, item 2).
enum class Store {
    none,        ///< not modelled: no store bound, no staging, no cost line (the default)
    local_nvme,  ///< a copy staged from S3 to each worker's instance NVMe
    fsx_lustre,  ///< Amazon FSx for Lustre (Persistent 2, SSD) at a throughput tier, staged from S3
    s3,          ///< streamed from Amazon S3 object by object, nothing staged
    efs,         ///< Amazon EFS (Regional, Elastic throughput), staged from S3
};
inline constexpr int kStoreCount = 5;

/// How gradients are synchronised between data-parallel workers.
enum class Strategy {
    nccl,          ///< NCCL's default: per bucket the cheapest of ring, tree and NVLS (docs/model.md, eq. A1)
    ring,          ///< NCCL's ring forced (NCCL_ALGO=Ring): one pipelined ring through every GPU
    hierarchical,  ///< Horovod's hierarchical all-reduce: reduce-scatter in the node, ring across, all-gather
    tree,          ///< NCCL's double binary tree forced (NCCL_ALGO=Tree): a chain in the node, trees across
    ps,            ///< parameter servers: push gradients, pull weights, sharded over servers
};

/// The collective that carried one iteration's gradients (what the prediction reports).
enum class Algorithm {
    none,          ///< one GPU alone: nothing to synchronise
    ring,          ///< pipelined ring (eq. R1 in one node, R3 across nodes)
    tree,          ///< NCCL's double binary tree (eq. T2)
    nvls,          ///< NVLink SHARP: the NVSwitch reduces (eq. V1; one node of Hopper or later)
    hierarchical,  ///< Horovod's three phases (eq. R2)
    push_pull,     ///< parameter servers (eqs. P1, P2)
};

/// What joins one node to the others (catalog "interconnect").
enum class Interconnect {
    tcp,         ///< NCCL's socket transport over the instance's Ethernet (ENA)
    efa,         ///< AWS Elastic Fabric Adapter (SRD, through aws-ofi-nccl)
    infiniband,  ///< InfiniBand verbs (NCCL's IB transport)
    roce,        ///< RDMA over Converged Ethernet (NCCL's IB transport on Ethernet)
    tcpx,        ///< Google Cloud's GPUDirect-TCPX: TCP whose payload goes straight to GPU memory (a3-highgpu)
};
inline constexpr int kInterconnectCount = 5;
inline constexpr Interconnect kAllInterconnects[] = {Interconnect::tcp, Interconnect::efa, Interconnect::infiniband,
                                                     Interconnect::roce, Interconnect::tcpx};

/// How a node's GPUs reach each other (the efficiency class of catalog "intra_node_link").
enum class IntraLink {
    pcie,      ///< through PCIe switches and the host
    nvlink,    ///< NVLink point to point (V100's hybrid cube mesh)
    nvswitch,  ///< NVLink through NVSwitch chips: every GPU at full NVLink bandwidth to every other
};
inline constexpr int kIntraLinkCount = 3;
inline constexpr IntraLink kAllIntraLinks[] = {IntraLink::pcie, IntraLink::nvlink, IntraLink::nvswitch};

/// The training framework, each a profile of overheads and overlap that calibration refines.
/// `epochcast` is this project's own executor (epochcast-train on oneDNN + MPI, `epochcast run`).
enum class Framework { mxnet, tensorflow, pytorch, epochcast };

/// Every framework, in the order of the enum (the calibration file lists a profile for each).
inline constexpr Framework kAllFrameworks[] = {Framework::mxnet, Framework::tensorflow, Framework::pytorch,
                                               Framework::epochcast};
inline constexpr int kFrameworkCount = 4;

/// The software a run's compute ran on, the one dimension besides the GPU, precision and framework
/// that moves a compute curve by up to a factor of two (docs/model.md, "Software stacks").
enum class SoftwareStack {
    current,  ///< NVIDIA's tuned stacks from 2019 on (NGC containers, DeepLearningExamples, MLPerf code:
              ///< NHWC, DALI, fused batch norm) and what current releases reach with AMP and channels_last
    legacy,   ///< the 2017-2018 stock releases on CUDA 9 and cuDNN 7.0-7.1 (TensorFlow 1.x, MXNet 1.3,
              ///< NCHW, the framework's own input pipeline): seeds 000-002 and TensorFlow's 2017 benchmarks
};
inline constexpr int kSoftwareStackCount = 2;

/// How an instance is sold: the price list the cost uses (docs/model.md, "The catalog").
enum class Pricing {
    on_demand,       ///< pay by the second or hour, no commitment (AWS On-Demand, GCP on-demand, Azure pay-as-you-go)
    spot,            ///< spare capacity that can be taken back (AWS Spot, GCP Spot VMs, Azure Spot): a dated snapshot
    capacity_block,  ///< capacity reserved ahead for days or weeks and paid up front (AWS EC2 Capacity Blocks for ML)
    reserved_1y,     ///< a one-year commitment billed by the hour (AWS Reserved Instances and Savings Plans, GCP
                     ///< committed use discounts, Azure reservations and savings plans; the price's source says which)
    reserved_3y,     ///< the same for three years
};
inline constexpr int kPricingCount = 5;
inline constexpr Pricing kAllPricings[] = {Pricing::on_demand, Pricing::spot, Pricing::capacity_block,
                                           Pricing::reserved_1y, Pricing::reserved_3y};

/// What a catalog device is. A GPU has copy engines that move collective traffic while its cores
/// compute; a CPU rank (a `local-cpu` entry made by `epochcast-train --describe-host`) moves it with
/// the same cores that compute, so its communication never overlaps its compute.
enum class DeviceKind { gpu, cpu };

/// The spelling used on the command line and in files ("fp32", "amp", "bf16").
std::string_view to_string(Precision precision);
std::string_view to_string(MemoryFormat format);
std::string_view to_string(Loader loader);
std::string_view to_string(Store store);
std::string_view to_string(Strategy strategy);
std::string_view to_string(Framework framework);
std::string_view to_string(Pricing pricing);
std::string_view to_string(SoftwareStack stack);
std::string_view to_string(DeviceKind kind);
std::string_view to_string(Algorithm algorithm);
std::string_view to_string(Interconnect interconnect);
std::string_view to_string(IntraLink link);

/// Parse the spelling above; throws InputError naming `what` (e.g. "--precision") and the
/// accepted values when the text is none of them. "fp16" is accepted as a synonym of amp.
Precision parse_precision(std::string_view text, std::string_view what = "precision");
MemoryFormat parse_memory_format(std::string_view text, std::string_view what = "memory_format");
Loader parse_loader(std::string_view text, std::string_view what = "loader");
Store parse_store(std::string_view text, std::string_view what = "storage");
Strategy parse_strategy(std::string_view text, std::string_view what = "strategy");
Framework parse_framework(std::string_view text, std::string_view what = "framework");
Pricing parse_pricing(std::string_view text, std::string_view what = "pricing");
SoftwareStack parse_software_stack(std::string_view text, std::string_view what = "stack");
DeviceKind parse_device_kind(std::string_view text, std::string_view what = "kind");
Interconnect parse_interconnect(std::string_view text, std::string_view what = "interconnect");

/// The loader a framework's users get without asking for another: PyTorch, TensorFlow and
/// epochcast decode on the CPU (DataLoader, tf.data, epochcast-train's data threads); NVIDIA's MXNet
/// code (DeepLearningExamples, MLPerf) decodes with DALI on the GPU, the 2017-2018 stock MXNet
/// (stack legacy) with its own ImageRecordIter on the CPU.
Loader default_loader(Framework framework, SoftwareStack stack);

/// Bytes of one stored element of gradients (what all-reduce and push/pull move) for a
/// precision: 4 for fp32 and tf32, 2 for amp and bf16.
double gradient_element_bytes(Precision precision);

/// Bytes of one stored activation element for a precision: 4 for fp32 and tf32, 2 for amp and bf16.
double activation_element_bytes(Precision precision);

/// What a Comparison compares.
enum class ComparisonQuantity {
    speedup,           ///< throughput(scenario) / throughput(baseline)
    epoch_time_ratio,  ///< epoch_s(scenario) / epoch_s(baseline)
};

std::string_view to_string(ComparisonQuantity quantity);
/// "speedup" or "epoch_time_ratio"; throws InputError naming `what` otherwise.
ComparisonQuantity parse_comparison_quantity(std::string_view text, std::string_view what);

}  // namespace epochcast
