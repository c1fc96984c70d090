#include "gui/charts/charts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <system_error>
#include <utility>

#include <QtCharts/QAreaSeries>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QHorizontalStackedBarSeries>
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>
#include <QtCore/QCoreApplication>
#include <QtGui/QFontMetricsF>
#include <QtGui/QImage>
#include <QtGui/QPainter>
#include <QtSvg/QSvgGenerator>
#include <QtWidgets/QApplication>
#include <QtWidgets/QGraphicsRectItem>
#include <QtWidgets/QGraphicsScene>
#include <QtWidgets/QGraphicsSimpleTextItem>

#include "model/errors.hpp"

namespace epochcast::charts {
namespace {

// One palette for every chart (colour-blind safe, Okabe & Ito 2008).
const QColor kBlue{0, 114, 178};
const QColor kOrange{230, 159, 0};
const QColor kVermillion{213, 94, 0};
const QColor kGreen{0, 158, 115};
const QColor kPurple{204, 121, 167};
const QColor kSky{86, 180, 233};
const QColor kGrey{150, 150, 150};
const QColor kYellow{240, 228, 66};
const QColor kBlack{0, 0, 0};
const QColor kSeriesColours[] = {kBlue, kVermillion, kGreen, kOrange, kPurple, kSky};
// The scatter's groups: the palette without the front's vermillion and the current point's orange,
// with one shape fewer than colours, so that colour and shape both change from one group to the next.
const QColor kGroupColours[] = {kBlue, kSky, kGreen, kPurple, kBlack, kYellow};
const QScatterSeries::MarkerShape kGroupShapes[] = {
    QScatterSeries::MarkerShapeCircle, QScatterSeries::MarkerShapeRectangle, QScatterSeries::MarkerShapeTriangle,
    QScatterSeries::MarkerShapeRotatedRectangle, QScatterSeries::MarkerShapePentagon};

QString qt(const std::string& text) { return QString::fromStdString(text); }

std::unique_ptr<QChart> new_chart(const std::string& title) {
    auto chart = std::make_unique<QChart>();
    chart->setTheme(QChart::ChartThemeLight);
    chart->setAnimationOptions(QChart::NoAnimation);
    if (!title.empty()) {
        chart->setTitle(qt(title));
        QFont font = chart->titleFont();
        font.setPointSizeF(font.pointSizeF() * 1.25);
        font.setBold(true);
        chart->setTitleFont(font);
    }
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->setMargins(QMargins(8, 8, 16, 8));
    return chart;
}

/// Ticks a logarithmic axis of `base` labels between `low` and `high`: Qt labels its powers only.
int log_ticks(double low, double high, double base) {
    const double eps = 1e-9;
    return static_cast<int>(std::floor(std::log(high) / std::log(base) + eps) -
                            std::ceil(std::log(low) / std::log(base) - eps)) +
           1;
}

/// A value axis or, when the data span `log_ratio` or more, a logarithmic one; padded so that
/// no point sits on the frame. A `log_base` of 0 picks 10, or 2 where powers of 10 would label
/// fewer than three ticks (an axis from 0.2 to 5 hours reads 0.25 0.5 1 2 4, not 1 alone).
QAbstractAxis* make_axis(const QString& title, double low, double high, double log_ratio, double log_base,
                         bool zero_based) {
    if (!(low > 0) || !(high > 0) || !std::isfinite(low) || !std::isfinite(high)) {
        low = 0;
        high = std::isfinite(high) && high > 0 ? high : 1;
    }
    QAbstractAxis* result = nullptr;
    if (low > 0 && high / low >= log_ratio) {
        auto* axis = new QLogValueAxis;
        if (log_base == 0) {
            const double pad = std::pow(10, 0.25);
            log_base = log_ticks(low / pad, high * pad, 10) >= 3 ? 10 : 2;
        }
        axis->setBase(log_base);
        // A quarter of a decade (or octave) each side leaves room for the points' labels.
        const double min = low / std::pow(log_base, 0.25);
        axis->setRange(min, high * std::pow(log_base, 0.25));
        axis->setLabelFormat(min >= 1 ? "%.0f" : "%g");  // 1000000, not 1e+06
        axis->setMinorTickCount(log_base == 2 ? 0 : 8);
        result = axis;
    } else {
        auto* axis = new QValueAxis;
        const double span = high - (zero_based ? 0 : low);
        const double pad = span > 0 ? 0.06 * span : std::max(1.0, 0.1 * high);
        axis->setRange(zero_based ? 0 : std::max(0.0, low - pad), high + pad);
        axis->applyNiceNumbers();
        axis->setLabelFormat(high >= 1e5 ? "%.0f" : "%g");  // 2000000, not 2e+06
        result = axis;
    }
    result->setTitleText(title);
    return result;
}

/// Where `value` lies along `axis`, 0 at its minimum and 1 at its maximum (as the axis draws it).
double axis_fraction(const QAbstractAxis* axis, double value) {
    if (const auto* log = qobject_cast<const QLogValueAxis*>(axis)) {
        return std::log(value / log->min()) / std::log(log->max() / log->min());
    }
    const auto* linear = static_cast<const QValueAxis*>(axis);
    return (value - linear->min()) / (linear->max() - linear->min());
}

void attach(QChart& chart, QAbstractSeries* series, QAbstractAxis* x, QAbstractAxis* y) {
    chart.addSeries(series);
    series->attachAxis(x);
    series->attachAxis(y);
}

struct Range {
    double low = std::numeric_limits<double>::infinity();
    double high = -std::numeric_limits<double>::infinity();
    void add(double v) {
        if (!std::isfinite(v)) return;
        low = std::min(low, v);
        high = std::max(high, v);
    }
    bool empty() const { return low > high; }
};

/// The front points' labels, as boxes of text on the chart. Qt's own point labels sit centred
/// above their point whatever lies there (a marker, the budget line); these are placed, each time
/// the plot area changes, where they cover the least: beside the point, clear of the plot's edges,
/// of each other, of the deadline and budget lines and of the front's and the current markers, and
/// over as few of the other configurations as can be.
struct PointLabels {
    QAbstractAxis* x = nullptr;
    QAbstractAxis* y = nullptr;
    std::vector<QPointF> anchors;  ///< the labelled points, in the axes' values
    std::vector<QGraphicsRectItem*> boxes;
    std::vector<QPointF> markers;  ///< not to be covered: the front's and the current one
    std::vector<QPointF> cloud;    ///< better not covered: every other configuration
    std::vector<double> vertical_lines;
    std::vector<double> horizontal_lines;

