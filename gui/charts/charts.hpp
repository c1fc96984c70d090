// The charts of epochcast, shared by the GUI (gui/app/) and `epochcast sweep/plan --plot`:
// the scaling curve, the time-against-cost scatter with its Pareto front, and the stacked bar of
// an iteration's phases. Inputs are plain value types computed by model/; nothing here predicts
// anything. Each builder returns a QChart that a QChartView can show or render_to_file() can write.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <QtCharts/QChart>

class QApplication;

namespace epochcast::charts {

// ---- scaling curve -------------------------------------------------------------------------

/// One point of a scaling curve.
struct ScalingPoint {
    double gpus = 0;                     ///< worker GPUs in the cluster
    double throughput_images_per_s = 0;  ///< global images per second
    /// The throughput's band (images/s), drawn shaded around a line series in its colour; both 0
    /// (the default) draws none.
    double low_images_per_s = 0;
    double high_images_per_s = 0;
};

/// One curve (or set of points) on the scaling chart.
struct ScalingSeries {
    std::string name;                  ///< legend entry, e.g. "p3.16xlarge, hierarchical (predicted)"
    std::vector<ScalingPoint> points;  ///< drawn in the given order
    bool points_only = false;          ///< markers without a line (measured points)
    /// Images/s of one GPU alone: this series' ideal is a dashed line in its colour, gpus x this,
    /// from its first point's GPUs to its last. 0 draws none.
    double ideal_images_per_s_per_gpu = 0;
    /// With ScalingChartData::group_order: the group (a GPU model) whose colour the curve takes, as
    /// the time-against-cost chart colours its markers; curves of one group differ by their dashes.
    std::string group = {};
};

struct ScalingChartData {
    std::string title;                  ///< chart title; empty for none
    std::vector<ScalingSeries> series;  ///< predicted curves, measured points, ...
    /// When not empty (`plan/sweep --plot`): the groups in CostTimeChartData::group_order's order,
    /// so that a colour means the same GPU model in both charts; empty: a colour per series.
    std::vector<std::string> group_order;
};

/// Throughput (images/s) against GPUs, each series a line or markers, with its ideal linear line.
/// Both axes are logarithmic when the GPUs span a factor of 16 or more (so that an ideal line is
/// straight, and a curve's bend away from it reads the same at 8 GPUs as at 512), else both linear.
std::unique_ptr<QChart> scaling_chart(const ScalingChartData& data);

// ---- time against cost ---------------------------------------------------------------------

/// One configuration on the time-against-cost scatter.
struct CostTimePoint {
    int index = 0;               ///< the caller's index of the configuration (a GUI maps a click back with it)
    double time_to_train_s = 0;  ///< x, drawn in hours
    double cost_usd = 0;         ///< y, in US dollars
    bool on_front = false;       ///< on the Pareto front of time against cost (computed by model/)
    std::string label;           ///< shown beside front points when labelled, e.g. "8 x p3.16xlarge"
    /// The legend entry of its marker, e.g. the instance type: each group has a colour and shape of
    /// its own. Points without one are drawn alike as "configurations".
    std::string group = {};
    /// Background only (with CostTimeChartData::group_order): drawn small and light grey, under
    /// CostTimeChartData::context_name, whatever its group.
    bool context = false;
};

struct CostTimeChartData {
    std::string title;                  ///< chart title; empty for none
    std::vector<CostTimePoint> points;  ///< every configuration, front points included
    bool label_front = true;            ///< write each front point's label beside it
    std::optional<double> deadline_s;   ///< a vertical line at the deadline, when given
    std::optional<double> budget_usd;   ///< a horizontal line at the budget, when given
    /// A point (its CostTimePoint::index) to mark as "this configuration", when given (the GUI's
    /// current inputs).
    std::optional<int> current_index;
    /// The style of `plan/sweep --plot` (thousands of configurations, a few groups such as GPU
    /// models), when not empty: the groups in this order, in the legend and in the palette (one
    /// colour each); the front a line through larger markers in their group's colour; `context`
    /// points small and light grey behind everything. Empty (the GUI's): every group in the
    /// groups' alphabetical order, each with a colour and a shape, the front's markers ringed.
    std::vector<std::string> group_order;
    std::string context_name = "other configurations";  ///< the legend entry of the `context` points
};

/// Every configuration as a marker of its group's colour and shape, the Pareto front as a
/// highlighted line through them, front points' labels placed clear of the markers and lines.
/// Both axes are logarithmic when they span a factor of 30 or more (4 with
/// group_order); either way their ticks are
/// plain durations and dollars ("10 min", "1 h", "2 d"; "$50", "$1,000"; see time_ticks() and
/// dollar_ticks()), drawn by the chart over Qt's own labels (which Qt's log axis puts at the
/// powers of its base only, in a printf format).
std::unique_ptr<QChart> cost_time_chart(const CostTimeChartData& data);

// ---- plain ticks ---------------------------------------------------------------------------

/// A labelled tick: where (in the axis' unit) and what it reads.
struct AxisTick {
    double value = 0;
    std::string label;
};

/// A duration as a person writes it: "30 s", "10 min", "45 min", "1 h", "1.5 h", "12 h", "2 d",
/// "1,000 d" (at most one decimal, none from 100 on).
std::string plain_duration(double seconds);

/// Dollars as a person writes them: "$0", "$0.50", "$50", "$1,000", "$25,000".
std::string plain_dollars(double usd);

/// Ticks of a time axis in hours from `low_h` to `high_h` at round durations: on a logarithmic
/// axis the finest of three ladders that gives at most `max_ticks` (1 min, 10 min, 1 h, 1 d, 10 d;
/// then also 5 min, 30 min, 6 h, 3 d; then also 2 min, 20 min, 2 h, 3 h, 12 h, 2 d, 5 d), on a
/// linear one the multiples of the smallest round step (15 min, 30 min, 1 h, 2 h, ...) that gives
/// at most `max_ticks`. Values in hours, labels by plain_duration().
std::vector<AxisTick> time_ticks(double low_h, double high_h, bool log, std::size_t max_ticks = 9);

/// Ticks of a dollar axis from `low` to `high`: on a logarithmic axis 1, 2 and 5 times the powers
/// of ten, or 1 and 3, or the powers alone (the finest with at most `max_ticks`), on a linear one
/// the multiples of 1, 2 or 5 times a power of ten. Labels by plain_dollars().
std::vector<AxisTick> dollar_ticks(double low, double high, bool log, std::size_t max_ticks = 9);

/// As dollar_ticks(), for a count (images/s): "20,000", "1,000,000".
std::vector<AxisTick> count_ticks(double low, double high, bool log, std::size_t max_ticks = 8);

/// The index (CostTimePoint::index) of the point of `data` nearest to a value in the chart's
/// coordinates (x in hours, y in US dollars), as a scatter series' clicked(QPointF) reports it;
/// distance is measured relative to each axis' span. Empty when `data` has no points.
std::optional<int> cost_time_index_at(const CostTimeChartData& data, double time_h, double cost_usd);

// ---- iteration breakdown -------------------------------------------------------------------

/// One configuration's iteration, in seconds per iteration.
struct BreakdownBar {
    std::string label;                   ///< category label, e.g. "8 x p3.16xlarge ring"
    double compute_s = 0;                ///< forward + backward + update (with the straggler wait)
    double data_s = 0;                   ///< input pipeline time not hidden behind compute
    double exposed_communication_s = 0;  ///< gradient synchronisation the backward pass does not hide
};

struct BreakdownChartData {
    std::string title;               ///< chart title; empty for none
    std::vector<BreakdownBar> bars;  ///< one stacked bar each, in order
};

/// A stacked bar per configuration of compute, data and exposed communication, in milliseconds.
std::unique_ptr<QChart> breakdown_chart(const BreakdownChartData& data);

// ---- output --------------------------------------------------------------------------------

/// Write `chart` to `path` as PNG or SVG (by the extension, case-insensitive), `width` x `height`
/// pixels, offscreen (no display needed; a QApplication must exist, see OffscreenApplication).
/// The file appears whole or not at all (written beside it, then renamed). Throws
/// epochcast::InputError for another extension, a size that is not positive, or a path that
/// cannot be written, naming the path.
void render_to_file(QChart& chart, const std::filesystem::path& path, int width, int height);

/// Several charts in one picture, one below the other, each `width` x `height_each` pixels
/// (the picture is width x charts.size() x height_each). Same rules and errors as above.
void render_to_file(const std::vector<QChart*>& charts, const std::filesystem::path& path, int width, int height_each);

/// A QApplication on Qt's offscreen platform for programs without a display (the CLI, tests).
/// Does nothing when the process already has a QApplication (the GUI).
class OffscreenApplication {
public:
    OffscreenApplication();
    ~OffscreenApplication();
    OffscreenApplication(const OffscreenApplication&) = delete;
    OffscreenApplication& operator=(const OffscreenApplication&) = delete;

private:
    int argc_ = 3;
    char* argv_[4] = {};
    std::unique_ptr<QApplication> app_;
};

}  // namespace epochcast::charts
