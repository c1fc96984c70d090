// QTest drives the what-if window offscreen: inputs change outputs as the model says, a click on
// the scatter loads that configuration, a bad calibration gives a message, pins, CSV, simulation.
#include <gtest/gtest.h>

#include <QBarCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QCompleter>
#include <QFile>
#include <QGuiApplication>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QProcessEnvironment>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTest>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "gui/app/main_window.hpp"
#include "gui/app/timeline_view.hpp"
#include "model/errors.hpp"
#include "model/scenario_file.hpp"
#include "model/text_io.hpp"
#include "tests/support/temp_file.hpp"
#include "tests/support/temp_folder.hpp"

namespace epochcast::gui {
namespace {

using testing::TempFile;
using testing::TempFolder;

template <typename T>
T* child(const MainWindow& window, const char* name) {
    T* widget = window.findChild<T*>(name);
    EXPECT_NE(widget, nullptr) << name;
    return widget;
}

/// Type a value into a spin box as a user would: select all, type, press Enter.
void type_into(QSpinBox* box, int value) {
    box->setFocus();
    box->selectAll();
    QTest::keyClicks(box, QString::number(value));
    QTest::keyClick(box, Qt::Key_Enter);
}

struct Window : ::testing::Test {
    MainWindow window;
    Window() {
        window.resize(1400, 900);
        window.show();
        EXPECT_TRUE(QTest::qWaitForWindowExposed(&window));
    }
    Prediction direct(const Scenario& s) const { return window.model().predict(s); }
    /// Seed 000's cluster, 8 x p3.16xlarge (64 V100), instead of the window's defaults.
    void start_on_seed000_cluster() {
        Scenario s;
        s.instance = "p3.16xlarge";
        s.nodes = 8;
        window.setScenario(s);
    }
};

TEST_F(Window, StartsOnTheScenarioDefaultsAsTheModelSays) {
    // Today's default: PyTorch on one p5.48xlarge, mixed precision, its own loader, channels_last.
    const Scenario s = window.scenario();
    const Scenario defaults;
    EXPECT_EQ(s.instance, "p5.48xlarge");
    EXPECT_EQ(s.instance, defaults.instance);
    EXPECT_EQ(s.nodes, 1);
    EXPECT_EQ(s.nodes, defaults.nodes);
    EXPECT_EQ(s.framework, Framework::pytorch);
    EXPECT_EQ(s.precision, defaults.precision);
    EXPECT_EQ(s.loader, Loader::framework_default);
    EXPECT_EQ(s.memory_format, MemoryFormat::channels_last);
    EXPECT_EQ(s.batch_per_gpu, defaults.batch_per_gpu);
    auto* precision = child<QComboBox>(window, "precision");
    QStringList precisions;
    for (int i = 0; i < precision->count(); ++i) precisions << precision->itemText(i);
    EXPECT_EQ(precisions, QStringList({"amp", "bf16", "tf32", "fp32"}));
    EXPECT_EQ(child<QComboBox>(window, "loader")->currentText(), "default");
    EXPECT_EQ(child<QComboBox>(window, "memoryFormat")->currentText(), "channels_last");
    ASSERT_TRUE(window.prediction());
    EXPECT_DOUBLE_EQ(window.prediction()->throughput_images_per_s, direct(s).throughput_images_per_s);
    const QString shown = child<QLabel>(window, "throughput")->text();
    // Thousands grouped, as the CLI's tables print them: "53,164 images/s".
    EXPECT_TRUE(shown.contains(QString::fromStdString(format_count(direct(s).throughput_images_per_s)) + " images/s"))
        << shown.toStdString();
    EXPECT_TRUE(shown.contains(',')) << shown.toStdString();
}

TEST_F(Window, TypingNodesChangesTheOutputsAsTheModelSays) {
    const double before = window.prediction()->throughput_images_per_s;
    type_into(child<QSpinBox>(window, "nodes"), 16);
    const Scenario s = window.scenario();
    EXPECT_EQ(s.nodes, 16);
    ASSERT_TRUE(window.prediction());
    const Prediction p = direct(s);
    EXPECT_DOUBLE_EQ(window.prediction()->throughput_images_per_s, p.throughput_images_per_s);
    EXPECT_DOUBLE_EQ(window.prediction()->cost_usd, p.cost_usd);
    EXPECT_GT(p.throughput_images_per_s, before);
    EXPECT_TRUE(child<QLabel>(window, "cost")->text().contains(QString::fromStdString(format_count(p.cost_usd))));
    EXPECT_TRUE(
        child<QLabel>(window, "efficiency")->text().contains(QString::number(100 * p.scaling_efficiency, 'f', 1)));
}

TEST_F(Window, ChoosingPrecisionFrameworkAndPricingFollowsTheModel) {
    start_on_seed000_cluster();
    type_into(child<QSpinBox>(window, "batchPerGpu"), 128);  // fp32 at 256 would not fit a V100
    auto* precision = child<QComboBox>(window, "precision");
    precision->setCurrentText("fp32");
    auto* pricing = child<QComboBox>(window, "pricing");
    pricing->setCurrentText("spot");
    child<QComboBox>(window, "framework")->setCurrentText("mxnet");
    const Scenario s = window.scenario();
    EXPECT_EQ(s.precision, Precision::fp32);
    EXPECT_EQ(s.pricing, Pricing::spot);
    EXPECT_EQ(s.framework, Framework::mxnet);
    EXPECT_DOUBLE_EQ(window.prediction()->cost_usd, direct(s).cost_usd);
}

// Issue 45 item 5: the run's costs around its iterations are in the window as in predict's output:
// on spot the expected interruptions, the work lost and the checkpoint interval; with a target
// accuracy the recipe's evaluation passes (mlperf-lars: every 4 epochs).
TEST_F(Window, AroundTheRunShowsSpotsInterruptionsAndTheRecipesEvaluations) {
    start_on_seed000_cluster();
    auto* around = child<QLabel>(window, "runCosts");
    EXPECT_TRUE(around->text().contains("no evaluation")) << around->text().toStdString();
    EXPECT_FALSE(around->text().contains("spot:")) << around->text().toStdString();
    child<QComboBox>(window, "pricing")->setCurrentText("spot");
    const Prediction spot = direct(window.scenario());
    ASSERT_TRUE(spot.spot.modelled);
    const QString expected =
        QString("spot: %1 interruptions expected").arg(spot.spot.expected_interruptions, 0, 'f', 1);
    EXPECT_TRUE(around->text().contains(expected)) << around->text().toStdString();
    // With its elastic alternative (eq. X7): the window's figures are the model's.
    ASSERT_TRUE(spot.spot.elastic);
    EXPECT_TRUE(around->text().contains("elastic (on without a lost node until its replacement joins): "))
        << around->text().toStdString();
    // Between 2 minutes and an hour, so the window writes it in minutes with one decimal.
    ASSERT_GT(spot.spot.elastic_time_to_train_s, 120);
    ASSERT_LT(spot.spot.elastic_time_to_train_s, 3600);
    EXPECT_TRUE(around->text().contains(
        QString("replacement joins): %1 min").arg(spot.spot.elastic_time_to_train_s / 60, 0, 'f', 1)))
        << around->text().toStdString() << " " << spot.spot.elastic_time_to_train_s;

    Scenario target = window.scenario();
    target.pricing = Pricing::on_demand;
    target.target_top1_percent = 75.9;
    target.recipe = "mlperf-lars";
    window.setScenario(target);
    const Prediction p = direct(window.scenario());
    ASSERT_GT(p.evaluations, 0);
    EXPECT_TRUE(around->text().contains(QString("%1 evaluations x").arg(p.evaluations, 0, 'f', 0)))
        << around->text().toStdString();
    EXPECT_TRUE(around->text().contains("every 4 epochs, the recipe's")) << around->text().toStdString();
}

// Issue 45: the spot run priced elastic (predict --elastic-spot) from a check box that only spot
// enables; the window's figures are then the elastic run's, and the run that waits is beside them.
TEST_F(Window, ASpotRunCanBePricedElastic) {
    start_on_seed000_cluster();
    auto* elastic = child<QCheckBox>(window, "spotElastic");
    EXPECT_FALSE(elastic->isEnabled());
    child<QComboBox>(window, "pricing")->setCurrentText("spot");
    ASSERT_TRUE(elastic->isEnabled());
    const Prediction waiting = direct(window.scenario());
    ASSERT_TRUE(waiting.spot.elastic);
    ASSERT_FALSE(waiting.spot.elastic_priced);
    elastic->setChecked(true);
    const Scenario s = window.scenario();
    EXPECT_TRUE(s.spot_elastic);
    const Prediction p = direct(s);
    ASSERT_TRUE(p.spot.elastic_priced);
    ASSERT_TRUE(window.prediction());
    EXPECT_DOUBLE_EQ(window.prediction()->time_to_train_s, p.time_to_train_s);
    EXPECT_DOUBLE_EQ(window.prediction()->cost_usd, p.cost_usd);
    EXPECT_DOUBLE_EQ(p.time_to_train_s, waiting.spot.elastic_time_to_train_s);
    EXPECT_DOUBLE_EQ(p.spot.waiting_time_to_train_s, waiting.time_to_train_s);
    const QString around = child<QLabel>(window, "runCosts")->text();
    EXPECT_TRUE(around.contains("priced elastic, waiting for each replacement instead: ")) << around.toStdString();
    EXPECT_FALSE(around.contains("; elastic (")) << around.toStdString();
    // Back on demand the box is disabled and the scenario is not elastic, checked or not.
    child<QComboBox>(window, "pricing")->setCurrentText("on-demand");
    EXPECT_FALSE(elastic->isEnabled());
    EXPECT_FALSE(window.scenario().spot_elastic);
    // A scenario set from outside (a pinned one, a plan's) carries its choice into the box.
    Scenario again = s;
    window.setScenario(again);
    EXPECT_TRUE(elastic->isEnabled());
    EXPECT_TRUE(elastic->isChecked());
}

// The torch.compile box (eq. C9): checked, the window predicts what the model does for the compiled
// scenario and says what it rests on; for MXNet it is disabled and the scenario is eager.
TEST_F(Window, TorchCompileIsABoxForPyTorchOnly) {
    auto* compiled = child<QCheckBox>(window, "compiled");
    ASSERT_TRUE(compiled->isEnabled());
    EXPECT_FALSE(window.scenario().compiled);
    compiled->setChecked(true);
    const Scenario s = window.scenario();
    ASSERT_TRUE(s.compiled);
    ASSERT_TRUE(window.prediction());
    EXPECT_DOUBLE_EQ(window.prediction()->throughput_images_per_s, direct(s).throughput_images_per_s);
    Scenario eager = s;
    eager.compiled = false;
    EXPECT_GT(window.prediction()->throughput_images_per_s, direct(eager).throughput_images_per_s);
    EXPECT_TRUE(window.message().contains("torch.compile is carried from the eager curve"))
        << window.message().toStdString();
    child<QComboBox>(window, "framework")->setCurrentText("mxnet");
    EXPECT_FALSE(compiled->isEnabled());
    EXPECT_FALSE(window.scenario().compiled);
}

TEST_F(Window, AnOwnedSystemCostsNaAndEveryPricingModelIsOffered) {
    auto* pricing = child<QComboBox>(window, "pricing");
    for (Pricing p : kAllPricings) EXPECT_GE(pricing->findText(QString::fromStdString(std::string(to_string(p)))), 0);
    // An owned DGX has no price by the hour: its cost is n/a, never $0.00.
    child<QComboBox>(window, "instance")->setCurrentText("dgx-a100");
    ASSERT_TRUE(window.prediction());
    EXPECT_FALSE(window.prediction()->priced);
    const QString cost = child<QLabel>(window, "cost")->text();
    EXPECT_TRUE(cost.contains("n/a")) << cost.toStdString();
    EXPECT_FALSE(cost.contains("$0.00")) << cost.toStdString();
    EXPECT_TRUE(child<QLabel>(window, "instanceInfo")->text().contains("no price by the hour"));
    // p5e.48xlarge is sold only as capacity blocks: on demand the window says why it has no answer.
    child<QComboBox>(window, "instance")->setCurrentText("p5e.48xlarge");
    EXPECT_FALSE(window.prediction());
    EXPECT_TRUE(child<QLabel>(window, "message")->text().contains("it is sold as: capacity-block"))
        << child<QLabel>(window, "message")->text().toStdString();
    EXPECT_TRUE(child<QLabel>(window, "instanceInfo")->text().contains("capacity-block"));
    pricing->setCurrentText("capacity-block");
    ASSERT_TRUE(window.prediction());
    EXPECT_DOUBLE_EQ(window.prediction()->cluster_usd_per_hour, 47.76);
}

TEST_F(Window, ParameterServersTakeARatioOfServersPerNode) {
    start_on_seed000_cluster();
    child<QComboBox>(window, "strategy")->setCurrentText("ps");
    child<QComboBox>(window, "psInstance")->setCurrentText("m4.16xlarge");
    auto* ratio = window.findChild<QDoubleSpinBox*>("psRatio");
    ASSERT_NE(ratio, nullptr);
    EXPECT_TRUE(ratio->isEnabled());
    ratio->setValue(2);
    Scenario s = window.scenario();
    EXPECT_EQ(s.strategy, Strategy::ps);
    EXPECT_EQ(s.ps_nodes, 16);  // 2 per worker node x 8 nodes: seed 000's MXNet cluster
    EXPECT_DOUBLE_EQ(window.prediction()->throughput_images_per_s, direct(s).throughput_images_per_s);
    child<QCheckBox>(window, "psColocated")->setChecked(true);
    EXPECT_FALSE(ratio->isEnabled());
    s = window.scenario();
    EXPECT_TRUE(s.ps_colocated);
    EXPECT_EQ(s.ps_nodes, 0);
    EXPECT_DOUBLE_EQ(window.prediction()->throughput_images_per_s, direct(s).throughput_images_per_s);
}

TEST_F(Window, ABatchThatDoesNotFitIsFlaggedAndClearsTheOutputs) {
    type_into(child<QSpinBox>(window, "batchPerGpu"), 4096);
    EXPECT_FALSE(window.prediction());
    const QString memory = child<QLabel>(window, "memory")->text();
    EXPECT_TRUE(memory.startsWith("does not fit")) << memory.toStdString();
    EXPECT_FALSE(window.message().isEmpty());
    EXPECT_EQ(child<QLabel>(window, "throughput")->text(), "-");
    type_into(child<QSpinBox>(window, "batchPerGpu"), 128);
    EXPECT_TRUE(window.prediction());
    EXPECT_TRUE(child<QLabel>(window, "memory")->text().startsWith("needs"));
}

TEST_F(Window, ATargetAccuracyMakesTheEpochsAnOutputAndFlagsABatchBeyondTheRecipes) {
    auto* target = child<QDoubleSpinBox>(window, "targetTop1");
    auto* epochs = child<QDoubleSpinBox>(window, "epochs");
    EXPECT_TRUE(epochs->isEnabled());
    EXPECT_FALSE(child<QComboBox>(window, "recipe")->isEnabled());
    start_on_seed000_cluster();
    target->setValue(75.9);  // seed 000's 64 V100 at 256: a global batch of 16,384
    EXPECT_FALSE(epochs->isEnabled());
    // The default recipe, goyal2017 (the frameworks' 90-epoch schedule), reaches 75.21% at 16,384,
    // not 75.9%: a message, no outputs.
    EXPECT_EQ(child<QComboBox>(window, "recipe")->currentText(), "goyal2017");
    EXPECT_FALSE(window.prediction());
    EXPECT_TRUE(window.message().contains("below the target 75.9%")) << window.message().toStdString();
    // MLPerf's LARS, named, reaches it in 47 epochs there.
    child<QComboBox>(window, "recipe")->setCurrentText("mlperf-lars");
    Scenario s = window.scenario();
    EXPECT_DOUBLE_EQ(s.target_top1_percent, 75.9);
    EXPECT_EQ(s.recipe, "mlperf-lars");
    ASSERT_TRUE(window.prediction());
    EXPECT_DOUBLE_EQ(window.prediction()->epochs, 47);
    EXPECT_DOUBLE_EQ(window.prediction()->cost_usd, direct(s).cost_usd);
    QString shown = child<QLabel>(window, "epochsTrained")->text();
    EXPECT_TRUE(shown.contains("47") && shown.contains("mlperf-lars (published)")) << shown.toStdString();
    // MLPerf's on 40 nodes (81,920 images): extrapolated and flagged.
    type_into(child<QSpinBox>(window, "nodes"), 40);
    ASSERT_TRUE(window.prediction());
    EXPECT_EQ(window.prediction()->epochs_basis, EpochsBasis::extrapolated);
    shown = child<QLabel>(window, "epochsTrained")->text();
    EXPECT_TRUE(shown.contains("beyond every published recipe")) << shown.toStdString();
    target->setValue(0);
    EXPECT_TRUE(epochs->isEnabled());
    EXPECT_DOUBLE_EQ(window.prediction()->epochs, epochs->value());
}

TEST_F(Window, InstanceInfoShowsItsGpuVcpusNetworkAndPrice) {
    child<QComboBox>(window, "instance")->setCurrentText("p3.2xlarge");
    const QString info = child<QLabel>(window, "instanceInfo")->text();
    EXPECT_TRUE(info.contains("V100")) << info.toStdString();
    EXPECT_TRUE(info.contains("vCPUs"));
    EXPECT_TRUE(info.contains("$3.06/h")) << info.toStdString();
    // The box shows the instance's one GPU; the scenario says "all of them" (0), as the CLI's default does.
    EXPECT_EQ(child<QSpinBox>(window, "gpusPerNode")->value(), 1);
    EXPECT_EQ(child<QSpinBox>(window, "gpusPerNode")->maximum(), 1);
    EXPECT_EQ(window.scenario().gpus_per_node, 0);
}

TEST_F(Window, ClickingAScatterPointLoadsThatConfiguration) {
    const charts::CostTimeChartData& data = window.scatterData();
    ASSERT_GT(data.points.size(), 2u);
    // Pick a point other than the current configuration: a different instance type.
    const charts::CostTimePoint* target = nullptr;
    for (const charts::CostTimePoint& p : data.points) {
        const InstanceOption& o = window.scatter().options.at(static_cast<std::size_t>(p.index));
        if (o.scenario.instance != "p3.16xlarge" && o.scenario.nodes == 2 && !p.on_front) {
            target = &p;
            break;
        }
    }
    ASSERT_NE(target, nullptr);
    const InstanceOption expected = window.scatter().options[static_cast<std::size_t>(target->index)];
    // The chart's dot for it, in the chart's coordinates (hours, dollars).
    const QPointF at(target->time_to_train_s / 3600, target->cost_usd);
    QScatterSeries* series = nullptr;
    for (QAbstractSeries* s : window.scatterView()->chart()->series()) {
        auto* scatter = qobject_cast<QScatterSeries*>(s);
        if (scatter && scatter->points().contains(at)) series = scatter;
    }
    ASSERT_NE(series, nullptr) << "the scatter chart does not draw the point";
    // What Qt Charts emits for a click on that point. (A synthesised QTest::mouseClick on the
    // chart view's viewport spins forever inside QChartView::mousePressEvent on Qt 6.4 offscreen.)
    emit series->clicked(at);
    QCoreApplication::processEvents();  // the click loads the configuration from the event loop
    const Scenario s = window.scenario();
    EXPECT_EQ(s.instance, expected.scenario.instance);
    EXPECT_EQ(s.nodes, 2);
    ASSERT_TRUE(window.prediction());
    EXPECT_DOUBLE_EQ(window.prediction()->cost_usd, expected.prediction.cost_usd);
    // The rebuilt scatter marks the loaded configuration as the current one.
    ASSERT_TRUE(window.scatterData().current_index.has_value());
    EXPECT_EQ(window.scatter().options[static_cast<std::size_t>(*window.scatterData().current_index)].scenario.instance,
              expected.scenario.instance);
}

TEST_F(Window, TheParetoFrontIsTheModelsFrontOfTheScatter) {
    const auto& front = window.paretoFront();
    ASSERT_FALSE(front.empty());
    const auto& options = window.scatter().options;
    // No configuration beats a front point on both time and cost.
    for (const std::size_t f : front) {
        for (const InstanceOption& o : options) {
            const bool beats = o.prediction.time_to_train_s < options[f].prediction.time_to_train_s &&
                               o.prediction.cost_usd < options[f].prediction.cost_usd;
            EXPECT_FALSE(beats);
        }
    }
}

TEST_F(Window, ABadCalibrationFileGivesAMessageNotACrash) {
    TempFile bad("{ \"schema\": \"epochcast.calibration/1\", ");
    const double before = window.prediction()->throughput_images_per_s;
    EXPECT_FALSE(window.useCalibration(QString::fromStdString(bad.path())));
    EXPECT_TRUE(window.message().contains("Calibration not loaded")) << window.message().toStdString();
    EXPECT_TRUE(window.message().contains(QString::fromStdString(bad.path())) || window.message().contains("JSON") ||
                window.message().contains("json"))
        << window.message().toStdString();
    ASSERT_TRUE(window.prediction());
    EXPECT_DOUBLE_EQ(window.prediction()->throughput_images_per_s, before);  // the old calibration stays
    EXPECT_FALSE(window.useCalibration("/nonexistent/calibration.json"));
    EXPECT_TRUE(window.message().contains("/nonexistent/calibration.json"));
}

TEST_F(Window, TheDataFreeCalibrationChangesThePrediction) {
    const Scenario s = window.scenario();
    ASSERT_TRUE(window.useCalibration("data-free"));
    const CostModel prior(Catalog::built_in(), Calibration::data_free_prior());
    EXPECT_DOUBLE_EQ(window.prediction()->throughput_images_per_s, prior.predict(s).throughput_images_per_s);
}

TEST_F(Window, PinsUpToFourAndExportsTheTableAsCsv) {
    start_on_seed000_cluster();
    ASSERT_TRUE(window.pinCurrent());
    type_into(child<QSpinBox>(window, "nodes"), 4);
    ASSERT_TRUE(window.pinCurrent());
    ASSERT_TRUE(window.pinCurrent());
    ASSERT_TRUE(window.pinCurrent());
    EXPECT_FALSE(window.pinCurrent());  // a fifth is refused
    EXPECT_EQ(window.pinCount(), 4);
    auto* table = child<QTableWidget>(window, "pinTable");
    EXPECT_EQ(table->columnCount(), 5);         // current + 4 pins, side by side
    EXPECT_EQ(table->item(1, 1)->text(), "8");  // pin 1 was on 8 nodes
    EXPECT_EQ(table->item(1, 2)->text(), "4");
    // The iteration chart has a bar for the current configuration and each pin, pin 1's on 8 nodes.
    QStringList bars;
    for (QAbstractAxis* axis : window.breakdownView()->chart()->axes()) {
        if (auto* categories = qobject_cast<QBarCategoryAxis*>(axis)) bars = categories->categories();
    }
    ASSERT_EQ(bars.size(), 5);  // in whichever order the chart stacks them (horizontal bars read top down)
    EXPECT_TRUE(bars.contains("pin 1: 8 x p3.16xlarge")) << bars.join(", ").toStdString();
    EXPECT_TRUE(bars.contains("pin 2: 4 x p3.16xlarge")) << bars.join(", ").toStdString();
    EXPECT_TRUE(bars.contains("pin 4: 4 x p3.16xlarge")) << bars.join(", ").toStdString();

    const TempFolder folder;
    const std::filesystem::path path = folder.path / "epochcast-gui-test.csv";
    ASSERT_TRUE(window.exportCsv(QString::fromStdString(path.string())));
    QFile file(QString::fromStdString(path.string()));
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(file.readAll()).split('\n', Qt::SkipEmptyParts);
    std::filesystem::remove(path);
    ASSERT_EQ(lines.size(), 6);
    EXPECT_TRUE(lines[0].startsWith("configuration,instance,nodes,gpus,batch_per_gpu"));
    const QStringList pin1 = lines[2].split(',');
    EXPECT_EQ(pin1[0], "pin 1");
    EXPECT_EQ(pin1[2], "8");
    Scenario eight = window.scenario();
    eight.nodes = 8;
    EXPECT_NEAR(pin1[9].toDouble(), direct(eight).throughput_images_per_s, 0.06);
    window.clearPins();
    EXPECT_EQ(window.pinCount(), 0);
    EXPECT_FALSE(window.exportCsv("/nonexistent/folder/x.csv"));
}

TEST_F(Window, LoadingATraceComparesPredictedWithMeasured) {
    const QString path = EPOCHCAST_SOURCE_DIR "/traces/published/seed000_multi_node_mxnet_tensorflow.json";
    ASSERT_TRUE(window.loadTrace(path));
    auto* table = child<QTableWidget>(window, "traceTable");
    ASSERT_GT(table->rowCount(), 0);
    const Trace trace = read_trace(path.toStdString(), window.model().catalog());
    const Observation& first = trace.runs.front().observation;
    EXPECT_EQ(table->item(0, 1)->text(), QString::number(first.throughput_images_per_s, 'f', 1));
    EXPECT_EQ(table->item(0, 2)->text(), QString::number(direct(first.scenario).throughput_images_per_s, 'f', 1));
    EXPECT_FALSE(window.loadTrace("/nonexistent/trace.json"));
    EXPECT_TRUE(window.message().contains("/nonexistent/trace.json"));
}

TEST_F(Window, ExportsTheViewAsPngAndSvg) {
    const TempFolder folder;
    const std::filesystem::path png = folder.path / "epochcast-gui-view.png";
    const std::filesystem::path svg = folder.path / "epochcast-gui-view.svg";
    ASSERT_TRUE(window.exportView(QString::fromStdString(png.string())));
    ASSERT_TRUE(window.exportView(QString::fromStdString(svg.string())));
    QImage image(QString::fromStdString(png.string()));
    EXPECT_GT(image.width(), 500);
    QFile file(QString::fromStdString(svg.string()));
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    EXPECT_TRUE(file.readAll().contains("<svg"));
    std::filesystem::remove(png);
    std::filesystem::remove(svg);
    EXPECT_FALSE(window.exportView(QString::fromStdString(folder / "view.bmp")));
}

#if EPOCHCAST_WITH_SIMULATOR
TEST_F(Window, SimulatesInTheBackgroundWithProgressAndShowsTheTimeline) {
    type_into(child<QSpinBox>(window, "nodes"), 2);
    QSignalSpy finished(&window, &MainWindow::simulationFinished);
    window.startSimulation(4);
    EXPECT_TRUE(finished.wait(60000));
    ASSERT_EQ(finished.count(), 1);
    EXPECT_TRUE(finished.at(0).at(0).toBool());
    EXPECT_EQ(child<QProgressBar>(window, "simulationProgress")->value(), 4);
    EXPECT_TRUE(child<QLabel>(window, "simulationSummary")->text().startsWith("Simulated"));
    EXPECT_GT(window.timelineView()->eventCount(), 0u);
    EXPECT_GT(window.timelineView()->trackCount(), 1);
}

TEST_F(Window, ASimulationCanBeCancelled) {
    type_into(child<QSpinBox>(window, "nodes"), 32);
    QSignalSpy finished(&window, &MainWindow::simulationFinished);
    window.startSimulation(400);
    EXPECT_TRUE(window.simulationRunning());
    QTest::mouseClick(child<QPushButton>(window, "cancelSimulation"), Qt::LeftButton);
    EXPECT_TRUE(finished.wait(30000));
    ASSERT_EQ(finished.count(), 1);
    EXPECT_FALSE(finished.at(0).at(0).toBool());
    EXPECT_TRUE(child<QLabel>(window, "simulationSummary")->text().contains("Cancelled"));
}
#endif

TEST(MainWindowOptions, ABadCalibrationAtStartIsAnInputError) {
    WindowOptions options;
    options.calibration = "/nonexistent/cal.json";
    EXPECT_THROW(MainWindow window(options), InputError);
}

TEST(Screenshot, WritesANonBlankPngAndExits) {
    const TempFolder folder;
    const std::filesystem::path png = folder.path / "epochcast-gui-screenshot.png";
    std::filesystem::remove(png);
    QProcess gui;
    gui.start(EPOCHCAST_GUI_PATH, {"--screenshot", QString::fromStdString(png.string())});
    ASSERT_TRUE(gui.waitForFinished(60000));
    EXPECT_EQ(gui.exitCode(), 0) << gui.readAllStandardError().toStdString();
    QImage image(QString::fromStdString(png.string()));
    ASSERT_FALSE(image.isNull());
    EXPECT_EQ(image.width(), 1500);
    // Not blank: many distinct colours.
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 7) {
        for (int x = 0; x < image.width(); x += 7) colours.insert(image.pixel(x, y));
    }
    EXPECT_GT(colours.size(), 20);
    std::filesystem::remove(png);

