// A sweep's row, cell by cell (docs/cli.md, "sweep"): the one description of its columns, from
// which both the CSV (cli/report.cpp) and the Python module's DataFrame (python/) are written.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

#include "cli/report.hpp"
#include "model/prediction.hpp"
#include "model/scenario.hpp"

namespace epochcast::cli {

/// What a column holds. Any cell may also be none (an empty CSV field).
enum class ColumnType { text, count, number, flag };

struct SweepColumn {
    std::string_view name;
    ColumnType type;
};

namespace detail {

inline constexpr SweepColumn kScenarioColumns[] = {
    {"model", ColumnType::text},           {"image_size", ColumnType::count},    {"classes", ColumnType::count},
    {"dataset_images", ColumnType::count}, {"epochs", ColumnType::number},       {"instance", ColumnType::text},
    {"nodes", ColumnType::count},          {"gpus_per_node", ColumnType::count}, {"framework", ColumnType::text},
    {"strategy", ColumnType::text},        {"precision", ColumnType::text},      {"stack", ColumnType::text},
    {"memory_format", ColumnType::text},   {"loader", ColumnType::text},         {"batch_per_gpu", ColumnType::count},
    {"pricing", ColumnType::text},         {"ps_instance", ColumnType::text},    {"ps_nodes", ColumnType::count},
    {"ps_colocated", ColumnType::flag},    {"efa_adapters", ColumnType::count},  {"feasible", ColumnType::flag},
    {"reason", ColumnType::text}};

inline constexpr SweepColumn kOutcomeColumns[] = {
    {"bottleneck", ColumnType::text},    {"compute_curve", ColumnType::text},
    {"interconnect", ColumnType::text},  {"algorithm", ColumnType::text},
    {"epochs_source", ColumnType::text}, {"global_batch_beyond_published", ColumnType::flag}};

/// The store and spot columns (issue 45), after every other column so that earlier columns keep
/// their places: the store a row priced, its size and tier (fsx-lustre), what bounded the first
/// epoch and how many epochs the store bounded (eqs. F7, F8), and a spot row's interruption rate,
/// checkpoint interval and replacement wait.
inline constexpr SweepColumn kStoreAndSpotColumns[] = {{"storage", ColumnType::text},
                                                       {"storage_tib", ColumnType::number},
                                                       {"storage_tier", ColumnType::number},
                                                       {"first_epoch_bottleneck", ColumnType::text},
                                                       {"store_bound_epochs", ColumnType::number},
                                                       {"spot_interruptions_per_node_hour", ColumnType::number},
                                                       {"checkpoint_interval_s", ColumnType::number},
                                                       {"spot_replacement_wait_s", ColumnType::number}};

/// The evaluation's cadence and size (issue 45 item 4), last: the epochs between passes the row
/// priced (--eval-every's, else its recipe's, 0 for none) and the images of each pass.
inline constexpr SweepColumn kEvaluationColumns[] = {{"eval_every_epochs", ColumnType::count},
                                                     {"eval_images", ColumnType::count}};

/// A spot row's elastic alternative (eq. X7, seed 003's dynamic training), last: the same run going
/// on without a lost node until its replacement joins, its expected time to train and cost; empty
/// where there is none (another pricing, one node, dedicated servers, no interruption rate, or a
/// run that would never finish that way).
inline constexpr SweepColumn kElasticColumns[] = {{"elastic_time_to_train_s", ColumnType::number},
                                                  {"elastic_cost_usd", ColumnType::number}};

/// Whether a spot row was priced elastic (the spec's `elastic_spot`; its time and cost then are the
/// elastic run's, as are the two columns before), empty on other pricings; the last column.
inline constexpr SweepColumn kElasticPricedColumns[] = {{"elastic_spot", ColumnType::flag}};

/// Whether the row is PyTorch under torch.compile (the spec's `compiled`, eq. C9); added after the
/// elastic columns, so that earlier columns keep their places.
inline constexpr SweepColumn kCompiledColumns[] = {{"compiled", ColumnType::flag}};

/// The row's elastic_spot cell.
template <typename Cells>
void elastic_priced_cell(const Scenario& s, Cells& cells) {
    s.pricing == Pricing::spot ? cells.flag(s.spot_elastic) : cells.none();
}

/// The scenario's cells; gpus_per_node as resolved when known, batch_per_gpu none when 0 (a global
/// batch that its GPUs do not divide).
template <typename Cells>
void scenario_cells(const Scenario& s, int gpus_per_node, int batch_per_gpu, Cells& cells) {
    const bool servers = s.strategy == Strategy::ps && !s.ps_colocated;
    cells.text(s.model);
    cells.count(s.image_size);
    cells.count(s.classes);
    cells.count(s.dataset_images);
    if (s.target_top1_percent > 0) {
        cells.none();  // an output: epochs_to_train
    } else {
        cells.number(s.epochs);
    }
    cells.text(s.instance);
    cells.count(s.nodes);
    cells.count(gpus_per_node);
    cells.text(to_string(s.framework));
    cells.text(to_string(s.strategy));
    cells.text(to_string(s.precision));
    cells.text(to_string(s.stack));
    cells.text(to_string(s.memory_format));
    cells.text(to_string(s.loader));
    batch_per_gpu > 0 ? cells.count(batch_per_gpu) : cells.none();
    cells.text(to_string(s.pricing));
    servers ? cells.text(s.ps_instance) : cells.none();
    servers ? cells.count(s.ps_nodes) : cells.none();
    cells.flag(s.strategy == Strategy::ps && s.ps_colocated);
    s.efa_adapters >= 0 ? cells.count(s.efa_adapters) : cells.none();
}

/// kStoreAndSpotColumns' cells: the store with its size and tier where it is fsx-lustre (the store's
/// defaults where the scenario gives none); what `p` (none for an infeasible row) says bounded the
/// first epoch and for how many epochs the store did; on a spot row the rate, interval and wait that
/// `p` priced (the rate the catalog gave, Young's interval), else the scenario's where it gives them.
template <typename Cells>
void store_and_spot_cells(const Scenario& s, const Prediction* p, Cells& cells) {
    cells.text(to_string(s.storage));
    if (s.storage == Store::fsx_lustre) {
        const FsxSize size = fsx_size(s);
        cells.number(size.tib);
        cells.number(size.tier_MBps_per_TiB);
    } else {
        cells.none();
        cells.none();
    }
    p ? cells.text(to_string(p->first_epoch_bottleneck)) : cells.none();
    p ? cells.number(p->store_bound_epochs) : cells.none();
    if (s.pricing != Pricing::spot) {
        for (int i = 0; i < 3; ++i) cells.none();
    } else if (p && p->spot.modelled) {
        cells.number(p->spot.interruptions_per_node_hour);
        cells.number(p->spot.checkpoint_interval_s);
        cells.number(p->spot.replacement_wait_s);
    } else {
        s.spot_interruptions_per_node_hour >= 0 ? cells.number(s.spot_interruptions_per_node_hour) : cells.none();
        s.checkpoint_interval_s > 0 ? cells.number(s.checkpoint_interval_s) : cells.none();
        cells.number(s.spot_replacement_wait_s);
    }
}

}  // namespace detail

/// Every column of a sweep row in order: the scenario's, `feasible`, `reason`, the prediction's
/// figures (kPredictionFigures, under their --json names), what ran, then the run's costs around its
/// iterations (kRunCostFigures), the store and spot columns (kStoreAndSpotColumns) and the
/// evaluation's (kEvaluationColumns), the elastic alternative's (kElasticColumns) and whether the
/// row was priced elastic (kElasticPricedColumns; all of issue 45, added last so that earlier columns
/// keep their places), then whether it ran under torch.compile (kCompiledColumns).
inline constexpr std::size_t kSweepColumnCount =
    std::size(detail::kScenarioColumns) + std::size(kPredictionFigures) + std::size(detail::kOutcomeColumns) +
    std::size(kRunCostFigures) + std::size(detail::kStoreAndSpotColumns) + std::size(detail::kEvaluationColumns) +
    std::size(detail::kElasticColumns) + std::size(detail::kElasticPricedColumns) + std::size(detail::kCompiledColumns);

inline constexpr std::array<SweepColumn, kSweepColumnCount> sweep_columns() {
    std::array<SweepColumn, kSweepColumnCount> columns{};
    std::size_t i = 0;
    for (const SweepColumn& c : detail::kScenarioColumns) columns[i++] = c;
    for (const PredictionFigure& f : kPredictionFigures)
        columns[i++] = {f.name, f.whole ? ColumnType::count : ColumnType::number};
    for (const SweepColumn& c : detail::kOutcomeColumns) columns[i++] = c;
    for (const PredictionFigure& f : kRunCostFigures) columns[i++] = {f.name, ColumnType::number};
    for (const SweepColumn& c : detail::kStoreAndSpotColumns) columns[i++] = c;
    for (const SweepColumn& c : detail::kEvaluationColumns) columns[i++] = c;
    for (const SweepColumn& c : detail::kElasticColumns) columns[i++] = c;
    for (const SweepColumn& c : detail::kElasticPricedColumns) columns[i++] = c;
    for (const SweepColumn& c : detail::kCompiledColumns) columns[i++] = c;
    return columns;
}

/// A feasible result's row: each cell handed to `cells` in sweep_columns()' order, as
/// cells.text(std::string_view), cells.count(std::int64_t), cells.number(double),
/// cells.flag(bool) or cells.none(). Money is none for a cluster without a price.
template <typename Cells>
void feasible_row(const ScenarioResult& result, Cells& cells) {
    const Prediction& p = result.prediction;
    detail::scenario_cells(result.scenario, p.nodes > 0 ? p.gpus / p.nodes : 0, batch_per_gpu(p), cells);
    cells.flag(true);
    cells.none();  // reason
    for (const PredictionFigure& figure : kPredictionFigures) {
        if (figure.whole) {
            cells.count(static_cast<std::int64_t>(figure.get(p)));
        } else {
            p.priced || !is_money_figure(figure) ? cells.number(figure.get(p)) : cells.none();
        }
    }
    cells.text(to_string(p.bottleneck));
    cells.text(to_string(result.curve_origin));
    cells.text(to_string(p.interconnect));
    cells.text(to_string(p.algorithm));
    cells.text(epochs_source_of(p));
    cells.flag(p.global_batch_beyond_published);
    for (const PredictionFigure& figure : kRunCostFigures) {
        p.priced || !is_money_figure(figure) ? cells.number(figure.get(p)) : cells.none();
    }
    detail::store_and_spot_cells(result.scenario, &p, cells);
    cells.count(p.eval_every_epochs);
    cells.count(result.scenario.eval_images);
    if (p.spot.elastic) {
        cells.number(p.spot.elastic_time_to_train_s);
        p.priced ? cells.number(p.spot.elastic_cost_usd) : cells.none();
    } else {
        cells.none();
        cells.none();
    }
    detail::elastic_priced_cell(result.scenario, cells);
    cells.flag(result.scenario.compiled);
}

/// A combination the model rejected: the scenario as given, `feasible` false, the reason, none
/// for every column of the prediction, and the store and spot columns as the scenario gives them.
template <typename Cells>
void infeasible_row(const Scenario& scenario, std::string_view reason, Cells& cells) {
    detail::scenario_cells(scenario, scenario.gpus_per_node, scenario.global_batch > 0 ? 0 : scenario.batch_per_gpu,
                           cells);
    cells.flag(false);
    cells.text(reason);
    for (std::size_t i = 0;
         i < std::size(kPredictionFigures) + std::size(detail::kOutcomeColumns) + std::size(kRunCostFigures); ++i) {
        cells.none();
    }
    detail::store_and_spot_cells(scenario, nullptr, cells);
    scenario.eval_every_epochs ? cells.count(*scenario.eval_every_epochs) : cells.none();
    cells.count(scenario.eval_images);
    for (std::size_t i = 0; i < std::size(detail::kElasticColumns); ++i) cells.none();
    detail::elastic_priced_cell(scenario, cells);
    cells.flag(scenario.compiled);
}

/// Which of sweep_columns() a sweep writes (`--columns`), by their places there.
using ColumnSelection = std::bitset<kSweepColumnCount>;

/// Every column: today's full set, the `all` group and the default.
inline ColumnSelection all_columns() { return ColumnSelection{}.set(); }

/// A row's cells as `cells` takes them, but only the selected columns' (the others are skipped,
/// their text never formatted): what a sweep of `--columns` writes.
template <typename Cells>
struct SelectedCells {
    Cells& cells;
    const ColumnSelection& selected;
    std::size_t column = 0;

    void text(std::string_view value) {
        if (selected[column++]) cells.text(value);
    }
    void count(std::int64_t value) {
        if (selected[column++]) cells.count(value);
    }
    void number(double value) {
        if (selected[column++]) cells.number(value);
    }
    void flag(bool value) {
        if (selected[column++]) cells.flag(value);
    }
    void none() {
        if (selected[column++]) cells.none();
    }
};

/// The CSV header of a sweep: the selected columns' names in sweep_columns()' order.
std::string prediction_csv_header(const ColumnSelection& columns = all_columns());

/// Append one CSV row (with '\n') for a feasible result, its selected columns (feasible_row's
/// cells), matching prediction_csv_header(). Numbers go through append_significant (cli/table.hpp:
/// 7 significant digits, as printf's "%.7g"; counts exactly), with no thousands separators: no
/// allocation beyond `row`'s growth.
void append_prediction_csv(std::string& row, const ScenarioResult& result, const ColumnSelection& columns);

/// Append one CSV row for a combination the model rejected (infeasible_row's cells), with `reason`
/// quoted and the prediction's columns empty.
void append_infeasible_csv(std::string& row, const Scenario& scenario, std::string_view reason,
                           const ColumnSelection& columns);

}  // namespace epochcast::cli
