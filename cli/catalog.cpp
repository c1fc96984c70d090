// `epochcast catalog [--catalog FILE]... [--json]`: the GPUs and instances known, built in plus
// user files, as two tables with units or as "epochcast.catalog/1" JSON.
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/report.hpp"
#include "cli/table.hpp"

namespace epochcast::cli {
namespace {

struct CatalogOptions {
    std::vector<std::string> catalog_files;  ///< --catalog, merged in order over the built-in catalog
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

    out << "\nInstances (AWS: us-east-1, Linux; network in 10^9 bit/s over its NICs, intra-node in 10^9 byte/s per "
           "GPU;\n"
           "GDR: GPUDirect RDMA)\n";
    Table instances({"instance", "GPU", "GPUs", "vCPUs", "memory GiB", "network Gb/s", "fabric", "NICs", "GDR",
                     "intra-node GB/s", "intra-node link", "on-demand $/h", "spot $/h"});
    for (const InstanceSpec& instance : catalog.instances()) {
        std::string link = instance.intra_node_link.empty() ? "-" : instance.intra_node_link;
        if (instance.nvswitch) link += " + NVSwitch";
        instances.add_row({instance.name, instance.gpu.empty() ? "(CPU only)" : instance.gpu,
                           std::to_string(instance.gpus), std::to_string(instance.vcpus),
                           format_number(instance.memory_gib, 2), format_number(instance.network_gbps, 2),
                           std::string(to_string(instance.interconnect)), std::to_string(instance.nics),
                           instance.gpudirect_rdma ? "yes" : "no", or_dash(instance.intra_node_GBps, 1), link,
                           format_number(instance.price_usd_per_hour, 4), or_dash(instance.spot_usd_per_hour, 4)});
    }
    instances.print(out);
    out << "\n'-' means none or unknown. Spot prices are representative estimates and vary; see each entry's\n"
           "source with --json, and override any figure with --catalog FILE.\n";
}

}  // namespace

void register_catalog(CLI::App& app, std::ostream& out) {
    auto options = std::make_shared<CatalogOptions>();
    CLI::App* command = app.add_subcommand("catalog", "List the GPUs and instances known, with prices and sources");
    add_catalog_option(*command, options->catalog_files);
    add_json_flag(*command, options->json, "the merged catalog as epochcast.catalog/1 JSON");
    command->callback([options, &out] {
        const Catalog catalog = load_catalog(options->catalog_files);
        write_report(CatalogReport(catalog), output_format(options->json), out);
    });
}

}  // namespace epochcast::cli
