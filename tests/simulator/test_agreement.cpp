// Issue 4's first criterion: with no jitter and no contention, the simulation and the closed form
// agree within 2% on the seed clusters. What is compared (docs/model.md, "Simulation"): the
// simulated mean iteration against predict's iteration without its straggler term (S1), since
// with no jitter there are no stragglers to wait for.
#include <gtest/gtest.h>

#include "model/collectives.hpp"
#include "model/cost_model.hpp"
#include "model/iteration.hpp"
#include "simulator/simulation.hpp"

namespace epochcast {
namespace {

const CostModel& model() {
    static const CostModel instance(Catalog::built_in(), Calibration::built_in());
    return instance;
}

sim::SimulationOptions deterministic() {
    sim::SimulationOptions options;
    options.iterations = 3;
    options.jitter = 0.0;
    return options;
}

struct Agreement {
    double simulated_s = 0;
    double predicted_s = 0;
    sim::SimulationResult result;
    Prediction prediction;
    double error() const { return std::abs(simulated_s - predicted_s) / predicted_s; }
};

Agreement compare(const Scenario& scenario) {
    Agreement a;
    a.prediction = model().predict(scenario);
    a.predicted_s = a.prediction.iteration_s - a.prediction.sync_s;
    a.result = sim::simulate(model(), scenario, deterministic());
    a.simulated_s = sim::describe(a.result.iteration_s).mean;
    return a;
}

Scenario seed_cluster(Strategy strategy, Framework framework, int nodes) {
    Scenario s;
    s.instance = "p3.16xlarge";
    s.nodes = nodes;
    s.batch_per_gpu = 256;
    s.precision = Precision::amp;
    s.strategy = strategy;
    s.framework = framework;
    s.stack = SoftwareStack::legacy;  // the seeds' 2018 frameworks
    return s;
}

TEST(Agreement, ParameterServers64V100) {
    Scenario s = seed_cluster(Strategy::ps, Framework::mxnet, 8);
    s.ps_instance = "m4.16xlarge";
    s.ps_nodes = 16;
    const Agreement a = compare(s);
    EXPECT_LT(a.error(), 0.02) << "simulated " << a.simulated_s << " s, predicted " << a.predicted_s << " s";
    EXPECT_EQ(a.result.iteration_s.size(), 3u);
}

TEST(Agreement, Hierarchical64V100) {
    const Agreement a = compare(seed_cluster(Strategy::hierarchical, Framework::tensorflow, 8));
    EXPECT_LT(a.error(), 0.02) << "simulated " << a.simulated_s << " s, predicted " << a.predicted_s << " s";
    EXPECT_EQ(a.result.granularity, sim::Granularity::step);
}

TEST(Agreement, Hierarchical256V100) {
    const Scenario s = seed_cluster(Strategy::hierarchical, Framework::tensorflow, 32);
    const Agreement a = compare(s);
    // The simulation reduces the gradients released after Horovod's window opens in a bucket of
    // their own, paying the collective's latencies once more than the closed form's one bucket
    // (docs/model.md, "Simulation"): at 32 nodes 2(M-1) = 62 TCP latencies, 2% of the iteration at
    // 105 us, 5% at the 294 us of the built-in calibration of 2026-11-29. That known difference
    // added, the two agree within 2%.
    const ResolvedScenario r = model().resolve(s);
    const double one_more_bucket_s = allreduce_time_s(r, a.prediction.algorithm, 1.0);
    EXPECT_GT(a.result.buckets_per_iteration, a.prediction.buckets);
    const double expected_s =
        a.predicted_s + (a.result.buckets_per_iteration - a.prediction.buckets) * one_more_bucket_s;
    EXPECT_NEAR(a.simulated_s, expected_s, 0.02 * expected_s)
        << "simulated " << a.simulated_s << " s, predicted " << a.predicted_s << " s and " << one_more_bucket_s
        << " s of latencies a bucket";
}

TEST(Agreement, Ring16V100) {
    const Agreement a = compare(seed_cluster(Strategy::ring, Framework::tensorflow, 2));
    EXPECT_LT(a.error(), 0.02) << "simulated " << a.simulated_s << " s, predicted " << a.predicted_s << " s";
}

TEST(Agreement, ColocatedParameterServers64V100) {
    Scenario s = seed_cluster(Strategy::ps, Framework::mxnet, 8);
    s.ps_colocated = true;
    const Agreement a = compare(s);
    EXPECT_LT(a.error(), 0.02) << "simulated " << a.simulated_s << " s, predicted " << a.predicted_s << " s";
}

// Issue 22: InfiniBand clusters with NCCL's own choice (strategy nccl, the default). PyTorch's DDP
// runs no fusion cycle, so the simulated buckets leave when the closed form says they do. No input
// pipeline: PyTorch's CPU loader bounds a DGX H100 (the loaders are compared below).
Scenario infiniband_cluster(const char* instance, int nodes) {
    Scenario s;
    s.instance = instance;
    s.nodes = nodes;
    s.batch_per_gpu = 256;
    s.precision = Precision::amp;
    s.framework = Framework::pytorch;
    s.loader = Loader::synthetic;
    return s;
}

TEST(Agreement, InfiniBandTree128A100) {
    const Agreement a = compare(infiniband_cluster("dgx-a100", 16));
    EXPECT_EQ(a.prediction.algorithm, Algorithm::tree);
    EXPECT_EQ(a.prediction.interconnect, Interconnect::infiniband);
    EXPECT_LT(a.error(), 0.02) << "simulated " << a.simulated_s << " s, predicted " << a.predicted_s << " s";
}

TEST(Agreement, InfiniBandForcedRing32H100) {
    Scenario s = infiniband_cluster("dgx-h100", 4);
    s.strategy = Strategy::ring;
    const Agreement a = compare(s);
    EXPECT_EQ(a.prediction.algorithm, Algorithm::ring);
    EXPECT_LT(a.error(), 0.02) << "simulated " << a.simulated_s << " s, predicted " << a.predicted_s << " s";
}

TEST(Agreement, NvlinkSharpOneH100Node) {
    const Agreement a = compare(infiniband_cluster("dgx-h100", 1));
    EXPECT_EQ(a.prediction.algorithm, Algorithm::nvls);
    EXPECT_LT(a.error(), 0.02) << "simulated " << a.simulated_s << " s, predicted " << a.predicted_s << " s";
}

// Where they differ on purpose (docs/model.md, "Simulation"): one server for eight workers. The
// closed form (eq. P1) lets pushes and pulls overlap on the server's full-duplex NIC; in the
// simulation a range is pulled only once every worker has pushed it, and ResNet-50's gradients
// arrive in one burst when the overlap window opens, so the server's in-link and then its
// out-link carry 8 G each, one after the other: twice the closed form's time.
TEST(Agreement, OneServerForEightWorkersIsSlowerThanTheClosedForm) {
    Scenario s = seed_cluster(Strategy::ps, Framework::mxnet, 8);
    s.ps_instance = "m4.16xlarge";
    s.ps_nodes = 1;
    const Agreement a = compare(s);
    EXPECT_GT(a.simulated_s, 1.3 * a.predicted_s);
    EXPECT_NEAR(a.result.communication_s, 2 * a.prediction.communication_s, 0.05 * 2 * a.prediction.communication_s);
}

// Issue 57: the replay feeds its GPUs through the same input pipeline as the closed form, for every
// loader: each iteration is eq. I1's smooth maximum of the step (compute and exposed communication;
// no jitter, so no straggler wait) and the loader's time for a batch, the first iteration as well
// (the replay starts as if the run were under way). 16 V100 under PyTorch on a ring with its CPU
// loader was 7.8% apart when only later iterations waited for their batch.
TEST(Agreement, EveryLoaderFeedsTheReplayAsItFeedsTheClosedForm) {
    struct Case {
        const char* instance;
        int nodes;
        Strategy strategy;
    };
    int data_bound = 0;
    for (const Case& c : {Case{"p3.16xlarge", 2, Strategy::ring}, Case{"p4d.24xlarge", 2, Strategy::nccl},
                          Case{"p5.48xlarge", 1, Strategy::nccl}}) {
        for (Loader loader : {Loader::cpu, Loader::dali_cpu, Loader::dali, Loader::synthetic}) {
            Scenario s;
            s.instance = c.instance;
            s.nodes = c.nodes;
            s.strategy = c.strategy;
            s.framework = Framework::pytorch;
            s.precision = Precision::amp;
            s.batch_per_gpu = 256;
            s.loader = loader;
            const Prediction p = model().predict(s);
            const double expected_s = pipelined_s(p.compute_s + p.exposed_communication_s, p.data_s);
            const sim::SimulationResult r = sim::simulate(model(), s, deterministic());
            const std::string what = std::string(c.instance) + " x " + std::to_string(c.nodes) + ", " +
                                     std::string(to_string(loader)) + ": expected " + std::to_string(expected_s) + " s";
            EXPECT_NEAR(sim::describe(r.iteration_s).mean, expected_s, 0.02 * expected_s) << what;
            EXPECT_NEAR(r.iteration_s.front(), expected_s, 0.02 * expected_s) << what << " (the first iteration)";
            EXPECT_EQ(r.data_s, p.data_s) << what;
            if (p.data_s > p.compute_s + p.exposed_communication_s) ++data_bound;
        }
    }
    EXPECT_GE(data_bound, 3);  // the CPU loaders bound the V100s and the A100s: the case that was off
}

}  // namespace
}  // namespace epochcast
