// The hardware catalog (model/catalog.hpp): merging user files over the built-in one, and lookups
// whose errors list the known names. Reading and writing its files is model/catalog_file.cpp.
#include "model/catalog.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "model/errors.hpp"
#include "model/text_io.hpp"

namespace epochcast {
namespace {

/// The entry of that name in `specs`, found through `index`, or nullptr.
template <typename Spec>
const Spec* find_by_name(const std::vector<Spec>& specs, const CatalogNameIndex& index, std::string_view name) {
    const auto it = index.find(name);
    return it == index.end() ? nullptr : &specs[it->second];
}

/// Replace the entry of spec's name, or add it, keeping `index` in step.
template <typename Spec>
void upsert(std::vector<Spec>& specs, CatalogNameIndex& index, const Spec& spec) {
    const auto [it, added] = index.try_emplace(spec.name, specs.size());
    if (added) {
        specs.push_back(spec);
    } else {
        specs[it->second] = spec;
    }
}

template <typename Spec>
void index_by_name(const std::vector<Spec>& specs, CatalogNameIndex& index) {
    index.clear();
    index.reserve(specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) index.try_emplace(specs[i].name, i);
}

}  // namespace

void Catalog::merge(const Catalog& other) {
    for (const GpuSpec& gpu : other.gpus_) upsert(gpus_, gpu_index_, gpu);
    for (const InstanceSpec& instance : other.instances_) upsert(instances_, instance_index_, instance);
    for (const InstanceSpec& instance : instances_) {
        if (!instance.gpu.empty() && find_gpu(instance.gpu) == nullptr) {
            throw InputError("instance '" + instance.name + "' names unknown GPU '" + instance.gpu +
                             "' (known: " + known_names(gpus_) + ")");
        }
    }
}

DeviceKind Catalog::device_kind(const InstanceSpec& instance) const {
    return instance.gpu.empty() ? DeviceKind::gpu : gpu(instance.gpu).kind;
}

std::vector<std::string> Catalog::same_chip(const GpuSpec& gpu) const {
    std::vector<std::string> names;
    for (const GpuSpec& other : gpus_) {
        if (other.name != gpu.name && other.chip_or_name() == gpu.chip_or_name()) names.push_back(other.name);
    }
    return names;
}

const Price* InstanceSpec::price(Pricing pricing) const {
    const auto& price = prices[price_slot(pricing)];
    return price ? &*price : nullptr;
}

double InstanceSpec::usd_per_hour(Pricing pricing) const {
    const Price* p = price(pricing);
    return p ? p->usd_per_hour : 0.0;
}

bool InstanceSpec::priced() const {
    return std::any_of(prices.begin(), prices.end(), [](const std::optional<Price>& p) { return p.has_value(); });
}

std::string InstanceSpec::pricings_text() const {
    std::string text;
    for (Pricing pricing : kAllPricings) {
        if (!price(pricing)) continue;
        if (!text.empty()) text += ", ";
        text += to_string(pricing);
    }
    return text.empty() ? "none" : text;
}

std::vector<std::string> Catalog::clouds() const {
    std::vector<std::string> clouds;
    for (const InstanceSpec& instance : instances_) {
        if (!instance.cloud.empty()) clouds.push_back(instance.cloud);
    }
    std::sort(clouds.begin(), clouds.end());
    clouds.erase(std::unique(clouds.begin(), clouds.end()), clouds.end());
    return clouds;
}

void Catalog::check_cloud(std::string_view cloud, std::string_view what) const {
    const std::vector<std::string> known = clouds();
    if (std::find(known.begin(), known.end(), cloud) != known.end()) return;
    std::string names;
    for (const std::string& name : known) names += (names.empty() ? "" : ", ") + name;
    throw InputError(std::string(what) + " '" + escape_for_message(cloud) +
                     "': no instance of the catalog is in that cloud (clouds: " + (names.empty() ? "none" : names) +
                     ")");
}

Catalog Catalog::only_cloud(std::string_view cloud) const {
    Catalog out;
    for (const InstanceSpec& instance : instances_) {
        if (instance.cloud == cloud) out.instances_.push_back(instance);
    }
    CatalogNameIndex named;  // the GPUs the cloud's instances name
    for (const InstanceSpec& instance : out.instances_) named.try_emplace(instance.gpu, 0);
    for (const GpuSpec& gpu : gpus_) {
        if (named.contains(gpu.name)) out.gpus_.push_back(gpu);
    }
    out.reindex();
    return out;
}

IntraLink InstanceSpec::intra_link() const {
    if (nvswitch) return IntraLink::nvswitch;
    return intra_node_link.rfind("nvlink", 0) == 0 ? IntraLink::nvlink : IntraLink::pcie;
}

std::string_view InstanceSpec::gradient_link(int nodes, Interconnect fabric) const {
    return nodes > 1 ? to_string(fabric) : to_string(intra_link());
}

namespace {

std::string lowercase(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

/// Levenshtein's distance between a and b (insertions, deletions and substitutions), one row at a time.
std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

}  // namespace

std::vector<std::string> close_names(const std::vector<std::string>& names, std::string_view name) {
    constexpr std::size_t kLongest = 200;  // a name past this is no typo of a catalog name
    const std::string typed = lowercase(name.substr(0, std::min(name.size(), kLongest)));
    if (typed.empty()) return {};
    std::vector<std::pair<std::size_t, std::string>> scored;  // (distance, name); prefixes score 0
    for (const std::string& candidate : names) {
        const std::string known = lowercase(candidate);
        // a prefix of a few characters ("p5") is every family's: no hint
        const bool prefix = typed.size() >= 4 && (known.rfind(typed, 0) == 0 || typed.rfind(known, 0) == 0);
        const std::size_t distance = prefix ? 0 : edit_distance(typed, known);
        if (prefix || distance <= std::max<std::size_t>(1, typed.size() / 5)) scored.emplace_back(distance, candidate);
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> out;
    for (std::size_t i = 0; i < scored.size() && i < 3; ++i) out.push_back(scored[i].second);
    return out;
}

const GpuSpec& Catalog::gpu(std::string_view name) const {
    if (const GpuSpec* spec = find_gpu(name)) return *spec;
    throw InputError("unknown GPU '" + escape_for_message(name) + "' " + unknown_name_hint(gpus_, name));
}

const GpuSpec* Catalog::find_gpu(std::string_view name) const { return find_by_name(gpus_, gpu_index_, name); }

const InstanceSpec* Catalog::find_instance(std::string_view name) const {
    return find_by_name(instances_, instance_index_, name);
}

void Catalog::reindex() {
    index_by_name(gpus_, gpu_index_);
    index_by_name(instances_, instance_index_);
}

const InstanceSpec& Catalog::instance(std::string_view name) const {
    if (const InstanceSpec* spec = find_instance(name)) return *spec;
    throw InputError("unknown instance '" + escape_for_message(name) + "' " + unknown_name_hint(instances_, name));
}

const GpuSpec& Catalog::gpu_of(const InstanceSpec& instance) const {
    if (instance.gpus == 0 || instance.gpu.empty()) {
        throw InputError("instance '" + instance.name + "' is CPU-only: it has no GPU");
    }
    return gpu(instance.gpu);
}

Catalog load_catalog(const std::vector<std::string>& extra_files) {
    Catalog catalog = Catalog::built_in();
    for (const std::string& file : extra_files) catalog.merge(Catalog::load(file, catalog));
    return catalog;
}

}  // namespace epochcast
