#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/catalog.hpp"
#include "model/errors.hpp"
#include "tests/support/temp_file.hpp"

namespace epochcast {
namespace {

using testing::TempFile;

/// The message of the InputError that `action` throws ("" and a test failure when it throws none).
template <typename Action>
std::string input_error(Action action) {
    try {
        action();
    } catch (const InputError& error) {
        return error.what();
    }
    ADD_FAILURE() << "expected InputError";
    return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string kGpu =
    R"({ "name": "X1", "fp32_tflops": 10, "fp16_tflops": 20, "memory_gib": 16, "memory_GBps": 500, "source": "test" })";

/// A catalog text with one GPU "X1" and one instance whose fields are `instance_fields`.
std::string with_instance(const std::string& instance_fields) {
    return R"({ "schema": "epochcast.catalog/1", "gpus": [ )" + kGpu + R"( ], "instances": [ { )" + instance_fields +
           " } ] }";
}

const std::string kGoodInstanceFields =
    R"("name": "x1.big", "gpu": "X1", "gpus": 4, "vcpus": 32, "memory_gib": 128, "network_gbps": 50,
       "price_usd_per_hour": 4.5, "source": "test")";

TEST(Catalog, BuiltInParsesAndHasEveryRequiredName) {
    const Catalog catalog = Catalog::built_in();
    for (const char* name : {"K80", "M60", "T4", "A10G", "V100-SXM2-16GB", "V100-SXM2-32GB", "A100-SXM4-40GB",
                             "A100-SXM4-80GB", "H100-SXM5-80GB"}) {
        EXPECT_NO_THROW(catalog.gpu(name)) << name;
    }
    for (const char* name : {"p2.xlarge", "p2.8xlarge", "p2.16xlarge", "p3.2xlarge", "p3.8xlarge", "p3.16xlarge",
                             "p3dn.24xlarge", "p4d.24xlarge", "p5.48xlarge", "g3.16xlarge", "g4dn.12xlarge",
                             "g5.48xlarge", "m4.16xlarge", "c5.18xlarge", "c5n.18xlarge"}) {
        EXPECT_NO_THROW(catalog.instance(name)) << name;
    }
}

TEST(Catalog, P3_16xlargeMatchesThePublishedFigures) {
    const Catalog catalog = Catalog::built_in();
    const InstanceSpec& p3 = catalog.instance("p3.16xlarge");
    EXPECT_EQ(p3.gpu, "V100-SXM2-16GB");
    EXPECT_EQ(p3.gpus, 8);
    EXPECT_EQ(p3.vcpus, 64);
    EXPECT_DOUBLE_EQ(p3.network_gbps, 25);
    EXPECT_DOUBLE_EQ(p3.usd_per_hour(Pricing::on_demand), 24.48);
    EXPECT_DOUBLE_EQ(p3.memory_gib, 488);
    const GpuSpec& v100 = catalog.gpu_of(p3);
    EXPECT_DOUBLE_EQ(v100.fp32_tflops, 15.7);
    EXPECT_DOUBLE_EQ(v100.fp16_tflops, 125);
    EXPECT_DOUBLE_EQ(v100.bf16_tflops, 0);
}

TEST(Catalog, BuiltInFiguresAreConsistent) {
    const Catalog catalog = Catalog::built_in();
    // AWS counts one GK210 as a GPU: half a K80 board (8.73 TFLOPS, 24 GB, 480 GB/s).
    EXPECT_NEAR(catalog.gpu("K80").fp32_tflops, 8.73 / 2, 0.01);
    EXPECT_DOUBLE_EQ(catalog.gpu("K80").memory_gib, 12);
    EXPECT_DOUBLE_EQ(catalog.gpu("K80").memory_GBps, 240);
    EXPECT_EQ(catalog.instance("p2.16xlarge").gpus, 16);
    EXPECT_EQ(catalog.instance("p3dn.24xlarge").gpu, "V100-SXM2-32GB");
    EXPECT_EQ(catalog.instance("p4d.24xlarge").efa_adapters, 4);
    EXPECT_EQ(catalog.instance("p5.48xlarge").efa_adapters, 32);
    EXPECT_EQ(catalog.instance("g3.16xlarge").gpu, "M60");
    for (const GpuSpec& gpu : catalog.gpus()) {
        EXPECT_FALSE(gpu.source.empty()) << gpu.name;
        EXPECT_GE(gpu.fp16_tflops, gpu.fp32_tflops) << gpu.name;
    }
    for (const InstanceSpec& instance : catalog.instances()) {
        EXPECT_FALSE(instance.source.empty()) << instance.name;
        // Owned reference systems (DGX) have no price by the hour, and say so; a cloud's instance has
        // prices, or says in its source that none was found.
        const bool owned = instance.cloud == "owned";
        EXPECT_EQ(instance.source.rfind("Reference system, owned", 0) == 0, owned) << instance.name;
        if (owned) {
            EXPECT_FALSE(instance.priced()) << instance.name;
        } else if (!instance.priced()) {
            EXPECT_NE(instance.source.find("No price"), std::string::npos) << instance.name;
        }
        if (instance.price(Pricing::spot) && instance.price(Pricing::on_demand)) {
            EXPECT_LT(instance.usd_per_hour(Pricing::spot), instance.usd_per_hour(Pricing::on_demand)) << instance.name;
        }
        if (instance.gpus > 0) {
            EXPECT_NO_THROW(catalog.gpu_of(instance)) << instance.name;
        } else {
            EXPECT_TRUE(instance.gpu.empty()) << instance.name;
            EXPECT_THROW(catalog.gpu_of(instance), InputError) << instance.name;
        }
    }
}

TEST(Catalog, EveryBuiltInPriceHasItsSourceDateAndPricingAndEveryInstanceItsCloud) {
    const Catalog catalog = Catalog::built_in();
    const std::vector<std::string> clouds{"aws", "azure", "gcp", "owned"};
    EXPECT_EQ(catalog.clouds(), clouds);
    std::size_t prices = 0;
    for (const InstanceSpec& instance : catalog.instances()) {
        EXPECT_NE(std::find(clouds.begin(), clouds.end(), instance.cloud), clouds.end()) << instance.name;
        // A cloud's prices were read for a region; an owned machine has neither.
        EXPECT_EQ(instance.region.empty(), instance.cloud == "owned") << instance.name;
        for (Pricing pricing : kAllPricings) {
            const Price* price = instance.price(pricing);
            if (!price) continue;
            ++prices;
            EXPECT_GT(price->usd_per_hour, 0) << instance.name << " " << to_string(pricing);
            // Its own source, with the conditions it was read under, and the date it was read.
            EXPECT_FALSE(price->source.empty()) << instance.name << " " << to_string(pricing);
            EXPECT_NE(price->source, instance.source) << instance.name << " " << to_string(pricing);
            ASSERT_EQ(price->read.size(), 10u) << instance.name << " " << to_string(pricing);
            EXPECT_GE(price->read, "2026-01-01") << instance.name << " " << to_string(pricing);
            EXPECT_LE(price->read, "2026-12-02") << instance.name << " " << to_string(pricing);
        }
    }
    EXPECT_GT(prices, 60u);
    // p5e is sold only as capacity blocks (its $63.30 on demand was p5en's price, an estimate).
    EXPECT_EQ(catalog.instance("p5e.48xlarge").pricings_text(), "capacity-block");
    // Issue 58, item 6: p5en and p6-b200 are also sold as Capacity Blocks (AWS's February 2026 rates).
    EXPECT_EQ(catalog.instance("p5en.48xlarge").pricings_text(), "on-demand, spot, capacity-block");
    EXPECT_EQ(catalog.instance("p6-b200.48xlarge").pricings_text(), "on-demand, spot, capacity-block");
    // An instance sold "up to" a network rate carries its sustained baseline (issue 58, item 3).
    EXPECT_DOUBLE_EQ(catalog.instance("g6e.xlarge").network_gbps, 2.5);
    EXPECT_EQ(catalog.instance("dgx-a100").pricings_text(), "none");
    EXPECT_EQ(catalog.instance("a2-highgpu-1g").pricings_text(), "on-demand, spot, reserved-1y, reserved-3y");
}

// A price's read date is a day of the calendar: 2026-02-30 and 2026-04-31 passed the check of
// digits and ranges, and then never aged (issue 58's staleness reads them by parse_date).
TEST(Catalog, AReadDateThatIsNoDayOfTheCalendarIsRefused) {
    for (const char* date : {"2026-02-30", "2026-04-31", "2025-02-29", "2026-13-01", "2026-1-21"}) {
        const std::string text =
            with_instance(std::string(R"("name": "x1.big", "gpu": "X1", "gpus": 4, "vcpus": 32, "memory_gib": 128,
            "network_gbps": 50, "cloud": "my-lab", "region": "eu-west-9", "source": "test",
            "prices": {"on-demand": {"usd_per_hour": 1.25, "read": ")") +
                          date + R"("}})");
        try {
            Catalog::parse(text, "test.json");
            ADD_FAILURE() << date << " was taken";
        } catch (const InputError& error) {
            EXPECT_NE(std::string(error.what()).find("must be a date YYYY-MM-DD"), std::string::npos) << error.what();
        }
    }
    EXPECT_NO_THROW(Catalog::parse(with_instance(R"("name": "x1.big", "gpu": "X1", "gpus": 4, "vcpus": 32,
        "memory_gib": 128, "network_gbps": 50, "cloud": "my-lab", "region": "eu-west-9", "source": "test",
        "prices": {"on-demand": {"usd_per_hour": 1.25, "read": "2028-02-29"}})"),
                                   "test.json"));
}

TEST(Catalog, PricesAreReadByPricingModelAndTheOlderKeysStillWork) {
    const Catalog catalog =
        Catalog::parse(with_instance(R"("name": "x1.big", "gpu": "X1", "gpus": 4, "vcpus": 32, "memory_gib": 128,
            "network_gbps": 50, "cloud": "my-lab", "region": "eu-west-9", "source": "test",
            "prices": {"reserved-3y": {"usd_per_hour": 1.25, "read": "2026-11-26", "source": "our contract"},
                       "spot": {"usd_per_hour": 0.8, "estimate": true}})"),
                       "test.json");
    const InstanceSpec& x = catalog.instance("x1.big");
    EXPECT_EQ(x.cloud, "my-lab");
    EXPECT_EQ(x.region, "eu-west-9");
    EXPECT_EQ(x.price(Pricing::on_demand), nullptr);
    ASSERT_NE(x.price(Pricing::reserved_3y), nullptr);
    EXPECT_DOUBLE_EQ(x.price(Pricing::reserved_3y)->usd_per_hour, 1.25);
    EXPECT_EQ(x.price(Pricing::reserved_3y)->read, "2026-11-26");
    EXPECT_EQ(x.price(Pricing::reserved_3y)->source, "our contract");
    EXPECT_TRUE(x.price(Pricing::spot)->estimate);
    EXPECT_EQ(x.price(Pricing::spot)->source, "test");  // the entry's own source stands for a missing one
    EXPECT_EQ(x.pricings_text(), "spot, reserved-3y");
    // The older keys: on-demand and spot, 0 for none; a new entry with neither and no "prices" is refused.
    const Catalog older = Catalog::parse(with_instance(kGoodInstanceFields + R"(, "spot_usd_per_hour": 0)"), "o.json");
    EXPECT_EQ(older.instance("x1.big").pricings_text(), "on-demand");
    EXPECT_DOUBLE_EQ(older.instance("x1.big").usd_per_hour(Pricing::on_demand), 4.5);
    const Catalog owned = Catalog::parse(with_instance(R"("name": "x1.big", "gpu": "X1", "gpus": 4, "vcpus": 32,
        "memory_gib": 128, "network_gbps": 50, "price_usd_per_hour": 0, "source": "ours")"),
                                         "owned.json");
    EXPECT_FALSE(owned.instance("x1.big").priced());
    // The written catalog reads back to the same prices.
    const Catalog again = Catalog::parse(catalog.to_json_text(), "again.json");
    EXPECT_EQ(again.instance("x1.big").pricings_text(), "spot, reserved-3y");
    EXPECT_EQ(again.instance("x1.big").price(Pricing::reserved_3y)->source, "our contract");
    EXPECT_TRUE(again.instance("x1.big").price(Pricing::spot)->estimate);
}

TEST(Catalog, APriceOverrideChangesOnePricingAndNullRemovesIt) {
    const Catalog built_in = Catalog::built_in();
    Catalog catalog = built_in;
    catalog.merge(Catalog::parse(R"({"schema": "epochcast.catalog/1", "instances": [
        {"name": "p5.48xlarge", "prices": {"spot": null, "reserved-1y": {"usd_per_hour": 30}}},
        {"name": "dgx-a100", "price_usd_per_hour": 20}]})",
                                 "mine.json", built_in));
    const InstanceSpec& p5 = catalog.instance("p5.48xlarge");
    EXPECT_EQ(p5.pricings_text(), "on-demand, capacity-block, reserved-1y");
    EXPECT_DOUBLE_EQ(p5.usd_per_hour(Pricing::on_demand),
                     built_in.instance("p5.48xlarge").usd_per_hour(Pricing::on_demand));
    EXPECT_EQ(p5.price(Pricing::reserved_1y)->source, "mine.json");  // an override without a source: the file
    EXPECT_EQ(p5.price(Pricing::reserved_1y)->read, "");
    EXPECT_TRUE(catalog.instance("dgx-a100").priced());  // a price for an owned machine, given by the user
    EXPECT_EQ(catalog.instance("dgx-a100").cloud, "owned");
}

