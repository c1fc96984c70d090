#include "cli/report.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

#include "cli/sweep_row.hpp"
#include "cli/table.hpp"
#include "model/billing.hpp"
#include "model/errors.hpp"
#include "model/spot.hpp"
#include "model/storage.hpp"
#include "model/text_io.hpp"
#include "model/workload.hpp"
#include "traces/trace.hpp"

namespace epochcast::cli {
namespace {

std::string fixed(double value, int decimals) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

std::string strategy_label(const Scenario& s) {
    switch (s.strategy) {
        case Strategy::nccl:
            return "all-reduce, NCCL's choice";
        case Strategy::ring:
            return "ring all-reduce";
        case Strategy::hierarchical:
            return "hierarchical all-reduce";
        case Strategy::tree:
            return "tree all-reduce";
        case Strategy::ps:
            if (s.ps_colocated) return "parameter servers, co-located";
            return "parameter servers, " + std::to_string(s.ps_nodes) + " x " + s.ps_instance;
    }
    return "?";
}

void append_number(std::string& row, std::int64_t value) {
    char buffer[24];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, value);
    row.append(buffer, r.ptr);
}

/// A CSV field, quoted (with doubled quotes) when it holds a comma, a quote or a line break.
void append_field(std::string& row, std::string_view text) {
    // One pass of comparisons: find_first_of calls memchr on the set for each character, which was
    // a thirteenth of a million-row sweep's time.
    const bool plain =
        std::none_of(text.begin(), text.end(), [](char c) { return c == ',' || c == '"' || c == '\n' || c == '\r'; });
    if (plain) {
        row.append(text);
        return;
    }
    row += '"';
    for (char c : text) {
        if (c == '"') row += '"';
        row += c;
    }
    row += '"';
}

/// A row's cells (cli/sweep_row.hpp) as CSV fields, each followed by a comma; end() makes the
/// last one the end of the line.
struct CsvCells {
    std::string& row;
    void text(std::string_view value) {
        append_field(row, value);
        row += ',';
    }
    void count(std::int64_t value) {
        append_number(row, value);
        row += ',';
    }
    void number(double value) {
        append_significant(row, value);
        row += ',';
    }
    void flag(bool value) { row += value ? "true," : "false,"; }
    void none() { row += ','; }
    void end() { row.back() = '\n'; }
};

}  // namespace

FsxSize fsx_size(const Scenario& s) {
    const StorageCatalog& data = StorageCatalog::built_in();
    const StoreSpec& spec = data.store(Store::fsx_lustre);
    return {data.capacity_tib(spec, s.storage_tib), data.tier(spec, s.storage_tier_MBps_per_TiB).MBps_per_TiB};
}

OutputFormat output_format(bool json, bool markdown) {
    if (json && markdown) throw InputError("--json and --markdown exclude each other");
    return json ? OutputFormat::json : markdown ? OutputFormat::markdown : OutputFormat::text;
}

void write_report(const Report& report, OutputFormat format, std::ostream& out) {
    if (format == OutputFormat::json) {
        report.print_json(out);
    } else {
        report.print_text(out, format == OutputFormat::markdown);
    }
}

void print_json_document(const nlohmann::json& value, std::ostream& out) {
    out << value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds)) return seconds > 0 ? "forever" : "?";
    if (seconds < 120) return fixed(seconds, 1) + " s";
    if (seconds < 2 * 3600) return fixed(seconds / 60, 1) + " min";
    if (seconds < 2 * 86400) return fixed(seconds / 3600, 2) + " h";
    if (seconds < 1e6 * 86400) return group_thousands(fixed(seconds / 86400, 2)) + " days";
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.3g days", seconds / 86400);
    return buffer;
}

std::string format_dollars(double usd) {
    if (!std::isfinite(usd)) return usd > 0 ? "$inf" : "$?";
    const std::string sign = usd < 0 ? "-" : "";
    const double magnitude = std::abs(usd);
    // Cents while a double holds them (below 10^15), then three significant digits.
    if (magnitude >= 1e15) {
        char buffer[32];
        std::snprintf(buffer, sizeof buffer, "%.3g", magnitude);
        return sign + "$" + buffer;
    }
    const double cents = std::round(magnitude * 100);
    const double whole = std::floor(cents / 100);
    char hundredths[8];
    std::snprintf(hundredths, sizeof hundredths, ".%02d", static_cast<int>(cents - 100 * whole));
    return sign + "$" + format_count(whole) + hundredths;
}

