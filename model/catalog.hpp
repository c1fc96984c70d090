// The hardware catalog: GPUs and instances with prices, as data (model/catalog.json, schema
// "epochcast.catalog/1", docs/formats.md) with a source for every figure. The built-in file is
// compiled into the binary; a user file given with --catalog adds entries or overrides them by name.
#pragma once

#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/types.hpp"

namespace epochcast {

/// One GPU as AWS counts it (a K80 board is two GPUs; "K80" here is one GK210).
struct GpuSpec {
    std::string name;                   ///< e.g. "V100-SXM2-16GB"
    DeviceKind kind = DeviceKind::gpu;  ///< "kind" in the file, optional: "gpu" (default) or "cpu" (a host's CPU ranks)
    double fp32_tflops = 0;             ///< peak dense fp32, in 10^12 FLOP/s
    double fp16_tflops = 0;  ///< peak dense fp16 (tensor cores where present), in 10^12 FLOP/s; 0 where none (CPUs)
    double bf16_tflops = 0;  ///< peak dense bf16, in 10^12 FLOP/s; 0 where the GPU has no bf16
    double tf32_tflops = 0;  ///< peak dense TF32 tensor-core rate, in 10^12 FLOP/s; 0 where the GPU has no TF32
    double memory_gib = 0;   ///< device memory, in GiB
    double memory_GBps = 0;  ///< device memory bandwidth, in 10^9 bytes/s
    /// "sms", optional: streaming multiprocessors, the GPU's parallel units: a batch fills them only
    /// past a few images each (docs/model.md, eq. C1b); 0 where not given (a host's CPU ranks).
    int sms = 0;
    /// "jpeg_decoder_cores", optional: the cores of the GPU's hardware JPEG decoder (NVJPG), which
    /// DALI's GPU decoding shares with nvJPEG's CUDA path (docs/model.md, eq. D2): A100 and A30 one
    /// engine of 5 cores, H100, H200 and B200 7 engines, L4 4; 0 where there is none (before Ampere,
    /// GA102's A10G) or none is published (L40S).
    int jpeg_decoder_cores = 0;
    /// "chip", optional: GPUs that name the same chip are the same silicon at the same clocks (the
    /// same peaks); only their memory differs in size and bandwidth (V100-SXM2-16GB and -32GB;
    /// A100-SXM4-40GB and -80GB; H100-SXM5-80GB and H200). A compute curve measured on one holds for
    /// all, carried by its memory-bandwidth term (docs/model.md, "The compute curve"). Empty: the
    /// GPU's own name.
    std::string chip;
    std::string source;  ///< where the figures come from

