// Fabrics, links and NCCL's algorithms (docs/model.md, "Communication": eqs. N1, N2, R3, T2, V1,
// A1, B1), and the catalog keys that describe them. Each formula is recomputed here from its
// derivation, and the fabric figures are checked against the published tables they come from.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/collectives.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/whatif.hpp"

namespace epochcast {
namespace {

const Catalog& catalog() {
    static const Catalog instance = Catalog::built_in();
    return instance;
}

const CostModel& model() {
    static const CostModel instance(catalog(), Calibration::built_in());
    return instance;
}

const NetworkParams& network() { return model().calibration().network; }

std::string input_error(const std::string& json, const Catalog& known) {
    try {
        Catalog::parse(json, "mine.json", known);
    } catch (const InputError& error) {
        return error.what();
    }
    ADD_FAILURE() << "expected InputError for " << json;
    return "";
}

// --- the formulas, against their derivations -------------------------------------------------

// --- fabrics: InfiniBand against TCP at the same line rate -----------------------------------

/// dgx-a100 (8 x 200 Gb/s InfiniBand), and the same node on TCP at the same 1,600 Gb/s, as a
/// --catalog file that overrides only the fabric keys would describe it.
Catalog with_tcp_twin() {
    Catalog c = catalog();
    c.merge(Catalog::parse(R"({"schema": "epochcast.catalog/1", "instances": [
        {"name": "dgx-a100-tcp", "gpu": "A100-SXM4-80GB", "gpus": 8, "vcpus": 256, "memory_gib": 2048,
         "network_gbps": 1600, "interconnect": "tcp", "intra_node_GBps": 600, "intra_node_link": "nvlink3",
         "nvswitch": true, "price_usd_per_hour": 0, "source": "test: dgx-a100 on TCP sockets"}]})",
                           "twin.json", c));
    return c;
}

TEST(Fabrics, InfiniBandAllReduceIsFarCheaperThanTcpAtTheSameLineRate) {
    const CostModel m(with_tcp_twin(), Calibration::built_in());
    Scenario s;
    s.instance = "dgx-a100";
    s.nodes = 16;
    s.batch_per_gpu = 256;
    // TensorFlow overlaps little of its all-reduce, so the fabric shows in the throughput (PyTorch's
    // backward pass hides even TCP's all-reduce here).
    s.framework = Framework::tensorflow;
    const Prediction ib = m.predict(s);
    s.instance = "dgx-a100-tcp";
    const Prediction tcp = m.predict(s);
    EXPECT_EQ(ib.interconnect, Interconnect::infiniband);
    EXPECT_EQ(tcp.interconnect, Interconnect::tcp);
    EXPECT_GT(tcp.communication_s, 3 * ib.communication_s)
        << ib.communication_s << " s against " << tcp.communication_s;
    EXPECT_GT(ib.throughput_images_per_s, tcp.throughput_images_per_s);
}

TEST(Fabrics, DgxA100BusBandwidthIsNvidiasPublishedFigure) {
    // NVIDIA/nccl#812 and GTC24 S62129: 192 GB/s of all-reduce bus bandwidth across DGX A100 nodes.
    const InstanceSpec& dgx = catalog().instance("dgx-a100");
    for (int nodes : {4, 16}) {
        const double busbw = allreduce_bus_bandwidth_GBps(dgx, DeviceKind::gpu, 8 * nodes, -1, network());
        EXPECT_LT(std::abs(busbw / 192.0 - 1), 0.15) << nodes << " nodes: " << busbw;
        // A 1 GiB message (nccl-tests' usual top row) is within 15% of it too.
        const AllReducePrediction p = predict_allreduce(dgx, DeviceKind::gpu, 8 * nodes, -1, 1 << 30, network());
        EXPECT_LT(std::abs(p.bus_bandwidth_GBps / 192.0 - 1), 0.15)
            << nodes << " nodes at 1 GiB: " << p.bus_bandwidth_GBps;
    }
}

