// `epochcast import-nccl LOG --instance NAME [--efa-adapters N] -o TRACE.json`: an nccl-tests
// all_reduce_perf log becomes a network measurement (alpha-beta fit) in a trace, which
// calibration then uses. --efa-adapters records how many of the instance's EFA adapters the test
// used (0: NCCL's TCP socket transport); without it, all of them.
#include <CLI/CLI.hpp>

#include <fstream>
#include <memory>
#include <sstream>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/output.hpp"
#include "cli/table.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/text_io.hpp"
#include "traces/trace.hpp"

namespace epochcast::cli {
namespace {

struct ImportOptions {
    std::string log;
    std::string instance;
    std::string output;
    std::string source;
    int efa_adapters = -1;           ///< -1: all the instance has
    std::string nccl_algo = "nccl";  ///< NCCL_ALGO of the test: nccl (NCCL chose), ring or tree
    std::vector<std::string> catalogs;
};

void run_import(const ImportOptions& o, std::ostream& out) {
    std::vector<std::string> inputs = o.catalogs;
    inputs.push_back(o.log);
    check_outputs({{"-o", o.output}}, inputs);
    const Catalog catalog = load_catalog(o.catalogs);
    const InstanceSpec& instance = catalog.instance(o.instance);  // an unknown instance fails before any work
    if (o.efa_adapters < -1) {
        throw InputError("--efa-adapters must be 0 or more (got " + std::to_string(o.efa_adapters) + ")");
    }
    if (o.efa_adapters > instance.efa_adapters) {
        throw InputError("--efa-adapters " + std::to_string(o.efa_adapters) + " is more than " + instance.name +
                         " has (" + std::to_string(instance.efa_adapters) + " EFA adapters)");
    }
    if (o.nccl_algo != "nccl" && o.nccl_algo != "ring" && o.nccl_algo != "tree") {
        throw InputError("--nccl-algo must be nccl (NCCL chose), ring or tree, got '" + o.nccl_algo + "'");
    }
    const Strategy algorithm = parse_strategy(o.nccl_algo, "--nccl-algo");
    int ranks = 0;
    const std::vector<NcclSample> samples =
        parse_nccl_all_reduce(read_text_file(o.log, "nccl-tests log"), o.log, &ranks);
    NetworkMeasurement m;
    try {
        m = fit_alpha_beta(samples, ranks);
    } catch (const InputError& error) {
        throw InputError(o.log + ": " + error.what());
    }
    m.instance = o.instance;
    m.efa_adapters = o.efa_adapters;
    m.algorithm = algorithm;
    m.source = o.source.empty() ? "nccl-tests all_reduce_perf log '" + o.log + "'" : o.source;

    Trace trace;
    trace.document = {{"description", "network measurement imported by epochcast import-nccl"}};
    trace.networks.push_back(m);
    write_trace(trace, o.output);

    // What the built-in fabric figures say of the same test (docs/model.md, eqs. N1-A1).
    const double model_GBps = allreduce_bus_bandwidth_GBps(instance, catalog.device_kind(instance), m.ranks,
                                                           m.efa_adapters, Calibration::built_in().network, algorithm);
    Table table({"instance", "fabric", "ranks", "NCCL_ALGO", "sizes", "alpha (us)", "fitted bus GB/s", "max bus GB/s",
                 "avg bus GB/s", "built-in model GB/s"});
    std::string fabric(to_string(fabric_in_use(instance, m.efa_adapters)));
    if (instance.interconnect == Interconnect::efa) {
        fabric += " x " + std::to_string(m.efa_adapters < 0 ? instance.efa_adapters : m.efa_adapters);
    }
    table.add_row({m.instance, fabric, std::to_string(m.ranks), o.nccl_algo, std::to_string(m.samples.size()),
                   format_number(m.latency_s * 1e6, 1), format_number(m.bus_bandwidth_GBps, 2),
                   format_number(m.max_bus_bandwidth_GBps, 2), format_number(m.average_bus_bandwidth_GBps, 2),
                   format_number(model_GBps, 2)});
    table.print(out);
    out << "wrote " << o.output << '\n';
    check_written_after(out, o.output);
}

}  // namespace

void register_import_nccl(CLI::App& app, std::ostream& out) {
    auto options = std::make_shared<ImportOptions>();
    CLI::App* cmd = app.add_subcommand(
        "import-nccl", "Fit latency and bus bandwidth to an nccl-tests all_reduce_perf log and write them as a trace");
    cmd->add_option("log", options->log, "all_reduce_perf output")->required();
    cmd->add_option("--instance", options->instance, "Instance type the test ran on")->required();
    cmd->add_option("-o,--output", options->output, "Trace file to write")->required();
    without_default(
        cmd->add_option("--efa-adapters", options->efa_adapters,
                        "EFA adapters per node the test used (default: all the instance has; 0: TCP sockets)"));
    cmd->add_option("--nccl-algo", options->nccl_algo,
                    "NCCL_ALGO the test ran with: nccl (default: NCCL chose; on two nodes a tree), ring or tree");
    cmd->add_option("--source", options->source, "Where the log comes from (default: its path)");
    add_catalog_option(*cmd, options->catalogs);
    cmd->callback([options, &out] { run_import(*options, out); });
}

}  // namespace epochcast::cli
