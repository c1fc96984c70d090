// The run's money (model/run_cost.hpp): the cluster's price by the hour at its pricing, and the
// start-up it pays once (eq. L1).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/run_cost.hpp"

namespace epochcast {
namespace {

/// An instance sold on demand and, where `spot_usd_per_hour` > 0, as spot; 0 and 0: a machine you own.
InstanceSpec priced(std::string name, double usd_per_hour, double spot_usd_per_hour) {
    InstanceSpec spec;
    spec.name = std::move(name);
    if (usd_per_hour > 0)
        spec.prices[static_cast<std::size_t>(Pricing::on_demand)] = Price{usd_per_hour, "", "", false, std::nullopt};
    if (spot_usd_per_hour > 0)
        spec.prices[static_cast<std::size_t>(Pricing::spot)] = Price{spot_usd_per_hour, "", "", false, std::nullopt};
    return spec;
}

TEST(ResolveSteps, ClusterPriceIsWorkersPlusServersAtThePricing) {
    Scenario s;
    s.nodes = 4;
    s.ps_nodes = 2;
    const InstanceSpec worker = priced("worker", 10, 3);
    const InstanceSpec server = priced("server", 2, 0.5);
    EXPECT_DOUBLE_EQ(cluster_price_usd_per_hour(s, worker, &server), 4 * 10 + 2 * 2);
    EXPECT_DOUBLE_EQ(cluster_price_usd_per_hour(s, worker, nullptr), 4 * 10);
    s.pricing = Pricing::spot;
    EXPECT_DOUBLE_EQ(cluster_price_usd_per_hour(s, worker, &server), 4 * 3 + 2 * 0.5);
    // An instance with prices but none under the pricing is refused, naming it and how it is sold.
    const InstanceSpec no_spot = priced("no-spot", 2, 0);
    try {
        cluster_price_usd_per_hour(s, worker, &no_spot);
        ADD_FAILURE() << "a server without a spot price was priced as spot";
    } catch (const InputError& error) {
        EXPECT_EQ(std::string(error.what()), "the catalog has no spot price for 'no-spot' (it is sold as: on-demand)");
    }
    EXPECT_TRUE(cluster_priced(worker, &no_spot));
    // A machine you own has no price at all: it adds nothing, and the cluster is not priced.
    const InstanceSpec owned = priced("owned", 0, 0);
    EXPECT_DOUBLE_EQ(cluster_price_usd_per_hour(s, owned, nullptr), 0.0);
    EXPECT_FALSE(cluster_priced(owned, nullptr));
    EXPECT_FALSE(cluster_priced(worker, &owned));
    s.pricing = Pricing::capacity_block;
    EXPECT_THROW(cluster_price_usd_per_hour(s, worker, nullptr), InputError);
    EXPECT_DOUBLE_EQ(cluster_price_usd_per_hour(s, owned, nullptr), 0.0);
}

// Eq. L1: flat at seed 001's 90 s up to 256 GPUs, then 8.5 s a doubling (MLPerf Training's logged
// initialisation, the median of NVIDIA's per-round fits), unless --startup names it.
TEST(Startup, FlatToSeed001sLargestClusterThenGrowsWithEachDoubling) {
    const Calibration c = Calibration::built_in();
    ASSERT_DOUBLE_EQ(c.startup_s, 90);
    ASSERT_DOUBLE_EQ(c.startup_s_per_doubling, 8.5);
    EXPECT_DOUBLE_EQ(startup_time_s(c, 1), 90);
    EXPECT_DOUBLE_EQ(startup_time_s(c, 256), 90);
    EXPECT_DOUBLE_EQ(startup_time_s(c, 512), 98.5);
    EXPECT_DOUBLE_EQ(startup_time_s(c, 4096), 90 + 4 * 8.5);
    EXPECT_NEAR(startup_time_s(c, 3000), 90 + 8.5 * std::log2(3000.0 / 256), 1e-12);

    const CostModel model(Catalog::built_in(), c);
    Scenario s;
    s.instance = "p5.48xlarge";
    s.nodes = 512;  // 4,096 H100s
    EXPECT_DOUBLE_EQ(model.resolve(s).startup_s, 124);
    EXPECT_DOUBLE_EQ(model.checked_predict(s).startup_s, 124);
    s.startup_s = 300;  // --startup 5min
    EXPECT_DOUBLE_EQ(model.resolve(s).startup_s, 300);
    s.startup_s = -1;
    s.nodes = 32;
    EXPECT_DOUBLE_EQ(model.resolve(s).startup_s, 90);

    // A calibration file written before the growth takes the data-free prior's.
    std::string text = c.to_json();
    const std::string key = "\"startup_s_per_doubling\": 8.5";
    ASSERT_NE(text.find(key), std::string::npos);
    text.replace(text.find(key), key.size(), "\"startup_s_per_doubling_unused\": 0");
    EXPECT_DOUBLE_EQ(Calibration::parse(text, "old.json").startup_s_per_doubling, 8.5);
}

}  // namespace
}  // namespace epochcast