    void add(QChart& chart, QPointF anchor, const QString& text) {
        auto* box = new QGraphicsRectItem(&chart);
        box->setPen(QPen(QColor(200, 200, 200), 1));
        box->setBrush(QColor(255, 255, 255, 225));
        box->setZValue(100);  // over the series and the grid
        auto* label = new QGraphicsSimpleTextItem(text, box);
        label->setBrush(QColor(50, 50, 50));
        label->setPos(4, 1);
        const QRectF bounds = label->boundingRect();
        box->setRect(0, 0, bounds.width() + 8, bounds.height() + 2);
        anchors.push_back(anchor);
        boxes.push_back(box);
    }

    QPointF to_pixels(const QRectF& plot, QPointF value) const {
        return {plot.left() + plot.width() * axis_fraction(x, value.x()),
                plot.bottom() - plot.height() * axis_fraction(y, value.y())};
    }

    void place(const QRectF& plot) {
        auto pixels = [&](const std::vector<QPointF>& values) {
            std::vector<QPointF> result;
            result.reserve(values.size());
            for (const QPointF& v : values) result.push_back(to_pixels(plot, v));
            return result;
        };
        const std::vector<QPointF> marker_px = pixels(markers);
        const std::vector<QPointF> cloud_px = pixels(cloud);
        std::vector<QRectF> placed;
        for (std::size_t i = 0; i < boxes.size(); ++i) {
            const QPointF p = to_pixels(plot, anchors[i]);
            const QSizeF size = boxes[i]->rect().size();
            QRectF best;
            double best_cost = std::numeric_limits<double>::infinity();
            int candidate = 0;
            // Right, left, then the diagonals, above and below; near the point, then farther.
            for (const double gap : {10.0, 24.0, 48.0}) {
                for (const auto& [dx, dy] :
                     {std::pair{1, 0}, {-1, 0}, {1, -1}, {1, 1}, {-1, -1}, {-1, 1}, {0, -1}, {0, 1}}) {
                    const double left = dx > 0   ? p.x() + gap
                                        : dx < 0 ? p.x() - gap - size.width()
                                                 : p.x() - size.width() / 2;
                    const double top = dy < 0   ? p.y() - gap - size.height()
                                       : dy > 0 ? p.y() + gap
                                                : p.y() - size.height() / 2;
                    const QRectF r(QPointF(left, top), size);
                    double cost = 0.01 * candidate++;
                    if (!plot.contains(r)) cost += 1e6;
                    for (const QRectF& other : placed) cost += r.intersects(other) ? 1e5 : 0;
                    for (const double v : vertical_lines) {
                        const double at = to_pixels(plot, {v, anchors[i].y()}).x();
                        cost += at > r.left() - 2 && at < r.right() + 2 ? 1e4 : 0;
                    }
                    for (const double v : horizontal_lines) {
                        const double at = to_pixels(plot, {anchors[i].x(), v}).y();
                        cost += at > r.top() - 2 && at < r.bottom() + 2 ? 1e4 : 0;
                    }
                    const QRectF around_markers = r.adjusted(-8, -8, 8, 8);
                    for (const QPointF& m : marker_px) cost += around_markers.contains(m) ? 100 : 0;
                    const QRectF around_cloud = r.adjusted(-5, -5, 5, 5);
                    for (const QPointF& c : cloud_px) cost += around_cloud.contains(c) ? 1 : 0;
                    if (cost < best_cost) {
                        best_cost = cost;
                        best = r;
                    }
                }
            }
            boxes[i]->setPos(best.topLeft());
            placed.push_back(best);
        }
    }
};

std::string lower_extension(const std::filesystem::path& path) {
    std::string ext = path.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return ext;
}

}  // namespace

std::unique_ptr<QChart> scaling_chart(const ScalingChartData& data) {
    auto chart = new_chart(data.title);
    Range gpus;
    Range throughput;
    for (const ScalingSeries& s : data.series) {
        for (const ScalingPoint& p : s.points) {
            gpus.add(p.gpus);
            throughput.add(p.throughput_images_per_s);
            if (p.high_images_per_s > 0) throughput.add(p.high_images_per_s);
            if (p.low_images_per_s > 0) throughput.add(p.low_images_per_s);
        }
        if (s.ideal_images_per_s_per_gpu > 0 && !s.points.empty()) {
            throughput.add(s.ideal_images_per_s_per_gpu * s.points.front().gpus);
            throughput.add(s.ideal_images_per_s_per_gpu * s.points.back().gpus);
        }
    }
    if (gpus.empty()) {
        gpus.add(1);
        gpus.add(8);
    }
    if (throughput.empty()) throughput.add(1);

    QAbstractAxis* x = make_axis("GPUs", std::max(1.0, gpus.low), gpus.high, 16, 2, false);
    // Log-log, or linear-linear: either way an ideal line is straight.
    const bool log = x->type() == QAbstractAxis::AxisTypeLogValue;
    QAbstractAxis* y =
        log ? make_axis("throughput (images/s)", throughput.low, throughput.high, 0, 0, false)
            : make_axis("throughput (images/s)", 0, throughput.high, std::numeric_limits<double>::infinity(), 10, true);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);