TEST(CatalogErrors, FiguresBeyondAnyRealOneAreRefusedNamingTheKey) {
    // Issue 42: a price of 1e300 (or a bandwidth of 1e-300) gave a cost of 1e302 and crashed the text.
    const Catalog& base = Catalog::built_in();
    std::string m = input_error([&] {
        Catalog::parse(R"({"schema": "epochcast.catalog/1", "instances": [{"name": "p4d.24xlarge",
            "price_usd_per_hour": 1e300}]})",
                       "user.json", base);
    });
    EXPECT_TRUE(contains(m, "\"price_usd_per_hour\" must be 0 or from 1e-06 to 1e+09, got 1e+300")) << m;
    m = input_error([&] {
        Catalog::parse(R"({"schema": "epochcast.catalog/1", "gpus": [{"name": "A100-SXM4-40GB",
            "memory_GBps": 1e-300}]})",
                       "user.json", base);
    });
    EXPECT_TRUE(contains(m, "\"memory_GBps\" must be from 1e-06 to 1e+09, got 1e-300")) << m;
}

TEST(CatalogErrors, PricesAreCheckedNamingTheEntryAndKey) {
    auto message = [](const std::string& prices) {
        return input_error([&] {
            Catalog::parse(with_instance(R"("name": "x1.big", "gpu": "X1", "gpus": 4, "vcpus": 32, "memory_gib": 128,
                "network_gbps": 50, "source": "test", )" +
                                         prices),
                           "user.json");
        });
    };
    std::string m = message(R"("prices": {"monthly": {"usd_per_hour": 1}})");
    EXPECT_TRUE(contains(m, R"(instances[0] "x1.big")")) << m;
    EXPECT_TRUE(contains(m, "monthly")) << m;
    EXPECT_TRUE(contains(m, "on-demand, spot, capacity-block, reserved-1y, reserved-3y")) << m;
    m = message(R"("prices": {"spot": {"usd_per_hour": 0}})");
    EXPECT_TRUE(contains(m, "prices \"spot\"")) << m;
    EXPECT_TRUE(contains(m, "\"usd_per_hour\" must be > 0")) << m;
    m = message(R"("prices": {"spot": {"usd_per_hour": 1, "read": "26.11.2026"}})");
    EXPECT_TRUE(contains(m, "YYYY-MM-DD")) << m;
    m = message(R"("prices": {"on-demand": {"usd_per_hour": 1}}, "price_usd_per_hour": 2)");
    EXPECT_TRUE(contains(m, "both give the on-demand price")) << m;
    m = message(R"("cloud": "My Cloud", "prices": {})");
    EXPECT_TRUE(contains(m, "\"cloud\"")) << m;
    m = message(R"("region": "x")");
    EXPECT_TRUE(contains(m, "\"prices\" is missing")) << m;
    EXPECT_TRUE(contains(m, "{} for a machine you own")) << m;
    EXPECT_FALSE(contains(m, "\n")) << m;
}

