// `epochcast sweep/plan --plot`: the real command draws the three charts into one picture that is
// not blank (the front's, the bars' and the curves' colours are there), PNG or SVG.
#include <gtest/gtest.h>

#include <QtGui/QColor>
#include <QtGui/QImage>

#include <filesystem>
#include <fstream>

#include "tests/cli/cli_process.hpp"
#include "tests/support/temp_file.hpp"
#include "tests/support/temp_folder.hpp"

namespace epochcast::testing {
namespace {

namespace fs = std::filesystem;

int pixels_near(const QImage& image, QColor colour, int tolerance) {
    int count = 0;
    for (int y = 0; y < image.height(); ++y) {
        for (int x = 0; x < image.width(); ++x) {
            const QColor c = image.pixelColor(x, y);
            count += std::abs(c.red() - colour.red()) <= tolerance &&
                     std::abs(c.green() - colour.green()) <= tolerance &&
                     std::abs(c.blue() - colour.blue()) <= tolerance;
        }
    }
    return count;
}

void expect_three_charts(const std::string& png) {
    const QImage image(QString::fromStdString(png));
    ASSERT_FALSE(image.isNull()) << png;
    EXPECT_EQ(image.width(), 1100);
    EXPECT_EQ(image.height(), 3 * 620);
    // Each third holds a chart: the front (vermillion) on top, curves in the middle, bars (blue) below.
    const int third = image.height() / 3;
    EXPECT_GT(pixels_near(image.copy(0, 0, image.width(), third), QColor(213, 94, 0), 20), 300) << "the Pareto front";
    EXPECT_GT(pixels_near(image.copy(0, third, image.width(), third), QColor(0, 114, 178), 20), 300)
        << "a scaling curve";
    EXPECT_GT(pixels_near(image.copy(0, 2 * third, image.width(), third), QColor(0, 114, 178), 4), 5000)
        << "compute bars";
}

TEST(PlotCli, SweepDrawsThreeChartsIntoOnePng) {
    TempFile spec(
        R"({"instance": ["p3.16xlarge", "p3.8xlarge"], "nodes": [1, 2, 4, 8, 16], "batch_per_gpu": [128, 256]})");
    TempFile png("", ".png");
    fs::remove(png.path());
    const TempFolder folder;
    const ProcessResult r =
        run_epochcast("sweep " + spec.path() + " -o " + (folder / "rows.csv") + " --plot " + png.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_three_charts(png.path());
}

TEST(PlotCli, PlanDrawsPngAndSvg) {
    TempFile png("", ".png");
    // MXNet decodes on the GPU (DALI), so the plans are compute-bound and the scaling curves differ.
    // (PyTorch's CPU loader bounds every p4d plan, which then scales linearly: its curves and the
    // ideal line coincide, and the last one drawn hides the blue one.)
    const ProcessResult r = run_epochcast(
        "plan --deadline 1h --budget 300 --instance p3.16xlarge --instance p4d.24xlarge --framework mxnet --plot " +
        png.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("plots: " + png.path()), std::string::npos);
    expect_three_charts(png.path());
    TempFile svg("", ".svg");
    const ProcessResult s = run_epochcast("plan --deadline 1h --instance p3.16xlarge --plot " + svg.path());
    ASSERT_EQ(s.exit_code, 0) << s.err;
    const std::string text = read_text(svg.path());
    EXPECT_NE(text.find("<svg"), std::string::npos);
    EXPECT_NE(text.find("time to train"), std::string::npos);
    // The scatter's legend (the front, the GPU model with its instance types, the background), the
    // answer's label and the deadline, in words; plain ticks.
    for (const char* words :
         {"Pareto front (fastest for the money)", "V100: p3", "other configurations (a sample)",
          "cheapest within the deadline: ", " x p3.16xlarge (", "deadline 1 h", ">10 min<", ">1 h<"}) {
        EXPECT_NE(text.find(words), std::string::npos) << words;
    }
    EXPECT_NE(text.find("throughput (images/s)"), std::string::npos);
    EXPECT_NE(text.find("time per iteration (ms)"), std::string::npos);
}

TEST(PlotCli, UnwritablePlotIsABadInputAndLeavesNothing) {
    const ProcessResult r = run_epochcast("plan --deadline 1h --instance p3.16xlarge --plot /nonexistent-folder/x.png");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("/nonexistent-folder/x.png"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << "the plan was printed before the plot failed";
    // sweep: neither the rows nor the plot are written when the plot's folder does not exist.
    TempFile spec(R"({"nodes": [1, 2]})");
    const TempFolder folder;
    const std::string rows = folder / "rows.csv";
    const ProcessResult s = run_epochcast("sweep " + spec.path() + " -o " + rows + " --plot /nonexistent-folder/s.png");
    EXPECT_EQ(s.exit_code, 2);
    EXPECT_NE(s.err.find("--plot '/nonexistent-folder/s.png': the folder '/nonexistent-folder' does not exist"),
              std::string::npos)
        << s.err;
    EXPECT_EQ(s.out, "");
    EXPECT_FALSE(fs::exists(rows));
}

TEST(PlotCli, TwoPlotsOfTheSameFileDoNotShareATemporaryFile) {
    // Another process drawing the same picture holds p.png.partial.<its pid>; this one leaves it be.
    TempFile png("", ".png");
    fs::remove(png.path());
    const std::string other = png.path() + ".partial";
    std::ofstream(other) << "another plan's picture";
    // MXNet, compute-bound (see PlanDrawsPngAndSvg): its scaling curves do not hide each other. MLPerf's
    // recipe: within the hour its 35 epochs leave several node counts to draw.
    const ProcessResult r = run_epochcast(
        "plan --deadline 1h --instance p3.16xlarge --framework mxnet --recipe "
        "mlperf-lars --plot " +
        png.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_text(other), "another plan's picture");
    fs::remove(other);
    expect_three_charts(png.path());
}

// Issue 58, item 8: a marked point says what sets it apart. In a sweep over loaders and pricings
// the fastest point is a synthetic-data row and the cheapest a spot row; their labels say so.
TEST(PlotCli, AMarkedPointNamesItsSpotOrSyntheticNature) {
    TempFile spec(R"({"instance": "p4d.24xlarge", "nodes": [1, 4], "loader": ["cpu", "synthetic"],
                      "pricing": ["on-demand", "spot"]})");
    TempFile svg("", ".svg");
    const TempFolder folder;
    const ProcessResult r =
        run_epochcast("sweep " + spec.path() + " -o " + (folder / "rows.csv") + " --plot " + svg.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string text = read_text(svg.path());
    EXPECT_NE(text.find("synthetic data (nothing decoded)"), std::string::npos) << "the fastest: synthetic";
    EXPECT_NE(text.find(", spot"), std::string::npos) << "the cheapest: spot";
}

}  // namespace
}  // namespace epochcast::testing
