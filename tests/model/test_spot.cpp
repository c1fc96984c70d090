// Spot interruptions (model/spot.hpp, docs/model.md "Spot interruptions"): each formula on its own
// figures, the closed form against a Monte Carlo of the process it describes, and a spot prediction.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/spot.hpp"

namespace epochcast {
namespace {

TEST(Spot, BandsAndRates) {
    EXPECT_DOUBLE_EQ(band_monthly_fraction("<5%"), 0.025);
    EXPECT_DOUBLE_EQ(band_monthly_fraction("5-10%"), 0.075);
    EXPECT_DOUBLE_EQ(band_monthly_fraction(">20%"), 0.25);
    EXPECT_EQ(band_monthly_fraction("7%"), -1);
    // 7.5% of instances interrupted within 730 h: lambda = -ln(0.925) / 730 = 1.0680e-4 per node-hour.
    EXPECT_NEAR(interruptions_per_node_hour(0.075), 1.0680e-4, 1e-8);
}

TEST(Spot, ClosedForms) {
    // 10 h of work, C = 60 s every tau = 1 h: a = 10 h x (1 + 1/60) = 36,600 s.
    EXPECT_DOUBLE_EQ(checkpointed_work_s(36000, 60, 3600), 36600);
    EXPECT_DOUBLE_EQ(loss_per_interruption_s(90, 300, 3600), 2190);
    // Young: sqrt(2 x 60 / (2 / 3600)) = sqrt(216,000) = 464.76 s.
    EXPECT_NEAR(young_checkpoint_interval_s(60, 2.0 / 3600), 464.758, 1e-3);
    // 2 interruptions an hour of 2190 s each: Lambda d = 1.2167 >= 1, the run never finishes.
    EXPECT_TRUE(std::isinf(spot_expected_time_s(36600, 2.0 / 3600, 2190)));
    // 0.1 an hour: Lambda d = 0.060833, E[T] = 36600 / 0.939167 = 38,970.7 s.
    EXPECT_NEAR(spot_expected_time_s(36600, 0.1 / 3600, 2190), 38970.7, 0.1);
    // No interruption: done at a, for sure.
    EXPECT_DOUBLE_EQ(spot_finish_probability(36600, 0, 2190, 36600), 1);
    EXPECT_DOUBLE_EQ(spot_finish_probability(36600, 0.1 / 3600, 2190, 36599), 0);
    // Within a + d: no interruption, or one before a: e^(-Lambda a) (1 + Lambda a e^(-Lambda d)).
    const double rate = 0.1 / 3600, a = 36600, d = 2190;
    EXPECT_NEAR(spot_finish_probability(a, rate, d, a + d), std::exp(-rate * a) * (1 + rate * a * std::exp(-rate * d)),
                1e-12);
    // The probabilities of every count sum to one.
    EXPECT_NEAR(spot_finish_probability(a, rate, d, 1e9), 1.0, 1e-9);
}

/// The process eqs. X3 and X6 describe, drawn: interruptions arrive at Lambda per second of wall time
/// (during the restarts and waits too) until the work is done, each adding d; the run ends at the
/// first t with X(t) = t - d N(t) = a.
double draw_run_s(std::mt19937_64& rng, double a, double rate, double d) {
    std::exponential_distribution<double> gap(rate);
    double t = 0, x = 0;  // wall time, X(t)
    for (;;) {
        const double next = gap(rng);
        if (x + next >= a) return t + (a - x);
        t += next;
        x += next - d;
    }
}

TEST(Spot, ClosedFormAgreesWithMonteCarlo) {
    // 64 nodes at 0.02 interruptions per node-hour (1.28 an hour), 20 h of checkpointed work, each
    // interruption 90 s restart + 300 s wait + 15 min of lost work (tau = 30 min).
    const double rate = 64 * 0.02 / 3600, a = 20 * 3600.0, d = 90 + 300 + 900;
    const double expected = spot_expected_time_s(a, rate, d);
    const double sd = std::sqrt(spot_time_variance_s2(a, rate, d));
    const double deadline = a + 30 * d;
    const double p = spot_finish_probability(a, rate, d, deadline);
    std::mt19937_64 rng(45);
    constexpr int kRuns = 20000;
    double sum = 0, sum2 = 0;
    int within = 0;
    for (int i = 0; i < kRuns; ++i) {
        const double t = draw_run_s(rng, a, rate, d);
        sum += t;
        sum2 += t * t;
        within += t <= deadline;
    }
    const double mean = sum / kRuns;
    const double sample_sd = std::sqrt(sum2 / kRuns - mean * mean);
    // Four standard errors of the mean (a 1-in-15,000 chance to fail for a right formula), and
    // of the fraction within the deadline.
    EXPECT_NEAR(mean, expected, 4 * sd / std::sqrt(kRuns)) << "sd " << sd;
    EXPECT_NEAR(sample_sd, sd, 0.05 * sd);
    EXPECT_NEAR(static_cast<double>(within) / kRuns, p, 4 * std::sqrt(p * (1 - p) / kRuns)) << "p " << p;
    EXPECT_GT(p, 0.05);
    EXPECT_LT(p, 0.95);  // a deadline that tests the distribution, not its tails
    // The quantiles bracket the draws.
    EXPECT_LT(spot_time_quantile_s(a, rate, d, 0.025), expected);
    EXPECT_GT(spot_time_quantile_s(a, rate, d, 0.975), expected);
}

TEST(Spot, PredictionOfASpotRun) {
    const CostModel model(Catalog::built_in(), Calibration::built_in());
    Scenario s;
    s.instance = "p3.16xlarge";
    s.nodes = 8;
    s.pricing = Pricing::on_demand;
    const Prediction on_demand = model.checked_predict(model.resolve(s));
    s.pricing = Pricing::spot;
    s.spot_interruptions_per_node_hour = 0.01;
    const Prediction spot = model.checked_predict(model.resolve(s));
    ASSERT_TRUE(spot.spot.modelled);
    const SpotRun& x = spot.spot;
    EXPECT_DOUBLE_EQ(x.cluster_interruptions_per_hour, 0.08);
    EXPECT_NEAR(x.work_s, on_demand.time_to_train_s - on_demand.startup_s - 90 * on_demand.checkpoint_s, 1e-6);
    // A checkpoint each epoch, as the on-demand run writes them: Young's interval is longer here.
    EXPECT_NEAR(x.recommended_checkpoint_interval_s, std::sqrt(2 * x.checkpoint_write_s / (0.08 / 3600)), 1e-9);
    EXPECT_GT(x.recommended_checkpoint_interval_s, x.work_s / 90);
    EXPECT_NEAR(x.checkpoint_interval_s, x.work_s / 90, 1e-9);
    // Never interrupted, it is the on-demand run.
    EXPECT_NEAR(x.uninterrupted_time_s, on_demand.time_to_train_s, 1e-6);
    const double a = x.work_s * (1 + x.checkpoint_write_s / x.checkpoint_interval_s);
    const double d = spot.startup_s + kDefaultSpotReplacementWaitS + x.checkpoint_interval_s / 2;
    EXPECT_NEAR(spot.time_to_train_s, spot.startup_s + a / (1 - 0.08 / 3600 * d), 1e-6);
    EXPECT_NEAR(x.expected_interruptions, 0.08 / 3600 * (spot.time_to_train_s - spot.startup_s), 1e-9);
    EXPECT_NEAR(spot.cost_usd, spot.time_to_train_s / 3600 * spot.cluster_usd_per_hour, 1e-6);
    EXPECT_GT(spot.time_to_train_s, x.uninterrupted_time_s);
    EXPECT_DOUBLE_EQ(x.uninterrupted_time_s, spot.startup_s + a);
    EXPECT_LT(spot.time_to_train_interval.low, spot.time_to_train_s);
    EXPECT_GT(spot.time_to_train_interval.high, spot.time_to_train_s);

    // One node taken back twice an hour: Young's interval is shorter than an epoch, and is the one.
    s.nodes = 1;
    s.spot_interruptions_per_node_hour = 2;
    const Prediction often = model.checked_predict(model.resolve(s));
    EXPECT_NEAR(often.spot.checkpoint_interval_s, std::sqrt(2 * often.spot.checkpoint_write_s / (2.0 / 3600)), 1e-9);
    EXPECT_LT(often.spot.checkpoint_interval_s, often.spot.work_s / 90);

    // 64 nodes interrupted 2 times a node-hour with 30-minute checkpoints: never finishes, refused.
    s.nodes = 64;
    s.spot_interruptions_per_node_hour = 2;
    s.checkpoint_interval_s = 1800;
    try {
        model.checked_predict(model.resolve(s));
        FAIL() << "a run that never finishes was predicted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("never finishes"), std::string::npos) << e.what();
    }
    s.spot_interruptions_per_node_hour = -2;
    EXPECT_THROW(model.resolve(s), InputError);
    s.spot_interruptions_per_node_hour = NAN;
    EXPECT_THROW(model.resolve(s), InputError);
}

/// 16 x p4d.24xlarge on spot, each node taken back 0.05 times an hour: the elastic tests' cluster.
Scenario p4d_spot_cluster() {
    Scenario s;
    s.instance = "p4d.24xlarge";
    s.nodes = 16;
    s.pricing = Pricing::spot;
    s.spot_interruptions_per_node_hour = 0.05;
    return s;
}

// Eq. X7 (seed 003's dynamic training on spot): an elastic run goes on without a lost node until its
// replacement joins. Each figure recomputed from the fixed run's and the model's own throughput on
// one node fewer; elastic wins where a restart costs less than the wait at the smaller cluster's
// throughput (R < W eta), and loses where replacements come at once (W = 0: two restarts for one).
TEST(Spot, AnElasticRunGoesOnWithoutTheLostNode) {
    EXPECT_DOUBLE_EQ(elastic_loss_per_interruption_s(90, 300, 600, 0.9), 2 * 90 + 600 / 2.0 + 300 * 0.1);
    const CostModel model(Catalog::built_in(), Calibration::built_in());
    Scenario s = p4d_spot_cluster();
    const Prediction spot = model.checked_predict(model.resolve(s));
    const SpotRun& x = spot.spot;
    ASSERT_TRUE(x.elastic);
    Scenario smaller = s;
    smaller.nodes = 15;
    smaller.pricing = Pricing::on_demand;
    const double eta = model.predict(smaller).throughput_images_per_s / spot.throughput_images_per_s;
    EXPECT_NEAR(x.elastic_throughput_ratio, eta, 1e-9);
    EXPECT_GT(eta, 0.9);
    EXPECT_LT(eta, 1.0);
    const double d_e = 2 * x.restart_s + x.checkpoint_interval_s / 2 + x.replacement_wait_s * (1 - eta);
    EXPECT_NEAR(x.elastic_loss_per_interruption_s, d_e, 1e-6);
    const double rate_per_s = 16 * 0.05 / 3600;
    const double expected_s = x.checkpointed_work_s / (1 - rate_per_s * d_e);
    EXPECT_NEAR(x.elastic_time_to_train_s, spot.startup_s + expected_s, 1e-6);
    EXPECT_NEAR(x.elastic_expected_interruptions, rate_per_s * expected_s, 1e-9);
    EXPECT_NEAR(x.elastic_cost_usd,
                x.elastic_time_to_train_s / 3600 * spot.cluster_usd_per_hour -
                    x.elastic_expected_interruptions * x.replacement_wait_s * spot.cluster_usd_per_hour / 3600 / 16,
                1e-6);
    // R = 90 s < W eta = 300 s x 0.94: faster and cheaper than waiting for each replacement.
    EXPECT_LT(x.elastic_time_to_train_s, spot.time_to_train_s);
    EXPECT_LT(x.elastic_cost_usd, spot.cost_usd);

    s.spot_replacement_wait_s = 0;  // replacements at once: the second restart is pure loss
    const Prediction instant = model.checked_predict(model.resolve(s));
    ASSERT_TRUE(instant.spot.elastic);
    EXPECT_GT(instant.spot.elastic_time_to_train_s, instant.time_to_train_s);

    s.nodes = 1;  // nothing to shrink to
    EXPECT_FALSE(model.checked_predict(model.resolve(s)).spot.elastic);
    Scenario servers;  // dedicated parameter servers stay
    servers.instance = "p3.16xlarge";
    servers.nodes = 4;
    servers.strategy = Strategy::ps;
    servers.ps_instance = "c5n.18xlarge";
    servers.ps_nodes = 2;
    servers.pricing = Pricing::spot;
    servers.spot_interruptions_per_node_hour = 0.05;
    const Prediction ps = model.checked_predict(model.resolve(servers));
    ASSERT_TRUE(ps.spot.modelled);
    EXPECT_FALSE(ps.spot.elastic);
}

// Scenario::spot_elastic prices the run as eq. X7's: its time and cost are the elastic figures, its
// interruptions each cost d_e, the band is X6's quantiles with d_e (each quantile a + k d_e leaving k
// waits unpaid), and the run that waits is kept beside it. Elastic finishes where waiting would not;
// a cluster that cannot shrink, or another pricing, is refused.
TEST(Spot, AnElasticRunIsPricedAsEqX7) {
    const CostModel model(Catalog::built_in(), Calibration::built_in());
    Scenario s = p4d_spot_cluster();
    const Prediction waiting = model.checked_predict(model.resolve(s));
    s.spot_elastic = true;
    const Prediction elastic = model.checked_predict(model.resolve(s));
    const SpotRun& x = elastic.spot;
    ASSERT_TRUE(x.elastic_priced);
    EXPECT_FALSE(waiting.spot.elastic_priced);
    EXPECT_DOUBLE_EQ(elastic.time_to_train_s, waiting.spot.elastic_time_to_train_s);
    EXPECT_NEAR(elastic.cost_usd, waiting.spot.elastic_cost_usd, 1e-9);
    EXPECT_DOUBLE_EQ(x.waiting_time_to_train_s, waiting.time_to_train_s);
    EXPECT_DOUBLE_EQ(x.waiting_cost_usd, waiting.cost_usd);
    EXPECT_DOUBLE_EQ(x.loss_per_interruption_s, x.elastic_loss_per_interruption_s);
    EXPECT_DOUBLE_EQ(x.expected_interruptions, x.elastic_expected_interruptions);
    EXPECT_NEAR(x.expected_downtime_s, x.expected_interruptions * 2 * x.restart_s, 1e-9);
    const double rate_per_s = 16 * 0.05 / 3600;
    const double node_usd_per_s = elastic.cluster_usd_per_hour / 3600 / 16;
    // The band's slow end: X6's 97.5% quantile at the throughput band's slow end with the most epochs
    // (no target: the given epochs), its money less k unpaid waits.
    const double a_slow = (90 * 1281167 / elastic.interval.low) * (1 + x.checkpoint_write_s / x.checkpoint_interval_s);
    const double t_slow = spot_time_quantile_s(a_slow, rate_per_s, x.elastic_loss_per_interruption_s, 0.975);
    EXPECT_NEAR(elastic.time_to_train_interval.high, elastic.startup_s + t_slow, 1e-6);
    const double k_slow = std::round((t_slow - a_slow) / x.elastic_loss_per_interruption_s);
    EXPECT_NEAR(elastic.cost_interval.high,
                (elastic.startup_s + t_slow) / 3600 * elastic.cluster_usd_per_hour -
                    k_slow * x.replacement_wait_s * node_usd_per_s,
                1e-6);
    EXPECT_LT(elastic.time_to_train_interval.low, elastic.time_to_train_s);

    // 64 nodes at 0.25 an hour each: waiting never finishes (16 x 6.5 min an hour), elastic does.
    s.instance = "p3.16xlarge";
    s.nodes = 64;
    s.spot_interruptions_per_node_hour = 0.25;
    const Prediction only = model.checked_predict(model.resolve(s));
    EXPECT_TRUE(only.spot.elastic_priced);
    EXPECT_TRUE(std::isfinite(only.time_to_train_s));
    EXPECT_FALSE(std::isfinite(only.spot.waiting_time_to_train_s));
    s.spot_elastic = false;
    try {
        model.checked_predict(model.resolve(s));
        FAIL() << "a run that never finishes was predicted";
    } catch (const InfeasibleError& e) {
        EXPECT_NE(std::string(e.what()).find("--elastic-spot (it would take about"), std::string::npos) << e.what();
    }

    s.spot_elastic = true;
    s.spot_interruptions_per_node_hour = -1;  // the catalog's band
    s.instance = "a2-highgpu-8g";             // Google Cloud: none in the catalog
    EXPECT_THROW(model.checked_predict(model.resolve(s)), InfeasibleError);
    s.instance = "p3.16xlarge";
    s.nodes = 1;
    EXPECT_THROW(model.resolve(s), InputError);
    s.nodes = 4;
    s.pricing = Pricing::on_demand;
    EXPECT_THROW(model.resolve(s), InputError);
    s.pricing = Pricing::spot;
    s.strategy = Strategy::ps;
    s.ps_instance = "c5n.18xlarge";
    s.ps_nodes = 2;
    EXPECT_THROW(model.resolve(s), InputError);
}

// A replacement node that stages the dataset on its own drives (local-nvme) copies it before it
// joins, as every worker did before training: the wait is the given one plus that copy, and each
// interruption pays one more copy's requests. Seed 004's two hours of staging make the elastic run
// (which trains on through the wait) the better one by far.
TEST(Spot, AReplacementNodeStagesItsOwnCopy) {
    const CostModel model(Catalog::built_in(), Calibration::built_in());
    Scenario s = p4d_spot_cluster();
    s.nodes = 4;
    const Prediction bare = model.checked_predict(model.resolve(s));
    EXPECT_DOUBLE_EQ(bare.spot.replacement_wait_s, kDefaultSpotReplacementWaitS);
    EXPECT_EQ(bare.spot.replacement_staging_usd, 0);
    s.storage = Store::local_nvme;
    const ResolvedScenario r = model.resolve(s);
    const Prediction staged = model.checked_predict(r);
    const SpotRun& x = staged.spot;
    ASSERT_GT(staged.staging_s, 3600);
    EXPECT_DOUBLE_EQ(x.replacement_wait_s, kDefaultSpotReplacementWaitS + staged.staging_s);
    EXPECT_DOUBLE_EQ(x.replacement_staging_usd, r.staging_usd / 4);
    EXPECT_DOUBLE_EQ(x.loss_per_interruption_s, x.restart_s + x.replacement_wait_s + x.checkpoint_interval_s / 2);
    // The money: the cluster over the wall time, the first copies, and one more per interruption.
    s.pricing = Pricing::on_demand;
    const Prediction on_demand = model.checked_predict(model.resolve(s));
    EXPECT_NEAR(staged.data_transfer_usd,
                on_demand.data_transfer_usd + x.expected_interruptions * x.replacement_staging_usd, 1e-9);
    ASSERT_TRUE(x.elastic);
    EXPECT_LT(x.elastic_time_to_train_s, 0.9 * staged.time_to_train_s);
}

TEST(Spot, CatalogBandsAreStrict) {
    const Catalog catalog = Catalog::built_in();
    const Price* p3 = catalog.instance("p3.16xlarge").price(Pricing::spot);
    ASSERT_TRUE(p3 && p3->interruptions);
    EXPECT_GT(p3->interruptions->per_node_hour, 0);
    const std::string bad =
        R"({"schema": "epochcast.catalog/1", "instances": [{"name": "p3.16xlarge", "prices": {"spot":
        {"usd_per_hour": 7, "interruptions": {"band": "7%"}}}}]})";
    try {
        Catalog::parse(bad, "x.json", catalog);
        FAIL() << "a band not published was read";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("band"), std::string::npos) << e.what();
    }
    const std::string on_demand =
        R"({"schema": "epochcast.catalog/1", "instances": [{"name": "p3.16xlarge", "prices": {"on-demand":
        {"usd_per_hour": 7, "interruptions": {"band": "<5%"}}}}]})";
    EXPECT_THROW(Catalog::parse(on_demand, "x.json", catalog), InputError);
}

}  // namespace
}  // namespace epochcast