TEST(Catalog, ACloudFilterKeepsItsInstancesAndTheirGpus) {
    const Catalog catalog = Catalog::built_in();
    const Catalog gcp = catalog.only_cloud("gcp");
    ASSERT_FALSE(gcp.instances().empty());
    for (const InstanceSpec& instance : gcp.instances()) EXPECT_EQ(instance.cloud, "gcp") << instance.name;
    for (const GpuSpec& gpu : gcp.gpus()) EXPECT_NE(gpu.name, "K80");
    EXPECT_NO_THROW(gcp.gpu("H200-SXM-141GB"));
    EXPECT_NO_THROW(catalog.check_cloud("azure", "--cloud"));
    const std::string m = input_error([&] { catalog.check_cloud("ibm", "--cloud"); });
    EXPECT_EQ(m, "--cloud 'ibm': no instance of the catalog is in that cloud (clouds: aws, azure, gcp, owned)");
}

TEST(Catalog, ParsesOptionalKeysWithDefaults) {
    const Catalog catalog = Catalog::parse(with_instance(kGoodInstanceFields), "test.json");
    const InstanceSpec& instance = catalog.instance("x1.big");
    EXPECT_EQ(instance.efa_adapters, 0);
    EXPECT_DOUBLE_EQ(instance.intra_node_GBps, 0);
    EXPECT_DOUBLE_EQ(instance.usd_per_hour(Pricing::spot), 0);
    EXPECT_DOUBLE_EQ(catalog.gpu("X1").bf16_tflops, 0);
    EXPECT_EQ(catalog.gpu("X1").jpeg_decoder_cores, 0);  // none: DALI's CUDA path alone (eq. D2)
}

