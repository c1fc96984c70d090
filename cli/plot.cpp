#include "cli/plot.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "cli/report.hpp"
#include "model/catalog.hpp"
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

bool drawable(const TimeCost& p) {
    return std::isfinite(p.time_to_train_s) && std::isfinite(p.cost_usd) && p.time_to_train_s > 0 && p.cost_usd > 0;
}

/// How far `p` lies behind the front: the log of the factor by which both its time and its cost
/// must shrink for no front point to be both faster and cheaper (0 on the front).
double gap_to_front(const TimeCost& p, const std::vector<TimeCost>& front) {
    double gap = 0;
    for (const TimeCost& f : front) {
        gap =
            std::max(gap, std::min(std::log(p.time_to_train_s / f.time_to_train_s), std::log(p.cost_usd / f.cost_usd)));
    }
    return gap;
}

/// An instance's family, short enough for a legend and still the name a person looks up: "p5"
/// for "p5.48xlarge" (AWS), "ND H100 v5" for "Standard_ND96isr_H100_v5" (Azure's series: the size's
/// letters, then the rest); others as they are ("a3-highgpu-8g").
std::string short_instance(const std::string& name) {
    if (name.rfind("Standard_", 0) == 0) {
        std::string text = name.substr(9);
        const auto underscore = text.find('_');
        if (underscore == std::string::npos) return text;
        std::string series;
        for (char c : text.substr(0, underscore)) {
            if (!std::isalpha(static_cast<unsigned char>(c))) break;
            series += c;
        }
        std::string rest = text.substr(underscore + 1);
        std::replace(rest.begin(), rest.end(), '_', ' ');
        return series.empty() ? text : series + " " + rest;
    }
    const auto dot = name.find('.');
    return dot == std::string::npos ? name : name.substr(0, dot);
}

