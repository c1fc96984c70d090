#include "gui/charts/charts.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <system_error>
#include <utility>

#include <unistd.h>

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
#include <QtCore/QByteArray>
#include <QtCore/QCoreApplication>
#include <QtCore/QFile>
#include <QtGui/QFontMetricsF>
#include <QtGui/QImage>
#include <QtGui/QPainter>
#include <QtSvg/QSvgGenerator>
#include <QtWidgets/QApplication>
#include <QtWidgets/QGraphicsLineItem>
#include <QtWidgets/QGraphicsRectItem>
#include <QtWidgets/QGraphicsScene>
#include <QtWidgets/QGraphicsSimpleTextItem>

#include "model/errors.hpp"
#include "model/text_io.hpp"

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
// The groups of `plan/sweep --plot` (GPU models), one colour each: the palette without the
// front's vermillion and the orange near it, then four more that stay apart from them and from
// each other; the tenth, a mid grey, is mostly "other GPUs".
const QColor kFamilyColours[] = {kBlue,
                                 kGreen,
                                 kPurple,
                                 kSky,
                                 QColor(110, 80, 160),
                                 kBlack,
                                 QColor(200, 170, 0),
                                 QColor(140, 90, 60),
                                 QColor(100, 140, 40),
                                 QColor(120, 120, 120)};
// The configurations behind the front and the groups' best: context, not to be read one by one.
const QColor kContextGrey{212, 212, 212};
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
    std::vector<QGraphicsLineItem*> leaders;  ///< from each point to its box, when the box stands off
    std::vector<QPointF> markers;             ///< not to be covered: the front's and the current one
    std::vector<QPointF> cloud;               ///< better not covered: every other configuration
    std::vector<double> vertical_lines;
    std::vector<double> horizontal_lines;
    /// The deadline's and the budget's names, written along their lines (placed first, at the
    /// plot's top and right edges; the points' labels keep clear of them).
    struct LineName {
        QGraphicsRectItem* box;
        bool vertical;
        double value;
    };
    std::vector<LineName> line_names;

    void name_line(QChart& chart, bool vertical, double value, const QString& text) {
        auto* box = new QGraphicsRectItem(&chart);
        box->setPen(Qt::NoPen);
        box->setBrush(QColor(255, 255, 255, 200));
        box->setZValue(99);
        auto* label = new QGraphicsSimpleTextItem(text, box);
        label->setBrush(QColor(60, 60, 60));
        label->setPos(3, 0);
        const QRectF bounds = label->boundingRect();
        box->setRect(0, 0, bounds.width() + 6, bounds.height());
        line_names.push_back({box, vertical, value});
    }

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
        auto* leader = new QGraphicsLineItem(&chart);
        leader->setPen(QPen(QColor(110, 110, 110), 1));
        leader->setZValue(99);
        leaders.push_back(leader);
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
        for (const LineName& name : line_names) {
            const QSizeF size = name.box->rect().size();
            QRectF r;
            if (name.vertical) {
                const double at = to_pixels(plot, {name.value, 1}).x();
                r = QRectF(QPointF(at + 4, plot.top() + 4), size);
                if (r.right() > plot.right()) r.moveRight(at - 4);
            } else {
                const double at = to_pixels(plot, {1, name.value}).y();
                r = QRectF(QPointF(plot.right() - 4 - size.width(), at - 2 - size.height()), size);
                if (r.top() < plot.top()) r.moveTop(at + 2);
            }
            name.box->setPos(r.topLeft());
            placed.push_back(r);
        }
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
            // A thin line from the point to its label, where the label had to stand off.
            const QPointF edge(std::clamp(p.x(), best.left(), best.right()),
                               std::clamp(p.y(), best.top(), best.bottom()));
            const QLineF leader(p, edge);
            leaders[i]->setVisible(leader.length() > 14);
            if (leader.length() > 0) leaders[i]->setLine(QLineF(leader.pointAt(7 / leader.length()), edge));
        }
    }
};

