#include "gui/app/main_window.hpp"

#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QCompleter>
#include <QDir>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QScatterSeries>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QSvgGenerator>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QVBoxLayout>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "gui/app/timeline_view.hpp"
#include "model/billing.hpp"
#include "model/convergence.hpp"
#include "model/errors.hpp"
#include "model/observation.hpp"
#include "model/scenario_file.hpp"
#include "model/text_io.hpp"
#include "model/types.hpp"

#if EPOCHCAST_WITH_SIMULATOR
#include "simulator/prediction.hpp"
#include "simulator/simulation.hpp"
#include "simulator/timeline.hpp"
#endif

namespace epochcast::gui {
namespace {

/// Largest cluster of the scaling chart and of the scatter, in worker nodes.
constexpr int kScalingMaxNodes = 64;
constexpr int kScatterMaxNodes = 32;

QString q(std::string_view text) { return QString::fromUtf8(text.data(), static_cast<int>(text.size())); }

QString hours(double seconds) {
    if (seconds < 3600) return QString::number(seconds / 60, 'f', 1) + " min";
    return QString::number(seconds / 3600, 'f', 2) + " h";
}

/// Seconds below two minutes, else hours() ("42.0 s", "12.5 min", "2.10 h").
QString format_seconds(double seconds) {
    return seconds < 120 ? QString::number(seconds, 'f', 1) + " s" : hours(seconds);
}

/// A whole number with its thousands grouped ("53,164"), as the CLI's tables write it (format_count).
QString grouped(double value) { return q(format_count(value)); }

QString dollars(double usd) { return "$" + (usd < 100 ? QString::number(usd, 'f', 2) : grouped(usd)); }

/// dollars(usd), or "n/a" where the cluster has no price by the hour (a machine you own): never $0.00.
QString cost(double usd, bool priced) { return priced ? dollars(usd) : QString("n/a"); }

/// "$55.04/h on-demand, $25.75/h spot", or that it has no price by the hour.
QString prices_text(const InstanceSpec& instance) {
    QStringList parts;
    for (Pricing pricing : kAllPricings) {
        if (const Price* price = instance.price(pricing)) {
            parts << QString("%1/h %2").arg(dollars(price->usd_per_hour), q(to_string(pricing)));
        }
    }
    return parts.isEmpty() ? QString("no price by the hour (owned)") : parts.join(", ");
}

/// "value (low - high)" with the band of a figure.
QString banded(const QString& value, const QString& low, const QString& high) {
    return QString("<b>%1</b> &nbsp;<span style='color:gray'>(%2 &ndash; %3)</span>").arg(value, low, high);
}

void add_items(QComboBox* box, std::initializer_list<std::string_view> items) {
    for (std::string_view item : items) box->addItem(q(item));
}

/// The window's outputs of one configuration, as the comparison table and the CSV show them.
struct Column {
    QString header;
    std::vector<QString> cells;
};

const std::vector<QString>& row_names() {
    static const std::vector<QString> names = {"instance",        "nodes",           "gpus",
                                               "batch_per_gpu",   "precision",       "framework",
                                               "strategy",        "pricing",         "throughput_images_per_s",
                                               "throughput_low",  "throughput_high", "epoch_s",
                                               "time_to_train_s", "cost_usd",        "scaling_efficiency"};
    return names;
}

Column column_of(const QString& header, const Scenario& s, const Prediction& p) {
    return {header,
            {q(s.instance), QString::number(s.nodes), QString::number(p.gpus), QString::number(batch_per_gpu(p)),
             q(to_string(s.precision)), q(to_string(s.framework)), q(to_string(s.strategy)), q(to_string(s.pricing)),
             QString::number(p.throughput_images_per_s, 'f', 1), QString::number(p.interval.low, 'f', 1),
             QString::number(p.interval.high, 'f', 1), QString::number(p.epoch_s, 'f', 1),
             QString::number(p.time_to_train_s, 'f', 0), p.priced ? QString::number(p.cost_usd, 'f', 2) : QString(),
             QString::number(p.scaling_efficiency, 'f', 3)}};
}

/// Show `chart` in `view` in place of the chart there. The old chart goes later, from the event
/// loop: a click on one of its points may be what led here.
void show_chart(QChartView* view, std::unique_ptr<QChart> chart) {
    QChart* old = view->chart();
    chart->setMargins(QMargins(2, 2, 2, 2));
    view->setChart(chart.release());
    if (old) old->deleteLater();
}

/// "8 x p3.16xlarge": a configuration's cluster, as the scatter and the breakdown label it.
std::string cluster_label(const Scenario& s) { return std::to_string(s.nodes) + " x " + s.instance; }

QString csv_cell(const QString& text) {
    if (!text.contains(',') && !text.contains('"') && !text.contains('\n')) return text;
    return '"' + QString(text).replace("\"", "\"\"") + '"';
}

}  // namespace

MainWindow::MainWindow(const WindowOptions& options, QWidget* parent)
    : QMainWindow(parent),
      model_(std::make_unique<CostModel>(load_catalog(options.catalogs), load_calibration(options.calibration))),
      catalogs_(options.catalogs) {
    setWindowTitle("epochcast - what-if planner");
    auto* splitter = new QSplitter(this);
    auto* inputs = new QWidget;
    auto* outputs = new QWidget;
    buildInputs(inputs);
    buildOutputs(outputs);
    auto* scroll = new QScrollArea;
    scroll->setWidget(inputs);
    scroll->setWidgetResizable(true);
    scroll->setMinimumWidth(330);
    splitter->addWidget(scroll);
    splitter->addWidget(outputs);
    splitter->setStretchFactor(1, 1);
    setCentralWidget(splitter);

    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Open scenario..."), QKeySequence::Open, this, &MainWindow::openScenarioDialog);
    file->addAction(tr("&Save scenario..."), QKeySequence::Save, this, &MainWindow::saveScenarioDialog);
    file->addAction(tr("Copy as co&mmand"), this, &MainWindow::copyScenarioCommand);
    file->addSeparator();
    file->addAction(tr("Open &trace..."), this, &MainWindow::openTraceDialog);
    file->addAction(tr("Open &calibration..."), this, &MainWindow::openCalibrationDialog);
    file->addSeparator();
    file->addAction(tr("Export &view (PNG or SVG)..."), this, &MainWindow::exportViewDialog);
    file->addAction(tr("Export table as &CSV..."), this, &MainWindow::exportCsvDialog);
    file->addSeparator();
    file->addAction(tr("&Quit"), qApp, &QApplication::quit);

    if (options.calibration != "built-in" && !options.calibration.empty()) {
        calibration_->addItem(QString::fromStdString(options.calibration));
        calibration_->setCurrentIndex(calibration_->count() - 1);
    }
    fillInstanceLists();
    // The Scenario's defaults: PyTorch on one p5.48xlarge.
    Scenario start;
    setScenario(start);
    connectInputs();
    recompute();
}

MainWindow::~MainWindow() {
    simulation_cancel_ = true;
    joinSimulation();
}

void MainWindow::buildInputs(QWidget* panel) {
    auto* layout = new QVBoxLayout(panel);
    auto* cluster = new QGroupBox(tr("Cluster"));
    auto* form = new QFormLayout(cluster);
    instance_ = new QComboBox;
    instance_->setObjectName("instance");
    instance_info_ = new QLabel;
    instance_info_->setObjectName("instanceInfo");
    instance_info_->setWordWrap(true);
    nodes_ = new QSpinBox;
    nodes_->setObjectName("nodes");
    nodes_->setRange(1, 4096);
    gpus_per_node_ = new QSpinBox;
    gpus_per_node_->setObjectName("gpusPerNode");
    gpus_per_node_->setRange(1, 16);
    batch_ = new QSpinBox;
    batch_->setObjectName("batchPerGpu");
    batch_->setRange(1, 8192);
    global_batch_ = new QSpinBox;
    global_batch_->setObjectName("globalBatch");
    global_batch_->setRange(0, 10'000'000);
    global_batch_->setGroupSeparatorShown(true);
    global_batch_->setSpecialValueText(tr("not fixed"));
    global_batch_->setToolTip(
        tr("Hold the global batch fixed as GPUs are added: the per-GPU batch is it over the GPUs"));
    memory_ = new QLabel;
    memory_->setObjectName("memory");
    memory_->setWordWrap(true);
    precision_ = new QComboBox;
    precision_->setObjectName("precision");
    add_items(precision_, {to_string(Precision::amp), to_string(Precision::bf16), to_string(Precision::tf32),
                           to_string(Precision::fp32)});
    precision_->setToolTip(
        tr("tf32: fp32 tensors on TF32 tensor cores, what PyTorch and TensorFlow run 'fp32' "
           "convolutions as on A100 and later; fp32: strict"));
    framework_ = new QComboBox;
    framework_->setObjectName("framework");
    for (const Framework f : kAllFrameworks) framework_->addItem(q(to_string(f)));
    loader_ = new QComboBox;
    loader_->setObjectName("loader");
    add_items(loader_, {to_string(Loader::framework_default), to_string(Loader::cpu), to_string(Loader::dali_cpu),
                        to_string(Loader::dali), to_string(Loader::synthetic)});
    loader_->setToolTip(
        tr("How images reach the GPU: default is the framework's (cpu for pytorch, tensorflow "
           "and epochcast, dali for mxnet); dali decodes on the GPU"));
    storage_ = new QComboBox;
    storage_->setObjectName("storage");
    add_items(storage_, {to_string(Store::none), to_string(Store::local_nvme), to_string(Store::fsx_lustre),
                         to_string(Store::s3), to_string(Store::efs)});
    storage_->setToolTip(
        tr("Where the images are read from: none leaves the store out; the others bound the input "
           "pipeline by what the store delivers, add the staging copy from S3 and the store's cost "
           "(fsx-lustre at its smallest, 1.2 TiB at 125 MB/s per TiB)"));
    memory_format_ = new QComboBox;
    memory_format_->setObjectName("memoryFormat");
    add_items(memory_format_, {to_string(MemoryFormat::channels_last), to_string(MemoryFormat::nchw)});
    memory_format_->setToolTip(
        tr("The convolutions' layout: channels_last as NVIDIA's tuned code runs, or nchw, "
           "PyTorch's default memory format"));
    compiled_ = new QCheckBox(tr("torch.compile (rather than eager)"));
    compiled_->setObjectName("compiled");
    compiled_->setToolTip(
        tr("PyTorch under torch.compile (TorchInductor's default mode): the eager curve carried by one "
           "measured pair, its band wider at small batches (docs/model.md, eq. C9)"));
    strategy_ = new QComboBox;
    strategy_->setObjectName("strategy");
    add_items(strategy_, {to_string(Strategy::nccl), to_string(Strategy::ring), to_string(Strategy::hierarchical),
                          to_string(Strategy::tree), to_string(Strategy::ps)});
    ps_instance_ = new QComboBox;
    ps_instance_->setObjectName("psInstance");
    ps_ratio_ = new QDoubleSpinBox;
    ps_ratio_->setObjectName("psRatio");
    ps_ratio_->setRange(0.125, 16);
    ps_ratio_->setSingleStep(0.5);
    ps_ratio_->setDecimals(3);
    ps_ratio_->setValue(2);  // seed 000's MXNet cluster: 16 servers for 8 worker nodes
    ps_colocated_ = new QCheckBox(tr("co-located (one server per worker node)"));
    ps_colocated_->setObjectName("psColocated");
    instance_search_ = new QLineEdit;
    instance_search_->setObjectName("instanceSearch");
    instance_search_->setPlaceholderText(tr("Find: H100, azure, p5, a3-mega..."));
    instance_search_->setClearButtonEnabled(true);
    form->addRow(tr("Instance type"), instance_);
    form->addRow(QString(), instance_search_);
    form->addRow(instance_info_);
    form->addRow(tr("Nodes"), nodes_);
    form->addRow(tr("GPUs per node"), gpus_per_node_);
    form->addRow(tr("Batch per GPU"), batch_);
    form->addRow(tr("Global batch"), global_batch_);
    form->addRow(memory_);
    form->addRow(tr("Precision"), precision_);
    form->addRow(tr("Framework"), framework_);
    form->addRow(tr("Data loader"), loader_);
    form->addRow(tr("Storage"), storage_);
    form->addRow(tr("Memory format"), memory_format_);
    form->addRow(QString(), compiled_);
    form->addRow(tr("Strategy"), strategy_);
    form->addRow(tr("Server instance"), ps_instance_);
    form->addRow(tr("Servers per node"), ps_ratio_);
    form->addRow(ps_colocated_);
    layout->addWidget(cluster);

    auto* run = new QGroupBox(tr("Training run"));
    auto* run_form = new QFormLayout(run);
    dataset_ = new QSpinBox;
    dataset_->setObjectName("datasetImages");
    dataset_->setRange(1, 2'000'000'000);
    dataset_->setGroupSeparatorShown(true);
    epochs_ = new QDoubleSpinBox;
    epochs_->setObjectName("epochs");
    epochs_->setRange(0.01, 10000);
    epochs_->setDecimals(2);
    target_ = new QDoubleSpinBox;
    target_->setObjectName("targetTop1");
    target_->setRange(0, 99.9);
    target_->setDecimals(1);
    target_->setSingleStep(0.1);
    target_->setSpecialValueText(tr("none (train the epochs above)"));
    target_->setSuffix(" %");
    target_->setToolTip(
        tr("Target ImageNet top-1 accuracy: the epochs become what the recipe needs at the global batch "
           "(docs/model.md, \"Time to accuracy\")"));
    recipe_ = new QComboBox;
    recipe_->setObjectName("recipe");
    for (const std::string& name : Convergence::built_in().recipe_names())
        recipe_->addItem(QString::fromStdString(name));
    recipe_->setCurrentText(QString::fromStdString(Convergence::built_in().default_recipe));
    recipe_->setEnabled(false);
    pricing_ = new QComboBox;
    pricing_->setObjectName("pricing");
    for (Pricing pricing : kAllPricings) pricing_->addItem(q(to_string(pricing)));
    spot_elastic_ = new QCheckBox(tr("elastic: on without a lost node until its replacement joins"));
    spot_elastic_->setObjectName("spotElastic");
    spot_elastic_->setToolTip(
        tr("Price the spot run elastic (predict --elastic-spot; docs/model.md, eq. X7), as seed 003's dynamic "
           "training: needs 2 nodes or more and no dedicated parameter servers"));
    spot_elastic_->setEnabled(false);
    calibration_ = new QComboBox;
    calibration_->setObjectName("calibration");
    calibration_->addItems({"built-in", "data-free"});
    auto* open_calibration = new QPushButton(tr("Open..."));
    auto* calibration_row = new QHBoxLayout;
    calibration_row->addWidget(calibration_, 1);
    calibration_row->addWidget(open_calibration);
    run_form->addRow(tr("Dataset images"), dataset_);
    run_form->addRow(tr("Epochs"), epochs_);
    run_form->addRow(tr("Target top-1"), target_);
    run_form->addRow(tr("Recipe"), recipe_);
    run_form->addRow(tr("Pricing"), pricing_);
    run_form->addRow(QString(), spot_elastic_);
    run_form->addRow(tr("Calibration"), calibration_row);
    layout->addWidget(run);
    connect(open_calibration, &QPushButton::clicked, this, &MainWindow::openCalibrationDialog);

    message_ = new QLabel;
    message_->setObjectName("message");
    message_->setWordWrap(true);
    layout->addWidget(message_);

    auto* pin_row = new QHBoxLayout;
    auto* pin = new QPushButton(tr("Pin for comparison"));
    pin->setObjectName("pin");
    auto* clear = new QPushButton(tr("Clear pins"));
    clear->setObjectName("clearPins");
    pin_row->addWidget(pin);
    pin_row->addWidget(clear);
    layout->addLayout(pin_row);
    connect(pin, &QPushButton::clicked, this, [this] { pinCurrent(); });
    connect(clear, &QPushButton::clicked, this, &MainWindow::clearPins);
    layout->addStretch(1);
}

void MainWindow::buildOutputs(QWidget* panel) {
    auto* layout = new QVBoxLayout(panel);
    auto* figures = new QGroupBox(tr("Prediction (95% band in brackets)"));
    auto* grid = new QGridLayout(figures);
    auto add_figure = [&](int row, int column, const QString& name, const char* object) {
        auto* value = new QLabel;
        value->setObjectName(object);
        value->setTextFormat(Qt::RichText);
        grid->addWidget(new QLabel(name), row, column * 2);
        grid->addWidget(value, row, column * 2 + 1);
        return value;
    };
    throughput_ = add_figure(0, 0, tr("Throughput"), "throughput");
    epoch_ = add_figure(1, 0, tr("Epoch"), "epoch");
    time_to_train_ = add_figure(2, 0, tr("Time to train"), "timeToTrain");
    cost_ = add_figure(0, 1, tr("Cost"), "cost");
    efficiency_ = add_figure(1, 1, tr("Scaling efficiency"), "efficiency");
    bottleneck_ = add_figure(2, 1, tr("Bound by"), "bottleneck");
    collective_ = add_figure(3, 0, tr("Gradients"), "collective");
    epochs_out_ = add_figure(3, 1, tr("Epochs"), "epochsTrained");
    run_costs_ = add_figure(4, 0, tr("Around the run"), "runCosts");
    grid->addWidget(run_costs_, 4, 1, 1, 3);
    grid->setColumnStretch(1, 1);
    grid->setColumnStretch(3, 1);
    layout->addWidget(figures);

    // The charts come from gui/charts (as the CLI's --plot), rebuilt on every recompute.
    breakdown_view_ = new QChartView;
    breakdown_view_->setObjectName("breakdownView");
    breakdown_view_->setRenderHint(QPainter::Antialiasing);
    // Five bars at most (the current configuration and four pins): the rest of the height goes to
    // the scaling and scatter charts, whose axis titles are cut short when they get less.
    breakdown_view_->setMinimumHeight(150);
    breakdown_view_->setMaximumHeight(170);
    layout->addWidget(breakdown_view_);

    scaling_view_ = new QChartView;
    scaling_view_->setObjectName("scalingView");
    scaling_view_->setRenderHint(QPainter::Antialiasing);
    scatter_view_ = new QChartView;
    scatter_view_->setObjectName("scatterView");
    scatter_view_->setRenderHint(QPainter::Antialiasing);
    scatter_view_->setToolTip(tr("Click a point to load that configuration"));
    auto* charts = new QSplitter(Qt::Horizontal);
    charts->addWidget(scaling_view_);
    charts->addWidget(scatter_view_);
    charts->setMinimumHeight(360);
    layout->addWidget(charts, 4);

    tabs_ = new QTabWidget;
    tabs_->setObjectName("tabs");
    pin_table_ = new QTableWidget;
    pin_table_->setObjectName("pinTable");
    pin_table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    tabs_->addTab(pin_table_, tr("Compare"));

    auto* simulation = new QWidget;
    auto* sim_layout = new QVBoxLayout(simulation);
    auto* sim_row = new QHBoxLayout;
    simulate_ = new QPushButton(tr("Simulate this configuration"));
    simulate_->setObjectName("simulate");
    cancel_ = new QPushButton(tr("Cancel"));
    cancel_->setObjectName("cancelSimulation");
    cancel_->setEnabled(false);
    progress_ = new QProgressBar;
    progress_->setObjectName("simulationProgress");
    progress_->setRange(0, 1);
    progress_->setValue(0);
    sim_row->addWidget(simulate_);
    sim_row->addWidget(cancel_);
    sim_row->addWidget(progress_, 1);
    simulation_summary_ = new QLabel(tr("SimGrid replays each GPU's layers and every gradient transfer."));
    simulation_summary_->setObjectName("simulationSummary");
    simulation_summary_->setWordWrap(true);
    timeline_view_ = new TimelineView;
    timeline_view_->setObjectName("timeline");
    sim_layout->addLayout(sim_row);
    sim_layout->addWidget(simulation_summary_);
    sim_layout->addWidget(timeline_view_, 1);
    tabs_->addTab(simulation, tr("Simulation"));
    connect(simulate_, &QPushButton::clicked, this, [this] { startSimulation(); });
    connect(cancel_, &QPushButton::clicked, this, &MainWindow::cancelSimulation);
#if !EPOCHCAST_WITH_SIMULATOR
    simulate_->setEnabled(false);
    simulation_summary_->setText(
        tr("This build has no SimGrid simulator (install libsimgrid-dev and configure again)."));
#endif

    auto* traces = new QWidget;
    auto* trace_layout = new QVBoxLayout(traces);
    auto* open_trace = new QPushButton(tr("Open trace..."));
    trace_summary_ = new QLabel(tr("Open an epochcast.trace/1 file to put its measured runs beside the model."));
    trace_summary_->setObjectName("traceSummary");
    trace_summary_->setWordWrap(true);
    trace_table_ = new QTableWidget;
    trace_table_->setObjectName("traceTable");
    trace_table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    auto* trace_row = new QHBoxLayout;
    trace_row->addWidget(open_trace);
    trace_row->addWidget(trace_summary_, 1);
    trace_layout->addLayout(trace_row);
    trace_layout->addWidget(trace_table_, 1);
    tabs_->addTab(traces, tr("Measured"));
    connect(open_trace, &QPushButton::clicked, this, &MainWindow::openTraceDialog);
    layout->addWidget(tabs_, 1);
}

namespace {

/// The order the instance picker groups clouds in: the three large ones, any other, owned systems last.
int cloud_rank(const std::string& cloud) {
    if (cloud == "aws") return 0;
    if (cloud == "azure") return 1;
    if (cloud == "gcp") return 2;
    return cloud.empty() || cloud == "owned" ? 4 : 3;
}

QString cloud_heading(const std::string& cloud) {
    if (cloud == "aws") return QObject::tr("AWS");
    if (cloud == "azure") return QObject::tr("Azure");
    if (cloud == "gcp") return QObject::tr("Google Cloud");
    if (cloud.empty() || cloud == "owned") return QObject::tr("Owned systems (no hourly price)");
    return QString::fromStdString(cloud);
}

}  // namespace

void MainWindow::fillInstanceLists() {
    const QString current = instance_->currentText(), current_ps = ps_instance_->currentText();
    const bool was = updating_;
    updating_ = true;
    const Catalog& catalog = model_->catalog();
    // Workers: grouped by cloud (owned systems apart, last), then by GPU, each with its GPUs and its
    // on-demand price; a group's heading is a row that cannot be chosen. The item's text is the
    // instance's name (what the combo box shows and scenario() reads), its data the name too.
    std::vector<const InstanceSpec*> workers;
    for (const InstanceSpec& i : catalog.instances()) {
        if (i.gpus > 0) workers.push_back(&i);
    }
    std::stable_sort(workers.begin(), workers.end(), [&](const InstanceSpec* a, const InstanceSpec* b) {
        const int ra = cloud_rank(a->cloud), rb = cloud_rank(b->cloud);
        if (ra != rb) return ra < rb;
        if (a->cloud != b->cloud) return a->cloud < b->cloud;
        if (a->gpu != b->gpu) return a->gpu < b->gpu;
        const double pa = a->usd_per_hour(Pricing::on_demand), pb = b->usd_per_hour(Pricing::on_demand);
        if (pa != pb) return pa < pb;
        return a->name < b->name;
    });
    auto* items = new QStandardItemModel(0, 3, instance_);
    QStringList searchable;
    std::string group = "\x01";
    for (const InstanceSpec* i : workers) {
        const std::string cloud = cloud_rank(i->cloud) == 4 ? "owned" : i->cloud;
        if (cloud != group) {
            group = cloud;
            auto* heading = new QStandardItem(cloud_heading(cloud));
            heading->setFlags(Qt::NoItemFlags);  // not a choice
            QFont bold = heading->font();
            bold.setBold(true);
            heading->setFont(bold);
            items->appendRow({heading, new QStandardItem, new QStandardItem});
        }
        const QString name = QString::fromStdString(i->name);
        auto* item = new QStandardItem(name);
        item->setData(name, Qt::UserRole);
        const double usd = i->usd_per_hour(Pricing::on_demand);
        const QString gpus = QString("%1 x %2").arg(i->gpus).arg(QString::fromStdString(catalog.gpu_of(*i).name));
        const QString price = usd > 0 ? QString("$%1/h").arg(usd, 0, 'f', 2) : tr("no price");
        item->setToolTip(gpus + ", " + price);
        items->appendRow({item, new QStandardItem(gpus), new QStandardItem(price)});
        searchable << name + "  " + gpus + "  " + cloud_heading(cloud) + "  " + price;
    }
    instance_->setModel(items);
    auto* view = new QTableView;
    view->horizontalHeader()->hide();
    view->verticalHeader()->hide();
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setShowGrid(false);
    instance_->setView(view);
    view->resizeColumnsToContents();
    view->setMinimumWidth(view->horizontalHeader()->length() + 24);
    instance_->setModelColumn(0);
    // The search box completes on any part of a name, GPU, cloud or price; a choice selects it.
    auto* completer = new QCompleter(searchable, instance_search_);
    completer->setFilterMode(Qt::MatchContains);
    completer->setCaseSensitivity(Qt::CaseInsensitive);
    instance_search_->setCompleter(completer);
    connect(completer, qOverload<const QString&>(&QCompleter::activated), this, [this](const QString& text) {
        instance_->setCurrentText(text.section("  ", 0, 0));
        instance_search_->clear();
    });

    // Servers: CPU-only instances first (their usual role), then the rest.
    ps_instance_->clear();
    for (const InstanceSpec& i : catalog.instances()) {
        if (i.gpus == 0) ps_instance_->addItem(QString::fromStdString(i.name));
    }
    for (const InstanceSpec& i : catalog.instances()) {
        if (i.gpus > 0) ps_instance_->addItem(QString::fromStdString(i.name));
    }
    instance_->setCurrentText(current.isEmpty() ? QString::fromStdString(Scenario{}.instance) : current);
    if (!current_ps.isEmpty()) ps_instance_->setCurrentText(current_ps);
    updating_ = was;
}

QStringList MainWindow::instanceChoices() const {
    QStringList names;
    for (int row = 0; row < instance_->count(); ++row) {
        const QString name = instance_->itemData(row, Qt::UserRole).toString();
        names << (name.isEmpty() ? "# " + instance_->itemText(row) : name);
    }
    return names;
}

void MainWindow::connectInputs() {
    auto changed = [this] { recompute(); };
    connect(instance_, &QComboBox::currentIndexChanged, this, [this] {
        onInstanceChanged();
        recompute();
    });
    connect(strategy_, &QComboBox::currentIndexChanged, this, [this] {
        onStrategyChanged();
        recompute();
    });
    connect(ps_colocated_, &QCheckBox::toggled, this, [this] {
        onStrategyChanged();
        recompute();
    });
    for (QSpinBox* box : {nodes_, gpus_per_node_, batch_, dataset_})
        connect(box, &QSpinBox::valueChanged, this, changed);
    connect(global_batch_, &QSpinBox::valueChanged, this, [this](int value) {
        batch_->setEnabled(value == 0);  // a fixed global batch sets the per-GPU batch from the GPUs
        recompute();
    });
    for (QDoubleSpinBox* box : {ps_ratio_, epochs_}) connect(box, &QDoubleSpinBox::valueChanged, this, changed);
    connect(target_, &QDoubleSpinBox::valueChanged, this, [this](double value) {
        epochs_->setEnabled(value == 0);  // a target makes the epochs an output
        recipe_->setEnabled(value > 0);
        recompute();
    });
    for (QComboBox* box :
         {precision_, framework_, loader_, storage_, memory_format_, ps_instance_, pricing_, recipe_}) {
        connect(box, &QComboBox::currentIndexChanged, this, changed);
    }
    connect(pricing_, &QComboBox::currentIndexChanged, this,
            [this] { spot_elastic_->setEnabled(pricing_->currentText() == q(to_string(Pricing::spot))); });
    connect(spot_elastic_, &QCheckBox::toggled, this, changed);
    connect(framework_, &QComboBox::currentIndexChanged, this,
            [this] { compiled_->setEnabled(framework_->currentText() == q(to_string(Framework::pytorch))); });
    connect(compiled_, &QCheckBox::toggled, this, changed);
    connect(calibration_, &QComboBox::currentIndexChanged, this, [this] {
        if (!updating_) useCalibration(calibration_->currentText());
    });
}

void MainWindow::onInstanceChanged() {
    const std::string name = instance_->currentData(Qt::UserRole).toString().toStdString();
    if (name.empty()) return;  // a group's heading, or nothing yet
    const InstanceSpec& i = model_->catalog().instance(name);
    const GpuSpec& gpu = model_->catalog().gpu_of(i);
    instance_info_->setText(
        QString("%1 x %2 (%3 GiB), %4 vCPUs, %5 Gbit/s%6<br>%7")
            .arg(i.gpus)
            .arg(QString::fromStdString(gpu.name))
            .arg(gpu.memory_gib)
            .arg(i.vcpus)
            .arg(i.network_gbps)
            .arg(QString(", %1%2%3")
                     .arg(q(to_string(i.interconnect)))
                     .arg(i.nics > 1 ? QString(" x %1").arg(i.nics) : QString())
                     .arg(i.intra_node_link.empty() ? QString()
                                                    : QString(", %1%2").arg(QString::fromStdString(i.intra_node_link),
                                                                            i.nvswitch ? " + NVSwitch" : "")))
            .arg(prices_text(i)));
    const bool was = updating_;
    updating_ = true;
    const bool all = gpus_per_node_->value() == gpus_per_node_->maximum();
    gpus_per_node_->setMaximum(i.gpus);
    if (all) gpus_per_node_->setValue(i.gpus);
    updating_ = was;
}

void MainWindow::onStrategyChanged() {
    const bool ps = strategy_->currentText() == q(to_string(Strategy::ps));
    ps_colocated_->setEnabled(ps);
    ps_instance_->setEnabled(ps && !ps_colocated_->isChecked());
    ps_ratio_->setEnabled(ps && !ps_colocated_->isChecked());
}

Scenario MainWindow::scenario() const {
    Scenario s = base_;
    s.instance = instance_->currentText().toStdString();
    s.nodes = nodes_->value();
    // "All the instance's GPUs" (0) stays so while the box shows all of them, as the CLI leaves the flag out.
    const bool all_gpus = base_.gpus_per_node == 0 && gpus_per_node_->value() == gpus_per_node_->maximum();
    s.gpus_per_node = all_gpus ? 0 : gpus_per_node_->value();
    s.batch_per_gpu = batch_->value();
    s.global_batch = global_batch_->value();
    s.precision = parse_precision(precision_->currentText().toStdString());
    s.framework = parse_framework(framework_->currentText().toStdString());
    s.loader = parse_loader(loader_->currentText().toStdString());
    s.storage = parse_store(storage_->currentText().toStdString());
    s.memory_format = parse_memory_format(memory_format_->currentText().toStdString());
    s.compiled = s.framework == Framework::pytorch && compiled_->isChecked();
    s.strategy = parse_strategy(strategy_->currentText().toStdString());
    if (s.strategy == Strategy::ps) {
        s.ps_colocated = ps_colocated_->isChecked();
        if (!s.ps_colocated) {
            s.ps_instance = ps_instance_->currentText().toStdString();
            s.ps_nodes = ps_nodes_for(ps_ratio_->value(), s.nodes);
        }
    }
    s.dataset_images = dataset_->value();
    s.epochs = epochs_->value();
    if (target_->value() > 0) {
        s.target_top1_percent = target_->value();
        // The model's default recipe stays "the default" (no recipe named) where none was named.
        const std::string recipe = recipe_->currentText().toStdString();
        s.recipe = base_.recipe.empty() && recipe == model_->convergence().default_recipe_for(s.model) ? "" : recipe;
    }
    s.pricing = parse_pricing(pricing_->currentText().toStdString());
    s.spot_elastic = s.pricing == Pricing::spot && spot_elastic_->isChecked();
    return s;
}

void MainWindow::setScenario(const Scenario& s) {
    const bool was = updating_;
    updating_ = true;
    base_ = s;
    instance_->setCurrentText(QString::fromStdString(s.instance));
    onInstanceChanged();
    const int gpus = model_->catalog().instance(s.instance).gpus;
    gpus_per_node_->setValue(s.gpus_per_node > 0 ? s.gpus_per_node : gpus);
    nodes_->setValue(s.nodes);
    batch_->setValue(s.batch_per_gpu);
    global_batch_->setValue(s.global_batch);
    batch_->setEnabled(s.global_batch == 0);
    precision_->setCurrentText(q(to_string(s.precision)));
    framework_->setCurrentText(q(to_string(s.framework)));
    loader_->setCurrentText(q(to_string(s.loader)));
    storage_->setCurrentText(q(to_string(s.storage)));
    memory_format_->setCurrentText(q(to_string(s.memory_format)));
    compiled_->setChecked(s.compiled);
    strategy_->setCurrentText(q(to_string(s.strategy)));
    ps_colocated_->setChecked(s.ps_colocated);
    if (!s.ps_instance.empty()) ps_instance_->setCurrentText(QString::fromStdString(s.ps_instance));
    if (s.strategy == Strategy::ps && !s.ps_colocated && s.nodes > 0) ps_ratio_->setValue(ps_ratio(s));
    onStrategyChanged();
    dataset_->setValue(static_cast<int>(s.dataset_images));
    epochs_->setValue(s.epochs);
    target_->setValue(s.target_top1_percent);
    epochs_->setEnabled(s.target_top1_percent == 0);
    recipe_->setEnabled(s.target_top1_percent > 0);
    if (!s.recipe.empty()) recipe_->setCurrentText(QString::fromStdString(s.recipe));
    pricing_->setCurrentText(q(to_string(s.pricing)));  // enables spot_elastic_ on spot (connectInputs)
    spot_elastic_->setChecked(s.spot_elastic);
    updating_ = was;
    recompute();
}

QString MainWindow::message() const { return message_->text(); }

void MainWindow::setMessage(const QString& text, bool error) {
    message_->setText(text);
    message_->setStyleSheet(error ? "color: #b00020;" : "color: gray;");
    if (error) statusBar()->showMessage(text, 10000);
}

void MainWindow::recompute() {
    if (updating_) return;
    QElapsedTimer timer;
    timer.start();
    const Scenario s = scenario();
    try {
        const ResolvedScenario resolved = model_->resolve(s);
        prediction_ = model_->checked_predict(resolved);
        band_ = prediction_band(resolved, *prediction_);
        const GpuSpec& gpu = model_->catalog().gpu_of(model_->catalog().instance(s.instance));
        memory_->setText(QString("needs %1 GiB of the GPU's %2 GiB")
                             .arg(prediction_->memory_per_gpu_GiB, 0, 'f', 1)
                             .arg(gpu.memory_gib));
        memory_->setStyleSheet("color: gray;");
        batch_->setStyleSheet("");
        std::string note = curve_origin_note(gpu.name, s, resolved.curve_origin);
        if (s.compiled) note += (note.empty() ? "" : " ") + compiled_note();
        setMessage(note.empty() ? QString() : QString::fromStdString(note), false);
        showOutputs(resolved);
    } catch (const InfeasibleError& error) {
        memory_->setText(tr("does not fit: %1").arg(error.what()));
        memory_->setStyleSheet("color: #b00020; font-weight: bold;");
        batch_->setStyleSheet("background: #ffd7d7;");
        clearOutputs(error.what());
    } catch (const InputError& error) {
        memory_->clear();
        batch_->setStyleSheet("");
        clearOutputs(error.what());
    }
    updateCharts(s);
    updateBreakdown();
    updatePinTable();
    last_recompute_s_ = static_cast<double>(timer.nsecsElapsed()) * 1e-9;
    emit recomputed();
}

void MainWindow::showOutputs(const ResolvedScenario&) {
    const Prediction& p = *prediction_;
    const PredictionBand& b = *band_;
    throughput_->setText(
        banded(grouped(p.throughput_images_per_s) + " images/s", grouped(p.interval.low), grouped(p.interval.high)));
    epoch_->setText(banded(QString::number(p.epoch_s, 'f', 1) + " s", QString::number(b.fast.epoch_s, 'f', 1),
                           QString::number(b.slow.epoch_s, 'f', 1)));
    time_to_train_->setText(
        banded(hours(p.time_to_train_s), hours(b.fast.time_to_train_s), hours(b.slow.time_to_train_s)));
    QString epochs = p.epochs_interval.high > p.epochs_interval.low
                         ? banded(QString::number(p.epochs, 'f', 1), QString::number(p.epochs_interval.low, 'f', 1),
                                  QString::number(p.epochs_interval.high, 'f', 1))
                         : QString::number(p.epochs, 'f', p.epochs == std::round(p.epochs) ? 0 : 1);
    if (p.epochs_basis != EpochsBasis::given) {
        epochs += " " + tr("by %1").arg(QString::fromStdString(
                            epochs_source(model_->convergence(), p.epochs_recipe, p.epochs_basis)));
    }
    if (p.global_batch_beyond_published) {
        epochs += " <span style=\"color: #b00020; font-weight: bold;\">" +
                  tr("global batch %1 beyond every published recipe").arg(p.global_batch) + "</span>";
    }
    epochs_out_->setText(epochs);
    if (p.priced) {
        QString cost = banded(dollars(p.cost_usd), dollars(b.fast.cost_usd), dollars(b.slow.cost_usd));
        // Sold whole (eq. H1): what is paid beside the run's share.
        if (billed_whole(p.pricing)) {
            cost += " " + tr("(the run's share); bill %1 for %2")
                              .arg(dollars(p.bill_usd), q(billing_text(p.pricing, p.billed_hours_per_node)));
        }
        cost_->setText(cost);
    } else {
        cost_->setText(tr("n/a (no price by the hour)"));
    }
    // Communication and waiting against one GPU under the same input; the input's own bound beside it.
    QString efficiency = banded(QString::number(100 * p.scaling_efficiency, 'f', 1) + " %",
                                QString::number(100 * b.slow.scaling_efficiency, 'f', 1),
                                QString::number(100 * b.fast.scaling_efficiency, 'f', 1));
    if (p.input_efficiency < 0.9995) {
        efficiency += tr("; the input pipeline feeds %1 % of a GPU's rate").arg(100 * p.input_efficiency, 0, 'f', 1);
    }
    efficiency_->setText(efficiency);
    collective_->setText(
        QString("%1 x %2 over %3: %4 ms, %5 ms exposed")
            .arg(q(to_string(p.algorithm)))
            .arg(p.buckets)
            .arg(q(model_->catalog().instance(scenario().instance).gradient_link(p.nodes, p.interconnect)))
            .arg(p.communication_s * 1e3, 0, 'f', 2)
            .arg(p.exposed_communication_s * 1e3, 0, 'f', 2));
    bottleneck_->setText(QString("<b>%1</b> (%2 GPUs, %3 images per iteration, %4)")
                             .arg(q(to_string(p.bottleneck)))
                             .arg(p.gpus)
                             .arg(p.global_batch)
                             .arg(p.priced ? dollars(p.cluster_usd_per_hour) + "/h" : tr("no price by the hour")));
    // Start-up, evaluation passes, the staging copy, spot's interruptions and the cost's parts
    // (issue 45; docs/model.md, eqs. L1, E1, E2, F1-F8, X1-X4, X7).
    QString around = tr("start-up %1").arg(format_seconds(p.startup_s));
    around += p.evaluations > 0 ? tr(", %1 evaluations x %2 (every %3 epochs%4)")
                                      .arg(p.evaluations, 0, 'f', 0)
                                      .arg(format_seconds(p.evaluation_s))
                                      .arg(p.eval_every_epochs)
                                      .arg(p.eval_every_from_recipe ? tr(", the recipe's") : QString())
                                : tr(", no evaluation");
    if (p.spot.modelled) {
        around += tr("; spot: %1 interruptions expected (%2 per node-hour), %3 of work lost and %4 down, "
                     "checkpoint every %5")
                      .arg(p.spot.expected_interruptions, 0, 'f', 1)
                      .arg(p.spot.interruptions_per_node_hour, 0, 'g', 3)
                      .arg(format_seconds(p.spot.expected_lost_work_s))
                      .arg(format_seconds(p.spot.expected_downtime_s))
                      .arg(format_seconds(p.spot.checkpoint_interval_s));
        // The same run going on without a lost node until its replacement joins (eq. X7, seed 003),
        // or, where the run is priced so, the run that waits for each replacement instead.
        if (p.spot.elastic_priced) {
            around += tr("; priced elastic, waiting for each replacement instead: %1%2")
                          .arg(format_seconds(p.spot.waiting_time_to_train_s))
                          .arg(p.priced ? ", " + dollars(p.spot.waiting_cost_usd) : QString());
        } else if (p.spot.elastic) {
            around += tr("; elastic (on without a lost node until its replacement joins): %1%2")
                          .arg(format_seconds(p.spot.elastic_time_to_train_s))
                          .arg(p.priced ? ", " + dollars(p.spot.elastic_cost_usd) : QString());
        }
    }
    if (p.storage != Store::none) {
        around += tr("; %1: staging %2, reads %3 of %4 GB/s; storage %5, data transfer %6")
                      .arg(q(to_string(p.storage)))
                      .arg(format_seconds(p.staging_s))
                      .arg(p.storage_read_GBps > 0 ? QString::number(p.storage_read_GBps, 'f', 2) : tr("unbound"))
                      .arg(QString::number(p.demanded_read_GBps, 'f', 2))
                      .arg(dollars(p.storage_usd))
                      .arg(dollars(p.data_transfer_usd));
        if (p.priced) around += tr(", instances %1").arg(dollars(p.cluster_usd));
        // The store bounds the epochs before each node's page cache is warm (eqs. F7, F8).
        if (p.first_epoch_bottleneck == Bottleneck::storage && p.bottleneck != Bottleneck::storage) {
            around += tr("; the store bounds the first epoch (%1 images/s), each node's page cache serves later ones")
                          .arg(QString::number(p.first_epoch_images_per_s, 'f', 0));
        }
    }
    run_costs_->setText(around);
}

void MainWindow::clearOutputs(const QString& why) {
    prediction_.reset();
    band_.reset();
    for (QLabel* label :
         {throughput_, epoch_, time_to_train_, cost_, efficiency_, bottleneck_, collective_, epochs_out_, run_costs_}) {
        label->setText("-");
    }
    setMessage(why, true);
}

void MainWindow::updateCharts(const Scenario& s) {
    charts::ScalingChartData scaling;
    scaling.title = "Scaling: throughput against GPUs";
    if (prediction_) {
        const std::vector<ScalingPoint> curve = scaling_curve(*model_, s, kScalingMaxNodes);
        charts::ScalingSeries predicted{"predicted, 95% band", {}, false};
        charts::ScalingSeries current{"this configuration", {}, true};
        for (const ScalingPoint& p : curve) {
            predicted.points.push_back({double(p.gpus), p.throughput_images_per_s, p.interval.low, p.interval.high});
            if (p.gpus == prediction_->gpus) current.points.push_back({double(p.gpus), p.throughput_images_per_s});
        }
        if (!curve.empty() && curve.front().gpus > 0) {
            predicted.ideal_images_per_s_per_gpu = curve.front().ideal_images_per_s / curve.front().gpus;
        }
        scaling.series.push_back(std::move(predicted));
        scaling.series.push_back(std::move(current));
    }
    if (trace_) {
        charts::ScalingSeries measured{
            "measured (" + std::filesystem::path(trace_->origin).filename().string() + ")", {}, true};
        for (const TraceRun& run : trace_->runs) {
            const Scenario& r = run.observation.scenario;
            if (r.instance != s.instance || r.precision != s.precision || r.framework != s.framework ||
                r.model != s.model) {
                continue;
            }
            const int per_node = r.gpus_per_node > 0 ? r.gpus_per_node : model_->catalog().instance(r.instance).gpus;
            measured.points.push_back({double(r.nodes * per_node), run.observation.throughput_images_per_s});
        }
        if (!measured.points.empty()) scaling.series.push_back(std::move(measured));
    }
    show_chart(scaling_view_, charts::scaling_chart(scaling));

    scatter_ = across_instances(*model_, s, kScatterMaxNodes);
    // A log axis cannot show zero, and infinity is no point at all (a model that cannot run it).
    // Such configurations leave the scatter, so that its front is the front of what it draws: an
    // owned machine without a price by the hour costs $0, and made the front a point nobody saw.
    std::erase_if(scatter_.options, [](const InstanceOption& o) {
        const Prediction& p = o.prediction;
        return !(p.time_to_train_s > 0 && p.cost_usd > 0 && std::isfinite(p.time_to_train_s) &&
                 std::isfinite(p.cost_usd));
    });
    std::vector<TimeCost> points;
    points.reserve(scatter_.options.size());
    for (const InstanceOption& o : scatter_.options)
        points.push_back({o.prediction.time_to_train_s, o.prediction.cost_usd});
    front_ = pareto_front(points);
    std::vector<bool> on_front(points.size(), false);
    for (const std::size_t i : front_) on_front[i] = true;
    scatter_data_ = {};
    scatter_data_.title = "Time to train against cost, every GPU instance type";
    for (std::size_t i = 0; i < scatter_.options.size(); ++i) {
        const InstanceOption& o = scatter_.options[i];
        // Of the front, only its ends (the fastest and the cheapest) are named: more labels overlap.
        const bool named = !front_.empty() && (i == front_.front() || i == front_.back());
        scatter_data_.points.push_back({static_cast<int>(i), points[i].time_to_train_s, points[i].cost_usd, on_front[i],
                                        named ? cluster_label(o.scenario) : std::string(), o.scenario.instance});
        if (o.scenario.instance == s.instance && o.scenario.nodes == s.nodes &&
            (s.gpus_per_node == 0 || s.gpus_per_node == o.prediction.gpus / o.prediction.nodes)) {
            scatter_data_.current_index = static_cast<int>(i);
        }
    }
    show_chart(scatter_view_, charts::cost_time_chart(scatter_data_));
    // Every point series takes clicks: the front's markers lie over the configurations' dots.
    for (QAbstractSeries* series : scatter_view_->chart()->series()) {
        if (auto* scatter = qobject_cast<QScatterSeries*>(series)) {
            connect(scatter, &QScatterSeries::clicked, this, &MainWindow::onScatterClicked);
        }
    }
}

void MainWindow::onScatterClicked(const QPointF& point) {
    const std::optional<int> index = charts::cost_time_index_at(scatter_data_, point.x(), point.y());
    if (!index) return;
    // Deferred: loading a configuration rebuilds the chart, which must not happen inside the chart's
    // own mouse handler.
    QMetaObject::invokeMethod(
        this, [this, i = static_cast<std::size_t>(*index)] { loadScatterPoint(i); }, Qt::QueuedConnection);
}

void MainWindow::updateBreakdown() {
    charts::BreakdownChartData data;
    auto add = [&](const std::string& name, const Scenario& s, const Prediction& p) {
        data.bars.push_back(
            {name + ": " + cluster_label(s), p.compute_s + p.sync_s, data_wait_s(p), p.exposed_communication_s});
    };
    if (prediction_) add("current", scenario(), *prediction_);
    for (std::size_t i = 0; i < pins_.size(); ++i)
        add("pin " + std::to_string(i + 1), pins_[i].scenario, pins_[i].prediction);
    show_chart(breakdown_view_, charts::breakdown_chart(data));
}

void MainWindow::loadScatterPoint(std::size_t index) {
    if (index >= scatter_.options.size()) return;
    const Scenario chosen = scatter_.options[index].scenario;
    setScenario(chosen);
    statusBar()->showMessage(
        tr("Loaded %1 x %2 from the scatter").arg(chosen.nodes).arg(QString::fromStdString(chosen.instance)), 5000);
}

bool MainWindow::useCalibration(const QString& name_or_path) {
    try {
        Calibration calibration = load_calibration(name_or_path.toStdString());
        model_ = std::make_unique<CostModel>(load_catalog(catalogs_), std::move(calibration));
    } catch (const InputError& error) {
        setMessage(tr("Calibration not loaded: %1").arg(error.what()), true);
        return false;
    }
    const bool was = updating_;
    updating_ = true;
    if (calibration_->findText(name_or_path) < 0) calibration_->addItem(name_or_path);
    calibration_->setCurrentText(name_or_path);
    updating_ = was;
    recompute();
    statusBar()->showMessage(tr("Calibration: %1").arg(name_or_path), 5000);
    return true;
}

bool MainWindow::loadTrace(const QString& path) {
    try {
        trace_ = read_trace(path.toStdString(), model_->catalog());
    } catch (const InputError& error) {
        trace_summary_->setText(tr("Trace not loaded: %1").arg(error.what()));
        setMessage(tr("Trace not loaded: %1").arg(error.what()), true);
        return false;
    }
    updateTraceTable();
    recompute();
    tabs_->setCurrentIndex(2);
    return true;
}

void MainWindow::updateTraceTable() {
    const std::vector<TraceRun>& runs = trace_->runs;
    trace_table_->clear();
    trace_table_->setColumnCount(6);
    trace_table_->setHorizontalHeaderLabels(
        {"configuration", "measured img/s", "predicted img/s", "error %", "95% band", "in band"});
    trace_table_->setRowCount(static_cast<int>(runs.size()));
    double sum = 0;
    int counted = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const Observation& o = runs[i].observation;
        const Scenario& s = o.scenario;
        const int row = static_cast<int>(i);
        auto set = [&](int column, const QString& text) {
            trace_table_->setItem(row, column, new QTableWidgetItem(text));
        };
        set(0, QString("%1 x %2, %3/%4, b%5 %6")
                   .arg(s.nodes)
                   .arg(QString::fromStdString(s.instance))
                   .arg(q(to_string(s.framework)), q(to_string(s.strategy)))
                   .arg(s.batch_per_gpu)
                   .arg(q(to_string(s.precision))));
        set(1, QString::number(o.throughput_images_per_s, 'f', 1));
        try {
            const Prediction p = model_->predict(s);
            const double error = percent_error(p.throughput_images_per_s, o.throughput_images_per_s);
            set(2, QString::number(p.throughput_images_per_s, 'f', 1));
            set(3, QString::number(error, 'f', 1));
            set(4, QString("%1 - %2").arg(p.interval.low, 0, 'f', 0).arg(p.interval.high, 0, 'f', 0));
            const bool inside =
                o.throughput_images_per_s >= p.interval.low && o.throughput_images_per_s <= p.interval.high;
            set(5, inside ? "yes" : "no");
            if (!o.approximate) {
                sum += std::abs(error);
                ++counted;
            }
        } catch (const InputError& error) {
            set(2, "-");
            set(3, QString::fromUtf8(error.what()));
        }
    }
    trace_table_->resizeColumnsToContents();
    trace_summary_->setText(tr("%1: %2 runs; mean absolute error %3 % over %4 of them")
                                .arg(QString::fromStdString(trace_->origin))
                                .arg(runs.size())
                                .arg(counted > 0 ? sum / counted : 0.0, 0, 'f', 1)
                                .arg(counted));
}

bool MainWindow::pinCurrent() {
    if (!prediction_ || pinCount() >= kMaxPins) {
        statusBar()->showMessage(prediction_ ? tr("At most %1 pins: clear some first").arg(kMaxPins)
                                             : tr("Nothing to pin: the inputs do not predict"),
                                 5000);
        return false;
    }
    pins_.push_back({scenario(), *prediction_});
    updateBreakdown();
    updatePinTable();
    tabs_->setCurrentIndex(0);
    return true;
}

void MainWindow::clearPins() {
    pins_.clear();
    updateBreakdown();
    updatePinTable();
}

namespace {

std::vector<Column> columns_of(const std::optional<Prediction>& current, const Scenario& scenario,
                               const std::vector<std::pair<Scenario, Prediction>>& pins) {
    std::vector<Column> columns;
    if (current) columns.push_back(column_of("current", scenario, *current));
    for (std::size_t i = 0; i < pins.size(); ++i) {
        columns.push_back(column_of(QString("pin %1").arg(i + 1), pins[i].first, pins[i].second));
    }
    return columns;
}

}  // namespace

void MainWindow::updatePinTable() {
    std::vector<std::pair<Scenario, Prediction>> pins;
    for (const Pin& p : pins_) pins.emplace_back(p.scenario, p.prediction);
    const std::vector<Column> columns = columns_of(prediction_, scenario(), pins);
    const std::vector<QString>& rows = row_names();
    pin_table_->clear();
    pin_table_->setRowCount(static_cast<int>(rows.size()));
    pin_table_->setColumnCount(static_cast<int>(columns.size()));
    QStringList headers, row_headers;
    for (const QString& r : rows) row_headers << r;
    for (std::size_t c = 0; c < columns.size(); ++c) {
        headers << columns[c].header;
        for (std::size_t r = 0; r < rows.size(); ++r) {
            pin_table_->setItem(static_cast<int>(r), static_cast<int>(c), new QTableWidgetItem(columns[c].cells[r]));
        }
    }
    pin_table_->setHorizontalHeaderLabels(headers);
    pin_table_->setVerticalHeaderLabels(row_headers);
    pin_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
}

QString MainWindow::comparisonCsv() const {
    std::vector<std::pair<Scenario, Prediction>> pins;
    for (const Pin& p : pins_) pins.emplace_back(p.scenario, p.prediction);
    const std::vector<Column> columns = columns_of(prediction_, scenario(), pins);
    QString csv = "configuration";
    for (const QString& name : row_names()) csv += "," + name;
    csv += "\n";
    for (const Column& c : columns) {
        csv += csv_cell(c.header);
        for (const QString& cell : c.cells) csv += "," + csv_cell(cell);
        csv += "\n";
    }
    return csv;
}

bool MainWindow::exportCsv(const QString& path) {
    QSaveFile file(path);  // written to a temporary file, renamed on commit: nothing half-written
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text) || file.write(comparisonCsv().toUtf8()) < 0 ||
        !file.commit()) {
        setMessage(tr("Cannot write %1: %2").arg(path, file.errorString()), true);
        return false;
    }
    statusBar()->showMessage(tr("Table written to %1").arg(path), 5000);
    return true;
}

