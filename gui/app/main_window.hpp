// The what-if planner's main window (issue 8): inputs on the left, the model's outputs, charts,
// pinned configurations, the background simulation and measured traces on the right. Every number
// comes from model/ (CostModel, whatif), simulator/ and traces/, as in the CLI; charts come from
// gui/charts. Outputs are recomputed on every input change, synchronously (docs/performance.md
// records how long that takes).
#pragma once

#include <QMainWindow>
#include <QStringList>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gui/charts/charts.hpp"
#include "model/cost_model.hpp"
#include "model/whatif.hpp"
#include "traces/trace.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QTabWidget;
class QChartView;
class QPointF;

namespace epochcast::gui {

class TimelineView;

/// Pinned configurations at most (issue 8: up to four side by side).
inline constexpr int kMaxPins = 4;

/// The window's size when it opens (and in --screenshot): its charts are laid out to be read at it.
inline constexpr int kDefaultWidth = 1500;
inline constexpr int kDefaultHeight = 960;

/// What the window starts from: extra catalog files and a calibration, as the CLI's flags.
struct WindowOptions {
    std::vector<std::string> catalogs;     ///< --catalog files merged over the built-in catalog
    std::string calibration = "built-in";  ///< built-in, data-free or a file
};

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    /// Throws InputError when a catalog file or the calibration is bad (main() reports it).
    explicit MainWindow(const WindowOptions& options = {}, QWidget* parent = nullptr);
    ~MainWindow() override;

    /// The scenario the inputs describe.
    Scenario scenario() const;
    /// Set every input from `scenario` (one recompute at the end).
    void setScenario(const Scenario& scenario);

    /// The instance picker's rows in order: each worker instance's name, and "# " and the heading
    /// for each group's heading row (a cloud, or owned systems).
    QStringList instanceChoices() const;

    /// The current prediction, or none when the inputs are rejected (message() says why).
    const std::optional<Prediction>& prediction() const { return prediction_; }
    /// The model's message about the inputs ("" when they predict).
    QString message() const;

    /// Use the calibration by name ("built-in", "data-free") or file. On a bad file the previous
    /// calibration stays, the message line says what is wrong and false is returned.
    bool useCalibration(const QString& name_or_path);
    /// Load a trace file: its runs are compared with predictions and overlaid on the scaling chart.
    bool loadTrace(const QString& path);

    /// Write the current configuration as a scenario file (epochcast.scenario/1), whole or not at
    /// all; false, the message line saying why, when it cannot be written.
    bool saveScenario(const QString& path);
    /// Open a scenario file: its first configuration becomes the inputs; with a list, each of the
    /// others is pinned beside it first (up to kMaxPins). A bad file changes nothing: false, the
    /// message line naming what is wrong. Keys the window has no input for (a store's size, the
    /// evaluation, a spot rate) are kept with the configuration and saved with it again.
    bool openScenario(const QString& path);
    /// The `epochcast predict` line that gives the current configuration (model/scenario_file.hpp).
    QString scenarioCommand() const;
    /// Put scenarioCommand() on the clipboard.
    void copyScenarioCommand();

    /// Pin the current configuration (false when there are already kMaxPins or no prediction).
    bool pinCurrent();
    void clearPins();
    int pinCount() const { return static_cast<int>(pins_.size()); }

    /// The comparison table (current configuration, then the pins) as CSV; write it atomically.
    QString comparisonCsv() const;
    bool exportCsv(const QString& path);
    /// The window's view as PNG or SVG (by the file's suffix).
    bool exportView(const QString& path);

    /// Start / cancel the simulation of the current configuration in the background.
    void startSimulation(int iterations = 10);
    void cancelSimulation();
    bool simulationRunning() const { return simulation_thread_.joinable() && !simulation_done_; }

    /// The scatter's configurations (index = what a click on the scatter maps to) and its front;
    /// those without a positive, finite time and cost (an owned machine with no price) are left out.
    const InstanceComparison& scatter() const { return scatter_; }
    const std::vector<std::size_t>& paretoFront() const { return front_; }
    /// What the scatter chart was drawn from: each point's CostTimePoint::index is its configuration's
    /// index in scatter().options.
    const charts::CostTimeChartData& scatterData() const { return scatter_data_; }
    /// Load scatter configuration `index` into the inputs (what a click on its point does).
    void loadScatterPoint(std::size_t index);

    QChartView* scalingView() const { return scaling_view_; }
    QChartView* scatterView() const { return scatter_view_; }
    QChartView* breakdownView() const { return breakdown_view_; }
    TimelineView* timelineView() const { return timeline_view_; }
    const CostModel& model() const { return *model_; }

