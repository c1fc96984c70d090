// `epochcast catalog [--catalog FILE]... [--cloud NAME] [--json]`: the GPUs and instances known, built
// in plus user files, as tables with units (hardware, then prices by how each instance is sold) or as
// "epochcast.catalog/1" JSON. `epochcast catalog import-prices FILE... -o OUT.json`: the clouds' own
// price files read into a catalog overlay (model/price_import.hpp).
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/output.hpp"
#include "cli/report.hpp"
#include "cli/table.hpp"
#include "model/billing.hpp"
#include "model/errors.hpp"
#include "model/price_import.hpp"
#include "model/text_io.hpp"

namespace epochcast::cli {
namespace {

struct CatalogOptions {
    std::vector<std::string> catalog_files;  ///< --catalog, merged in order over the built-in catalog
    std::string cloud;                       ///< --cloud: only its instances and their GPUs
    bool json = false;                       ///< --json
};

/// A figure where 0 means "none" or "unknown" (bf16 rate, spot price, single-GPU interconnect).
std::string or_dash(double value, int max_decimals = 4) { return value > 0 ? format_number(value, max_decimals) : "-"; }

/// The catalog as two tables with units, or as the "epochcast.catalog/1" JSON that --catalog reads.
class CatalogReport : public Report {
public:
    explicit CatalogReport(const Catalog& catalog) : catalog_(catalog) {}
    void print_text(std::ostream& out, bool) const override { print_tables(catalog_, out); }
    void print_json(std::ostream& out) const override { out << catalog_.to_json_text() << '\n'; }

private:
    static void print_tables(const Catalog& catalog, std::ostream& out);
    const Catalog& catalog_;
};

void CatalogReport::print_tables(const Catalog& catalog, std::ostream& out) {
    out << "GPUs (per GPU as AWS counts them: one GK210 per K80, one GM204 per M60)\n";
    Table gpus({"GPU", "fp32 TFLOPS", "fp16 TFLOPS", "bf16 TFLOPS", "memory GiB", "memory GB/s"});
    for (const GpuSpec& gpu : catalog.gpus()) {
        gpus.add_row({gpu.name, format_number(gpu.fp32_tflops, 2), format_number(gpu.fp16_tflops, 2),
                      or_dash(gpu.bf16_tflops, 2), format_number(gpu.memory_gib, 2),
                      format_number(gpu.memory_GBps, 1)});
    }
    gpus.print(out);

    out << "\nInstances (network in 10^9 bit/s over its NICs, intra-node in 10^9 byte/s per GPU; GDR: GPUDirect "
           "RDMA)\n";
    Table instances({"instance", "GPU", "GPUs", "vCPUs", "memory GiB", "network Gb/s", "fabric", "NICs", "GDR",
                     "intra-node GB/s", "intra-node link"});
    for (const InstanceSpec& instance : catalog.instances()) {
        std::string link = instance.intra_node_link.empty() ? "-" : instance.intra_node_link;
        if (instance.nvswitch) link += " + NVSwitch";
        instances.add_row({instance.name, instance.gpu.empty() ? "(CPU only)" : instance.gpu,
                           std::to_string(instance.gpus), std::to_string(instance.vcpus),
                           format_number(instance.memory_gib, 2), format_number(instance.network_gbps, 2),
                           std::string(to_string(instance.interconnect)), std::to_string(instance.nics),
                           instance.gpudirect_rdma ? "yes" : "no", or_dash(instance.intra_node_GBps, 1), link});
    }
    instances.print(out);

    out << "\nPrices in US dollars per instance-hour, by how each is sold (Linux; the region the prices were read "
           "for)\n";
    std::vector<std::string> header{"instance", "cloud", "region"};
    for (Pricing pricing : kAllPricings) header.push_back(std::string(to_string(pricing)) + " $/h");
    header.push_back("read");
    header.push_back("note");
    Table prices(header);
    for (const InstanceSpec& instance : catalog.instances()) {
        std::vector<std::string> row{instance.name, instance.cloud.empty() ? "-" : instance.cloud,
                                     instance.region.empty() ? "-" : instance.region};
        std::string first_read, last_read, estimates;
        for (Pricing pricing : kAllPricings) {
            const Price* price = instance.price(pricing);
            row.push_back(price ? format_number(price->usd_per_hour, 4) : "-");
            if (!price) continue;
            if (price->estimate) estimates += (estimates.empty() ? "" : ", ") + std::string(to_string(pricing));
            if (!price->read.empty()) {
                if (first_read.empty() || price->read < first_read) first_read = price->read;
                if (last_read.empty() || price->read > last_read) last_read = price->read;
            }
        }
        row.push_back(first_read.empty() ? "-" : first_read == last_read ? first_read : first_read + " - " + last_read);
        row.push_back(!instance.priced()   ? "n/a: no price by the hour"
                      : !estimates.empty() ? estimates + ": an estimate, not a quote"
                                           : "-");
        prices.add_row(row);
    }
    prices.print(out);
    out << "\n'-' means none or unknown. An instance without a price (a machine you own, or none found) costs n/a.\n"
           "Spot prices are a dated snapshot and change by the hour; see each price's source and conditions with\n"
           "--json, and override any figure with --catalog FILE.\n";
}

}  // namespace

struct ImportOptions {
    std::vector<std::string> files;          ///< the clouds' price files
    std::string output;                      ///< -o: the catalog overlay written
    std::string region;                      ///< --region: every instance read for this region
    std::string read;                        ///< --read: the date the files were downloaded
    std::vector<std::string> catalog_files;  ///< --catalog: the instances to price
};

/// `catalog import-prices`: each file read for the catalog's instances, the prices written as one
/// overlay (later files win), and a table of each price beside the catalog's.
void run_import_prices(const ImportOptions& o, std::ostream& out) {
    std::vector<std::string> inputs = o.files;
    inputs.insert(inputs.end(), o.catalog_files.begin(), o.catalog_files.end());
    check_outputs({{"-o", o.output}}, inputs);
    const std::string read = o.read.empty() ? format_date(today()) : o.read;
    if (!parse_date(read)) {
        throw InputError("--read must be a date YYYY-MM-DD (got '" + escape_for_message(read) + "')");
    }
    const Catalog catalog = load_catalog(o.catalog_files);
    std::optional<std::string> region;
    if (!o.region.empty()) region = o.region;
    std::vector<ImportedPrice> prices;
    std::vector<std::string> lines;
    for (const std::string& file : o.files) {
        const PriceImport found = import_price_file(read_text_file(file, "price"), file, catalog, region, read);
        lines.push_back(file + ": " + std::string(to_string(found.format)) + ", " +
                        format_count(static_cast<double>(found.entries)) + " entries, " +
                        std::to_string(found.prices.size()) + " prices for the catalog's instances");
        prices.insert(prices.end(), found.prices.begin(), found.prices.end());
    }
    if (prices.empty()) {
        throw InputError("no price in " + std::string(o.files.size() == 1 ? "the file" : "the files") +
                         " is for an instance of the catalog in " +
                         (region ? "region " + *region : std::string("its region")) +
                         " (Linux, shared tenancy, US dollars by the hour); nothing written");
    }
    write_text_file_atomically(o.output, price_overlay_json(prices), "catalog");
    for (const std::string& line : lines) out << line << '\n';
    Table table({"instance", "pricing", "$/h now", "read", "$/h imported", "read", "kind"});
    for (const ImportedPrice& p : prices) {
        const Price* known = catalog.instance(p.instance).price(p.pricing);
        table.add_row({p.instance, std::string(to_string(p.pricing)),
                       known ? format_dollars(known->usd_per_hour) : std::string("-"),
                       known && !known->read.empty() ? known->read : std::string("-"),
                       format_dollars(p.price.usd_per_hour), p.price.read,
                       p.price.estimate ? "estimate (sum of parts)" : "quote"});
    }
    table.print(out);
    out << "wrote " << o.output << ": give it to predict, plan, sweep or catalog with --catalog " << o.output << '\n';
}

void register_catalog(CLI::App& app, std::ostream& out) {
    auto options = std::make_shared<CatalogOptions>();
    CLI::App* command = app.add_subcommand("catalog", "List the GPUs and instances known, with prices and sources");
    add_catalog_option(*command, options->catalog_files);
    command->add_option("--cloud", options->cloud,
                        "Only the instances of this cloud (aws, gcp, azure, owned: the catalog's \"cloud\") and "
                        "their GPUs");
    add_json_flag(*command, options->json, "the merged catalog as epochcast.catalog/1 JSON");
    auto import = std::make_shared<ImportOptions>();
    CLI::App* importer = command->add_subcommand(
        "import-prices",
        "Read the clouds' own price files (an AWS Price List offer file for AmazonEC2, Azure Retail Prices API "
        "responses, Google Cloud Billing Catalog SKU lists) for the catalog's instances and write their on-demand, "
        "spot and commitment prices, each with its read date and source, as a catalog file for --catalog");
    importer->add_option("files", import->files, "Price files (JSON), read in order: a later price wins")->required();
    importer->add_option("-o,--output", import->output, "Catalog file to write (epochcast.catalog/1)")->required();
    importer->add_option("--region", import->region,
                         "Read every instance's prices for this region (us-east-1, eastus, us-central1) and say "
                         "so in the file (default: each instance's catalog region)");
    importer->add_option("--read", import->read,
                         "The date the files were downloaded, YYYY-MM-DD (default today; an AWS offer file gives "
                         "its own publication date)");
    add_catalog_option(*importer, import->catalog_files);
    importer->callback([import, &out] { run_import_prices(*import, out); });
    command->callback([options, command, &out] {
        if (command->got_subcommand("import-prices")) return;
        Catalog catalog = load_catalog(options->catalog_files);
        if (!options->cloud.empty()) {
            catalog.check_cloud(options->cloud, "--cloud");
            catalog = catalog.only_cloud(options->cloud);
        }
        write_report(CatalogReport(catalog), output_format(options->json), out);
    });
}

}  // namespace epochcast::cli
