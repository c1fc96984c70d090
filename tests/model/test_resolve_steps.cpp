// The steps CostModel::resolve() is made of, each on its own: the checks of the batch and the
// memory, the network's latency and bandwidth parameter, the price. The figures are recomputed
// here from the inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "model/cost_model.hpp"
#include "model/errors.hpp"

namespace epochcast {
namespace {

const CostModel& model() {
    static const CostModel instance(Catalog::built_in(), Calibration::built_in());
    return instance;
}

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

TEST(ResolveSteps, MemoryCheckPassesTheLargestBatchThatFitsAndRefusesOneMore) {
    const Workload& work = model().workload("resnet50", 224, 1000);
    GpuSpec gpu;
    gpu.name = "small";
    gpu.memory_gib = 6;
    const double capacity = 6.0 * 1024 * 1024 * 1024;
    int fits = 1;
    while (training_memory(work, Precision::amp, fits + 1).total_bytes() <= capacity) ++fits;
    const MemoryEstimate memory = checked_training_memory(work, "resnet50", Precision::amp, fits, gpu);
    EXPECT_DOUBLE_EQ(memory.total_bytes(), training_memory(work, Precision::amp, fits).total_bytes());
    EXPECT_LE(memory.total_bytes(), capacity);
    try {
        checked_training_memory(work, "resnet50", Precision::amp, fits + 1, gpu);
        FAIL() << "batch " << fits + 1 << " fits in 6 GiB";
    } catch (const InfeasibleError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("the largest batch that fits is " + std::to_string(fits) + ")"), std::string::npos)
            << message;
        EXPECT_NE(message.find("6 GiB of a small"), std::string::npos) << message;
    }
    gpu.memory_gib = 0.5;  // less than the CUDA context alone
    EXPECT_THROW(checked_training_memory(work, "resnet50", Precision::amp, 1, gpu), InfeasibleError);
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
    EXPECT_THROW(parameter_server_instance(model().catalog(), s), InputError);
    s.strategy = Strategy::ps;
    s.ps_instance.clear();
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

TEST(ResolveSteps, CrossNodeLatencyIsTheSlowerFabricOfWorkersAndServers) {
    NetworkParams network;
    network.fabric(Interconnect::efa).latency_s = 20e-6;
    network.fabric(Interconnect::tcp).latency_s = 50e-6;
    FabricLatency latency = cross_node_latency(Interconnect::efa, nullptr, network);
    EXPECT_EQ(latency.fabric, Interconnect::efa);
    EXPECT_DOUBLE_EQ(latency.latency_s, 20e-6);
    InstanceSpec server = priced("server", 1, 1);
    server.interconnect = Interconnect::tcp;
    latency = cross_node_latency(Interconnect::efa, &server, network);
    EXPECT_EQ(latency.fabric, Interconnect::tcp);
    EXPECT_DOUBLE_EQ(latency.latency_s, 50e-6);
    network.fabric(Interconnect::tcp).latency_s = 10e-6;  // a faster server keeps the workers' latency
    latency = cross_node_latency(Interconnect::efa, &server, network);
    EXPECT_EQ(latency.fabric, Interconnect::efa);
    EXPECT_DOUBLE_EQ(latency.latency_s, 20e-6);
}

TEST(ResolveSteps, NodeBandwidthFollowsTheCapOnlyWhereTheNodeReachesIt) {
    NetworkParams network;
    network.fabric(Interconnect::tcp).efficiency = 0.8;
    network.fabric(Interconnect::tcp).cap_GBps = 5;
    InstanceSpec node = priced("node", 1, 1);
    node.network_gbps = 25;  // 3.125 GB/s x 0.8 = 2.5 GB/s: below the cap
    NetworkParameter parameter = node_network_parameter(node, -1, network);
    EXPECT_EQ(parameter.id, (ParameterId{ParameterKind::fabric_efficiency, static_cast<int>(Interconnect::tcp)}));
    EXPECT_DOUBLE_EQ(parameter.value, 0.8);
    node.network_gbps = 100;  // 12.5 GB/s x 0.8 = 10 GB/s: capped at 5
    parameter = node_network_parameter(node, -1, network);
    EXPECT_EQ(parameter.id, (ParameterId{ParameterKind::fabric_cap, static_cast<int>(Interconnect::tcp)}));
    EXPECT_DOUBLE_EQ(parameter.value, 5.0);
    // EFA with no adapter in use falls back to sockets, and to their parameters.
    node.interconnect = Interconnect::efa;
    node.efa_adapters = 4;
    network.fabric(Interconnect::efa).efficiency = 0.9;
    parameter = node_network_parameter(node, 0, network);
    EXPECT_EQ(parameter.id.index, static_cast<int>(Interconnect::tcp));
    parameter = node_network_parameter(node, -1, network);
    EXPECT_EQ(parameter.id, (ParameterId{ParameterKind::fabric_efficiency, static_cast<int>(Interconnect::efa)}));
    EXPECT_DOUBLE_EQ(parameter.value, 0.9);
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

TEST(ResolveSteps, GivenEpochsHaveNoBandAndNoRecipe) {
    Scenario s;
    s.epochs = 42;
    ResolvedScenario r;
    set_epochs(r, model().convergence(), s, 256);
    EXPECT_DOUBLE_EQ(r.epochs, 42);
    EXPECT_DOUBLE_EQ(r.epochs_low, 42);
    EXPECT_DOUBLE_EQ(r.epochs_high, 42);
    EXPECT_EQ(r.epochs_basis, EpochsBasis::given);
    EXPECT_EQ(r.epochs_recipe, -1);
    const double largest = model().convergence().largest_published_batch(s.model);
    ASSERT_GT(largest, 256);
    EXPECT_FALSE(r.global_batch_beyond_published);
    set_epochs(r, model().convergence(), s, 2 * largest);
    EXPECT_TRUE(r.global_batch_beyond_published);
}

TEST(ResolveSteps, ResolveTakesEachFieldsParameterFromItsStep) {
    // p3.16xlarge workers on sockets with m4.16xlarge servers: the bandwidth rows are the ones
    // node_network_parameter names, the latency row the slower fabric's.
    Scenario s;
    s.instance = "p3.16xlarge";
    s.nodes = 8;
    s.strategy = Strategy::ps;
    s.ps_instance = "m4.16xlarge";
    s.ps_nodes = 4;
    const ResolvedScenario r = model().resolve(s);
    const NetworkParams& net = model().calibration().network;
    const NetworkParameter worker = node_network_parameter(model().catalog().instance("p3.16xlarge"), -1, net);
    const auto row = [&](ParameterId id) {
        const std::vector<ParameterId>& rows = model().parameters();
        return static_cast<int>(std::find(rows.begin(), rows.end(), id) - rows.begin());
    };
    const FieldSensitivity& inter = r.sensitivity[static_cast<std::size_t>(SensitiveField::inter_bandwidth)];
    EXPECT_EQ(inter.parameter, row(worker.id));
    EXPECT_DOUBLE_EQ(inter.log_field_per_coordinate,
                     log_value_per_coordinate(coordinate_of(worker.id.kind), worker.value));
    const FabricLatency latency = cross_node_latency(r.interconnect, &model().catalog().instance("m4.16xlarge"), net);
    EXPECT_DOUBLE_EQ(r.inter_latency_s, latency.latency_s);
    EXPECT_EQ(r.sensitivity[static_cast<std::size_t>(SensitiveField::inter_latency)].parameter,
              row({ParameterKind::fabric_latency, static_cast<int>(latency.fabric)}));
    EXPECT_DOUBLE_EQ(r.cluster_usd_per_hour, 8 * 24.48 + 4 * 3.2);
}

}  // namespace
}  // namespace epochcast
