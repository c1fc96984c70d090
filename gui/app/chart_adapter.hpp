// The window's three charts, built with Qt Charts from model value types. A thin adapter kept in
// gui/app/ until gui/charts (epochcast_charts, shared with `epochcast sweep --plot`, issue 7) lands:
// each class owns its chart and updates its series in place (no chart rebuilt per keystroke).
#pragma once

#include <QObject>
#include <QPointF>

#include <cstddef>
#include <functional>
#include <vector>

#include "model/prediction.hpp"
#include "model/whatif.hpp"

class QChart;
class QLineSeries;
class QScatterSeries;
class QAreaSeries;
class QValueAxis;
class QBarSet;
class QBarCategoryAxis;

namespace epochcast::gui {

/// A measured run to overlay on the scaling chart.
struct MeasuredPoint {
    int gpus = 0;
    double throughput_images_per_s = 0;
};

/// Throughput against GPUs: the prediction with its band, the ideal line, measured runs.
class ScalingChart {
public:
    ScalingChart();
    QChart* chart() const { return chart_; }
    void update(const std::vector<ScalingPoint>& curve, const std::vector<MeasuredPoint>& measured, int current_gpus);

private:
    QChart* chart_;
    QLineSeries* predicted_;
    QLineSeries* low_;
    QLineSeries* high_;
    QAreaSeries* band_;
    QLineSeries* ideal_;
    QScatterSeries* measured_;
    QScatterSeries* current_;
    QValueAxis* x_;
    QValueAxis* y_;
};

/// Time to train against cost, one point per configuration, the Pareto front drawn through its
/// points; a click on a point calls `on_click` with the point's index in what update() was given.
class ScatterChart : public QObject {
    Q_OBJECT
public:
    explicit ScatterChart(std::function<void(std::size_t)> on_click);
    QChart* chart() const { return chart_; }
    /// `points` in hours and dollars (plotted as their log10); `current`: index of the current configuration, or npos.
    void update(const std::vector<TimeCost>& points, const std::vector<std::size_t>& front, std::size_t current);
    /// The series whose points are clickable, and the index behind its i-th point.
    QScatterSeries* clickable() const { return all_; }
    std::size_t index_of_point(int series_point) const { return indices_.at(static_cast<std::size_t>(series_point)); }

private:
    void clicked(const QPointF& point);
    QChart* chart_;
    QScatterSeries* all_;
    QLineSeries* front_line_;
    QScatterSeries* front_;
    QScatterSeries* current_;
    QValueAxis* x_;  ///< log10 of hours
    QValueAxis* y_;  ///< log10 of dollars
    std::vector<std::size_t> indices_;
    std::function<void(std::size_t)> on_click_;
};

/// One iteration's phases: compute, straggler wait and exposed communication stacked (the GPU's
/// step), beside the input pipeline that runs ahead of it.
class BreakdownChart {
public:
    BreakdownChart();
    QChart* chart() const { return chart_; }
    void update(const Prediction& prediction);
    void clear();

private:
    QChart* chart_;
    QBarSet* compute_;
    QBarSet* sync_;
    QBarSet* exposed_;
    QBarSet* data_;
    QValueAxis* x_;
};

}  // namespace epochcast::gui
