// What every backend's Network (executor/network.hpp) must do, checked on each backend present
// (tests/executor/backends.hpp): the arenas in model/'s backward order, layer_ready once per layer
// in that order, initial weights fixed by the seed alone, an untrained loss near ln(classes), SGD
// that lowers the loss on one batch (through the values arena and through optimizer_step), batch
// norm running statistics that move, and a label outside the classes refused. What only one
// backend has (finite-difference gradients and bf16 on the CPU, fp16, cuDNN and the GPU's own
// synthetic batches on CUDA) is in test_cpu_network.cpp and test_cuda_network.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "executor/cpu/network.hpp"
#include "model/errors.hpp"
#include "model/workload.hpp"
#include "tests/executor/backends.hpp"

#ifdef EPOCHCAST_WITH_CUDA
#include "executor/cuda/network.hpp"
#endif

namespace epochcast {
namespace {

using testing::Backend;

constexpr int kClasses = 10;
constexpr int kImageSize = 64;  // why 64 px, not 32: test_cpu_network.cpp

#include "tests/executor/small_network.inc"

/// A backend at one precision.
struct NetworkVariant {
    Backend backend;
    Precision precision;
};

std::string name_of(const NetworkVariant& v) {
    return std::string(testing::backend_name(v.backend)) + "_" +
           (v.precision == Precision::amp ? "fp16" : std::string(to_string(v.precision)));
}
std::string variant_name(const ::testing::TestParamInfo<NetworkVariant>& info) { return name_of(info.param); }
/// How GoogleTest (and so ctest's test list) shows the parameter: by name, not its bytes.
void PrintTo(const NetworkVariant& v, std::ostream* os) { *os << name_of(v); }

class NetworkConformance : public ::testing::TestWithParam<NetworkVariant> {
protected:
    void SetUp() override { REQUIRE_BACKEND(GetParam().backend); }

