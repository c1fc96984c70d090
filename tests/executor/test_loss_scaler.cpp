// Dynamic loss scaling (executor/loss_scaler.hpp): the schedule the CUDA backend follows, checked on
// the host where it is decided.
#include <gtest/gtest.h>

#include "executor/loss_scaler.hpp"
#include "model/errors.hpp"

namespace epochcast {
namespace {

TEST(LossScaler, StartsAtTwoToTheFifteen) {
    const LossScaler scaler;
    EXPECT_EQ(scaler.scale(), 32768.0);
    EXPECT_EQ(scaler.skipped(), 0);
}

TEST(LossScaler, AnOverflowSkipsTheStepAndHalvesTheScale) {
    LossScaler scaler;
    EXPECT_FALSE(scaler.update(true));
    EXPECT_EQ(scaler.scale(), 16384.0);
    EXPECT_EQ(scaler.skipped(), 1);
    EXPECT_FALSE(scaler.update(true));
    EXPECT_EQ(scaler.scale(), 8192.0);
    EXPECT_EQ(scaler.skipped(), 2);
    EXPECT_TRUE(scaler.update(false));
    EXPECT_EQ(scaler.scale(), 8192.0);
    EXPECT_EQ(scaler.skipped(), 2);
}

TEST(LossScaler, DoublesAfterTwoThousandCleanStepsInARow) {
    LossScaler scaler;
    for (int step = 0; step < 1999; ++step) ASSERT_TRUE(scaler.update(false));
    EXPECT_EQ(scaler.scale(), 32768.0);
    EXPECT_EQ(scaler.clean_steps(), 1999);
    EXPECT_TRUE(scaler.update(false));
    EXPECT_EQ(scaler.scale(), 65536.0);
    EXPECT_EQ(scaler.clean_steps(), 0);
    for (int step = 0; step < 2000; ++step) ASSERT_TRUE(scaler.update(false));
    EXPECT_EQ(scaler.scale(), 131072.0);
}

TEST(LossScaler, AnOverflowRestartsTheCountOfCleanSteps) {
    LossScaler scaler;
    for (int step = 0; step < 1500; ++step) scaler.update(false);
    scaler.update(true);  // 16384, count restarts
    for (int step = 0; step < 1999; ++step) scaler.update(false);
    EXPECT_EQ(scaler.scale(), 16384.0);
    scaler.update(false);
    EXPECT_EQ(scaler.scale(), 32768.0);
    EXPECT_EQ(scaler.skipped(), 1);
}

// Halving stops at 1; an overflow there cannot be cured by a smaller scale, so the run fails
// (the issue: a run whose scaler keeps skipping until the scale underflows is an error).
TEST(LossScaler, HalvingStopsAtOneWhereAnotherOverflowFailsTheRun) {
    LossScaler scaler(4);
    EXPECT_FALSE(scaler.update(true));
    EXPECT_FALSE(scaler.update(true));
    EXPECT_EQ(scaler.scale(), 1.0);
    EXPECT_EQ(scaler.skipped(), 2);
    try {
        scaler.update(true);
        FAIL() << "an overflow at the minimum scale was skipped";
    } catch (const RunError& error) {
        EXPECT_NE(std::string(error.what()).find("minimum loss scale"), std::string::npos) << error.what();
        EXPECT_NE(std::string(error.what()).find("lower --lr"), std::string::npos) << error.what();
    }
    LossScaler recovering(2);  // one clean step at scale 1 keeps the run going
    EXPECT_FALSE(recovering.update(true));
    EXPECT_TRUE(recovering.update(false));
    EXPECT_EQ(recovering.scale(), 1.0);
}

TEST(LossScaler, RefusesAScaleBelowOneOrAnEmptyInterval) {
    EXPECT_THROW(LossScaler(0.5), InputError);
    EXPECT_THROW(LossScaler(1024, 0), InputError);
}

}  // namespace
}  // namespace epochcast
