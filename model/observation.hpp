// A measured run as the model sees it: the Scenario it ran and what was measured. Calibration
// and validation work on these; traces/ reads them from and writes them to files, so model/
// never includes traces/ (DESIGN.md).
#pragma once

#include <optional>
#include <string>

#include "model/scenario.hpp"

namespace epochcast {

struct Observation {
    std::string origin;                      ///< where it came from, e.g. "traces/published/x.json#2"
    std::string source;                      ///< the run's source: a URL, a paper, or "epochcast-train on <host>"
    Scenario scenario;                       ///< the configuration that ran
    double throughput_images_per_s = 0;      ///< measured global throughput, images/s
    std::optional<double> epoch_s;           ///< measured seconds per epoch, where published
    std::optional<double> time_to_train_s;   ///< measured seconds for the whole run, where published
    std::optional<double> iteration_s;       ///< measured seconds per iteration, where published
};

}  // namespace epochcast
