#include "cli/plot.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>

#include "model/errors.hpp"
#include "model/types.hpp"

#ifdef EPOCHCAST_CLI_WITH_CHARTS
#include "gui/charts/charts.hpp"
#endif

namespace epochcast::cli {
namespace {

std::string extension_of(const std::string& path) {
    const auto dot = path.rfind('.');
    std::string ext = dot == std::string::npos ? "" : path.substr(dot);
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return ext;
}

#ifdef EPOCHCAST_CLI_WITH_CHARTS

/// "p3.16xlarge ring b256": what distinguishes a configuration, beside its cluster size. With
/// `per_worker`, parameter servers are counted per worker node (what a scaling curve keeps).
std::string setup_label(const Scenario& s, bool per_worker = false) {
    std::string label = s.instance + " " + std::string(to_string(s.strategy));
    if (s.strategy == Strategy::ps) {
        if (s.ps_colocated) {
            label += " co-located";
        } else if (per_worker) {
            char ratio[32];
            std::snprintf(ratio, sizeof ratio, "%g", double(s.ps_nodes) / s.nodes);
            // Appended piece by piece: GCC 12 warns (a false -Wrestrict) on `" " + std::string(...)` here.
            label.append(" ").append(ratio).append(" ").append(s.ps_instance).append("/node");
        } else {
            label.append(" ").append(std::to_string(s.ps_nodes)).append(" x ").append(s.ps_instance);
        }
    }
    return label + " b" + std::to_string(s.batch_per_gpu);
}

/// "8 x p3.16xlarge (64 GPUs)": the cluster.
std::string cluster_label(const Scenario& s, const Prediction& p) {
    return std::to_string(s.nodes) + " x " + s.instance + " (" + std::to_string(p.gpus) + " GPUs)";
}

std::string label_of(const Scenario& s, const Prediction& p) {
    std::string setup = setup_label(s);
    return cluster_label(s, p) + " " + setup.substr(s.instance.size() + 1);
}

/// Everything but the cluster size: the configurations a scaling curve joins.
std::string curve_key(const Scenario& s, const Prediction& p) {
    std::string key = s.model + " " + std::to_string(s.image_size) + "px " + s.instance + " x" +
                      std::to_string(p.nodes > 0 ? p.gpus / p.nodes : 0) + " " + std::string(to_string(s.strategy)) +
                      " " + std::string(to_string(s.precision)) + " " + std::string(to_string(s.framework)) + " b" +
                      std::to_string(s.batch_per_gpu);
    if (s.strategy == Strategy::ps) {
        key += s.ps_colocated ? " co-located"
                              : " " + s.ps_instance + " ratio " + std::to_string(double(s.ps_nodes) / s.nodes);
    }
    return key;
}

constexpr std::size_t kMaxCurves = 6;
constexpr std::size_t kMaxBars = 10;
constexpr std::size_t kMaxScatter = 20000;

charts::ScalingChartData scaling_data(const PlotRequest& r) {
    // The curves through the answers, then through the front's points, fastest first; the other
    // configurations only when those give fewer than two curves.
    std::vector<std::size_t> order = r.chosen;
    order.insert(order.end(), r.front.begin(), r.front.end());
    std::vector<std::string> keys;
    auto take = [&](std::size_t i) {
        const std::string key = curve_key(r.points[i].scenario, r.points[i].prediction);
        if (keys.size() < kMaxCurves && std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    };
    for (std::size_t i : order) take(i);
    for (std::size_t i = 0; keys.size() < 2 && i < r.points.size(); ++i) take(i);
    std::map<std::string, std::map<int, double>> curves;  // key -> gpus -> throughput
    std::map<std::string, std::string> names;             // key -> legend entry
    for (const PlotPoint& p : r.points) {
        const std::string key = curve_key(p.scenario, p.prediction);
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
            curves[key][p.prediction.gpus] = p.prediction.throughput_images_per_s;
            names[key] = setup_label(p.scenario, true);
        }
    }
    charts::ScalingChartData data;
    data.title = "Scaling: throughput against GPUs";
    for (const std::string& key : keys) {
        charts::ScalingSeries series{names[key], {}, false};
        for (const auto& [gpus, throughput] : curves[key]) series.points.push_back({double(gpus), throughput});
        series.points_only = series.points.size() == 1;
        data.series.push_back(std::move(series));
    }
    // Each curve's ideal: its per-GPU rate at its smallest cluster, kept all the way up.
    for (charts::ScalingSeries& series : data.series) {
        if (series.points_only) continue;
        const charts::ScalingPoint& first = series.points.front();
        series.ideal_images_per_s_per_gpu = first.throughput_images_per_s / first.gpus;
    }
    return data;
}

charts::CostTimeChartData cost_time_data(const PlotRequest& r) {
    charts::CostTimeChartData data;
    data.title = r.title.empty() ? "Time against cost" : r.title;
    data.deadline_s = r.deadline_s;
    data.budget_usd = r.budget_usd;
    std::vector<bool> on_front(r.points.size(), false);
    for (std::size_t i : r.front) on_front[i] = true;
    // A sample of the cloud (every front point kept) so that huge sweeps still draw quickly.
    const std::size_t stride = std::max<std::size_t>(1, r.points.size() / kMaxScatter);
    // Label the answers or, without any, the front's two ends (the fastest and the cheapest).
    std::vector<bool> labelled(r.points.size(), false);
    for (std::size_t i : r.chosen) labelled[i] = true;
    if (r.chosen.empty() && !r.front.empty()) {
        labelled[r.front.front()] = true;
        labelled[r.front.back()] = true;
    }
    for (std::size_t i = 0; i < r.points.size(); ++i) {
        if (!on_front[i] && i % stride != 0) continue;
        const Prediction& p = r.points[i].prediction;
        const std::string label = labelled[i] ? label_of(r.points[i].scenario, p) : std::string();
        data.points.push_back(
            {static_cast<int>(i), p.time_to_train_s, p.cost_usd, on_front[i], label, r.points[i].scenario.instance});
    }
    return data;
}

charts::BreakdownChartData breakdown_data(const PlotRequest& r) {
    // The answers, then front points spread evenly, up to kMaxBars.
    std::vector<std::size_t> picked = r.chosen;
    const std::size_t room = kMaxBars > picked.size() ? kMaxBars - picked.size() : 0;
    const std::vector<std::size_t>& pool = r.front.empty() ? std::vector<std::size_t>() : r.front;
    for (std::size_t k = 0; k < std::min(room, pool.size()); ++k) {
        const std::size_t i = pool[k * pool.size() / std::min(room, pool.size())];
        if (std::find(picked.begin(), picked.end(), i) == picked.end()) picked.push_back(i);
    }
    if (picked.empty()) {
        for (std::size_t i = 0; i < std::min(kMaxBars, r.points.size()); ++i) picked.push_back(i);
    }
    charts::BreakdownChartData data;
    data.title = "One iteration: compute, input pipeline and exposed communication";
    for (std::size_t i : picked) {
        const Prediction& p = r.points[i].prediction;
        const double busy = p.compute_s + p.sync_s + p.exposed_communication_s;
        data.bars.push_back({cluster_label(r.points[i].scenario, p) + " " +
                                 setup_label(r.points[i].scenario).substr(r.points[i].scenario.instance.size() + 1),
                             p.compute_s + p.sync_s, std::max(0.0, p.data_s - busy), p.exposed_communication_s});
    }
    return data;
}

#endif

}  // namespace

bool plots_supported() {
#ifdef EPOCHCAST_CLI_WITH_CHARTS
    return true;
#else
    return false;
#endif
}

void check_plot_path(const std::string& path) {
    const std::string ext = extension_of(path);
    if (ext != ".png" && ext != ".svg") throw InputError("--plot '" + path + "': the name must end in .png or .svg");
    if (!plots_supported()) {
        throw InputError(
            "--plot: this epochcast was built without chart support (Qt 6 Charts); install qt6-charts-dev "
            "and qt6-svg-dev and rebuild");
    }
}

void write_plots(const PlotRequest& request) {
    check_plot_path(request.path);
#ifdef EPOCHCAST_CLI_WITH_CHARTS
    charts::OffscreenApplication app;
    auto scaling = charts::scaling_chart(scaling_data(request));
    auto cost = charts::cost_time_chart(cost_time_data(request));
    auto breakdown = charts::breakdown_chart(breakdown_data(request));
    charts::render_to_file({cost.get(), scaling.get(), breakdown.get()}, request.path, 1100, 620);
#endif
}

}  // namespace epochcast::cli