    /// The chip, or the name where none is given.
    const std::string& chip_or_name() const { return chip.empty() ? name : chip; }
};

/// One way an instance is sold (a Pricing), and its price that way: "prices" in the catalog file.
/// How often a family's spot instances are taken back, as the cloud publishes it (docs/model.md,
/// eq. X0): AWS Spot Instance Advisor's monthly "frequency of interruption" band.
struct SpotInterruptions {
    std::string band;          ///< "<5%", "5-10%", "10-15%", "15-20%" or ">20%"
    double per_node_hour = 0;  ///< the band's midpoint as a rate (eq. X0)
    std::string read;          ///< YYYY-MM-DD the band was read or assumed
    std::string source;        ///< where it comes from
    bool estimate = false;     ///< assumed, not read for this family and region: the source says how
};

struct Price {
    double usd_per_hour = 0;  ///< > 0, US dollars per hour of one instance
    /// The date the price was read from its source, YYYY-MM-DD; empty where a user file gives none.
    std::string read;
    /// Where the price comes from and on what conditions (region, OS, term); empty: the instance's source.
    std::string source;
    /// Not a quoted price but a figure made from others (a rule of thumb, a sum of parts): the source says how.
    bool estimate = false;
    /// Spot prices only, optional: how often such an instance is interrupted ("interruptions").
    std::optional<SpotInterruptions> interruptions;
};

/// One instance type. CPU-only instances (parameter servers) have gpus == 0 and an empty gpu.
struct InstanceSpec {
    std::string name;         ///< e.g. "p3.16xlarge"
    std::string gpu;          ///< GpuSpec::name, empty for CPU-only instances
    int gpus = 0;             ///< GPUs per instance
    int vcpus = 0;            ///< virtual CPUs
    double memory_gib = 0;    ///< host memory, in GiB
    double network_gbps = 0;  ///< NIC line rate, in 10^9 bit/s
    int efa_adapters = 0;     ///< Elastic Fabric Adapters (0 = plain ENA/TCP networking)
    /// "interconnect", optional: what joins the node to others. Default efa when efa_adapters > 0,
    /// else tcp.
    Interconnect interconnect = Interconnect::tcp;
    /// "nics", optional: network adapters that carry GPU traffic (InfiniBand rails, EFA adapters).
    /// Default: efa_adapters when > 0, else 1. network_gbps is their total line rate.
    int nics = 1;
    /// "gpudirect_rdma", optional: the NIC reads and writes GPU memory directly. Default true for
    /// infiniband and roce, false for efa and tcp (p4d and later say true). Without it NCCL stages
    /// every message through host memory (docs/model.md, eq. N1).
    bool gpudirect_rdma = false;
    /// "intra_node_link", optional: "pcie3", "pcie4", "pcie5", "nvlink2" ... "nvlink5", or "pcie" /
    /// "nvlink" when the generation is unknown; empty for one GPU. Default: pcie when
    /// intra_node_GBps <= 64, else nvlink.
    std::string intra_node_link;
    int nvlink_generation = 0;  ///< from intra_node_link: 2-5, 0 for PCIe or unknown
    /// "nvswitch", optional (default false): the NVLinks go through NVSwitch chips, so every GPU
    /// reaches every other at full bandwidth, and from NVLink 4 on the switch can reduce (NVLS).
    bool nvswitch = false;
    double intra_node_GBps = 0;  ///< GPU-to-GPU bandwidth inside the node per GPU (NVLink or PCIe), in 10^9 bytes/s
    /// "cloud", optional: who sells it ("aws", "gcp", "azure"), or "owned"; a lower-case word. Empty where not given.
    std::string cloud;
    /// "region", optional: where the prices were read (us-east-1, us-central1, eastus). Empty where not given.
    std::string region;
    /// "prices": how the instance is sold, indexed by Pricing; none at all for a machine you own (or one whose
    /// price the catalog could not find: the source says which).
    std::array<std::optional<Price>, kPricingCount> prices;
    std::string source;  ///< where the figures come from

    /// Its price under `pricing`, or nullptr where it is not sold that way.
    const Price* price(Pricing pricing) const;
    /// Its price per hour under `pricing` in US dollars, 0 where it is not sold that way.
    double usd_per_hour(Pricing pricing) const;
    /// Some price is known (false: a machine you own, or no price found).
    bool priced() const;
    /// The pricings it is sold under, "on-demand, spot", or "none".
    std::string pricings_text() const;

    /// The efficiency class of the node's GPU-to-GPU link.
    IntraLink intra_link() const;
    /// What a gradient all-reduce over `nodes` of these crosses, by name: `fabric` (the
    /// interconnect the prediction used) between nodes; on one node the GPUs' own link ("nvswitch").
    std::string_view gradient_link(int nodes, Interconnect fabric) const;
    /// NVLink SHARP: NVSwitch with NVLink 4 or later (H100, H200, B200 nodes).
    bool has_nvls() const { return nvswitch && nvlink_generation >= 4; }
};

/// A catalog's positions by name (looked up with a string_view, no copy).
struct CatalogNameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const noexcept { return std::hash<std::string_view>{}(name); }
};
using CatalogNameIndex = std::unordered_map<std::string, std::size_t, CatalogNameHash, std::equal_to<>>;

/// The index of `pricing` in InstanceSpec::prices.
inline std::size_t price_slot(Pricing pricing) { return static_cast<std::size_t>(pricing); }

/// The names of `specs` (GPUs or instances), comma-separated, or "none": what an error names as
/// known.
template <typename Spec>
std::string known_names(const std::vector<Spec>& specs) {
    std::string names;
    for (const Spec& spec : specs) {
        if (!names.empty()) names += ", ";
        names += spec.name;
    }
    return names.empty() ? "none" : names;
}

/// Up to three of `names` close to `name`, nearest first, compared without case: a name it begins
/// (of 4 characters or more) or that begins it, or one within an edit distance of a fifth of its
/// length (at least 1). What "did you mean" offers.
std::vector<std::string> close_names(const std::vector<std::string>& names, std::string_view name);

/// What an error says of an unknown `name` among `specs`: "(did you mean X?)" where some names are
/// close to it, else "(known: every name)".
template <typename Spec>
std::string unknown_name_hint(const std::vector<Spec>& specs, std::string_view name) {
    std::vector<std::string> names;
    names.reserve(specs.size());
    for (const Spec& spec : specs) names.push_back(spec.name);
    const std::vector<std::string> close = close_names(names, name);
    if (close.empty()) return "(known: " + known_names(specs) + ")";
    std::string text = "(did you mean ";
    for (std::size_t i = 0; i < close.size(); ++i) {
        text += (i == 0 ? "" : i + 1 == close.size() ? " or " : ", ") + close[i];
    }
    return text + "? `epochcast catalog` lists all " + std::to_string(specs.size()) + ")";
}

