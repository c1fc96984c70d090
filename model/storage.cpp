#include "model/storage.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "model/embedded.hpp"
#include "model/errors.hpp"
#include "model/spot.hpp"
#include "model/text_io.hpp"

namespace epochcast {
namespace {

using json = nlohmann::json;

constexpr std::string_view kSchema = "epochcast.storage/1";
constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kBytesPerMiB = 1024.0 * 1024.0;

/// A number of `object` at `key`: finite and not negative (0 when absent and `optional`).
double number(const json& object, const char* key, const std::string& where, bool optional = true) {
    const auto it = object.find(key);
    if (it == object.end()) {
        if (optional) return 0;
        throw InputError(where + ": '" + key + "' is missing");
    }
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
        throw InputError(where + ": '" + key + "' must be a finite number, not negative");
    }
    return it->get<double>();
}

/// A bound of 0 or infinity is none.
bool bounded(double Bps) { return Bps > 0 && std::isfinite(Bps); }

StoreSpec parse_store_spec(const json& j, const std::string& where) {
    if (!j.is_object()) throw InputError(where + " must be an object");
    StoreSpec s;
    s.store = parse_store(j.value("name", ""), where + ": 'name'");
    s.staged = j.value("staged", false);
    s.staged_on_workers = j.value("staged_on_workers", false);
    s.min_tib = number(j, "min_tib", where);
    s.default_tib = number(j, "default_tib", where);
    s.default_tier_MBps_per_TiB = number(j, "default_tier_MBps_per_TiB", where);
    if (const auto tiers = j.find("tiers"); tiers != j.end()) {
        if (!tiers->is_array() || tiers->empty()) throw InputError(where + ": 'tiers' must be a non-empty array");
        for (const json& t : *tiers) {
            const std::string at = where + ": a tier";
            s.tiers.push_back({number(t, "MBps_per_TiB", at, false), number(t, "disk_read_MBps_per_TiB", at, false),
                               number(t, "network_MBps_per_TiB", at, false), number(t, "usd_per_GB_month", at, false)});
        }
    }
    s.per_client_is_instance_network = j.value("per_client", "") == "instance network";
    s.per_client_Bps = number(j, "per_client_MiBps", where) * kBytesPerMiB;
    s.aggregate_read_Bps = number(j, "aggregate_read_GiBps", where) * kBytesPerGiB;
    s.aggregate_write_Bps = number(j, "aggregate_write_GiBps", where) * kBytesPerGiB;
    s.get_per_s_per_prefix = number(j, "get_per_s_per_prefix", where);
    s.prefixes = number(j, "prefixes", where);
    s.page_cache_fraction_of_ram = number(j, "page_cache_fraction_of_ram", where);
    if (s.page_cache_fraction_of_ram > 1) {
        throw InputError(where + ": 'page_cache_fraction_of_ram' must be a share of the RAM, 0 to 1");
    }
    s.usd_per_GB_month = number(j, "usd_per_GB_month", where);
    s.usd_per_GB_read = number(j, "usd_per_GB_read", where);
    s.usd_per_GB_written = number(j, "usd_per_GB_written", where);
    s.usd_per_1000_get = number(j, "usd_per_1000_get", where);
    s.usd_per_1000_put = number(j, "usd_per_1000_put", where);
    s.source = j.value("source", "");
    if (s.source.empty()) throw InputError(where + ": every store carries its 'source'");
    return s;
}

}  // namespace

const StoreSpec& StorageCatalog::store(Store store) const {
    for (const StoreSpec& s : stores) {
        if (s.store == store) return s;
    }
    throw InputError("--storage " + std::string(to_string(store)) + ": the storage data describes no such store");
}

const StorageTier& StorageCatalog::tier(const StoreSpec& spec, double MBps_per_TiB) const {
    if (MBps_per_TiB == 0) MBps_per_TiB = spec.default_tier_MBps_per_TiB;
    std::string known;
    for (const StorageTier& t : spec.tiers) {
        if (t.MBps_per_TiB == MBps_per_TiB) return t;
        known += (known.empty() ? "" : ", ") + shortest(t.MBps_per_TiB);
    }
    throw InputError("--storage-tier " + shortest(MBps_per_TiB) + " is no throughput tier of " +
                     std::string(to_string(spec.store)) + " (MB/s per TiB: " + (known.empty() ? "none" : known) + ")");
}

double StorageCatalog::capacity_tib(const StoreSpec& spec, double tib) const {
    if (tib == 0) tib = spec.default_tib;
    if (tib < spec.min_tib) {
        throw InputError("--storage-tib " + shortest(tib) + " is below the smallest " +
                         std::string(to_string(spec.store)) + " file system (" + shortest(spec.min_tib) + " TiB)");
    }
    return tib;
}

