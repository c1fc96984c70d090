// gui/charts: each chart renders offscreen to a PNG that shows its data (the series' colours are
// there in quantity, the picture is not blank), to an SVG that carries its axis titles, and bad
// paths are errors that leave no file behind.
#include <gtest/gtest.h>

#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>
#include <QtGui/QColor>
#include <QtGui/QImage>
#include <QtWidgets/QGraphicsRectItem>
#include <QtWidgets/QGraphicsSimpleTextItem>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "gui/charts/charts.hpp"
#include "model/errors.hpp"
#include "tests/support/temp_file.hpp"
#include "tests/support/temp_folder.hpp"

namespace epochcast::charts {
namespace {

void ensure_application() {
    static OffscreenApplication* app = new OffscreenApplication;  // lives to the end of the process
    (void)app;
}

struct Picture {
    QImage image;
    std::set<QRgb> colours;
};

Picture render_png(QChart& chart, int width = 900, int height = 600) {
    testing::TempFile file("", ".png");
    render_to_file(chart, file.path(), width, height);
    Picture picture{QImage(QString::fromStdString(file.path())), {}};
    for (int y = 0; y < picture.image.height(); ++y) {
        for (int x = 0; x < picture.image.width(); ++x) picture.colours.insert(picture.image.pixel(x, y));
    }
    return picture;
}

/// Pixels within `tolerance` per channel of `colour`.
int pixels_near(const QImage& image, QColor colour, int tolerance = 12) {
    int count = 0;
    for (int y = 0; y < image.height(); ++y) {
        for (int x = 0; x < image.width(); ++x) {
            const QColor c = image.pixelColor(x, y);
            if (std::abs(c.red() - colour.red()) <= tolerance && std::abs(c.green() - colour.green()) <= tolerance &&
                std::abs(c.blue() - colour.blue()) <= tolerance) {
                ++count;
            }
        }
    }
    return count;
}

int non_white_pixels(const QImage& image) {
    int count = 0;
    for (int y = 0; y < image.height(); ++y) {
        for (int x = 0; x < image.width(); ++x) count += image.pixel(x, y) != qRgb(255, 255, 255) ? 1 : 0;
    }
    return count;
}

ScalingChartData scaling_data() {
    ScalingChartData data;
    data.title = "ResNet-50 scaling";
    ScalingSeries predicted{"p3.16xlarge (predicted)", {}, false, 800};
    for (int gpus : {1, 8, 16, 32, 64, 128, 256})
        predicted.points.push_back({double(gpus), 800.0 * gpus * (1 - 0.0004 * gpus)});
    ScalingSeries measured{"measured", {{8, 6300}, {64, 44000}}, true};
    data.series = {predicted, measured};
    return data;
}

CostTimeChartData cost_time_data() {
    CostTimeChartData data;
    data.title = "time against cost";
    for (int i = 0; i < 40; ++i) {
        const double hours = 0.5 + 0.25 * i;
        data.points.push_back(
            {i, hours * 3600, 200 + 30.0 * ((i * 7) % 11) + 10.0 * i, i % 5 == 0, "config " + std::to_string(i), ""});
    }
    data.deadline_s = 4 * 3600.0;
    data.budget_usd = 500;
    return data;
}

BreakdownChartData breakdown_data() {
    return {"one iteration",
            {{"1 x p3.2xlarge", 0.30, 0.0, 0.0},
             {"8 x p3.16xlarge", 0.31, 0.0, 0.05},
             {"16 x p3.16xlarge", 0.31, 0.02, 0.12}}};
}

TEST(Charts, ScalingChartRendersItsSeriesAndTheIdealLine) {
    ensure_application();
    auto chart = scaling_chart(scaling_data());
    ASSERT_EQ(chart->series().size(), 3);  // ideal + predicted + measured
    EXPECT_EQ(chart->series()[0]->name().toStdString(), "ideal (linear in GPUs)");
    const Picture picture = render_png(*chart);
    EXPECT_EQ(picture.image.width(), 900);
    EXPECT_EQ(picture.image.height(), 600);
    EXPECT_GT(picture.colours.size(), 50u) << "a blank or nearly blank picture";
    EXPECT_GT(non_white_pixels(picture.image), 900 * 600 / 50);
    EXPECT_GT(pixels_near(picture.image, QColor(0, 114, 178)), 300) << "the predicted line is missing";
    EXPECT_GT(pixels_near(picture.image, QColor(213, 94, 0)), 100) << "the measured points are missing";
}

TEST(Charts, ScalingChartUsesALogGpuAxisOverAWideRange) {
    ensure_application();
    auto chart = scaling_chart(scaling_data());
    const auto axes = chart->axes(Qt::Horizontal);
    ASSERT_EQ(axes.size(), 1);
    EXPECT_EQ(axes.front()->type(), QAbstractAxis::AxisTypeLogValue);
    ScalingChartData narrow = scaling_data();
    narrow.series.resize(1);
    narrow.series[0].points = {{1, 800}, {2, 1500}, {4, 2900}};
    auto linear = scaling_chart(narrow);
    EXPECT_EQ(linear->axes(Qt::Horizontal).front()->type(), QAbstractAxis::AxisTypeValue);
}

/// The values a logarithmic axis labels: the powers of its base within its range.
std::vector<double> labelled_ticks(const QLogValueAxis& axis) {
    std::vector<double> ticks;
    for (double v = std::pow(axis.base(), std::ceil(std::log(axis.min()) / std::log(axis.base()) - 1e-9));
         v <= axis.max() * (1 + 1e-9); v *= axis.base()) {
        ticks.push_back(v);
    }
    return ticks;
}

TEST(Charts, ScalingChartIsLogLogWithAnIdealLinePerCurve) {
    ensure_application();
    ScalingChartData data = scaling_data();
    ScalingSeries slower{"p3.8xlarge (predicted)", {}, false, 700};
    for (int gpus : {4, 8, 16, 32, 64}) slower.points.push_back({double(gpus), 700.0 * gpus * (1 - 0.002 * gpus)});
    data.series.push_back(slower);
    auto chart = scaling_chart(data);
    render_png(*chart);  // a legend marker is visible once its legend has been laid out
    const auto vertical = chart->axes(Qt::Vertical);
    ASSERT_EQ(vertical.size(), 1);
    const auto* y = qobject_cast<QLogValueAxis*>(vertical.front());
    ASSERT_NE(y, nullptr) << "a linear throughput axis bends the ideal lines on a log GPU axis";
    EXPECT_LE(y->min(), 800.0 * 0.9996);
    EXPECT_GE(y->max(), 256 * 800.0);
    EXPECT_GE(labelled_ticks(*y).size(), 3u);

    // One ideal per line (none for the measured points), straight from its first point's GPUs to
    // its last at its own per-GPU rate; the legend names the dashes once.
    std::vector<QLineSeries*> ideals;
    for (QAbstractSeries* series : chart->series()) {
        if (series->name() == "ideal (linear in GPUs)") ideals.push_back(qobject_cast<QLineSeries*>(series));
    }
    ASSERT_EQ(ideals.size(), 2u);
    ASSERT_NE(ideals[0], nullptr);
    ASSERT_NE(ideals[1], nullptr);
    EXPECT_EQ(ideals[0]->points(), (QList<QPointF>{{1, 800}, {256, 256 * 800}}));
    EXPECT_EQ(ideals[1]->points(), (QList<QPointF>{{4, 4 * 700}, {64, 64 * 700}}));
    EXPECT_NE(ideals[0]->pen().color(), ideals[1]->pen().color()) << "each ideal is in its curve's colour";
    int legend_entries = 0;
    for (QLineSeries* ideal : ideals) legend_entries += chart->legend()->markers(ideal).front()->isVisible() ? 1 : 0;
    EXPECT_EQ(legend_entries, 1);

    // Narrow: both axes linear, which keeps the ideal straight too.
    ScalingChartData narrow = scaling_data();
    narrow.series.resize(1);
    narrow.series[0].points = {{1, 800}, {2, 1500}, {4, 2900}};
    auto linear = scaling_chart(narrow);
    EXPECT_EQ(linear->axes(Qt::Vertical).front()->type(), QAbstractAxis::AxisTypeValue);
}

TEST(Charts, LogTimeAxesLabelAtLeastThreeTicks) {
    ensure_application();
    // 0.2 to 10 hours (a sweep of one to sixteen nodes): powers of 10 would label 1 and 10 only.
    for (const auto& [fastest_h, slowest_h] : {std::pair{0.2, 10.0}, {0.5, 20.0}, {0.05, 400.0}, {3.0, 150.0}}) {
        CostTimeChartData data;
        data.points = {{0, fastest_h * 3600, 100, true, "", ""}, {1, slowest_h * 3600, 4000, false, "", ""}};
        auto chart = cost_time_chart(data);
        for (QAbstractAxis* axis : chart->axes()) {
            const auto* log = qobject_cast<QLogValueAxis*>(axis);
            ASSERT_NE(log, nullptr) << "a factor of 30 or more is drawn on log axes";
            EXPECT_GE(labelled_ticks(*log).size(), 3u)
                << fastest_h << " to " << slowest_h << " h, base " << log->base();
            EXPECT_LE(labelled_ticks(*log).size(), 12u) << "ticks too close to read";
        }
    }
}

TEST(Charts, CostTimeChartGivesEachGroupItsOwnMarker) {
    ensure_application();
    CostTimeChartData data = cost_time_data();
    const std::vector<std::string> instances = {"p3.16xlarge", "p4d.24xlarge", "g5.48xlarge", "p5.48xlarge",
                                                "p3.8xlarge",  "p2.16xlarge",  "g6.48xlarge", "p3dn.24xlarge"};
    for (CostTimePoint& p : data.points) p.group = instances[static_cast<std::size_t>(p.index) % instances.size()];
    auto chart = cost_time_chart(data);
    render_png(*chart);
    std::map<std::string, QScatterSeries*> by_name;
    for (QAbstractSeries* series : chart->series()) {
        if (auto* scatter = qobject_cast<QScatterSeries*>(series)) by_name[scatter->name().toStdString()] = scatter;
    }
    EXPECT_EQ(by_name.count("configurations"), 0u) << "grouped points are not drawn alike";
    std::set<std::pair<QRgb, int>> looks;
    for (const std::string& instance : instances) {
        ASSERT_EQ(by_name.count(instance), 1u) << instance;
        QScatterSeries* series = by_name[instance];
        EXPECT_EQ(series->count(), 5) << instance;  // 40 points over 8 instances
        EXPECT_TRUE(chart->legend()->markers(series).front()->isVisible()) << instance;
        looks.insert({series->color().rgb(), static_cast<int>(series->markerShape())});
    }
    EXPECT_EQ(looks.size(), instances.size()) << "two instances share a colour and a shape";
    for (const CostTimePoint& p : data.points) {
        EXPECT_TRUE(by_name[p.group]->points().contains(QPointF(p.time_to_train_s / 3600, p.cost_usd))) << p.index;
    }
}

TEST(Charts, FrontLabelsStayClearOfMarkersLinesAndEachOther) {
    ensure_application();
    CostTimeChartData data = cost_time_data();
    // A front point on the budget line and one beside the deadline: Qt's own labels sat on them.
    data.points[10].cost_usd = *data.budget_usd;
    data.points[15].time_to_train_s = *data.deadline_s * 1.02;
    auto chart = cost_time_chart(data);
    render_png(*chart);  // lays the chart out and places the labels
    const QRectF plot = chart->plotArea();
    QAbstractSeries* any = chart->series().front();
    std::vector<QRectF> boxes;
    std::vector<int> labelled;  // the point each box names ("config 15")
    for (QGraphicsItem* item : chart->childItems()) {
        // A box with a text in it (Qt's own plot-area frame is a rectangle too).
        auto* box = dynamic_cast<QGraphicsRectItem*>(item);
        if (!box || box->childItems().size() != 1) continue;
        const auto* text = dynamic_cast<QGraphicsSimpleTextItem*>(box->childItems().front());
        if (!text) continue;
        boxes.push_back(box->mapRectToParent(box->rect()));
        labelled.push_back(text->text().section(' ', 1).toInt());
    }
    const double budget_y = chart->mapToPosition({1, *data.budget_usd}, any).y();
    const double deadline_x = chart->mapToPosition({*data.deadline_s / 3600, 100}, any).x();
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        const QRectF& box = boxes[i];
        EXPECT_TRUE(plot.contains(box)) << i;
        EXPECT_FALSE(box.top() < budget_y && box.bottom() > budget_y) << "label " << i << " crosses the budget line";
        EXPECT_FALSE(box.left() < deadline_x && box.right() > deadline_x) << "label " << i << " crosses the deadline";
        for (const CostTimePoint& p : data.points) {
            if (!p.on_front) continue;
            const QPointF at = chart->mapToPosition({p.time_to_train_s / 3600, p.cost_usd}, any);
            EXPECT_FALSE(box.adjusted(-4, -4, 4, 4).contains(at)) << "label " << i << " covers front point " << p.index;
        }
        for (std::size_t j = 0; j < i; ++j) EXPECT_FALSE(box.intersects(boxes[j])) << i << " and " << j;
    }
    // Each label sits next to its point: within 60 px of it.
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        const CostTimePoint& p = data.points.at(static_cast<std::size_t>(labelled[i]));
        ASSERT_TRUE(p.on_front) << labelled[i];
        const QPointF at = chart->mapToPosition({p.time_to_train_s / 3600, p.cost_usd}, any);
        const QRectF& box = boxes[i];
        const double dx = std::max({box.left() - at.x(), 0.0, at.x() - box.right()});
        const double dy = std::max({box.top() - at.y(), 0.0, at.y() - box.bottom()});
        EXPECT_LE(std::hypot(dx, dy), 60) << "the label of point " << labelled[i] << " is far from it";
    }
}