std::string format_cost(double usd, bool priced) { return priced ? format_dollars(usd) : "n/a"; }

std::string prediction_csv_header(const ColumnSelection& columns) {
    std::string header;
    std::size_t k = 0;
    for (const SweepColumn& column : sweep_columns()) {
        if (!columns[k++]) continue;
        header += column.name;
        header += ',';
    }
    header.back() = '\n';
    return header;
}

namespace {

/// `write` (feasible_row or infeasible_row) into `row` as CSV: straight where every column is
/// selected, else through SelectedCells.
template <typename Write>
void append_csv_row(std::string& row, const ColumnSelection& columns, Write write) {
    CsvCells cells{row};
    if (columns.all()) {
        write(cells);
    } else {
        SelectedCells<CsvCells> selected{cells, columns};
        write(selected);
    }
    cells.end();
}

}  // namespace

void append_prediction_csv(std::string& row, const ScenarioResult& result, const ColumnSelection& columns) {
    append_csv_row(row, columns, [&](auto& cells) { feasible_row(result, cells); });
}

void append_infeasible_csv(std::string& row, const Scenario& scenario, std::string_view reason,
                           const ColumnSelection& columns) {
    append_csv_row(row, columns, [&](auto& cells) { infeasible_row(scenario, reason, cells); });
}

nlohmann::json infeasible_json(const Scenario& scenario, std::string_view reason) {
    return {{"scenario", scenario_json(scenario)}, {"feasible", false}, {"reason", reason}};
}

std::string epochs_source_of(const Prediction& p) {
    return epochs_source(Convergence::built_in(), p.epochs_recipe, p.epochs_basis);
}

/// The same spot run elastic (eq. X7): null where its cluster cannot shrink or it never finishes so.
nlohmann::json elastic_spot_json(const Prediction& p) {
    const SpotRun& x = p.spot;
    if (!x.elastic) return nullptr;
    return {{"throughput_ratio", x.elastic_throughput_ratio},
            {"loss_per_interruption_s", x.elastic_loss_per_interruption_s},
            {"expected_interruptions", x.elastic_expected_interruptions},
            {"time_to_train_s", x.elastic_time_to_train_s},
            {"cost_usd", p.priced ? nlohmann::json(x.elastic_cost_usd) : nlohmann::json(nullptr)}};
}

/// A spot run's interruptions (docs/cli.md, predict's `spot` key): null where no interruption rate is
/// known.
nlohmann::json spot_json(const Prediction& p) {
    if (!p.spot.modelled) return nullptr;
    const SpotRun& x = p.spot;
    return {
        {"interruptions_per_node_hour", x.interruptions_per_node_hour},
        {"cluster_interruptions_per_hour", x.cluster_interruptions_per_hour},
        {"expected_interruptions", x.expected_interruptions},
        {"checkpoint_interval_s", x.checkpoint_interval_s},
        {"recommended_checkpoint_interval_s", x.recommended_checkpoint_interval_s},
        {"checkpoint_write_s", x.checkpoint_write_s},
        {"restart_s", x.restart_s},
        {"replacement_wait_s", x.replacement_wait_s},
        {"replacement_staging_usd", x.replacement_staging_usd},
        {"loss_per_interruption_s", x.loss_per_interruption_s},
        {"expected_lost_work_s", x.expected_lost_work_s},
        {"expected_downtime_s", x.expected_downtime_s},
        {"uninterrupted_time_s", x.uninterrupted_time_s},
        {"waiting_time_to_train_s", std::isfinite(x.waiting_time_to_train_s) ? nlohmann::json(x.waiting_time_to_train_s)
                                                                             : nlohmann::json(nullptr)},
        {"waiting_cost_usd",
         p.priced && std::isfinite(x.waiting_cost_usd) ? nlohmann::json(x.waiting_cost_usd) : nlohmann::json(nullptr)},
        {"elastic_priced", x.elastic_priced},
        {"elastic", elastic_spot_json(p)}};
}

std::chrono::sys_days today() { return std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now()); }

