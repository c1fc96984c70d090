#include "gui/app/chart_adapter.hpp"

#include <QAreaSeries>
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QHorizontalStackedBarSeries>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

namespace epochcast::gui {
namespace {

QChart* new_chart(const QString& title) {
    auto* chart = new QChart;
    chart->setTitle(title);
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->setAnimationOptions(QChart::NoAnimation);
    return chart;
}

/// A round upper bound for an axis: 1, 2 or 5 times a power of ten at or above `value`.
double nice_ceiling(double value) {
    if (!(value > 0)) return 1;
    const double power = std::pow(10.0, std::floor(std::log10(value)));
    for (const double step : {1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0}) {
        if (step * power >= value) return step * power;
    }
    return 10 * power;
}

/// A logarithmic axis drawn on a linear one (QLogValueAxis of Qt 6.4 recurses without end in
/// setRange on some ranges): values are plotted as log10 and ticked at every power of ten, labelled
/// "10^k", over whole decades covering `low` to `high` (positive, in the data's unit).
void fit_log_axis(QValueAxis* axis, double low, double high) {
    if (!(low > 0) || !(high > 0) || !std::isfinite(low) || !std::isfinite(high)) {
        axis->setRange(0, 1);
        return;
    }
    const double from = std::floor(std::log10(low * 0.8)), to = std::ceil(std::log10(high * 1.25));
    axis->setRange(from, std::max(to, from + 1));
}

}  // namespace

ScalingChart::ScalingChart()
    : chart_(new_chart("Scaling: throughput against GPUs")),
      predicted_(new QLineSeries),
      low_(new QLineSeries),
      high_(new QLineSeries),
      band_(new QAreaSeries(high_, low_)),
      ideal_(new QLineSeries),
      measured_(new QScatterSeries),
      current_(new QScatterSeries),
      x_(new QValueAxis),
      y_(new QValueAxis) {
    band_->setName("95% band");
    band_->setColor(QColor(31, 119, 180, 50));
    band_->setBorderColor(Qt::transparent);
    predicted_->setName("predicted");
    predicted_->setPen(QPen(QColor(31, 119, 180), 2));
    ideal_->setName("ideal (linear)");
    ideal_->setPen(QPen(Qt::gray, 1.5, Qt::DashLine));
    measured_->setName("measured");
    measured_->setColor(QColor(214, 39, 40));
    measured_->setMarkerSize(9);
    current_->setName("this configuration");
    current_->setColor(QColor(255, 127, 14));
    current_->setMarkerSize(12);
    for (QAbstractSeries* s : std::initializer_list<QAbstractSeries*>{band_, ideal_, predicted_, measured_, current_}) {
        chart_->addSeries(s);
    }
    x_->setTitleText("GPUs");
    x_->setLabelFormat("%d");
    y_->setTitleText("images/s");
    y_->setLabelFormat("%.0f");
    chart_->addAxis(x_, Qt::AlignBottom);
    chart_->addAxis(y_, Qt::AlignLeft);
    for (QAbstractSeries* s : chart_->series()) {
        s->attachAxis(x_);
        s->attachAxis(y_);
    }
}

void ScalingChart::update(const std::vector<ScalingPoint>& curve, const std::vector<MeasuredPoint>& measured,
                          int current_gpus) {
    QList<QPointF> predicted, low, high, ideal, measured_points, current;
    double top = 0;
    int right = 1;
    for (const ScalingPoint& p : curve) {
        predicted.append({double(p.gpus), p.throughput_images_per_s});
        low.append({double(p.gpus), p.interval.low});
        high.append({double(p.gpus), p.interval.high});
        ideal.append({double(p.gpus), p.ideal_images_per_s});
        if (p.gpus == current_gpus) current.append({double(p.gpus), p.throughput_images_per_s});
        top = std::max({top, p.interval.high, p.ideal_images_per_s});
        right = std::max(right, p.gpus);
    }
    for (const MeasuredPoint& m : measured) {
        measured_points.append({double(m.gpus), m.throughput_images_per_s});
        top = std::max(top, m.throughput_images_per_s);
        right = std::max(right, m.gpus);
    }
    predicted_->replace(predicted);
    low_->replace(low);
    high_->replace(high);
    ideal_->replace(ideal);
    measured_->replace(measured_points);
    current_->replace(current);
    x_->setRange(0, nice_ceiling(right * 1.05));
    y_->setRange(0, nice_ceiling(top * 1.05));
}

ScatterChart::ScatterChart(std::function<void(std::size_t)> on_click)
    : chart_(new_chart("Time to train against cost, every GPU instance type (click a point to load it)")),
      all_(new QScatterSeries),
      front_line_(new QLineSeries),
      front_(new QScatterSeries),
      current_(new QScatterSeries),
      x_(new QValueAxis),
      y_(new QValueAxis),
      on_click_(std::move(on_click)) {
    all_->setName("configurations");
    all_->setColor(QColor(31, 119, 180, 160));
    all_->setBorderColor(Qt::transparent);
    all_->setMarkerSize(8);
    front_line_->setName("Pareto front");
    front_line_->setPen(QPen(QColor(44, 160, 44), 2));
    front_->setColor(QColor(44, 160, 44));
    front_->setMarkerSize(10);
    current_->setName("this configuration");
    current_->setColor(QColor(255, 127, 14));
    current_->setMarkerSize(13);
    chart_->addSeries(front_line_);
    chart_->addSeries(front_);
    chart_->addSeries(current_);
    chart_->addSeries(all_);  // last, on top: it takes the clicks
    for (QValueAxis* axis : {x_, y_}) {
        axis->setTickType(QValueAxis::TicksDynamic);
        axis->setTickAnchor(0);
        axis->setTickInterval(1);
        axis->setMinorTickCount(8);
        axis->setLabelFormat("10^%.0f");
    }
    x_->setTitleText("time to train (hours, log scale)");
    y_->setTitleText("cost (US$, log scale)");
    chart_->addAxis(x_, Qt::AlignBottom);
    chart_->addAxis(y_, Qt::AlignLeft);
    for (QAbstractSeries* s : chart_->series()) {
        s->attachAxis(x_);
        s->attachAxis(y_);
    }
    const auto markers = chart_->legend()->markers(front_);
    for (auto* marker : markers) marker->setVisible(false);
    QObject::connect(all_, &QScatterSeries::clicked, this, &ScatterChart::clicked);
}

void ScatterChart::update(const std::vector<TimeCost>& points, const std::vector<std::size_t>& front, std::size_t current) {
    QList<QPointF> all, line, current_point;
    indices_.clear();
    double x_low = std::numeric_limits<double>::infinity(), x_high = 0;
    double y_low = std::numeric_limits<double>::infinity(), y_high = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
        const TimeCost& p = points[i];
        // A log axis cannot show zero; infinity is no point at all.
        if (!(p.time_s > 0) || !(p.cost_usd > 0) || !std::isfinite(p.time_s) || !std::isfinite(p.cost_usd)) continue;
        all.append({std::log10(p.time_s), std::log10(p.cost_usd)});
        indices_.push_back(i);
        x_low = std::min(x_low, p.time_s);
        x_high = std::max(x_high, p.time_s);
        y_low = std::min(y_low, p.cost_usd);
        y_high = std::max(y_high, p.cost_usd);
        if (i == current) current_point.append(all.back());
    }
    for (const std::size_t i : front) {
        if (points[i].time_s > 0 && points[i].cost_usd > 0) {
            line.append({std::log10(points[i].time_s), std::log10(points[i].cost_usd)});
        }
    }
    all_->replace(all);
    front_line_->replace(line);
    front_->replace(line);
    current_->replace(current_point);
    fit_log_axis(x_, x_low, x_high);
    fit_log_axis(y_, y_low, y_high);
}

