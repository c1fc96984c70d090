// The whole executor, end to end: epochcast-train started as a user (or `epochcast run`) starts
// it, on 1 rank and under mpirun on 2 and 3 ranks, on small sizes (ResNet-18 at 32x32). Checks
// that training learns, that data parallelism and parameter servers compute what they should,
// and that a resumed run continues exactly.
#include <gtest/gtest.h>

#include <bit>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "executor/arena.hpp"
#include "executor/bf16.hpp"
#include "executor/checkpoint.hpp"
#include "executor/cpu/layers.hpp"
#include "executor/cpu/network.hpp"
#include "executor/data.hpp"
#include "executor/distributed.hpp"
#include "executor/host.hpp"
#include "executor/optimizer.hpp"
#include "model/resnet.hpp"
#include "tests/cli/cli_process.hpp"
#include "tests/executor/image_files.hpp"
#include "tests/support/processes.hpp"
#ifdef EPOCHCAST_WITH_CUDA
#include "executor/cuda/check.hpp"
#endif

extern char** environ;

namespace epochcast {
namespace {

using testing::ProcessResult;
using testing::run_command;

/// The small network of these tests, as epochcast-train flags.
const std::string kSmallRun =
    " --model resnet18 --image-size 32 --classes 4 --precision fp32 --threads 1 --synthetic-images 4096 --seed 7";

class TrainingTest : public ::testing::Test {
protected:
    std::filesystem::path folder =
        std::filesystem::temp_directory_path() / ("epochcast-training-" + std::to_string(::getpid()) + "-" +
                                                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    void SetUp() override { std::filesystem::create_directories(folder); }
    void TearDown() override { std::filesystem::remove_all(folder); }

    /// epochcast-train on one rank (a singleton MPI process, as `epochcast run --np 1` starts it).
    static ProcessResult train(const std::string& arguments) {
        return run_command(std::string("'") + testing::test_program(EPOCHCAST_TRAIN_PATH) + "'" + arguments);
    }

    /// epochcast-train under mpirun with `ranks` ranks.
    static ProcessResult mpirun(int ranks, const std::string& arguments) {
        return run_command(testing::mpirun_command(ranks) + " '" + testing::test_program(EPOCHCAST_TRAIN_PATH) + "'" +
                           arguments);
    }

    std::string path(const std::string& name) const { return (folder / name).string(); }

    void expect_resumed_run_continues(const std::string& run, double tolerance);

    void expect_ranks_apply_the_mean_gradient(int ranks, const std::string& run, Precision precision,
                                              const std::string& checkpoint, double tolerance);

    static std::vector<double> losses(const std::string& trace_file) {
        const nlohmann::json trace = nlohmann::json::parse(testing::read_text(trace_file));
        return trace.at("runs").at(0).at("measured").at("loss").get<std::vector<double>>();
    }

    static double mean(const std::vector<double>& values, std::size_t begin, std::size_t end) {
        return std::accumulate(values.begin() + static_cast<std::ptrdiff_t>(begin),
                               values.begin() + static_cast<std::ptrdiff_t>(end), 0.0) /
               static_cast<double>(end - begin);
    }
};

/// ||a - b|| / ||b||.
double relative_distance(const std::vector<float>& a, const std::vector<float>& b) {
    double difference = 0, norm = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        difference += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
        norm += static_cast<double>(b[i]) * b[i];
    }
    return std::sqrt(difference / norm);
}

std::vector<float> minus(const std::vector<float>& a, const std::vector<float>& b) {
    std::vector<float> difference(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) difference[i] = a[i] - b[i];
    return difference;
}

/// The weights every run of kSmallRun starts from (the seed alone fixes them).
std::vector<float> initial_weights() {
    NetworkSpec spec{build_resnet("resnet18", 32, 4), 2, Precision::fp32, 1, 7};
    std::unique_ptr<Network> network = make_cpu_network(spec);
    return std::vector<float>(network->values(), network->values() + network->parameter_elements());
}

TEST_F(TrainingTest, LossFallsClearlyOnOneRank) {
    const ProcessResult run =
        train(kSmallRun + " --batch-per-gpu 16 --steps 40 --lr 0.05 --trace-out " + path("t.json"));
    ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
    EXPECT_NE(run.out.find("Speed(img/s)"), std::string::npos) << run.out;  // the seeds' step table
    const std::vector<double> loss = losses(path("t.json"));
    ASSERT_EQ(loss.size(), 40u);
    EXPECT_NEAR(loss.front(), std::log(4.0), 0.5);  // an untrained net guesses
    EXPECT_LT(mean(loss, 35, 40), 0.5 * mean(loss, 0, 5)) << "first " << loss.front() << ", last " << loss.back();
}

// Real images end to end: a folder of two classes, reddish and bluish photographs of 40 x 30 to
// 56 x 48 pixels in PNG and JPEG, decoded by two threads straight into the loader's batches,
// cropped, flipped and learnt (the colours tell the classes apart whatever the crop).
TEST_F(TrainingTest, LossFallsOnAnImageFolder) {
    const std::filesystem::path photos = folder / "photos";
    std::filesystem::create_directories(photos / "blue");
    std::filesystem::create_directories(photos / "red");
    for (int i = 0; i < 12; ++i) {
        const int shade = 20 * (i % 6);
        const int width = 40 + 4 * (i % 5), height = 30 + 3 * (i % 7);
        const std::string name = std::to_string(i);
        testing::write_png(photos / "red" / (name + ".png"), width, height, 3,
                           testing::uniform({235 - shade, 30 + shade / 2, 40}));
        testing::write_jpeg(photos / "blue" / (name + ".jpg"), width, height,
                            testing::uniform({30, 60 + shade / 2, 230 - shade}));
    }
    const ProcessResult run = train(
        " --model resnet18 --image-size 32 --precision fp32 --threads 1 --seed 7"
        " --batch-per-gpu 8 --steps 30 --lr 0.05 --data-threads 2 --data " +
        photos.string() + " --trace-out " + path("t.json"));
    ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
    const nlohmann::json trace = nlohmann::json::parse(testing::read_text(path("t.json")));
    EXPECT_EQ(trace["runs"][0]["configuration"]["data"], photos.string());
    const std::vector<double> loss = losses(path("t.json"));
    ASSERT_EQ(loss.size(), 30u);
    EXPECT_NEAR(loss.front(), std::log(2.0), 0.5);  // two classes, an untrained net guesses
    EXPECT_LT(mean(loss, 25, 30), 0.5 * mean(loss, 0, 5)) << "first " << loss.front() << ", last " << loss.back();
}

// The trace records what ran: the instance --instance names, one node (this host) of 2 workers,
// and the layout of their ranks.
TEST_F(TrainingTest, LossFallsClearlyOnTwoRanks) {
    const ProcessResult run = mpirun(2, kSmallRun + " --batch-per-gpu 8 --steps 40 --lr 0.05 --instance p3.16xlarge" +
                                            " --trace-out " + path("t.json"));
    ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
    const nlohmann::json trace = nlohmann::json::parse(testing::read_text(path("t.json")));
    const nlohmann::json& traced = trace["runs"][0];
    EXPECT_EQ(traced["instance"], "p3.16xlarge");
    EXPECT_EQ(traced["nodes"], 1);
    EXPECT_EQ(traced["gpus_per_node"], 2);
    EXPECT_FALSE(traced.contains("ps_instance"));
    EXPECT_EQ(traced["layout"],
              nlohmann::json::array({{{"host", host_name()}, {"ranks", {0, 1}}, {"workers", 2}, {"servers", 0}}}));
    EXPECT_EQ(run.err.find("unevenly"), std::string::npos) << run.err;
    const std::vector<double> loss = losses(path("t.json"));
    EXPECT_LT(mean(loss, 35, 40), 0.5 * mean(loss, 0, 5)) << "first " << loss.front() << ", last " << loss.back();
}

/// One step on `ranks` ranks of 8 images, against the same step computed here: each rank's
/// gradient on its own 8 images (positions 0-7, 8-15, ...), summed as the all-reduce sums them
/// (fp32, or bf16 rounded: each rank's bucket rounded to bf16, each pairwise fp32 sum rounded
/// again), averaged, then seed 000's optimizer at the scaled rate ranks x 0.05. Exact up to float
/// rounding (and, past two ranks, the order of the additions). The checkpoint's momentum is
/// checked too: the ring exchange steps each chunk on one rank and gathers it for checkpoints.
void TrainingTest::expect_ranks_apply_the_mean_gradient(int ranks, const std::string& run, Precision precision,
                                                        const std::string& checkpoint, double tolerance) {
    const ProcessResult result =
        mpirun(ranks, run + " --steps 1 --batch-per-gpu 8 --lr 0.05 --checkpoint-dir " + checkpoint);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const Architecture architecture = build_resnet("resnet18", 32, 4);
    std::unique_ptr<Network> network = make_cpu_network(NetworkSpec{architecture, 8, precision, 1, 7});
    const std::unique_ptr<DataSource> data = make_synthetic_data(4, 32, 4096, 7);
    const std::int64_t elements = network->parameter_elements();
    std::vector<float> mean_gradient(static_cast<std::size_t>(elements), 0.0f);
    for (int rank = 0; rank < ranks; ++rank) {
        Batch batch;
        data->fill(8 * rank, 8, batch);
        network->train_step(batch.images.data(), batch.labels.data(), [](int) {});
        for (std::int64_t i = 0; i < elements; ++i) {
            float& sum = mean_gradient[static_cast<std::size_t>(i)];
            if (precision == Precision::bf16) {
                sum = from_bf16_bits(to_bf16_bits(from_bf16_bits(to_bf16_bits(network->gradients()[i])) + sum));
            } else {
                sum += network->gradients()[i];
            }
        }
    }
    for (float& g : mean_gradient) g /= static_cast<float>(ranks);
    std::vector<float> expected(network->values(), network->values() + elements);
    std::vector<float> momentum(expected.size(), 0.0f);
    const std::vector<float> mask = weight_decay_mask(network->parameters());
    sgd_nesterov_step(expected.data(), mean_gradient.data(), momentum.data(), mask.data(), elements, 0.05 * ranks);
    const std::vector<float> start(network->values(), network->values() + elements);
    const Checkpoint measured = read_checkpoint(checkpoint);
    EXPECT_LT(relative_distance(minus(measured.weights, start), minus(expected, start)), tolerance);
    EXPECT_LT(relative_distance(measured.momentum, momentum), tolerance);
}

TEST_F(TrainingTest, TwoRanksApplyTheMeanOfEachRanksGradient) {
    expect_ranks_apply_the_mean_gradient(2, kSmallRun, Precision::fp32, path("two"), 1e-4);
}

// The same step with MPI_Iallreduce (every rank steps every weight) instead of our ring.
TEST_F(TrainingTest, TwoRanksApplyTheMeanGradientWithMpisAllReduce) {
    expect_ranks_apply_the_mean_gradient(2, kSmallRun + " --allreduce mpi", Precision::fp32, path("two"), 1e-4);
}

// Three ranks: each chunk summed in another order, stepped on another rank.
TEST_F(TrainingTest, ThreeRanksApplyTheMeanOfEachRanksGradient) {
    expect_ranks_apply_the_mean_gradient(3, kSmallRun, Precision::fp32, path("three"), 1e-4);
}

// Mixed precision all-reduces bf16 buckets (half the bytes): the same step, with the rounding the
// all-reduce does reproduced here.
TEST_F(TrainingTest, TwoRanksInBf16AllReduceBf16RoundedGradients) {
    if (!cpu::cpu_has_native_bf16()) GTEST_SKIP() << "this CPU has no native bf16";
    std::string run = kSmallRun;
    run.replace(run.find("--precision fp32"), 16, "--precision bf16");
    expect_ranks_apply_the_mean_gradient(2, run, Precision::bf16, path("two"), 1e-4);
}

// bf16 rounding: to nearest, ties to even; infinities and NaN survive; widening is exact.
TEST(Bf16Bits, RoundToNearestEvenAndWidenExactly) {
    EXPECT_EQ(to_bf16_bits(1.0f), 0x3f80);
    EXPECT_EQ(from_bf16_bits(0x3f80), 1.0f);
    EXPECT_EQ(to_bf16_bits(1.0f + 0x1p-8f), 0x3f80);             // a tie: to the even neighbour, 1
    EXPECT_EQ(to_bf16_bits(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82);   // a tie: to the even neighbour, up
    EXPECT_EQ(to_bf16_bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);  // above the tie: up
    EXPECT_EQ(to_bf16_bits(-2.5f), 0xc020);
    EXPECT_EQ(from_bf16_bits(to_bf16_bits(std::numeric_limits<float>::infinity())),
              std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(from_bf16_bits(to_bf16_bits(std::numeric_limits<float>::quiet_NaN()))));
    for (const float x : {3.0f, -0.15625f, 1e-30f, 65280.0f}) {
        EXPECT_LE(std::abs(from_bf16_bits(to_bf16_bits(x)) - x), std::abs(x) * 0x1p-8f) << x;
    }
}

// The array forms the all-reduce uses (vectorised clones) agree with the one-value forms above,
// on every float class: normal, subnormal, zero, infinite and NaN, and on ties.
TEST(Bf16Bits, ArrayFormsAgreeWithTheScalarForms) {
    std::vector<float> values = {0.0f,
                                 -0.0f,
                                 1.0f + 0x1p-8f,
                                 1.0f + 0x1p-7f + 0x1p-8f,
                                 1e-40f,
                                 -3e-39f,
                                 65280.0f,
                                 std::numeric_limits<float>::max(),
                                 std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity(),
                                 std::numeric_limits<float>::quiet_NaN()};
    std::uint32_t state = 1;
    for (int i = 0; i < 1000; ++i) {  // random bit patterns, NaNs included
        state = state * 1664525U + 1013904223U;
        values.push_back(std::bit_cast<float>(state));
    }
    std::vector<std::uint16_t> rounded(values.size());
    round_to_bf16(values.data(), rounded.data(), static_cast<std::int64_t>(values.size()));
    for (std::size_t i = 0; i < values.size(); ++i) {
        ASSERT_EQ(rounded[i], to_bf16_bits(values[i])) << values[i];
    }
    std::vector<std::uint16_t> other(rounded.rbegin(), rounded.rend()), sum(rounded);
    add_bf16(other.data(), sum.data(), static_cast<std::int64_t>(sum.size()));
    for (std::size_t i = 0; i < sum.size(); ++i) {
        const float expected = from_bf16_bits(rounded[i]) + from_bf16_bits(other[i]);
        if (std::isnan(expected)) {
            EXPECT_TRUE(std::isnan(from_bf16_bits(sum[i])));
        } else {
            ASSERT_EQ(sum[i], to_bf16_bits(expected)) << i;
        }
    }
}

TEST_F(TrainingTest, TwoRanksUpdateTheWeightsAsOneRankOnTheCombinedBatch) {
    // One step: one rank on 16 images, two ranks on 8 each (the same 16 images). Each rank's
    // batch norm normalises with its own batch's statistics (as Horovod does), so the updates
    // agree within a tolerance, not exactly: measured here, 0.34 of the update's norm at 64x64
    // (0.67 at 32x32, where the last stage's maps are 1x1). The control, one rank on only the
    // first rank's 8 images, is 0.84 away; data parallelism must be clearly closer.
    // Linear scaling: the two ranks' per-worker rate 0.05 is a global 0.1, as for one rank.
    const std::string common =
        " --model resnet18 --image-size 64 --classes 4 --precision fp32 --threads 1"
        " --synthetic-images 4096 --seed 7 --steps 1";
    ASSERT_EQ(train(common + " --batch-per-gpu 16 --lr 0.1 --checkpoint-dir " + path("one")).exit_code, 0);
    const ProcessResult two = mpirun(2, common + " --batch-per-gpu 8 --lr 0.05 --checkpoint-dir " + path("two"));
    ASSERT_EQ(two.exit_code, 0) << two.err;
    ASSERT_EQ(train(common + " --batch-per-gpu 8 --lr 0.1 --checkpoint-dir " + path("half")).exit_code, 0);
    std::unique_ptr<Network> network =
        make_cpu_network(NetworkSpec{build_resnet("resnet18", 64, 4), 2, Precision::fp32, 1, 7});
    const std::vector<float> start(network->values(), network->values() + network->parameter_elements());
    const std::vector<float> one = minus(read_checkpoint(path("one")).weights, start);
    const std::vector<float> two_ranks = minus(read_checkpoint(path("two")).weights, start);
    const std::vector<float> half = minus(read_checkpoint(path("half")).weights, start);
    const double data_parallel_error = relative_distance(two_ranks, one);
    const double control_error = relative_distance(half, one);
    EXPECT_LT(data_parallel_error, 0.45);
    EXPECT_LT(data_parallel_error, 0.5 * control_error)
        << "2 ranks " << data_parallel_error << ", half batch " << control_error;
}

TEST_F(TrainingTest, ParameterServersGiveTheWeightsOfAllReduce) {
    const std::string common = kSmallRun + " --batch-per-gpu 4 --steps 3 --lr 0.05";
    const ProcessResult allreduce = mpirun(2, common + " --checkpoint-dir " + path("allreduce"));
    ASSERT_EQ(allreduce.exit_code, 0) << allreduce.err;
    // The longest --instance name there may be; servers are ranks of the same hosts: ps_instance too.
    const std::string instance = "cluster-" + std::string(92, 'c');
    const ProcessResult ps = mpirun(4, common + " --ps-ranks 2 --checkpoint-dir " + path("ps") + " --instance " +
                                           instance + " --trace-out " + path("ps.json"));
    ASSERT_EQ(ps.exit_code, 0) << ps.err;
    const nlohmann::json traced = nlohmann::json::parse(testing::read_text(path("ps.json")))["runs"][0];
    EXPECT_EQ(traced["instance"], instance);
    EXPECT_EQ(traced["ps_instance"], instance);
    EXPECT_EQ(traced["nodes"], 1);
    EXPECT_EQ(traced["gpus_per_node"], 2);  // the servers are not GPUs
    EXPECT_EQ(
        traced["layout"],
        nlohmann::json::array({{{"host", host_name()}, {"ranks", {0, 1, 2, 3}}, {"workers", 2}, {"servers", 2}}}));
    const Checkpoint a = read_checkpoint(path("allreduce"));
    const Checkpoint p = read_checkpoint(path("ps"));
    ASSERT_EQ(a.weights.size(), p.weights.size());
    EXPECT_LT(relative_distance(p.weights, a.weights), 1e-6);
    EXPECT_LT(relative_distance(p.momentum, a.momentum), 1e-5);
    EXPECT_GT(relative_distance(a.weights, initial_weights()), 1e-4);  // they did move
}

/// `run` (8 steps) whole, and stopped after 5 then resumed: the last 3 losses agree within
/// `tolerance` of the loss.
void TrainingTest::expect_resumed_run_continues(const std::string& run, double tolerance) {
    const std::string common = run + " --batch-per-gpu 8 --steps 8 --lr 0.05";
    ASSERT_EQ(train(common + " --trace-out " + path("whole.json")).exit_code, 0);
    const ProcessResult first = train(common + " --stop-after 5 --checkpoint-dir " + path("ck"));
    ASSERT_EQ(first.exit_code, 0) << first.err;
    EXPECT_EQ(read_checkpoint(path("ck")).next_step, 5);
    const ProcessResult rest =
        train(common + " --resume --checkpoint-dir " + path("ck") + " --trace-out " + path("rest.json"));
    ASSERT_EQ(rest.exit_code, 0) << rest.err;
    const std::vector<double> whole = losses(path("whole.json"));
    const std::vector<double> resumed = losses(path("rest.json"));
    ASSERT_EQ(resumed.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_NEAR(resumed[i], whole[5 + i], tolerance * std::abs(whole[5 + i])) << "step " << 6 + i;
    }
}

TEST_F(TrainingTest, AResumedRunContinuesWithTheLossOfTheUninterruptedOne) {
    expect_resumed_run_continues(kSmallRun, 1e-5);
}

TEST_F(TrainingTest, BadInputIsExitCodeTwoWithAMessageOnOneRankAndUnderMpirun) {
    ProcessResult run = train(kSmallRun + " --batch-per-gpu 0 --steps 1");
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_NE(run.err.find("--batch-per-gpu"), std::string::npos) << run.err;
    run = train(kSmallRun + " --batch-per-gpu 2 --steps 1 --data " + path("no-such-folder"));
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_NE(run.err.find("no-such-folder"), std::string::npos) << run.err;
    run = train(kSmallRun + " --batch-per-gpu 2 --steps 1 --resume --checkpoint-dir " + path("empty"));
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_NE(run.err.find("checkpoint"), std::string::npos) << run.err;
    run = mpirun(2, kSmallRun + " --batch-per-gpu 2 --steps 1 --data " + path("no-such-folder"));
    EXPECT_NE(run.exit_code, 0);
    EXPECT_NE((run.err + run.out).find("no-such-folder"), std::string::npos) << run.err;
    run = mpirun(2, kSmallRun + " --batch-per-gpu 2 --steps 1 --ps-ranks 2");
    EXPECT_NE(run.exit_code, 0);
    EXPECT_NE((run.err + run.out).find("--ps-ranks"), std::string::npos) << run.err;
}

// Issue 42, item 7: flags beyond what epochcast-train runs crashed it (--threads 100000: SIGSEGV
// in libgomp; --data-threads 100000: SIGABRT, out of processes; --classes 2147483647: bad_alloc),
// exited 1 (--batch-per-gpu 100000000) or trained something else (--classes 0: 1000 classes).
// Each is bad input: exit 2, one line naming the flag.
TEST_F(TrainingTest, FlagsBeyondWhatTheHostRunsAreExitCodeTwoNamingTheFlag) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {" --threads 100000", "--threads 100000 is more than this host runs"},
        {" --data-threads 100000", "--data-threads 100000 is more than this host runs"},
        {" --classes 2147483647", "--classes must be 1 to 1,000,000 (got 2147483647)"},
        {" --classes 0", "--classes must be 1 to 1,000,000 (got 0)"},
        {" --batch-per-gpu 100000000", "--batch-per-gpu must be 1 to 1,000,000 images (got 100000000)"},
        {" --batch-per-gpu 1000000", "more than this host's"},  // ResNet-50 at 224 px: some 100 TiB
        {" --describe-host --threads 100000", "--threads 100000 is more than this host runs"}};
    for (const auto& [flags, message] : cases) {
        const ProcessResult run = train(" --model resnet50 --steps 1 --synthetic-images 64" + flags);
        EXPECT_EQ(run.exit_code, 2) << flags << ": " << run.err;
        EXPECT_NE(run.err.find(message), std::string::npos) << flags << ": " << run.err;
        EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << flags << ": " << run.err;
        EXPECT_EQ(run.out, "") << flags;
    }
}

// Issue 59, item 12: numbers CLI11 read past their range (--seed 2^64 and 1e26 as 2^64 - 1, -5
// wrapped, --steps 2^64 as 2^63 - 1, which started training), an explicit --stop-after 0 taken as
// "to the end", and --lr 1e-300, zero in the fp32 weights. Each is bad input naming the flag.
TEST_F(TrainingTest, NumbersPastTheirRangeAreExitCodeTwoNamingTheFlag) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {" --steps 1 --seed 18446744073709551616",
         "--seed must be a whole number from 0 to 18,446,744,073,709,551,615"},
        {" --steps 1 --seed 1e26", "--seed must be a whole number from 0 to"},
        {" --steps 1 --seed -5", "--seed must be a whole number from 0 to"},
        {" --steps 18446744073709551616", "--steps must be a whole number from 1 to 1,000,000,000,000"},
        {" --steps 1e3", "--steps must be a whole number from 1 to"},
        {" --steps 0", "--steps must be a whole number from 1 to"},
        {" --steps 2 --stop-after 0", "--stop-after must be a whole number from 1 to"},
        {" --steps 2 --stop-after -1", "--stop-after must be a whole number from 1 to"},
        {" --steps 1 --lr 1e-300", "--lr 1e-300 is below fp32's smallest normal number"}};
    for (const auto& [flags, message] : cases) {
        const ProcessResult run =
            train(" --model resnet18 --image-size 32 --classes 4 --threads 1 --synthetic-images 64 --batch-per-gpu 2" +
                  flags);
        EXPECT_EQ(run.exit_code, 2) << flags << ": " << run.err;
        EXPECT_NE(run.err.find(message), std::string::npos) << flags << ": " << run.err;
        EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << flags << ": " << run.err;
        EXPECT_EQ(run.out, "") << flags;
    }
}