std::string format_date(std::chrono::sys_days day) {
    const std::chrono::year_month_day date{day};
    char text[16];
    std::snprintf(text, sizeof text, "%04d-%02u-%02u", static_cast<int>(date.year()),
                  static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()));
    return text;
}

std::string stale_price_text(const Catalog& catalog, const Scenario& scenario, std::chrono::sys_days today) {
    if (scenario.pricing == Pricing::spot) return {};
    std::string text;
    for (const std::string& name : {scenario.instance, scenario.ps_instance}) {
        if (name.empty() || (name == scenario.ps_instance && scenario.ps_nodes == 0)) continue;
        const Price* price = catalog.instance(name).price(scenario.pricing);
        if (price == nullptr) continue;
        const auto age = price_age_days(price->read, today);
        if (!age || *age <= kStalePriceDays) continue;
        text += std::string(text.empty() ? "the " : "; the ") + std::string(to_string(scenario.pricing)) +
                " price of " + name + " (" + format_dollars(price->usd_per_hour) + "/h) was read " + price->read +
                ", " + std::to_string(*age) + " days ago";
    }
    if (text.empty()) return text;
    return text + ": stale past " + std::to_string(kStalePriceDays) +
           " days; `epochcast catalog import-prices` reads the cloud's current price file into a --catalog file";
}

std::string spot_inputs_text(const Catalog& catalog, const Scenario& scenario, std::chrono::sys_days today) {
    if (scenario.pricing != Pricing::spot) return {};
    const InstanceSpec& instance = catalog.instance(scenario.instance);
    const Price* spot = instance.price(Pricing::spot);
    if (spot == nullptr) return {};
    std::string text = format_dollars(spot->usd_per_hour) + "/h " + (spot->estimate ? "an estimate" : "a quote");
    if (const auto age = price_age_days(spot->read, today)) {
        text += " read " + spot->read + " (" + std::to_string(*age) + " days ago" +
                (*age > kStalePriceDays ? ": stale, past " + std::to_string(kStalePriceDays) + " days" : "") + ")";
    } else {
        text += ", undated";
    }
    if (const Price* on_demand = instance.price(Pricing::on_demand)) {
        const double share = spot->usd_per_hour / on_demand->usd_per_hour;
        text += ", " + std::to_string(std::lround(100 * share)) + "% of on-demand";
        if (share < kLowestPlausibleSpotShare) {
            text +=
                " (implausibly low: current GPUs' spot prices run at 30-60% of on-demand; check the cloud's "
                "price now)";
        }
    }
    text += "; interruptions: ";
    if (scenario.spot_interruptions_per_node_hour >= 0) {
        text += "given, " + format_number(scenario.spot_interruptions_per_node_hour, 4) + " per node-hour";
    } else if (spot->interruptions) {
        const SpotInterruptions& band = *spot->interruptions;
        text +=
            "band " + band.band + (band.estimate ? " assumed " : " from the Spot Instance Advisor, read ") + band.read;
        if (const auto age = price_age_days(band.read, today); age && *age > kStalePriceDays) {
            text += " (" + std::to_string(*age) + " days ago: stale)";
        }
    } else {
        text += "unknown, priced as never interrupted";
    }
    return text;
}

std::string elastic_spot_text(const Prediction& p) {
    const SpotRun& x = p.spot;
    if (!x.elastic) return "";
    auto change = [](double to, double from) {
        const double percent = 100.0 * (to / from - 1.0);
        return std::string(percent < 0 ? "-" : "+") + format_number(std::abs(percent), 2) + "%";
    };
    if (x.elastic_priced) {  // the run is the elastic one: what waiting for each replacement would be
        const std::string lost =
            format_duration(loss_per_interruption_s(x.restart_s, x.replacement_wait_s, x.checkpoint_interval_s)) +
            " lost per interruption)";
        if (!std::isfinite(x.waiting_time_to_train_s)) {
            return "waiting for each replacement instead: it would never finish (" + lost;
        }
        std::string text = "waiting for each replacement instead: " + format_duration(x.waiting_time_to_train_s);
        if (p.priced) text += ", " + format_dollars(x.waiting_cost_usd);
        text += " (" + change(x.waiting_time_to_train_s, x.elastic_time_to_train_s) + " time";
        if (p.priced && x.elastic_cost_usd > 0) text += ", " + change(x.waiting_cost_usd, x.elastic_cost_usd) + " cost";
        return text + " against elastic; " + lost;
    }
    std::string text = "elastic (go on without a lost node until its replacement joins, seed 003): " +
                       format_duration(x.elastic_time_to_train_s);
    if (p.priced) text += ", " + format_dollars(x.elastic_cost_usd);
    text += " (" + change(x.elastic_time_to_train_s, x.waiting_time_to_train_s) + " time";
    if (p.priced && x.waiting_cost_usd > 0) text += ", " + change(x.elastic_cost_usd, x.waiting_cost_usd) + " cost";
    return text + " against waiting; " + format_duration(x.elastic_loss_per_interruption_s) + " lost per interruption)";
}

