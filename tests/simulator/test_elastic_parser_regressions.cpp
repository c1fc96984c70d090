// Hostile elastic schedules (issue 25): a one-line InputError naming the file and the entry.
#include <gtest/gtest.h>

#include <string>

#include "model/errors.hpp"
#include "simulator/elastic.hpp"

namespace epochcast {
namespace {

std::string error_of(const std::string& text) {
    try {
        sim::parse_elastic_schedule(text, "schedule.json");
    } catch (const InputError& error) {
        return error.what();
    }
    return "";
}

TEST(ElasticScheduleParser, PhasesWhoseEpochsOverflowADoubleAreRefused) {
    // 1e308 + 1e308 epochs is inf: every node loss then fell "below the schedule's inf epochs".
    const std::string message = error_of(R"({"schema": "epochcast.elastic/1", "phases": [
        {"epochs": 1e308, "nodes": 2}, {"epochs": 1e308, "nodes": 2}]})");
    EXPECT_EQ(message, "schedule.json: the phases' epochs add up to more than a double holds");
}

TEST(ElasticScheduleParser, ANumberBeyondADoubleIsAOneLineError) {
    const std::string message =
        error_of(R"({"schema": "epochcast.elastic/1", "phases": [{"epochs": 1e400, "nodes": 2}]})");
    EXPECT_NE(message.find("schedule.json: a number is beyond the range of a double"), std::string::npos) << message;
}

TEST(ElasticScheduleParser, NodesBeyondALongLongAreRefused) {
    const std::string message =
        error_of(R"({"schema": "epochcast.elastic/1", "phases": [{"epochs": 1, "nodes": 18446744073709551615}]})");
    EXPECT_NE(message.find(
                  "schedule.json: phases[0]: 'nodes' must be a whole number of at least 1 (got 18446744073709551615)"),
              std::string::npos)
        << message;
}

}  // namespace
}  // namespace epochcast