TEST(Catalog, HardwareJpegDecodersAreTheDatasheetsAndOverridesKeepThem) {
    const Catalog catalog = Catalog::built_in();
    EXPECT_EQ(catalog.gpu("A100-SXM4-80GB").jpeg_decoder_cores, 5);
    EXPECT_EQ(catalog.gpu("H100-SXM5-80GB").jpeg_decoder_cores, 7);
    EXPECT_EQ(catalog.gpu("H200-SXM-141GB").jpeg_decoder_cores, 7);
    EXPECT_EQ(catalog.gpu("B200").jpeg_decoder_cores, 7);
    EXPECT_EQ(catalog.gpu("L4").jpeg_decoder_cores, 4);
    EXPECT_EQ(catalog.gpu("V100-SXM2-16GB").jpeg_decoder_cores, 0);
    EXPECT_EQ(catalog.gpu("T4").jpeg_decoder_cores, 0);
    // A user's entry for a known GPU overrides key by key: the decoders stay unless it names them.
    Catalog merged = Catalog::built_in();
    merged.merge(Catalog::parse(R"({"schema": "epochcast.catalog/1", "gpus": [{"name": "B200", "memory_GBps": 7700},
        {"name": "H100-SXM5-80GB", "jpeg_decoder_cores": 0}], "instances": []})",
                                "user.json", merged));
    EXPECT_EQ(merged.gpu("B200").jpeg_decoder_cores, 7);
    EXPECT_EQ(merged.gpu("H100-SXM5-80GB").jpeg_decoder_cores, 0);
    const Catalog again = Catalog::parse(catalog.to_json_text(), "round trip");
    for (std::size_t i = 0; i < catalog.gpus().size(); ++i) {
        EXPECT_EQ(again.gpus()[i].jpeg_decoder_cores, catalog.gpus()[i].jpeg_decoder_cores) << catalog.gpus()[i].name;
    }
    for (const char* bad : {"-1", "2.5", "\"seven\""}) {
        const std::string text =
            std::string(R"({"schema": "epochcast.catalog/1", "gpus": [{"name": "Y1", "fp32_tflops": 1,
            "fp16_tflops": 1, "memory_gib": 1, "memory_GBps": 1, "source": "t", "jpeg_decoder_cores": )") +
            bad + "}], \"instances\": []}";
        const std::string message = input_error([&] { Catalog::parse(text, "user.json"); });
        EXPECT_TRUE(contains(message, "\"jpeg_decoder_cores\"")) << message;
    }
}