/// An axis' ticks drawn by the chart: the labels over Qt's own (made transparent: they keep their
/// room beside the plot, and Qt's log axis could only label its base's powers), a grid line and a
/// tick mark at each, and the axis line; placed again whenever the plot area moves, as many ticks
/// as the axis' length has room for (a chart in the GUI is a third as wide as a file's).
struct PlainAxis {
    using TickMaker = std::function<std::vector<AxisTick>(std::size_t max_ticks)>;
    QChart* chart = nullptr;
    QAbstractAxis* axis = nullptr;
    bool horizontal = true;
    std::vector<std::vector<AxisTick>> choices;  ///< the tick sets, the most ticks first
    QFont font;
    QBrush brush;
    QPen grid_pen;
    QPen line_pen{QColor(120, 120, 120), 1};
    std::vector<QGraphicsSimpleTextItem*> labels;
    std::vector<QGraphicsLineItem*> grid;
    std::vector<QGraphicsLineItem*> marks;
    QGraphicsLineItem* line = nullptr;

    PlainAxis(QChart& c, QAbstractAxis* a, bool is_horizontal, const TickMaker& make, std::size_t max_ticks)
        : chart(&c), axis(a), horizontal(is_horizontal) {
        for (std::size_t n = max_ticks; n >= 2; --n) {
            std::vector<AxisTick> ticks = make(n);
            auto same = [&](const std::vector<AxisTick>& other) {
                return other.size() == ticks.size() &&
                       std::equal(other.begin(), other.end(), ticks.begin(),
                                  [](const AxisTick& x, const AxisTick& y) { return x.label == y.label; });
            };
            if (choices.empty() || !same(choices.back())) choices.push_back(std::move(ticks));
        }
        font = axis->labelsFont();
        brush = axis->labelsBrush();
        grid_pen = axis->gridLinePen();
        grid_pen.setColor(QColor(225, 225, 225));
        grid_pen.setWidthF(1);
        // Qt's labels, unseen, as wide as the widest of ours (in digits, which are at least as wide
        // as "$" and ","), so that the plot leaves room for them.
        std::size_t widest = 1;
        for (const auto& ticks : choices) {
            for (const AxisTick& t : ticks) widest = std::max(widest, t.label.size());
        }
        const QString format = QString("%0%1.0f").arg(widest);
        if (auto* log = qobject_cast<QLogValueAxis*>(axis)) log->setLabelFormat(format);
        if (auto* linear = qobject_cast<QValueAxis*>(axis)) linear->setLabelFormat(format);
        axis->setLabelsBrush(Qt::transparent);
        axis->setGridLineVisible(false);
        axis->setMinorGridLineVisible(false);
        axis->setLineVisible(false);  // and with it Qt's tick marks, at its own values
        if (auto* linear = qobject_cast<QValueAxis*>(axis)) linear->setMinorTickCount(0);
        line = new QGraphicsLineItem(chart);
        line->setPen(line_pen);
        line->setZValue(3);
    }

    /// Where a tick lies along the axis, in pixels from the plot's left or bottom.
    double offset(const QRectF& plot, double value) const {
        return axis_fraction(axis, value) * (horizontal ? plot.width() : plot.height());
    }

    /// Whether the ticks' labels stand apart along an axis of that plot.
    bool fits(const QRectF& plot, const std::vector<AxisTick>& ticks) const {
        const QFontMetricsF metrics(font);
        for (std::size_t i = 1; i < ticks.size(); ++i) {
            const double apart = offset(plot, ticks[i].value) - offset(plot, ticks[i - 1].value);
            const double needed = horizontal ? (metrics.horizontalAdvance(QString::fromStdString(ticks[i].label)) +
                                                metrics.horizontalAdvance(QString::fromStdString(ticks[i - 1].label))) /
                                                       2 +
                                                   8
                                             : metrics.height() + 4;
            if (apart < needed) return false;
        }
        return true;
    }