TEST(Fabrics, EfaBusBandwidthsAreWithinTwentyPercentOfPublishedTables) {
    struct Row {
        const char* instance;
        int nodes;
        Strategy algorithm;
        double published_GBps;
    };
    // Seed 004 (p4d, ring) and traces/published/external_nccl_tests_fabrics.json (p4de, p5).
    const Row rows[] = {{"p4d.24xlarge", 2, Strategy::ring, 42.03}, {"p4de.24xlarge", 2, Strategy::nccl, 78.33},
                        {"p5.48xlarge", 2, Strategy::nccl, 487.09}, {"p5.48xlarge", 4, Strategy::nccl, 356.99},
                        {"p5.48xlarge", 8, Strategy::nccl, 355.36}, {"p5.48xlarge", 16, Strategy::nccl, 356.27},
                        {"p5.48xlarge", 32, Strategy::nccl, 321.10}};
    for (const Row& row : rows) {
        const double busbw = allreduce_bus_bandwidth_GBps(catalog().instance(row.instance), DeviceKind::gpu,
                                                          8 * row.nodes, -1, network(), row.algorithm);
        EXPECT_LT(std::abs(busbw / row.published_GBps - 1), 0.20)
            << row.instance << " x " << row.nodes << ": " << busbw;
    }
}

TEST(Fabrics, TwoNodesRunATreeFasterThanTheLineRateAndManyNodesARing) {
    const InstanceSpec& p4de = catalog().instance("p4de.24xlarge");
    const double line_GBps = p4de.network_gbps / 8;
    const AllReducePrediction two = predict_allreduce(p4de, DeviceKind::gpu, 16, -1, 1e12, network());
    EXPECT_EQ(two.algorithm, Algorithm::tree);
    EXPECT_GT(two.bus_bandwidth_GBps, line_GBps);
    const AllReducePrediction many = predict_allreduce(p4de, DeviceKind::gpu, 128, -1, 1e12, network());
    EXPECT_EQ(many.algorithm, Algorithm::ring);
    EXPECT_LT(many.bus_bandwidth_GBps, line_GBps);
}

TEST(Fabrics, NvlinkSharpInOneHopperNodeOnly) {
    const InstanceSpec& p5 = catalog().instance("p5.48xlarge");
    EXPECT_TRUE(p5.has_nvls());
    EXPECT_FALSE(catalog().instance("p4d.24xlarge").has_nvls());
    const AllReducePrediction p = predict_allreduce(p5, DeviceKind::gpu, 8, -1, 1e12, network());
    EXPECT_EQ(p.algorithm, Algorithm::nvls);
    EXPECT_NEAR(p.bus_bandwidth_GBps, 900 * network().nvls_efficiency, 1e-3);
}

TEST(Fabrics, SmallBucketsAtScaleTakeTheTreeAndPayItsLatencyPerBucket) {
    // The global batch fixed at 2,528 GPUs: 316 DGX H100, 16 images per GPU, buckets of 8 MiB.
    Scenario s;
    s.instance = "dgx-h100";
    s.nodes = 316;
    s.batch_per_gpu = 16;
    s.fusion_threshold_MiB = 8;
    const ResolvedScenario r = model().resolve(s);
    const Communication c = communication(r);
    EXPECT_EQ(c.algorithm, Algorithm::tree);
    EXPECT_EQ(c.buckets, static_cast<int>(std::ceil(r.gradient_bytes / (8.0 * 1024 * 1024))));
    const double bucket = r.gradient_bytes / c.buckets;
    EXPECT_NEAR(c.seconds, c.buckets * allreduce_time_s(r, Algorithm::tree, bucket), 1e-15);
    // The ring's 2(N-1) hops would cost milliseconds per bucket.
    EXPECT_GT(allreduce_time_s(r, Algorithm::ring, bucket), 10 * allreduce_time_s(r, Algorithm::tree, bucket));
    const Prediction p = model().predict(s);
    EXPECT_EQ(p.algorithm, Algorithm::tree);
    EXPECT_EQ(p.buckets, c.buckets);
}

TEST(Fabrics, TheDefaultStrategyIsNcclsCheapestAlgorithm) {
    Scenario s;
    s.instance = "p4d.24xlarge";
    s.nodes = 4;
    const Prediction nccl = model().predict(s);
    s.strategy = Strategy::ring;
    const double ring = model().predict(s).communication_s;
    s.strategy = Strategy::tree;
    const double tree = model().predict(s).communication_s;
    EXPECT_DOUBLE_EQ(nccl.communication_s, std::min(ring, tree));
}

