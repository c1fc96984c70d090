#include <gtest/gtest.h>

#include <climits>

#include <cmath>
#include <limits>
#include <string>

#include "model/catalog.hpp"
#include "model/errors.hpp"
#include "model/resnet.hpp"
#include "model/workload.hpp"

namespace epochcast {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

const Architecture& resnet50() {
    static const Architecture architecture = build_resnet("resnet50", 224, 1000);
    return architecture;
}

TEST(Workload, ResNet50Flops) {
    const Workload workload = make_workload(resnet50());
    EXPECT_EQ(workload.parameters, 25'557'032);
    // forward = 2 FLOP per MAC; training = forward + backward (data and weight gradients) = 3 x forward.
    EXPECT_EQ(workload.forward_flops_per_image, 2.0 * 4'089'184'256.0);
    EXPECT_EQ(workload.training_flops_per_image, 6.0 * 4'089'184'256.0);
    EXPECT_NEAR(workload.training_flops_per_image, 24.5e9, 0.1e9);
}

TEST(Workload, ResNet50ActivationsAndTraffic) {
    const Workload workload = make_workload(resnet50());
    // Image + conv, BN, maxpool, add, avgpool and fc outputs (ReLU in place), per image; the
    // figures were computed independently of the table code.
    EXPECT_EQ(workload.activation_elements_per_image, 28'101'608.0);
    EXPECT_EQ(activation_bytes_per_image(workload, Precision::fp32), 112'406'432.0);
    EXPECT_EQ(activation_bytes_per_image(workload, Precision::amp), 56'203'216.0);
    EXPECT_EQ(activation_bytes_per_image(workload, Precision::bf16), 56'203'216.0);
    // 3 x sum over layers of (input elements, both inputs for an add, + output elements).
    EXPECT_EQ(workload.memory_traffic_elements_per_image, 242'666'424.0);
}

TEST(Workload, ActivationsCountEveryKeptOutputOfASmallNetwork) {
    // ResNet-18 at 32 px, recounted here from the table by the documented rule.
    const Architecture architecture = build_resnet("resnet18", 32, 10);
    double kept = 3.0 * 32 * 32;
    double traffic = 0;
    for (const Layer& layer : architecture.layers) {
        if (layer.kind != LayerKind::relu) kept += static_cast<double>(layer.output.elements());
        traffic += 3.0 * static_cast<double>(layer.input.elements() * static_cast<std::int64_t>(layer.inputs.size()) +
                                             layer.output.elements());
    }
    const Workload workload = make_workload(architecture);
    EXPECT_EQ(workload.activation_elements_per_image, kept);
    EXPECT_EQ(workload.memory_traffic_elements_per_image, traffic);
}

TEST(Workload, GradientBytesByPrecision) {
    const Workload workload = make_workload(resnet50());
    EXPECT_EQ(gradient_bytes(workload, Precision::amp), 51'114'064.0);
    EXPECT_EQ(gradient_bytes(workload, Precision::bf16), 51'114'064.0);
    EXPECT_EQ(gradient_bytes(workload, Precision::fp32), 102'228'128.0);
}

TEST(Workload, GradientsInBackwardOrder) {
    const Architecture& architecture = resnet50();
    const std::vector<GradientTensor> gradients = gradients_in_backward_order(architecture, Precision::amp);
    ASSERT_FALSE(gradients.empty());
    EXPECT_EQ(architecture.layers[static_cast<std::size_t>(gradients.front().layer)].name, "fc");
    EXPECT_EQ(gradients.front().elements, 2048 * 1000 + 1000);
    EXPECT_EQ(gradients.front().bytes, 2.0 * (2048 * 1000 + 1000));
    EXPECT_EQ(architecture.layers[static_cast<std::size_t>(gradients.back().layer)].name, "conv1");
    // ResNet-50: 53 convolutions + 53 BNs + fc.
    EXPECT_EQ(gradients.size(), 53u + 53u + 1u);
    std::int64_t elements = 0;
    double bytes = 0;
    for (std::size_t i = 0; i < gradients.size(); ++i) {
        if (i > 0) {
            EXPECT_LT(gradients[i].layer, gradients[i - 1].layer);
        }
        EXPECT_GT(gradients[i].elements, 0);
        elements += gradients[i].elements;
        bytes += gradients[i].bytes;
    }
    EXPECT_EQ(elements, 25'557'032);
    EXPECT_EQ(bytes, 51'114'064.0);
}

/// Buckets cover the list in order, no gaps, and each one closed only when the next tensor would
/// have passed the threshold.
void expect_greedy_buckets(const std::vector<GradientTensor>& gradients, const std::vector<Bucket>& buckets,
                           double threshold_bytes) {
    int next = 0;
    double total = 0;
    for (std::size_t b = 0; b < buckets.size(); ++b) {
        const Bucket& bucket = buckets[b];
        EXPECT_EQ(bucket.first, next);
        ASSERT_GE(bucket.count, 1);
        double bytes = 0;
        for (int i = bucket.first; i < bucket.first + bucket.count; ++i)
            bytes += gradients[static_cast<std::size_t>(i)].bytes;
        EXPECT_DOUBLE_EQ(bucket.bytes, bytes);
        if (bucket.count > 1) {
            EXPECT_LE(bucket.bytes, threshold_bytes);
        }
        next = bucket.first + bucket.count;
        if (next < static_cast<int>(gradients.size())) {
            EXPECT_GT(bucket.bytes + gradients[static_cast<std::size_t>(next)].bytes, threshold_bytes);
        }
        total += bucket.bytes;
    }
    EXPECT_EQ(next, static_cast<int>(gradients.size()));
    double expected_total = 0;
    for (const GradientTensor& gradient : gradients) expected_total += gradient.bytes;
    EXPECT_DOUBLE_EQ(total, expected_total);
}

TEST(Workload, FusionBucketsAtHorovodDefault) {
    const auto amp = gradients_in_backward_order(resnet50(), Precision::amp);
    const auto amp_buckets = fusion_buckets(amp);
    ASSERT_EQ(amp_buckets.size(), 1u);  // 48.7 MiB < 64 MiB
    EXPECT_EQ(amp_buckets[0].count, static_cast<int>(amp.size()));
    EXPECT_EQ(amp_buckets[0].bytes, 51'114'064.0);

    const auto fp32 = gradients_in_backward_order(resnet50(), Precision::fp32);
    const auto fp32_buckets = fusion_buckets(fp32, 64 * kMiB);
    ASSERT_EQ(fp32_buckets.size(), 2u);  // 97.5 MiB
    EXPECT_LE(fp32_buckets[0].bytes, 64 * kMiB);
    EXPECT_EQ(fp32_buckets[0].bytes + fp32_buckets[1].bytes, 102'228'128.0);
    expect_greedy_buckets(fp32, fp32_buckets, 64 * kMiB);
}

TEST(Workload, SmallThresholdGivesManyBuckets) {
    const auto fp32 = gradients_in_backward_order(resnet50(), Precision::fp32);
    const double threshold = 1 * kMiB;
    const auto buckets = fusion_buckets(fp32, threshold);
    EXPECT_GT(buckets.size(), 20u);
    expect_greedy_buckets(fp32, buckets, threshold);
    // fc's gradient (8.2 MB) is larger than the threshold: a bucket of its own.
    EXPECT_EQ(buckets[0].count, 1);
    EXPECT_GT(buckets[0].bytes, threshold);
    for (const Bucket& bucket : buckets) {
        if (bucket.bytes > threshold) {
            EXPECT_EQ(bucket.count, 1);
        }
    }
    // A threshold smaller than every tensor: one bucket per tensor.
    EXPECT_EQ(fusion_buckets(fp32, 1.0).size(), fp32.size());
    EXPECT_TRUE(fusion_buckets({}, threshold).empty());
}

TEST(Workload, FusionThresholdMustBePositive) {
    const auto amp = gradients_in_backward_order(resnet50(), Precision::amp);
    EXPECT_THROW(fusion_buckets(amp, 0), InputError);
    EXPECT_THROW(fusion_buckets(amp, -1), InputError);
    EXPECT_THROW(fusion_buckets(amp, std::numeric_limits<double>::quiet_NaN()), InputError);
}

TEST(Workload, TrainingMemoryResNet50Batch256) {
    const Workload workload = make_workload(resnet50());
    const double parameters = 25'557'032.0;

    const MemoryEstimate amp = training_memory(workload, Precision::amp, 256);
    EXPECT_EQ(amp.weights_bytes, parameters * (4 + 2));  // fp32 master + fp16 working copy
    EXPECT_EQ(amp.gradients_bytes, parameters * 2);
    EXPECT_EQ(amp.optimizer_bytes, parameters * 4);
    EXPECT_EQ(amp.activations_bytes, 256 * 56'203'216.0);
    EXPECT_EQ(amp.tensors_bytes(), 14'694'707'680.0);  // 13.69 GiB
    // The headroom: the CUDA context (781 MiB) and 2% of the tensors for the allocator's slack.
    EXPECT_EQ(amp.context_bytes, 781 * kMiB);
    EXPECT_DOUBLE_EQ(amp.slack_bytes, 0.02 * 14'694'707'680.0);
    EXPECT_DOUBLE_EQ(amp.total_bytes(), 15'807'539'689.6);  // 14.72 GiB
    EXPECT_LT(amp.total_bytes(), 16 * kGiB);                // fits a 16 GiB V100, as seed 000 trains it

    const MemoryEstimate fp32 = training_memory(workload, Precision::fp32, 256);
    EXPECT_EQ(fp32.weights_bytes, parameters * 4);
    EXPECT_EQ(fp32.gradients_bytes, parameters * 4);
    EXPECT_EQ(fp32.activations_bytes, 256 * 112'406'432.0);
    EXPECT_DOUBLE_EQ(fp32.total_bytes(), 30'483'323'451.52);  // 28.39 GiB
    EXPECT_GT(fp32.total_bytes(), 16 * kGiB);                 // does not fit

    // bf16 keeps the same figures as amp.
    EXPECT_EQ(training_memory(workload, Precision::bf16, 256).total_bytes(), amp.total_bytes());
}

TEST(Workload, TrainingMemoryNeedsAPositiveBatch) {
    const Workload workload = make_workload(resnet50());
    EXPECT_THROW(training_memory(workload, Precision::amp, 0), InputError);
    EXPECT_THROW(training_memory(workload, Precision::fp32, -3), InputError);
    const MemoryEstimate one = training_memory(workload, Precision::fp32, 1);
    const MemoryEstimate two = training_memory(workload, Precision::fp32, 2);
    EXPECT_EQ(two.tensors_bytes() - one.tensors_bytes(), 112'406'432.0);
}

TEST(Workload, LargestBatchThatFitsKeepsTheHeadroom) {
    const Workload workload = make_workload(resnet50());
    // A 16 GiB V100 at amp: 279 images per GPU, the 280th would eat into the headroom.
    const int fits = largest_batch_that_fits(workload, Precision::amp, 16 * kGiB);
    EXPECT_EQ(fits, 279);
    EXPECT_LE(training_memory(workload, Precision::amp, fits).total_bytes(), 16 * kGiB);
    EXPECT_GT(training_memory(workload, Precision::amp, fits + 1).total_bytes(), 16 * kGiB);
    // What the largest batch leaves free beyond its tensors is at least the context and 2% slack.
    const MemoryEstimate at_limit = training_memory(workload, Precision::amp, fits);
    EXPECT_GE(16 * kGiB - at_limit.tensors_bytes(), 781 * kMiB + 0.02 * at_limit.tensors_bytes());
    EXPECT_EQ(largest_batch_that_fits(workload, Precision::amp, 0.5 * kGiB), 0);
    EXPECT_EQ(largest_batch_that_fits(workload, Precision::amp, 1e300), INT_MAX);
}

TEST(ResolveSteps, MemoryCheckPassesTheLargestBatchThatFitsAndRefusesOneMore) {
    const Workload work = make_workload(build_resnet("resnet50", 224, 1000));
    GpuSpec gpu;
    gpu.name = "small";
    gpu.memory_gib = 6;
    const double capacity = 6.0 * 1024 * 1024 * 1024;
    int fits = 1;
    while (training_memory(work, Precision::amp, fits + 1).total_bytes() <= capacity) ++fits;
    std::string why;
    const MemoryEstimate memory = training_memory_on(work, "resnet50", Precision::amp, fits, gpu, why);
    EXPECT_TRUE(why.empty()) << why;
    EXPECT_DOUBLE_EQ(memory.total_bytes(), training_memory(work, Precision::amp, fits).total_bytes());
    EXPECT_LE(memory.total_bytes(), capacity);
    training_memory_on(work, "resnet50", Precision::amp, fits + 1, gpu, why);
    EXPECT_NE(why.find("the largest batch that fits is " + std::to_string(fits) + ")"), std::string::npos) << why;
    EXPECT_NE(why.find("6 GiB of a small"), std::string::npos) << why;
    gpu.memory_gib = 0.5;  // less than the CUDA context alone
    why.clear();
    training_memory_on(work, "resnet50", Precision::amp, 1, gpu, why);
    EXPECT_NE(why.find("not even a batch of 1 fits"), std::string::npos) << why;
}

}  // namespace
}  // namespace epochcast