// --instance is a name the trace carries (`epochcast run` checks it against the catalog): empty,
// spaced, non-printable or longer than 100 characters is bad input. Under `epochcast run` the
// rank's failure report names its host, code and message.
TEST_F(TrainingTest, ABadInstanceNameIsExitCodeTwoAndTheFailureReportNamesTheHost) {
    const std::string common = kSmallRun + " --batch-per-gpu 2 --steps 1 --instance ";
    for (const std::string& name :
         {std::string("''"), std::string("'p3 16xlarge'"), std::string("\"$(printf 'p3\\001')\""),
          std::string("cluster-") + std::string(93, 'c')}) {
        const ProcessResult run = train(common + name);
        EXPECT_EQ(run.exit_code, 2) << name << ": " << run.err;
        EXPECT_NE(run.err.find("--instance must be 1 to 100 printable ASCII characters"), std::string::npos)
            << name << ": " << run.err;
    }
    const std::filesystem::path reports = folder / "progress";
    std::filesystem::create_directories(reports);
    const ProcessResult run = run_command("EPOCHCAST_PROGRESS_DIR='" + reports.string() + "' '" +
                                          testing::test_program(EPOCHCAST_TRAIN_PATH) + "'" + common + "'p3 16xlarge'");
    EXPECT_EQ(run.exit_code, 2) << run.err;
    const nlohmann::json report = nlohmann::json::parse(testing::read_text(reports / "rank-0.failed.json"));
    EXPECT_EQ(report["rank"], 0);
    EXPECT_EQ(report["host"], host_name());
    EXPECT_EQ(report["code"], 2);
    EXPECT_NE(report["message"].get<std::string>().find("--instance"), std::string::npos) << report;
}

