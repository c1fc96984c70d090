// The uncertainty (model/uncertainty.hpp): which parameter each sensitive field of a resolved
// scenario follows.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "model/cost_model.hpp"
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

}  // namespace
}  // namespace epochcast
