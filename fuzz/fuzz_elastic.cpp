// libFuzzer target: an elastic schedule (simulator/elastic.cpp's parser), as `simulate --elastic`
// reads it. A schedule that parses has finite, positive epochs and node counts its losses leave.
#include "fuzz/harness.hpp"
#include "simulator/elastic.hpp"

using namespace epochcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return fuzz::run(data, size, [](std::string_view text) {
        const sim::ElasticSchedule schedule = sim::parse_elastic_schedule(text, "fuzz.json");
        const double total = schedule.epochs();
        if (!std::isfinite(total) || !(total > 0)) fuzz::fail("a parsed schedule's epochs", std::to_string(total));
        for (const sim::ElasticPhase& phase : schedule.phases) {
            if (phase.nodes < 1 || phase.spot_nodes < 0 || phase.spot_nodes > phase.nodes) {
                fuzz::fail("a parsed phase's node counts", std::to_string(phase.nodes));
            }
        }
        for (const sim::NodeLoss& loss : schedule.node_losses) {
            if (!(loss.epoch >= 0 && loss.epoch < total)) fuzz::fail("a parsed node loss", std::to_string(loss.epoch));
        }
    });
}
