#include "model/resolved_scenario.hpp"

namespace epochcast {

double& ResolvedScenario::field(SensitiveField f) {
    switch (f) {
        case SensitiveField::time_per_image:
            return time_per_image_s;
        case SensitiveField::fixed:
            return fixed_s;
        case SensitiveField::sync_jitter:
            return sync_jitter;
        case SensitiveField::overlap:
            return overlap;
        case SensitiveField::intra_bandwidth:
            return intra_bandwidth_Bps;
        case SensitiveField::intra_latency:
            return intra_latency_s;
        case SensitiveField::inter_bandwidth:
            return inter_bandwidth_Bps;
        case SensitiveField::inter_latency:
            return inter_latency_s;
        case SensitiveField::server_bandwidth:
            return server_bandwidth_Bps;
        case SensitiveField::nvls_bandwidth:
            return nvls_bandwidth_Bps;
        case SensitiveField::decode:
            return decode_images_per_s_per_gpu;
        case SensitiveField::count:
            break;
    }
    return decode_images_per_s_per_gpu;
}

}  // namespace epochcast
