// cli/plot: what the time-against-cost scatter of `plan/sweep --plot` draws of tens of thousands of
// configurations: every front point, each GPU model's own best, a bounded grey sample of the rest;
// one colour group per GPU model, at most ten legend entries, the front's models first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/plot.hpp"
#include "model/catalog.hpp"
#include "model/search.hpp"

namespace epochcast::cli {
namespace {

/// A deterministic cloud: `n` points in `groups` groups, times from 5 min to 40 days, costs from
/// $50 to $10,000, each group a little slower or dearer than the one before.
struct Cloud {
    std::vector<TimeCost> points;
    std::vector<std::size_t> group;
};

Cloud cloud(std::size_t n, std::size_t groups) {
    Cloud c;
    std::uint64_t state = 12345;
    auto uniform = [&] {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53);
    };
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t g = i % groups;
        const double t = 300 * std::pow(10.0, 4 * uniform()) * (1 + 0.05 * static_cast<double>(g));
        const double cost = 50 * std::pow(10.0, 2.3 * uniform()) * (1 + 0.03 * static_cast<double>(g));
        c.points.push_back({t, cost});
        c.group.push_back(g);
    }
    return c;
}

bool dominates(const TimeCost& a, const TimeCost& b) {
    return a.time_to_train_s <= b.time_to_train_s && a.cost_usd <= b.cost_usd &&
           (a.time_to_train_s < b.time_to_train_s || a.cost_usd < b.cost_usd);
}

TEST(PlotThinning, KeepsEveryFrontPointAndABoundedRest) {
    const Cloud c = cloud(56000, 11);
    const std::vector<std::size_t> front = pareto_front(c.points);
    ASSERT_GE(front.size(), 5u);
    const std::size_t max_per_group = 40;
    const std::size_t max_context = 2500;
    const ScatterSelection s = thin_scatter(c.points, front, c.group, max_per_group, max_context);

    EXPECT_EQ(s.front, front) << "every front point, in the front's order";
    EXPECT_LE(s.context.size(), max_context);
    EXPECT_GE(s.context.size(), 500u) << "the background keeps the cloud's shape";
    EXPECT_LE(s.group_fronts.size(), 11 * max_per_group);
    std::set<std::size_t> seen;
    for (const auto* part : {&s.front, &s.group_fronts, &s.context}) {
        for (std::size_t i : *part) EXPECT_TRUE(seen.insert(i).second) << "point " << i << " drawn twice";
    }
    EXPECT_LT(seen.size(), c.points.size() / 10) << "thinned to a fraction";

    // Each group's best: none of its own group is both faster and cheaper.
    for (std::size_t i : s.group_fronts) {
        for (std::size_t j = 0; j < c.points.size(); ++j) {
            if (c.group[j] == c.group[i]) {
                ASSERT_FALSE(dominates(c.points[j], c.points[i])) << i << " by " << j;
            }
        }
    }
    // Every group shows its best.
    std::set<std::size_t> groups;
    for (std::size_t i : s.group_fronts) groups.insert(c.group[i]);
    for (std::size_t i : s.front) groups.insert(c.group[i]);
    EXPECT_EQ(groups.size(), 11u);
}

TEST(PlotThinning, SmallGroupsAreDrawnWholeAndUndrawablePointsNot) {
    std::vector<TimeCost> points = {{600, 100}, {1200, 80}, {1800, 90}, {2400, 200}, {3600, 70}};
    points.push_back({0, 50});                                         // no time: not on a log axis
    points.push_back({900, std::numeric_limits<double>::infinity()});  // no cost
    const std::vector<std::size_t> group = {0, 0, 1, 1, 0, 0, 1};
    const std::vector<std::size_t> front = pareto_front(points);
    const ScatterSelection s = thin_scatter(points, front, group, 40, 2500);
    std::set<std::size_t> drawn(s.front.begin(), s.front.end());
    drawn.insert(s.group_fronts.begin(), s.group_fronts.end());
    drawn.insert(s.context.begin(), s.context.end());
    EXPECT_EQ(drawn, (std::set<std::size_t>{0, 1, 2, 3, 4})) << "a sweep of five is drawn in full";
    EXPECT_TRUE(s.context.empty()) << "no point of a small group is greyed";
}