bool cold_first_epoch(const Prediction& p) {
    return p.first_epoch_bottleneck == Bottleneck::storage && p.bottleneck != Bottleneck::storage;
}

std::string bottleneck_text(const Prediction& p) {
    if (!cold_first_epoch(p)) return std::string(to_string(p.bottleneck));
    const std::string later = std::string(to_string(p.bottleneck));
    if (!(p.store_bound_epochs > 1)) {
        return "storage (first epoch; later epochs from each node's page cache: " + later + ")";
    }
    return "storage (first " + format_number(p.store_bound_epochs, 1) +
           " epochs, as each node's page cache fills; later: " + later + ")";
}

/// The store the images are read from (docs/cli.md, predict's `storage` key).
nlohmann::json storage_json(const Scenario& s, const Prediction& p) {
    nlohmann::json j = {
        {"store", to_string(p.storage)},
        {"staging_s", p.staging_s},
        {"demanded_read_GBps", p.demanded_read_GBps},
        {"storage_read_GBps", p.storage_read_GBps > 0 ? nlohmann::json(p.storage_read_GBps) : nlohmann::json(nullptr)},
        {"bound", p.bottleneck == Bottleneck::storage},
        {"first_epoch_bound", p.first_epoch_bottleneck == Bottleneck::storage},
        {"store_bound_epochs", p.store_bound_epochs},
        {"page_cache_hit_fraction", p.page_cache_hit_fraction}};
    if (p.storage == Store::fsx_lustre) {
        const FsxSize size = fsx_size(s);
        j["tib"] = size.tib;
        j["tier_MBps_per_TiB"] = size.tier_MBps_per_TiB;
    }
    return j;
}