bool MainWindow::exportView(const QString& path) {
    QWidget* view = centralWidget();
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == "svg") {
        QTemporaryDir folder(QFileInfo(path).absolutePath() + "/.epochcast-XXXXXX");
        const QString temporary = folder.path() + "/view.svg";
        {
            QSvgGenerator generator;
            generator.setFileName(temporary);
            generator.setSize(view->size());
            generator.setViewBox(QRect(QPoint(0, 0), view->size()));
            generator.setTitle("epochcast what-if planner");
            QPainter painter;
            if (!folder.isValid() || !painter.begin(&generator)) {
                setMessage(tr("Cannot write %1").arg(path), true);
                return false;
            }
            view->render(&painter);
        }
        QFile::remove(path);
        if (!QFile::rename(temporary, path)) {
            setMessage(tr("Cannot write %1").arg(path), true);
            return false;
        }
    } else if (suffix == "png") {
        QSaveFile file(path);
        if (!file.open(QIODevice::WriteOnly) || !view->grab().save(&file, "PNG") || !file.commit()) {
            setMessage(tr("Cannot write %1: %2").arg(path, file.errorString()), true);
            return false;
        }
    } else {
        setMessage(tr("Export the view as .png or .svg, not '%1'").arg(path), true);
        return false;
    }
    statusBar()->showMessage(tr("View written to %1").arg(path), 5000);
    return true;
}