TEST(PlotGroups, OneEntryPerGpuModelAtMostTenFrontModelsFirst) {
    EXPECT_EQ(gpu_model("H100-SXM5-80GB"), "H100");
    EXPECT_EQ(gpu_model("A100-PCIE-40GB"), "A100");
    EXPECT_EQ(gpu_model("L40S"), "L40S");

    const Catalog catalog = Catalog::built_in();
    // Every rented instance type of the catalog (a score of them, a dozen GPU models), three
    // configurations each; g6e's first one is the fastest and cheapest of all (the front), the
    // others by the order of the list.
    const std::vector<std::string> instances = {"g6e.48xlarge",  "p5.48xlarge",      "p5e.48xlarge",
                                                "p5en.48xlarge", "p6-b200.48xlarge", "p4d.24xlarge",
                                                "p4de.24xlarge", "a3-highgpu-8g",    "Standard_ND96isr_H100_v5",
                                                "g6.48xlarge",   "g5.48xlarge",      "p3.16xlarge",
                                                "p3dn.24xlarge", "g4dn.12xlarge",    "g3.16xlarge",
                                                "p2.16xlarge"};
    std::vector<PlotPoint> points;
    for (std::size_t k = 0; k < instances.size(); ++k) {
        for (int j = 0; j < 3; ++j) {
            PlotPoint p;
            p.scenario.instance = instances[k];
            p.prediction.time_to_train_s = 600.0 * (1 + static_cast<double>(k)) * (1 + j);
            p.prediction.cost_usd = 50.0 * (1 + static_cast<double>(k)) * (3 - j);
            points.push_back(p);
        }
    }
    std::vector<TimeCost> tc;
    for (const PlotPoint& p : points) tc.push_back({p.prediction.time_to_train_s, p.prediction.cost_usd});
    const std::vector<std::size_t> front = pareto_front(tc);
    const PlotGroups groups = plot_groups(points, front, &catalog);

    ASSERT_EQ(groups.of_point.size(), points.size());
    EXPECT_LE(groups.names.size(), 10u) << "a legend a person reads";
    EXPECT_EQ(groups.names.front().rfind("L40S: g6e", 0), 0u) << groups.names.front();
    EXPECT_EQ(groups.names.back().rfind("other GPUs: ", 0), 0u) << groups.names.back();
    // One entry per model: p4d and p4de (A100 40 GB and 80 GB) share one; p5, a3 and the ND
    // H100 v5 another.
    auto entry_of = [&](const std::string& instance) {
        for (std::size_t i = 0; i < points.size(); ++i) {
            if (points[i].scenario.instance == instance) return groups.of_point[i];
        }
        return std::size_t(999);
    };
    EXPECT_EQ(entry_of("p4d.24xlarge"), entry_of("p4de.24xlarge"));
    EXPECT_EQ(entry_of("p5.48xlarge"), entry_of("a3-highgpu-8g"));
    EXPECT_EQ(entry_of("p5.48xlarge"), entry_of("Standard_ND96isr_H100_v5"));
    EXPECT_NE(entry_of("p5.48xlarge"), entry_of("p5e.48xlarge")) << "H200 is not H100";
    EXPECT_EQ(groups.names[entry_of("p5.48xlarge")], "H100: p5, a3-highgpu-8g, ND H100 v5");
    std::set<std::string> distinct(groups.names.begin(), groups.names.end());
    EXPECT_EQ(distinct.size(), groups.names.size());
    // The models ranked last (K80, M60: the slowest and dearest here) are "other".
    EXPECT_EQ(entry_of("p2.16xlarge"), groups.names.size() - 1);
    EXPECT_NE(groups.names.back().find("K80"), std::string::npos) << groups.names.back();

    // Without a catalog, each instance is its own group, still at most ten entries.
    const PlotGroups plain = plot_groups(points, front, nullptr);
    EXPECT_EQ(plain.names.size(), 10u);
    EXPECT_EQ(plain.names.front(), "g6e.48xlarge");
    EXPECT_EQ(plain.names.back().rfind("other instances: ", 0), 0u);
}

}  // namespace
}  // namespace epochcast::cli