TEST(Charts, ScalingChartShadesALinesBandWhenGiven) {
    ensure_application();
    ScalingChartData plain = scaling_data();
    ScalingChartData banded = plain;
    for (ScalingPoint& p : banded.series[0].points) {
        p.low_images_per_s = 0.8 * p.throughput_images_per_s;
        p.high_images_per_s = 1.2 * p.throughput_images_per_s;
    }
    auto chart = scaling_chart(banded);
    EXPECT_EQ(chart->series().size(), 4);  // ideal + band + predicted + measured
    const auto vertical = chart->axes(Qt::Vertical);
    ASSERT_EQ(vertical.size(), 1);
    ASSERT_NE(qobject_cast<QLogValueAxis*>(vertical.front()), nullptr);
    const double top = qobject_cast<QLogValueAxis*>(vertical.front())->max();
    EXPECT_GE(top, 1.2 * banded.series[0].points.back().throughput_images_per_s) << "the band's top is off the chart";
    // The predicted line's blue at a fifth of its strength over white.
    const QColor shade(205, 227, 240);
    const int without = pixels_near(render_png(*scaling_chart(plain)).image, shade, 6);
    const int with = pixels_near(render_png(*chart).image, shade, 6);
    EXPECT_GT(with, without + 2000) << "the band is not shaded";
}