    /// small_spec(batch) at this variant's precision, built by this variant's backend.
    std::unique_ptr<Network> make(NetworkSpec spec) const {
        if (GetParam().backend == Backend::cpu) return make_cpu_network(spec);
#ifdef EPOCHCAST_WITH_CUDA
        return make_cuda_network(spec);
#else
        throw std::logic_error("no CUDA backend in this build (SetUp skips)");
#endif
    }
    std::unique_ptr<Network> make(int batch) const { return make(spec(batch)); }
    NetworkSpec spec(int batch) const { return small_spec(batch, GetParam().precision); }
};

double loss_of(Network& network, const Batch& data) {
    return network.train_step(data.images.data(), data.labels.data(), nullptr);
}

const ParameterTensor& find_parameter(const Network& network, const std::string& name) {
    for (const ParameterTensor& tensor : network.parameters()) {
        if (tensor.name == name) return tensor;
    }
    throw std::runtime_error("no parameter " + name);
}

TEST_P(NetworkConformance, ParametersAreInModelBackwardOrderAndContiguous) {
    const NetworkSpec spec = this->spec(2);
    auto network = make(spec);
    const auto gradients = gradients_in_backward_order(spec.architecture, Precision::fp32);
    const auto& parameters = network->parameters();
    EXPECT_EQ(network->parameter_elements(), spec.architecture.parameters());
    EXPECT_EQ(parameters.front().name, "fc.weight");
    EXPECT_EQ(parameters[1].name, "fc.bias");
    EXPECT_EQ(parameters.back().name, "conv1.weight");
    // Offsets contiguous; the tensors of each model gradient (weight, then bias) in its order.
    std::int64_t offset = 0;
    std::size_t index = 0;
    for (const GradientTensor& gradient : gradients) {
        std::int64_t elements = 0;
        while (index < parameters.size() && parameters[index].layer == gradient.layer) {
            const ParameterTensor& tensor = parameters[index++];
            EXPECT_EQ(tensor.offset, offset) << tensor.name;
            EXPECT_EQ(tensor.weight_decay, tensor.name.ends_with(".weight") &&
                                               spec.architecture.layers[tensor.layer].kind != LayerKind::batch_norm)
                << tensor.name;
            offset += tensor.elements;
            elements += tensor.elements;
        }
        EXPECT_EQ(elements, gradient.elements) << spec.architecture.layers[gradient.layer].name;
    }
    EXPECT_EQ(index, parameters.size());
    EXPECT_EQ(offset, network->parameter_elements());
    EXPECT_EQ(find_parameter(*network, "layer1.0.bn1.weight").elements, 64);
    EXPECT_EQ(find_parameter(*network, "layer4.1.conv2.weight").elements, 512 * 512 * 9);
    // State: running mean and variance of each batch norm, in forward order.
    EXPECT_EQ(network->state().front().name, "bn1.running_mean");
    EXPECT_EQ(network->state()[1].name, "bn1.running_var");
    EXPECT_EQ(network->state().back().name, "layer4.1.bn2.running_var");
}

TEST_P(NetworkConformance, LayerReadyFollowsBackwardOrderOncePerLayer) {
    const NetworkSpec spec = this->spec(2);
    auto network = make(spec);
    const Batch data = random_batch(2, 1);
    std::vector<int> ready;
    network->train_step(data.images.data(), data.labels.data(), [&](int layer) { ready.push_back(layer); });
    std::vector<int> expected;
    for (const GradientTensor& gradient : gradients_in_backward_order(spec.architecture, Precision::fp32)) {
        expected.push_back(gradient.layer);
    }
    EXPECT_EQ(ready, expected);
}

TEST_P(NetworkConformance, SameSeedGivesSameWeightsForAnyBatch) {
    auto two_network = make(2);
    NetworkSpec spec4 = spec(4);
    spec4.threads = 1;
    auto four_network = make(spec4);
    ASSERT_EQ(two_network->parameter_elements(), four_network->parameter_elements());
    const std::vector<float> two = arena(*two_network, Arena::values);
    EXPECT_EQ(two, arena(*four_network, Arena::values));
    NetworkSpec other = spec(2);
    other.seed = 8;
    EXPECT_NE(two, arena(*make(other), Arena::values));
    // Kaiming fan-out: conv1's standard deviation sqrt(2 / (64 x 7 x 7)) = 0.0253.
    const ParameterTensor& conv1 = find_parameter(*two_network, "conv1.weight");
    double sum_squares = 0;
    for (std::int64_t i = 0; i < conv1.elements; ++i) sum_squares += std::pow(two[conv1.offset + i], 2);
    EXPECT_NEAR(std::sqrt(sum_squares / conv1.elements), std::sqrt(2.0 / (64 * 49)), 0.001);
    // Each residual branch's last gamma starts at 0, the others at 1.
    EXPECT_EQ(two[find_parameter(*two_network, "layer1.0.bn2.weight").offset], 0.0f);
    EXPECT_EQ(two[find_parameter(*two_network, "layer1.0.bn1.weight").offset], 1.0f);
}

// With 10 classes the untrained net's logits are small (fc weights ~ U(+-1/sqrt(512))), so the
// loss is within 0.5 of ln 10 = 2.303.
TEST_P(NetworkConformance, UntrainedLossIsNearLogOfClassCount) {
    auto network = make(4);
    const Batch data = random_batch(4, 2);
    EXPECT_NEAR(loss_of(*network, data), std::log(double(kClasses)), 0.5);
}

// Plain SGD written into the values arena (as a checkpoint load or an exchange writes it), on one
// fixed batch: the loss falls by half within 10 steps (the net memorises it).
TEST_P(NetworkConformance, SgdThroughTheValuesArenaLowersTheLoss) {
    auto network = make(4);
    const Batch data = random_batch(4, 3);
    const double first = loss_of(*network, data);
    double last = first;
    for (int step = 0; step < 10; ++step) {
        std::vector<float> values = arena(*network, Arena::values);
        const std::vector<float> gradients = arena(*network, Arena::gradients);
        for (std::size_t i = 0; i < values.size(); ++i) values[i] -= 0.05f * gradients[i];
        network->write(Arena::values, 0, network->parameter_elements(), values.data());
        network->parameters_updated();
        last = loss_of(*network, data);
    }
    EXPECT_LT(last, 0.5 * first);
}

// The same through the backend's own optimizer_step (SGD with Nesterov momentum).
TEST_P(NetworkConformance, SgdOnOneBatchLowersTheLoss) {
    const Batch data = random_batch(8, 13);
    std::unique_ptr<Network> network = make(8);
    const double first = loss_of(*network, data);
    double last = first;
    for (int step = 0; step < 10; ++step) {
        network->optimizer_step(0.05);
        network->parameters_updated();
        last = loss_of(*network, data);
    }
    EXPECT_LT(last, 0.5 * first) << "first " << first << ", last " << last;
}

TEST_P(NetworkConformance, BatchNormRunningStatisticsMoveWithMomentum) {
    auto network = make(2);
    const Batch data = random_batch(2, 4);
    loss_of(*network, data);
    network->download_state();
    const StateTensor& variance = network->state()[1];  // bn1.running_var: 0.9 x 1 + 0.1 x batch variance
    for (std::int64_t c = 0; c < variance.elements; ++c) {
        EXPECT_GT(variance.value[c], 0.9f) << c;
        EXPECT_NE(variance.value[c], 1.0f) << c;
    }
}

TEST_P(NetworkConformance, ALabelOutsideTheClassesIsAnInputError) {
    Batch data = random_batch(2, 14);
    data.labels[1] = kClasses;
    std::unique_ptr<Network> network = make(2);
    EXPECT_THROW(loss_of(*network, data), InputError);
}

INSTANTIATE_TEST_SUITE_P(Backends, NetworkConformance,
                         ::testing::Values(NetworkVariant{Backend::cpu, Precision::fp32},
                                           NetworkVariant{Backend::cuda, Precision::fp32},
                                           NetworkVariant{Backend::cuda, Precision::amp}),
                         variant_name);

}  // namespace
}  // namespace epochcast