void MainWindow::startSimulation(int iterations) {
#if EPOCHCAST_WITH_SIMULATOR
    if (simulationRunning() || !prediction_) return;
    joinSimulation();
    QTemporaryDir folder(QDir::tempPath() + "/epochcast-gui-XXXXXX");
    folder.setAutoRemove(false);
    simulation_dir_ = folder.path();
    const QString timeline = simulation_dir_ + "/timeline.json";
    simulation_cancel_ = false;
    simulation_done_ = false;
    simulate_->setEnabled(false);
    cancel_->setEnabled(true);
    progress_->setRange(0, iterations);
    progress_->setValue(0);
    simulation_summary_->setText(tr("Simulating %1 iterations...").arg(iterations));
    tabs_->setCurrentIndex(1);
    CostModel model = *model_;
    const Scenario s = scenario();
    simulation_thread_ = std::thread([this, model = std::move(model), s, iterations, timeline] {
        sim::SimulationOptions options;
        options.iterations = iterations;
        options.timeline_path = timeline.toStdString();
        options.cancel = &simulation_cancel_;
        options.on_progress = [this](int done, int total) {
            QMetaObject::invokeMethod(
                this, [this, done, total] { onSimulationProgress(done, total); }, Qt::QueuedConnection);
        };
        std::optional<Prediction> simulated;
        QString error;
        try {
            const sim::SimulationResult result = sim::simulate(model, s, options);
            simulated = sim::simulated_prediction(model, s, result);
        } catch (const sim::SimulationCancelled&) {
            error = tr("Cancelled.");
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
        simulation_done_ = true;
        QMetaObject::invokeMethod(
            this, [this, simulated, error, timeline] { onSimulationDone(simulated, error, timeline); },
            Qt::QueuedConnection);
    });
#else
    (void)iterations;
#endif
}

void MainWindow::cancelSimulation() { simulation_cancel_ = true; }

void MainWindow::joinSimulation() {
    if (simulation_thread_.joinable()) simulation_thread_.join();
}

void MainWindow::onSimulationProgress(int done, int total) {
    progress_->setRange(0, total);
    progress_->setValue(done);
}

void MainWindow::onSimulationDone(std::optional<Prediction> simulated, QString error, QString timeline_path) {
    joinSimulation();
    simulate_->setEnabled(true);
    cancel_->setEnabled(false);
#if EPOCHCAST_WITH_SIMULATOR
    if (simulated) {
        progress_->setValue(progress_->maximum());
        QString text = tr("Simulated: %1 images/s, iteration %2 ms, exposed communication %3 ms, time to train %4, %5.")
                           .arg(simulated->throughput_images_per_s, 0, 'f', 0)
                           .arg(simulated->iteration_s * 1e3, 0, 'f', 1)
                           .arg(simulated->exposed_communication_s * 1e3, 0, 'f', 1)
                           .arg(hours(simulated->time_to_train_s), cost(simulated->cost_usd, simulated->priced));
        if (prediction_) {
            text += tr(" The closed form says %1 images/s (%2 % apart).")
                        .arg(prediction_->throughput_images_per_s, 0, 'f', 0)
                        .arg(percent_error(prediction_->throughput_images_per_s, simulated->throughput_images_per_s), 0,
                             'f', 1);
        }
        simulation_summary_->setText(text);
        try {
            timeline_view_->setTimeline(sim::Timeline::read(timeline_path.toStdString()));
        } catch (const InputError& e) {
            simulation_summary_->setText(text + " " + tr("(timeline unreadable: %1)").arg(e.what()));
        }
    } else {
        progress_->setValue(0);
        simulation_summary_->setText(tr("Simulation stopped: %1").arg(error));
        timeline_view_->clear();
    }
#else
    (void)simulated;
    (void)error;
    (void)timeline_path;
#endif
    if (!simulation_dir_.isEmpty()) QDir(simulation_dir_).removeRecursively();
    simulation_dir_.clear();
    emit simulationFinished(simulated.has_value());
}

bool MainWindow::saveScenario(const QString& path) {
    QSaveFile file(path);  // written to a temporary file, renamed on commit: nothing half-written
    const std::string text = scenario_file_json({{"", scenario()}});
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text) ||
        file.write(text.data(), static_cast<qint64>(text.size())) < 0 || !file.commit()) {
        setMessage(tr("Cannot write %1: %2").arg(path, file.errorString()), true);
        return false;
    }
    statusBar()->showMessage(tr("Scenario written to %1").arg(path), 5000);
    return true;
}