StorageCatalog StorageCatalog::parse(std::string_view text, const std::string& origin) {
    const json root = parse_json(text, origin);
    if (!root.is_object() || root.value("schema", "") != kSchema) {
        throw InputError(origin + ": not an " + std::string(kSchema) + " file ('schema' must say so)");
    }
    StorageCatalog out;
    const json& dataset = root.at("dataset");
    out.train_files = number(dataset, "train_files", origin + ": dataset", false);
    out.train_bytes = number(dataset, "train_bytes", origin + ": dataset", false);
    out.val_files = number(dataset, "val_files", origin + ": dataset", false);
    out.val_bytes = number(dataset, "val_bytes", origin + ": dataset", false);
    if (!(out.train_files > 0) || !(out.val_files > 0)) throw InputError(origin + ": the dataset has no files");
    const json& staging = root.at("staging");
    out.staging_per_file_s = number(staging, "per_file_s", origin + ": staging", false);
    out.staging_concurrent_files = number(staging, "concurrent_files", origin + ": staging", false);
    if (!(out.staging_concurrent_files >= 1)) throw InputError(origin + ": staging needs 1 concurrent file or more");
    const auto stores = root.find("stores");
    if (stores == root.end() || !stores->is_array()) throw InputError(origin + ": 'stores' must be an array");
    for (std::size_t i = 0; i < stores->size(); ++i) {
        out.stores.push_back(parse_store_spec((*stores)[i], origin + ": store " + std::to_string(i)));
    }
    return out;
}

const StorageCatalog& StorageCatalog::built_in() {
    static const StorageCatalog built = parse(embedded::storage_json, "built-in storage data");
    return built;
}

double demanded_read_Bps(double images_per_s, double image_bytes) { return images_per_s * image_bytes; }

double store_deliverable_Bps(double aggregate_Bps, double per_client_Bps, int nodes) {
    double deliverable = kInfinity;
    if (bounded(aggregate_Bps)) deliverable = aggregate_Bps;
    if (bounded(per_client_Bps)) deliverable = std::fmin(deliverable, per_client_Bps * nodes);
    return deliverable;
}

double store_images_per_s_per_gpu(double deliverable_Bps, double image_bytes, int gpus) {
    return deliverable_Bps / image_bytes / gpus;
}

double page_cache_hit_fraction(double cache_bytes, double dataset_bytes) {
    if (!(cache_bytes > 0) || !(dataset_bytes > 0)) return 0;
    return std::fmin(1.0, cache_bytes / dataset_bytes);
}

double warm_store_images_per_s_per_gpu(double cold_images_per_s_per_gpu, double hit_fraction) {
    if (!(hit_fraction < 1)) return kInfinity;
    return cold_images_per_s_per_gpu / (1.0 - hit_fraction);
}

double store_bound_epochs(double epochs, int nodes, double first_epoch_s, double steady_epoch_s) {
    if (!(epochs > 0) || !(first_epoch_s > steady_epoch_s)) return 0;
    const double q = 1.0 - 1.0 / std::max(nodes, 1);
    // Epoch e is bound while first q^(e-1) > steady: e - 1 < ln(steady / first) / ln q (one epoch for
    // one node, whose cache holds after the first what it will hold).
    const double bound = q > 0 && steady_epoch_s > 0
                             ? 1.0 + std::floor(std::log(steady_epoch_s / first_epoch_s) / std::log(q))
                         : q > 0 ? kInfinity
                                 : 1.0;
    return std::fmin(epochs, bound);
}

double cached_epochs_s(double epochs, int nodes, double first_epoch_s, double steady_epoch_s) {
    if (!(epochs > 0)) return 0;
    const double q = 1.0 - 1.0 / std::max(nodes, 1);
    const double whole = std::floor(epochs);
    const double bound = std::fmin(whole, store_bound_epochs(whole, nodes, first_epoch_s, steady_epoch_s));
    // The bound epochs' geometric series, the steady rest, and the share of a last partial epoch.
    const double series = bound > 0 ? first_epoch_s * (1.0 - std::pow(q, bound)) / (1.0 - q) : 0.0;
    const double partial =
        epochs > whole ? (epochs - whole) * std::fmax(steady_epoch_s, first_epoch_s * std::pow(q, whole)) : 0.0;
    return series + (whole - bound) * steady_epoch_s + partial;
}

double staging_time_s(double files, double bytes, double per_file_s, double concurrent_files, double bandwidth_Bps) {
    const double per_file_bound_s = files * per_file_s / concurrent_files;
    const double bandwidth_bound_s = bounded(bandwidth_Bps) ? bytes / bandwidth_Bps : 0.0;
    return std::fmax(per_file_bound_s, bandwidth_bound_s);
}

double storage_usd(double capacity_GB, double usd_per_GB_month, double hours) {
    return capacity_GB * usd_per_GB_month * hours / kHoursPerMonth;
}

double transfer_usd(double GB_read, double usd_per_GB_read, double GB_written, double usd_per_GB_written, double gets,
                    double usd_per_1000_get, double puts, double usd_per_1000_put) {
    return GB_read * usd_per_GB_read + GB_written * usd_per_GB_written + gets / 1000.0 * usd_per_1000_get +
           puts / 1000.0 * usd_per_1000_put;
}

double evaluation_pass_s(double images, int gpus, int batch, double training_compute_s, double data_s) {
    if (!(images > 0)) return 0;
    const double iterations = std::ceil(images / (static_cast<double>(gpus) * batch));
    return iterations * std::fmax(training_compute_s / 3.0, data_s);
}

double evaluations(double epochs, int every_epochs) {
    if (every_epochs <= 0) return 0;
    return std::floor(epochs / every_epochs);
}

namespace {

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

}  // namespace epochcast
