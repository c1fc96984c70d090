// Where the training images live and what the run around the iterations costs (issue 45, items 2-4):
// the store's read bound, the staging copy before training, the store's bill, the evaluation passes.
// One small function per formula; derivations in docs/model.md, "The data" (eqs. F1-F8) and
// "Evaluation" (eqs. E1, E2). Times in seconds, rates in bytes or images per second, money in USD.
// The figures behind them are data: model/storage.json, with their sources and dates.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/catalog.hpp"
#include "model/resolved_scenario.hpp"
#include "model/scenario.hpp"
#include "model/types.hpp"

namespace epochcast {

/// One FSx for Lustre throughput tier (Persistent 2, SSD).
struct StorageTier {
    double MBps_per_TiB = 0;  ///< the tier's name: baseline disk throughput per TiB provisioned
    double disk_read_MBps_per_TiB = 0;
    double network_MBps_per_TiB = 0;
    double usd_per_GB_month = 0;
};

/// One store of model/storage.json. A rate of 0 means "no bound" (infinite), a price of 0 "free".
struct StoreSpec {
    Store store = Store::none;
    bool staged = false;             ///< a copy from S3 is made before training
    bool staged_on_workers = false;  ///< the workers make it (and are billed meanwhile)
    double min_tib = 0;              ///< fsx-lustre: the smallest file system
    double default_tib = 0;
    double default_tier_MBps_per_TiB = 0;
    std::vector<StorageTier> tiers;               ///< fsx-lustre
    bool per_client_is_instance_network = false;  ///< one client reads at its instance's line rate
    double per_client_Bps = 0;                    ///< else this (0: no bound)
    double aggregate_read_Bps = 0;                ///< whole store (0: no bound, or per tier)
    double aggregate_write_Bps = 0;
    double get_per_s_per_prefix = 0;  ///< s3
    double prefixes = 0;              ///< s3
    /// The share of a client's RAM that its page cache may hold of the files read (eq. F7); 0: none
    /// (s3: the loader's GETs bypass the page cache).
    double page_cache_fraction_of_ram = 0;
    double usd_per_GB_month = 0;
    double usd_per_GB_read = 0;
    double usd_per_GB_written = 0;
    double usd_per_1000_get = 0;
    double usd_per_1000_put = 0;
    std::string source;
};

/// model/storage.json: the dataset's files and bytes, staging's per-file cost, the stores.
struct StorageCatalog {
    double train_files = 0;
    double train_bytes = 0;
    double val_files = 0;
    double val_bytes = 0;
    double staging_per_file_s = 0;
    double staging_concurrent_files = 0;
    std::vector<StoreSpec> stores;

    /// The mean JPEG of the training set and of the validation set, in bytes.
    double train_image_bytes() const { return train_bytes / train_files; }
    double val_image_bytes() const { return val_bytes / val_files; }
    /// The store's entry; InputError for Store::none or one the data does not describe.
    const StoreSpec& store(Store store) const;
    /// The fsx-lustre tier of `MBps_per_TiB` (0: the store's default); InputError naming the tiers
    /// there are otherwise.
    const StorageTier& tier(const StoreSpec& spec, double MBps_per_TiB) const;
    /// The capacity provisioned for `tib` (0: the store's default), TiB; InputError under the
    /// store's smallest file system.
    double capacity_tib(const StoreSpec& spec, double tib) const;