    // The ideal lines first, so that the curves are drawn over them; one legend entry says what
    // the dashes are, in grey: each is in the colour of its curve.
    std::size_t colour = 0;
    bool ideal_named = false;
    for (const ScalingSeries& s : data.series) {
        const QColor c = kSeriesColours[colour++ % std::size(kSeriesColours)];
        if (!(s.ideal_images_per_s_per_gpu > 0) || s.points.empty()) continue;
        auto* line = new QLineSeries;
        line->setName("ideal (linear in GPUs)");
        line->setPen(QPen(c.lighter(115), 1.5, Qt::DashLine));
        for (const ScalingPoint* p : {&s.points.front(), &s.points.back()}) {
            line->append(p->gpus, p->gpus * s.ideal_images_per_s_per_gpu);
        }
        attach(*chart, line, x, y);
        QLegendMarker* marker = chart->legend()->markers(line).front();
        marker->setVisible(!ideal_named);
        marker->setLabel("ideal, linear (dashed)");
        marker->setBrush(kGrey);
        ideal_named = true;
    }
    // Long legend entries would be cut short in a row below the plot; a column beside it keeps them.
    if (data.series.size() > 2) chart->legend()->setAlignment(Qt::AlignRight);
    colour = 0;
    for (const ScalingSeries& s : data.series) {
        const QColor c = kSeriesColours[colour++ % std::size(kSeriesColours)];
        if (s.points_only) {
            auto* scatter = new QScatterSeries;
            scatter->setName(qt(s.name));
            scatter->setColor(c);
            scatter->setBorderColor(c.darker(130));
            scatter->setMarkerSize(11);
            for (const ScalingPoint& p : s.points) scatter->append(p.gpus, p.throughput_images_per_s);
            attach(*chart, scatter, x, y);
        } else {
            const bool banded = std::any_of(s.points.begin(), s.points.end(),
                                            [](const ScalingPoint& p) { return p.high_images_per_s > 0; });
            if (banded) {
                auto* low = new QLineSeries;
                auto* high = new QLineSeries;
                for (const ScalingPoint& p : s.points) {
                    low->append(p.gpus, p.low_images_per_s);
                    high->append(p.gpus, p.high_images_per_s);
                }
                auto* band = new QAreaSeries(high, low);
                band->setColor(QColor(c.red(), c.green(), c.blue(), 50));
                band->setBorderColor(Qt::transparent);
                attach(*chart, band, x, y);
                chart->legend()->markers(band).front()->setVisible(false);
            }
            auto* line = new QLineSeries;
            line->setName(qt(s.name));
            line->setPen(QPen(c, 3));
            line->setPointsVisible(true);
            for (const ScalingPoint& p : s.points) line->append(p.gpus, p.throughput_images_per_s);
            attach(*chart, line, x, y);
        }
    }
    return chart;
}

