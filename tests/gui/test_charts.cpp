// gui/charts: each chart renders offscreen to a PNG that shows its data (the series' colours are
// there in quantity, the picture is not blank), to an SVG that carries its axis titles, and bad
// paths are errors that leave no file behind.
#include <gtest/gtest.h>

#include <QtCharts/QValueAxis>
#include <QtGui/QColor>
#include <QtGui/QImage>

#include <filesystem>
#include <fstream>
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
    data.ideal_images_per_s_per_gpu = 800;
    ScalingSeries predicted{"p3.16xlarge (predicted)", {}, false};
    for (int gpus : {1, 8, 16, 32, 64, 128, 256}) predicted.points.push_back({double(gpus), 800.0 * gpus * (1 - 0.0004 * gpus)});
    ScalingSeries measured{"measured", {{8, 6300}, {64, 44000}}, true};
    data.series = {predicted, measured};
    return data;
}

CostTimeChartData cost_time_data() {
    CostTimeChartData data;
    data.title = "time against cost";
    for (int i = 0; i < 40; ++i) {
        const double hours = 0.5 + 0.25 * i;
        data.points.push_back({i, hours * 3600, 200 + 30.0 * ((i * 7) % 11) + 10.0 * i, i % 5 == 0, "config " + std::to_string(i)});
    }
    data.deadline_s = 4 * 3600.0;
    data.budget_usd = 500;
    return data;
}

BreakdownChartData breakdown_data() {
    return {"one iteration",
            {{"1 x p3.2xlarge", 0.30, 0.0, 0.0}, {"8 x p3.16xlarge", 0.31, 0.0, 0.05}, {"16 x p3.16xlarge", 0.31, 0.02, 0.12}}};
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
    double top = 0;
    for (QAbstractAxis* axis : chart->axes(Qt::Vertical)) top = static_cast<QValueAxis*>(axis)->max();
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
    EXPECT_NE(text.str().find("time to train (hours)"), std::string::npos);
    EXPECT_NE(text.str().find("cost to train (US$)"), std::string::npos);
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