    /// Parse an epochcast.storage/1 document; InputError naming `origin` and the key for a bad one.
    static StorageCatalog parse(std::string_view text, const std::string& origin);
    /// The built-in data (model/storage.json, compiled in).
    static const StorageCatalog& built_in();
};

/// The largest FSx for Lustre file system epochcast takes, in TiB (--storage-tib).
inline constexpr double kMaxStorageTiB = 100'000;
/// The validation set of ImageNet-1k, in images (ILSVRC2012 val).
inline constexpr int kImageNetValImages = 50'000;
/// The most evaluation images and the longest evaluation interval epochcast takes.
inline constexpr int kMaxEvalImages = 1'000'000'000;
inline constexpr int kMaxEvalEveryEpochs = 10'000;

/// Eq. F1: the read rate a cluster training at `images_per_s` demands of its store, bytes/s.
double demanded_read_Bps(double images_per_s, double image_bytes);

/// Eq. F2: what a store delivers to `nodes` clients, bytes/s: the lower of its aggregate and
/// `nodes` times one client's bound; a bound of 0 or infinity is none (the result may be infinite).
double store_deliverable_Bps(double aggregate_Bps, double per_client_Bps, int nodes);

/// Eq. F3: the images per second a store's `deliverable_Bps` feeds one of `gpus` GPUs (infinite
/// for an unbounded store), for eq. D1's input pipeline to take the lower of it and the decoding.
double store_images_per_s_per_gpu(double deliverable_Bps, double image_bytes, int gpus);

/// Eq. F7: the share of a node's reads its page cache serves once warm: the lower of 1 and the
/// bytes it may cache over the bytes the run reads (0 where either is 0).
double page_cache_hit_fraction(double cache_bytes, double dataset_bytes);

/// Eq. F7: what the store feeds one GPU once the node's page cache is warm, images/s: the store's
/// rate with a cold cache over the share it still serves (infinite where the cache holds it all).
double warm_store_images_per_s_per_gpu(double cold_images_per_s_per_gpu, double hit_fraction);

/// Eq. F8: the epochs of a run of `epochs` on `nodes` nodes that the store still bounds while the
/// nodes' page caches fill: those whose cold share (1 - 1/nodes)^(e-1) of the first epoch's
/// `first_epoch_s` exceeds the warm `steady_epoch_s` (0 where the first epoch is no longer).
double store_bound_epochs(double epochs, int nodes, double first_epoch_s, double steady_epoch_s);

/// Eq. F8: the iterations' time of `epochs` epochs, the sum over epoch e of max(steady_epoch_s,
/// first_epoch_s (1 - 1/nodes)^(e-1)), in closed form; a fraction of an epoch counts its share.
/// With first_epoch_s = 1 and steady_epoch_s = 1 - c, the epochs' worth of reads the store serves.
double cached_epochs_s(double epochs, int nodes, double first_epoch_s, double steady_epoch_s);

/// Eq. F4: a copy of `files` files of `bytes` in all, one round trip of `per_file_s` each with
/// `concurrent_files` at once, through `bandwidth_Bps`: the longer of the two.
double staging_time_s(double files, double bytes, double per_file_s, double concurrent_files, double bandwidth_Bps);

/// Eq. F5: storage billed by capacity for `hours`: GB-months (730 hours each) x price.
double storage_usd(double capacity_GB, double usd_per_GB_month, double hours);

/// Eq. F6: traffic billed by volume and by request: GB read and written at their prices plus
/// requests at their price per 1,000.
double transfer_usd(double GB_read, double usd_per_GB_read, double GB_written, double usd_per_GB_written, double gets,
                    double usd_per_1000_get, double puts, double usd_per_1000_put);

/// Eq. E1: one evaluation pass of `images` on `gpus` GPUs at `batch` per GPU: ceil(images / (gpus x
/// batch)) iterations, each the longer of a forward pass (a third of the training step's compute,
/// eq. C2) and the input pipeline's time for the batch (eq. D1).
double evaluation_pass_s(double images, int gpus, int batch, double training_compute_s, double data_s);

/// Eq. E2: the evaluations of a run of `epochs` evaluated every `every_epochs` (0: never):
/// floor(epochs / every_epochs).
double evaluations(double epochs, int every_epochs);

/// The data of a resolved scenario (eqs. F1-F7; CostModel::resolve's step): the store's deliverable
/// rate to the cluster's `r.nodes` and its GPUs, cold and once the page caches are warm, the staging
/// copy, the capacity and the traffic it bills, and the checkpoint's write to it (`checkpoint_bytes`,
/// which may lengthen r.checkpoint_s). Reads r's nodes, GPUs, dataset and evaluation images and
/// cadence. Nothing for Store::none. Throws InputError for a tier the store does not have, or a
/// capacity below the store's least or that cannot hold the dataset (the flags' consistency and
/// limits were checked before, model/limits.hpp).
void set_storage(ResolvedScenario& r, const Scenario& scenario, const InstanceSpec& worker, double checkpoint_bytes);

}  // namespace epochcast
