// The data, evaluation and start-up (model/storage.hpp; docs/model.md "The data", "Evaluation",
// "Start-up"; issue 45, items 2-4): each formula on its own figures, seed 004's staging time, a store
// that bounds a run's first epochs and the page cache that serves the later ones, one that bounds
// every epoch and one that bounds none, the money, and the bad inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/convergence.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/storage.hpp"
#include "model/whatif.hpp"

namespace epochcast {
namespace {

const CostModel& model() {
    static const CostModel built(Catalog::built_in(), Calibration::built_in());
    return built;
}

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

/// Eq. F8 as its sum, epoch by epoch: max(warm, cold q^(e-1)), q = 1 - 1/nodes.
double epochs_by_sum(int epochs, int nodes, double cold_s, double warm_s) {
    double total = 0, share = 1;
    for (int e = 1; e <= epochs; ++e, share *= 1.0 - 1.0 / nodes) total += std::max(warm_s, cold_s * share);
    return total;
}

TEST(Storage, PageCacheFormulas) {
    // F7: half of 244 GiB against ImageNet's 137.7 GiB training set; a node that holds it all.
    const double train_bytes = 147'897'477'120.0;
    EXPECT_DOUBLE_EQ(page_cache_hit_fraction(122 * kGiB, train_bytes), 122 * kGiB / train_bytes);
    EXPECT_DOUBLE_EQ(page_cache_hit_fraction(576 * kGiB, train_bytes), 1);
    EXPECT_DOUBLE_EQ(page_cache_hit_fraction(0, train_bytes), 0);
    EXPECT_DOUBLE_EQ(warm_store_images_per_s_per_gpu(300, 0.75), 1200);
    EXPECT_TRUE(std::isinf(warm_store_images_per_s_per_gpu(300, 1)));
    EXPECT_DOUBLE_EQ(warm_store_images_per_s_per_gpu(300, 0), 300);
    // F8 on one node: the first epoch cold, the others warm.
    EXPECT_DOUBLE_EQ(cached_epochs_s(90, 1, 1000, 400), 1000 + 89 * 400);
    EXPECT_DOUBLE_EQ(store_bound_epochs(90, 1, 1000, 400), 1);
    // On 8 nodes the store serves each node's copy over the first epochs: 1000 x (7/8)^(e-1) > 10
    // for e - 1 < ln(0.01) / ln(7/8) = 34.5, so 35 epochs; the closed form is the sum.
    EXPECT_DOUBLE_EQ(store_bound_epochs(90, 8, 1000, 10), 35);
    EXPECT_NEAR(cached_epochs_s(90, 8, 1000, 10), epochs_by_sum(90, 8, 1000, 10), 1e-9);
    EXPECT_NEAR(cached_epochs_s(90, 8, 1000, 10), 1000 * (1 - std::pow(7.0 / 8, 35)) * 8 + 55 * 10, 1e-9);
    EXPECT_NEAR(cached_epochs_s(20, 3, 500, 120), epochs_by_sum(20, 3, 500, 120), 1e-9);
    EXPECT_NEAR(cached_epochs_s(4, 64, 500, 1), epochs_by_sum(4, 64, 500, 1), 1e-9);  // bound to the end
    EXPECT_DOUBLE_EQ(store_bound_epochs(4, 64, 500, 1), 4);
    // No cold epoch (no store, s3, or a store that bounds nothing): epochs x the warm epoch.
    EXPECT_DOUBLE_EQ(cached_epochs_s(90, 8, 300, 400), 90 * 400);
    EXPECT_DOUBLE_EQ(store_bound_epochs(90, 8, 300, 400), 0);
    // A partial last epoch counts its share; no epoch, no time.
    EXPECT_DOUBLE_EQ(cached_epochs_s(2.5, 1, 1000, 400), 1000 + 400 + 0.5 * 400);
    EXPECT_DOUBLE_EQ(cached_epochs_s(0.5, 1, 1000, 400), 500);
    EXPECT_DOUBLE_EQ(cached_epochs_s(0, 4, 1000, 400), 0);
    // The store's reads in epochs' worth: F8 with cold 1 and warm 1 - c.
    EXPECT_DOUBLE_EQ(cached_epochs_s(90, 1, 1, 0), 1);
    EXPECT_DOUBLE_EQ(cached_epochs_s(90, 1, 1, 1), 90);
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

Scenario seed004_one_node() {
    Scenario s;
    s.instance = "p3.8xlarge";
    s.storage = Store::fsx_lustre;
    s.storage_tib = 1.2;
    return s;
}

// Seed 004 trains ResNet-50 on p3.8xlarge from a 1.2 TiB FSx for Lustre file system with its GPUs
// "close to 100%" busy: the store (150 MB/s, 1,299 images/s) bounds the first epoch only. A Lustre
// client caches up to half its RAM (244 / 2 GiB, 88.6% of the training set), so the store serves
// 11.4% of each later epoch and the CPU loader's 3,135 images/s bound those (eqs. F7, F8); 90
// epochs take within a few percent of the same run with no store.
TEST(Storage, Seed004P3IsBoundByTheStoreInTheFirstEpochOnly) {
    const Scenario s = seed004_one_node();
    const ResolvedScenario r = model().resolve(s);
    const double train_bytes = 147'897'477'120.0;
    EXPECT_DOUBLE_EQ(r.page_cache_hit_fraction, 0.5 * 244 * kGiB / train_bytes);
    const double cold_rate = 150e6 / (train_bytes / 1'281'167) / 4;
    EXPECT_NEAR(r.storage_first_epoch_images_per_s_per_gpu, cold_rate, 1e-9 * cold_rate);
    EXPECT_NEAR(r.storage_images_per_s_per_gpu, cold_rate / (1 - r.page_cache_hit_fraction), 1e-9 * cold_rate);

    const Prediction p = model().checked_predict(r);
    EXPECT_EQ(p.first_epoch_bottleneck, Bottleneck::storage);
    EXPECT_EQ(p.bottleneck, Bottleneck::data);  // the CPU loader, later epochs
    EXPECT_EQ(p.store_bound_epochs, 1);
    EXPECT_NEAR(p.first_epoch_images_per_s, 1'299, 1);
    Scenario none = s;
    none.storage = Store::none;
    none.storage_tib = 0;
    const Prediction unbound = model().checked_predict(none);
    // the CPU loader: the fitted PyTorch rate (98 images/s per vCPU) on the p3.8xlarge's 32 vCPUs
    const double loader = Calibration::built_in().framework(Framework::pytorch).cpu_decode_images_per_s_per_vcpu * 32;
    EXPECT_NEAR(loader, 3'135, 10);
    EXPECT_NEAR(p.throughput_images_per_s, loader, 1);
    EXPECT_NEAR(p.throughput_images_per_s, unbound.throughput_images_per_s, 1e-3 * unbound.throughput_images_per_s);
    // The time to train: the first epoch cold, 89 warm (eq. F8), and the run within 2% of the
    // unbound one beside the staging (without the cache it was 2.6 times as long).
    const double cold_s = 1'281'167 / p.first_epoch_images_per_s, warm_s = 1'281'167 / p.throughput_images_per_s;
    EXPECT_NEAR(p.time_to_train_s, p.staging_s + p.startup_s + cold_s + 89 * warm_s + 90 * p.checkpoint_s,
                1e-9 * p.time_to_train_s);
    EXPECT_LT(p.time_to_train_s - p.staging_s, 1.02 * unbound.time_to_train_s);
    EXPECT_GT(p.time_to_train_s - p.staging_s, unbound.time_to_train_s);
    EXPECT_LT(p.time_to_train_s, 1.02 * (p.staging_s + unbound.time_to_train_s));
}

// Nodes whose RAM holds a fifth of the dataset stay bound by the store in the later epochs: 8 x
// p3.2xlarge (61 GiB, 30.5 GiB of it cached: c = 22%) share 150 MB/s, r / (1 - c) = 1,669 images/s
// after the first epochs, below their 8 V100s.
TEST(Storage, NodesWhoseRamIsSmallerThanTheDatasetStayBoundByTheStore) {
    Scenario s;
    s.instance = "p3.2xlarge";
    s.nodes = 8;
    s.storage = Store::fsx_lustre;
    const ResolvedScenario r = model().resolve(s);
    const double train_bytes = 147'897'477'120.0, image_bytes = train_bytes / 1'281'167;
    const double c = 0.5 * 61 * kGiB / train_bytes;
    EXPECT_DOUBLE_EQ(r.page_cache_hit_fraction, c);
    const Prediction p = model().checked_predict(r);
    EXPECT_EQ(p.bottleneck, Bottleneck::storage);
    EXPECT_EQ(p.first_epoch_bottleneck, Bottleneck::storage);
    EXPECT_EQ(p.store_bound_epochs, 90);
    EXPECT_NEAR(p.data_s, 256 / (150e6 / image_bytes / 8 / (1 - c)), 1e-9);
    EXPECT_LE(p.throughput_images_per_s, 150e6 / image_bytes / (1 - c) * 1.0001);
    EXPECT_NEAR(p.first_epoch_images_per_s, 150e6 / image_bytes, 0.01 * 150e6 / image_bytes);
    // The epochs as their sum: the cold share (7/8)^(e-1) bounds the first ones, 1 - c the rest.
    const double cold_s = 1'281'167 / p.first_epoch_images_per_s, warm_s = 1'281'167 / p.throughput_images_per_s;
    EXPECT_NEAR(p.time_to_train_s,
                p.staging_s + p.startup_s + epochs_by_sum(90, 8, cold_s, warm_s) + 90 * p.checkpoint_s,
                1e-9 * p.time_to_train_s);
    EXPECT_GT(epochs_by_sum(90, 8, cold_s, warm_s), 90 * warm_s);
}

// S3 streamed: no page cache (the loader's GETs), every epoch as the first.
TEST(Storage, S3StreamingIsServedByNoPageCache) {
    Scenario s = seed004_one_node();
    s.storage = Store::s3;
    s.storage_tib = 0;
    const ResolvedScenario r = model().resolve(s);
    EXPECT_EQ(r.page_cache_hit_fraction, 0);
    EXPECT_EQ(r.storage_images_per_s_per_gpu, r.storage_first_epoch_images_per_s_per_gpu);
    const Prediction p = model().checked_predict(r);
    EXPECT_EQ(p.first_epoch_images_per_s, p.throughput_images_per_s);
    EXPECT_EQ(p.store_bound_epochs, 0);
    EXPECT_NEAR(p.time_to_train_s, p.startup_s + 90 * p.epoch_s, 1e-9 * p.time_to_train_s);
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
    EXPECT_EQ(p.first_epoch_images_per_s, p.throughput_images_per_s);
    EXPECT_EQ(p.store_bound_epochs, 0);
    EXPECT_NEAR(p.cost_usd, p.time_to_train_s / 3600 * p.cluster_usd_per_hour, 1e-9 * p.cost_usd);
}

// 8 x p4d.24xlarge (64 A100) with DALI: 1.2 TiB at 125 MB/s/TiB delivers 150 MB/s, some 1,300
// images/s: the store bounds the first epochs and is named, while each node reads its copy of the
// dataset into its page cache (half of 1,152 GiB holds it: c = 1), 35 epochs (eq. F8); at 1000
// MB/s/TiB on 24 TiB (24 GB/s, beyond the 15 GB/s its GPUs would read) it bounds none.
TEST(Storage, FsxBoundsALargeClusterAtItsSmallestAndNotAtItsLargestTier) {
    Scenario s;
    s.instance = "p4d.24xlarge";
    s.nodes = 8;
    s.loader = Loader::dali;
    s.storage = Store::fsx_lustre;
    const ResolvedScenario r = model().resolve(s);
    EXPECT_EQ(r.page_cache_hit_fraction, 1);
    EXPECT_TRUE(std::isinf(r.storage_images_per_s_per_gpu));
    const Prediction bound = model().checked_predict(r);
    EXPECT_EQ(bound.first_epoch_bottleneck, Bottleneck::storage);
    EXPECT_EQ(bound.bottleneck, Bottleneck::compute);
    EXPECT_NEAR(bound.storage_read_GBps, 0.15, 1e-12);
    const double image_bytes = 147'897'477'120.0 / 1'281'167;
    // The first epoch: no more than the store gives (eq. F3).
    EXPECT_LE(bound.first_epoch_images_per_s, 150e6 / image_bytes * 1.0001);
    EXPECT_GT(bound.first_epoch_images_per_s, 150e6 / image_bytes * 0.99);
    EXPECT_GT(bound.demanded_read_GBps, bound.storage_read_GBps);
    // The store bounds epoch e while its (7/8)^(e-1) share of the cold epoch outlasts the warm one.
    const double cold_s = 1'281'167 / bound.first_epoch_images_per_s;
    const double warm_s = 1'281'167 / bound.throughput_images_per_s;
    EXPECT_EQ(bound.store_bound_epochs, 1 + std::floor(std::log(warm_s / cold_s) / std::log(7.0 / 8)));
    EXPECT_EQ(bound.store_bound_epochs, 35);
    // The run's band is the run at the throughput band's ends (at_throughput), the store holding the
    // first epochs at the fast end.
    const PredictionBand band = prediction_band(r, bound);
    EXPECT_NEAR(bound.time_to_train_interval.high, band.slow.time_to_train_s, 1e-9 * band.slow.time_to_train_s);
    EXPECT_NEAR(bound.time_to_train_interval.low, band.fast.time_to_train_s, 1e-9 * band.fast.time_to_train_s);
    EXPECT_EQ(band.fast.first_epoch_images_per_s, bound.first_epoch_images_per_s);
    EXPECT_NEAR(bound.time_to_train_s,
                bound.staging_s + bound.startup_s + epochs_by_sum(90, 8, cold_s, warm_s) + 90 * bound.checkpoint_s,
                1e-9 * bound.time_to_train_s);

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
    // The store serves what misses the page caches (eqs. F7, F8): of half of each node's 244 GiB over
    // the training and validation sets, the first epochs' shares of 2 nodes' copies, then 1 - c; the
    // validation set once, then 1 - c of it.
    const double c = 0.5 * 244 / (train_GB + val_GB);
    const double train_reads = epochs_by_sum(90, 2, 1, 1 - c);
    EXPECT_LT(train_reads, 20);
    const double expected = train_reads * train_GB * 0.03 + (1 + 89 * (1 - c)) * val_GB * 0.03 +
                            90 * checkpoint_GB * 0.06 + (train_GB + val_GB) * 0.06 + 1'331'167 * 0.0004 / 1000;
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

// Issue 45 item 4: with the epochs from a recipe (--target-top1), eq. E2's K is the recipe's where
// it publishes one (mlperf-lars: every 4 epochs, MLPerf's reference), unless --eval-every is given;
// goyal2017 publishes none, and given epochs evaluate only when asked.
TEST(Storage, TheRecipesEvaluationCadenceIsTheDefaultWithATarget) {
    const Convergence& recipes = model().convergence();
    const Recipe& mlperf = recipes.recipe("mlperf-lars", "resnet50");
    EXPECT_EQ(mlperf.eval_every_epochs, 4);
    EXPECT_NE(mlperf.eval_source.find("mlcommons/training"), std::string::npos) << mlperf.eval_source;
    EXPECT_EQ(recipes.recipe("goyal2017", "resnet50").eval_every_epochs, 0);

    Scenario s;
    s.instance = "p4d.24xlarge";
    s.nodes = 4;
    s.target_top1_percent = 75.9;
    s.recipe = "mlperf-lars";
    const Prediction p = model().checked_predict(s);
    ASSERT_GT(p.epochs, 8);
    EXPECT_EQ(p.eval_every_epochs, 4);
    EXPECT_TRUE(p.eval_every_from_recipe);
    EXPECT_EQ(p.evaluations, std::floor(p.epochs / 4));
    EXPECT_NEAR(p.time_to_train_s, p.startup_s + p.epochs * p.epoch_s + p.evaluations * p.evaluation_s,
                1e-9 * p.time_to_train_s);

    s.eval_every_epochs = 0;  // asked for none
    const Prediction none = model().checked_predict(s);
    EXPECT_EQ(none.evaluations, 0);
    EXPECT_FALSE(none.eval_every_from_recipe);
    EXPECT_NEAR(none.time_to_train_s, p.time_to_train_s - p.evaluations * p.evaluation_s, 1e-9 * p.time_to_train_s);
    s.eval_every_epochs = 1;  // asked for every epoch
    const Prediction every = model().checked_predict(s);
    EXPECT_EQ(every.eval_every_epochs, 1);
    EXPECT_FALSE(every.eval_every_from_recipe);

    s.eval_every_epochs.reset();
    s.recipe = "goyal2017";
    EXPECT_EQ(model().checked_predict(s).evaluations, 0);
    Scenario given;  // --epochs
    given.instance = "p4d.24xlarge";
    EXPECT_EQ(model().checked_predict(given).evaluations, 0);
    EXPECT_EQ(model().checked_predict(given).eval_every_epochs, 0);
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
