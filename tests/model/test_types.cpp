#include <gtest/gtest.h>

#include "model/errors.hpp"
#include "model/types.hpp"

namespace epochcast {

TEST(Types, ParsesEverySpellingAndRoundTrips) {
    EXPECT_EQ(parse_precision("amp"), Precision::amp);
    EXPECT_EQ(parse_precision("fp16"), Precision::amp);
    EXPECT_EQ(to_string(parse_precision("bf16")), "bf16");
    EXPECT_EQ(parse_strategy("hierarchical"), Strategy::hierarchical);
    EXPECT_EQ(to_string(Strategy::ps), "ps");
    EXPECT_EQ(parse_framework("mxnet"), Framework::mxnet);
    EXPECT_EQ(parse_pricing("on-demand"), Pricing::on_demand);
    EXPECT_EQ(to_string(Pricing::spot), "spot");
}

TEST(Types, UnknownValueNamesTheFlagAndTheChoices) {
    try {
        parse_strategy("allgather", "--strategy");
        FAIL() << "expected InputError";
    } catch (const InputError& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("--strategy"), std::string::npos);
        EXPECT_NE(message.find("allgather"), std::string::npos);
        EXPECT_NE(message.find("hierarchical"), std::string::npos);
    }
}

TEST(Types, ElementBytesByPrecision) {
    EXPECT_EQ(gradient_element_bytes(Precision::fp32), 4.0);
    EXPECT_EQ(gradient_element_bytes(Precision::amp), 2.0);
    EXPECT_EQ(activation_element_bytes(Precision::bf16), 2.0);
}

}  // namespace epochcast