std::unique_ptr<QChart> cost_time_chart(const CostTimeChartData& data) {
    auto chart = new_chart(data.title);
    Range hours;
    Range dollars;
    for (const CostTimePoint& p : data.points) {
        hours.add(p.time_to_train_s / 3600);
        dollars.add(p.cost_usd);
    }
    if (data.deadline_s) hours.add(*data.deadline_s / 3600);
    if (data.budget_usd) dollars.add(*data.budget_usd);
    if (hours.empty()) hours.add(1);
    if (dollars.empty()) dollars.add(1);

    QAbstractAxis* x = make_axis("time to train (hours)", hours.low, hours.high, 30, 0, false);
    QAbstractAxis* y = make_axis("cost to train (US$)", dollars.low, dollars.high, 30, 0, false);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);

    // One series per group (instance type), in the groups' alphabetical order so that a type keeps
    // its marker from one chart to the next; no two of the first 30 look alike.
    std::map<std::string, QScatterSeries*> groups;
    for (const CostTimePoint& p : data.points) groups.emplace(p.group, nullptr);
    std::size_t k = 0;
    for (auto& [name, series] : groups) {
        series = new QScatterSeries;
        series->setName(name.empty() ? QString("configurations") : qt(name));
        const QColor c = kGroupColours[k % std::size(kGroupColours)];
        series->setColor(QColor(c.red(), c.green(), c.blue(), 190));
        series->setBorderColor(c.darker(150));
        series->setMarkerShape(kGroupShapes[k % std::size(kGroupShapes)]);
        series->setMarkerSize(9);
        ++k;
    }
    auto labels = std::make_shared<PointLabels>();
    std::vector<const CostTimePoint*> front;
    for (const CostTimePoint& p : data.points) {
        const QPointF at(p.time_to_train_s / 3600, p.cost_usd);
        groups[p.group]->append(at);
        if (p.on_front) {
            front.push_back(&p);
            labels->markers.push_back(at);
        } else {
            labels->cloud.push_back(at);
        }
    }
    for (const auto& [name, series] : groups) attach(*chart, series, x, y);
    if (groups.size() > 2) chart->legend()->setAlignment(Qt::AlignRight);
    chart->legend()->setMarkerShape(QLegend::MarkerShapeFromSeries);  // the group's shape, not a square

    std::sort(front.begin(), front.end(),
              [](const CostTimePoint* a, const CostTimePoint* b) { return a->time_to_train_s < b->time_to_train_s; });
    if (!front.empty()) {
        auto* line = new QLineSeries;
        line->setName("Pareto front (fastest for the money)");
        line->setPen(QPen(kVermillion, 2.5));
        // A ring around each front point keeps its group's marker in sight.
        auto* rings = new QScatterSeries;
        rings->setColor(Qt::transparent);
        rings->setBorderColor(kVermillion);
        rings->setMarkerSize(15);
        for (const CostTimePoint* p : front) {
            line->append(p->time_to_train_s / 3600, p->cost_usd);
            rings->append(p->time_to_train_s / 3600, p->cost_usd);
        }
        attach(*chart, line, x, y);
        attach(*chart, rings, x, y);
        rings->setPen(QPen(kVermillion, 2));
        chart->legend()->markers(rings).front()->setVisible(false);
        if (data.label_front) {
            for (const CostTimePoint* p : front) {
                const QString text = qt(p->label);
                if (!text.isEmpty()) labels->add(*chart, {p->time_to_train_s / 3600, p->cost_usd}, text);
            }
        }
    }
    if (data.current_index) {
        const auto current = std::find_if(data.points.begin(), data.points.end(),
                                          [&](const CostTimePoint& p) { return p.index == *data.current_index; });
        if (current != data.points.end()) {
            auto* marker = new QScatterSeries;
            marker->setName("this configuration");
            marker->setColor(kOrange);
            marker->setBorderColor(Qt::black);
            marker->setMarkerSize(14);
            marker->append(current->time_to_train_s / 3600, current->cost_usd);
            attach(*chart, marker, x, y);
            labels->markers.push_back(marker->at(0));
        }
    }
    auto add_limit = [&](const QString& name, const QColor& colour, QPointF a, QPointF b) {
        auto* line = new QLineSeries;
        line->setName(name);
        line->setPen(QPen(colour, 2, Qt::DashDotLine));
        line->append(a);
        line->append(b);
        attach(*chart, line, x, y);
    };
    const double x_low = std::max(hours.low, 1e-9) / 2;
    const double y_low = std::max(dollars.low, 1e-9) / 2;
    if (data.deadline_s) {
        add_limit("deadline", kGreen, {*data.deadline_s / 3600, y_low}, {*data.deadline_s / 3600, dollars.high * 2});
        labels->vertical_lines.push_back(*data.deadline_s / 3600);
    }
    if (data.budget_usd) {
        add_limit("budget", kPurple, {x_low, *data.budget_usd}, {hours.high * 2, *data.budget_usd});
        labels->horizontal_lines.push_back(*data.budget_usd);
    }
    // A column of a score of instance types: in a smaller font where the chart is too short for it
    // (the GUI's), each row of the legend its text's height and its marker's margin.
    int entries = 0;  // the series with a name: the rings' marker is hidden
    for (const QAbstractSeries* series : chart->series()) entries += series->name().isEmpty() ? 0 : 1;
    QObject::connect(
        chart.get(), &QGraphicsWidget::geometryChanged, chart.get(),
        [chart = chart.get(), base = chart->legend()->font(), entries] {
            for (const double scale : {1.0, 0.85, 0.7}) {
                QFont font = base;
                font.setPointSizeF(base.pointSizeF() * scale);
                if (entries * (QFontMetricsF(font).height() + 8) <= chart->size().height() - 80 || scale == 0.7) {
                    if (chart->legend()->font() != font) chart->legend()->setFont(font);
                    break;
                }
            }
        });
    if (!labels->boxes.empty()) {
        labels->x = x;
        labels->y = y;
        // Placed again whenever the plot area moves (a resized view, a file of another size).
        QObject::connect(chart.get(), &QChart::plotAreaChanged, chart.get(),
                         [labels](const QRectF& plot) { labels->place(plot); });
    }
    return chart;
}

