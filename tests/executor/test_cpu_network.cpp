// The whole CPU network, where it differs from the other backends (what every backend's network
// must do is test_network_conformance.cpp's): its gradient against central finite differences of
// its own loss, its optimizer step bit for bit, the specs it refuses, that it leaves synthetic
// batches to the host, and bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <numeric>
#include <random>
#include <vector>

#include "executor/bf16.hpp"
#include "executor/cpu/kernels.hpp"
#include "executor/cpu/network.hpp"
#include "executor/optimizer.hpp"
#include "model/errors.hpp"
#include "model/workload.hpp"

namespace epochcast {
namespace {

constexpr int kClasses = 10;
// 64 px rather than 32: at 32 px stage 4's maps are 1 x 1, so with a batch of 2 its batch norms
// normalise 2 values per channel (outputs +-1 whatever the input, or a 1/sqrt(eps) = 316x
// amplification where the two nearly coincide): the loss is flat or a cliff there and finite
// differences say nothing. At 64 px those maps are 2 x 2 (8 values per channel).
constexpr int kImageSize = 64;

#include "tests/executor/small_network.inc"

const ParameterTensor& find_parameter(const Network& network, const std::string& name) {
    for (const ParameterTensor& tensor : network.parameters()) {
        if (tensor.name == name) return tensor;
    }
    throw std::runtime_error("no parameter " + name);
}

double loss_of(Network& network, const Batch& data) {
    return network.train_step(data.images.data(), data.labels.data(), nullptr);
}

/// The untrained net has the zero gammas of seed 000 (each residual branch's last BN), which
/// make every branch convolution's gradient exactly 0; the gradient check sets every gamma to a
/// value in [0.5, 1.5] so that all layers take part.
void randomise_gammas(Network& network) {
    std::mt19937_64 generator(11);
    std::uniform_real_distribution<float> uniform(0.5f, 1.5f);
    for (const ParameterTensor& tensor : network.parameters()) {
        const bool gamma = tensor.name.find(".bn") != std::string::npos || tensor.name.rfind("bn1.", 0) == 0 ||
                           tensor.name.find("downsample.1") != std::string::npos;
        if (!gamma || tensor.name.ends_with(".bias")) continue;
        for (std::int64_t i = 0; i < tensor.elements; ++i) network.values()[tensor.offset + i] = uniform(generator);
    }
    network.parameters_updated();
}

/// Central difference of the loss along `direction` (same size as the arena), step `step`.
double directional_difference(Network& network, const Batch& data, const std::vector<double>& direction, double step) {
    std::vector<float> saved(network.values(), network.values() + network.parameter_elements());
    auto evaluate = [&](double sign) {
        for (std::size_t i = 0; i < saved.size(); ++i) {
            network.values()[i] = static_cast<float>(saved[i] + sign * step * direction[i]);
        }
        network.parameters_updated();
        return loss_of(network, data);
    };
    const double plus = evaluate(+1.0);
    const double minus = evaluate(-1.0);
    std::copy(saved.begin(), saved.end(), network.values());
    network.parameters_updated();
    return (plus - minus) / (2.0 * step);
}

class CpuNetworkGradient : public ::testing::Test {
protected:
    void SetUp() override {
        network_ = make_cpu_network(small_spec(2));
        randomise_gammas(*network_);
        data_ = random_batch(2, 5);
        loss_of(*network_, data_);
        gradient_.assign(network_->gradients(), network_->gradients() + network_->parameter_elements());
    }
    std::unique_ptr<Network> network_;
    Batch data_;
    std::vector<float> gradient_;
};

// Along random unit directions over all 11.2 M weights, the analytic derivative g . d matches
// the central difference within 2% of |g| (|g . d| is about |g| / sqrt(n) for a random d, so the
// direction is half g / |g| to lift the projection well above fp32 noise). Step 1e-4: the loss
// moves by ~1e-2, far above its fp32 rounding (~1e-6, so ~1e-2 error in a derivative of ~70),
// while steps of 1e-3 and 1e-2 cross enough ReLU kinks to bias the difference by 4% and 25%.
TEST_F(CpuNetworkGradient, DirectionalDerivativesMatchCentralDifferences) {
    const double norm = std::sqrt(std::inner_product(gradient_.begin(), gradient_.end(), gradient_.begin(), 0.0));
    ASSERT_GT(norm, 1e-3);
    std::mt19937_64 generator(3);
    std::normal_distribution<double> normal;
    for (int trial = 0; trial < 3; ++trial) {
        std::vector<double> direction(gradient_.size());
        for (std::size_t i = 0; i < direction.size(); ++i)
            direction[i] =
                normal(generator) / std::sqrt(double(direction.size())) + gradient_[i] / norm;  // |random part| ~ 1
        const double length = std::sqrt(std::inner_product(direction.begin(), direction.end(), direction.begin(), 0.0));
        for (double& value : direction) value /= length;
        const double analytic = std::inner_product(gradient_.begin(), gradient_.end(), direction.begin(), 0.0);
        const double numeric = directional_difference(*network_, data_, direction, 1e-4);
        EXPECT_NEAR(numeric, analytic, 0.02 * norm) << "trial " << trial << " |g| " << norm;
    }
}

// Single weights in conv1, middle convolutions, a shortcut convolution, a batch-norm gamma and
// beta, and fc: central difference with step 1e-3 within 10% of the larger value plus 5e-4.
// Loose because one weight moves the fp32 loss by only ~1e-5 (rounding noise ~1e-6 / 2e-3 =
// 5e-4 in the derivative) and the ReLU kinks it crosses bias it by a few % (measured: 7% at
// layer2.0.conv1); a missing gradient path or a factor 2 still fails it.
TEST_F(CpuNetworkGradient, SingleCoordinatesMatchCentralDifferences) {
    const std::vector<std::pair<std::string, std::int64_t>> coordinates{
        {"conv1.weight", 5},           {"layer2.0.conv1.weight", 123},
        {"layer3.1.conv2.weight", 77}, {"layer2.1.bn1.weight", 4},
        {"layer1.0.bn2.bias", 9},      {"layer3.0.downsample.0.weight", 31},
        {"fc.weight", 1031},           {"fc.bias", 3}};
    for (const auto& [name, index] : coordinates) {
        const ParameterTensor& tensor = find_parameter(*network_, name);
        std::vector<double> direction(gradient_.size(), 0.0);
        direction[static_cast<std::size_t>(tensor.offset + index)] = 1.0;
        const double analytic = gradient_[static_cast<std::size_t>(tensor.offset + index)];
        const double numeric = directional_difference(*network_, data_, direction, 1e-3);
        EXPECT_NEAR(numeric, analytic, 0.10 * std::max(std::abs(analytic), std::abs(numeric)) + 5e-4)
            << name << "[" << index << "]";
    }
}

/// Per parameter tensor of `network`, |gradient - reference| / |reference| over the tensor.
std::vector<double> relative_distances(const Network& network, const std::vector<double>& gradient,
                                       const std::vector<double>& reference) {
    std::vector<double> distances;
    for (const ParameterTensor& tensor : network.parameters()) {
        double distance = 0, norm = 0;
        for (std::int64_t i = tensor.offset; i < tensor.offset + tensor.elements; ++i) {
            distance += std::pow(gradient[i] - reference[i], 2);
            norm += std::pow(reference[i], 2);
        }
        distances.push_back(std::sqrt(distance / norm));
    }
    return distances;
}

double mean(const std::vector<double>& values) {
    return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

// optimizer_step is the SGD step of executor/optimizer.hpp over the whole arenas, bit for bit,
// with the momentum it keeps from step to step.
TEST(CpuNetwork, OptimizerStepIsTheSgdStepOverTheArenas) {
    auto network = make_cpu_network(small_spec(2));
    randomise_gammas(*network);
    const Batch data = random_batch(2, 6);
    const std::size_t n = static_cast<std::size_t>(network->parameter_elements());
    std::vector<float> values(network->values(), network->values() + n), momentum(n, 0.0f);
    for (int step = 0; step < 2; ++step) {  // the second step starts from a non-zero momentum
        loss_of(*network, data);
        const std::vector<float> gradients(network->gradients(), network->gradients() + n);
        sgd_nesterov_step(values.data(), gradients.data(), momentum.data(), network->parameters(), 0,
                          network->parameter_elements(), 0.05);
        ASSERT_TRUE(network->optimizer_step(0.05));
        network->parameters_updated();
        ASSERT_EQ(std::vector<float>(network->values(), network->values() + n), values) << "step " << step;
        ASSERT_EQ(std::vector<float>(network->momentum(), network->momentum() + n), momentum) << "step " << step;
    }
}

TEST(CpuNetwork, RefusesWhatItCannotRun) {
    EXPECT_THROW(make_cpu_network(small_spec(2, Precision::amp)), InputError);
    EXPECT_THROW(make_cpu_network(small_spec(0)), InputError);
    NetworkSpec no_threads = small_spec(2);
    no_threads.threads = 0;
    EXPECT_THROW(make_cpu_network(no_threads), InputError);
}

// The host batches cost the CPU backend no copy: it declines to make synthetic batches itself, so
// the trainer keeps its BatchLoader, and a generated step without a generator is a RunError.
TEST(CpuNetwork, MakesNoSyntheticBatchesOfItsOwn) {
    auto network = make_cpu_network(small_spec(2));
    EXPECT_FALSE(network->generate_synthetic_batches(kClasses, kImageSize, 7));
    EXPECT_THROW(network->train_step_generated(0, nullptr), RunError);
}

TEST(CpuNetwork, Bf16IsRefusedWithoutNativeBf16) {
    if (cpu::cpu_has_native_bf16()) GTEST_SKIP() << "this CPU runs bf16 natively (" << cpu::cpu_isa_name() << ")";
    try {
        make_cpu_network(small_spec(2, Precision::bf16));
        FAIL() << "bf16 accepted on " << cpu::cpu_isa_name();
    } catch (const InputError& error) {
        EXPECT_NE(std::string(error.what()).find("native bf16"), std::string::npos) << error.what();
    }
}

TEST(CpuNetwork, Bf16RunsWhereNative) {
    if (!cpu::cpu_has_native_bf16()) GTEST_SKIP() << "no native bf16 on " << cpu::cpu_isa_name();
    auto network = make_cpu_network(small_spec(2, Precision::bf16));
    const Batch data = random_batch(2, 1);
    EXPECT_NEAR(loss_of(*network, data), std::log(double(kClasses)), 0.5);
    EXPECT_NE(network->implementation().find("bf16"), std::string::npos) << network->implementation();
}

// The layout the network runs is oneDNN's own choice on this CPU: NHWC where its convolutions are
// AMX ones, nChw16c where they are AVX-512 ones, nChw8c where they are AVX2 ones (each host checks
// its own third).
TEST(CpuNetwork, DefaultLayoutIsOneDnnsChoiceOnThisCpu) {
    for (const Precision precision : {Precision::fp32, Precision::bf16}) {
        if (precision == Precision::bf16 && !cpu::cpu_has_native_bf16()) continue;
        const NetworkSpec spec = small_spec(2, precision);
        const cpu::Layout layout = default_layout(spec);
        // ResNet-18 at 64 px: its first 3x3 stride-1 convolution is 64 channels at 16 x 16.
        const cpu::ConvolutionChoice choice = cpu::convolution_choice(
            2, 64, 16, precision == Precision::bf16 ? cpu::DataType::bf16 : cpu::DataType::fp32);
        EXPECT_EQ(layout, choice.layout) << choice.implementation;
        const std::string isa = cpu::implementation_isa(choice.implementation);
        EXPECT_EQ(layout == cpu::Layout::nhwc, isa == "avx512_core_amx");
        // The blocked layout's width is the one oneDNN chose: 16 channels for AVX-512, 8 for AVX2.
        EXPECT_EQ(cpu::layout_name(layout), choice.chosen_layout) << choice.implementation;
        const char* expected = isa == "avx512_core_amx"           ? "NHWC"
                               : isa.rfind("avx512_core", 0) == 0 ? "nChw16c"
                               : isa == "avx2"                    ? "nChw8c"
                                                                  : nullptr;
        if (expected) {
            EXPECT_EQ(cpu::layout_name(layout), expected) << choice.implementation;
        }
        const std::string described = make_cpu_network(spec)->implementation();
        EXPECT_NE(described.find("on " + cpu::layout_name(layout)), std::string::npos) << described;
    }
}

// bf16 on NHWC is what an AMX host trains with: oneDNN's batch norm and a separate ReLU instead
// of our fused kernels, no weight-gradient kernels of our own, conv1 in the layout oneDNN picks
// for it. Its gradient must be as close to the fp32 network's as the nChw16c network's is.
TEST(CpuNetwork, Bf16OnNhwcIsAsCloseToFp32AsOnNchw16c) {
    if (!cpu::cpu_has_native_bf16()) GTEST_SKIP() << "no native bf16 on " << cpu::cpu_isa_name();
    const Batch data = random_batch(4, 3);
    auto gradient = [&](Precision precision, cpu::Layout layout, double* loss) {
        auto network = make_cpu_network(small_spec(4, precision), layout);
        randomise_gammas(*network);
        *loss = loss_of(*network, data);
        return std::vector<double>(network->gradients(), network->gradients() + network->parameter_elements());
    };
    double nhwc_loss = 0, blocked_loss = 0, fp32_loss = 0;
    const std::vector<double> nhwc = gradient(Precision::bf16, cpu::Layout::nhwc, &nhwc_loss);
    const std::vector<double> blocked = gradient(Precision::bf16, cpu::Layout::blocked, &blocked_loss);
    const std::vector<double> fp32 = gradient(Precision::fp32, cpu::Layout::blocked, &fp32_loss);
    EXPECT_NEAR(nhwc_loss, fp32_loss, 0.05 * fp32_loss);
    EXPECT_NEAR(blocked_loss, fp32_loss, 0.05 * fp32_loss);
    const auto network = make_cpu_network(small_spec(4, Precision::fp32));
    const double nhwc_mean = mean(relative_distances(*network, nhwc, fp32));
    const double blocked_mean = mean(relative_distances(*network, blocked, fp32));
    EXPECT_LT(nhwc_mean, 1.25 * blocked_mean + 0.02) << "mean relative distance to fp32, nChw16c's " << blocked_mean;
}

// Several bf16 workers all-reduce bf16 gradients, which the network then publishes itself
// (write_gradients_as_bf16): oneDNN's gradient reorders and our weight-gradient kernels round into
// the given arena, and the network rounds the rest (batch norm, the fc bias). Each published value
// must be the same network's fp32 gradient rounded to nearest even, whoever wrote it. At 64 px
// stage 1's 3 x 3 convolutions (16 x 16 maps) take our kernel, the others oneDNN's.
TEST(CpuNetwork, Bf16PublishedGradientsAreTheFp32GradientsRounded) {
    if (!cpu::cpu_has_native_bf16()) GTEST_SKIP() << "no native bf16 on " << cpu::cpu_isa_name();
    const Batch data = random_batch(4, 5);
    auto unpublished = make_cpu_network(small_spec(4, Precision::bf16));
    auto published = make_cpu_network(small_spec(4, Precision::bf16));
    const auto elements = static_cast<std::size_t>(published->parameter_elements());
    std::vector<std::uint16_t> arena(elements, 0x7f7f);
    ASSERT_TRUE(published->write_gradients_as_bf16(arena.data()));
    randomise_gammas(*unpublished);
    randomise_gammas(*published);
    EXPECT_EQ(loss_of(*unpublished, data), loss_of(*published, data));
    for (const ParameterTensor& tensor : published->parameters()) {
        std::int64_t differ = 0;
        for (std::int64_t i = tensor.offset; i < tensor.offset + tensor.elements; ++i) {
            differ += arena[static_cast<std::size_t>(i)] != to_bf16_bits(unpublished->gradients()[i]);
        }
        EXPECT_EQ(differ, 0) << tensor.name << ": of " << tensor.elements;
    }
}

// The bf16 network on our own kernels (the 1x1 and 3x3 weight gradients, batch norm fused with
// the ReLU after it, and a block's last batch norm fused with its residual add and ReLU) against
// the same network on oneDNN alone, both measured against the fp32 network. bf16 rounding,
// amplified by batch norms over few values (stage 4 is 2 x 2 pixels at 64 px), moves this small
// network's gradients by 10-50% of their size whichever kernels run (measured: mean over the
// parameter tensors 0.34 for both, largest ratio of the two per tensor 1.2), so the check is
// that ours is no further from fp32 than oneDNN's: a fusion wired wrongly (a shortcut's gradient
// dropped or counted twice, an ungated ReLU) moves a tensor's gradient by about its own size.
TEST(CpuNetwork, Bf16OwnKernelsAreAsCloseToFp32AsOneDnn) {
    if (!cpu::cpu_has_native_bf16() || !cpu::cpu_has_avx512_bf16()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
    struct Restore {
        ~Restore() { cpu::set_own_kernels_enabled(true); }
    } restore;
    const Batch data = random_batch(4, 3);
    auto gradient = [&](bool own, Precision precision) {
        cpu::set_own_kernels_enabled(own);
        auto network = make_cpu_network(small_spec(4, precision));
        randomise_gammas(*network);
        loss_of(*network, data);
        return std::vector<double>(network->gradients(), network->gradients() + network->parameter_elements());
    };
    const std::vector<double> own = gradient(true, Precision::bf16), onednn = gradient(false, Precision::bf16);
    const std::vector<double> fp32 = gradient(false, Precision::fp32);
    const auto network = make_cpu_network(small_spec(4, Precision::fp32));
    const std::vector<double> own_relative = relative_distances(*network, own, fp32);
    const std::vector<double> onednn_relative = relative_distances(*network, onednn, fp32);
    for (std::size_t t = 0; t < own_relative.size(); ++t) {
        EXPECT_LT(own_relative[t], 1.5 * onednn_relative[t] + 0.02)
            << network->parameters()[t].name << " (oneDNN: " << onednn_relative[t] << ")";
    }
    EXPECT_LT(mean(own_relative), 1.25 * mean(onednn_relative))
        << "mean relative distance to fp32, oneDNN's " << mean(onednn_relative);
    std::cout << "mean relative distance to the fp32 gradient: own kernels " << mean(own_relative) << ", oneDNN only "
              << mean(onednn_relative) << "\n";
}

}  // namespace
}  // namespace epochcast