TEST(Charts, CostTimeChartMarksTheCurrentConfiguration) {
    ensure_application();
    CostTimeChartData data = cost_time_data();
    const QColor orange(230, 159, 0);
    EXPECT_LT(pixels_near(render_png(*cost_time_chart(data)).image, orange, 4), 20);
    data.current_index = 23;
    auto chart = cost_time_chart(data);
    EXPECT_GT(pixels_near(render_png(*chart).image, orange, 4), 60) << "no marker for the current configuration";
    bool named = false;
    for (QAbstractSeries* series : chart->series()) named = named || series->name() == "this configuration";
    EXPECT_TRUE(named);
    data.current_index = 1000;  // not among the points: nothing marked, no error
    EXPECT_EQ(cost_time_chart(data)->series().size(), chart->series().size() - 1);
}

TEST(Charts, CostTimeChartHighlightsTheFrontAndMapsClicksBack) {
    ensure_application();
    const CostTimeChartData data = cost_time_data();
    auto chart = cost_time_chart(data);
    const Picture picture = render_png(*chart);
    EXPECT_GT(picture.colours.size(), 50u);
    EXPECT_GT(pixels_near(picture.image, QColor(213, 94, 0)), 300) << "the Pareto front is missing";
    EXPECT_GT(pixels_near(picture.image, QColor(0, 158, 115)), 200) << "the deadline and budget lines are missing";

    // A click reports the point's value in chart coordinates; it maps back to the index.
    const CostTimePoint& p = data.points[17];
    EXPECT_EQ(cost_time_index_at(data, p.time_to_train_s / 3600, p.cost_usd), 17);
    EXPECT_EQ(cost_time_index_at(data, p.time_to_train_s / 3600 + 0.01, p.cost_usd + 0.5), 17);
    EXPECT_FALSE(cost_time_index_at(CostTimeChartData{}, 1, 1).has_value());
}