std::optional<int> cost_time_index_at(const CostTimeChartData& data, double time_h, double cost_usd) {
    Range hours;
    Range dollars;
    for (const CostTimePoint& p : data.points) {
        hours.add(p.time_to_train_s / 3600);
        dollars.add(p.cost_usd);
    }
    if (hours.empty()) return std::nullopt;
    const double x_span = hours.high > hours.low ? hours.high - hours.low : 1;
    const double y_span = dollars.high > dollars.low ? dollars.high - dollars.low : 1;
    std::optional<int> best;
    double best_distance = std::numeric_limits<double>::infinity();
    for (const CostTimePoint& p : data.points) {
        const double dx = (p.time_to_train_s / 3600 - time_h) / x_span;
        const double dy = (p.cost_usd - cost_usd) / y_span;
        const double d = dx * dx + dy * dy;
        if (d < best_distance) {
            best_distance = d;
            best = p.index;
        }
    }
    return best;
}

std::unique_ptr<QChart> breakdown_chart(const BreakdownChartData& data) {
    auto chart = new_chart(data.title);
    auto* compute = new QBarSet("compute (with straggler wait)");
    auto* input = new QBarSet("input pipeline, not hidden");
    auto* communication = new QBarSet("communication, exposed");
    compute->setColor(kBlue);
    input->setColor(kOrange);
    communication->setColor(kVermillion);
    for (QBarSet* set : {compute, input, communication}) set->setBorderColor(Qt::white);
    QStringList categories;
    double highest = 0;
    // Bottom to top on the category axis, so the first bar is drawn at the top.
    for (auto it = data.bars.rbegin(); it != data.bars.rend(); ++it) {
        const BreakdownBar& bar = *it;
        *compute << 1e3 * bar.compute_s;
        *input << 1e3 * bar.data_s;
        *communication << 1e3 * bar.exposed_communication_s;
        categories << qt(bar.label);
        highest = std::max(highest, 1e3 * (bar.compute_s + bar.data_s + bar.exposed_communication_s));
    }
    // Horizontal bars: the configurations' names read in full on the left.
    auto* series = new QHorizontalStackedBarSeries;
    series->append(compute);
    series->append(input);
    series->append(communication);
    series->setBarWidth(0.6);
    chart->addSeries(series);

    auto* categories_axis = new QBarCategoryAxis;
    categories_axis->append(categories);
    auto* time_axis = new QValueAxis;
    time_axis->setRange(0, highest > 0 ? highest * 1.08 : 1);
    time_axis->applyNiceNumbers();
    time_axis->setLabelFormat("%g");
    time_axis->setTitleText("time per iteration (ms)");
    chart->addAxis(time_axis, Qt::AlignBottom);
    chart->addAxis(categories_axis, Qt::AlignLeft);
    QAbstractAxis* x = time_axis;
    QAbstractAxis* y = categories_axis;
    series->attachAxis(x);
    series->attachAxis(y);
    return chart;
}