void ScatterChart::clicked(const QPointF& point) {
    // The series reports the point's value: find it (the nearest, for safety).
    const QList<QPointF> points = all_->points();
    int best = -1;
    double best_distance = std::numeric_limits<double>::infinity();
    for (int i = 0; i < points.size(); ++i) {
        const double dx = points[i].x() - point.x();
        const double dy = points[i].y() - point.y();
        const double d = dx * dx + dy * dy;
        if (d < best_distance) {
            best_distance = d;
            best = i;
        }
    }
    // Deferred: loading a configuration replaces this series' points, which must not happen inside
    // the chart's own mouse handler.
    if (best >= 0 && on_click_) {
        const std::size_t index = index_of_point(best);
        QMetaObject::invokeMethod(this, [this, index] { on_click_(index); }, Qt::QueuedConnection);
    }
}

BreakdownChart::BreakdownChart()
    : chart_(new_chart("One iteration (ms)")),
      compute_(new QBarSet("compute")),
      sync_(new QBarSet("straggler wait")),
      exposed_(new QBarSet("exposed communication")),
      data_(new QBarSet("input pipeline")),
      x_(new QValueAxis) {
    compute_->setColor(QColor(31, 119, 180));
    sync_->setColor(QColor(148, 103, 189));
    exposed_->setColor(QColor(214, 39, 40));
    data_->setColor(QColor(44, 160, 44));
    auto* series = new QHorizontalStackedBarSeries;
    series->append({compute_, sync_, exposed_, data_});
    series->setBarWidth(0.7);
    chart_->addSeries(series);
    auto* categories = new QBarCategoryAxis;
    categories->append({"input", "GPU step"});
    chart_->addAxis(categories, Qt::AlignLeft);
    x_->setLabelFormat("%g");
    chart_->addAxis(x_, Qt::AlignBottom);
    series->attachAxis(categories);
    series->attachAxis(x_);
    clear();
}

void BreakdownChart::update(const Prediction& p) {
    // Category 0 is the input pipeline (runs ahead), 1 the GPU's step; milliseconds.
    compute_->replace(0, 0);
    compute_->replace(1, p.compute_s * 1e3);
    sync_->replace(0, 0);
    sync_->replace(1, p.sync_s * 1e3);
    exposed_->replace(0, 0);
    exposed_->replace(1, p.exposed_communication_s * 1e3);
    data_->replace(0, p.data_s * 1e3);
    data_->replace(1, 0);
    const double step_ms = (p.compute_s + p.sync_s + p.exposed_communication_s) * 1e3;
    x_->setRange(0, nice_ceiling(std::max(step_ms, p.data_s * 1e3) * 1.05));
}

void BreakdownChart::clear() {
    for (QBarSet* set : {compute_, sync_, exposed_, data_}) {
        set->remove(0, set->count());
        set->append({0.0, 0.0});
    }
    x_->setRange(0, 1);
}

}  // namespace epochcast::gui