TEST(Charts, BreakdownChartStacksComputeDataAndCommunication) {
    ensure_application();
    auto chart = breakdown_chart(breakdown_data());
    const Picture picture = render_png(*chart);
    EXPECT_GT(picture.colours.size(), 50u);
    const int blue = pixels_near(picture.image, QColor(0, 114, 178), 4);
    const int orange = pixels_near(picture.image, QColor(230, 159, 0), 4);
    const int red = pixels_near(picture.image, QColor(213, 94, 0), 4);
    EXPECT_GT(blue, 10000) << "compute bars";
    EXPECT_GT(red, 1000) << "exposed communication";
    EXPECT_GT(orange, 20) << "input pipeline";
    // Compute is about 0.31 of 0.55 s summed over bars against 0.17 s of communication.
    EXPECT_GT(blue, 3 * red);
}

TEST(Charts, SvgCarriesTheAxisTitles) {
    ensure_application();
    auto chart = cost_time_chart(cost_time_data());
    testing::TempFile file("", ".svg");
    render_to_file(*chart, file.path(), 800, 500);
    std::stringstream text;
    text << std::ifstream(file.path()).rdbuf();
    EXPECT_NE(text.str().find("<svg"), std::string::npos);
    EXPECT_NE(text.str().find("time to train"), std::string::npos);
    EXPECT_NE(text.str().find("cost to train (US$)"), std::string::npos);
    // The ticks are plain (0.5 to 10 hours, $200 to $800: both axes linear).
    EXPECT_NE(text.str().find(">2 h<"), std::string::npos);
    EXPECT_NE(text.str().find(">$400<"), std::string::npos);
}