    void place(const QRectF& plot) {
        if (choices.empty()) return;
        const std::vector<AxisTick>* ticks = &choices.back();
        for (const auto& choice : choices) {
            if (fits(plot, choice)) {
                ticks = &choice;
                break;
            }
        }
        while (labels.size() < ticks->size()) {
            auto* label = new QGraphicsSimpleTextItem(chart);
            label->setFont(font);
            label->setBrush(brush);
            labels.push_back(label);
            auto* g = new QGraphicsLineItem(chart);
            g->setPen(grid_pen);
            g->setZValue(2);  // Qt's grid's: under the series
            grid.push_back(g);
            auto* m = new QGraphicsLineItem(chart);
            m->setPen(line_pen);
            marks.push_back(m);
        }
        for (std::size_t i = 0; i < labels.size(); ++i) {
            const double f = i < ticks->size() ? axis_fraction(axis, (*ticks)[i].value) : -1;
            const bool shown = f >= -1e-6 && f <= 1 + 1e-6;
            labels[i]->setVisible(shown);
            grid[i]->setVisible(shown);
            marks[i]->setVisible(shown);
            if (!shown) continue;
            labels[i]->setText(QString::fromStdString((*ticks)[i].label));
            const QRectF text = labels[i]->boundingRect();
            // On a pixel's centre: a crisp line of one grey, not two half-tones.
            if (horizontal) {
                const double at = std::floor(plot.left() + f * plot.width()) + 0.5;
                grid[i]->setLine(at, plot.top(), at, plot.bottom());
                marks[i]->setLine(at, plot.bottom(), at, plot.bottom() + 4);
                labels[i]->setPos(at - text.width() / 2, plot.bottom() + 5);
            } else {
                const double at = std::floor(plot.bottom() - f * plot.height()) + 0.5;
                grid[i]->setLine(plot.left(), at, plot.right(), at);
                marks[i]->setLine(plot.left() - 4, at, plot.left(), at);
                labels[i]->setPos(plot.left() - 7 - text.width(), at - text.height() / 2);
            }
        }
        if (horizontal) {
            const double at = std::floor(plot.bottom()) + 0.5;
            line->setLine(plot.left(), at, plot.right(), at);
        } else {
            const double at = std::floor(plot.left()) + 0.5;
            line->setLine(at, plot.top(), at, plot.bottom());
        }
    }
};

/// The axis' range: a log axis' or a value axis'.
std::pair<double, double> range_of(const QAbstractAxis* axis) {
    if (const auto* log = qobject_cast<const QLogValueAxis*>(axis)) return {log->min(), log->max()};
    const auto* linear = static_cast<const QValueAxis*>(axis);
    return {linear->min(), linear->max()};
}

std::string lower_extension(const std::filesystem::path& path) {
    std::string ext = path.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return ext;
}