    QProcess bad;
    bad.start(EPOCHCAST_GUI_PATH, {"--screenshot", "/nonexistent/x.png"});
    ASSERT_TRUE(bad.waitForFinished(60000));
    EXPECT_EQ(bad.exitCode(), 2);
    EXPECT_TRUE(bad.readAllStandardError().contains("/nonexistent/x.png"));
    QProcess bad_calibration;
    bad_calibration.start(EPOCHCAST_GUI_PATH, {"--calibration", "/nonexistent/cal.json", "--screenshot",
                                               QString::fromStdString(folder / "y.png")});
    ASSERT_TRUE(bad_calibration.waitForFinished(60000));
    EXPECT_EQ(bad_calibration.exitCode(), 2);
}

/// `epochcast ARGS` (the built CLI) run by the shell, its stdout.
QString cli_output(const QString& arguments) {
    QProcess process;
    process.start("/bin/sh", {"-c", QString(EPOCHCAST_CLI_PATH) + " " + arguments});
    EXPECT_TRUE(process.waitForFinished(60000));
    EXPECT_EQ(process.exitCode(), 0) << process.readAllStandardError().toStdString();
    return QString::fromUtf8(process.readAllStandardOutput());
}

double throughput_of(const QString& json) {
    return nlohmann::json::parse(json.toStdString())["throughput_images_per_s"].get<double>();
}

TEST_F(Window, SavesOpensAndCopiesItsScenarioAsTheCommandLineReadsIt) {
    // A configuration with keys the window shows no input for (the store's size, the evaluation).
    Scenario s;
    s.instance = "p4d.24xlarge";
    s.nodes = 2;
    s.storage = Store::fsx_lustre;
    s.storage_tib = 4.8;
    s.eval_every_epochs = 2;
    s.pricing = Pricing::spot;
    window.setScenario(s);
    ASSERT_TRUE(window.prediction().has_value()) << window.message().toStdString();
    const double shown = window.prediction()->throughput_images_per_s;

    // Saved, the file is the window's configuration, hidden keys and all, and the CLI predicts it.
    const TempFolder folder;
    const QString path = QString::fromStdString(folder / "saved.json");
    ASSERT_TRUE(window.saveScenario(path));
    const std::vector<NamedScenario> saved = read_scenario_file(path.toStdString(), window.model().catalog());
    ASSERT_EQ(saved.size(), 1u);
    EXPECT_TRUE(saved[0].scenario == window.scenario());
    EXPECT_DOUBLE_EQ(saved[0].scenario.storage_tib, 4.8);
    EXPECT_DOUBLE_EQ(throughput_of(cli_output("predict --scenario '" + path + "' --json")), shown);

    // Copy as command: the clipboard's line, run, predicts the same.
    window.copyScenarioCommand();
    const QString command = QGuiApplication::clipboard()->text();
    EXPECT_EQ(command, window.scenarioCommand());
    ASSERT_TRUE(command.startsWith("epochcast predict --instance p4d.24xlarge --nodes 2 ")) << command.toStdString();
    EXPECT_TRUE(command.contains("--storage fsx-lustre --storage-tib 4.8")) << command.toStdString();
    EXPECT_DOUBLE_EQ(throughput_of(cli_output(command.mid(QString("epochcast ").size()) + " --json")), shown);

    // A list opens as its first configuration, the others pinned beside it.
    const QString list = QString::fromStdString(folder / "list.json");
    {
        QFile file(list);
        ASSERT_TRUE(file.open(QIODevice::WriteOnly));
        file.write(R"({"schema": "epochcast.scenario/1", "scenarios": [
            {"name": "a", "instance": "p5.48xlarge", "nodes": 2},
            {"name": "b", "instance": "p5.48xlarge", "nodes": 4},
            {"name": "c", "instance": "a3-highgpu-8g", "nodes": 1}]})");
    }
    ASSERT_TRUE(window.openScenario(list));
    EXPECT_EQ(window.pinCount(), 2);
    EXPECT_EQ(window.scenario().nodes, 2);
    EXPECT_EQ(window.scenario().instance, "p5.48xlarge");
    EXPECT_EQ(window.scenario().storage, Store::none);  // the file's configuration, not the last one's

    // A bad file changes nothing and says what is wrong.
    const QString bad = QString::fromStdString(folder / "bad.json");
    {
        QFile file(bad);
        ASSERT_TRUE(file.open(QIODevice::WriteOnly));
        file.write(R"({"schema": "epochcast.scenario/1", "nodes": [1, 2]})");
    }
    const Scenario before = window.scenario();
    EXPECT_FALSE(window.openScenario(bad));
    EXPECT_TRUE(window.scenario() == before);
    EXPECT_TRUE(window.message().contains("\"nodes\" is a list")) << window.message().toStdString();
}

