// The cluster a scenario names (model/cluster.hpp), each step on its own: the workers, the servers,
// the precision and the batch. The figures are recomputed here from the inputs.
#include <gtest/gtest.h>

#include "model/cluster.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"

namespace epochcast {
namespace {

const CostModel& model() {
    static const CostModel instance(Catalog::built_in(), Calibration::built_in());
    return instance;
}

TEST(ResolveSteps, GlobalBatchIsNodesTimesGpusTimesBatchWithinTheDataset) {
    Scenario s;
    s.nodes = 3;
    s.dataset_images = 1000;
    EXPECT_DOUBLE_EQ(checked_global_batch(s, 8, 32), 768.0);
    EXPECT_THROW(checked_global_batch(s, 8, 42), InputError);  // 1,008 images: more than an epoch
    EXPECT_THROW(checked_global_batch(s, 8, 0), InputError);
}

TEST(ResolveSteps, PrecisionCheckNamesWhatTheGpuHas) {
    GpuSpec gpu;
    gpu.name = "old";
    gpu.fp32_tflops = 8;
    gpu.fp16_tflops = 16;
    EXPECT_NO_THROW(check_precision(gpu, Precision::amp));
    try {
        check_precision(gpu, Precision::bf16);
        FAIL() << "a GPU without bf16 ran bf16";
    } catch (const InputError& e) {
        EXPECT_STREQ(e.what(), "GPU old has no bf16 arithmetic; use --precision fp32 or amp");
    }
}

TEST(ResolveSteps, ParameterServersOnlyWithStrategyPs) {
    // The look-up: none without ps or with co-located servers, else the catalog's instance (the
    // flags' consistency is checked before, by check_scenario_flags: Limits.FlagsThatGoTogether...).
    Scenario s;
    s.strategy = Strategy::ps;
    s.ps_colocated = true;
    EXPECT_EQ(parameter_server_instance(model().catalog(), s), nullptr);
    s.ps_colocated = false;
    s.ps_nodes = 2;
    s.ps_instance = "m4.16xlarge";
    const InstanceSpec* server = parameter_server_instance(model().catalog(), s);
    ASSERT_NE(server, nullptr);
    EXPECT_EQ(server->name, "m4.16xlarge");
    s.strategy = Strategy::ring;
    s.ps_nodes = 0;
    s.ps_instance.clear();
    EXPECT_EQ(parameter_server_instance(model().catalog(), s), nullptr);
    s.strategy = Strategy::ps;
    s.ps_nodes = 2;
    s.ps_instance = "no-such-instance";
    EXPECT_THROW(parameter_server_instance(model().catalog(), s), InputError);
}

TEST(ResolveSteps, WorkersUseEveryGpuAndAdapterUnlessTold) {
    Scenario s;
    s.instance = "p4d.24xlarge";
    const InstanceSpec& p4d = model().catalog().instance("p4d.24xlarge");
    WorkerNodes workers = resolve_workers(model().catalog(), s);
    EXPECT_EQ(workers.instance, &p4d);
    EXPECT_EQ(workers.gpus_per_node, p4d.gpus);
    EXPECT_EQ(workers.efa_adapters, p4d.efa_adapters);
    s.gpus_per_node = 2;
    s.efa_adapters = 1;
    workers = resolve_workers(model().catalog(), s);
    EXPECT_EQ(workers.gpus_per_node, 2);
    EXPECT_EQ(workers.efa_adapters, 1);
    s.gpus_per_node = p4d.gpus + 1;
    EXPECT_THROW(resolve_workers(model().catalog(), s), InputError);
}

}  // namespace
}  // namespace epochcast