/// The CRC-32 of PNG chunks (ISO 3309, as zlib's crc32).
std::uint32_t png_crc(const QByteArray& bytes) {
    static const std::array<std::uint32_t, 256> table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t n = 0; n < 256; ++n) {
            std::uint32_t c = n;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[n] = c;
        }
        return t;
    }();
    std::uint32_t c = 0xFFFFFFFFu;
    for (const char b : bytes) c = table[(c ^ static_cast<std::uint8_t>(b)) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

void append_big_endian(QByteArray& out, std::uint32_t value) {
    for (int shift = 24; shift >= 0; shift -= 8) out.append(static_cast<char>((value >> shift) & 0xFF));
}

/// `image` as an opaque 8-bit RGB PNG whose rows are not filtered: a picture of charts is mostly
/// flat colour, which zlib alone packs about a quarter smaller than after libpng's adaptive
/// filters (what QImage::save() writes). False when the file cannot be written.
bool write_png(const QImage& image, QIODevice& file) {
    const QImage rgb = image.convertToFormat(QImage::Format_RGB888);
    const qsizetype row = static_cast<qsizetype>(rgb.width()) * 3;
    QByteArray raw;
    raw.reserve(rgb.height() * (row + 1));
    for (int y = 0; y < rgb.height(); ++y) {
        raw.append('\0');  // filter type 0: none
        raw.append(reinterpret_cast<const char*>(rgb.constScanLine(y)), row);
    }
    QByteArray png("\x89PNG\r\n\x1a\n", 8);
    auto chunk = [&](const char* type, const QByteArray& data) {
        QByteArray body(type, 4);
        body.append(data);
        append_big_endian(png, static_cast<std::uint32_t>(data.size()));
        png.append(body);
        append_big_endian(png, png_crc(body));
    };
    QByteArray header;
    append_big_endian(header, static_cast<std::uint32_t>(rgb.width()));
    append_big_endian(header, static_cast<std::uint32_t>(rgb.height()));
    header.append("\x08\x02\x00\x00\x00", 5);  // 8 bits, RGB, deflate, filter method 0, not interlaced
    chunk("IHDR", header);
    chunk("IDAT", qCompress(raw, 9).mid(4));  // a zlib stream after qCompress's 4-byte length
    chunk("IEND", QByteArray());
    return file.write(png) == png.size();
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
    // Throughput as a person writes it: 20,000 and 1,000,000, not 1e+06 or 1000000 alone.
    const auto [y_min, y_max] = range_of(y);
    auto plain_y = std::make_shared<PlainAxis>(
        *chart, y, false, [=](std::size_t n) { return count_ticks(y_min, y_max, log, n); }, 8);
    QObject::connect(chart.get(), &QChart::plotAreaChanged, chart.get(),
                     [plain_y](const QRectF& plot) { plain_y->place(plot); });

    // Each series' colour: its group's, as the time-against-cost chart gives it, where groups are
    // given (then the second and third curve of a group are dash-dotted and dotted), else the next
    // of the palette.
    std::vector<QColor> colours;
    std::vector<Qt::PenStyle> styles;
    std::map<std::string, int> seen;
    for (std::size_t i = 0; i < data.series.size(); ++i) {
        const ScalingSeries& s = data.series[i];
        const auto at = std::find(data.group_order.begin(), data.group_order.end(), s.group);
        if (data.group_order.empty() || at == data.group_order.end()) {
            colours.push_back(kSeriesColours[i % std::size(kSeriesColours)]);
            styles.push_back(Qt::SolidLine);
            continue;
        }
        const auto group = static_cast<std::size_t>(at - data.group_order.begin());
        colours.push_back(kFamilyColours[group % std::size(kFamilyColours)]);
        const Qt::PenStyle kinds[] = {Qt::SolidLine, Qt::DashDotLine, Qt::DotLine};
        styles.push_back(kinds[seen[s.group]++ % std::size(kinds)]);
    }
    // The ideal lines first, so that the curves are drawn over them; one legend entry says what
    // the dashes are, in grey: each is in the colour of its curve.
    std::size_t colour = 0;
    bool ideal_named = false;
    for (const ScalingSeries& s : data.series) {
        const QColor c = colours[colour++];
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
        const Qt::PenStyle style = styles[colour];
        const QColor c = colours[colour++];
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
            line->setPen(QPen(QBrush(c), 3, style));
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

    // The styled chart goes logarithmic sooner: its thousands of points span a factor of 20 in
    // cost where the front spans 2, and a linear axis flattens the front against the floor.
    const bool styled = !data.group_order.empty();
    const double log_ratio = styled ? 4 : 30;
    QAbstractAxis* x = make_axis("time to train", hours.low, hours.high, log_ratio, 0, false);
    QAbstractAxis* y = make_axis("cost to train (US$)", dollars.low, dollars.high, log_ratio, 0, false);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    // Plain ticks ("10 min", "1 h"; "$50", "$1,000") where Qt's would read 0.1, 1, 10 or 1000.
    const auto [x_min, x_max] = range_of(x);
    const auto [y_min, y_max] = range_of(y);
    const bool x_log = x->type() == QAbstractAxis::AxisTypeLogValue;
    const bool y_log = y->type() == QAbstractAxis::AxisTypeLogValue;
    auto axes = std::make_shared<std::vector<std::unique_ptr<PlainAxis>>>();
    axes->push_back(std::make_unique<PlainAxis>(
        *chart, x, true, [=](std::size_t n) { return time_ticks(x_min, x_max, x_log, n); }, 9));
    axes->push_back(std::make_unique<PlainAxis>(
        *chart, y, false, [=](std::size_t n) { return dollar_ticks(y_min, y_max, y_log, n); }, 8));
    QObject::connect(chart.get(), &QChart::plotAreaChanged, chart.get(), [axes](const QRectF& plot) {
        for (const auto& axis : *axes) axis->place(plot);
    });

    auto labels = std::make_shared<PointLabels>();
    std::vector<const CostTimePoint*> front;
    auto hide_from_legend = [&](QAbstractSeries* series) {
        chart->legend()->markers(series).front()->setVisible(false);
    };
    std::map<std::string, QScatterSeries*> groups;
    std::map<std::string, QColor> group_colour;
    QScatterSeries* context = nullptr;
    QLineSeries* front_entry = nullptr;
    if (!styled) {
        // One series per group (instance type), in the groups' alphabetical order so that a type keeps
        // its marker from one chart to the next; no two of the first 30 look alike.
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
    } else {
        // The background first (under everything), its legend entry after the groups'.
        context = new QScatterSeries;
        context->setColor(kContextGrey);
        context->setBorderColor(kContextGrey);
        context->setMarkerSize(4.5);
        attach(*chart, context, x, y);
        hide_from_legend(context);
        // The front's entry leads the legend; its line is drawn over the groups' points below.
        front_entry = new QLineSeries;
        front_entry->setName("Pareto front (fastest for the money)");
        front_entry->setPen(QPen(kVermillion, 3));
        attach(*chart, front_entry, x, y);  // no points: a legend entry only
        std::vector<std::string> order = data.group_order;
        for (const CostTimePoint& p : data.points) {
            if (!p.context && std::find(order.begin(), order.end(), p.group) == order.end()) order.push_back(p.group);
        }
        for (std::size_t k = 0; k < order.size(); ++k) {
            auto* series = new QScatterSeries;
            series->setName(order[k].empty() ? QString("configurations") : qt(order[k]));
            const QColor c = kFamilyColours[k % std::size(kFamilyColours)];
            group_colour[order[k]] = c;
            series->setColor(QColor(c.red(), c.green(), c.blue(), 200));
            series->setBorderColor(c.darker(140));
            series->setMarkerShape(kGroupShapes[k % std::size(kGroupShapes)]);
            series->setMarkerSize(7);
            groups[order[k]] = series;
        }
    }
    for (const CostTimePoint& p : data.points) {
        const QPointF at(p.time_to_train_s / 3600, p.cost_usd);
        if (p.on_front) {
            front.push_back(&p);
            labels->markers.push_back(at);
            if (!styled) groups[p.group]->append(at);
            continue;
        }
        if (styled && p.context) {
            context->append(at);  // a label may cover the background
        } else {
            labels->cloud.push_back(at);
            groups[p.group]->append(at);
        }
    }
    if (styled) {
        for (const std::string& name : data.group_order) attach(*chart, groups[name], x, y);
        for (auto& [name, series] : groups) {
            if (!series->chart()) attach(*chart, series, x, y);
        }
        if (context->count() > 0) {
            auto* entry = new QScatterSeries;
            entry->setName(qt(data.context_name));
            entry->setColor(kContextGrey);
            entry->setBorderColor(kContextGrey);
            entry->setMarkerSize(7);
            attach(*chart, entry, x, y);  // no points: a legend entry after the groups'
        }
        chart->legend()->setAlignment(Qt::AlignRight);
    } else {
        for (const auto& [name, series] : groups) attach(*chart, series, x, y);
        if (groups.size() > 2) chart->legend()->setAlignment(Qt::AlignRight);
    }
    chart->legend()->setMarkerShape(QLegend::MarkerShapeFromSeries);  // the group's shape, not a square

    std::sort(front.begin(), front.end(),
              [](const CostTimePoint* a, const CostTimePoint* b) { return a->time_to_train_s < b->time_to_train_s; });
    if (!front.empty()) {
        auto* line = new QLineSeries;
        line->setPen(QPen(kVermillion, styled ? 3 : 2.5));
        for (const CostTimePoint* p : front) line->append(p->time_to_train_s / 3600, p->cost_usd);
        if (styled) {
            attach(*chart, line, x, y);
            hide_from_legend(line);
            // Each front point in its group's colour and shape, larger, outlined.
            std::map<std::string, QScatterSeries*> markers;
            for (const CostTimePoint* p : front) {
                QScatterSeries*& series = markers[p->group];
                if (!series) {
                    series = new QScatterSeries;
                    const QScatterSeries* group = groups.count(p->group) ? groups[p->group] : nullptr;
                    series->setColor(group_colour.count(p->group) ? group_colour[p->group] : kGrey);
                    series->setMarkerShape(group ? group->markerShape() : QScatterSeries::MarkerShapeCircle);
                    series->setMarkerSize(12);
                }
                series->append(p->time_to_train_s / 3600, p->cost_usd);
            }
            for (auto& [name, series] : markers) {
                attach(*chart, series, x, y);
                series->setPen(QPen(QColor(40, 40, 40), 1.5));
                hide_from_legend(series);
            }
        } else {
            line->setName("Pareto front (fastest for the money)");
            // A ring around each front point keeps its group's marker in sight.
            auto* rings = new QScatterSeries;
            rings->setColor(Qt::transparent);
            rings->setBorderColor(kVermillion);
            rings->setMarkerSize(15);
            for (const CostTimePoint* p : front) rings->append(p->time_to_train_s / 3600, p->cost_usd);
            attach(*chart, line, x, y);
            attach(*chart, rings, x, y);
            rings->setPen(QPen(kVermillion, 2));
            hide_from_legend(rings);
        }
        if (data.label_front) {
            for (const CostTimePoint* p : front) {
                const QString text = qt(p->label);
                if (!text.isEmpty()) labels->add(*chart, {p->time_to_train_s / 3600, p->cost_usd}, text);
            }
        }
    } else if (front_entry) {
        chart->removeSeries(front_entry);
        delete front_entry;
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
    // The deadline and the budget: in the GUI's style a green and a purple line in the legend; in
    // the styled one (whose groups take those colours) dark grey lines named where they are drawn.
    auto add_limit = [&](const QString& name, const QColor& colour, Qt::PenStyle style, QPointF a, QPointF b) {
        auto* line = new QLineSeries;
        line->setPen(QPen(colour, styled ? 1.5 : 2, style));
        line->append(a);
        line->append(b);
        attach(*chart, line, x, y);
        if (styled) {
            hide_from_legend(line);
            labels->name_line(*chart, a.x() == b.x(), a.x() == b.x() ? a.x() : a.y(), name);
        } else {
            line->setName(name);
        }
    };
    const double x_low = std::max(hours.low, 1e-9) / 2;
    const double y_low = std::max(dollars.low, 1e-9) / 2;
    const QColor limit_grey(90, 90, 90);
    if (data.deadline_s) {
        add_limit(qt("deadline " + plain_duration(*data.deadline_s)), styled ? limit_grey : kGreen,
                  styled ? Qt::DashLine : Qt::DashDotLine, {*data.deadline_s / 3600, y_low},
                  {*data.deadline_s / 3600, dollars.high * 2});
        labels->vertical_lines.push_back(*data.deadline_s / 3600);
    }
    if (data.budget_usd) {
        add_limit(qt("budget " + plain_dollars(*data.budget_usd)), styled ? limit_grey : kPurple,
                  styled ? Qt::DashLine : Qt::DashDotLine, {x_low, *data.budget_usd},
                  {hours.high * 2, *data.budget_usd});
        labels->horizontal_lines.push_back(*data.budget_usd);
    }
    // A column of a score of instance types: in a smaller font where the chart is too short for it
    // (the GUI's), each row of the legend its text's height and its marker's margin.
    int entries = 0;  // the series with a name: the hidden markers' have none
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
    if (!labels->boxes.empty() || !labels->line_names.empty()) {
        labels->x = x;
        labels->y = y;
        // Placed again whenever the plot area moves (a resized view, a file of another size).
        QObject::connect(chart.get(), &QChart::plotAreaChanged, chart.get(),
                         [labels](const QRectF& plot) { labels->place(plot); });
    }
    return chart;
}

namespace {

/// `value` with at most `decimals` decimals (trailing zeros dropped) and its thousands grouped.
std::string plain_number(double value, int decimals) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, std::abs(value));
    std::string digits = text;
    const auto dot = digits.find('.');
    std::string fraction;
    if (dot != std::string::npos) {
        fraction = digits.substr(dot);
        digits.resize(dot);
        while (!fraction.empty() && (fraction.back() == '0' || fraction.back() == '.')) fraction.pop_back();
    }
    std::string result = value < 0 && (digits != "0" || !fraction.empty()) ? "-" : "";
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) result += ',';
        result += digits[i];
    }
    return result + fraction;
}

