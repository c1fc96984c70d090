// `--plot FILE.png|FILE.svg` of sweep and plan: the scaling curve, the time-against-cost scatter
// with its Pareto front and the iteration's stacked bar, in one picture, drawn by gui/charts/ (the
// GUI's chart code) offscreen. The scatter shows the front (a line through its points, in the
// colours of their GPU models), each GPU model's own best trade-offs in its colour, and a thinned,
// light grey sample of the rest as context (plot_groups(), thin_scatter()). This header has no Qt in it so the CLI
// builds without Qt; then write_plots() says that this build has no chart support.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "model/prediction.hpp"
#include "model/scenario.hpp"
#include "model/search.hpp"

namespace epochcast {
class Catalog;
}

namespace epochcast::cli {

/// One feasible configuration to plot.
struct PlotPoint {
    Scenario scenario;
    Prediction prediction;
};

struct PlotRequest {
    std::string path;                  ///< FILE.png or FILE.svg
    std::vector<PlotPoint> points;     ///< every feasible configuration
    std::vector<std::size_t> front;    ///< indices into points: the Pareto front, fastest first
    std::vector<std::size_t> chosen;   ///< indices of the answers (cheapest, fastest), labelled first
    std::optional<double> deadline_s;  ///< drawn when given
    std::optional<double> budget_usd;  ///< drawn when given
    std::string title;                 ///< what was searched or swept, for the scatter's title
    /// Names each instance's GPU, by which the scatter colours its points (plot_groups()); without
    /// one, or for an instance it does not know, the instance is a group of its own.
    const Catalog* catalog = nullptr;
};

/// The GPU model that names a colour of the scatter: a catalog GPU's name up to its first '-'
/// ("H100-SXM5-80GB" and "H100-PCIE-80GB" are "H100", "L40S" is "L40S"), so that memory and
/// form-factor variants share a colour.
std::string gpu_model(const std::string& gpu_name);

/// The scatter's colour groups: one per GPU model, at most `max_entries`.
struct PlotGroups {
    /// Legend entries, e.g. "H100: p5, a3-highgpu-8g, ND96isr_H100_v5": the models on the front
    /// first (fastest first), then by how near each comes to the front; when there are more than
    /// `max_entries` models, the last entry gathers the rest ("other GPUs: K80, M60").
    std::vector<std::string> names;
    std::vector<std::size_t> of_point;  ///< each point's entry (an index into names)
};

/// Group `points` by their instance's GPU model (plain instances without `catalog`). `front` as
/// PlotRequest::front.
PlotGroups plot_groups(const std::vector<PlotPoint>& points, const std::vector<std::size_t>& front,
                       const Catalog* catalog, std::size_t max_entries = 10);

/// What the scatter draws of many configurations, as indices into the points.
struct ScatterSelection {
    std::vector<std::size_t> front;  ///< the Pareto front, every point of it
    /// Each group's own Pareto front (the best its GPUs do at each price), less the points on the
    /// front; at most `max_per_group` of each, spread along it. A group of at most `max_per_group`
    /// points is here whole (a small sweep is drawn in colour, point by point).
    std::vector<std::size_t> group_fronts;
    /// The rest, thinned to the context: at most one point per cell of a 60 x 40 grid over log
    /// time and log cost (so the cloud keeps its shape, not its density), at most `max_context`.
    std::vector<std::size_t> context;
};

/// Thin `points` for the scatter (see ScatterSelection); `group_of_point` gives each point's group.
/// Points without a finite, positive time and cost are left out (no log axis shows them).
ScatterSelection thin_scatter(const std::vector<TimeCost>& points, const std::vector<std::size_t>& front,
                              const std::vector<std::size_t>& group_of_point, std::size_t max_per_group = 40,
                              std::size_t max_context = 2500);

/// True when this build can draw (Qt 6 Charts was found).
bool plots_supported();

/// Throws InputError when `path` does not end in .png or .svg, or when this build has no chart
/// support; call it before the work so that a bad --plot fails early.
void check_plot_path(const std::string& path);

/// Draw the three charts into request.path (whole or not at all). Throws InputError as above or
/// when the file cannot be written.
void write_plots(const PlotRequest& request);

}  // namespace epochcast::cli
