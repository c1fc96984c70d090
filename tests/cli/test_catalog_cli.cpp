#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/table.hpp"
#include "model/catalog.hpp"
#include "model/errors.hpp"
#include "tests/support/temp_file.hpp"

namespace epochcast::cli {
namespace {

using testing::TempFile;

std::string run_catalog(const std::vector<std::string>& args) {
    std::ostringstream out;
    run(args, out);
    return out.str();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The line of `text` that starts with `prefix` ("" when none).
std::string line_starting(const std::string& text, const std::string& prefix) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(prefix, 0) == 0) return line;
    }
    return "";
}

/// The prices table of `catalog`'s text: what follows its heading.
std::string prices_table(const std::string& out) {
    const auto at = out.find("\nPrices in US dollars");
    return at == std::string::npos ? std::string() : out.substr(at);
}

TEST(CatalogCli, TablesListInstancesWithPricesAndUnits) {
    const std::string out = run_catalog({"catalog"});
    const std::string p3 = line_starting(out, "p3.16xlarge ");
    ASSERT_FALSE(p3.empty()) << out;
    EXPECT_TRUE(contains(p3, "V100-SXM2-16GB")) << p3;
    const std::string p3_prices = line_starting(prices_table(out), "p3.16xlarge ");
    EXPECT_TRUE(contains(p3_prices, " aws ")) << p3_prices;
    EXPECT_TRUE(contains(p3_prices, "us-east-1")) << p3_prices;
    EXPECT_TRUE(contains(p3_prices, "24.48")) << p3_prices;
    EXPECT_TRUE(contains(p3_prices, "4.1616")) << p3_prices;  // the Spot Advisor feed's 83% saving
    EXPECT_FALSE(contains(p3_prices, "estimate")) << p3_prices;
    // A spot price that is only an estimate says so.
    const std::string g3_prices = line_starting(prices_table(out), "g3.16xlarge ");
    EXPECT_TRUE(contains(g3_prices, "1.368")) << g3_prices;
    EXPECT_TRUE(contains(g3_prices, "spot: an estimate, not a quote")) << g3_prices;
    // An owned system has no price: n/a, never $0.
    const std::string dgx = line_starting(prices_table(out), "dgx-a100 ");
    EXPECT_TRUE(contains(dgx, "owned")) << dgx;
    EXPECT_TRUE(contains(dgx, "n/a: no price by the hour")) << dgx;
    EXPECT_FALSE(contains(dgx, " 0 ")) << dgx;
    // p5e is sold only as capacity blocks, read for us-east-2.
    const std::string p5e = line_starting(prices_table(out), "p5e.48xlarge ");
    EXPECT_TRUE(contains(p5e, "us-east-2")) << p5e;
    EXPECT_TRUE(contains(p5e, "47.76")) << p5e;
    for (const char* column : {"on-demand $/h", "spot $/h", "capacity-block $/h", "reserved-1y $/h", "reserved-3y $/h"})
        EXPECT_TRUE(contains(out, column)) << column;
    EXPECT_TRUE(contains(out, "network Gb/s")) << out;
    EXPECT_TRUE(contains(out, "fp32 TFLOPS")) << out;
    EXPECT_TRUE(contains(out, "memory GB/s")) << out;
    const std::string k80 = line_starting(out, "K80 ");
    EXPECT_TRUE(contains(k80, "4.37")) << k80;
    const std::string m4 = line_starting(out, "m4.16xlarge ");
    EXPECT_TRUE(contains(m4, "CPU only")) << m4;
}

TEST(CatalogCli, JsonParsesAndRoundTrips) {
    const std::string out = run_catalog({"catalog", "--json"});
    const nlohmann::json parsed = nlohmann::json::parse(out);
    EXPECT_EQ(parsed.at("schema"), "epochcast.catalog/1");
    const Catalog built_in = Catalog::built_in();
    EXPECT_EQ(parsed.at("instances").size(), built_in.instances().size());
    const Catalog again = Catalog::parse(out, "catalog --json");
    EXPECT_EQ(again.to_json_text(), built_in.to_json_text());
    EXPECT_DOUBLE_EQ(again.instance("p3.16xlarge").usd_per_hour(Pricing::on_demand), 24.48);
    // CPU-only instances are written without "gpu".
    for (const auto& instance : parsed.at("instances")) {
        if (instance.at("gpus") == 0) {
            EXPECT_FALSE(instance.contains("gpu")) << instance.dump();
        }
    }
}