constexpr double kMinute = 60;
constexpr double kHour = 3600;
constexpr double kDay = 86400;

/// The round durations of a log time axis, each with its ladder: 0 the coarsest.
struct Rung {
    double seconds;
    int ladder;
};
constexpr Rung kTimeRungs[] = {
    {1, 0},           {2, 2},           {5, 2},           {10, 0},           {20, 2},           {30, 1},
    {kMinute, 0},     {2 * kMinute, 2}, {5 * kMinute, 1}, {10 * kMinute, 0}, {20 * kMinute, 2}, {30 * kMinute, 1},
    {kHour, 0},       {2 * kHour, 2},   {3 * kHour, 2},   {6 * kHour, 1},    {12 * kHour, 2},   {kDay, 0},
    {2 * kDay, 2},    {3 * kDay, 1},    {5 * kDay, 2},    {10 * kDay, 0},    {20 * kDay, 2},    {30 * kDay, 1},
    {50 * kDay, 2},   {100 * kDay, 0},  {200 * kDay, 2},  {300 * kDay, 1},   {500 * kDay, 2},   {1000 * kDay, 0},
    {2000 * kDay, 2}, {3000 * kDay, 1}, {5000 * kDay, 2}, {10000 * kDay, 0}};

/// The multiples of `step` from `low` to `high`, or none when there would be more than `max_ticks`.
std::vector<double> multiples(double low, double high, double step, std::size_t max_ticks) {
    const double first = std::ceil(low / step - 1e-9);
    const double last = std::floor(high / step + 1e-9);
    if (last < first || last - first + 1 > static_cast<double>(max_ticks)) return {};
    std::vector<double> values;
    for (double k = first; k <= last; ++k) values.push_back(k * step);
    return values;
}