void render_to_file(QChart& chart, const std::filesystem::path& path, int width, int height) {
    render_to_file(std::vector<QChart*>{&chart}, path, width, height);
}

void render_to_file(const std::vector<QChart*>& charts, const std::filesystem::path& path, int width, int height_each) {
    const std::string ext = lower_extension(path);
    if (ext != ".png" && ext != ".svg") {
        throw InputError("plot file '" + path.string() + "': the name must end in .png or .svg");
    }
    if (width <= 0 || height_each <= 0 || charts.empty()) {
        throw InputError("plot file '" + path.string() + "': the size must be positive, not " + std::to_string(width) +
                         " x " + std::to_string(height_each));
    }
    if (QCoreApplication::instance() == nullptr) {
        throw RunError("charts::render_to_file needs a QApplication (create an OffscreenApplication first)");
    }
    const int height = height_each * static_cast<int>(charts.size());

    // Render the charts alone in a scene of their own; a chart shown in a view goes back afterwards.
    struct Previous {
        QGraphicsScene* scene;
        QRectF geometry;
    };
    std::vector<Previous> previous;
    QGraphicsScene scene;
    for (std::size_t i = 0; i < charts.size(); ++i) {
        QChart& chart = *charts[i];
        previous.push_back({chart.scene(), chart.geometry()});
        if (chart.scene()) chart.scene()->removeItem(&chart);
        scene.addItem(&chart);
        chart.setGeometry(QRectF(0, static_cast<double>(i) * height_each, width, height_each));
    }
    scene.setSceneRect(QRectF(0, 0, width, height));
    QCoreApplication::sendPostedEvents();  // lets the charts lay out their plot areas and legends

    std::filesystem::path partial = path;
    partial += ".partial." + std::to_string(QCoreApplication::applicationPid());  // unique per process
    bool written = false;
    if (ext == ".png") {
        QImage image(width, height, QImage::Format_ARGB32_Premultiplied);
        image.fill(Qt::white);
        {
            QPainter painter(&image);
            painter.setRenderHint(QPainter::Antialiasing);
            painter.setRenderHint(QPainter::TextAntialiasing);
            scene.render(&painter, QRectF(0, 0, width, height), QRectF(0, 0, width, height));
        }
        written = image.save(QString::fromStdString(partial.string()), "PNG");
    } else {
        QSvgGenerator generator;
        generator.setFileName(QString::fromStdString(partial.string()));
        generator.setSize(QSize(width, height));
        generator.setViewBox(QRect(0, 0, width, height));
        generator.setTitle(charts.front()->title());
        QPainter painter;
        written = painter.begin(&generator);
        if (written) {
            painter.setRenderHint(QPainter::Antialiasing);
            scene.render(&painter, QRectF(0, 0, width, height), QRectF(0, 0, width, height));
            written = painter.end();
        }
    }
    for (std::size_t i = 0; i < charts.size(); ++i) {
        scene.removeItem(charts[i]);
        if (previous[i].scene) {
            previous[i].scene->addItem(charts[i]);
            charts[i]->setGeometry(previous[i].geometry);
        }
    }
    std::error_code error;
    if (written) std::filesystem::rename(partial, path, error);
    if (!written || error) {
        std::filesystem::remove(partial, error);
        throw InputError("plot file '" + path.string() + "' cannot be written (does its folder exist?)");
    }
}

namespace {
/// Qt's own chatter on the offscreen platform ("QStandardPaths: XDG_RUNTIME_DIR not set") is no
/// news to a command-line user; real warnings still go to stderr.
void quiet_offscreen_messages(QtMsgType type, const QMessageLogContext&, const QString& message) {
    if (message.startsWith("QStandardPaths:")) return;
    if (type == QtDebugMsg || type == QtInfoMsg) return;
    std::fprintf(stderr, "qt: %s\n", message.toLocal8Bit().constData());
}
}  // namespace

OffscreenApplication::OffscreenApplication() {
    if (QCoreApplication::instance() != nullptr) return;
    qInstallMessageHandler(quiet_offscreen_messages);
    static char program[] = "epochcast";
    static char flag[] = "-platform";
    static char platform[] = "offscreen";
    argv_[0] = program;
    argv_[1] = flag;
    argv_[2] = platform;
    argv_[3] = nullptr;
    app_ = std::make_unique<QApplication>(argc_, argv_);
}

OffscreenApplication::~OffscreenApplication() = default;

}  // namespace epochcast::charts