TEST(Catalog, UnknownExtraKeysAreIgnored) {
    EXPECT_NO_THROW(Catalog::parse(with_instance(kGoodInstanceFields + R"(, "note": [1, 2])"), "test.json"));
}

TEST(Catalog, MergeOverridesByNameAndAppendsNewEntries) {
    Catalog catalog = Catalog::built_in();
    const std::size_t instances_before = catalog.instances().size();
    const Catalog user = Catalog::parse(
        R"({ "schema": "epochcast.catalog/1", "instances": [
             { "name": "p3.16xlarge", "gpu": "V100-SXM2-16GB", "gpus": 8, "vcpus": 64, "memory_gib": 488,
               "network_gbps": 25, "price_usd_per_hour": 20.0, "spot_usd_per_hour": 6.5, "source": "my quote" },
             { "name": "p3.huge", "gpu": "V100-SXM2-16GB", "gpus": 16, "vcpus": 128, "memory_gib": 976,
               "network_gbps": 50, "price_usd_per_hour": 48.0, "source": "imagined" } ] })",
        "user.json", catalog);
    catalog.merge(user);
    EXPECT_DOUBLE_EQ(catalog.instance("p3.16xlarge").usd_per_hour(Pricing::on_demand), 20.0);
    EXPECT_DOUBLE_EQ(catalog.instance("p3.16xlarge").usd_per_hour(Pricing::spot), 6.5);
    EXPECT_EQ(catalog.instance("p3.16xlarge").source, "my quote");
    EXPECT_EQ(catalog.instance("p3.huge").gpus, 16);
    EXPECT_EQ(catalog.instances().size(), instances_before + 1);
    EXPECT_EQ(catalog.instances().back().name, "p3.huge");
}

TEST(Catalog, MergeAddsAGpuAndAnInstanceUsingIt) {
    Catalog catalog = Catalog::built_in();
    TempFile file(with_instance(kGoodInstanceFields));
    catalog.merge(Catalog::load(file.path()));
    EXPECT_EQ(catalog.gpu_of(catalog.instance("x1.big")).name, "X1");
}

/// A catalog text of `n` GPUs "G<i>" and `n` instances "i<i>.big" of one GPU "G<i>" each, every
/// other one in cloud "gcp" (the rest in "aws"), followed by `tail` inside the instances' list.
std::string many_entries(int n, const std::string& tail = "") {
    std::string text = R"({"schema": "epochcast.catalog/1", "gpus": [)";
    for (int i = 0; i < n; ++i) {
        text += i == 0 ? "" : ",";
        text += R"({"name": "G)" + std::to_string(i) +
                R"(", "fp32_tflops": 10, "fp16_tflops": 20, "memory_gib": 16, "memory_GBps": 500, "source": "t"})";
    }
    text += R"(], "instances": [)";
    for (int i = 0; i < n; ++i) {
        text += i == 0 ? "" : ",";
        text += R"({"name": "i)" + std::to_string(i) + R"(.big", "gpu": "G)" + std::to_string(i) +
                R"(", "gpus": 1, "vcpus": 8, "memory_gib": 64, "network_gbps": 10, "cloud": ")" +
                (i % 2 ? "gcp" : "aws") + R"(", "price_usd_per_hour": 1, "source": "t"})";
    }
    return text + tail + "]}";
}

// Issue 42, item 9: a catalog of 100,000 entries took over a minute to read, every lookup of a
// name (a duplicate, an instance's GPU, an entry to replace in a merge) scanning the entries. It
// is read, merged over the built-in one, filtered and searched by name, each entry in its place;
// a duplicate at the end is still found, naming its first entry. (Its speed: bench/catalog_bench.)
TEST(Catalog, AHundredThousandEntriesAreReadMergedAndFoundByName) {
    constexpr int kEach = 50'000;
    const std::string text = many_entries(kEach);
    const Catalog file = Catalog::parse(text, "big.json");
    ASSERT_EQ(file.gpus().size(), static_cast<std::size_t>(kEach));
    ASSERT_EQ(file.instances().size(), static_cast<std::size_t>(kEach));
    for (const int i : {0, 1, 12'345, kEach - 1}) {
        const InstanceSpec& instance = file.instance("i" + std::to_string(i) + ".big");
        EXPECT_EQ(instance.gpu, "G" + std::to_string(i));
        EXPECT_EQ(&file.gpu_of(instance), &file.gpus()[static_cast<std::size_t>(i)]);
    }
    EXPECT_EQ(file.find_instance("i50000.big"), nullptr);
    EXPECT_EQ(file.find_gpu("G50000"), nullptr);

    Catalog merged = Catalog::built_in();
    const std::size_t built_in_gpus = merged.gpus().size(), built_in_instances = merged.instances().size();
    const Catalog over = Catalog::parse(text, "big.json", merged);
    merged.merge(over);
    merged.merge(over);  // the same names again: replaced, not added
    EXPECT_EQ(merged.gpus().size(), built_in_gpus + kEach);
    EXPECT_EQ(merged.instances().size(), built_in_instances + kEach);
    EXPECT_EQ(merged.instance("i777.big").gpu, "G777");
    EXPECT_EQ(merged.instance("p3.16xlarge").gpu, Catalog::built_in().instance("p3.16xlarge").gpu);

    const Catalog gcp = file.only_cloud("gcp");
    EXPECT_EQ(gcp.instances().size(), static_cast<std::size_t>(kEach / 2));
    EXPECT_EQ(gcp.gpus().size(), static_cast<std::size_t>(kEach / 2));
    EXPECT_EQ(gcp.gpu_of(gcp.instance("i4321.big")).name, "G4321");
    EXPECT_THROW(gcp.instance("i4320.big"), InputError);

    const std::string message = input_error([&] {
        Catalog::parse(many_entries(kEach, R"(, {"name": "i7.big", "gpu": "G7", "gpus": 1, "vcpus": 8,
            "memory_gib": 64, "network_gbps": 10, "price_usd_per_hour": 1, "source": "t"})"),
                       "big.json");
    });
    EXPECT_TRUE(contains(message, R"(instances[50000] "i7.big")")) << message;
    EXPECT_TRUE(contains(message, R"(duplicates instances[7] "i7.big" in the same file)")) << message;
}