nlohmann::json prediction_json(const ScenarioResult& result) {
    const Scenario& s = result.scenario;
    const Prediction& p = result.prediction;
    nlohmann::json scenario = scenario_json(s);
    scenario["gpus_per_node"] = p.nodes > 0 ? p.gpus / p.nodes : 0;  // resolved: 0 meant "all"
    scenario["batch_per_gpu"] = batch_per_gpu(p);                    // resolved from a global batch
    if (p.epochs_recipe >= 0)
        scenario["recipe"] = Convergence::built_in().recipes[static_cast<std::size_t>(p.epochs_recipe)].name;
    // A cluster without a price (a machine you own) has no cost: null, not 0.
    auto money = [&p](double usd) { return p.priced ? nlohmann::json(usd) : nlohmann::json(nullptr); };
    nlohmann::json j = {
        {"scenario", scenario},
        {"throughput_images_per_s", p.throughput_images_per_s},
        {"first_epoch_images_per_s", p.first_epoch_images_per_s},
        {"interval", {{"low", p.interval.low}, {"high", p.interval.high}}},
        {"per_gpu_images_per_s", p.per_gpu_images_per_s},
        {"iteration_s", p.iteration_s},
        {"compute_s", p.compute_s},
        {"data_s", p.data_s},
        {"communication_s", p.communication_s},
        {"exposed_communication_s", p.exposed_communication_s},
        {"sync_s", p.sync_s},
        {"bottleneck", to_string(p.bottleneck)},
        {"loader", to_string(p.loader)},
        {"algorithm_bandwidth_GBps", p.algorithm_bandwidth_GBps},
        {"bus_bandwidth_GBps", p.bus_bandwidth_GBps},
        {"interconnect", to_string(p.interconnect)},
        {"algorithm", to_string(p.algorithm)},
        {"buckets", p.buckets},
        {"checkpoint_s", p.checkpoint_s},
        {"epoch_s", p.epoch_s},
        {"startup_s", p.startup_s},
        {"epochs", p.epochs},
        {"epochs_source", epochs_source_of(p)},
        {"epochs_interval", {{"low", p.epochs_interval.low}, {"high", p.epochs_interval.high}}},
        {"time_to_train_s", p.time_to_train_s},
        {"time_to_train_interval", {{"low", p.time_to_train_interval.low}, {"high", p.time_to_train_interval.high}}},
        {"cluster_usd_per_hour", money(p.cluster_usd_per_hour)},
        {"cost_usd", money(p.cost_usd)},
        {"cost_interval", p.priced ? nlohmann::json({{"low", p.cost_interval.low}, {"high", p.cost_interval.high}})
                                   : nlohmann::json(nullptr)},
        {"cost_per_epoch_usd", money(p.cost_per_epoch_usd)},
        {"bill_usd", money(p.bill_usd)},
        {"bill_interval", p.priced ? nlohmann::json({{"low", p.bill_interval.low}, {"high", p.bill_interval.high}})
                                   : nlohmann::json(nullptr)},
        {"billed_hours_per_node", p.billed_hours_per_node},
        {"billing", billed_whole(p.pricing) ? billing_text(p.pricing, p.billed_hours_per_node) : "by the second"},
        {"scaling_efficiency", p.scaling_efficiency},
        {"node_scaling_efficiency", p.node_scaling_efficiency},
        {"input_efficiency", p.input_efficiency},
        {"memory_per_gpu_GiB", p.memory_per_gpu_GiB},
        {"memory_headroom_GiB", p.memory_headroom_GiB},
        {"gpus", p.gpus},
        {"global_batch", p.global_batch},
        {"global_batch_beyond_published", p.global_batch_beyond_published},
        {"host_vcpus_per_gpu", p.host_vcpus_per_gpu},
        {"host_vcpus_short", p.host_vcpus_short},
        {"compute_curve", to_string(result.curve_origin)}};
    // What the run costs around its iterations (issue 45): always the evaluation and the money's
    // parts; the store's figures with a store only (absent otherwise, as `spot` is).
    j["evaluation_s"] = p.evaluation_s;
    j["evaluations"] = p.evaluations;
    j["eval_every_epochs"] = p.eval_every_epochs;
    j["eval_every_source"] = p.eval_every_epochs == 0 ? "none" : p.eval_every_from_recipe ? "recipe" : "--eval-every";
    j["cluster_usd"] = money(p.cluster_usd);
    j["storage_usd"] = p.storage_usd;
    j["data_transfer_usd"] = p.data_transfer_usd;
    if (p.storage != Store::none) j["storage"] = storage_json(s, p);
    if (s.pricing == Pricing::spot) j["spot"] = spot_json(p);
    return j;
}

std::string memory_text(const CostModel& model, const Scenario& s, const Prediction& p) {
    const Catalog& catalog = model.catalog();
    const InstanceSpec& instance = catalog.instance(s.instance);
    if (catalog.device_kind(instance) != DeviceKind::gpu) return fixed(p.memory_per_gpu_GiB, 1);
    const GpuSpec& gpu = catalog.gpu_of(instance);
    const int fits = largest_batch_that_fits(model.workload(s.model, s.image_size, s.classes), s.precision,
                                             gpu.memory_gib * kBytesPerGiB);
    return fixed(p.memory_per_gpu_GiB, 1) + " of the GPU's " + format_number(gpu.memory_gib, 1) +
           " (a batch of up to " + format_count(fits) + " fits)";
}