TEST(Charts, PlainTicksReadAsAPersonWritesThem) {
    EXPECT_EQ(plain_duration(30), "30 s");
    EXPECT_EQ(plain_duration(600), "10 min");
    EXPECT_EQ(plain_duration(45 * 60), "45 min");
    EXPECT_EQ(plain_duration(3600), "1 h");
    EXPECT_EQ(plain_duration(5400), "1.5 h");
    EXPECT_EQ(plain_duration(100 * 60), "100 min") << "not 1.7 h";
    EXPECT_EQ(plain_duration(86400), "1 d");
    EXPECT_EQ(plain_duration(1000 * 86400.0), "1,000 d");
    EXPECT_EQ(plain_dollars(0), "$0");
    EXPECT_EQ(plain_dollars(0.5), "$0.50");
    EXPECT_EQ(plain_dollars(50), "$50");
    EXPECT_EQ(plain_dollars(64.86), "$64.86");
    EXPECT_EQ(plain_dollars(1000), "$1,000");
    EXPECT_EQ(plain_dollars(25000), "$25,000");

    auto labels_of = [](const std::vector<AxisTick>& ticks) {
        std::vector<std::string> labels;
        for (const AxisTick& t : ticks) labels.push_back(t.label);
        return labels;
    };
    auto contains = [](const std::vector<std::string>& labels, const std::string& label) {
        return std::find(labels.begin(), labels.end(), label) != labels.end();
    };
    // The README's plan: 4 minutes to 40 days, $40 to $12,000, on log axes.
    const std::vector<AxisTick> time = time_ticks(4.0 / 60, 40 * 24, true);
    const std::vector<std::string> times = labels_of(time);
    EXPECT_LE(times.size(), 9u);
    EXPECT_GE(times.size(), 5u);
    for (const char* label : {"10 min", "1 h", "1 d"}) EXPECT_TRUE(contains(times, label)) << label;
    for (std::size_t i = 0; i < time.size(); ++i) {
        EXPECT_GE(time[i].value, 4.0 / 60);
        EXPECT_LE(time[i].value, 40 * 24.0);
        if (i > 0) {
            EXPECT_GT(time[i].value, time[i - 1].value);
        }
        EXPECT_EQ(plain_duration(time[i].value * 3600), time[i].label);
    }
    EXPECT_NEAR(time[std::find(times.begin(), times.end(), "1 h") - times.begin()].value, 1.0, 1e-12) << "hours";
    const std::vector<std::string> dollars = labels_of(dollar_ticks(40, 12000, true));
    EXPECT_LE(dollars.size(), 9u);
    for (const char* label : {"$50", "$100", "$1,000", "$10,000"}) EXPECT_TRUE(contains(dollars, label)) << label;
    // A narrow range, linear: round steps.
    EXPECT_EQ(labels_of(time_ticks(0, 6, false)),
              (std::vector<std::string>{"0", "1 h", "2 h", "3 h", "4 h", "5 h", "6 h"}));
    // Every label exact in its own unit: 70 minutes would read "1.2 h".
    EXPECT_EQ(labels_of(time_ticks(0.25, 1.5, false)), (std::vector<std::string>{"30 min", "1 h", "1.5 h"}));
    EXPECT_EQ(labels_of(time_ticks(0.1, 0.9, false, 6)),
              (std::vector<std::string>{"10 min", "20 min", "30 min", "40 min", "50 min"}));
    EXPECT_EQ(labels_of(dollar_ticks(55, 160, false)),
              (std::vector<std::string>{"$60", "$80", "$100", "$120", "$140", "$160"}));
    EXPECT_EQ(labels_of(count_ticks(9000, 2.5e6, true, 8)).back(), "2,000,000");
}