TEST(Catalog, ToJsonRoundTrips) {
    const Catalog catalog = Catalog::built_in();
    const Catalog again = Catalog::parse(catalog.to_json_text(), "round trip");
    ASSERT_EQ(again.gpus().size(), catalog.gpus().size());
    ASSERT_EQ(again.instances().size(), catalog.instances().size());
    for (std::size_t i = 0; i < catalog.instances().size(); ++i) {
        const InstanceSpec& a = catalog.instances()[i];
        const InstanceSpec& b = again.instances()[i];
        EXPECT_EQ(a.name, b.name);
        EXPECT_EQ(a.gpu, b.gpu);
        EXPECT_EQ(a.gpus, b.gpus);
        EXPECT_DOUBLE_EQ(a.usd_per_hour(Pricing::on_demand), b.usd_per_hour(Pricing::on_demand));
        EXPECT_DOUBLE_EQ(a.usd_per_hour(Pricing::spot), b.usd_per_hour(Pricing::spot));
        EXPECT_EQ(a.source, b.source);
        EXPECT_EQ(a.interconnect, b.interconnect) << a.name;
        EXPECT_EQ(a.nics, b.nics) << a.name;
        EXPECT_EQ(a.gpudirect_rdma, b.gpudirect_rdma) << a.name;
        EXPECT_EQ(a.intra_node_link, b.intra_node_link) << a.name;
        EXPECT_EQ(a.nvswitch, b.nvswitch) << a.name;
    }
    for (std::size_t i = 0; i < catalog.gpus().size(); ++i) {
        EXPECT_EQ(catalog.gpus()[i].chip, again.gpus()[i].chip) << catalog.gpus()[i].name;
    }
}

TEST(CatalogErrors, MalformedJsonNamesTheOriginAndBytePosition) {
    const std::string message = input_error([] { Catalog::parse(R"({ "schema": )", "broken.json"); });
    EXPECT_TRUE(contains(message, "broken.json")) << message;
    EXPECT_TRUE(contains(message, "malformed JSON")) << message;
    EXPECT_TRUE(contains(message, "byte")) << message;
}

TEST(CatalogErrors, WrongOrMissingSchema) {
    std::string message =
        input_error([] { Catalog::parse(R"({ "schema": "epochcast.catalog/2", "gpus": [] })", "old.json"); });
    EXPECT_TRUE(contains(message, "old.json")) << message;
    EXPECT_TRUE(contains(message, "epochcast.catalog/1")) << message;
    message = input_error([] { Catalog::parse(R"({ "gpus": [] })", "none.json"); });
    EXPECT_TRUE(contains(message, "\"schema\"")) << message;
}

TEST(CatalogErrors, MissingKeyNamesTheEntryAndKey) {
    const std::string message = input_error([] {
        Catalog::parse(with_instance(R"("name": "x1.big", "gpu": "X1", "gpus": 4, "vcpus": 32, "memory_gib": 128,
                                        "price_usd_per_hour": 4.5, "source": "test")"),
                       "user.json");
    });
    EXPECT_TRUE(contains(message, "user.json")) << message;
    EXPECT_TRUE(contains(message, R"(instances[0] "x1.big")")) << message;
    EXPECT_TRUE(contains(message, "\"network_gbps\"")) << message;
    EXPECT_TRUE(contains(message, "missing")) << message;
}

TEST(CatalogErrors, WrongTypeNamesTheEntryAndKey) {
    const std::string message = input_error([] {
        Catalog::parse(R"({ "schema": "epochcast.catalog/1", "gpus": [ { "name": "X1", "fp32_tflops": "fast",
                          "fp16_tflops": 20, "memory_gib": 16, "memory_GBps": 500, "source": "s" } ] })",
                       "user.json");
    });
    EXPECT_TRUE(contains(message, R"(gpus[0] "X1")")) << message;
    EXPECT_TRUE(contains(message, "\"fp32_tflops\"")) << message;
    EXPECT_TRUE(contains(message, "number")) << message;
}