TEST(CatalogCli, CatalogFilesAreMergedInOrder) {
    TempFile first(R"({ "schema": "epochcast.catalog/1", "instances": [
        { "name": "p3.16xlarge", "gpu": "V100-SXM2-16GB", "gpus": 8, "vcpus": 64, "memory_gib": 488,
          "network_gbps": 25, "price_usd_per_hour": 20.5, "source": "first" },
        { "name": "p3.mine", "gpu": "V100-SXM2-16GB", "gpus": 2, "vcpus": 16, "memory_gib": 122,
          "network_gbps": 10, "price_usd_per_hour": 6.12, "source": "first" } ] })");
    TempFile second(R"({ "schema": "epochcast.catalog/1", "instances": [
        { "name": "p3.mine", "gpu": "V100-SXM2-16GB", "gpus": 2, "vcpus": 16, "memory_gib": 122,
          "network_gbps": 10, "price_usd_per_hour": 5.75, "source": "second" } ] })");
    const Catalog catalog = load_catalog({first.path(), second.path()});
    EXPECT_DOUBLE_EQ(catalog.instance("p3.16xlarge").usd_per_hour(Pricing::on_demand), 20.5);
    EXPECT_DOUBLE_EQ(catalog.instance("p3.mine").usd_per_hour(Pricing::on_demand), 5.75);

    const std::string out = run_catalog({"catalog", "--catalog", first.path(), "--catalog", second.path()});
    EXPECT_TRUE(contains(line_starting(prices_table(out), "p3.16xlarge "), "20.5")) << out;
    EXPECT_TRUE(contains(line_starting(prices_table(out), "p3.mine "), "5.75")) << out;
}

/// The instance names of the prices table of `out`, in order.
std::vector<std::string> priced_names(const std::string& out) {
    std::vector<std::string> names;
    std::istringstream lines(prices_table(out));
    std::string line;
    for (int skip = 0; skip < 4 && std::getline(lines, line); ++skip) {  // blank, heading, header, rule
    }
    while (std::getline(lines, line) && !line.empty()) names.push_back(line.substr(0, line.find(' ')));
    return names;
}

TEST(CatalogCli, CloudGcpListsGoogleGpuInstancesWithTheirPrices) {
    const std::string out = run_catalog({"catalog", "--cloud", "gcp"});
    const std::vector<std::string> names = priced_names(out);
    for (const char* name :
         {"a2-highgpu-1g", "a2-highgpu-8g", "a2-ultragpu-8g", "a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g"}) {
        EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name << "\n" << out;
    }
    for (const std::string& name : names) {
        const std::string line = line_starting(prices_table(out), name + " ");
        EXPECT_TRUE(contains(line, " gcp ")) << line;
        EXPECT_TRUE(contains(line, "us-central1")) << line;
    }
    EXPECT_FALSE(contains(out, "p5.48xlarge")) << out;
    EXPECT_TRUE(line_starting(out, "K80 ").empty()) << out;  // only the GPUs its instances hold
    // The H200 machine at its read prices; the A100 one with its committed-use prices too.
    const std::string ultra = line_starting(prices_table(out), "a3-ultragpu-8g ");
    EXPECT_TRUE(contains(ultra, "83.492")) << ultra;
    EXPECT_TRUE(contains(ultra, "50.0856")) << ultra;
    const std::string a2 = line_starting(prices_table(out), "a2-highgpu-8g ");
    for (const char* price : {"29.3871", "10.3468", "18.5137", "10.2857"}) EXPECT_TRUE(contains(a2, price)) << a2;
    // The JSON is a catalog of those instances alone, which --catalog reads back.
    const nlohmann::json parsed = nlohmann::json::parse(run_catalog({"catalog", "--cloud", "gcp", "--json"}));
    EXPECT_EQ(parsed.at("instances").size(), names.size());
    for (const auto& instance : parsed.at("instances")) EXPECT_EQ(instance.at("cloud"), "gcp") << instance.dump();
    EXPECT_NO_THROW(Catalog::parse(parsed.dump(), "gcp.json"));
}

TEST(CatalogCli, CloudAzureListsItsNdSeries) {
    const std::string out = run_catalog({"catalog", "--cloud", "azure"});
    const std::vector<std::string> names = priced_names(out);
    for (const char* name :
         {"Standard_ND96isr_H100_v5", "Standard_ND96amsr_A100_v4", "Standard_ND96asr_v4", "Standard_ND96isr_H200_v5"}) {
        EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name << "\n" << out;
    }
    const std::string h100 = line_starting(prices_table(out), "Standard_ND96isr_H100_v5 ");
    EXPECT_TRUE(contains(h100, "eastus")) << h100;
    EXPECT_TRUE(contains(h100, "98.32")) << h100;
    // The H200 size is priced where the Retail Prices API has it (eastus2); no price was found for the
    // A100 40 GB size: n/a, not a made-up figure.
    const std::string h200 = line_starting(prices_table(out), "Standard_ND96isr_H200_v5 ");
    EXPECT_TRUE(contains(h200, "eastus2")) << h200;
    EXPECT_TRUE(contains(h200, "84.8")) << h200;
    EXPECT_TRUE(contains(line_starting(prices_table(out), "Standard_ND96asr_v4 "), "n/a: no price")) << out;
    EXPECT_TRUE(contains(out, "infiniband")) << out;
}

