// The hardware catalog's files (model/catalog.hpp): parsing and validating "epochcast.catalog/1"
// JSON, each entry over the one it names in a known catalog (every problem names the file, the
// entry and the key), and writing a catalog back in that format.
#include "model/catalog.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/billing.hpp"
#include "model/embedded.hpp"
#include "model/errors.hpp"
#include "model/spot.hpp"
#include "model/text_io.hpp"

namespace epochcast {
namespace {

using nlohmann::json;

constexpr std::string_view kSchema = "epochcast.catalog/1";
constexpr std::string_view kBuiltInOrigin = "built-in catalog";

/// Which values a number may take.
enum class Bound { positive, non_negative };

/// Where a value sits, for error messages: the file (or "built-in catalog") and the entry,
/// e.g. `instances[3] "p3.16xlarge"`.
struct Where {
    std::string_view origin;
    std::string entry;

    [[noreturn]] void fail(std::string_view key, const std::string& what) const {
        std::string message(origin);
        message += ": ";
        message += entry;
        message += ": key \"";
        message += key;
        message += "\" ";
        message += what;
        throw InputError(message);
    }
};

std::string type_name(const json& value) { return value.type_name(); }

std::string format_value(const json& value) { return value.dump(); }

std::string required_string(const json& object, std::string_view key, const Where& where) {
    const auto it = object.find(std::string(key));
    if (it == object.end()) where.fail(key, "is missing (a string is required)");
    if (!it->is_string()) where.fail(key, "must be a string, got " + type_name(*it) + " " + format_value(*it));
    std::string text = it->get<std::string>();
    if (text.empty()) where.fail(key, "must not be empty");
    // Names and sources are echoed in tables and one-line errors.
    if (std::any_of(text.begin(), text.end(), [](unsigned char c) { return c < 0x20 || c == 0x7F; })) {
        where.fail(key, "must not hold control characters (newlines, tabs), got " + format_value(*it));
    }
    return text;
}

/// No catalog figure is beyond these (a price in $/h, TFLOPS, GB/s, GiB, a count): past them a
/// figure is a typo or an attack, and a cost of 10^302 dollars or a time of 10^-300 s would follow.
constexpr double kLargestFigure = 1e9;
constexpr double kSmallestPositiveFigure = 1e-6;

void check_bound(double value, std::string_view key, Bound bound, const Where& where) {
    if (value > kLargestFigure || (value > 0 && value < kSmallestPositiveFigure)) {
        std::ostringstream out;
        out << "must be 0 or from " << kSmallestPositiveFigure << " to " << kLargestFigure << ", got " << value;
        if (bound == Bound::positive) {
            out.str("");
            out << "must be from " << kSmallestPositiveFigure << " to " << kLargestFigure << ", got " << value;
        }
        where.fail(key, out.str());
    }
    if (bound == Bound::positive && !(value > 0)) {
        std::ostringstream out;
        out << "must be > 0, got " << value;
        where.fail(key, out.str());
    }
    if (bound == Bound::non_negative && !(value >= 0)) {
        std::ostringstream out;
        out << "must be >= 0, got " << value;
        where.fail(key, out.str());
    }
}

/// A number; absent optional keys give `fallback`.
double number(const json& object, std::string_view key, Bound bound, const Where& where, bool required,
              double fallback = 0) {
    const auto it = object.find(std::string(key));
    if (it == object.end()) {
        if (required) where.fail(key, "is missing (a number is required)");
        return fallback;
    }
    if (!it->is_number()) where.fail(key, "must be a number, got " + type_name(*it) + " " + format_value(*it));
    const double value = it->get<double>();
    check_bound(value, key, bound, where);
    return value;
}

/// A whole number (8 or 8.0, not 8.5); absent optional keys give `fallback`.
int count(const json& object, std::string_view key, Bound bound, const Where& where, bool required, int fallback = 0) {
    const auto it = object.find(std::string(key));
    if (it == object.end()) {
        if (required) where.fail(key, "is missing (a whole number is required)");
        return fallback;
    }
    if (!it->is_number()) where.fail(key, "must be a whole number, got " + type_name(*it) + " " + format_value(*it));
    const double value = it->get<double>();
    if (std::floor(value) != value || std::abs(value) > std::numeric_limits<int>::max()) {
        where.fail(key, "must be a whole number, got " + format_value(*it));
    }
    check_bound(value, key, bound, where);
    return static_cast<int>(value);
}

/// `gpus[2] "T4"`, or `gpus[2]` when the entry has no usable name.
std::string entry_label(std::string_view section, std::size_t index, const json& entry) {
    std::string label(section);
    label += '[';
    label += std::to_string(index);
    label += ']';
    if (entry.is_object()) {
        const auto it = entry.find("name");
        if (it != entry.end() && it->is_string()) label += " \"" + escape_for_message(it->get<std::string>()) + "\"";
    }
    return label;
}

/// The array under `key` of the root object; an absent key is an empty list.
const json& section(const json& root, std::string_view key, std::string_view origin) {
    static const json empty = json::array();
    const auto it = root.find(std::string(key));
    if (it == root.end()) return empty;
    if (!it->is_array()) {
        throw InputError(std::string(origin) + ": key \"" + std::string(key) + "\" must be an array, got " +
                         type_name(*it));
    }
    return *it;
}

/// A string; absent optional keys give `fallback`.
std::string optional_string(const json& object, std::string_view key, const Where& where, const std::string& fallback) {
    if (!object.contains(std::string(key))) return fallback;
    return required_string(object, key, where);
}

/// true or false; absent keys give `fallback`.
bool boolean(const json& object, std::string_view key, const Where& where, bool fallback) {
    const auto it = object.find(std::string(key));
    if (it == object.end()) return fallback;
    if (!it->is_boolean()) where.fail(key, "must be true or false, got " + type_name(*it) + " " + format_value(*it));
    return it->get<bool>();
}

void require_object(const json& entry, const Where& where) {
    if (!entry.is_object()) {
        throw InputError(std::string(where.origin) + ": " + where.entry + " must be an object, got " +
                         type_name(entry));
    }
}

/// `base`: the known entry of the same name that this one overrides key by key, or nullptr.
GpuSpec parse_gpu(const json& entry, const Where& where, const GpuSpec* base) {
    require_object(entry, where);
    const bool required = base == nullptr;
    GpuSpec gpu = base ? *base : GpuSpec{};
    gpu.name = required_string(entry, "name", where);
    gpu.fp32_tflops = number(entry, "fp32_tflops", Bound::positive, where, required, gpu.fp32_tflops);
    // 0 for a device without fp16 arithmetic (a CPU: `epochcast-train --describe-host`).
    gpu.fp16_tflops = number(entry, "fp16_tflops", Bound::non_negative, where, required, gpu.fp16_tflops);
    gpu.bf16_tflops = number(entry, "bf16_tflops", Bound::non_negative, where, false, gpu.bf16_tflops);
    gpu.tf32_tflops = number(entry, "tf32_tflops", Bound::non_negative, where, false, gpu.tf32_tflops);
    gpu.memory_gib = number(entry, "memory_gib", Bound::positive, where, required, gpu.memory_gib);
    gpu.memory_GBps = number(entry, "memory_GBps", Bound::positive, where, required, gpu.memory_GBps);
    gpu.sms = count(entry, "sms", Bound::non_negative, where, false, gpu.sms);
    gpu.jpeg_decoder_cores =
        count(entry, "jpeg_decoder_cores", Bound::non_negative, where, false, gpu.jpeg_decoder_cores);
    gpu.chip = optional_string(entry, "chip", where, gpu.chip);
    gpu.source =
        required ? required_string(entry, "source", where) : optional_string(entry, "source", where, gpu.source);
    if (entry.contains("kind"))
        gpu.kind = parse_device_kind(required_string(entry, "kind", where),
                                     std::string(where.origin) + ": " + where.entry + ": key \"kind\"");
    return gpu;
}

/// "nvlink4" -> 4, "pcie4" -> 0; fails on anything else.
int parse_intra_node_link(const std::string& link, const Where& where) {
    static constexpr std::string_view kLinks[] = {"pcie",   "pcie3",   "pcie4",   "pcie5",   "pcie6",
                                                  "nvlink", "nvlink2", "nvlink3", "nvlink4", "nvlink5"};
    for (std::string_view known : kLinks) {
        if (link == known) return link.rfind("nvlink", 0) == 0 && link.size() > 6 ? link.back() - '0' : 0;
    }
    where.fail("intra_node_link", "is '" + escape_for_message(link) +
                                      "', expected one of pcie, pcie3, pcie4, pcie5, pcie6, nvlink, "
                                      "nvlink2, nvlink3, nvlink4, nvlink5");
}

/// The fabric keys and their defaults (model/catalog.hpp): an entry that gives efa_adapters but
/// no interconnect is EFA, as before the key existed.
void parse_fabric(const json& entry, const Where& where, const InstanceSpec* base, InstanceSpec& instance) {
    const bool given = entry.contains("interconnect");
    if (given) {
        instance.interconnect =
            parse_interconnect(required_string(entry, "interconnect", where),
                               std::string(where.origin) + ": " + where.entry + ": key \"interconnect\"");
    } else if (!base || (entry.contains("efa_adapters") &&
                         (instance.interconnect == Interconnect::efa || instance.interconnect == Interconnect::tcp))) {
        // A new entry, or a known EFA/TCP one whose adapters change: EFA exactly when it has some.
        instance.interconnect = instance.efa_adapters > 0 ? Interconnect::efa : Interconnect::tcp;
    }
    if (instance.interconnect == Interconnect::efa && instance.efa_adapters == 0) {
        where.fail("interconnect", "is efa but efa_adapters is 0 (give the instance's EFA adapters)");
    }
    if (instance.interconnect != Interconnect::efa && instance.efa_adapters > 0) {
        where.fail("efa_adapters", "must be 0 unless interconnect is efa (interconnect is " +
                                       std::string(to_string(instance.interconnect)) + ")");
    }
    const bool fabric_changed = !base || given || entry.contains("efa_adapters");
    const int default_nics = instance.efa_adapters > 0 ? instance.efa_adapters : 1;
    instance.nics = count(entry, "nics", Bound::positive, where, false, fabric_changed ? default_nics : instance.nics);
    if (instance.interconnect == Interconnect::efa && instance.nics < instance.efa_adapters) {
        where.fail("nics", "is " + std::to_string(instance.nics) + ", fewer than the " +
                               std::to_string(instance.efa_adapters) + " EFA adapters");
    }
    const bool rdma_fabric =
        instance.interconnect == Interconnect::infiniband || instance.interconnect == Interconnect::roce;
    instance.gpudirect_rdma =
        boolean(entry, "gpudirect_rdma", where, fabric_changed ? rdma_fabric : instance.gpudirect_rdma);
    if (instance.gpudirect_rdma && instance.interconnect == Interconnect::tcp) {
        where.fail("gpudirect_rdma", "is true, but NCCL's TCP socket transport cannot write GPU memory");
    }
}

/// A lower-case word: letters, digits and '-', starting with a letter or digit ("aws", "my-lab").
bool is_word(std::string_view text) {
    if (text.empty() || text.front() == '-') return false;
    return std::all_of(text.begin(), text.end(),
                       [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

/// YYYY-MM-DD with a month 01-12 and a day 01-31.
/// A day of the calendar, YYYY-MM-DD (2026-02-30 is none): the one date reader, billing's.
bool is_date(std::string_view text) { return parse_date(text).has_value(); }

std::string pricing_names() {
    std::string names;
    for (Pricing pricing : kAllPricings) {
        if (!names.empty()) names += ", ";
        names += to_string(pricing);
    }
    return names;
}

/// A spot price's "interruptions": {"band": "5-10%", "read": "YYYY-MM-DD", "source": ..., "estimate": bool}.
SpotInterruptions parse_interruptions(const json& value, const Where& where, const std::string& default_source) {
    if (!value.is_object()) {
        where.fail("interruptions", "must be an object with \"band\" (<5%, 5-10%, 10-15%, 15-20%, >20%), got " +
                                        type_name(value) + " " + format_value(value));
    }
    const Where inner{where.origin, where.entry + ": interruptions"};
    SpotInterruptions out;
    out.band = required_string(value, "band", inner);
    const double fraction = band_monthly_fraction(out.band);
    if (fraction < 0) {
        inner.fail("band", "must be one of <5%, 5-10%, 10-15%, 15-20%, >20% (AWS Spot Instance Advisor's bands), got " +
                               format_value(value["band"]));
    }
    out.per_node_hour = interruptions_per_node_hour(fraction);
    out.read = optional_string(value, "read", inner, "");
    if (!out.read.empty() && !is_date(out.read)) {
        inner.fail("read", "must be a date YYYY-MM-DD, got " + format_value(value["read"]));
    }
    out.source = optional_string(value, "source", inner, default_source);
    out.estimate = boolean(value, "estimate", inner, false);
    return out;
}

/// One entry of "prices": {"usd_per_hour", "read", "source", "estimate"}, and for a spot price
/// "interruptions". `default_source` stands for a missing "source".
Price parse_price(const json& value, const Where& where, const std::string& default_source, bool spot) {
    if (!value.is_object()) {
        throw InputError(std::string(where.origin) + ": " + where.entry +
                         " must be an object with \"usd_per_hour\", got " + type_name(value) + " " +
                         format_value(value));
    }
    Price price;
    price.usd_per_hour = number(value, "usd_per_hour", Bound::positive, where, true);
    price.read = optional_string(value, "read", where, "");
    if (!price.read.empty() && !is_date(price.read)) {
        where.fail("read", "must be a date YYYY-MM-DD, got " + format_value(value["read"]));
    }
    price.source = optional_string(value, "source", where, default_source);
    price.estimate = boolean(value, "estimate", where, false);
    if (const auto interruptions = value.find("interruptions"); interruptions != value.end()) {
        if (!spot) where.fail("interruptions", "belongs to a spot price only");
        price.interruptions = parse_interruptions(*interruptions, where, price.source);
    }
    return price;
}

/// "prices" and the older "price_usd_per_hour" (on-demand; 0: none) and "spot_usd_per_hour" (spot;
/// 0: none), each over what `instance` already has (a known entry's prices are kept unless named;
/// null removes one). A new entry must give one of them ("prices": {} for a machine you own).
void parse_prices(const json& entry, const Where& where, bool is_new, InstanceSpec& instance) {
    // A price's source defaults to the entry's own, else (an override without one) the file's name.
    const std::string default_source = entry.contains("source") ? instance.source : std::string(where.origin);
    bool given = false;
    const auto prices = entry.find("prices");
    if (prices != entry.end()) {
        given = true;
        if (!prices->is_object()) {
            where.fail("prices", "must be an object of prices by pricing model (" + pricing_names() + "), got " +
                                     type_name(*prices) + " " + format_value(*prices));
        }
        for (const auto& [key, value] : prices->items()) {
            std::optional<Pricing> pricing;
            for (Pricing p : kAllPricings) {
                if (to_string(p) == key) pricing = p;
            }
            if (!pricing) {
                where.fail("prices", "names unknown pricing model \"" + escape_for_message(key) +
                                         "\" (known: " + pricing_names() + ")");
            }
            auto& price = instance.prices[price_slot(*pricing)];
            if (value.is_null()) {
                price.reset();
                continue;
            }
            price = parse_price(value, Where{where.origin, where.entry + ": prices \"" + key + "\""}, default_source,
                                *pricing == Pricing::spot);
        }
    }
    auto older = [&](std::string_view key, Pricing pricing) {
        if (!entry.contains(std::string(key))) return;
        given = true;
        if (prices != entry.end() && prices->is_object() && prices->contains(std::string(to_string(pricing)))) {
            where.fail(key, "and prices \"" + std::string(to_string(pricing)) + "\" both give the " +
                                std::string(to_string(pricing)) + " price: give one");
        }
        const double usd = number(entry, key, Bound::non_negative, where, true);
        auto& price = instance.prices[price_slot(pricing)];
        if (usd > 0) {
            price = Price{usd, "", default_source, false, std::nullopt};
        } else {
            price.reset();  // 0: not sold that way (a machine you own)
        }
    };
    older("price_usd_per_hour", Pricing::on_demand);
    older("spot_usd_per_hour", Pricing::spot);
    if (is_new && !given) {
        where.fail("prices", "is missing: give the instance's prices by pricing model (" + pricing_names() +
                                 "; {} for a machine you own), or the older \"price_usd_per_hour\"");
    }
}

InstanceSpec parse_instance(const json& entry, const Where& where, const InstanceSpec* base) {
    require_object(entry, where);
    const bool required = base == nullptr;
    InstanceSpec instance = base ? *base : InstanceSpec{};
    instance.name = required_string(entry, "name", where);
    instance.gpus = count(entry, "gpus", Bound::non_negative, where, required, instance.gpus);
    const auto gpu = entry.find("gpu");
    const bool names_gpu = gpu != entry.end() && !gpu->is_null();
    if (names_gpu) {
        if (instance.gpus == 0) {
            where.fail("gpu", "must be absent for a CPU-only instance (gpus is 0), got " + format_value(*gpu));
        }
        instance.gpu = required_string(entry, "gpu", where);
    } else if (instance.gpus == 0) {
        instance.gpu.clear();
    } else if (instance.gpu.empty()) {
        where.fail("gpu", "is missing: an instance with gpus > 0 must name its GPU");
    }
    instance.vcpus = count(entry, "vcpus", Bound::positive, where, required, instance.vcpus);
    instance.memory_gib = number(entry, "memory_gib", Bound::positive, where, required, instance.memory_gib);
    instance.network_gbps = number(entry, "network_gbps", Bound::positive, where, required, instance.network_gbps);
    instance.efa_adapters = count(entry, "efa_adapters", Bound::non_negative, where, false, instance.efa_adapters);
    parse_fabric(entry, where, base, instance);
    instance.intra_node_GBps =
        number(entry, "intra_node_GBps", Bound::non_negative, where, false, instance.intra_node_GBps);
    // A known entry keeps its link unless the file names one; a new entry's defaults to PCIe up to
    // 64 GB/s (a x16 gen5 slot each way), else NVLink, without NVSwitch.
    std::string link_default = instance.intra_node_link;
    if (!base) link_default = instance.gpus <= 1 ? "" : instance.intra_node_GBps <= 64 ? "pcie" : "nvlink";
    instance.intra_node_link = optional_string(entry, "intra_node_link", where, link_default);
    instance.nvlink_generation =
        instance.intra_node_link.empty() ? 0 : parse_intra_node_link(instance.intra_node_link, where);
    instance.nvswitch =
        boolean(entry, "nvswitch", where, base && !entry.contains("intra_node_link") ? instance.nvswitch : false);
    if (instance.nvswitch && instance.intra_node_link.rfind("nvlink", 0) != 0) {
        where.fail("nvswitch", "is true, but intra_node_link is '" + instance.intra_node_link + "', not NVLink");
    }
    instance.cloud = optional_string(entry, "cloud", where, instance.cloud);
    if (entry.contains("cloud") && !is_word(instance.cloud)) {
        where.fail("cloud", "must be a lower-case word (aws, gcp, azure, owned), got " + format_value(entry["cloud"]));
    }
    instance.region = optional_string(entry, "region", where, instance.region);
    instance.source =
        required ? required_string(entry, "source", where) : optional_string(entry, "source", where, instance.source);
    parse_prices(entry, where, required, instance);
    return instance;
}

/// The entry's "name" when it is a string, else "" (parse_gpu / parse_instance report the problem).
std::string name_of(const json& entry) {
    if (!entry.is_object()) return {};
    const auto it = entry.find("name");
    return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void parse_impl(std::string_view json_text, std::string_view origin, const Catalog* known, std::vector<GpuSpec>& gpus,
                std::vector<InstanceSpec>& instances) {
    const json root = parse_json(json_text, origin);
    if (!root.is_object()) {
        throw InputError(std::string(origin) + ": a catalog must be a JSON object, got " + type_name(root));
    }
    const auto schema = root.find("schema");
    if (schema == root.end()) {
        throw InputError(std::string(origin) + ": key \"schema\" is missing (expected \"" + std::string(kSchema) +
                         "\")");
    }
    if (!schema->is_string() || schema->get<std::string>() != kSchema) {
        throw InputError(std::string(origin) + ": key \"schema\" is " + format_value(*schema) + ", expected \"" +
                         std::string(kSchema) + "\"");
    }

    // Each section's names -> position, for duplicates and the instances' GPUs: one hash lookup
    // an entry (a scan an entry made 100,000 entries take over a minute).
    CatalogNameIndex gpu_index;
    const json& gpu_entries = section(root, "gpus", origin);
    for (std::size_t i = 0; i < gpu_entries.size(); ++i) {
        const Where where{origin, entry_label("gpus", i, gpu_entries[i])};
        const GpuSpec* base = known ? known->find_gpu(name_of(gpu_entries[i])) : nullptr;
        GpuSpec gpu = parse_gpu(gpu_entries[i], where, base);
        if (const auto [it, inserted] = gpu_index.try_emplace(gpu.name, gpus.size()); !inserted) {
            where.fail("name",
                       "duplicates " + entry_label("gpus", it->second, gpu_entries[it->second]) + " in the same file");
        }
        gpus.push_back(std::move(gpu));
    }

    CatalogNameIndex instance_index;
    const json& instance_entries = section(root, "instances", origin);
    for (std::size_t i = 0; i < instance_entries.size(); ++i) {
        const Where where{origin, entry_label("instances", i, instance_entries[i])};
        const InstanceSpec* base = known ? known->find_instance(name_of(instance_entries[i])) : nullptr;
        InstanceSpec instance = parse_instance(instance_entries[i], where, base);
        if (const auto [it, inserted] = instance_index.try_emplace(instance.name, instances.size()); !inserted) {
            where.fail("name", "duplicates " + entry_label("instances", it->second, instance_entries[it->second]) +
                                   " in the same file");
        }
        if (!instance.gpu.empty() && !gpu_index.contains(instance.gpu) &&
            (known == nullptr || known->find_gpu(instance.gpu) == nullptr)) {
            std::vector<GpuSpec> candidates = gpus;
            if (known != nullptr) {
                for (const GpuSpec& gpu : known->gpus()) {
                    if (!gpu_index.contains(gpu.name)) candidates.push_back(gpu);
                }
            }
            where.fail("gpu", "names unknown GPU '" + instance.gpu + "' (known: " + known_names(candidates) + ")");
        }
        instances.push_back(std::move(instance));
    }
}

}  // namespace

Catalog Catalog::built_in() { return parse(embedded::catalog_json, kBuiltInOrigin); }

Catalog Catalog::parse(std::string_view json_text, std::string_view origin) {
    Catalog catalog;
    parse_impl(json_text, origin, nullptr, catalog.gpus_, catalog.instances_);
    catalog.reindex();
    return catalog;
}

Catalog Catalog::parse(std::string_view json_text, std::string_view origin, const Catalog& known) {
    Catalog catalog;
    parse_impl(json_text, origin, &known, catalog.gpus_, catalog.instances_);
    catalog.reindex();
    return catalog;
}

Catalog Catalog::load(const std::filesystem::path& path) {
    return parse(read_text_file(path, "catalog"), path.string());
}

Catalog Catalog::load(const std::filesystem::path& path, const Catalog& known) {
    return parse(read_text_file(path, "catalog"), path.string(), known);
}

std::string Catalog::to_json_text(int indent) const {
    using ordered = nlohmann::ordered_json;  // keys in model/catalog.json's order, not sorted
    ordered root = ordered::object();
    root["schema"] = std::string(kSchema);
    ordered gpus = ordered::array();
    for (const GpuSpec& gpu : gpus_) {
        gpus.push_back({{"name", gpu.name},
                        {"fp32_tflops", gpu.fp32_tflops},
                        {"fp16_tflops", gpu.fp16_tflops},
                        {"bf16_tflops", gpu.bf16_tflops},
                        {"tf32_tflops", gpu.tf32_tflops},
                        {"memory_gib", gpu.memory_gib},
                        {"memory_GBps", gpu.memory_GBps}});
        if (gpu.sms > 0) gpus.back()["sms"] = gpu.sms;
        if (gpu.jpeg_decoder_cores > 0) gpus.back()["jpeg_decoder_cores"] = gpu.jpeg_decoder_cores;
        if (!gpu.chip.empty()) gpus.back()["chip"] = gpu.chip;
        gpus.back()["source"] = gpu.source;
        if (gpu.kind != DeviceKind::gpu) gpus.back()["kind"] = std::string(to_string(gpu.kind));
    }
    ordered instances = ordered::array();
    for (const InstanceSpec& instance : instances_) {
        ordered entry = ordered::object();
        entry["name"] = instance.name;
        if (!instance.gpu.empty()) entry["gpu"] = instance.gpu;
        entry["gpus"] = instance.gpus;
        entry["vcpus"] = instance.vcpus;
        entry["memory_gib"] = instance.memory_gib;
        entry["network_gbps"] = instance.network_gbps;
        entry["efa_adapters"] = instance.efa_adapters;
        entry["interconnect"] = std::string(to_string(instance.interconnect));
        entry["nics"] = instance.nics;
        entry["gpudirect_rdma"] = instance.gpudirect_rdma;
        entry["intra_node_GBps"] = instance.intra_node_GBps;
        if (!instance.intra_node_link.empty()) entry["intra_node_link"] = instance.intra_node_link;
        if (instance.nvswitch) entry["nvswitch"] = true;
        if (!instance.cloud.empty()) entry["cloud"] = instance.cloud;
        if (!instance.region.empty()) entry["region"] = instance.region;
        ordered prices = ordered::object();
        for (Pricing pricing : kAllPricings) {
            const Price* price = instance.price(pricing);
            if (!price) continue;
            ordered p = {{"usd_per_hour", price->usd_per_hour}};
            if (!price->read.empty()) p["read"] = price->read;
            if (!price->source.empty() && price->source != instance.source) p["source"] = price->source;
            if (price->estimate) p["estimate"] = true;
            if (price->interruptions) {
                const SpotInterruptions& x = *price->interruptions;
                ordered i = {{"band", x.band}};
                if (!x.read.empty()) i["read"] = x.read;
                if (!x.source.empty() && x.source != price->source) i["source"] = x.source;
                if (x.estimate) i["estimate"] = true;
                p["interruptions"] = std::move(i);
            }
            prices[std::string(to_string(pricing))] = std::move(p);
        }
        entry["prices"] = std::move(prices);
        entry["source"] = instance.source;
        instances.push_back(std::move(entry));
    }
    root["gpus"] = std::move(gpus);
    root["instances"] = std::move(instances);
    return root.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace epochcast
