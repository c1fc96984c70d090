// The sweep spec (docs/formats.md, "Sweep spec"): an object whose keys are Scenario fields, each a value
// or a list of values; the sweep is their cross product. Combination i is decoded from its index
// (mixed radix, the last field of kSweepFields varying fastest), so a sweep can be split into
// index ranges between threads or MPI ranks without building the whole list.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/catalog.hpp"
#include "model/scenario.hpp"
#include "model/types.hpp"

namespace epochcast {

/// The spec's keys, in the order of the cross product (the last varies fastest).
/// "global_batch" takes batch_per_gpu's place in the product (a spec gives one or the other).
/// The store's, spot's, evaluation's and start-up's keys take predict's flags' names (--storage-tib:
/// storage_tib, --eval-every: eval_every).
inline constexpr std::array<std::string_view, 33> kSweepFields = {
    "model",
    "image_size",
    "classes",
    "dataset_images",
    "epochs",
    "pricing",
    "spot_interruptions_per_node_hour",
    "checkpoint_every",
    "spot_replacement_wait",
    "elastic_spot",
    "framework",
    "precision",
    "stack",
    "memory_format",
    "compiled",
    "loader",
    "storage",
    "storage_tib",
    "storage_tier",
    "eval_every",
    "eval_images",
    "startup",
    "instance",
    "gpus_per_node",
    "strategy",
    "ps_instance",
    "ps_ratio",
    "ps_nodes",
    "ps_colocated",
    "efa_adapters",
    "nodes",
    "batch_per_gpu",
    "global_batch",
};

/// A row of the sweep's CSV, bytes, about (measured at 80 columns: 461 to 541 bytes a row, 499 on average,
/// over 72 rows of p3.16xlarge, p4d.24xlarge and p5.48xlarge on 1 to 32 nodes, on demand and spot,
/// with and without fsx-lustre): what a spec's size is told in.
inline constexpr double kSweepCsvBytesPerRow = 500;
/// The most combinations a sweep spec may have: 10^9 rows, some 500 GB of CSV.
inline constexpr double kMaxSweepRows = 1e9;

/// Every key's list of values. A key the spec leaves out has the Scenario's default as its one
/// value; `strategy` left out means nccl (NCCL's own choice of algorithm). With `global_batch`
/// the per-GPU batch of each row is the global batch over the row's GPUs (Scenario::global_batch).
struct SweepSpec {
    std::vector<std::string> model{"resnet50"};
    std::vector<int> image_size{224};
    std::vector<int> classes{1000};
    std::vector<std::int64_t> dataset_images{kImageNetTrainImages};
    std::vector<double> epochs{90};
    std::vector<Pricing> pricing{Pricing::on_demand};
    /// Spot rows only (the keys need "spot" among the pricings): interruptions per node-hour (-1: the
    /// catalog's), seconds of work between checkpoints (0: Young's interval), the replacement wait.
    std::vector<double> spot_interruptions_per_node_hour{-1};
    std::vector<double> checkpoint_interval_s{0};
    std::vector<double> spot_replacement_wait_s{kDefaultSpotReplacementWaitS};
    /// Spot rows only: priced elastic (predict's --elastic-spot, Scenario::spot_elastic).
    std::vector<bool> elastic_spot{false};
    std::vector<Framework> framework{Framework::pytorch};
    std::vector<Precision> precision{Precision::amp};
    std::vector<SoftwareStack> stack{SoftwareStack::current};
    std::vector<MemoryFormat> memory_format{MemoryFormat::channels_last};
    std::vector<bool> compiled{false};                      ///< PyTorch under torch.compile (Scenario::compiled)
    std::vector<Loader> loader{Loader::framework_default};  ///< "default": each row's framework's loader
    std::vector<Store> storage{Store::none};
    /// fsx-lustre rows only (the keys need "fsx-lustre" among the stores): capacity in TiB and
    /// throughput tier in MB/s per TiB; 0: the store's default.
    std::vector<double> storage_tib{0};
    std::vector<double> storage_tier_MBps_per_TiB{0};
    /// As predict's --eval-every (nullopt: the recipe's cadence with a target, else none),
    /// --eval-images and --startup (seconds; -1: the calibration's).
    std::vector<std::optional<int>> eval_every_epochs{Scenario{}.eval_every_epochs};
    std::vector<int> eval_images{Scenario{}.eval_images};
    std::vector<double> startup_s{Scenario{}.startup_s};
    std::vector<std::string> instance{"p5.48xlarge"};
    std::vector<int> gpus_per_node{0};         ///< 0: all the instance has
    std::vector<Strategy> strategy;            ///< empty: by the instance (see above)
    std::vector<std::string> ps_instance{""};  ///< strategy ps only; "" none
    std::vector<double> ps_ratio{0};           ///< server nodes per worker node (ps only); 0: use ps_nodes
    std::vector<int> ps_nodes{0};              ///< server nodes (ps only); 0: use ps_ratio
    std::vector<bool> ps_colocated{false};     ///< one server on each worker node (ps only)
    std::vector<int> efa_adapters{-1};         ///< -1: all the instance has
    std::vector<int> nodes{1};
    std::vector<int> batch_per_gpu{256};
    std::vector<int> global_batch;  ///< empty: batch_per_gpu rules; else fixed global batches
    bool epochs_given = false;      ///< the spec lists "epochs" itself
    /// Not spec keys (sweep's --target-top1 and --recipe): every row's target accuracy and recipe,
    /// which make the epochs an output (Scenario::target_top1_percent); 0 trains `epochs`.
    double target_top1_percent = 0;
    std::string recipe;

    /// Each key's list's length, in kSweepFields' order (1 for strategy left out, and for whichever
    /// of batch_per_gpu and global_batch the spec does not give).
    std::array<std::size_t, kSweepFields.size()> lengths() const;

    /// The number of combinations: the product of the lists' lengths.
    std::size_t combinations() const;

    /// Combination `index` (0 <= index < combinations()). Parameter-server keys apply only to
    /// strategy ps: another strategy's scenario leaves them out; so do the spot keys to spot rows
    /// and storage_tib and storage_tier to fsx-lustre rows. ps_nodes comes from ps_ratio as
    /// ceil(ratio x nodes) when the ratio is given. The strategy, when the spec gives none, is
    /// chosen by `catalog`'s instance (an unknown instance cannot happen after parse).
    Scenario scenario_at(std::size_t index, const Catalog& catalog) const;
};

/// A model error's text as a sweep row gives it: each command-line flag that is a spec key
/// ("--ps-instance") named as the key ("\"ps_instance\""), since the spec, not a flag, set it
/// (issue 59, item 15: a row was refused "for flags the user never gave"); other text unchanged.
std::string in_spec_terms(std::string_view message);

/// Parse spec JSON; `origin` names it in errors. Throws InputError naming the origin, the key and
/// the offending value: malformed JSON, not an object, an unknown key, an empty list, a value of
/// the wrong type, a count that is zero or negative, an unknown instance/model/precision/strategy/
/// framework/pricing/store, a CPU-only instance as a worker, both ps_ratio and ps_nodes given, a
/// store's size or a spot figure that predict's flag refuses (by predict's own checks), a spot key
/// without "spot" among the pricings or storage_tib/storage_tier without "fsx-lustre" among the
/// stores, or more than kMaxSweepRows combinations.
SweepSpec parse_sweep_spec(std::string_view json_text, std::string_view origin, const Catalog& catalog);

/// Read and parse a spec file; a missing file is an InputError naming the path.
SweepSpec read_sweep_spec(const std::filesystem::path& path, const Catalog& catalog);

}  // namespace epochcast
