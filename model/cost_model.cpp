#include "model/cost_model.hpp"

#include <string>
#include <utility>

#include "model/collectives.hpp"
#include "model/errors.hpp"

namespace epochcast {

CostModel::CostModel(Catalog catalog, Calibration calibration)
    : catalog_(std::make_shared<const Catalog>(std::move(catalog))),
      calibration_(std::make_shared<const Calibration>(std::move(calibration))),
      workloads_(std::make_shared<Workloads>()),
      covariance_(*calibration_),
      curves_(catalog_, calibration_, workloads_) {}

CostModel::CostModel(const CostModel& base, Calibration calibration)
    : catalog_(base.catalog_),
      calibration_(std::make_shared<const Calibration>(std::move(calibration))),
      workloads_(base.workloads_),
      covariance_(*calibration_),
      curves_(catalog_, calibration_, workloads_) {}

const Workload& CostModel::workload(const std::string& model, int image_size, int classes) const {
    return workloads_->get(model, image_size, classes);
}

ResolvedScenario CostModel::resolve(const Scenario& scenario) const {
    ResolvedScenario r;
    std::string infeasible;
    if (!resolve_into(scenario, r, infeasible)) throw InfeasibleError(infeasible);
    return r;
}

bool CostModel::resolve_feasible(const Scenario& scenario, ResolvedScenario& resolved, std::string& infeasible) const {
    resolved = ResolvedScenario{};
    infeasible.clear();
    return resolve_into(scenario, resolved, infeasible);
}

bool CostModel::resolve_into(const Scenario& scenario, ResolvedScenario& r, std::string& infeasible) const {
    // What epochcast accepts, before any look-up (model/limits.hpp).
    check_scenario_limits(scenario);

    // The cluster as the catalog has it; the architecture, and whether its batch fits a GPU.
    const Cluster cluster = resolve_cluster(*catalog_, scenario);
    set_cluster(r, cluster, scenario);
    const GpuSpec& gpu = *cluster.workers.gpu;
    const Workload& work = workloads_->get(scenario.model, scenario.image_size, scenario.classes);
    const MemoryEstimate memory =
        training_memory_on(work, scenario.model, scenario.precision, cluster.batch_per_gpu, gpu, infeasible);
    if (!infeasible.empty()) return false;
    r.memory_per_gpu_bytes = memory.total_bytes();
    r.memory_headroom_bytes = memory.context_bytes + memory.slack_bytes;
    const double checkpoint = checkpoint_bytes(work);

    // One iteration: the compute curve (eq. C0), the framework's share and the input pipeline, the
    // communication; then which parameter each of its fields follows (eq. U1).
    const ComputeCurveChoice curve = curves_.choose(gpu, scenario, work, covariance_);
    set_compute_curve(r, curve);
    set_framework_profile(r, calibration().framework(scenario.framework), gpu.kind);
    set_input_pipeline(r, scenario, calibration(), cluster.workers.instance->vcpus, gpu.jpeg_decoder_cores, gpu.kind);
    set_communication(r, cluster, scenario, work, calibration());
    r.sensitivity = field_sensitivities(r, curve.time_per_image, curve.fixed, scenario.framework, cluster,
                                        calibration(), covariance_);

    // The run around the iterations: its epochs, schedule, money, and the store it reads.
    set_epochs(r, *convergence_, scenario, cluster.global_batch);
    set_evaluation_cadence(r, *convergence_, scenario);
    set_run_schedule(r, scenario, calibration(), checkpoint);
    set_price(r, scenario, cluster);
    set_storage(r, scenario, *cluster.workers.instance, checkpoint);
    return true;
}

Prediction CostModel::predict(const ResolvedScenario& s) const noexcept {
    Prediction p;
    const Communication comm = communication(s);
    apply_iteration(s, comm, p);
    p.interval = throughput_band(s, comm, p, covariance_, calibration().uncertainty.model_sigma);
    apply_schedule(s, p);
    return p;
}

Prediction CostModel::checked_predict(const ResolvedScenario& scenario) const {
    Prediction p = predict(scenario);
    check_spot_run(scenario, p);
    check_prediction(p);
    return p;
}

double CostModel::throughput_relative_sigma(const ResolvedScenario& s) const noexcept {
    return epochcast::throughput_relative_sigma(s, covariance_, calibration().uncertainty.model_sigma);
}

}  // namespace epochcast