// --- the catalog ---------------------------------------------------------------------------

TEST(CatalogFabric, DefaultsKeepOldCatalogsMeaning) {
    const Catalog mine = Catalog::parse(R"({"schema": "epochcast.catalog/1", "instances": [
        {"name": "a", "gpu": "V100-SXM2-16GB", "gpus": 8, "vcpus": 64, "memory_gib": 488, "network_gbps": 100,
         "efa_adapters": 2, "intra_node_GBps": 300, "price_usd_per_hour": 1, "source": "s"},
        {"name": "b", "gpu": "T4", "gpus": 4, "vcpus": 48, "memory_gib": 192, "network_gbps": 50,
         "intra_node_GBps": 16, "price_usd_per_hour": 1, "source": "s"}]})",
                                        "mine.json", catalog());
    const InstanceSpec& a = mine.instances()[0];
    EXPECT_EQ(a.interconnect, Interconnect::efa);
    EXPECT_EQ(a.nics, 2);
    EXPECT_FALSE(a.gpudirect_rdma);
    EXPECT_EQ(a.intra_link(), IntraLink::nvlink);
    const InstanceSpec& b = mine.instances()[1];
    EXPECT_EQ(b.interconnect, Interconnect::tcp);
    EXPECT_EQ(b.nics, 1);
    EXPECT_EQ(b.intra_link(), IntraLink::pcie);
}

TEST(CatalogFabric, BuiltInInstancesSayWhatJoinsThem) {
    EXPECT_EQ(catalog().instance("dgx-h100").interconnect, Interconnect::infiniband);
    EXPECT_EQ(catalog().instance("dgx-h100").nics, 8);
    EXPECT_TRUE(catalog().instance("dgx-h100").gpudirect_rdma);
    EXPECT_EQ(catalog().instance("p5.48xlarge").interconnect, Interconnect::efa);
    EXPECT_EQ(catalog().instance("p5.48xlarge").intra_link(), IntraLink::nvswitch);
    EXPECT_EQ(catalog().instance("p3.16xlarge").intra_link(), IntraLink::nvlink);
    EXPECT_EQ(catalog().instance("p3.16xlarge").nvlink_generation, 2);
    EXPECT_EQ(catalog().instance("g6e.48xlarge").intra_link(), IntraLink::pcie);
    EXPECT_EQ(catalog().instance("a3-highgpu-8g").interconnect, Interconnect::tcpx);
    for (const char* name :
         {"p4de.24xlarge", "p5.4xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge", "g6.48xlarge",
          "g6e.48xlarge", "dgx-a100", "dgx-h100", "Standard_ND96isr_H100_v5", "a3-highgpu-8g"}) {
        EXPECT_NO_THROW(catalog().instance(name)) << name;
    }
    for (const char* gpu : {"H200-SXM-141GB", "B200", "L40S", "L4", "A100-PCIE-80GB", "H100-PCIE-80GB"}) {
        EXPECT_NO_THROW(catalog().gpu(gpu)) << gpu;
    }
    // The June 2025 cut: p4d at about 21.96 $/h, p5 at about 55.04.
    EXPECT_NEAR(catalog().instance("p4d.24xlarge").usd_per_hour(Pricing::on_demand), 21.96, 0.01);
    EXPECT_NEAR(catalog().instance("p5.48xlarge").usd_per_hour(Pricing::on_demand), 55.04, 0.01);
}

TEST(CatalogFabric, ContradictionsAreRefusedNamingTheKey) {
    auto one = [](const std::string& keys) {
        return R"({"schema": "epochcast.catalog/1", "instances": [{"name": "x", "gpu": "T4", "gpus": 4, "vcpus": 4,
                   "memory_gib": 16, "network_gbps": 50, "intra_node_GBps": 16, "price_usd_per_hour": 1,
                   "source": "s", )" +
               keys + "}]}";
    };
    EXPECT_NE(input_error(one(R"("interconnect": "efa")"), catalog()).find("efa_adapters is 0"), std::string::npos);
    EXPECT_NE(
        input_error(one(R"("interconnect": "infiniband", "efa_adapters": 2)"), catalog()).find("\"efa_adapters\""),
        std::string::npos);
    EXPECT_NE(input_error(one(R"("interconnect": "token-ring")"), catalog()).find("token-ring"), std::string::npos);
    EXPECT_NE(input_error(one(R"("gpudirect_rdma": true)"), catalog()).find("\"gpudirect_rdma\""), std::string::npos);
    EXPECT_NE(input_error(one(R"("intra_node_link": "nvlink9")"), catalog()).find("\"intra_node_link\""),
              std::string::npos);
    EXPECT_NE(input_error(one(R"("nvswitch": true)"), catalog()).find("\"nvswitch\""), std::string::npos);
    EXPECT_NE(input_error(one(R"("nics": 0)"), catalog()).find("\"nics\""), std::string::npos);
}