TEST_F(Window, TheInstancePickerGroupsByCloudWithOwnedSystemsApartAndFindsAnyPartOfAName) {
    const QStringList rows = window.instanceChoices();
    ASSERT_FALSE(rows.isEmpty());
    EXPECT_EQ(rows.front(), "# AWS");
    const int owned = static_cast<int>(rows.indexOf("# Owned systems (no hourly price)"));
    ASSERT_GT(owned, 0);
    const Catalog& catalog = window.model().catalog();
    // Each row under a heading belongs to its group; owned systems only after theirs, and last.
    QString heading;
    for (int i = 0; i < rows.size(); ++i) {
        if (rows[i].startsWith("# ")) {
            heading = rows[i];
            continue;
        }
        const InstanceSpec& instance = catalog.instance(rows[i].toStdString());
        EXPECT_GT(instance.gpus, 0) << rows[i].toStdString();
        const bool is_owned = instance.cloud.empty() || instance.cloud == "owned";
        EXPECT_EQ(is_owned, i > owned) << rows[i].toStdString() << " under " << heading.toStdString();
        if (heading == "# AWS") {
            EXPECT_EQ(instance.cloud, "aws") << rows[i].toStdString();
        }
        if (heading == "# Azure") {
            EXPECT_EQ(instance.cloud, "azure") << rows[i].toStdString();
        }
        if (heading == "# Google Cloud") {
            EXPECT_EQ(instance.cloud, "gcp") << rows[i].toStdString();
        }
    }
    // What the popup shows beside a name: its GPUs and its on-demand price, as the catalog has them.
    auto* picker = child<QComboBox>(window, "instance");
    const int p5 = picker->findText("p5.48xlarge");
    ASSERT_GE(p5, 0);
    const QString price = picker->model()->index(p5, 2).data().toString();
    EXPECT_EQ(price, QString("$%1/h").arg(catalog.instance("p5.48xlarge").usd_per_hour(Pricing::on_demand), 0, 'f', 2));
    EXPECT_TRUE(picker->model()->index(p5, 1).data().toString().startsWith("8 x H100")) << price.toStdString();
    // A heading cannot be chosen.
    EXPECT_EQ(picker->model()->flags(picker->model()->index(0, 0)), Qt::NoItemFlags);

    // The search box finds by any part, in any case: "h200" lists every H200 instance, and a choice selects it.
    auto* search = child<QLineEdit>(window, "instanceSearch");
    QCompleter* completer = search->completer();
    ASSERT_NE(completer, nullptr);
    completer->setCompletionPrefix("h200");
    ASSERT_GT(completer->completionCount(), 0);
    for (int i = 0; i < completer->completionCount(); ++i) {
        completer->setCurrentRow(i);
        EXPECT_TRUE(completer->currentCompletion().contains("H200")) << completer->currentCompletion().toStdString();
    }
    // One sold by the hour on demand (p5e is sold only as a Capacity Block: the window says so, as predict does).
    QString chosen;
    for (int i = 0; i < completer->completionCount() && chosen.isEmpty(); ++i) {
        completer->setCurrentRow(i);
        if (!completer->currentCompletion().contains("no price")) chosen = completer->currentCompletion();
    }
    ASSERT_FALSE(chosen.isEmpty());
    emit completer->activated(chosen);
    EXPECT_EQ(window.scenario().instance, chosen.section("  ", 0, 0).toStdString());
    EXPECT_TRUE(window.prediction().has_value()) << window.message().toStdString();
}