// The case: training did not stop on a non-finite loss (`--lr 1e30` exited 0 with -nan).
// It stops at the first non-finite loss with exit 1 (a failed run, not bad input: the rate is a
// number a schedule could hold, the training diverged), before the step's row is printed and
// without writing a checkpoint over the last good one.
TEST_F(TrainingTest, ANonFiniteLossStopsTheRunNamingTheStep) {
    const ProcessResult run =
        train(kSmallRun + " --batch-per-gpu 4 --steps 20 --lr 1e30 --checkpoint-dir " + path("ck"));
    EXPECT_EQ(run.exit_code, 1) << run.err << run.out;
    EXPECT_NE(run.err.find(" at step "), std::string::npos) << run.err;
    EXPECT_TRUE(run.err.find("loss is NaN") != std::string::npos ||
                run.err.find("loss is infinite") != std::string::npos)
        << run.err;
    EXPECT_NE(run.err.find("lower --lr"), std::string::npos) << run.err;
    EXPECT_EQ(run.out.find("nan"), std::string::npos) << run.out;
    EXPECT_FALSE(std::filesystem::exists(folder / "ck" / kCheckpointFile));
}

TEST_F(TrainingTest, ALearningRateThatIsNotAPositiveFp32NumberIsBadInput) {
    for (const char* lr : {"0", "-0.1", "nan", "inf", "1e39"}) {
        const ProcessResult run = train(kSmallRun + " --batch-per-gpu 2 --steps 1 --lr=" + lr);
        EXPECT_EQ(run.exit_code, 2) << lr << ": " << run.err;
        EXPECT_NE(run.err.find("--lr"), std::string::npos) << lr << ": " << run.err;
    }
}