/// Every `k`-th value, k the least that leaves at most `max_ticks`.
std::vector<double> every_kth(const std::vector<double>& values, std::size_t max_ticks) {
    const std::size_t k = (values.size() + max_ticks - 1) / std::max<std::size_t>(1, max_ticks);
    std::vector<double> kept;
    for (std::size_t i = 0; i < values.size(); i += std::max<std::size_t>(1, k)) kept.push_back(values[i]);
    return kept;
}

}  // namespace

namespace {

struct DurationUnit {
    double seconds;
    const char* name;
};
constexpr DurationUnit kDurationUnits[] = {{1, "s"}, {kMinute, "min"}, {kHour, "h"}, {kDay, "d"}};

/// `seconds` in `unit`, at most one decimal (none from 100 on), and whether that is exact.
std::pair<std::string, bool> in_unit(double seconds, const DurationUnit& unit) {
    const double value = seconds / unit.seconds;
    const int decimals = value < 100 ? 1 : 0;
    const double scale = decimals ? 10 : 1;
    const double rounded = std::round(value * scale) / scale;
    return {plain_number(rounded, decimals) + " " + unit.name,
            std::abs(rounded - value) <= 1e-9 * std::max(1.0, value)};
}

/// The unit a duration reads in: the largest it is at least one of (nearly).
std::size_t natural_unit(double seconds) {
    std::size_t u = 0;
    while (u + 1 < std::size(kDurationUnits) && seconds >= kDurationUnits[u + 1].seconds * (1 - 1e-3)) ++u;
    return u;
}

/// Whether `seconds` reads exactly in its natural unit ("1.5 h", not "1.2 h" for 70 minutes).
bool reads_exactly(double seconds) {
    return seconds <= 0 || in_unit(seconds, kDurationUnits[natural_unit(seconds)]).second;
}

}  // namespace