void print_prediction_table(const std::vector<ScenarioResult>& results, const CostModel& model, std::ostream& out) {
    const Catalog& catalog = model.catalog();
    std::vector<std::string> header{""};
    for (const ScenarioResult& r : results) {
        header.push_back(std::string(to_string(r.scenario.framework)) + " / " +
                         std::string(to_string(r.scenario.strategy)));
    }
    Table table(header);
    auto row = [&](const std::string& label, auto cell) {
        std::vector<std::string> cells{label};
        for (const ScenarioResult& r : results) cells.push_back(cell(r.scenario, r.prediction));
        table.add_row(cells);
    };
    row("cluster", [&](const Scenario& s, const Prediction& p) {
        const InstanceSpec& instance = catalog.instance(s.instance);
        return format_count(s.nodes) + " x " + s.instance + " = " + format_count(p.gpus) + " x " + instance.gpu;
    });
    row("synchronisation", [](const Scenario& s, const Prediction&) { return strategy_label(s); });
    row("  fabric between nodes", [&](const Scenario& s, const Prediction& p) {
        const InstanceSpec& instance = catalog.instance(s.instance);
        std::string fabric =
            std::string(to_string(p.interconnect)) + ", " + format_number(instance.network_gbps, 4) + " Gb/s";
        if (p.interconnect != Interconnect::tcp && instance.nics > 1)
            fabric += " over " + std::to_string(instance.nics) + " NICs";
        return fabric;
    });
    row("  algorithm x buckets", [](const Scenario&, const Prediction& p) {
        return std::string(to_string(p.algorithm)) + " x " + std::to_string(p.buckets);
    });
    row("precision, batch per GPU", [](const Scenario& s, const Prediction& p) {
        std::string text = std::string(to_string(s.precision)) + ", " + std::to_string(batch_per_gpu(p));
        if (s.global_batch > 0) text += " (global " + format_count(s.global_batch) + ", fixed)";
        if (p.global_batch_beyond_published)
            text += " [global " + format_count(p.global_batch) + ": beyond every published recipe]";
        return text;
    });
    row("throughput (images/s)",
        [](const Scenario&, const Prediction& p) { return format_count(p.throughput_images_per_s); });
    row("  95% band (images/s)", [](const Scenario&, const Prediction& p) {
        return format_count(p.interval.low) + " - " + format_count(p.interval.high);
    });
    // The first epoch where the store bounds it and each node's page cache serves later ones (eqs. F7, F8).
    if (std::any_of(results.begin(), results.end(),
                    [](const ScenarioResult& r) { return cold_first_epoch(r.prediction); })) {
        row("  first epoch (images/s)", [](const Scenario&, const Prediction& p) {
            return cold_first_epoch(p) ? format_count(p.first_epoch_images_per_s) : std::string("the same");
        });
    }
    row("  per GPU (images/s)",
        [](const Scenario&, const Prediction& p) { return format_count(p.per_gpu_images_per_s); });
    row("scaling efficiency vs 1 GPU",
        [](const Scenario&, const Prediction& p) { return fixed(100 * p.scaling_efficiency, 1) + " %"; });
    row("scaling efficiency vs 1 node",
        [](const Scenario&, const Prediction& p) { return fixed(100 * p.node_scaling_efficiency, 1) + " %"; });
    row("input pipeline feeds", [](const Scenario&, const Prediction& p) {
        return fixed(100 * p.input_efficiency, 1) + " % of a GPU's compute rate";
    });
    row("iteration (ms)", [](const Scenario&, const Prediction& p) { return fixed(1e3 * p.iteration_s, 1); });
    row("  compute (ms)", [](const Scenario&, const Prediction& p) { return fixed(1e3 * p.compute_s, 1); });
    row("  straggler wait (ms)", [](const Scenario&, const Prediction& p) { return fixed(1e3 * p.sync_s, 1); });
    row("  communication, exposed/all (ms)", [](const Scenario&, const Prediction& p) {
        return fixed(1e3 * p.exposed_communication_s, 1) + " / " + fixed(1e3 * p.communication_s, 1);
    });
    row("  input pipeline (ms)", [](const Scenario&, const Prediction& p) {
        return fixed(1e3 * p.data_s, 1) + ", " + std::string(to_string(p.loader));
    });
    row("bottleneck", [](const Scenario&, const Prediction& p) { return bottleneck_text(p); });
    row("memory per GPU (GiB)", [&](const Scenario& s, const Prediction& p) { return memory_text(model, s, p); });
    row("epoch", [](const Scenario&, const Prediction& p) { return format_duration(p.epoch_s); });
    row("epochs", [](const Scenario&, const Prediction& p) {
        std::string text = format_number(p.epochs, 3);
        if (p.epochs_interval.high > p.epochs_interval.low) {
            text +=
                " (" + format_number(p.epochs_interval.low, 3) + " - " + format_number(p.epochs_interval.high, 3) + ")";
        }
        return text + (p.epochs_basis == EpochsBasis::given ? std::string(", given") : ", " + epochs_source_of(p));
    });
    const bool any_store = std::any_of(results.begin(), results.end(),
                                       [](const ScenarioResult& r) { return r.prediction.storage != Store::none; });
    if (any_store) {
        row("storage", [](const Scenario& s, const Prediction& p) {
            if (p.storage == Store::none) return std::string("none");
            std::string text(to_string(p.storage));
            if (p.storage == Store::fsx_lustre) {
                const FsxSize size = fsx_size(s);
                text.append(" ").append(format_number(size.tib, 4));
                text.append(" TiB at ").append(format_number(size.tier_MBps_per_TiB, 4)).append(" MB/s/TiB");
            }
            return text;
        });
        row("  reads, demanded/delivered (GB/s)", [](const Scenario&, const Prediction& p) {
            if (p.storage == Store::none) return std::string("-");
            return fixed(p.demanded_read_GBps, 2) + " / " +
                   (p.storage_read_GBps > 0 ? fixed(p.storage_read_GBps, 2) : std::string("no bound"));
        });
        row("  staging (copy from S3)", [](const Scenario&, const Prediction& p) {
            return p.staging_s > 0 ? format_duration(p.staging_s) : std::string("none");
        });
    }
    row("start-up", [](const Scenario&, const Prediction& p) { return format_duration(p.startup_s); });
    row("evaluation", [](const Scenario&, const Prediction& p) {
        if (!(p.evaluations > 0)) return std::string("none");
        return format_number(p.evaluations, 4) + " passes x " + format_duration(p.evaluation_s) + ", every " +
               (p.eval_every_epochs == 1 ? std::string("epoch") : std::to_string(p.eval_every_epochs) + " epochs") +
               (p.eval_every_from_recipe ? " (the recipe's)" : "");
    });
    row("time to train", [](const Scenario&, const Prediction& p) { return format_duration(p.time_to_train_s); });
    row("  95% band", [](const Scenario&, const Prediction& p) {
        return format_duration(p.time_to_train_interval.low) + " - " + format_duration(p.time_to_train_interval.high);
    });
    row("cluster price ($/h)", [](const Scenario& s, const Prediction& p) {
        if (!p.priced) return std::string("n/a (no price by the hour)");
        return format_dollars(p.cluster_usd_per_hour) + " " + std::string(to_string(s.pricing));
    });
    row("cost per epoch",
        [](const Scenario&, const Prediction& p) { return format_cost(p.cost_per_epoch_usd, p.priced); });
    row("cost to train", [](const Scenario&, const Prediction& p) {
        return format_cost(p.cost_usd, p.priced) + (billed_whole(p.pricing) ? " (the run's share)" : "");
    });
    if (any_store) {
        row("  instances", [](const Scenario&, const Prediction& p) { return format_cost(p.cluster_usd, p.priced); });
        row("  storage", [](const Scenario&, const Prediction& p) { return format_dollars(p.storage_usd); });
        row("  data transfer and requests",
            [](const Scenario&, const Prediction& p) { return format_dollars(p.data_transfer_usd); });
    }
    row("  95% band", [](const Scenario&, const Prediction& p) {
        return p.priced ? format_dollars(p.cost_interval.low) + " - " + format_dollars(p.cost_interval.high)
                        : std::string("n/a");
    });
    // What is paid where the instances are sold whole (eq. H1): the cost above is the run's share.
    if (std::any_of(results.begin(), results.end(),
                    [](const ScenarioResult& r) { return billed_whole(r.prediction.pricing); })) {
        row("bill, as sold", [](const Scenario&, const Prediction& p) {
            if (!billed_whole(p.pricing)) return format_cost(p.bill_usd, p.priced) + ", by the second";
            return format_cost(p.bill_usd, p.priced) + ", " + billing_text(p.pricing, p.billed_hours_per_node) +
                   (p.nodes > 1 ? " of " + std::to_string(p.nodes) + " instances" : std::string(""));
        });
        row("  95% band", [](const Scenario&, const Prediction& p) {
            return p.priced ? format_dollars(p.bill_interval.low) + " - " + format_dollars(p.bill_interval.high)
                            : std::string("n/a");
        });
    }
    table.print(out);
}

}  // namespace epochcast::cli
