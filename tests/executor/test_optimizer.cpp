// Seed 000's optimizer and schedule, the shared arena layout, shards and checkpoints.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "executor/arena.hpp"
#include "executor/bf16.hpp"
#include "executor/checkpoint.hpp"
#include "executor/distributed.hpp"
#include "executor/optimizer.hpp"
#include "model/errors.hpp"
#include "model/workload.hpp"

namespace epochcast {
namespace {

TEST(Schedule, WarmsUpLinearlyFromSeed000sStartThenDecaysQuadratically) {
    // Seed 000: 0.001 -> 6.4 over the warm-up, then polynomial (degree 2) decay.
    const LearningRateSchedule schedule{6.4, 100, 900};
    EXPECT_DOUBLE_EQ(schedule.at(0), 0.001);
    EXPECT_NEAR(schedule.at(50), 0.001 + (6.4 - 0.001) * 0.5, 1e-12);
    EXPECT_DOUBLE_EQ(schedule.at(100), 6.4);
    EXPECT_NEAR(schedule.at(500), 6.4 * 0.5 * 0.5, 1e-12);  // half-way through the decay
    EXPECT_DOUBLE_EQ(schedule.at(900), 0.0);
    EXPECT_DOUBLE_EQ(schedule.at(5000), 0.0);
}

TEST(Schedule, NoWarmupStartsAtThePeakAndSmallPeaksWarmUpFromATenth) {
    EXPECT_DOUBLE_EQ((LearningRateSchedule{0.2, 0, 10}.at(0)), 0.2);
    EXPECT_DOUBLE_EQ((LearningRateSchedule{0.005, 10, 100}.at(0)), 0.0005);
    EXPECT_DOUBLE_EQ(default_worker_lr(256), 0.1);
    EXPECT_DOUBLE_EQ(default_worker_lr(32), 0.0125);
}

TEST(Optimizer, NesterovStepMatchesTheFormulaAndSkipsDecayWhereMasked) {
    // Two elements, decay on the first only; two steps written out by hand.
    float w[2] = {1.0f, 2.0f};
    const float g[2] = {0.5f, -1.0f};
    float v[2] = {0.0f, 0.0f};
    const float mask[2] = {1.0f, 0.0f};
    const double lr = 0.1, mu = 0.9, wd = 0.01;
    double rw[2] = {1.0, 2.0}, rv[2] = {0.0, 0.0};
    for (int step = 0; step < 2; ++step) {
        sgd_nesterov_step(w, g, v, mask, 2, lr, mu, wd);
        for (int i = 0; i < 2; ++i) {
            const double d = g[i] + wd * mask[i] * rw[i];
            rv[i] = mu * rv[i] + d;
            rw[i] -= lr * (d + mu * rv[i]);
        }
    }
    EXPECT_NEAR(w[0], rw[0], 1e-6);
    EXPECT_NEAR(w[1], rw[1], 1e-6);
    EXPECT_NEAR(v[0], rv[0], 1e-6);
    // First step on element 1: d = -1, v = -1, w = 2 + 0.1 * 1.9 = 2.19; second: v = -1.9, w += 0.1 * 2.71.
    EXPECT_NEAR(w[1], 2.19 + 0.271, 1e-5);
}

/// A small layout with decay on some tensors, and random values for its arenas.
struct LayoutCase {
    std::vector<ParameterTensor> layout = parameter_layout(build_resnet("resnet18", 32, 10));
    std::int64_t elements = layout_elements(layout);
    std::vector<float> weights, gradients, momentum;
    LayoutCase() {
        std::uint64_t state = 12345;
        auto next = [&state] {  // uniform in [-1, 1)
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            return static_cast<float>(static_cast<double>(state >> 11) * 0x1p-52 - 1.0);
        };
        for (std::int64_t i = 0; i < elements; ++i) {
            weights.push_back(next());
            gradients.push_back(next());
            momentum.push_back(0.5f * next());
        }
    }
};

TEST(Optimizer, LayoutFormEqualsTheMaskFormOnAnyRangeOfTheArena) {
    const LayoutCase start;
    const std::vector<float> mask = weight_decay_mask(start.layout);
    LayoutCase masked = start, by_layout = start;
    sgd_nesterov_step(masked.weights.data(), masked.gradients.data(), masked.momentum.data(), mask.data(),
                      start.elements, 0.1);
    // In two pieces cut inside a tensor, as shards and buckets are.
    const std::int64_t cut = start.layout[3].offset + 7;
    sgd_nesterov_step(by_layout.weights.data(), by_layout.gradients.data(), by_layout.momentum.data(), start.layout, 0,
                      cut, 0.1);
    sgd_nesterov_step(by_layout.weights.data() + cut, by_layout.gradients.data() + cut, by_layout.momentum.data() + cut,
                      start.layout, cut, start.elements - cut, 0.1);
    EXPECT_EQ(by_layout.weights, masked.weights);  // the same arithmetic: bit for bit
    EXPECT_EQ(by_layout.momentum, masked.momentum);
    EXPECT_NE(masked.weights, start.weights);
}

TEST(Optimizer, StepFromASumAveragesItFirstInFp32AndFromBf16Bits) {
    const LayoutCase start;
    const std::vector<float> mask = weight_decay_mask(start.layout);
    const std::int64_t first = start.layout[2].offset + 3, count = start.elements / 2;
    // The sum of three workers' gradients; the reference averages it, then steps.
    std::vector<float> sums(start.gradients), mean(start.gradients);
    std::vector<std::uint16_t> bf16_sums(sums.size()), bf16_mean_input(sums.size());
    for (std::size_t i = 0; i < sums.size(); ++i) {
        sums[i] *= 3;
        mean[i] = sums[i] / 3;
        bf16_sums[i] = to_bf16_bits(sums[i]);
    }
    LayoutCase reference = start, from_fp32 = start;
    sgd_nesterov_step(reference.weights.data() + first, mean.data() + first, reference.momentum.data() + first,
                      mask.data() + first, count, 0.05);
    sgd_nesterov_step_from_sum(from_fp32.weights.data() + first, sums.data() + first, 3,
                               from_fp32.momentum.data() + first, start.layout, first, count, 0.05);
    EXPECT_EQ(from_fp32.weights, reference.weights);
    EXPECT_EQ(from_fp32.momentum, reference.momentum);

    std::vector<float> bf16_mean(sums.size());
    for (std::size_t i = 0; i < sums.size(); ++i) bf16_mean[i] = from_bf16_bits(bf16_sums[i]) / 3;
    LayoutCase reference_bf16 = start, from_bf16 = start;
    sgd_nesterov_step(reference_bf16.weights.data() + first, bf16_mean.data() + first,
                      reference_bf16.momentum.data() + first, mask.data() + first, count, 0.05);
    sgd_nesterov_step_from_sum(from_bf16.weights.data() + first, bf16_sums.data() + first, 3,
                               from_bf16.momentum.data() + first, start.layout, first, count, 0.05);
    EXPECT_EQ(from_bf16.weights, reference_bf16.weights);
    EXPECT_EQ(from_bf16.momentum, reference_bf16.momentum);
    // Outside [first, first + count) nothing moved.
    EXPECT_EQ(from_bf16.weights[static_cast<std::size_t>(first - 1)],
              start.weights[static_cast<std::size_t>(first - 1)]);
    EXPECT_EQ(from_bf16.weights.back(), start.weights.back());
}

TEST(Arena, LayoutFollowsTheBackwardOrderOfModelsGradients) {
    const Architecture resnet50 = build_resnet("resnet50");
    const std::vector<ParameterTensor> layout = parameter_layout(resnet50);
    EXPECT_EQ(layout_elements(layout), 25'557'032);  // torchvision's ResNet-50 count
    EXPECT_EQ(layout.front().name, "fc.weight");
    EXPECT_EQ(layout[1].name, "fc.bias");
    EXPECT_EQ(layout.back().name, "conv1.weight");
    // Per layer, the same elements in the same order as model/'s gradients_in_backward_order.
    const std::vector<GradientTensor> gradients = gradients_in_backward_order(resnet50, Precision::fp32);
    std::size_t t = 0;
    std::int64_t offset = 0;
    for (const GradientTensor& gradient : gradients) {
        std::int64_t elements = 0;
        while (t < layout.size() && layout[t].layer == gradient.layer) {
            EXPECT_EQ(layout[t].offset, offset + elements);
            elements += layout[t].elements;
            ++t;
        }
        EXPECT_EQ(elements, gradient.elements) << resnet50.layers[static_cast<std::size_t>(gradient.layer)].name;
        offset += elements;
    }
    EXPECT_EQ(t, layout.size());
}

TEST(Arena, WeightDecayOnlyOnConvolutionAndFullyConnectedWeights) {
    const Architecture resnet18 = build_resnet("resnet18", 32, 10);
    const std::vector<ParameterTensor> layout = parameter_layout(resnet18);
    const std::vector<float> mask = weight_decay_mask(layout);
    std::int64_t decayed = 0;
    for (const ParameterTensor& tensor : layout) {
        const bool expected = tensor.name.find("bn") == std::string::npos &&
                              tensor.name.find("downsample.1") == std::string::npos &&
                              tensor.name.find(".bias") == std::string::npos;
        EXPECT_EQ(tensor.weight_decay, expected) << tensor.name;
        decayed += expected ? tensor.elements : 0;
    }
    EXPECT_EQ(std::accumulate(mask.begin(), mask.end(), std::int64_t{0}), decayed);
}

TEST(Distributed, ShardsCoverTheArenaContiguously) {
    std::int64_t next = 0;
    for (int s = 0; s < 3; ++s) {
        const Range shard = shard_of(10, 3, s);
        EXPECT_EQ(shard.begin, next);
        EXPECT_GE(shard.size(), 3);
        next = shard.end;
    }
    EXPECT_EQ(next, 10);
    float values[3] = {2, 4, 6};
    average_in_place(values, 3, 2);
    EXPECT_FLOAT_EQ(values[2], 3);
}

class CheckpointTest : public ::testing::Test {
protected:
    std::filesystem::path directory =
        std::filesystem::temp_directory_path() /
        ("epochcast-checkpoint-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    void TearDown() override { std::filesystem::remove_all(directory); }
};

TEST_F(CheckpointTest, RoundTripsEveryFieldAndLeavesNoTemporaryFile) {
    const Checkpoint written{{{"model", "resnet18"}, {"batch_per_gpu", 4}},
                             7,
                             {1.5f, -2.0f, 3.0f},
                             {0.1f, 0.2f, 0.3f},
                             {{"bn1.running_mean", {0.5f}}, {"bn1.running_var", {2.0f, 3.0f}}}};
    write_checkpoint(directory, written);
    const Checkpoint read = read_checkpoint(directory);
    EXPECT_EQ(read.run, written.run);
    EXPECT_EQ(read.next_step, 7);
    EXPECT_EQ(read.weights, written.weights);
    EXPECT_EQ(read.momentum, written.momentum);
    ASSERT_EQ(read.state.size(), 2u);
    EXPECT_EQ(read.state[1].name, "bn1.running_var");
    EXPECT_EQ(read.state[1].values, (std::vector<float>{2.0f, 3.0f}));
    int files = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(directory)) ++files;
    EXPECT_EQ(files, 1);
}

TEST_F(CheckpointTest, MissingTruncatedAndForeignFilesAreInputErrorsNamingTheFile) {
    EXPECT_THROW(read_checkpoint(directory), InputError);
    write_checkpoint(directory, Checkpoint{{{"model", "resnet18"}}, 1, {1, 2, 3, 4}, {0, 0, 0, 0}, {}});
    const std::filesystem::path file = directory / kCheckpointFile;
    std::filesystem::resize_file(file, std::filesystem::file_size(file) - 4);
    try {
        read_checkpoint(directory);
        FAIL() << "a truncated checkpoint was read";
    } catch (const InputError& error) {
        EXPECT_NE(std::string(error.what()).find("truncated"), std::string::npos) << error.what();
        EXPECT_NE(std::string(error.what()).find(file.string()), std::string::npos) << error.what();
    }
    std::ofstream(file) << "{\"schema\": \"something else\"}\n";
    EXPECT_THROW(read_checkpoint(directory), InputError);
}

/// The whole checkpoint file's bytes, and back.
std::string file_bytes(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_file_bytes(const std::filesystem::path& file, const std::string& bytes) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

/// read_checkpoint(directory) throws an InputError naming `file` and holding `part`.
void expect_refused(const std::filesystem::path& directory, const std::string& part) {
    const std::string file = (directory / kCheckpointFile).string();
    try {
        read_checkpoint(directory);
        ADD_FAILURE() << "a checkpoint that should be refused (" << part << ") was read";
    } catch (const InputError& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find(file), std::string::npos) << message;
        EXPECT_NE(message.find(part), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
}

/// A checkpoint of 1000 weights, as a run writes it.
Checkpoint thousand_weights() {
    Checkpoint checkpoint{
        {{"model", "resnet18"}, {"batch_per_gpu", 4}}, 7, {}, {}, {{"bn1.running_var", {1.0f, 2.0f}}}};
    for (int i = 0; i < 1000; ++i) {
        checkpoint.weights.push_back(0.001f * static_cast<float>(i) - 0.3f);
        checkpoint.momentum.push_back(0.0001f * static_cast<float>(i % 17));
    }
    return checkpoint;
}

TEST(Checksum, IsFnv1a64) {
    EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
    EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
    EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
    EXPECT_EQ(fnv1a64("bar", fnv1a64("foo")), fnv1a64("foobar"));  // in pieces
}

// The issue's case: a NaN written into the weights of a checkpoint file resumed with exit 0.
TEST_F(CheckpointTest, ANanWrittenIntoTheWeightsIsRefused) {
    write_checkpoint(directory, thousand_weights());
    const std::filesystem::path file = directory / kCheckpointFile;
    std::string bytes = file_bytes(file);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    bytes.replace(bytes.find('\n') + 1 + 10 * sizeof(float), sizeof(float), reinterpret_cast<const char*>(&nan),
                  sizeof(float));
    write_file_bytes(file, bytes);
    expect_refused(directory, "checksum does not match");
}

// A NaN that the checksum covers (a run whose weights went bad, or a file rewritten with a fresh
// checksum) is refused all the same.
TEST_F(CheckpointTest, NonFiniteValuesUnderAValidChecksumAreRefused) {
    Checkpoint checkpoint = thousand_weights();
    checkpoint.momentum[3] = std::numeric_limits<float>::infinity();
    write_checkpoint(directory, checkpoint);
    expect_refused(directory, "non-finite value in its momentum");
}

// The issue's case: 200 flipped bytes resumed silently with different losses.
TEST_F(CheckpointTest, TwoHundredFlippedBytesAreRefusedWhereverTheyFall) {
    write_checkpoint(directory, thousand_weights());
    const std::filesystem::path file = directory / kCheckpointFile;
    const std::string intact = file_bytes(file);
    const std::size_t values_begin = intact.find('\n') + 1;
    std::mt19937 random(25);
    for (int trial = 0; trial < 20; ++trial) {
        std::string bytes = intact;
        // Half the trials in the values (the header stays readable), half anywhere.
        const std::size_t begin = trial % 2 == 0 ? values_begin : 0;
        std::uniform_int_distribution<std::size_t> where(begin, bytes.size() - 1);
        for (int flip = 0; flip < 200; ++flip) bytes[where(random)] ^= static_cast<char>(1 + random() % 255);
        write_file_bytes(file, bytes);
        EXPECT_THROW(read_checkpoint(directory), InputError) << "trial " << trial;
        if (trial == 0) expect_refused(directory, "is damaged");
    }
    // One changed digit of the header (next_step 7 -> 8) still parses, and is caught.
    std::string bytes = intact;
    bytes[bytes.find("\"next_step\":7") + 12] = '8';
    write_file_bytes(file, bytes);
    expect_refused(directory, "checksum does not match");
    write_file_bytes(file, intact);
    EXPECT_EQ(read_checkpoint(directory).weights, thousand_weights().weights);
}

TEST_F(CheckpointTest, TruncatedFilesAreRefusedAtAnyLength) {
    write_checkpoint(directory, thousand_weights());
    const std::filesystem::path file = directory / kCheckpointFile;
    const std::string intact = file_bytes(file);
    for (const std::size_t cut : {std::size_t{1}, std::size_t{4}, std::size_t{8}, std::size_t{9}, intact.size() / 2}) {
        write_file_bytes(file, intact.substr(0, intact.size() - cut));
        expect_refused(directory, "truncated");
    }
    write_file_bytes(file, intact + "x");
    expect_refused(directory, "trailing bytes");
}

TEST_F(CheckpointTest, AFileOfTheUncheckedFirstSchemaIsRefusedSayingWhy) {
    std::filesystem::create_directories(directory);
    const std::vector<float> values = {1, 2, 0, 0};
    std::string bytes =
        "{\"next_step\":1,\"parameters\":2,\"run\":{},\"schema\":\"epochcast.checkpoint/1\",\"state\":[]}\n";
    bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    write_file_bytes(directory / kCheckpointFile, bytes);
    expect_refused(directory, "epochcast.checkpoint/1 checkpoint, written before checkpoints carried a checksum");
}

/// `header` (one JSON line) and `values` as a schema /2 file, ending with the checksum of both.
std::string checksummed_checkpoint(const std::string& header, const std::vector<float>& values) {
    std::string bytes = header + "\n";
    bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    const std::uint64_t checksum = fnv1a64(bytes);
    for (int i = 0; i < 8; ++i) bytes += static_cast<char>((checksum >> (8 * i)) & 0xFF);
    return bytes;
}

// Issue 59, item 1: a header a million levels deep, its checksum re-computed as anyone who can write
// the folder can, crashed `epochcast-train --resume` (SIGSEGV, the parser's recursion); a key given
// twice in a re-signed header (`next_step`) took the last. Both are refused, naming the file.
TEST_F(CheckpointTest, AHeaderNestedAMillionDeepOrGivingAKeyTwiceIsRefusedNotACrash) {
    std::filesystem::create_directories(directory);
    write_file_bytes(directory / kCheckpointFile, checksummed_checkpoint(std::string(1000000, '['), {}));
    expect_refused(directory, "nested more than 256 levels deep");
    write_file_bytes(directory / kCheckpointFile,
                     checksummed_checkpoint("{\"next_step\":1,\"next_step\":9,\"parameters\":0,\"run\":{},"
                                            "\"schema\":\"epochcast.checkpoint/2\",\"state\":[]}",
                                            {}));
    expect_refused(directory, "the key \"next_step\" is given twice");
}

// Issue 59, item 5: a checkpoint that is a FIFO blocked --resume until a writer came; a folder gave
// the standard library's own text.
TEST_F(CheckpointTest, ACheckpointThatIsAFifoOrAFolderIsRefusedWithoutWaiting) {
    std::filesystem::create_directories(directory);
    ASSERT_EQ(::mkfifo((directory / kCheckpointFile).c_str(), 0600), 0);
    expect_refused(directory, "is not a regular file");
    std::filesystem::remove(directory / kCheckpointFile);
    std::filesystem::create_directories(directory / kCheckpointFile);
    expect_refused(directory, "is not a regular file");
}

// What fuzz_checkpoint found in schema /1's reader (fuzz/README.md), under schema /2: a count that
// wrapped the byte size to 0 and reached std::vector's length_error, and a next_step that passed
// nlohmann's type_error text on, are one-line errors naming the file; a run of no parameters (which
// handed memcpy a null pointer) reads back.
TEST_F(CheckpointTest, HeadersTheFuzzerFoundAreOneLineErrorsOrRead) {
    std::filesystem::create_directories(directory);
    const std::string tail = R"(,"run":{},"schema":"epochcast.checkpoint/2","state":[]})";
    // Each header (before the tail) and what its refusal says.
    // CI's fuzz run (stop 48): a next_step of 7.1e26 reached nlohmann's float-to-integer conversion,
    // undefined out of range (UBSan); a fraction or a count past 2^63 is refused the same way.
    const std::pair<const char*, const char*> refused[] = {
        {R"({"next_step":1,"parameters":4611686018427387904)",
         "does not match its header (its header announces 4611686018427387904 values, more than its "},
        {R"({"next_step":"seven","parameters":1)", "malformed next_step (\"seven\"; a whole number expected)"},
        {R"({"next_step":711111111111111111111111111,"parameters":1)",
         "malformed next_step (7.111111111111111e+26; a whole number expected)"},
        {R"({"next_step":2.5,"parameters":1)", "malformed next_step (2.5;"},
        {R"({"next_step":1,"parameters":10000000000000000000)", "malformed element count (10000000000000000000;"},
        {R"({"next_step":1,"parameters":1.0)", "malformed element count (1.0;"},
    };
    for (const auto& [header, part] : refused) {
        write_file_bytes(directory / kCheckpointFile, checksummed_checkpoint(header + tail, {1, 2}));
        expect_refused(directory, part);
    }
    write_file_bytes(directory / kCheckpointFile,
                     checksummed_checkpoint(R"({"next_step":3,"parameters":0)" + tail, {}));
    const Checkpoint empty = read_checkpoint(directory);
    EXPECT_EQ(empty.next_step, 3);
    EXPECT_TRUE(empty.weights.empty());
    EXPECT_TRUE(empty.momentum.empty());
}

// A write killed half-way (SIGKILL) leaves "checkpoint.ecp.tmp.<PID>"; the next write removes it,
// and leaves alone the temporary of a process that is still alive (a run sharing the folder).
TEST_F(CheckpointTest, TheNextWriteRemovesTemporariesOfDeadWritersOnly) {
    std::filesystem::create_directories(directory);
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    ASSERT_GT(child, 0);
    ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // now a PID of no process
    const std::filesystem::path dead = directory / (std::string(kCheckpointFile) + ".tmp." + std::to_string(child));
    const std::filesystem::path alive =
        directory / (std::string(kCheckpointFile) + ".tmp." + std::to_string(::getppid()));
    const std::filesystem::path other = directory / "notes.tmp.1";
    for (const auto& path : {dead, alive, other}) write_file_bytes(path, "half a checkpoint");
    write_checkpoint(directory, thousand_weights());
    EXPECT_FALSE(std::filesystem::exists(dead));
    EXPECT_TRUE(std::filesystem::exists(alive));
    EXPECT_TRUE(std::filesystem::exists(other));
    EXPECT_EQ(read_checkpoint(directory).next_step, 7);
}

TEST_F(CheckpointTest, ResumingADifferentRunNamesTheKeyThatDiffers) {
    const nlohmann::json saved = {{"model", "resnet18"}, {"batch_per_gpu", 16}};
    EXPECT_NO_THROW(check_resumable(saved, saved, directory));
    try {
        check_resumable(saved, {{"model", "resnet18"}, {"batch_per_gpu", 32}}, directory);
        FAIL() << "a different batch was accepted";
    } catch (const InputError& error) {
        EXPECT_NE(std::string(error.what()).find("batch_per_gpu 16, this run has 32"), std::string::npos)
            << error.what();
    }
}

// Issue 59, item 15: a re-signed header whose counts disagree with its whole file was called
// "truncated" or "has trailing bytes"; a negative count was "truncated" too, and a state that is
// no list was read as one (an object's values) or met a generic "malformed header".
TEST_F(CheckpointTest, AHeaderThatDoesNotDescribeItsFileIsRefusedSayingSo) {
    std::filesystem::create_directories(directory);
    const std::filesystem::path file = directory / kCheckpointFile;
    const std::string head = R"({"next_step":1,"parameters":)";
    const std::string tail = R"(,"run":{},"schema":"epochcast.checkpoint/2","state":[]})";
    write_file_bytes(file, checksummed_checkpoint(head + "2" + tail, {1, 2, 3, 4, 5, 6}));
    expect_refused(directory, "does not match its header: it announces 4 values");
    write_file_bytes(file, checksummed_checkpoint(head + "2" + tail, {1, 2}));
    expect_refused(directory, "does not match its header: it announces 4 values");
    write_file_bytes(file, checksummed_checkpoint(head + "100" + tail, {1, 2}));
    expect_refused(directory, "does not match its header (its header announces 100 values, more than its ");
    write_file_bytes(file, checksummed_checkpoint(head + "-1" + tail, {1, 2}));
    expect_refused(directory, "malformed element count (-1; a whole number from 0 expected)");
    const std::string state_head =
        R"({"next_step":1,"parameters":1,"run":{},"schema":"epochcast.checkpoint/2","state":)";
    write_file_bytes(file, checksummed_checkpoint(state_head + R"({"a":{"name":"bn","elements":1}}})", {1, 2, 3}));
    expect_refused(directory, "malformed state ({\"a\":{\"elements\":1,\"name\":\"bn\"}}; a list of");
    write_file_bytes(file, checksummed_checkpoint(state_head + "[5]}", {1, 2, 3}));
    expect_refused(directory, "malformed state (5; a list of");
    // The same header intact, with its state a list: read.
    write_file_bytes(file, checksummed_checkpoint(state_head + R"([{"name":"bn","elements":1}]})", {1, 2, 3}));
    EXPECT_EQ(read_checkpoint(directory).state.at(0).values, std::vector<float>{3});
}

}  // namespace
}  // namespace epochcast
