// Where the simulation departs from the closed form on purpose: stragglers drawn from a seeded
// distribution, named slow nodes. Also: simulate() can be called again and again in one process.
#include <gtest/gtest.h>

#include "model/cost_model.hpp"
#include "simulator/simulation.hpp"

namespace epochcast {
namespace {

const CostModel& model() {
    static const CostModel instance(Catalog::built_in(), Calibration::built_in());
    return instance;
}

/// `nodes` p3.16xlarge (8 V100 each) under TensorFlow and Horovod's hierarchical all-reduce, with
/// no input pipeline: the compute and the all-reduce set the pace, not the decoding (a pipeline
/// that bounds holds every iteration to its rate but the first).
Scenario hierarchical(int nodes) {
    Scenario s;
    s.instance = "p3.16xlarge";
    s.nodes = nodes;
    s.framework = Framework::tensorflow;
    s.loader = Loader::synthetic;
    s.strategy = Strategy::hierarchical;
    return s;
}

sim::SimulationOptions with_jitter(double jitter, int iterations = 5) {
    sim::SimulationOptions o;
    o.iterations = iterations;
    o.jitter = jitter;
    return o;
}

TEST(Stragglers, NoJitterMeansNoWait) {
    const sim::SimulationResult r = sim::simulate(model(), hierarchical(2), with_jitter(0.0));
    EXPECT_NEAR(r.sync_s, 0.0, 1e-9);
    const sim::Distribution d = sim::describe(r.iteration_s);
    EXPECT_NEAR(d.max - d.min, 0.0, 1e-9);  // every iteration alike
}

TEST(Stragglers, JitterMakesEveryoneWaitForTheSlowest) {
    const Scenario s = hierarchical(8);
    const sim::SimulationResult calm = sim::simulate(model(), s, with_jitter(0.0, 20));
    const sim::SimulationResult noisy = sim::simulate(model(), s, with_jitter(0.077, 20));
    EXPECT_NEAR(noisy.compute_s, calm.compute_s, 0.02 * calm.compute_s);  // the mean GPU is unchanged
    // The wait is the expected maximum of 64 normal draws, about 2.4 sigma (eq. S1 says sqrt(2 ln 64) = 2.88):
    // between 1.5 and 3 sigma of the compute time.
    const double sigma_s = 0.077 * calm.compute_s;
    EXPECT_GT(noisy.sync_s, 1.5 * sigma_s);
    EXPECT_LT(noisy.sync_s, 3.0 * sigma_s);
    EXPECT_GT(sim::describe(noisy.iteration_s).mean, sim::describe(calm.iteration_s).mean + 1.5 * sigma_s);
    EXPECT_GT(sim::describe(noisy.iteration_s).stdev, 0.0);
}

TEST(Stragglers, SameSeedSameDraws) {
    const Scenario s = hierarchical(2);
    sim::SimulationOptions o = with_jitter(0.1);
    o.seed = 42;
    const auto a = sim::simulate(model(), s, o);
    const auto b = sim::simulate(model(), s, o);
    EXPECT_EQ(a.iteration_s, b.iteration_s);
    o.seed = 43;
    EXPECT_NE(sim::simulate(model(), s, o).iteration_s, a.iteration_s);
}

TEST(Stragglers, ASlowNodeSetsThePace) {
    const Scenario s = hierarchical(4);
    const sim::SimulationResult normal = sim::simulate(model(), s, with_jitter(0.0, 3));
    sim::SimulationOptions o = with_jitter(0.0, 3);
    o.slow_nodes.push_back({2, 1.5});
    const sim::SimulationResult slow = sim::simulate(model(), s, o);
    // Everyone waits for node 2, whose compute takes 1.5 times longer; its longer backward pass
    // also hides more of the all-reduce (the window is a fraction of the backward pass).
    const ResolvedScenario r = model().resolve(s);
    const double backward_s = backward_time_s(r.time_per_image_s, r.batch_per_gpu);
    const double expected_extra_s = 0.5 * normal.compute_s - slow.overlap * 0.5 * backward_s;
    EXPECT_NEAR(sim::describe(slow.iteration_s).mean - sim::describe(normal.iteration_s).mean, expected_extra_s,
                0.01 * expected_extra_s);
    // Only one node of four is slow: the mean GPU computes (3 x 1 + 1.5) / 4 = 1.125 times longer.
    EXPECT_NEAR(slow.compute_s / normal.compute_s, 1.125, 1e-6);
}

TEST(Simulation, ReportsItsCostAndGranularity) {
    const sim::SimulationResult r = sim::simulate(model(), hierarchical(2), with_jitter(0.0, 1));
    EXPECT_EQ(r.granularity, sim::Granularity::step);
    EXPECT_GT(r.transfers, 0);
    EXPECT_EQ(r.executions % 16, 0);  // per GPU, the same count
    EXPECT_GT(r.peak_memory_MiB, 1.0);
    EXPECT_GT(r.wall_s, 0.0);
    sim::SimulationOptions coarse = with_jitter(0.0, 1);
    coarse.granularity = sim::Granularity::coarse;
    const sim::SimulationResult c = sim::simulate(model(), hierarchical(2), coarse);
    EXPECT_EQ(c.granularity, sim::Granularity::coarse);
    EXPECT_LT(c.transfers, r.transfers);
    // Without contention the coarse form is the same alpha-beta sum.
    EXPECT_NEAR(c.iteration_s.front(), r.iteration_s.front(), 1e-6 * r.iteration_s.front());
}

}  // namespace
}  // namespace epochcast