TEST_F(Window, EpochsOfARecipeReadRounded) {
    Scenario s;
    s.nodes = 4;
    s.target_top1_percent = 75.9;
    s.recipe = "mlperf-lars";
    window.setScenario(s);
    const QString epochs = child<QLabel>(window, "epochsTrained")->text();
    EXPECT_TRUE(epochs.contains("by mlperf-lars")) << epochs.toStdString();
    // No figure with more than one decimal, as a person writes epochs.
    EXPECT_FALSE(epochs.contains(QRegularExpression("\\d\\.\\d\\d"))) << epochs.toStdString();
}

TEST_F(Window, GradientsOnOneNodeCrossTheGpusLinkNotTheFabric) {
    Scenario s;  // 1 x p5.48xlarge: NVLS over NVSwitch; EFA only between nodes
    window.setScenario(s);
    const QString one = child<QLabel>(window, "collective")->text();
    EXPECT_TRUE(one.contains(" over nvswitch:")) << one.toStdString();
    s.nodes = 4;
    window.setScenario(s);
    const QString four = child<QLabel>(window, "collective")->text();
    EXPECT_TRUE(four.contains(" over efa:")) << four.toStdString();
}

TEST_F(Window, AScenarioGoesFromTheCliThroughTheWindowAndPythonBackToTheCliUnchanged) {
    const TempFolder folder;
    const QString cli_file = QString::fromStdString(folder / "cli.json");
    const QString flags =
        "--instance p4d.24xlarge --nodes 2 --target-top1 75.9 --pricing spot --storage fsx-lustre --storage-tib 4.8";
    const QString by_flags = cli_output("predict " + flags + " --save-scenario '" + cli_file + "' --json");

    // The window opens what the CLI saved and saves it again: the same file, byte for byte.
    ASSERT_TRUE(window.openScenario(cli_file)) << window.message().toStdString();
    const QString gui_file = QString::fromStdString(folder / "gui.json");
    ASSERT_TRUE(window.saveScenario(gui_file));
    EXPECT_EQ(read_text_file(gui_file.toStdString(), "gui"), read_text_file(cli_file.toStdString(), "cli"));
    EXPECT_DOUBLE_EQ(window.prediction()->throughput_images_per_s, throughput_of(by_flags));

    QString last = gui_file;
#ifdef EPOCHCAST_PYTHON
    // Python reads the window's file and writes its own.
    const QString python_file = QString::fromStdString(folder / "python.json");
    QProcess python;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert("PYTHONPATH", EPOCHCAST_PYTHON_PATH);
    python.setProcessEnvironment(environment);
    python.start(EPOCHCAST_PYTHON,
                 {"-c", "import sys, epochcast; epochcast.Scenario.read(sys.argv[1]).write(sys.argv[2])", gui_file,
                  python_file});
    ASSERT_TRUE(python.waitForFinished(60000));
    ASSERT_EQ(python.exitCode(), 0) << python.readAllStandardError().toStdString();
    EXPECT_EQ(read_text_file(python_file.toStdString(), "python"), read_text_file(cli_file.toStdString(), "cli"));
    last = python_file;
#endif
    // And the CLI predicts the last file as its flags did, to the last digit.
    EXPECT_EQ(nlohmann::json::parse(cli_output("predict --scenario '" + last + "' --json").toStdString()),
              nlohmann::json::parse(by_flags.toStdString()));
}

}  // namespace
}  // namespace epochcast::gui