/// The legend's visible entries, in order.
std::vector<std::string> legend_entries(QChart& chart) {
    std::vector<std::string> entries;
    for (QLegendMarker* marker : chart.legend()->markers()) {
        if (marker->isVisible()) entries.push_back(marker->label().toStdString());
    }
    return entries;
}

/// Every text the chart draws itself (tick labels, the points' and lines' labels).
std::set<std::string> chart_texts(QChart& chart) {
    std::set<std::string> texts;
    const QList<QGraphicsItem*> children = chart.childItems();
    std::vector<QGraphicsItem*> items(children.begin(), children.end());
    while (!items.empty()) {
        QGraphicsItem* item = items.back();
        items.pop_back();
        if (const auto* text = dynamic_cast<QGraphicsSimpleTextItem*>(item)) {
            if (text->isVisible()) texts.insert(text->text().toStdString());
        }
        for (QGraphicsItem* child : item->childItems()) items.push_back(child);
    }
    return texts;
}

CostTimeChartData styled_data() {
    CostTimeChartData data = cost_time_data();
    const std::vector<std::string> groups = {"L40S: g6e", "H100: p5, a3-highgpu-8g", "A100: p4d"};
    for (CostTimePoint& p : data.points) {
        p.group = groups[static_cast<std::size_t>(p.index) % groups.size()];
        p.context = !p.on_front && p.index % 2 == 1;
    }
    data.points[0].label = "cheapest within the deadline: 30.0 min, $200.00\n8 x g6e.48xlarge";
    data.group_order = groups;
    return data;
}