    /// Wall time of the last recompute (model, band, curve, scatter, charts rebuilt), in seconds.
    double lastRecomputeSeconds() const { return last_recompute_s_; }

signals:
    void recomputed();
    void simulationFinished(bool ok);

private:
    void buildInputs(QWidget* panel);
    void buildOutputs(QWidget* panel);
    void fillInstanceLists();
    void connectInputs();
    void onInstanceChanged();
    void onStrategyChanged();
    void recompute();
    void showOutputs(const ResolvedScenario& resolved);
    void clearOutputs(const QString& why);
    void updateCharts(const Scenario& scenario);
    void updateBreakdown();
    void onScatterClicked(const QPointF& point);
    void updatePinTable();
    void updateTraceTable();
    void onSimulationProgress(int done, int total);
    void onSimulationDone(std::optional<Prediction> simulated, QString error, QString timeline_path);
    void joinSimulation();
    void openCalibrationDialog();
    void openTraceDialog();
    void exportViewDialog();
    void exportCsvDialog();
    void saveScenarioDialog();
    void openScenarioDialog();
    void setMessage(const QString& text, bool error);

    std::unique_ptr<CostModel> model_;
    std::vector<std::string> catalogs_;
    bool updating_ = false;  ///< inputs being set programmatically: no recompute per field
    /// The fields the inputs do not show, as the last scenario set (opened) had them: scenario()
    /// starts from it.
    Scenario base_;

    // Inputs
    QComboBox* instance_ = nullptr;
    QLineEdit* instance_search_ = nullptr;  ///< finds an instance by any part of its name, GPU or cloud
    QLabel* instance_info_ = nullptr;
    QSpinBox* nodes_ = nullptr;
    QSpinBox* gpus_per_node_ = nullptr;
    QSpinBox* batch_ = nullptr;
    QSpinBox* global_batch_ = nullptr;  ///< 0: not fixed (batch_ rules)
    QLabel* memory_ = nullptr;
    QComboBox* precision_ = nullptr;
    QComboBox* framework_ = nullptr;
    QComboBox* loader_ = nullptr;
    QComboBox* storage_ = nullptr;  ///< where the images are read from (none: not modelled)
    QComboBox* memory_format_ = nullptr;
    QCheckBox* compiled_ = nullptr;  ///< PyTorch under torch.compile (--compile); enabled for pytorch only
    QComboBox* strategy_ = nullptr;
    QComboBox* ps_instance_ = nullptr;
    QDoubleSpinBox* ps_ratio_ = nullptr;
    QCheckBox* ps_colocated_ = nullptr;
    QSpinBox* dataset_ = nullptr;
    QDoubleSpinBox* epochs_ = nullptr;
    QDoubleSpinBox* target_ = nullptr;  ///< target top-1 accuracy, percent; 0: train `epochs_`
    QComboBox* recipe_ = nullptr;       ///< the recipe that turns the target into epochs
    QComboBox* pricing_ = nullptr;
    QCheckBox* spot_elastic_ = nullptr;  ///< spot priced elastic (--elastic-spot); enabled on spot only
    QComboBox* calibration_ = nullptr;
    QLabel* message_ = nullptr;

    // Outputs
    QLabel* throughput_ = nullptr;
    QLabel* epoch_ = nullptr;
    QLabel* time_to_train_ = nullptr;
    QLabel* epochs_out_ = nullptr;  ///< epochs trained, their band and where they come from
    QLabel* cost_ = nullptr;
    QLabel* efficiency_ = nullptr;
    QLabel* bottleneck_ = nullptr;
    QLabel* collective_ = nullptr;  ///< the algorithm, buckets and fabric of the gradient all-reduce
    QLabel* run_costs_ = nullptr;   ///< start-up, evaluation, staging and the cost's parts (issue 45)
    QChartView* breakdown_view_ = nullptr;
    QChartView* scaling_view_ = nullptr;
    QChartView* scatter_view_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    QTableWidget* pin_table_ = nullptr;
    QTableWidget* trace_table_ = nullptr;
    QLabel* trace_summary_ = nullptr;
    QPushButton* simulate_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* simulation_summary_ = nullptr;
    TimelineView* timeline_view_ = nullptr;

    // State
    std::optional<Prediction> prediction_;
    std::optional<PredictionBand> band_;
    InstanceComparison scatter_;
    std::vector<std::size_t> front_;
    charts::CostTimeChartData scatter_data_;
    struct Pin {
        Scenario scenario;
        Prediction prediction;
    };
    std::vector<Pin> pins_;
    std::optional<Trace> trace_;
    double last_recompute_s_ = 0;

    std::thread simulation_thread_;
    std::atomic<bool> simulation_cancel_{false};
    std::atomic<bool> simulation_done_{true};
    QString simulation_dir_;  ///< temporary folder for the simulation's timeline
};

}  // namespace epochcast::gui
