#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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

TEST(CatalogCli, TablesListInstancesWithPricesAndUnits) {
    const std::string out = run_catalog({"catalog"});
    const std::string p3 = line_starting(out, "p3.16xlarge ");
    ASSERT_FALSE(p3.empty()) << out;
    EXPECT_TRUE(contains(p3, "V100-SXM2-16GB")) << p3;
    EXPECT_TRUE(contains(p3, "24.48")) << p3;
    EXPECT_TRUE(contains(p3, "7.344")) << p3;
    EXPECT_TRUE(contains(out, "network Gb/s")) << out;
    EXPECT_TRUE(contains(out, "on-demand $/h")) << out;
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
    EXPECT_DOUBLE_EQ(again.instance("p3.16xlarge").price_usd_per_hour, 24.48);
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
    EXPECT_DOUBLE_EQ(catalog.instance("p3.16xlarge").price_usd_per_hour, 20.5);
    EXPECT_DOUBLE_EQ(catalog.instance("p3.mine").price_usd_per_hour, 5.75);

    const std::string out = run_catalog({"catalog", "--catalog", first.path(), "--catalog", second.path()});
    EXPECT_TRUE(contains(line_starting(out, "p3.16xlarge "), "20.5")) << out;
    EXPECT_TRUE(contains(line_starting(out, "p3.mine "), "5.75")) << out;
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