std::string plain_duration(double seconds) {
    if (!(seconds > 0)) return "0";
    // The natural unit, or a smaller one where that is exact (100 minutes is "100 min", not "1.7 h").
    const std::size_t natural = natural_unit(seconds);
    for (std::size_t u = natural + 1; u-- > 0;) {
        const auto [text, exact] = in_unit(seconds, kDurationUnits[u]);
        if (exact) return text;
    }
    return in_unit(seconds, kDurationUnits[natural]).first;
}

std::string plain_dollars(double usd) {
    const bool whole = std::abs(usd - std::round(usd)) < 0.005;
    std::string text = whole ? plain_number(std::round(usd), 0) : plain_number(std::abs(usd), 2);
    if (!whole && text.find('.') == text.size() - 2) text += "0";  // "$0.5" reads "$0.50"
    if (!whole && usd < 0) text = "-" + text;
    return text.front() == '-' ? "-$" + text.substr(1) : "$" + text;
}

std::vector<AxisTick> time_ticks(double low_h, double high_h, bool log, std::size_t max_ticks) {
    max_ticks = std::max<std::size_t>(2, max_ticks);
    const double low = low_h * kHour;
    const double high = high_h * kHour;
    std::vector<double> seconds;
    if (log && low > 0 && high > low) {
        for (int ladder = 2; ladder >= 0; --ladder) {
            seconds.clear();
            for (const Rung& r : kTimeRungs) {
                if (r.ladder <= ladder && r.seconds >= low * (1 - 1e-9) && r.seconds <= high * (1 + 1e-9))
                    seconds.push_back(r.seconds);
            }
            if (seconds.size() <= max_ticks) break;
        }
        if (seconds.size() > max_ticks) seconds = every_kth(seconds, max_ticks);
    }
    if (seconds.size() < 2 && high > low) {
        // Linear, or a log axis too narrow for two round durations: multiples of a round step.
        seconds.clear();
        std::vector<double> steps = {
            1,       2,           5,           10,           15,           20,           30,
            kMinute, 2 * kMinute, 5 * kMinute, 10 * kMinute, 15 * kMinute, 20 * kMinute, 30 * kMinute,
            kHour,   2 * kHour,   3 * kHour,   6 * kHour,    12 * kHour,   kDay};
        for (double days = 2; days < 1e7; days *= 10) {
            for (const double m : {1.0, 2.5, 5.0}) steps.push_back(m * days * kDay);
        }
        // The finest step whose ticks all read exactly in their own unit (not 70 minutes as "1.2 h").
        for (const double step : steps) {
            seconds = multiples(std::max(0.0, low), high, step, max_ticks);
            if (!seconds.empty() && std::all_of(seconds.begin(), seconds.end(), reads_exactly)) break;
            seconds.clear();
        }
    }
    std::vector<AxisTick> ticks;
    for (const double s : seconds) ticks.push_back({s / kHour, plain_duration(s)});
    return ticks;
}

