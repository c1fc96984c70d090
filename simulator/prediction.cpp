#include "simulator/prediction.hpp"

#include <algorithm>

#include "model/collectives.hpp"

namespace epochcast::sim {

Prediction simulated_prediction(const CostModel& model, const Scenario& scenario, const SimulationResult& result) {
    const ResolvedScenario resolved = model.resolve(scenario);
    const Prediction analytic = model.predict(resolved);
    Prediction p = analytic;
    p.compute_s = result.compute_s;
    p.data_s = result.data_s;
    p.communication_s = result.communication_s;
    p.exposed_communication_s = result.exposed_communication_s;
    p.sync_s = result.sync_s;
    p.iteration_s = describe(result.iteration_s).mean;
    p.bottleneck =
        named_bottleneck(resolved, bottleneck_of(p.compute_s, p.sync_s, p.exposed_communication_s, p.data_s));
    p.algorithm_bandwidth_GBps = p.communication_s > 0 ? resolved.gradient_bytes / p.communication_s / 1e9 : 0.0;
    p.bus_bandwidth_GBps = p.algorithm_bandwidth_GBps * allreduce_bus_factor(p.gpus);

    p.throughput_images_per_s = p.global_batch / p.iteration_s;
    p.per_gpu_images_per_s = p.throughput_images_per_s / p.gpus;
    // Baselines as predict computes them: one GPU alone under the same input pipeline, one node alone
    // (no stragglers to simulate there). A replay without jitter can run a little ahead of the closed
    // form's straggler wait: an efficiency stops at 1 all the same.
    p.scaling_efficiency =
        std::min(1.0, p.per_gpu_images_per_s /
                          one_gpu_images_per_s(resolved.batch_per_gpu, analytic.compute_s, analytic.data_s));
    const double node_throughput_images_per_s = analytic.throughput_images_per_s / analytic.node_scaling_efficiency;
    p.node_scaling_efficiency = std::min(1.0, p.throughput_images_per_s / node_throughput_images_per_s);
    // The calibration's relative uncertainty (eq. U1) around the simulated throughput.
    const double scale = p.throughput_images_per_s / analytic.throughput_images_per_s;
    p.interval.low = analytic.interval.low * scale;
    p.interval.high = analytic.interval.high * scale;

    apply_schedule(resolved, p);
    return p;
}

}  // namespace epochcast::sim