/// "a, b, c" of at most `most` names, then "...".
std::string listed(const std::vector<std::string>& names, std::size_t most) {
    std::string text;
    for (std::size_t i = 0; i < names.size() && i < most; ++i) text += (i ? ", " : "") + names[i];
    if (names.size() > most) text += ", ...";
    return text;
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

/// What sets a marked point apart from a plain on-demand run of real data (issue 58, item 8):
/// ", spot" (", spot elastic"), ", capacity-block", ", reserved-1y", ", synthetic data (nothing
/// decoded)", ", no price (cost n/a)"; empty for none.
std::string nature_of(const Scenario& s, const Prediction& p) {
    std::string text;
    if (s.pricing == Pricing::spot) {
        text += p.spot.elastic_priced ? ", spot elastic" : ", spot";
    } else if (s.pricing != Pricing::on_demand) {
        text += ", " + std::string(to_string(s.pricing));
    }
    if (p.loader == Loader::synthetic) text += ", synthetic data (nothing decoded)";
    if (!p.priced) text += ", no price (cost n/a)";
    return text;
}

std::string label_of(const Scenario& s, const Prediction& p) {
    std::string setup = setup_label(s);
    return cluster_label(s, p) + " " + setup.substr(s.instance.size() + 1) + nature_of(s, p);
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
    // One colour meaning in every chart: each curve takes its GPU model's, as the scatter does.
    const PlotGroups groups = plot_groups(r.points, r.front, r.catalog);
    std::map<std::string, std::string> group_of;  // key -> GPU model (or instance) group
    for (std::size_t i = 0; i < r.points.size(); ++i) {
        group_of.emplace(curve_key(r.points[i].scenario, r.points[i].prediction), groups.names[groups.of_point[i]]);
    }
    charts::ScalingChartData data;
    data.title = "Scaling: throughput against GPUs";
    data.group_order = groups.names;
    for (const std::string& key : keys) {
        charts::ScalingSeries series{names[key], {}, false};
        series.group = group_of[key];
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

/// What each labelled point answers: the answers' "cheapest within the deadline" and "fastest
/// within the budget" (one point may be both), or without answers the front's "fastest" and
/// "cheapest" ends.
std::map<std::size_t, std::string> answer_roles(const PlotRequest& r, const std::vector<std::size_t>& front) {
    std::optional<std::size_t> cheapest_in_time;
    std::optional<std::size_t> fastest_in_budget;
    for (std::size_t i : front) {
        const Prediction& p = r.points[i].prediction;
        if (r.deadline_s && p.time_to_train_s <= *r.deadline_s &&
            (!cheapest_in_time || p.cost_usd < r.points[*cheapest_in_time].prediction.cost_usd)) {
            cheapest_in_time = i;
        }
        if (r.budget_usd && p.cost_usd <= *r.budget_usd &&
            (!fastest_in_budget || p.time_to_train_s < r.points[*fastest_in_budget].prediction.time_to_train_s)) {
            fastest_in_budget = i;
        }
    }
    std::map<std::size_t, std::string> roles;
    for (std::size_t i : r.chosen) {
        std::string role;
        if (cheapest_in_time == i) role = "cheapest within the deadline";
        if (fastest_in_budget == i) role += std::string(role.empty() ? "" : ", ") + "fastest within the budget";
        roles[i] = role.empty() ? "answer" : role;
    }
    if (r.chosen.empty() && !front.empty()) {
        roles[front.front()] = "fastest";
        roles[front.back()] = front.size() == 1 ? "fastest and cheapest" : "cheapest";
    }
    return roles;
}

charts::CostTimeChartData cost_time_data(const PlotRequest& r) {
    charts::CostTimeChartData data;
    data.title = r.title.empty() ? "Time against cost" : r.title;
    data.deadline_s = r.deadline_s;
    data.budget_usd = r.budget_usd;
    // The front, each GPU model's own best and a thinned grey background: tens of thousands of
    // markers hid the front, and a score of instance types shared a handful of colours.
    const PlotGroups groups = plot_groups(r.points, r.front, r.catalog);
    data.group_order = groups.names;
    std::vector<TimeCost> points;
    points.reserve(r.points.size());
    for (const PlotPoint& p : r.points) points.push_back({p.prediction.time_to_train_s, p.prediction.cost_usd});
    const ScatterSelection selection = thin_scatter(points, r.front, groups.of_point);
    const std::size_t drawn = selection.front.size() + selection.group_fronts.size() + selection.context.size();
    data.context_name = drawn < r.points.size() ? "other configurations (a sample)" : "other configurations";
    // Label the answers or, without any, the front's two ends, each with what it answers.
    const std::map<std::size_t, std::string> roles = answer_roles(r, selection.front);
    auto add = [&](std::size_t i, bool on_front, bool context) {
        const Prediction& p = r.points[i].prediction;
        const auto role = roles.find(i);
        const std::string label = role == roles.end()
                                      ? std::string()
                                      : role->second + ": " + format_duration(p.time_to_train_s) + ", " +
                                            format_dollars(p.cost_usd) + "\n" + label_of(r.points[i].scenario, p);
        charts::CostTimePoint point{
            static_cast<int>(i), p.time_to_train_s, p.cost_usd, on_front, label, groups.names[groups.of_point[i]]};
        point.context = context;
        data.points.push_back(std::move(point));
    };
    for (std::size_t i : selection.context) add(i, false, true);
    for (std::size_t i : selection.group_fronts) add(i, false, false);
    for (std::size_t i : selection.front) add(i, true, false);
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

std::string gpu_model(const std::string& gpu_name) { return gpu_name.substr(0, gpu_name.find('-')); }

PlotGroups plot_groups(const std::vector<PlotPoint>& points, const std::vector<std::size_t>& front,
                       const Catalog* catalog, std::size_t max_entries) {
    max_entries = std::max<std::size_t>(1, max_entries);
    // Each point's model; an instance the catalog lacks (or a CPU-only one) is its own.
    std::map<std::string, std::string> model_of_instance;
    bool by_gpu = false;
    for (const PlotPoint& p : points) {
        const std::string& instance = p.scenario.instance;
        if (model_of_instance.count(instance)) continue;
        std::string model = instance;
        if (catalog) {
            const auto& known = catalog->instances();
            const auto it = std::find_if(known.begin(), known.end(),
                                         [&](const InstanceSpec& spec) { return spec.name == instance; });
            if (it != known.end() && !it->gpu.empty()) {
                model = gpu_model(it->gpu);
                by_gpu = true;
            }
        }
        model_of_instance[instance] = model;
    }
    std::vector<TimeCost> front_points;
    for (std::size_t i : front) {
        front_points.push_back({points[i].prediction.time_to_train_s, points[i].prediction.cost_usd});
    }
    // Each model's and each instance's nearest approach to the front.
    std::map<std::string, double> model_gap;
    std::map<std::string, std::map<std::string, double>> instance_gap;  // model -> instance -> gap
    for (const PlotPoint& p : points) {
        const TimeCost tc{p.prediction.time_to_train_s, p.prediction.cost_usd};
        const double gap = drawable(tc) && !front_points.empty() ? gap_to_front(tc, front_points)
                                                                 : std::numeric_limits<double>::infinity();
        const std::string& model = model_of_instance[p.scenario.instance];
        auto [m, fresh] = model_gap.emplace(model, gap);
        if (!fresh) m->second = std::min(m->second, gap);
        auto [n, new_instance] = instance_gap[model].emplace(short_instance(p.scenario.instance), gap);
        if (!new_instance) n->second = std::min(n->second, gap);
    }
    // The models along the front, fastest first, then the others, nearest first.
    std::vector<std::string> order;
    for (std::size_t i : front) {
        const std::string& model = model_of_instance[points[i].scenario.instance];
        if (std::find(order.begin(), order.end(), model) == order.end()) order.push_back(model);
    }
    std::vector<std::pair<double, std::string>> rest;
    for (const auto& [model, gap] : model_gap) {
        if (std::find(order.begin(), order.end(), model) == order.end()) rest.push_back({gap, model});
    }
    std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [gap, model] : rest) order.push_back(model);

    const std::size_t named = order.size() <= max_entries ? order.size() : max_entries - 1;
    PlotGroups groups;
    std::map<std::string, std::size_t> entry_of_model;
    for (std::size_t k = 0; k < order.size(); ++k) {
        if (k < named) {
            std::string name = order[k];
            if (by_gpu) {
                std::vector<std::pair<double, std::string>> instances;
                for (const auto& [instance, gap] : instance_gap[order[k]]) instances.push_back({gap, instance});
                std::stable_sort(instances.begin(), instances.end(),
                                 [](const auto& a, const auto& b) { return a.first < b.first; });
                std::vector<std::string> names;
                for (const auto& [gap, instance] : instances) names.push_back(instance);
                name += ": " + listed(names, 3);
            }
            groups.names.push_back(name);
        }
        entry_of_model[order[k]] = std::min(k, named);
    }
    if (named < order.size()) {
        const std::vector<std::string> others(order.begin() + static_cast<std::ptrdiff_t>(named), order.end());
        groups.names.push_back((by_gpu ? "other GPUs: " : "other instances: ") + listed(others, 4));
    }
    for (const PlotPoint& p : points) groups.of_point.push_back(entry_of_model[model_of_instance[p.scenario.instance]]);
    return groups;
}

ScatterSelection thin_scatter(const std::vector<TimeCost>& points, const std::vector<std::size_t>& front,
                              const std::vector<std::size_t>& group_of_point, std::size_t max_per_group,
                              std::size_t max_context) {
    ScatterSelection selection;
    std::vector<bool> taken(points.size(), false);
    for (std::size_t i : front) {
        if (i < points.size() && drawable(points[i]) && !taken[i]) {
            selection.front.push_back(i);
            taken[i] = true;
        }
    }
    // Each group's own front.
    std::map<std::size_t, std::vector<std::size_t>> members;
    for (std::size_t i = 0; i < points.size(); ++i) {
        if (drawable(points[i])) members[i < group_of_point.size() ? group_of_point[i] : 0].push_back(i);
    }
    for (const auto& [group, indices] : members) {
        std::vector<TimeCost> own;
        for (std::size_t i : indices) own.push_back(points[i]);
        std::vector<std::size_t> best;
        if (indices.size() <= max_per_group) {
            best = indices;  // a small group is drawn whole
        } else {
            for (std::size_t k : pareto_front(own)) best.push_back(indices[k]);
        }
        std::erase_if(best, [&](std::size_t i) { return taken[i]; });
        const std::size_t keep = std::min(best.size(), max_per_group);
        for (std::size_t k = 0; k < keep; ++k) {
            const std::size_t i = best[keep == best.size() ? k : k * best.size() / keep];
            selection.group_fronts.push_back(i);
            taken[i] = true;
        }
    }
    std::sort(selection.group_fronts.begin(), selection.group_fronts.end());
    // The rest: one per cell of a grid over log time and log cost.
    double t0 = std::numeric_limits<double>::infinity(), t1 = -t0, c0 = t0, c1 = -t0;
    for (const TimeCost& p : points) {
        if (!drawable(p)) continue;
        t0 = std::min(t0, std::log(p.time_to_train_s));
        t1 = std::max(t1, std::log(p.time_to_train_s));
        c0 = std::min(c0, std::log(p.cost_usd));
        c1 = std::max(c1, std::log(p.cost_usd));
    }
    constexpr int kColumns = 60;
    constexpr int kRows = 40;
    auto cell = [](double v, double low, double high, int cells) {
        if (!(high > low)) return 0;
        return std::clamp(static_cast<int>((v - low) / (high - low) * cells), 0, cells - 1);
    };
    std::set<std::pair<int, int>> filled;
    std::vector<std::size_t> context;
    for (std::size_t i = 0; i < points.size(); ++i) {
        if (taken[i] || !drawable(points[i])) continue;
        const std::pair<int, int> at{cell(std::log(points[i].time_to_train_s), t0, t1, kColumns),
                                     cell(std::log(points[i].cost_usd), c0, c1, kRows)};
        if (filled.insert(at).second) context.push_back(i);
    }
    const std::size_t stride = max_context == 0 ? context.size() + 1 : (context.size() + max_context - 1) / max_context;
    for (std::size_t k = 0; k < context.size(); k += std::max<std::size_t>(1, stride)) {
        selection.context.push_back(context[k]);
    }
    return selection;
}

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