TEST(CatalogFabric, APriceOnlyOverrideKeepsEveryOtherFigure) {
    Catalog c = catalog();
    c.merge(Catalog::parse(R"({"schema": "epochcast.catalog/1", "instances": [
        {"name": "p4d.24xlarge", "price_usd_per_hour": 19.5, "spot_usd_per_hour": 6}],
        "gpus": [{"name": "K80", "memory_gib": 11.5}]})",
                           "prices.json", catalog()));
    const InstanceSpec& p4d = c.instance("p4d.24xlarge");
    const InstanceSpec& before = catalog().instance("p4d.24xlarge");
    EXPECT_EQ(p4d.usd_per_hour(Pricing::on_demand), 19.5);
    EXPECT_EQ(p4d.usd_per_hour(Pricing::spot), 6);
    EXPECT_EQ(p4d.gpu, before.gpu);
    EXPECT_EQ(p4d.gpus, before.gpus);
    EXPECT_EQ(p4d.network_gbps, before.network_gbps);
    EXPECT_EQ(p4d.interconnect, before.interconnect);
    EXPECT_EQ(p4d.nics, before.nics);
    EXPECT_EQ(p4d.intra_node_link, before.intra_node_link);
    EXPECT_EQ(p4d.source, before.source);
    EXPECT_EQ(c.gpu("K80").memory_gib, 11.5);
    // Overriding one figure of the node keeps its link and fabric.
    c.merge(Catalog::parse(R"({"schema": "epochcast.catalog/1", "instances": [
        {"name": "dgx-a100", "intra_node_GBps": 500, "efa_adapters": 0}]})",
                           "bandwidth.json", c));
    EXPECT_EQ(c.instance("dgx-a100").intra_node_GBps, 500);
    EXPECT_EQ(c.instance("dgx-a100").intra_node_link, "nvlink3");
    EXPECT_TRUE(c.instance("dgx-a100").nvswitch);
    EXPECT_EQ(c.instance("dgx-a100").interconnect, Interconnect::infiniband);
    EXPECT_EQ(c.gpu("K80").fp32_tflops, catalog().gpu("K80").fp32_tflops);
    // A new instance still needs every required key, and the error names the missing one.
    EXPECT_NE(
        input_error(R"({"schema": "epochcast.catalog/1", "instances": [{"name": "new", "price_usd_per_hour": 1}]})",
                    catalog())
            .find("\"gpus\" is missing"),
        std::string::npos);
}

TEST(CatalogFabric, OneChipOneSpeed) {
    // p3.2xlarge holds a V100-SXM2-16GB, p3dn.24xlarge a V100-SXM2-32GB: the same chip.
    EXPECT_EQ(catalog().gpu("V100-SXM2-16GB").chip_or_name(), catalog().gpu("V100-SXM2-32GB").chip_or_name());
    Scenario s;
    s.nodes = 1;
    s.gpus_per_node = 1;
    s.batch_per_gpu = 128;
    s.precision = Precision::amp;
    // The GPU's speed, not the input pipeline's: p3.2xlarge's 8 vCPUs bound a CPU loader.
    s.loader = Loader::synthetic;
    s.instance = "p3.2xlarge";
    const double small = model().predict(s).throughput_images_per_s;
    s.instance = "p3dn.24xlarge";
    const double large = model().predict(s).throughput_images_per_s;
    EXPECT_LT(std::abs(large / small - 1), 0.05) << small << " against " << large;
    EXPECT_EQ(model().resolve(s).curve_origin, CurveOrigin::measured);
}

}  // namespace
}  // namespace epochcast

