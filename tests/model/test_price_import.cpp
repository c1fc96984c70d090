// model/price_import: the clouds' own price files read for the catalog's instances (issue 58,
// item 7). Each fixture (tests/fixtures/prices/, written from the formats' documented schemas with
// made-up figures) holds prices the catalog's terms take and prices they leave out (Windows, another
// region, dedicated tenancy, All Upfront, Low Priority); every expected price is recomputed here.
#include <gtest/gtest.h>

#include <string>

#include "model/catalog.hpp"
#include "model/errors.hpp"
#include "model/price_import.hpp"
#include "model/text_io.hpp"
#include "tests/support/error_of.hpp"

namespace epochcast {
namespace {

using testing::input_error_of;

std::string fixture(const std::string& name) {
    return read_text_file(std::string(EPOCHCAST_SOURCE_DIR) + "/tests/fixtures/prices/" + name, "fixture");
}

const ImportedPrice* find(const PriceImport& found, const std::string& instance, Pricing pricing) {
    for (const ImportedPrice& p : found.prices) {
        if (p.instance == instance && p.pricing == pricing) return &p;
    }
    return nullptr;
}

TEST(PriceImport, AnAwsOfferFileGivesLinuxSharedOnDemandAndNoUpfrontReservations) {
    const PriceImport found =
        import_price_file(fixture("aws_ec2_offer.json"), "aws.json", Catalog::built_in(), std::nullopt, "2026-11-29");
    EXPECT_EQ(found.format, PriceFileFormat::aws_offer_file);
    EXPECT_EQ(found.entries, 5u);
    ASSERT_EQ(found.prices.size(), 4u);  // p4d on demand; p5 on demand, 1 and 3 years
    const ImportedPrice* p5 = find(found, "p5.48xlarge", Pricing::on_demand);
    ASSERT_NE(p5, nullptr);
    EXPECT_DOUBLE_EQ(p5->price.usd_per_hour, 50.0);  // not Windows' 58.832, not Oregon's 51.5
    EXPECT_EQ(p5->price.read, "2026-11-20");         // the list's own publication date
    EXPECT_EQ(p5->region, "us-east-1");
    EXPECT_FALSE(p5->price.estimate);
    EXPECT_NE(p5->price.source.find("SKU P5LINUX"), std::string::npos) << p5->price.source;
    EXPECT_DOUBLE_EQ(find(found, "p5.48xlarge", Pricing::reserved_1y)->price.usd_per_hour, 34.0);  // not All Upfront
    EXPECT_DOUBLE_EQ(find(found, "p5.48xlarge", Pricing::reserved_3y)->price.usd_per_hour, 24.0);
    EXPECT_DOUBLE_EQ(find(found, "p4d.24xlarge", Pricing::on_demand)->price.usd_per_hour, 20.0);  // not dedicated
    // Another region asked for: Oregon's price, and only where the file has one.
    const PriceImport oregon =
        import_price_file(fixture("aws_ec2_offer.json"), "aws.json", Catalog::built_in(), "us-west-2", "2026-11-29");
    ASSERT_EQ(oregon.prices.size(), 1u);
    EXPECT_DOUBLE_EQ(oregon.prices[0].price.usd_per_hour, 51.5);
    EXPECT_EQ(oregon.prices[0].region, "us-west-2");
}

TEST(PriceImport, AnAzureRetailPageGivesPayAsYouGoSpotAndReservationsPerHour) {
    const PriceImport found = import_price_file(fixture("azure_retail_prices.json"), "azure.json", Catalog::built_in(),
                                                std::nullopt, "2026-11-29");
    EXPECT_EQ(found.format, PriceFileFormat::azure_retail);
    EXPECT_EQ(found.entries, 8u);
    ASSERT_EQ(found.prices.size(), 5u);
    const std::string h100 = "Standard_ND96isr_H100_v5";
    EXPECT_DOUBLE_EQ(find(found, h100, Pricing::on_demand)->price.usd_per_hour, 98.32);  // not Windows, not westus2
    EXPECT_DOUBLE_EQ(find(found, h100, Pricing::spot)->price.usd_per_hour, 39.33);       // not Low Priority
    // A reservation's unitPrice is its whole term's: over 8,760 hours a year.
    EXPECT_DOUBLE_EQ(find(found, h100, Pricing::reserved_1y)->price.usd_per_hour, 525600.0 / 8760.0);
    EXPECT_DOUBLE_EQ(find(found, h100, Pricing::reserved_3y)->price.usd_per_hour, 1051200.0 / (3 * 8760.0));
    // ND H200 v5 is read where the catalog sells it (eastus2), at the file's price.
    EXPECT_DOUBLE_EQ(find(found, "Standard_ND96isr_H200_v5", Pricing::on_demand)->price.usd_per_hour, 110.24);
    EXPECT_EQ(find(found, h100, Pricing::on_demand)->price.read, "2026-11-29");
}

TEST(PriceImport, AGoogleSkuListPricesAMachineByItsPartsAsAnEstimate) {
    const Catalog& catalog = Catalog::built_in();
    const PriceImport found =
        import_price_file(fixture("gcp_compute_skus.json"), "gcp.json", catalog, std::nullopt, "2026-11-29");
    EXPECT_EQ(found.format, PriceFileFormat::gcp_billing_skus);
    const InstanceSpec& a3 = catalog.instance("a3-highgpu-8g");
    const ImportedPrice* on_demand = find(found, "a3-highgpu-8g", Pricing::on_demand);
    ASSERT_NE(on_demand, nullptr);
    EXPECT_NEAR(on_demand->price.usd_per_hour, a3.vcpus * 0.03 + a3.memory_gib * 0.004 + 8 * 9.5, 1e-9);
    EXPECT_TRUE(on_demand->price.estimate);
    EXPECT_NE(on_demand->price.source.find("a sum of parts"), std::string::npos);
    EXPECT_NEAR(find(found, "a3-highgpu-8g", Pricing::spot)->price.usd_per_hour,
                a3.vcpus * 0.01 + a3.memory_gib * 0.0015 + 8 * 3.0, 1e-9);
    const InstanceSpec& a2 = catalog.instance("a2-highgpu-8g");
    EXPECT_NEAR(find(found, "a2-highgpu-8g", Pricing::reserved_1y)->price.usd_per_hour,
                a2.vcpus * 0.02 + a2.memory_gib * 0.0025 + 8 * 1.85, 1e-9);
    // A3 Mega has only its cores in the file: no part missing is guessed.
    EXPECT_EQ(find(found, "a3-megagpu-8g", Pricing::on_demand), nullptr);
    // A3 Ultra (H200) takes none of A3 High's parts.
    EXPECT_EQ(find(found, "a3-ultragpu-8g", Pricing::on_demand), nullptr);
}

TEST(PriceImport, TheOverlayMergesOverTheCatalogKeepingThePricesItDoesNotName) {
    const PriceImport found =
        import_price_file(fixture("aws_ec2_offer.json"), "aws.json", Catalog::built_in(), std::nullopt, "2026-11-29");
    Catalog merged = Catalog::built_in();
    merged.merge(Catalog::parse(price_overlay_json(found.prices), "overlay", merged));
    const InstanceSpec& p5 = merged.instance("p5.48xlarge");
    EXPECT_DOUBLE_EQ(p5.price(Pricing::on_demand)->usd_per_hour, 50.0);
    EXPECT_EQ(p5.price(Pricing::on_demand)->read, "2026-11-20");
    EXPECT_DOUBLE_EQ(p5.price(Pricing::reserved_1y)->usd_per_hour, 34.0);
    // Its spot and capacity-block prices stay the catalog's.
    EXPECT_DOUBLE_EQ(p5.price(Pricing::spot)->usd_per_hour,
                     Catalog::built_in().instance("p5.48xlarge").price(Pricing::spot)->usd_per_hour);
    EXPECT_NE(p5.price(Pricing::capacity_block), nullptr);
    EXPECT_EQ(p5.gpus, 8);
}

TEST(PriceImport, AFileOfNoKnownFormatOrABadPriceIsRefusedByName) {
    const Catalog& catalog = Catalog::built_in();
    EXPECT_NE(input_error_of([&] {
                  import_price_file(R"({"prices": []})", "x.json", catalog, std::nullopt, "2026-11-29");
              }).find("x.json: not a price file epochcast reads"),
              std::string::npos);
    EXPECT_NE(
        input_error_of([&] { import_price_file("[1,", "y.json", catalog, std::nullopt, "2026-11-29"); }).find("y.json"),
        std::string::npos);
    const std::string bad = R"({"Items": [{"armSkuName": "Standard_ND96isr_H100_v5", "armRegionName": "eastus",
        "currencyCode": "USD", "unitOfMeasure": "1 Hour", "type": "Consumption", "skuName": "ND96isr H100 v5",
        "productName": "Virtual Machines NDv5 Series", "unitPrice": "cheap"}]})";
    EXPECT_NE(input_error_of([&] {
                  import_price_file(bad, "z.json", catalog, std::nullopt, "2026-11-29");
              }).find("z.json: the unitPrice of ND96isr H100 v5 is not a price in US dollars"),
              std::string::npos);
}

}  // namespace
}  // namespace epochcast
