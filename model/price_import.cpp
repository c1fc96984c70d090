#include "model/price_import.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "model/billing.hpp"
#include "model/errors.hpp"
#include "model/text_io.hpp"

namespace epochcast {

using nlohmann::json;

std::string_view to_string(PriceFileFormat format) {
    switch (format) {
        case PriceFileFormat::aws_offer_file:
            return "AWS Price List offer file";
        case PriceFileFormat::azure_retail:
            return "Azure Retail Prices API response";
        case PriceFileFormat::gcp_billing_skus:
            return "Google Cloud Billing Catalog SKUs";
    }
    return "price file";
}

namespace {

/// A string member, or "" where absent or not a string.
std::string text_of(const json& object, const char* key) {
    if (!object.is_object()) return {};
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// A price as a positive finite number: a JSON number, or a decimal string (AWS writes "98.3200000000").
double price_number(const json& value, std::string_view origin, const std::string& what) {
    double number = NAN;
    if (value.is_number()) {
        number = value.get<double>();
    } else if (value.is_string()) {
        const std::string text = value.get<std::string>();
        char* end = nullptr;
        number = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size()) number = NAN;
    }
    if (!std::isfinite(number) || number < 0) {
        throw InputError(std::string(origin) + ": " + what + " is not a price in US dollars (got " +
                         escape_for_message(value.dump()) + ")");
    }
    return number;
}

/// The instances of `catalog` sold by `cloud`, each with the region its prices are read for.
std::vector<std::pair<const InstanceSpec*, std::string>> instances_of(const Catalog& catalog, const std::string& cloud,
                                                                      const std::optional<std::string>& region) {
    std::vector<std::pair<const InstanceSpec*, std::string>> out;
    for (const InstanceSpec& instance : catalog.instances()) {
        if (instance.cloud != cloud) continue;
        const std::string wanted = region ? *region : instance.region;
        if (!wanted.empty()) out.emplace_back(&instance, wanted);
    }
    return out;
}

/// The prices found, one per instance and pricing (the last read wins), in the catalog's order.
class Found {
public:
    explicit Found(const Catalog& catalog) : catalog_(catalog) {}
    void add(ImportedPrice price) { found_[{price.instance, price.pricing}] = std::move(price); }
    std::vector<ImportedPrice> in_catalog_order() const {
        std::vector<ImportedPrice> out;
        for (const InstanceSpec& instance : catalog_.instances()) {
            for (const Pricing pricing : kAllPricings) {
                if (const auto it = found_.find({instance.name, pricing}); it != found_.end())
                    out.push_back(it->second);
            }
        }
        return out;
    }

private:
    const Catalog& catalog_;
    std::map<std::pair<std::string, Pricing>, ImportedPrice> found_;
};

// ---- AWS: the Price List offer file for Amazon EC2 --------------------------------------------------

/// The hourly USD rate of a term's priceDimensions ("unit": "Hrs"), or nullopt.
std::optional<double> hourly_rate(const json& term, std::string_view origin, const std::string& what) {
    const auto dimensions = term.find("priceDimensions");
    if (dimensions == term.end() || !dimensions->is_object()) return std::nullopt;
    for (const auto& [code, dimension] : dimensions->items()) {
        if (text_of(dimension, "unit") != "Hrs") continue;
        const auto per_unit = dimension.find("pricePerUnit");
        if (per_unit == dimension.end() || !per_unit->is_object() || !per_unit->contains("USD")) continue;
        return price_number((*per_unit)["USD"], origin, what + " " + code);
    }
    return std::nullopt;
}

PriceImport import_aws(const json& root, std::string_view origin, const Catalog& catalog,
                       const std::optional<std::string>& region, const std::string& read) {
    PriceImport out;
    out.format = PriceFileFormat::aws_offer_file;
    const json& products = root["products"];
    const json& terms = root.contains("terms") ? root["terms"] : json::object();
    out.entries = products.is_object() ? products.size() : 0;
    // The list's own date: what it says the prices were on.
    const std::string published = text_of(root, "publicationDate").substr(0, 10);
    const std::string date = parse_date(published) ? published : read;
    const std::string version = text_of(root, "version");
    Found found(catalog);
    const auto wanted = instances_of(catalog, "aws", region);
    for (const auto& [sku, product] : products.items()) {
        const json& a = product.contains("attributes") ? product["attributes"] : json::object();
        const std::string type = text_of(a, "instanceType");
        const auto match = std::find_if(wanted.begin(), wanted.end(), [&](const auto& w) {
            return w.first->name == type && w.second == text_of(a, "regionCode");
        });
        if (match == wanted.end()) continue;
        // The catalog's terms: Linux, shared tenancy, no pre-installed software or licence, capacity used.
        auto is = [&](const char* key, const char* value) {
            const std::string v = text_of(a, key);
            return v.empty() || v == value;
        };
        if (text_of(a, "operatingSystem") != "Linux" || !is("tenancy", "Shared") || !is("preInstalledSw", "NA") ||
            !is("capacitystatus", "Used") || !is("licenseModel", "No License required")) {
            continue;
        }
        const std::string source = "AWS Price List offer file " + std::string(origin) + " (offerCode AmazonEC2" +
                                   (version.empty() ? "" : ", version " + version) + "), " + match->second +
                                   ", Linux, shared tenancy, SKU " + sku;
        auto add = [&](Pricing pricing, double usd, const std::string& terms_text) {
            if (!(usd > 0)) return;
            ImportedPrice p{match->first->name, match->second, pricing, {}};
            p.price.usd_per_hour = usd;
            p.price.read = date;
            p.price.source = source + terms_text;
            found.add(std::move(p));
        };
        if (const auto on_demand = terms.find("OnDemand"); on_demand != terms.end() && on_demand->contains(sku)) {
            for (const auto& [code, term] : (*on_demand)[sku].items()) {
                if (const auto rate = hourly_rate(term, origin, "OnDemand " + code)) add(Pricing::on_demand, *rate, "");
            }
        }
        if (const auto reserved = terms.find("Reserved"); reserved != terms.end() && reserved->contains(sku)) {
            for (const auto& [code, term] : (*reserved)[sku].items()) {
                const json& t = term.contains("termAttributes") ? term["termAttributes"] : json::object();
                if (text_of(t, "PurchaseOption") != "No Upfront" || text_of(t, "OfferingClass") != "standard") continue;
                const std::string length = text_of(t, "LeaseContractLength");
                const Pricing pricing = length == "1yr"   ? Pricing::reserved_1y
                                        : length == "3yr" ? Pricing::reserved_3y
                                                          : Pricing::on_demand;
                if (pricing == Pricing::on_demand) continue;
                if (const auto rate = hourly_rate(term, origin, "Reserved " + code)) {
                    add(pricing, *rate, "; Reserved Instance, " + length + " standard, No Upfront");
                }
            }
        }
    }
    out.prices = found.in_catalog_order();
    return out;
}

// ---- Azure: the Retail Prices API ---------------------------------------------------------------------

PriceImport import_azure(const json& root, std::string_view origin, const Catalog& catalog,
                         const std::optional<std::string>& region, const std::string& read) {
    PriceImport out;
    out.format = PriceFileFormat::azure_retail;
    const json& items = root["Items"];
    out.entries = items.is_array() ? items.size() : 0;
    Found found(catalog);
    const auto wanted = instances_of(catalog, "azure", region);
    for (const json& item : items) {
        const auto match = std::find_if(wanted.begin(), wanted.end(), [&](const auto& w) {
            return w.first->name == text_of(item, "armSkuName") && w.second == text_of(item, "armRegionName");
        });
        if (match == wanted.end()) continue;
        const std::string product = text_of(item, "productName");
        const std::string sku = text_of(item, "skuName");
        const std::string service = text_of(item, "serviceName");
        if ((!service.empty() && service != "Virtual Machines") || product.find("Windows") != std::string::npos ||
            sku.find("Low Priority") != std::string::npos || text_of(item, "currencyCode") != "USD" ||
            text_of(item, "unitOfMeasure") != "1 Hour" || !item.contains("unitPrice")) {
            continue;
        }
        const double unit = price_number(item["unitPrice"], origin, "the unitPrice of " + sku);
        const std::string type = text_of(item, "type");
        Pricing pricing = Pricing::on_demand;
        double usd_per_hour = unit;
        std::string terms_text;
        if (type == "Consumption") {
            const bool spot = sku.size() >= 5 && sku.compare(sku.size() - 5, 5, " Spot") == 0;
            pricing = spot ? Pricing::spot : Pricing::on_demand;
            terms_text = spot ? ", Spot" : ", pay-as-you-go";
        } else if (type == "Reservation") {
            // A reservation's unitPrice is the whole term's (the API's documentation): spread over its hours.
            const std::string term = text_of(item, "reservationTerm");
            const int years = term == "1 Year" ? 1 : term == "3 Years" ? 3 : 0;
            if (years == 0) continue;
            pricing = years == 1 ? Pricing::reserved_1y : Pricing::reserved_3y;
            usd_per_hour = unit / (kHoursPerTermYear * years);
            terms_text = ", reservation of " + term + " ($" + shortest(unit) + " for the term over " +
                         format_count(kHoursPerTermYear * years) + " hours)";
        } else {
            continue;
        }
        if (!(usd_per_hour > 0)) continue;
        ImportedPrice p{match->first->name, match->second, pricing, {}};
        p.price.usd_per_hour = usd_per_hour;
        p.price.read = read;
        p.price.source = "Azure Retail Prices API response " + std::string(origin) + ", " + match->second +
                         ", Linux, " + sku + " (" + product + ")" + terms_text;
        found.add(std::move(p));
    }
    out.prices = found.in_catalog_order();
    return out;
}

// ---- Google Cloud: the Cloud Billing Catalog's Compute Engine SKUs ---------------------------------

/// How Compute Engine's SKU descriptions name a catalog GPU ("Nvidia H100 80GB GPU running in
/// Americas"); empty for one it does not sell.
std::string gcp_gpu_words(const InstanceSpec& instance) {
    static const std::map<std::string, std::string> words = {{"A100-SXM4-40GB", "Nvidia Tesla A100"},
                                                             {"A100-SXM4-80GB", "Nvidia Tesla A100 80GB"},
                                                             {"H100-SXM5-80GB", "Nvidia H100 80GB"},
                                                             {"H200-SXM-141GB", "Nvidia H200 141GB"},
                                                             {"L4", "Nvidia L4"},
                                                             {"B200", "Nvidia B200"}};
    const auto it = words.find(instance.gpu);
    if (it == words.end()) return {};
    // A3 Mega's GPUs are SKUs of their own.
    return it->second + (instance.name.find("megagpu") != std::string::npos ? " Mega" : "") + " GPU";
}

/// The USD unit price of a SKU's latest pricing (its first tier): units + nanos / 10^9.
std::optional<double> sku_unit_price(const json& sku, std::string_view origin) {
    const json& info = sku.contains("pricingInfo") ? sku["pricingInfo"] : json::array();
    if (!info.is_array() || info.empty()) return std::nullopt;
    const json& expression = info.back().contains("pricingExpression") ? info.back()["pricingExpression"] : json();
    if (!expression.is_object() || !expression.contains("tieredRates") || !expression["tieredRates"].is_array() ||
        expression["tieredRates"].empty()) {
        return std::nullopt;
    }
    const json& price = expression["tieredRates"].front()["unitPrice"];
    if (text_of(price, "currencyCode") != "USD") return std::nullopt;
    const std::string id = text_of(sku, "skuId");
    const double units = price.contains("units") ? price_number(price["units"], origin, "SKU " + id + " units") : 0.0;
    const double nanos = price.contains("nanos") ? price_number(price["nanos"], origin, "SKU " + id + " nanos") : 0.0;
    return units + nanos / 1e9;
}

PriceImport import_gcp(const json& root, std::string_view origin, const Catalog& catalog,
                       const std::optional<std::string>& region, const std::string& read) {
    PriceImport out;
    out.format = PriceFileFormat::gcp_billing_skus;
    const json& skus = root["skus"];
    out.entries = skus.is_array() ? skus.size() : 0;
    Found found(catalog);
    static const std::map<std::string, Pricing> usage = {{"OnDemand", Pricing::on_demand},
                                                         {"Preemptible", Pricing::spot},
                                                         {"Commit1Yr", Pricing::reserved_1y},
                                                         {"Commit3Yr", Pricing::reserved_3y}};
    for (const auto& [instance, wanted] : instances_of(catalog, "gcp", region)) {
        // A machine is priced by its parts: its vCPUs, its memory (GiB) and its GPUs, each a SKU of
        // its machine family ("A3 Instance Core", "A3 Instance Ram"; "A3 Cpu", "A3 Ram" committed).
        std::string family = instance->name.substr(0, instance->name.find('-'));
        std::transform(family.begin(), family.end(), family.begin(), [](unsigned char c) { return std::toupper(c); });
        // A3 Mega and A3 Ultra are families of their own SKUs ("A3 Ultra Instance Core").
        if (family == "A3" && instance->name.find("-megagpu") != std::string::npos) family += " Mega";
        if (family == "A3" && instance->name.find("-ultragpu") != std::string::npos) family += " Ultra";
        const std::string gpu = gcp_gpu_words(*instance);
        struct Parts {
            std::optional<double> core, ram, gpu;
            std::vector<std::string> ids;
        };
        std::map<Pricing, Parts> parts;
        for (const json& sku : skus) {
            const json& category = sku.contains("category") ? sku["category"] : json::object();
            if (text_of(category, "serviceDisplayName") != "Compute Engine") continue;
            const auto pricing = usage.find(text_of(category, "usageType"));
            if (pricing == usage.end()) continue;
            const json& regions = sku.contains("serviceRegions") ? sku["serviceRegions"] : json::array();
            if (!regions.is_array() || std::find(regions.begin(), regions.end(), wanted) == regions.end()) continue;
            const std::string description = text_of(sku, "description");
            auto has = [&](const std::string& words) {
                return !words.empty() && description.find(words) != std::string::npos;
            };
            std::optional<double>* part = nullptr;
            Parts& p = parts[pricing->second];
            if (has(family + " Instance Core") || has(family + " Cpu ")) {
                part = &p.core;
            } else if (has(family + " Instance Ram") || has(family + " Ram ")) {
                part = &p.ram;
            } else if (instance->gpus > 0 && (has(gpu + " running") || has(gpu + " attached") || has(gpu + " in "))) {
                part = &p.gpu;
            }
            if (part == nullptr) continue;
            if (const auto price = sku_unit_price(sku, origin)) {
                *part = *price;
                p.ids.push_back(text_of(sku, "skuId"));
            }
        }
        for (const auto& [pricing, p] : parts) {
            if (!p.core || !p.ram || (instance->gpus > 0 && !p.gpu)) continue;  // a part missing: no price
            const double usd = instance->vcpus * *p.core + instance->memory_gib * *p.ram +
                               (instance->gpus > 0 ? instance->gpus * *p.gpu : 0.0);
            if (!(usd > 0)) continue;
            std::string ids;
            for (const std::string& id : p.ids) ids += (ids.empty() ? "" : ", ") + id;
            ImportedPrice price{instance->name, wanted, pricing, {}};
            price.price.usd_per_hour = usd;
            price.price.read = read;
            price.price.estimate = true;
            price.price.source =
                "Google Cloud Billing Catalog SKUs " + std::string(origin) + ", " + wanted + ", " +
                std::string(epochcast::to_string(pricing)) + ": a sum of parts, " + std::to_string(instance->vcpus) +
                " vCPUs x $" + shortest(*p.core) + " + " + shortest(instance->memory_gib) + " GiB x $" +
                shortest(*p.ram) +
                (instance->gpus > 0 ? " + " + std::to_string(instance->gpus) + " GPUs x $" + shortest(*p.gpu)
                                    : std::string()) +
                " an hour (SKUs " + ids + ")";
            found.add(std::move(price));
        }
    }
    out.prices = found.in_catalog_order();
    return out;
}

}  // namespace

PriceImport import_price_file(std::string_view text, std::string_view origin, const Catalog& catalog,
                              const std::optional<std::string>& region, const std::string& read) {
    const json root = parse_json(text, origin);
    if (root.is_object() && root.contains("products") && root["products"].is_object() &&
        text_of(root, "offerCode") == "AmazonEC2") {
        return import_aws(root, origin, catalog, region, read);
    }
    if (root.is_object() && root.contains("Items") && root["Items"].is_array()) {
        return import_azure(root, origin, catalog, region, read);
    }
    if (root.is_object() && root.contains("skus") && root["skus"].is_array()) {
        return import_gcp(root, origin, catalog, region, read);
    }
    throw InputError(std::string(origin) +
                     ": not a price file epochcast reads (an AWS Price List offer file for AmazonEC2 with "
                     "\"products\" and \"terms\", an Azure Retail Prices API response with \"Items\", or a Google "
                     "Cloud Billing Catalog response with \"skus\")");
}

std::string price_overlay_json(const std::vector<ImportedPrice>& prices) {
    using ordered = nlohmann::ordered_json;
    ordered instances = ordered::array();
    std::map<std::string, std::size_t> at;  // instance -> index in `instances`
    for (const ImportedPrice& p : prices) {
        auto [it, fresh] = at.emplace(p.instance, instances.size());
        if (fresh) {
            instances.push_back(ordered{{"name", p.instance}, {"region", p.region}, {"prices", ordered::object()}});
        }
        ordered price = {{"usd_per_hour", p.price.usd_per_hour}, {"read", p.price.read}, {"source", p.price.source}};
        if (p.price.estimate) price["estimate"] = true;
        instances[it->second]["region"] = p.region;
        instances[it->second]["prices"][std::string(to_string(p.pricing))] = price;
    }
    ordered root = {{"schema", "epochcast.catalog/1"}, {"instances", instances}};
    return root.dump(2) + "\n";
}

}  // namespace epochcast