TEST(Charts, StyledScatterDrawsTheFrontOverItsGroupsAndAGreyBackground) {
    ensure_application();
    const CostTimeChartData data = styled_data();
    auto chart = cost_time_chart(data);
    const Picture picture = render_png(*chart, 1100, 620);
    // A legend of the front, the groups in the order given, the background; the deadline and the
    // budget are named on the chart, by their lines.
    EXPECT_EQ(legend_entries(*chart),
              (std::vector<std::string>{"Pareto front (fastest for the money)", "L40S: g6e", "H100: p5, a3-highgpu-8g",
                                        "A100: p4d", "other configurations"}));
    const std::set<std::string> texts = chart_texts(*chart);
    for (const char* text : {"deadline 4 h", "budget $500", "$500", "2 h"}) EXPECT_EQ(texts.count(text), 1u) << text;
    EXPECT_EQ(texts.count("cheapest within the deadline: 30.0 min, $200.00\n8 x g6e.48xlarge"), 1u);

    // The groups one colour each; every front point in a larger marker of its group's colour; the
    // background light grey, small, every context point in it.
    std::map<QRgb, int> colours;
    std::set<std::pair<double, double>> front_drawn;
    int context_drawn = 0;
    for (QAbstractSeries* series : chart->series()) {
        auto* scatter = qobject_cast<QScatterSeries*>(series);
        if (!scatter || scatter->count() == 0) continue;
        const QColor c = scatter->color();
        if (c.red() == c.green() && c.green() == c.blue() && c.red() > 200) {
            context_drawn += scatter->count();
            EXPECT_LT(scatter->markerSize(), 6);
        } else if (scatter->markerSize() >= 12) {
            for (const QPointF& p : scatter->points()) front_drawn.insert({p.x(), p.y()});
        } else {
            ++colours[c.rgb()];
        }
    }
    EXPECT_EQ(colours.size(), 3u) << "one colour per group";
    int context_points = 0;
    for (const CostTimePoint& p : data.points) {
        if (p.on_front) {
            EXPECT_EQ(front_drawn.count({p.time_to_train_s / 3600, p.cost_usd}), 1u) << p.index;
        }
        context_points += p.context ? 1 : 0;
    }
    EXPECT_EQ(context_drawn, context_points);
    EXPECT_GT(pixels_near(picture.image, QColor(213, 94, 0)), 300) << "the front's line";

    // The SVG carries the legend, the front's labels and the plain ticks as text.
    testing::TempFile file("", ".svg");
    render_to_file(*chart, file.path(), 1100, 620);
    std::stringstream svg;
    svg << std::ifstream(file.path()).rdbuf();
    for (const char* text : {"Pareto front (fastest for the money)", "L40S: g6e", "other configurations",
                             "deadline 4 h", "budget $500", "cheapest within the deadline", ">$500<", ">2 h<"}) {
        EXPECT_NE(svg.str().find(text), std::string::npos) << text;
    }
}

TEST(Charts, BadPathsAreInputErrorsAndLeaveNothing) {
    ensure_application();
    auto chart = breakdown_chart(breakdown_data());
    const testing::TempFolder folder;
    const std::filesystem::path& dir = folder.path;
    EXPECT_THROW(render_to_file(*chart, dir / "epochcast_chart.jpg", 100, 100), InputError);
    EXPECT_FALSE(std::filesystem::exists(dir / "epochcast_chart.jpg"));
    EXPECT_THROW(render_to_file(*chart, dir / "epochcast_chart.png", 0, 100), InputError);
    const auto missing = dir / "epochcast_no_such_folder" / "chart.png";
    try {
        render_to_file(*chart, missing, 100, 100);
        FAIL() << "no error for a missing folder";
    } catch (const InputError& error) {
        EXPECT_NE(std::string(error.what()).find(missing.string()), std::string::npos);
    }
    EXPECT_FALSE(std::filesystem::exists(missing.parent_path()));
}

TEST(Charts, RenderingTwiceGivesTheSamePicture) {
    ensure_application();
    auto chart = scaling_chart(scaling_data());
    const Picture first = render_png(*chart, 640, 480);
    const Picture second = render_png(*chart, 640, 480);
    EXPECT_EQ(first.image, second.image);
}

}  // namespace
}  // namespace epochcast::charts
