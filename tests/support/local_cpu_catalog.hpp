// The catalog entry `epochcast-train --describe-host` writes for a test host: a 2-core host measured
// at 0.28 TFLOPS fp32 and 0.575 TFLOPS bf16 on 2 threads (oneDNN matmul), 12 GB/s copy bandwidth,
// one rank of 2 threads. Shared by the model's tests of `local-cpu` and the CLI's tests of `run`.
#pragma once

#include <nlohmann/json.hpp>

namespace epochcast::testing {

inline nlohmann::json local_cpu_catalog_json(double bf16_tflops = 0.575) {
    return {{"schema", "epochcast.catalog/1"},
            {"gpus",
             {{{"name", "local-cpu"},
               {"fp32_tflops", 0.28},
               {"fp16_tflops", 0},
               {"bf16_tflops", bf16_tflops},
               {"memory_gib", 23.5},
               {"memory_GBps", 12},
               {"source", "test: measured"}}}},
            {"instances",
             {{{"name", "local-cpu"},
               {"gpu", "local-cpu"},
               {"gpus", 1},
               {"vcpus", 2},
               {"memory_gib", 23.5},
               {"network_gbps", 96},
               {"intra_node_GBps", 12},
               {"price_usd_per_hour", 0},
               {"spot_usd_per_hour", 0},
               {"source", "test: measured"}}}}};
}

}  // namespace epochcast::testing
