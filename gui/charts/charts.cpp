#include "gui/charts/charts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <system_error>

#include <QtCharts/QAreaSeries>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QHorizontalStackedBarSeries>
#include <QtCharts/QValueAxis>
#include <QtCore/QCoreApplication>
#include <QtGui/QImage>
#include <QtGui/QPainter>
#include <QtSvg/QSvgGenerator>
#include <QtWidgets/QApplication>
#include <QtWidgets/QGraphicsScene>

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
const QColor kSeriesColours[] = {kBlue, kVermillion, kGreen, kOrange, kPurple, kSky};

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

/// A value axis or, when the data span `log_ratio` or more, a logarithmic one; padded so that
/// no point sits on the frame.
QAbstractAxis* make_axis(const QString& title, double low, double high, double log_ratio, double log_base, bool zero_based) {
    if (!(low > 0) || !(high > 0) || !std::isfinite(low) || !std::isfinite(high)) {
        low = 0;
        high = std::isfinite(high) && high > 0 ? high : 1;
    }
    QAbstractAxis* result = nullptr;
    if (low > 0 && high / low >= log_ratio) {
        auto* axis = new QLogValueAxis;
        axis->setBase(log_base);
        axis->setLabelFormat(log_base == 2 ? "%.0f" : "%g");
        axis->setMinorTickCount(log_base == 2 ? 0 : 8);
        // A quarter of a decade (or octave) each side leaves room for the points' labels.
        axis->setRange(low / std::pow(log_base, 0.25), high * std::pow(log_base, 0.25));
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

std::string lower_extension(const std::filesystem::path& path) {
    std::string ext = path.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
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
        }
    }
    if (gpus.empty()) {
        gpus.add(1);
        gpus.add(8);
    }
    if (throughput.empty()) throughput.add(1);
    const bool ideal = data.ideal_images_per_s_per_gpu > 0;
    if (ideal) throughput.add(data.ideal_images_per_s_per_gpu * gpus.high);

    QAbstractAxis* x = make_axis("GPUs", std::max(1.0, gpus.low), gpus.high, 16, 2, false);
    QAbstractAxis* y = make_axis("throughput (images/s)", 0, throughput.high, std::numeric_limits<double>::infinity(), 10, true);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);

    if (ideal) {
        auto* line = new QLineSeries;
        line->setName("ideal (linear in GPUs)");
        QPen pen(kGrey, 2, Qt::DashLine);
        line->setPen(pen);
        // A straight line on either axis type: enough points that a log x axis draws it smoothly.
        const double first = std::max(1.0, gpus.low);
        const int steps = 32;
        for (int i = 0; i <= steps; ++i) {
            const double g = first * std::pow(gpus.high / first, static_cast<double>(i) / steps);
            line->append(g, g * data.ideal_images_per_s_per_gpu);
        }
        attach(*chart, line, x, y);
    }
    // Long legend entries would be cut short in a row below the plot; a column beside it keeps them.
    if (data.series.size() > 2) chart->legend()->setAlignment(Qt::AlignRight);
    std::size_t colour = 0;
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

    QAbstractAxis* x = make_axis("time to train (hours)", hours.low, hours.high, 30, 10, false);
    QAbstractAxis* y = make_axis("cost to train (US$)", dollars.low, dollars.high, 30, 10, false);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);

    auto* all = new QScatterSeries;
    all->setName("configurations");
    all->setColor(QColor(kSky.red(), kSky.green(), kSky.blue(), 140));
    all->setBorderColor(Qt::transparent);
    all->setMarkerSize(7);
    std::vector<const CostTimePoint*> front;
    for (const CostTimePoint& p : data.points) {
        all->append(p.time_to_train_s / 3600, p.cost_usd);
        if (p.on_front) front.push_back(&p);
    }
    attach(*chart, all, x, y);

    std::sort(front.begin(), front.end(),
              [](const CostTimePoint* a, const CostTimePoint* b) { return a->time_to_train_s < b->time_to_train_s; });
    if (!front.empty()) {
        auto* line = new QLineSeries;
        line->setName("Pareto front (fastest for the money)");
        line->setPen(QPen(kVermillion, 2.5));
        auto* markers = new QScatterSeries;
        markers->setColor(kVermillion);
        markers->setBorderColor(kVermillion.darker(140));
        markers->setMarkerSize(11);
        for (const CostTimePoint* p : front) {
            line->append(p->time_to_train_s / 3600, p->cost_usd);
            markers->append(p->time_to_train_s / 3600, p->cost_usd);
        }
        attach(*chart, line, x, y);
        attach(*chart, markers, x, y);
        chart->legend()->markers(markers).front()->setVisible(false);
        if (data.label_front) {
            // Qt draws a point's label from a format of @xPoint/@yPoint only, so each configuration
            // name goes on an invisible series of its own, one point each.
            for (const CostTimePoint* p : front) {
                if (p->label.empty()) continue;
                auto* labelled = new QScatterSeries;
                labelled->setMarkerSize(0);
                labelled->setColor(Qt::transparent);
                labelled->setBorderColor(Qt::transparent);
                labelled->append(p->time_to_train_s / 3600, p->cost_usd);
                labelled->setPointLabelsFormat(qt("  " + p->label));
                labelled->setPointLabelsVisible(true);
                labelled->setPointLabelsClipping(false);
                labelled->setPointLabelsColor(QColor(60, 60, 60));
                attach(*chart, labelled, x, y);
                chart->legend()->markers(labelled).front()->setVisible(false);
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
            marker->setBorderColor(kOrange.darker(140));
            marker->setMarkerSize(14);
            marker->append(current->time_to_train_s / 3600, current->cost_usd);
            attach(*chart, marker, x, y);
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
    }
    if (data.budget_usd) add_limit("budget", kPurple, {x_low, *data.budget_usd}, {hours.high * 2, *data.budget_usd});
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
