// A measured run as the model sees it: the Scenario it ran and what was measured. Calibration
// and validation work on these; traces/ reads them from and writes them to files, so model/
// never includes traces/ (docs/architecture.md, "Dependency rules").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/scenario.hpp"

namespace epochcast {

struct Observation {
    std::string origin;                     ///< where it came from, e.g. "traces/published/x.json#2"
    std::string source;                     ///< the run's source: a URL, a paper, or "epochcast-train on <host>"
    std::string campaign;                   ///< the runs measured together with one code and software setup (one
                                            ///< results table, one submitter's MLPerf code); empty: its trace file
    Scenario scenario;                      ///< the configuration that ran
    double throughput_images_per_s = 0;     ///< measured global throughput, images/s
    std::optional<double> epoch_s;          ///< measured seconds per epoch, where published
    std::optional<double> time_to_train_s;  ///< measured seconds for the whole run, where published
    std::optional<double> iteration_s;      ///< measured seconds per iteration, where published
    std::optional<double> node_scaling_efficiency;  ///< measured throughput over nodes x one node's, where published
    std::vector<double>
        step_compute_s;        ///< one worker's compute seconds per timed step, where recorded (epochcast-train)
    bool approximate = false;  ///< a rough figure (e.g. from "about 10 minutes"): shown, not averaged
};

/// A measured all-reduce of one instance type's network (`epochcast import-nccl`), as the model
/// sees it: the large-message bus bandwidth across nodes.
struct NetworkObservation {
    std::string origin;                   ///< e.g. "traces/published/x.json#networks[0]"
    std::string instance;                 ///< catalog instance type
    int efa_adapters = -1;                ///< adapters used: -1 all the instance has, 0 TCP sockets
    int ranks = 0;                        ///< GPUs in the all-reduce
    int nodes = 0;                        ///< nodes they ran on (ranks over the instance's GPUs, rounded up)
    Strategy algorithm = Strategy::nccl;  ///< NCCL_ALGO of the test: nccl (NCCL's default), ring or tree
    double bus_bandwidth_GBps = 0;        ///< bus bandwidth, in 10^9 bytes/s
    double message_bytes = 0;             ///< the message size it was measured at; 0: the large-message plateau
};

/// A published relative figure where no absolute throughput was published: how one configuration
/// compares with another (seed 002's 7.7x speedup from 1 to 8 K80; seed 004's 5-8% shorter epochs
/// with EFA). A single value has low == high; a published range keeps both ends.
struct Comparison {
    std::string origin;  ///< e.g. "traces/published/x.json#comparisons[1]"
    std::string source;  ///< where the figure comes from
    ComparisonQuantity quantity = ComparisonQuantity::speedup;
    Scenario baseline;         ///< the configuration compared against
    Scenario scenario;         ///< the configuration whose change is measured
    double measured_low = 0;   ///< the measured ratio, or the low end of a published range
    double measured_high = 0;  ///< the high end (== measured_low for a single value)
};

/// How far a prediction is from a measurement, in percent of the measurement (positive: above).
inline double percent_error(double predicted, double measured) { return 100.0 * (predicted / measured - 1.0); }

}  // namespace epochcast