bool MainWindow::openScenario(const QString& path) {
    std::vector<NamedScenario> scenarios;
    try {
        scenarios = read_scenario_file(path.toStdString(), model_->catalog());
    } catch (const InputError& error) {
        setMessage(tr("Scenario not opened: %1").arg(error.what()), true);
        return false;
    }
    // The others first, each pinned, then the first as the inputs.
    clearPins();
    for (std::size_t i = 1; i < scenarios.size() && pinCount() < kMaxPins; ++i) {
        setScenario(scenarios[i].scenario);
        pinCurrent();
    }
    setScenario(scenarios[0].scenario);
    statusBar()->showMessage(scenarios.size() > 1
                                 ? tr("Opened %1: %2 configurations, the others pinned").arg(path).arg(scenarios.size())
                                 : tr("Opened %1").arg(path),
                             5000);
    return true;
}

QString MainWindow::scenarioCommand() const {
    return QString::fromStdString("epochcast predict " + scenario_flags(scenario()));
}

void MainWindow::copyScenarioCommand() {
    QGuiApplication::clipboard()->setText(scenarioCommand());
    statusBar()->showMessage(tr("Copied: %1").arg(scenarioCommand()), 5000);
}

void MainWindow::saveScenarioDialog() {
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Save scenario"), "scenario.json", tr("Scenario (*.json)"));
    if (!path.isEmpty()) saveScenario(path);
}

void MainWindow::openScenarioDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open scenario"), QString(), tr("Scenario (*.json)"));
    if (!path.isEmpty()) openScenario(path);
}

void MainWindow::openCalibrationDialog() {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Open calibration"), QString(), tr("Calibration (*.json)"));
    if (!path.isEmpty()) useCalibration(path);
}

void MainWindow::openTraceDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open trace"), QString(), tr("Trace (*.json)"));
    if (!path.isEmpty()) loadTrace(path);
}

void MainWindow::exportViewDialog() {
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export view"), "epochcast.png", tr("Images (*.png *.svg)"));
    if (!path.isEmpty()) exportView(path);
}

void MainWindow::exportCsvDialog() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export table"), "epochcast.csv", tr("CSV (*.csv)"));
    if (!path.isEmpty()) exportCsv(path);
}

}  // namespace epochcast::gui