/// Every GPU and instance known, built in plus user files. Entries are found by name through a
/// hash index, so that reading, merging and searching n entries takes time linear in n (a file
/// of 100,000 entries took over a minute when every lookup scanned the entries).
class Catalog {
public:
    /// The built-in catalog (model/catalog.json compiled in).
    static Catalog built_in();

    /// Parse catalog JSON text; `origin` names it in error messages (a path, or "built-in catalog").
    /// Throws InputError on malformed JSON, a wrong schema, a missing key or wrong type (naming the
    /// entry and the key), a negative or zero count where it must be positive, a negative price or
    /// peak (fp16_tflops, bf16_tflops may be 0), an unknown pricing model or a malformed date, or an
    /// instance whose gpu names no GPU known to this catalog. An instance's prices come from "prices"
    /// or from the older keys "price_usd_per_hour" (on-demand; 0: none) and "spot_usd_per_hour" (spot).
    static Catalog parse(std::string_view json_text, std::string_view origin);

    /// Read and parse a file; throws InputError when it is missing or unreadable (naming the path).
    static Catalog load(const std::filesystem::path& path);

    /// As parse(), but an instance's gpu may also name a GPU of `known` (a user file that adds an
    /// instance with a built-in GPU need not repeat the GPU), and an entry whose name `known` has
    /// overrides only the keys it gives: the others keep the known entry's values (a price-only
    /// override). A new entry needs every required key. The result holds only this text's entries.
    static Catalog parse(std::string_view json_text, std::string_view origin, const Catalog& known);

    /// As load(), resolving GPU names against this file and `known` (see parse above).
    static Catalog load(const std::filesystem::path& path, const Catalog& known);

    /// Add the other catalog's entries, replacing ours of the same name, then re-check that every
    /// instance's gpu is known.
    void merge(const Catalog& other);

    /// The clouds the instances name, sorted, each once ("aws", "azure", "gcp", "owned").
    std::vector<std::string> clouds() const;
    /// Throws InputError naming `what` (e.g. "--cloud") and listing the clouds when no instance names `cloud`.
    void check_cloud(std::string_view cloud, std::string_view what) const;
    /// The instances of `cloud` and the GPUs they name (check_cloud first).
    Catalog only_cloud(std::string_view cloud) const;

    /// Look up by exact name; throws InputError listing the known names when there is none.
    const GpuSpec& gpu(std::string_view name) const;
    /// The GPU of that name, or nullptr.
    const GpuSpec* find_gpu(std::string_view name) const;
    const InstanceSpec& instance(std::string_view name) const;
    /// The instance of that name, or nullptr.
    const InstanceSpec* find_instance(std::string_view name) const;
    /// The GPU of an instance; throws InputError for a CPU-only instance.
    const GpuSpec& gpu_of(const InstanceSpec& instance) const;

    /// What computes on the instance: its GPU's kind (a `local-cpu` entry's is cpu), gpu for a
    /// CPU-only instance.
    DeviceKind device_kind(const InstanceSpec& instance) const;

    /// The other GPUs of the same chip as `gpu` (GpuSpec::chip), by name.
    std::vector<std::string> same_chip(const GpuSpec& gpu) const;

    const std::vector<GpuSpec>& gpus() const { return gpus_; }
    const std::vector<InstanceSpec>& instances() const { return instances_; }

    /// The catalog as "epochcast.catalog/1" JSON text (indented by `indent` spaces), which
    /// parse() reads back to an equal catalog. CPU-only instances are written without "gpu".
    std::string to_json_text(int indent = 2) const;

private:
    /// Rebuilds the indices from the entries (after parse() and only_cloud() fill them).
    void reindex();

    std::vector<GpuSpec> gpus_;
    std::vector<InstanceSpec> instances_;
    CatalogNameIndex gpu_index_;       ///< name -> position in gpus_
    CatalogNameIndex instance_index_;  ///< name -> position in instances_
};

/// The built-in catalog with each extra file (`--catalog`) merged over it, in order: a later file's
/// entries replace earlier ones of the same name, new ones are added. A file may refer to GPUs
/// already known (built in or from an earlier file). Throws InputError naming the file and entry.
Catalog load_catalog(const std::vector<std::string>& extra_files);

}  // namespace epochcast
