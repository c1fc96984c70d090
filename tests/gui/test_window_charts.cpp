// The window's charts as a user sees them at the window's default size: every axis title is
// written in full (Qt cuts one longer than its axis: "throughput (imag..."), and the charts keep
// the shapes issue 26 asked for (log-log scaling with its ideal, a marker per instance type).
#include <gtest/gtest.h>

#include <QChart>
#include <QChartView>
#include <QFontMetricsF>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QTest>

#include <set>
#include <string>

#include "gui/app/main_window.hpp"

namespace epochcast::gui {
namespace {

struct DefaultSizeWindow : ::testing::Test {
    MainWindow window;
    DefaultSizeWindow() {
        window.resize(kDefaultWidth, kDefaultHeight);
        window.show();
        EXPECT_TRUE(QTest::qWaitForWindowExposed(&window));
        QCoreApplication::processEvents();
    }
};

TEST_F(DefaultSizeWindow, EveryAxisTitleFitsItsAxis) {
    for (QChartView* view : {window.scalingView(), window.scatterView(), window.breakdownView()}) {
        const QChart* chart = view->chart();
        const QRectF plot = chart->plotArea();
        ASSERT_GT(plot.height(), 0);
        for (const QAbstractAxis* axis : chart->axes()) {
            if (axis->titleText().isEmpty()) continue;
            const double length = axis->orientation() == Qt::Vertical ? plot.height() : plot.width();
            const double text = QFontMetricsF(axis->titleFont()).horizontalAdvance(axis->titleText());
            EXPECT_LE(text, length) << chart->title().toStdString() << ": \"" << axis->titleText().toStdString()
                                    << "\" is " << text << " px on a " << length << " px axis";
        }
    }
}

TEST_F(DefaultSizeWindow, ScalingIsLogLogAndTheScatterHasASeriesPerInstanceType) {
    const QChart* scaling = window.scalingView()->chart();
    for (const QAbstractAxis* axis : scaling->axes()) EXPECT_EQ(axis->type(), QAbstractAxis::AxisTypeLogValue);
    int ideals = 0;
    for (const QAbstractSeries* series : scaling->series())
        ideals += series->name() == "ideal (linear in GPUs)" ? 1 : 0;
    EXPECT_EQ(ideals, 1) << "the predicted curve's ideal";

    std::set<std::string> instances;
    for (const InstanceOption& o : window.scatter().options) instances.insert(o.scenario.instance);
    std::set<std::string> series;
    for (const QAbstractSeries* s : window.scatterView()->chart()->series()) {
        if (qobject_cast<const QScatterSeries*>(s) && instances.count(s->name().toStdString()))
            series.insert(s->name().toStdString());
    }
    EXPECT_GE(instances.size(), 15u) << "the catalog's rented GPU instance types";
    EXPECT_EQ(series, instances) << "a series per instance type";
    std::set<std::string> drawn;
    for (const charts::CostTimePoint& p : window.scatterData().points) drawn.insert(p.group);
    EXPECT_EQ(drawn, instances);
    // The front is drawn: an owned machine at $0 (no point on a log axis) made it invisible.
    ASSERT_FALSE(window.paretoFront().empty());
    int on_front = 0;
    for (const charts::CostTimePoint& p : window.scatterData().points) on_front += p.on_front ? 1 : 0;
    EXPECT_EQ(on_front, static_cast<int>(window.paretoFront().size()));
}

}  // namespace
}  // namespace epochcast::gui