// --- the global batch fixed (strong scaling) ----------------------------------------------------

namespace epochcast {
namespace {

TEST(GlobalBatch, ThePerGpuBatchIsTheGlobalBatchOverTheGpusAndKeepsTheFixedCost) {
    const CostModel& m = model();
    Scenario s;
    s.instance = "dgx-h100";
    s.nodes = 316;
    s.global_batch = 40448;  // 2,528 GPUs x 16 images
    const ResolvedScenario r = m.resolve(s);
    EXPECT_EQ(r.batch_per_gpu, 16);
    const Prediction p = m.predict(r);
    EXPECT_EQ(p.global_batch, 40448);
    // Eq. C1 at 16 images: the fixed per-iteration cost is in it, and is most of it at this size.
    EXPECT_NEAR(p.compute_s, r.fixed_s + 16 * r.time_per_image_s, 1e-12);
    EXPECT_GT(r.fixed_s, 0.0);
    EXPECT_GT(r.fixed_s, 0.25 * p.compute_s);
    // Twice the nodes: half the per-GPU batch, the same global batch.
    s.nodes = 158;
    EXPECT_EQ(m.resolve(s).batch_per_gpu, 32);
    EXPECT_EQ(m.predict(s).global_batch, 40448);
}

TEST(GlobalBatch, AGlobalBatchTheGpusDoNotDivideIsRefusedNamingBoth) {
    Scenario s;
    s.nodes = 3;  // 24 V100
    s.global_batch = 1000;
    try {
        model().resolve(s);
        ADD_FAILURE() << "expected InputError";
    } catch (const InputError& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("1000"), std::string::npos) << message;
        EXPECT_NE(message.find("24 GPUs"), std::string::npos) << message;
    }
    s.global_batch = -8;
    EXPECT_THROW(model().resolve(s), InputError);
}

TEST(GlobalBatch, TheScalingCurveKeepsTheGlobalBatchAndSkipsSizesThatCannotHoldIt) {
    Scenario s;
    s.instance = "p4d.24xlarge";
    s.nodes = 4;
    s.global_batch = 8192;  // 1 node: 1,024 per A100 40GB does not fit; 2, 4, 8, 16 nodes do
    const std::vector<ScalingPoint> curve = scaling_curve(model(), s, 16);
    ASSERT_FALSE(curve.empty());
    EXPECT_GT(curve.front().nodes, 1);
    for (const ScalingPoint& point : curve) {
        Scenario sized = s;
        sized.nodes = point.nodes;
        EXPECT_EQ(model().predict(sized).global_batch, 8192);
    }
}

}  // namespace
}  // namespace epochcast

namespace epochcast {
namespace {

TEST(Buckets, EachFrameworkAllReducesInItsOwnBucketsUnlessTheScenarioSetsThem) {
    Scenario s;
    s.instance = "p4d.24xlarge";
    s.nodes = 2;
    s.precision = Precision::fp32;  // 4 bytes a gradient: ResNet-50's 25.6 M make 102 MB
    s.batch_per_gpu = 64;
    const double gradient_bytes = model().resolve(s).gradient_bytes;
    auto buckets = [&](Framework framework, double threshold_MiB) {
        Scenario t = s;
        t.framework = framework;
        t.fusion_threshold_MiB = threshold_MiB;
        return model().predict(t).buckets;
    };
    const auto expected = [&](double MiB) { return static_cast<int>(std::ceil(gradient_bytes / (MiB * 1048576))); };
    EXPECT_EQ(buckets(Framework::tensorflow, 0), expected(64));  // Horovod's fusion threshold
    EXPECT_EQ(buckets(Framework::pytorch, 0), expected(25));     // DDP's bucket_cap_mb
    EXPECT_EQ(buckets(Framework::epochcast, 0), expected(4));    // epochcast-train's --fusion-mib
    EXPECT_EQ(buckets(Framework::pytorch, 8), expected(8));
    EXPECT_GT(buckets(Framework::pytorch, 0), buckets(Framework::tensorflow, 0));
    s.fusion_threshold_MiB = -1;
    EXPECT_THROW(model().resolve(s), InputError);
}

}  // namespace
}  // namespace epochcast