namespace {

/// Round values from `low` to `high`, at most `max_ticks`: see dollar_ticks().
std::vector<double> round_values(double low, double high, bool log, std::size_t max_ticks) {
    max_ticks = std::max<std::size_t>(2, max_ticks);
    std::vector<double> values;
    if (log && low > 0 && high > low) {
        const int first = static_cast<int>(std::floor(std::log10(low))) - 1;
        const int last = static_cast<int>(std::ceil(std::log10(high))) + 1;
        const std::vector<std::vector<double>> ladders = {{1, 2, 5}, {1, 3}, {1}};
        for (const std::vector<double>& mantissas : ladders) {
            values.clear();
            for (int e = first; e <= last; ++e) {
                for (const double m : mantissas) {
                    const double v = m * std::pow(10.0, e);
                    if (v >= low * (1 - 1e-9) && v <= high * (1 + 1e-9)) values.push_back(v);
                }
            }
            if (values.size() <= max_ticks) break;
        }
        if (values.size() > max_ticks) values = every_kth(values, max_ticks);
    }
    if (values.size() < 2 && high > low) {
        values.clear();
        for (double power = std::pow(10.0, std::floor(std::log10(high - low)) - 3); values.empty() && power < 1e300;
             power *= 10) {
            for (const double m : {1.0, 2.0, 5.0}) {
                values = multiples(low, high, m * power, max_ticks);
                if (!values.empty()) break;
            }
        }
    }
    return values;
}

}  // namespace

std::vector<AxisTick> dollar_ticks(double low, double high, bool log, std::size_t max_ticks) {
    std::vector<AxisTick> ticks;
    for (const double v : round_values(low, high, log, max_ticks)) ticks.push_back({v, plain_dollars(v)});
    return ticks;
}

std::vector<AxisTick> count_ticks(double low, double high, bool log, std::size_t max_ticks) {
    std::vector<AxisTick> ticks;
    for (const double v : round_values(low, high, log, max_ticks)) ticks.push_back({v, plain_number(v, 2)});
    return ticks;
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

    // A new file beside the target (O_EXCL | O_NOFOLLOW: a link planted at the name is never
    // written through), renamed into place when complete.
    const NewFile partial_file = create_file_beside(path, "partial");
    const std::filesystem::path& partial = partial_file.path;
    QFile out;
    bool written =
        partial_file.fd >= 0 && out.open(partial_file.fd, QIODevice::WriteOnly, QFileDevice::AutoCloseHandle);
    if (!written && partial_file.fd >= 0) ::close(partial_file.fd);
    if (!written) {
        // Nothing drawn: the charts stay where they were.
    } else if (ext == ".png") {
        QImage image(width, height, QImage::Format_ARGB32_Premultiplied);
        image.fill(Qt::white);
        {
            QPainter painter(&image);
            painter.setRenderHint(QPainter::Antialiasing);
            painter.setRenderHint(QPainter::TextAntialiasing);
            scene.render(&painter, QRectF(0, 0, width, height), QRectF(0, 0, width, height));
        }
        written = write_png(image, out);
    } else {
        QSvgGenerator generator;
        generator.setOutputDevice(&out);
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
    written = written && out.flush();
    out.close();
    std::error_code error;
    if (written) std::filesystem::rename(partial, path, error);
    if (!written || error) {
        if (partial_file.fd >= 0) std::filesystem::remove(partial, error);  // ours; never a name we did not make
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