// Issue 42, item 11: resuming a checkpoint that finished its run was a silent no-op (exit 0, no
// step, no trace). It is bad input naming the checkpoint and its step; a larger --steps resumes.
TEST_F(TrainingTest, ResumingAFinishedCheckpointSaysThereIsNothingToResume) {
    const std::string common = kSmallRun + " --batch-per-gpu 2 --lr 0.05 --checkpoint-dir " + path("ck");
    ASSERT_EQ(train(common + " --steps 2").exit_code, 0);
    ASSERT_EQ(read_checkpoint(path("ck")).next_step, 2);
    ProcessResult run = train(common + " --steps 2 --resume --trace-out " + path("t.json"));
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find("nothing to resume: the checkpoint in '" + path("ck") + "' has finished all 2 steps"),
              std::string::npos)
        << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    run = train(common + " --steps 1 --resume");
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find("is at step 2, past this run's 1 steps"), std::string::npos) << run.err;
    EXPECT_FALSE(std::filesystem::exists(path("t.json")));
    run = train(common + " --steps 3 --resume --trace-out " + path("t.json"));
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(losses(path("t.json")).size(), 1u);
}

// The case: 200 flipped bytes in a checkpoint resumed silently. `--resume` refuses a
// damaged checkpoint with exit 2, naming the file, and resumes the intact one.
TEST_F(TrainingTest, ADamagedCheckpointIsRefusedOnResume) {
    const std::string common = kSmallRun + " --batch-per-gpu 2 --steps 3 --lr 0.05 --checkpoint-dir " + path("ck");
    ASSERT_EQ(train(common + " --stop-after 1").exit_code, 0);
    const std::filesystem::path file = folder / "ck" / kCheckpointFile;
    const std::string intact = testing::read_text(file);
    std::string damaged = intact;
    for (std::size_t i = damaged.find('\n') + 1; i < damaged.size(); i += damaged.size() / 200) damaged[i] ^= 0x5a;
    std::ofstream(file, std::ios::binary | std::ios::trunc) << damaged;
    const ProcessResult refused = train(common + " --resume");
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_NE(refused.err.find(file.string()), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("checksum"), std::string::npos) << refused.err;
    std::ofstream(file, std::ios::binary | std::ios::trunc) << intact;
    const ProcessResult resumed = train(common + " --resume");
    EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
}

