// The uncertainty (model/uncertainty.hpp): which parameter each sensitive field of a resolved
// scenario follows.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "model/collectives.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/iteration.hpp"
#include "model/uncertainty.hpp"

namespace epochcast {
namespace {

const CostModel& model() {
    static const CostModel instance(Catalog::built_in(), Calibration::built_in());
    return instance;
}

TEST(ResolveSteps, ResolveTakesEachFieldsParameterFromItsStep) {
    // p3.16xlarge workers on sockets with m4.16xlarge servers: the bandwidth rows are the ones
    // node_network_parameter names, the latency row the slower fabric's.
    Scenario s;
    s.instance = "p3.16xlarge";
    s.nodes = 8;
    s.strategy = Strategy::ps;
    s.ps_instance = "m4.16xlarge";
    s.ps_nodes = 4;
    const ResolvedScenario r = model().resolve(s);
    const NetworkParams& net = model().calibration().network;
    const NetworkParameter worker = node_network_parameter(model().catalog().instance("p3.16xlarge"), -1, net);
    const auto row = [&](ParameterId id) {
        const std::vector<ParameterId>& rows = model().parameters();
        return static_cast<int>(std::find(rows.begin(), rows.end(), id) - rows.begin());
    };
    const FieldSensitivity& inter = r.sensitivity[static_cast<std::size_t>(SensitiveField::inter_bandwidth)];
    EXPECT_EQ(inter.parameter, row(worker.id));
    EXPECT_DOUBLE_EQ(inter.log_field_per_coordinate,
                     log_value_per_coordinate(coordinate_of(worker.id.kind), worker.value));
    const FabricLatency latency = cross_node_latency(r.interconnect, &model().catalog().instance("m4.16xlarge"), net);
    EXPECT_DOUBLE_EQ(r.inter_latency_s, latency.latency_s);
    EXPECT_EQ(r.sensitivity[static_cast<std::size_t>(SensitiveField::inter_latency)].parameter,
              row({ParameterKind::fabric_latency, static_cast<int>(latency.fabric)}));
    EXPECT_DOUBLE_EQ(r.cluster_usd_per_hour, 8 * 24.48 + 4 * 3.2);
}

/// ln(iteration) of `r` with its field `f` moved to value x exp(step), the synchronisation timed
/// again (its algorithm, protocol and buckets chosen anew).
double log_iteration_moved(ResolvedScenario r, SensitiveField f, double step) {
    r.field(f) *= std::exp(step);
    return std::log(iteration_times(r).iteration_s);
}

TEST(IntervalGradient, TheAnalyticDerivativesAreTheIterationsFiniteDifferences) {
    // Eq. U1's gradient is computed from each formula's derivative (log_iteration_per_log_field);
    // here it is recomputed the long way, moving each field and timing the whole iteration again,
    // over instances of every kind of link, each strategy, one to 16 nodes, small and large batches
    // and each kind of input. A point on a kink (a max, a min or a choice of algorithm turning
    // over) has two one-sided slopes; there the comparison is left out, and such points are rare.
    constexpr double kStep = 1e-6;
    int compared = 0;
    int kinks = 0;
    for (const char* instance :
         {"p3.2xlarge", "p3.16xlarge", "p3dn.24xlarge", "p4d.24xlarge", "p5.48xlarge", "g6.12xlarge"}) {
        for (Strategy strategy :
             {Strategy::nccl, Strategy::ring, Strategy::tree, Strategy::hierarchical, Strategy::ps}) {
            for (int nodes : {1, 2, 5, 16}) {
                for (int batch : {32, 256}) {
                    for (Loader loader : {Loader::synthetic, Loader::dali, Loader::cpu}) {
                        for (bool colocated : {false, true}) {
                            if (colocated && strategy != Strategy::ps) continue;
                            Scenario s;
                            s.instance = instance;
                            s.strategy = strategy;
                            s.nodes = nodes;
                            s.batch_per_gpu = batch;
                            s.loader = loader;
                            if (strategy == Strategy::ps) {
                                s.ps_colocated = colocated;
                                if (!colocated) {
                                    s.ps_instance = "c5.18xlarge";
                                    s.ps_nodes = 2;
                                }
                            }
                            ResolvedScenario r;
                            try {
                                r = model().resolve(s);
                            } catch (const InputError&) {
                                continue;  // does not fit, or no such pairing
                            }
                            const Communication comm = communication(r);
                            const std::array<double, kSensitiveFields> analytic =
                                log_iteration_per_log_field(r, comm, iteration_times_with(r, comm.seconds));
                            // With no input to wait for, the step's own derivatives: what the band's
                            // fast end reads (log_step_per_log_field), exactly those of the same
                            // cluster given an infinitely fast loader and store.
                            const IterationTimes times = iteration_times_with(r, comm.seconds);
                            ResolvedScenario unbound = r;
                            unbound.decode_images_per_s_per_gpu = std::numeric_limits<double>::infinity();
                            unbound.storage_images_per_s_per_gpu = std::numeric_limits<double>::infinity();
                            const std::array<double, kSensitiveFields> step_only =
                                log_step_per_log_field(step_derivatives(r, comm, times), times);
                            const std::array<double, kSensitiveFields> unbound_analytic =
                                log_iteration_per_log_field(unbound, comm, iteration_times_with(unbound, comm.seconds));
                            for (std::size_t f = 0; f < kSensitiveFields; ++f)
                                EXPECT_EQ(step_only[f], unbound_analytic[f]) << instance << " field " << f;
                            const double base = std::log(iteration_times(r).iteration_s);
                            for (std::size_t f = 0; f < kSensitiveFields; ++f) {
                                const auto field = static_cast<SensitiveField>(f);
                                const double value = r.field(field);
                                if (!(value > 0) || !std::isfinite(value)) {
                                    EXPECT_EQ(analytic[f], 0.0) << instance << " field " << f;
                                    continue;
                                }
                                const double up = (log_iteration_moved(r, field, kStep) - base) / kStep;
                                const double down = (base - log_iteration_moved(r, field, -kStep)) / kStep;
                                if (std::fabs(up - down) > 1e-4) {
                                    ++kinks;
                                    continue;
                                }
                                ++compared;
                                EXPECT_NEAR(analytic[f], (up + down) / 2, 2e-6)
                                    << instance << " " << to_string(strategy) << " x" << nodes << " batch " << batch
                                    << " " << to_string(loader) << (colocated ? " colocated" : "") << ", field " << f;
                            }
                            // The gradient over the parameters is the same derivatives, signed and scaled.
                            const std::array<double, kSensitiveFields> gradient = throughput_gradient(r);
                            for (std::size_t f = 0; f < kSensitiveFields; ++f) {
                                const FieldSensitivity& sensitivity = r.sensitivity[f];
                                const double expected = sensitivity.parameter < 0
                                                            ? 0.0
                                                            : -analytic[f] * sensitivity.log_field_per_coordinate;
                                EXPECT_EQ(gradient[f], expected) << instance << " field " << f;
                            }
                        }
                    }
                }
            }
        }
    }
    EXPECT_GT(compared, 3000);
    EXPECT_LT(kinks, compared / 100);
}

TEST(IntervalGradient, WorkersAndServersOnOneFabricAtATieKeepTheirBandwidthsUncertainty) {
    // p3.16xlarge workers and as many m4.16xlarge servers, both 25 Gb/s on TCP: each worker's NIC
    // moves as many bytes as each server's (eq. P1's max ties), and both follow one parameter. A
    // forward difference moved one NIC at a time and found the other bounding: no slope at all, a
    // band without the network's uncertainty. Moving the parameter moves both.
    Scenario s;
    s.instance = "p3.16xlarge";
    s.strategy = Strategy::ps;
    s.ps_instance = "m4.16xlarge";
    s.nodes = 4;
    s.ps_nodes = 4;
    s.batch_per_gpu = 32;
    const ResolvedScenario r = model().resolve(s);
    const auto inter = static_cast<std::size_t>(SensitiveField::inter_bandwidth);
    const auto server = static_cast<std::size_t>(SensitiveField::server_bandwidth);
    ASSERT_EQ(r.inter_bandwidth_Bps, r.server_bandwidth_Bps);
    ASSERT_EQ(r.sensitivity[inter].parameter, r.sensitivity[server].parameter);
    const Communication comm = communication(r);
    const std::array<double, kSensitiveFields> analytic =
        log_iteration_per_log_field(r, comm, iteration_times_with(r, comm.seconds));
    auto both_moved = [&](double step) {
        ResolvedScenario moved = r;
        moved.inter_bandwidth_Bps *= std::exp(step);
        moved.server_bandwidth_Bps *= std::exp(step);
        return std::log(iteration_times(moved).iteration_s);
    };
    const double slope = (both_moved(1e-6) - both_moved(-1e-6)) / 2e-6;
    EXPECT_LT(slope, -0.1);  // the network bounds much of this iteration
    EXPECT_NEAR(analytic[inter] + analytic[server], slope, 1e-6);
}

}  // namespace
}  // namespace epochcast