TEST(CatalogCli, AnUnknownCloudIsAnInputErrorListingTheClouds) {
    try {
        run_catalog({"catalog", "--cloud", "ibm"});
        FAIL() << "expected InputError";
    } catch (const InputError& error) {
        EXPECT_EQ(std::string(error.what()),
                  "--cloud 'ibm': no instance of the catalog is in that cloud (clouds: aws, azure, gcp, owned)");
    }
}

TEST(CatalogCli, BadCatalogFileThrowsInputError) {
    TempFile bad(R"({ "schema": "epochcast.catalog/1", "instances": [ { "name": "p3.16xlarge", "gpus": -1 } ] })");
    try {
        run_catalog({"catalog", "--catalog", bad.path()});
        FAIL() << "expected InputError";
    } catch (const InputError& error) {
        const std::string message = error.what();
        EXPECT_TRUE(contains(message, bad.path())) << message;
        EXPECT_TRUE(contains(message, R"(instances[0] "p3.16xlarge")")) << message;
        EXPECT_TRUE(contains(message, "\"gpus\"")) << message;
    }
    EXPECT_THROW(run_catalog({"catalog", "--catalog", "/nonexistent/epochcast/catalog.json"}), InputError);
}

/// A table of `header` and `rows`, printed.
std::string printed(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
    Table table(header);
    for (const auto& row : rows) table.add_row(row);
    std::ostringstream out;
    table.print(out);
    return out.str();
}

TEST(Table, RightAlignsNumericColumns) {
    EXPECT_EQ(printed({"name", "price $/h"}, {{"a", "1.5"}, {"longer", "24.48"}, {"none", "-"}}),
              "name    price $/h\n"
              "------  ---------\n"
              "a             1.5\n"
              "longer      24.48\n"
              "none            -\n");
    Table table({"name", "price $/h"});
    EXPECT_THROW(table.add_row({"too few"}), std::invalid_argument);
}

TEST(Table, FormatNumberDropsTrailingZeros) {
    EXPECT_EQ(format_number(24.48), "24.48");
    EXPECT_EQ(format_number(8), "8");
    EXPECT_EQ(format_number(0.918), "0.918");
    EXPECT_EQ(format_number(32.7726), "32.7726");
    EXPECT_EQ(format_number(4.368, 2), "4.37");
    EXPECT_TRUE(looks_numeric("3200"));
    EXPECT_FALSE(looks_numeric("p3.16xlarge"));
}

// A chance to finish by a deadline (predict --pricing spot --deadline): one decimal, and never a
// rounded certainty (issue 45: it printed "97.654%" and would print "100%" for 0.99996).
TEST(Table, FormatChanceKeepsOneDecimalAndNoFalseCertainty) {
    EXPECT_EQ(format_chance(0.97654), "97.7%");
    EXPECT_EQ(format_chance(0.99996), "> 99.9%");
    EXPECT_EQ(format_chance(1.0), "100.0%");
    EXPECT_EQ(format_chance(0.00002), "< 0.1%");
    EXPECT_EQ(format_chance(0.0), "0.0%");
    EXPECT_EQ(format_chance(0.5), "50.0%");
}

TEST(Table, GroupedNumbersKeepTheirDecimals) {
    EXPECT_EQ(format_grouped(1217.54, 1), "1,217.5");
    EXPECT_EQ(format_grouped(143812, 0), "143,812");
    EXPECT_EQ(format_grouped(1234567.25, 2), "1,234,567.25");
    EXPECT_EQ(format_grouped(999, 1), "999");
    EXPECT_EQ(format_grouped(100000, 0), "100,000");
    EXPECT_EQ(format_grouped(-1234.5, 1), "-1,234.5");
    EXPECT_EQ(format_grouped(11.6, 1), "11.6");
    EXPECT_TRUE(looks_numeric(format_grouped(1234567.25, 2)));
}

TEST(Table, CountsAndDollarsWithThousandsSeparatorsAreNumeric) {
    EXPECT_TRUE(looks_numeric("1,281,167"));
    EXPECT_TRUE(looks_numeric("$12,345.67"));
    EXPECT_TRUE(looks_numeric("$0.70"));
    EXPECT_TRUE(looks_numeric("-1,000"));
    EXPECT_FALSE(looks_numeric("1,2"));  // not groups of three
    EXPECT_FALSE(looks_numeric("1234,567"));
    EXPECT_FALSE(looks_numeric(",123"));
    EXPECT_FALSE(looks_numeric("$"));
    EXPECT_FALSE(looks_numeric("8, 16"));
    EXPECT_EQ(printed({"cost", "images/s"}, {{"$12,345.67", "1,281,167"}, {"$5.00", "9"}}),
              "      cost   images/s\n"
              "----------  ---------\n"
              "$12,345.67  1,281,167\n"
              "     $5.00          9\n");
}

}  // namespace
}  // namespace epochcast::cli