// Issue 44: a rank killed by a signal (here SIGKILL, as the out-of-memory killer sends) is named
// by its supervisor, whatever the launcher reports first (a survivor may die of its lost
// connection before mpirun notices the killed rank). Under mpirun with EPOCHCAST_PROGRESS_DIR each
// rank runs as the child of a supervising epochcast-train, which writes "rank-1.died.json" with
// the rank, its host, its process and the signal; the other rank, stopped by mpirun's teardown
// (a signal its supervisor passed on), is not reported as killed. Nothing is left running.
TEST_F(TrainingTest, ARankKilledByASignalIsReportedByItsSupervisor) {
    const std::filesystem::path reports = folder / "progress";
    std::filesystem::create_directories(reports);
    const std::string command = "EPOCHCAST_PROGRESS_DIR='" + reports.string() + "' exec " + testing::mpirun_command(2) +
                                " '" + testing::test_program(EPOCHCAST_TRAIN_PATH) + "'" + kSmallRun +
                                " --batch-per-gpu 2 --steps 1000000 --lr 0.05";
    const pid_t mpirun = testing::start_process({"/bin/sh", "-c", command}, folder / "out", folder / "err");
    ASSERT_GT(mpirun, 0);
    nlohmann::json started;  // rank 1's progress report once it has done a step
    const bool stepped = testing::wait_until(
        [&] {
            started = nlohmann::json::parse(testing::read_text(reports / "rank-1.json"), nullptr, false);
            return started.is_object() && started.value("steps", 0) >= 1;
        },
        std::chrono::seconds(180));
    const pid_t rank = stepped ? started["pid"].get<pid_t>() : 0;
    std::vector<pid_t> processes = testing::descendants(mpirun);
    if (rank > 0) {
        // The rank's parent is its supervisor: the same program, itself started by the launcher.
        const std::optional<testing::ProcessState> state = testing::process_state(rank);
        EXPECT_EQ(testing::command_line_of(state ? state->parent : 0), testing::command_line_of(rank));
        ::kill(rank, SIGKILL);
    } else {
        ::kill(mpirun, SIGKILL);
    }
    int status = 0;
    ::waitpid(mpirun, &status, 0);
    ASSERT_TRUE(stepped) << testing::read_text(folder / "err");
    EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << testing::read_text(folder / "err");
    const nlohmann::json died = nlohmann::json::parse(testing::read_text(reports / "rank-1.died.json"), nullptr, false);
    ASSERT_TRUE(died.is_object()) << testing::read_text(folder / "err");
    EXPECT_EQ(died["rank"], 1);
    EXPECT_EQ(died["signal"], SIGKILL);
    EXPECT_EQ(died["pid"], rank);
    EXPECT_EQ(died["host"], host_name());
    EXPECT_TRUE(died["time_s"].is_number());
    EXPECT_FALSE(std::filesystem::exists(reports / "rank-0.died.json"))
        << testing::read_text(reports / "rank-0.died.json");
    EXPECT_TRUE(testing::all_gone(processes, std::chrono::seconds(60)));
}