TEST(CatalogErrors, NegativeCountNamesTheEntryAndKey) {
    std::string fields = kGoodInstanceFields;
    fields.replace(fields.find("\"gpus\": 4"), 9, "\"gpus\": -1");
    const std::string message = input_error([&] { Catalog::parse(with_instance(fields), "user.json"); });
    EXPECT_TRUE(contains(message, R"(instances[0] "x1.big")")) << message;
    EXPECT_TRUE(contains(message, "\"gpus\"")) << message;
    EXPECT_TRUE(contains(message, "-1")) << message;
}

TEST(CatalogErrors, NegativePriceAndFractionalCountAreRejected) {
    std::string fields = kGoodInstanceFields;
    fields.replace(fields.find("4.5"), 3, "-1");
    std::string message = input_error([&] { Catalog::parse(with_instance(fields), "user.json"); });
    EXPECT_TRUE(contains(message, "\"price_usd_per_hour\"")) << message;
    EXPECT_TRUE(contains(message, ">= 0")) << message;
    fields = kGoodInstanceFields;
    fields.replace(fields.find("\"vcpus\": 32"), 11, "\"vcpus\": 3.5");
    message = input_error([&] { Catalog::parse(with_instance(fields), "user.json"); });
    EXPECT_TRUE(contains(message, "\"vcpus\"")) << message;
}

TEST(CatalogErrors, GpuInstanceMustNameAGpuAndCpuInstanceMustNot) {
    std::string fields = kGoodInstanceFields;
    fields.replace(fields.find("\"gpu\": \"X1\", "), 13, "");
    std::string message = input_error([&] { Catalog::parse(with_instance(fields), "user.json"); });
    EXPECT_TRUE(contains(message, "\"gpu\"")) << message;
    fields = kGoodInstanceFields;
    fields.replace(fields.find("\"gpus\": 4"), 9, "\"gpus\": 0");
    message = input_error([&] { Catalog::parse(with_instance(fields), "user.json"); });
    EXPECT_TRUE(contains(message, "\"gpu\"")) << message;
    EXPECT_TRUE(contains(message, "CPU-only")) << message;
}

TEST(CatalogErrors, UnknownGpuIsNamed) {
    std::string fields = kGoodInstanceFields;
    fields.replace(fields.find("\"X1\""), 4, "\"Z9\"");
    const std::string message = input_error([&] { Catalog::parse(with_instance(fields), "user.json"); });
    EXPECT_TRUE(contains(message, R"(instances[0] "x1.big")")) << message;
    EXPECT_TRUE(contains(message, "'Z9'")) << message;
    EXPECT_TRUE(contains(message, "X1")) << message;
}

TEST(CatalogErrors, UserFileMayUseBuiltInGpuOnlyWhenGivenTheBuiltIns) {
    const std::string text = R"({ "schema": "epochcast.catalog/1", "instances": [
        { "name": "p3.x", "gpu": "V100-SXM2-16GB", "gpus": 2, "vcpus": 16, "memory_gib": 122,
          "network_gbps": 10, "price_usd_per_hour": 6.12, "source": "s" } ] })";
    EXPECT_THROW(Catalog::parse(text, "user.json"), InputError);
    EXPECT_NO_THROW(Catalog::parse(text, "user.json", Catalog::built_in()));
}

TEST(CatalogErrors, DuplicateNameInOneFile) {
    const std::string message = input_error([] {
        Catalog::parse(R"({ "schema": "epochcast.catalog/1", "gpus": [ )" + kGpu + ", " + kGpu + " ] }", "dup.json");
    });
    EXPECT_TRUE(contains(message, R"(gpus[1] "X1")")) << message;
    EXPECT_TRUE(contains(message, "gpus[0]")) << message;
}

TEST(CatalogErrors, MissingFileNamesThePath) {
    const auto path = std::filesystem::temp_directory_path() / "epochcast_test_catalog_does_not_exist.json";
    const std::string message = input_error([&] { Catalog::load(path); });
    EXPECT_TRUE(contains(message, "cannot read catalog file '" + path.string() + "'")) << message;
    EXPECT_TRUE(contains(message, "No such file")) << message;
}

TEST(CatalogErrors, ErrorInAFileNamesThePath) {
    TempFile file(R"({ "schema": "epochcast.catalog/1", "gpus": [ { "name": "X1" } ] })");
    const std::string message = input_error([&] { Catalog::load(file.path()); });
    EXPECT_TRUE(contains(message, file.path())) << message;
    EXPECT_TRUE(contains(message, R"(gpus[0] "X1")")) << message;
}

