// `--plot FILE.png|FILE.svg` of sweep and plan: the scaling curve, the time-against-cost scatter
// with its Pareto front and the iteration's stacked bar, in one picture, drawn by gui/charts/ (the
// GUI's chart code) offscreen. This header has no Qt in it so the CLI builds without Qt; then
// write_plots() says that this build has no chart support.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "model/prediction.hpp"
#include "model/scenario.hpp"

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
};

/// True when this build can draw (Qt 6 Charts was found).
bool plots_supported();

/// Throws InputError when `path` does not end in .png or .svg, or when this build has no chart
/// support; call it before the work so that a bad --plot fails early.
void check_plot_path(const std::string& path);

/// Draw the three charts into request.path (whole or not at all). Throws InputError as above or
/// when the file cannot be written.
void write_plots(const PlotRequest& request);

}  // namespace epochcast::cli