// SIGKILL while a checkpoint is being written (its temporary has appeared) leaves the previous,
// complete and verified checkpoint; the write it interrupted leaves "checkpoint.ecp.tmp.<PID>",
// which the next run's first write removes.
TEST_F(TrainingTest, AKilledRunKeepsAVerifiedCheckpointAndTheNextWriteCleansUp) {
    const std::string checkpoint = path("ck");
    const std::vector<std::string> flags = {"--model",
                                            "resnet18",
                                            "--image-size",
                                            "32",
                                            "--classes",
                                            "4",
                                            "--precision",
                                            "fp32",
                                            "--threads",
                                            "1",
                                            "--synthetic-images",
                                            "4096",
                                            "--seed",
                                            "7",
                                            "--batch-per-gpu",
                                            "2",
                                            "--steps",
                                            "1000",
                                            "--lr",
                                            "0.05",
                                            "--checkpoint-dir",
                                            checkpoint,
                                            "--checkpoint-every",
                                            "1"};
    // Each killed run is a singleton MPI process, whose Open MPI session folder (ompi.HOST.UID/jf.N
    // under $TMPDIR) a SIGKILL leaves behind (issue 44): its TMPDIR is in this test's folder.
    const std::string session_base = path("tmp");
    std::filesystem::create_directories(session_base);
    std::vector<std::string> environment = {"TMPDIR=" + session_base};
    for (char** variable = environ; *variable; ++variable) {
        if (std::string(*variable).rfind("TMPDIR=", 0) != 0) environment.emplace_back(*variable);
    }
    std::vector<char*> envp;
    for (std::string& entry : environment) envp.push_back(entry.data());
    envp.push_back(nullptr);
    int temporaries_left = 0;
    for (int attempt = 0; attempt < 3; ++attempt) {
        std::vector<std::string> argv = {testing::test_program(EPOCHCAST_TRAIN_PATH)};
        argv.insert(argv.end(), flags.begin(), flags.end());
        if (attempt > 0) argv.push_back("--resume");
        std::vector<char*> args;
        for (std::string& a : argv) args.push_back(a.data());
        args.push_back(nullptr);
        const std::int64_t before = attempt > 0 ? read_checkpoint(checkpoint).next_step : 0;
        const pid_t pid = ::fork();
        if (pid == 0) {
            const int null = ::open("/dev/null", O_WRONLY);
            ::dup2(null, STDOUT_FILENO);
            ::dup2(null, STDERR_FILENO);
            ::execve(args[0], args.data(), envp.data());
            ::_exit(127);
        }
        ASSERT_GT(pid, 0);
        // Two checkpoints past where it started.
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
        while (std::chrono::steady_clock::now() < until) {
            std::ifstream in(std::filesystem::path(checkpoint) / kCheckpointFile);
            std::string header;  // the header line alone: reading the whole file would slow the run
            if (std::getline(in, header)) {
                const nlohmann::json parsed = nlohmann::json::parse(header, nullptr, false);
                if (parsed.is_object() && parsed.value("next_step", std::int64_t{0}) >= before + 2) break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        // Then while the next checkpoint is being written, as soon as its temporary appears.
        const auto writing_until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        for (bool writing = false; !writing && std::chrono::steady_clock::now() < writing_until;) {
            for (const auto& entry : std::filesystem::directory_iterator(checkpoint)) {
                writing |= entry.path().filename().string().rfind("checkpoint.ecp.tmp.", 0) == 0;
            }
        }
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        Checkpoint kept;
        ASSERT_NO_THROW(kept = read_checkpoint(checkpoint)) << "attempt " << attempt;
        EXPECT_GE(kept.next_step, before + 2);
        for (const auto& entry : std::filesystem::directory_iterator(checkpoint)) {
            temporaries_left += entry.path().filename().string().rfind("checkpoint.ecp.tmp.", 0) == 0 ? 1 : 0;
        }
    }
    EXPECT_GE(temporaries_left, 1) << "no kill landed during a write";
    const ProcessResult last = train(
        " --model resnet18 --image-size 32 --classes 4 --precision fp32 --threads 1"
        " --synthetic-images 4096 --seed 7 --batch-per-gpu 2 --steps 1000 --lr 0.05"
        " --checkpoint-dir " +
        checkpoint + " --checkpoint-every 1 --resume --stop-after 1");
    ASSERT_EQ(last.exit_code, 0) << last.err;
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(checkpoint)) files.push_back(entry.path().filename());
    EXPECT_EQ(files, std::vector<std::string>{kCheckpointFile})
        << temporaries_left << " temporaries were left by kills";
}

#ifdef EPOCHCAST_WITH_CUDA

/// The small network on the GPU.
const std::string kSmallGpuRun =
    " --backend cuda --model resnet18 --image-size 32 --classes 4 --synthetic-images 4096 --seed 7";

TEST_F(TrainingTest, CudaBackendWithoutAGpuIsExitCodeTwoWithAMessage) {
    if (cuda::visible_gpus() > 0) GTEST_SKIP() << "a GPU is visible";
    const ProcessResult run = train(kSmallGpuRun + " --precision fp16 --steps 2");
    EXPECT_EQ(run.exit_code, 2) << run.err << run.out;
    EXPECT_NE(run.err.find("GPU(s) are visible"), std::string::npos) << run.err;
}

TEST_F(TrainingTest, LossFallsClearlyOnOneGpuInBothPrecisions) {
    if (cuda::visible_gpus() == 0) GTEST_SKIP() << "no GPU visible";
    for (const char* precision : {"fp32", "fp16"}) {
        const ProcessResult run = train(kSmallGpuRun + " --precision " + precision +
                                        " --batch-per-gpu 16 --steps 40 --lr 0.05 --trace-out " + path("t.json"));
        ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
        const std::vector<double> loss = losses(path("t.json"));
        ASSERT_EQ(loss.size(), 40u);
        EXPECT_NEAR(loss.front(), std::log(4.0), 0.5) << precision;
        EXPECT_LT(mean(loss, 35, 40), 0.5 * mean(loss, 0, 5))
            << precision << ": first " << loss.front() << ", last " << loss.back();
        const nlohmann::json trace = nlohmann::json::parse(testing::read_text(path("t.json")));
        EXPECT_EQ(trace["runs"][0]["measured"]["skipped_steps"], 0) << precision;  // 2^15 suffices for this net
    }
}

// The GPU run makes its synthetic batches on the GPU, the CPU run on the host: the same images.
TEST_F(TrainingTest, OneGpuMatchesTheCpuBackendOverTenFp32Steps) {
    if (cuda::visible_gpus() == 0) GTEST_SKIP() << "no GPU visible";
    const std::string common =
        " --model resnet18 --image-size 32 --classes 4 --synthetic-images 4096 --seed 7"
        " --precision fp32 --batch-per-gpu 8 --steps 10 --lr 0.05 --threads 2";
    const ProcessResult gpu = train(common + " --backend cuda --trace-out " + path("gpu.json"));
    const ProcessResult cpu = train(common + " --backend cpu --trace-out " + path("cpu.json"));
    ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
    ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
    const std::vector<double> g = losses(path("gpu.json")), c = losses(path("cpu.json"));
    ASSERT_EQ(g.size(), c.size());
    for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], c[i], 1e-3 * c[i] + 1e-4) << "step " << i;
}

TEST_F(TrainingTest, OneGpuMakesItsSyntheticBatchesItselfWithoutWaitingForData) {
    if (cuda::visible_gpus() == 0) GTEST_SKIP() << "no GPU visible";
    const ProcessResult run =
        train(kSmallGpuRun + " --precision fp32 --batch-per-gpu 8 --steps 4 --trace-out " + path("t.json"));
    ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
    EXPECT_NE(run.out.find("data synthetic (made by the backend)"), std::string::npos) << run.out;
    const nlohmann::json trace = nlohmann::json::parse(testing::read_text(path("t.json")));
    EXPECT_EQ(trace["runs"][0]["measured"]["phases_s"]["data_wait"].get<double>(), 0.0);
}

// The generator follows the global positions across a resume as the host loader does. cuDNN's
// reductions may sum in another order from run to run: 1e-4 of the loss, where another batch
// would differ by percents.
TEST_F(TrainingTest, AResumedGpuRunGeneratesTheBatchesOfTheUninterruptedOne) {
    if (cuda::visible_gpus() == 0) GTEST_SKIP() << "no GPU visible";
    expect_resumed_run_continues(kSmallGpuRun + " --precision fp32", 1e-4);
}

#endif

}  // namespace
}  // namespace epochcast
