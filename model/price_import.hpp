// Prices from the clouds' own machine-readable price files (issue 58, item 7; docs/formats.md,
// "Cloud price files"): AWS's Price List offer file for Amazon EC2, a page of Azure's Retail
// Prices API and a page of Google Cloud's Cloud Billing Catalog SKUs. Each file is read for the
// catalog's instances in their region (or the one asked for) and becomes prices of a catalog
// overlay (`epochcast catalog import-prices`), each with its read date and its source.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/catalog.hpp"

namespace epochcast {

/// Which cloud's format a price file is in.
enum class PriceFileFormat {
    aws_offer_file,    ///< AWS Price List bulk offer file (offerCode AmazonEC2): products and terms by SKU
    azure_retail,      ///< Azure Retail Prices API response: {"Items": [...]}
    gcp_billing_skus,  ///< Google Cloud Billing Catalog services.skus.list response: {"skus": [...]}
};
std::string_view to_string(PriceFileFormat format);

/// One price read for one instance of the catalog.
struct ImportedPrice {
    std::string instance;  ///< the catalog's name
    std::string region;    ///< the region it was read for
    Pricing pricing = Pricing::on_demand;
    Price price;  ///< usd_per_hour, read, source, estimate (a sum of parts: Google Cloud's)
};

/// What one file gave.
struct PriceImport {
    PriceFileFormat format = PriceFileFormat::aws_offer_file;
    std::vector<ImportedPrice> prices;  ///< in the catalog's instance order, then by pricing
    std::size_t entries = 0;            ///< products, items or SKUs the file holds
};

/// Read one price file's JSON `text` (`origin` names it in errors and sources) for the instances of
/// `catalog` of its cloud: each instance in `region` where given, else in the instance's own
/// catalog region. `read` (YYYY-MM-DD) is the date the file was downloaded; an AWS offer file
/// carries its own publication date, which it takes instead. Linux, shared tenancy, no licence:
/// the catalog's terms. Throws InputError naming `origin` for a file of none of the three formats
/// or a price that is not a positive number.
PriceImport import_price_file(std::string_view text, std::string_view origin, const Catalog& catalog,
                              const std::optional<std::string>& region, const std::string& read);

/// The catalog overlay (epochcast.catalog/1) that gives these prices to the catalog's instances:
/// one entry per instance with its region and its prices; `--catalog` merges it over the built-in
/// one, overriding the prices it names and keeping the others. Later prices of the same instance
/// and pricing win.
std::string price_overlay_json(const std::vector<ImportedPrice>& prices);

}  // namespace epochcast
