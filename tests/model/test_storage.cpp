// The data, evaluation and start-up (model/storage.hpp; docs/model.md "The data", "Evaluation",
// "Start-up"; issue 45, items 2-4): each formula on its own figures, seed 004's staging time, a store
// that bounds a run and one that does not, the money, and the bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/storage.hpp"

namespace epochcast {
namespace {

const CostModel& model() {
    static const CostModel built(Catalog::built_in(), Calibration::built_in());
    return built;
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

TEST(Storage, Formulas) {
    EXPECT_DOUBLE_EQ(demanded_read_Bps(10'000, 115'000), 1.15e9);
    // 1.2 TiB at 125 MB/s/TiB = 150 MB/s, under 8 clients at 1.25 GB/s each.
    EXPECT_DOUBLE_EQ(store_deliverable_Bps(150e6, 1.25e9, 8), 150e6);
    EXPECT_DOUBLE_EQ(store_deliverable_Bps(0, 1.25e9, 8), 10e9);
    EXPECT_TRUE(std::isinf(store_deliverable_Bps(0, 0, 8)));
    EXPECT_DOUBLE_EQ(store_images_per_s_per_gpu(150e6, 115'000, 32), 150e6 / 115'000 / 32);
    // 1,000 files at 50 ms, 10 at once: 5 s; 1 GB at 100 MB/s: 10 s.
    EXPECT_DOUBLE_EQ(staging_time_s(1000, 1e9, 0.05, 10, 100e6), 10);
    EXPECT_DOUBLE_EQ(staging_time_s(1000, 1e8, 0.05, 10, 100e6), 5);
    // 1,228.8 GB for 73 h at $0.145 per GB-month: 1,228.8 x 0.145 x 0.1 = $17.8176.
    EXPECT_NEAR(storage_usd(1228.8, 0.145, 73), 17.8176, 1e-9);
    EXPECT_NEAR(transfer_usd(100, 0.03, 10, 0.06, 2e6, 0.0004, 1000, 0.005), 3 + 0.6 + 0.8 + 0.005, 1e-12);
    // 50,000 images on 64 GPUs at 256: ceil(3.05) = 4 iterations of max(0.3 / 3, 0.05) s.
    EXPECT_DOUBLE_EQ(evaluation_pass_s(50'000, 64, 256, 0.3, 0.05), 0.4);
    EXPECT_DOUBLE_EQ(evaluation_pass_s(50'000, 64, 256, 0.3, 0.2), 0.8);
    EXPECT_DOUBLE_EQ(evaluations(90, 1), 90);
    EXPECT_DOUBLE_EQ(evaluations(90, 4), 22);
    EXPECT_DOUBLE_EQ(evaluations(90, 0), 0);
}

TEST(Storage, TheBuiltInDataIsImageNetsAndEveryStoreHasASource) {
    const StorageCatalog& data = StorageCatalog::built_in();
    EXPECT_EQ(data.train_files, 1'281'167);
    EXPECT_NEAR(data.train_image_bytes(), 115'440, 1);
    for (Store store : {Store::local_nvme, Store::fsx_lustre, Store::s3, Store::efs}) {
        EXPECT_FALSE(data.store(store).source.empty()) << to_string(store);
    }
    EXPECT_THROW(data.tier(data.store(Store::fsx_lustre), 300), InputError);
}

Scenario seed004_fsx() {
    Scenario s;
    s.instance = "p3.8xlarge";
    s.nodes = 2;
    s.storage = Store::fsx_lustre;
    s.storage_tib = 1.2;
    return s;
}

// Seed 004: copying ImageNet (train and val) from S3 to FSx for Lustre "takes a couple of hours",
// read as 1.5 to 3 hours. Eq. F4: 1,331,167 files x 50 ms / 10 at once, above the bytes' 154.6 GB at
// 1.2 TiB x 125 MB/s.
TEST(Storage, Seed004StagingToFsxTakesACoupleOfHours) {
    const Prediction p = model().checked_predict(seed004_fsx());
    EXPECT_NEAR(p.staging_s, 1'331'167 * 0.05 / 10, 1e-6);
    EXPECT_GE(p.staging_s, 1.5 * 3600);
    EXPECT_LE(p.staging_s, 3 * 3600);
    const double bytes = 147'897'477'120.0 + 6'744'924'160.0;
    EXPECT_LT(bytes / 150e6, p.staging_s);  // the files bound it, not the bytes
}

TEST(Storage, NoStoreLeavesThePredictionAsItWas) {
    Scenario s;
    s.instance = "p4d.24xlarge";
    s.nodes = 4;
    const ResolvedScenario r = model().resolve(s);
    EXPECT_TRUE(std::isinf(r.storage_images_per_s_per_gpu));
    const Prediction p = model().checked_predict(r);
    EXPECT_EQ(p.staging_s, 0);
    EXPECT_EQ(p.storage_usd, 0);
    EXPECT_EQ(p.data_transfer_usd, 0);
    EXPECT_EQ(p.storage_read_GBps, 0);
    EXPECT_NE(p.bottleneck, Bottleneck::storage);
    EXPECT_NEAR(p.cost_usd, p.time_to_train_s / 3600 * p.cluster_usd_per_hour, 1e-9 * p.cost_usd);
}

// 8 x p4d.24xlarge (64 A100) with DALI: 1.2 TiB at 125 MB/s/TiB delivers 150 MB/s, some 1,300
// images/s: the store bounds the run and is named; at 1000 MB/s/TiB on 24 TiB (24 GB/s, beyond the
// 15 GB/s its GPUs would read) it does not.
TEST(Storage, FsxBoundsALargeClusterAtItsSmallestAndNotAtItsLargestTier) {
    Scenario s;
    s.instance = "p4d.24xlarge";
    s.nodes = 8;
    s.loader = Loader::dali;
    s.storage = Store::fsx_lustre;
    const Prediction bound = model().checked_predict(s);
    EXPECT_EQ(bound.bottleneck, Bottleneck::storage);
    EXPECT_NEAR(bound.storage_read_GBps, 0.15, 1e-12);
    const double image_bytes = 147'897'477'120.0 / 1'281'167;
    // The pipeline time is the store's, eq. F3, and the throughput no more than the store gives.
    EXPECT_NEAR(bound.data_s, 256 / (150e6 / image_bytes / 64), 1e-9);
    EXPECT_LE(bound.throughput_images_per_s, 150e6 / image_bytes * 1.0001);
    EXPECT_GT(bound.demanded_read_GBps, bound.storage_read_GBps);

    s.storage_tib = 24;
    s.storage_tier_MBps_per_TiB = 1000;
    const Prediction free = model().checked_predict(s);
    EXPECT_NE(free.bottleneck, Bottleneck::storage);
    EXPECT_NEAR(free.storage_read_GBps, 24.0, 1e-12);
    EXPECT_LT(free.demanded_read_GBps, free.storage_read_GBps);
    s.storage = Store::none;
    s.storage_tib = s.storage_tier_MBps_per_TiB = 0;
    const double unbound = model().checked_predict(s).throughput_images_per_s;
    EXPECT_NEAR(free.throughput_images_per_s, unbound, 1e-5 * unbound);  // eq. I1's smooth maximum
}

// The money: FSx's capacity for the wall time, staging included; the cluster for the time after
// staging; EFS's reads by the GB.
TEST(Storage, CostLinesAddToTheTotal) {
    Scenario s = seed004_fsx();
    s.eval_every_epochs = 1;  // every epoch reads the validation set too
    const ResolvedScenario r = model().resolve(s);
    const Prediction p = model().checked_predict(r);
    EXPECT_NEAR(p.storage_usd, 1.2 * 1024 * 0.145 * p.time_to_train_s / 3600 / 730, 1e-9);
    EXPECT_NEAR(p.cluster_usd, (p.time_to_train_s - p.staging_s) / 3600 * p.cluster_usd_per_hour, 1e-6);
    EXPECT_NEAR(p.cost_usd, p.cluster_usd + p.storage_usd + p.data_transfer_usd, 1e-9);
    // Staging's GETs: 1,331,167 x $0.0004 / 1,000.
    EXPECT_NEAR(p.data_transfer_usd, 1'331'167 * 0.0004 / 1000, 1e-9);

    s.storage = Store::efs;
    s.storage_tib = 0;
    const Prediction efs = model().checked_predict(s);
    const double train_GB = 147'897'477'120.0 / kGiB, val_GB = 6'744'924'160.0 / kGiB;
    const double checkpoint_GB = r.checkpoint_GB;
    const double expected = 90 * train_GB * 0.03 + 90 * val_GB * 0.03 + 90 * checkpoint_GB * 0.06 +
                            (train_GB + val_GB) * 0.06 + 1'331'167 * 0.0004 / 1000;
    EXPECT_NEAR(efs.data_transfer_usd, expected, 1e-6);
    EXPECT_NEAR(efs.storage_usd, (train_GB + val_GB) * 0.30 * efs.time_to_train_s / 3600 / 730, 1e-9);

    // S3 streamed: no staging, a GET per image read.
    s.storage = Store::s3;
    const Prediction s3 = model().checked_predict(s);
    EXPECT_EQ(s3.staging_s, 0);
    EXPECT_NEAR(s3.data_transfer_usd, (90 * 1'281'167.0 + 90 * 50'000.0) * 0.0004 / 1000 + 90 * 0.005 / 1000, 1e-9);

    // Local NVMe: every node its own copy, the cluster billed for it.
    s.storage = Store::local_nvme;
    const Prediction local = model().checked_predict(s);
    EXPECT_NEAR(local.cluster_usd, local.time_to_train_s / 3600 * local.cluster_usd_per_hour, 1e-6);
    EXPECT_NEAR(local.data_transfer_usd, 2 * 1'331'167 * 0.0004 / 1000, 1e-9);
    EXPECT_EQ(local.storage_usd, 0);
}

// Eqs. E1, E2 and L1 in the time to train.
TEST(Storage, EvaluationAndStartUpAreInTheTimeToTrain) {
    Scenario s;
    s.instance = "p3.16xlarge";
    s.nodes = 8;
    EXPECT_EQ(model().checked_predict(s).evaluations, 0);  // none unless asked
    s.eval_every_epochs = 1;
    const ResolvedScenario r = model().resolve(s);
    const Prediction p = model().checked_predict(r);
    const double compute_s = r.fixed_s + 256 * r.time_per_image_s;
    const double iterations = std::ceil(50'000.0 / (64 * 256));
    EXPECT_NEAR(p.evaluation_s, iterations * std::max(compute_s / 3, p.data_s), 1e-12);
    EXPECT_EQ(p.evaluations, 90);
    EXPECT_NEAR(p.time_to_train_s, p.startup_s + 90 * p.epoch_s + 90 * p.evaluation_s, 1e-9 * p.time_to_train_s);

    s.eval_every_epochs = 4;
    s.startup_s = 600;
    const Prediction q = model().checked_predict(s);
    EXPECT_EQ(q.evaluations, 22);
    EXPECT_EQ(q.startup_s, 600);
    EXPECT_NEAR(q.time_to_train_s, 600 + 90 * q.epoch_s + 22 * q.evaluation_s, 1e-9 * q.time_to_train_s);
    s.eval_every_epochs = 0;
    EXPECT_EQ(model().checked_predict(s).evaluations, 0);
}

TEST(Storage, BadInputsAreRefusedNamingTheFlag) {
    auto refused = [](Scenario s, const char* fragment) {
        try {
            model().resolve(s);
            ADD_FAILURE() << "accepted: " << fragment;
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
        }
    };
    Scenario s;
    s.storage = Store::fsx_lustre;
    s.storage_tib = -1;
    refused(s, "--storage-tib must be a positive number");
    s.storage_tib = std::nan("");
    refused(s, "--storage-tib");
    s.storage_tib = 0.5;
    refused(s, "below the smallest fsx-lustre file system");
    s.storage_tib = 1e6;
    refused(s, "--storage-tib 1e+06 is more than");
    s.storage_tib = 1.2;
    s.storage_tier_MBps_per_TiB = 300;
    refused(s, "--storage-tier 300 is no throughput tier");
    s.storage_tier_MBps_per_TiB = 0;
    s.dataset_images = 20'000'000;
    refused(s, "cannot hold the dataset");
    Scenario t;
    t.storage = Store::s3;
    t.storage_tib = 2.4;
    refused(t, "go with --storage fsx-lustre");
    Scenario u;
    u.eval_every_epochs = -1;
    refused(u, "--eval-every must be at least 0");
    u.eval_every_epochs = 1;
    u.startup_s = -5;
    refused(u, "--startup");
    EXPECT_THROW(parse_store("nfs"), InputError);
}

}  // namespace
}  // namespace epochcast