TEST(CatalogErrors, LookupListsTheKnownNames) {
    const Catalog catalog = Catalog::built_in();
    std::string message = input_error([&] { catalog.instance("zz9.enormous"); });
    EXPECT_TRUE(contains(message, "unknown instance 'zz9.enormous' (known: ")) << message;
    EXPECT_TRUE(contains(message, "p2.xlarge")) << message;
    EXPECT_TRUE(contains(message, "p3.16xlarge")) << message;
    message = input_error([&] { catalog.gpu("X9000"); });
    EXPECT_TRUE(contains(message, "unknown GPU 'X9000'")) << message;
    EXPECT_TRUE(contains(message, "V100-SXM2-16GB")) << message;
}

// Issue 58 item 6: a near miss gets "did you mean", not the whole catalog.
TEST(CatalogErrors, ANearMissIsAskedDidYouMean) {
    const Catalog catalog = Catalog::built_in();
    const std::size_t instances = catalog.instances().size();
    std::string message = input_error([&] { catalog.instance("p6-b200"); });
    EXPECT_EQ(message, "unknown instance 'p6-b200' (did you mean p6-b200.48xlarge? `epochcast catalog` lists all " +
                           std::to_string(instances) + ")");
    message = input_error([&] { catalog.instance("P5.48XLARGE "); });  // case and a stray space
    EXPECT_TRUE(contains(message, "did you mean p5.48xlarge")) << message;
    message = input_error([&] { catalog.instance("p4d.24xlarg"); });
    EXPECT_TRUE(contains(message, "did you mean p4d.24xlarge")) << message;
    EXPECT_FALSE(contains(message, "p2.xlarge")) << message;
    message = input_error([&] { catalog.gpu("H100-SXM5"); });
    EXPECT_TRUE(contains(message, "did you mean H100-SXM5-80GB")) << message;
    message = input_error([&] { catalog.instance("p5"); });  // two characters: every family's prefix
    EXPECT_TRUE(contains(message, "(known: ")) << message;
    EXPECT_TRUE(close_names({"a100", "b200"}, std::string(100000, 'x')).empty());
}

// The local host as `epochcast-train --describe-host` describes it: a CPU with no fp16 arithmetic,
// a machine that costs nothing by the hour.
TEST(Catalog, CpuDeviceWithoutFp16AndFreeInstanceLoad) {
    const Catalog catalog = Catalog::parse(R"({ "schema": "epochcast.catalog/1",
        "gpus": [ { "name": "local-cpu", "fp32_tflops": 0.28, "fp16_tflops": 0, "bf16_tflops": 0.575,
                    "memory_gib": 11.7, "memory_GBps": 12, "source": "measured" } ],
        "instances": [ { "name": "local-cpu", "gpu": "local-cpu", "gpus": 2, "vcpus": 2, "memory_gib": 23.5,
                         "network_gbps": 96, "intra_node_GBps": 12, "price_usd_per_hour": 0,
                         "spot_usd_per_hour": 0, "source": "measured" } ] })",
                                           "host.json");
    EXPECT_DOUBLE_EQ(catalog.gpu("local-cpu").fp16_tflops, 0);
    EXPECT_DOUBLE_EQ(catalog.gpu("local-cpu").bf16_tflops, 0.575);
    EXPECT_DOUBLE_EQ(catalog.instance("local-cpu").usd_per_hour(Pricing::on_demand), 0);
    // fp32 stays required to be positive: a device must compute something.
    const std::string message = input_error([] {
        Catalog::parse(R"({ "schema": "epochcast.catalog/1", "gpus": [ { "name": "c", "fp32_tflops": 0,
                          "fp16_tflops": 0, "memory_gib": 1, "memory_GBps": 1, "source": "s" } ] })",
                       "host.json");
    });
    EXPECT_TRUE(contains(message, "\"fp32_tflops\"")) << message;
}

}  // namespace
// A device's kind is optional ("gpu" by default), written back only when it is not a GPU, and an
// unknown kind names the entry, the key and the accepted values.
TEST(Catalog, DeviceKindDefaultsToGpuAndRoundTrips) {
    const std::string text = R"({ "schema": "epochcast.catalog/1",
        "gpus": [ { "name": "local-cpu", "kind": "cpu", "fp32_tflops": 0.28, "fp16_tflops": 0,
                    "memory_gib": 11.7, "memory_GBps": 12, "source": "measured" } ] })";
    const Catalog catalog = Catalog::parse(text, "host.json");
    EXPECT_EQ(catalog.gpu("local-cpu").kind, DeviceKind::cpu);
    EXPECT_EQ(Catalog::parse(catalog.to_json_text(), "again").gpu("local-cpu").kind, DeviceKind::cpu);
    EXPECT_EQ(Catalog::built_in().gpu("V100-SXM2-16GB").kind, DeviceKind::gpu);
    EXPECT_FALSE(contains(Catalog::built_in().to_json_text(), "\"kind\""));

    std::string bad = text;
    bad.replace(bad.find("\"cpu\""), 5, "\"tpu\"");
    const std::string message = input_error([&] { Catalog::parse(bad, "host.json"); });
    EXPECT_TRUE(contains(message, "host.json")) << message;
    EXPECT_TRUE(contains(message, "\"kind\"")) << message;
    EXPECT_TRUE(contains(message, "'tpu'")) << message;
    EXPECT_TRUE(contains(message, "gpu, cpu")) << message;
}

}  // namespace epochcast
