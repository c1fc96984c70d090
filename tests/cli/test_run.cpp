// `epochcast run`: the mpirun line (a pure function), and the whole command against small shell
// scripts standing in for mpirun and epochcast-train: a missing mpirun, a rank that dies, a run
// that writes a trace, each ending within seconds with the right exit code and message.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/launch.hpp"
#include "cli/table.hpp"
#include "executor/progress.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "tests/cli/cli_process.hpp"
#include "tests/support/local_cpu_catalog.hpp"
#include "tests/support/processes.hpp"

namespace epochcast {
namespace {

using testing::run_epochcast;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> base_flags() { return {"--model", "resnet50", "--threads", "2"}; }

cli::LaunchRequest request() {
    cli::LaunchRequest r;
    r.mpirun = "/usr/bin/mpirun";
    r.train_program = "/opt/epochcast-train";
    r.ranks = 2;
    r.online_cores = 2;
    r.train_flags = base_flags();
    r.trace_out = "/tmp/run.trace.json";
    return r;
}

TEST(RunLine, RanksWithMoreThreadsThanCoresBindNothingAndTheTraceIsAdded) {
    const std::vector<std::string> expected = {
        "/usr/bin/mpirun", "-np",      "2",         "--bind-to", "none",        "/opt/epochcast-train",
        "--model",         "resnet50", "--threads", "2",         "--trace-out", "/tmp/run.trace.json"};
    EXPECT_EQ(cli::launcher_argv(request()), expected);
}

TEST(RunLine, RanksWhoseThreadsFitTheCoresAreBoundToCoresOfTheirOwn) {
    cli::LaunchRequest r = request();
    r.train_flags = {"--model", "resnet50", "--threads", "1"};
    std::vector<std::string> argv = cli::launcher_argv(r);
    const std::vector<std::string> one_core = {"--bind-to", "core", "/opt/epochcast-train"};
    EXPECT_TRUE(std::search(argv.begin(), argv.end(), one_core.begin(), one_core.end()) != argv.end());
    r.train_flags = {"--model", "resnet50"};  // --threads defaults to 1
    argv = cli::launcher_argv(r);
    EXPECT_TRUE(std::search(argv.begin(), argv.end(), one_core.begin(), one_core.end()) != argv.end());
    r.ranks = 1;
    r.train_flags = {"--threads=2"};
    argv = cli::launcher_argv(r);
    const std::vector<std::string> two_cores = {"--map-by", "slot:PE=2", "--bind-to", "core", "/opt/epochcast-train"};
    EXPECT_TRUE(std::search(argv.begin(), argv.end(), two_cores.begin(), two_cores.end()) != argv.end());
    r.train_flags = {"--threads", "many"};  // the trainer names the bad value; nothing is bound
    argv = cli::launcher_argv(r);
    EXPECT_EQ(std::count(argv.begin(), argv.end(), "none"), 1);
}

TEST(RunLine, RootAndMoreRanksThanCoresAddTheirFlagsBeforeTheProgram) {
    cli::LaunchRequest r = request();
    r.root = true;
    r.ranks = 3;
    const std::vector<std::string> argv = cli::launcher_argv(r);
    const auto program = std::find(argv.begin(), argv.end(), "/opt/epochcast-train");
    ASSERT_NE(program, argv.end());
    EXPECT_NE(std::find(argv.begin(), program, "--allow-run-as-root"), program);
    EXPECT_NE(std::find(argv.begin(), program, "--oversubscribe"), program);
    EXPECT_EQ(argv[2], "3");
    r.root = false;
    r.ranks = 2;
    const std::vector<std::string> fits = cli::launcher_argv(r);
    EXPECT_EQ(std::count(fits.begin(), fits.end(), "--allow-run-as-root"), 0);
    EXPECT_EQ(std::count(fits.begin(), fits.end(), "--oversubscribe"), 0);
}

TEST(RunLine, PsRanksArePassedToTheTrainer) {
    cli::LaunchRequest r = request();
    r.ps_ranks = 1;
    const std::vector<std::string> argv = cli::launcher_argv(r);
    const auto ps = std::find(argv.begin(), argv.end(), "--ps-ranks");
    ASSERT_NE(ps, argv.end());
    EXPECT_EQ(*(ps + 1), "1");
    EXPECT_GT(ps - argv.begin(), std::find(argv.begin(), argv.end(), "/opt/epochcast-train") - argv.begin());
    const std::vector<std::string> all_reduce = cli::launcher_argv(request());
    EXPECT_EQ(std::count(all_reduce.begin(), all_reduce.end(), "--ps-ranks"), 0);
}

TEST(RunLine, UsersTraceOutIsKeptAndNotDuplicated) {
    for (const std::vector<std::string>& given :
         {std::vector<std::string>{"--trace-out", "mine.json"}, std::vector<std::string>{"--trace-out=mine.json"}}) {
        cli::LaunchRequest r = request();
        r.train_flags.insert(r.train_flags.end(), given.begin(), given.end());
        const std::vector<std::string> argv = cli::launcher_argv(r);
        EXPECT_EQ(std::count(argv.begin(), argv.end(), "/tmp/run.trace.json"), 0);
        EXPECT_TRUE(std::equal(given.begin(), given.end(), argv.end() - static_cast<long>(given.size())));
        EXPECT_EQ(cli::flag_value(r.train_flags, "--trace-out"), "mine.json");
    }
    EXPECT_FALSE(cli::flag_value(base_flags(), "--trace-out"));
    EXPECT_EQ(cli::flag_value(base_flags(), "--threads"), "2");
}

// The pinned lines. Four p4d nodes of 8 GPUs from a hostfile: one rank per GPU, 8 per
// node by ppr mapping, no binding (CUDA ranks), the environment other hosts need forwarded.
TEST(RunLine, FourGpuNodesFromAHostfile) {
    cli::LaunchRequest r = request();
    r.root = false;
    r.online_cores = 96;
    r.ranks = 32;
    r.train_flags = {"--backend", "cuda", "--precision", "fp16", "--instance", "p4d.24xlarge"};
    r.layout = cli::place_ranks(
        cli::parse_hostfile("p4d-1 slots=8\np4d-2 slots=8\np4d-3 slots=8\np4d-4 slots=8\n", "hosts"), 32);
    r.forwarded_variables = {"EPOCHCAST_PROGRESS_DIR", "PATH", "LD_LIBRARY_PATH", "NCCL_DEBUG"};
    const std::vector<std::string> expected = {"/usr/bin/mpirun",
                                               "-np",
                                               "32",
                                               "--host",
                                               "p4d-1:8,p4d-2:8,p4d-3:8,p4d-4:8",
                                               "--map-by",
                                               "ppr:8:node",
                                               "--bind-to",
                                               "none",
                                               "-x",
                                               "EPOCHCAST_PROGRESS_DIR",
                                               "-x",
                                               "PATH",
                                               "-x",
                                               "LD_LIBRARY_PATH",
                                               "-x",
                                               "NCCL_DEBUG",
                                               "/opt/epochcast-train",
                                               "--backend",
                                               "cuda",
                                               "--precision",
                                               "fp16",
                                               "--instance",
                                               "p4d.24xlarge",
                                               "--trace-out",
                                               "/tmp/run.trace.json"};
    EXPECT_EQ(cli::launcher_argv(r), expected);
    EXPECT_EQ(cli::command_line(cli::launcher_argv(r)).substr(0, 75),
              "/usr/bin/mpirun -np 32 --host p4d-1:8,p4d-2:8,p4d-3:8,p4d-4:8 --map-by ppr:");
}

// CPU ranks on two hosts: ranks x threads fit (this host's cores counted for each), so each rank
// gets cores of its own through ppr mapping with PE; when they do not, nothing is bound.
TEST(RunLine, CpuRanksOnSeveralHostsAreBoundWhenTheirThreadsFit) {
    cli::LaunchRequest r = request();
    r.online_cores = 32;
    r.ranks = 8;
    r.train_flags = {"--threads", "8"};
    r.layout = cli::place_ranks(cli::parse_host_list("a:4,b:4"), std::nullopt);
    std::vector<std::string> argv = cli::launcher_argv(r);
    const std::vector<std::string> mapping = {
        "--host", "a:4,b:4", "--map-by", "ppr:4:node:PE=8", "--bind-to", "core", "/opt/epochcast-train"};
    EXPECT_TRUE(std::search(argv.begin(), argv.end(), mapping.begin(), mapping.end()) != argv.end());
    EXPECT_EQ(std::count(argv.begin(), argv.end(), "--oversubscribe"), 0);
    r.train_flags = {"--threads", "16"};
    argv = cli::launcher_argv(r);
    const std::vector<std::string> unbound = {"--map-by", "ppr:4:node", "--bind-to", "none", "/opt/epochcast-train"};
    EXPECT_TRUE(std::search(argv.begin(), argv.end(), unbound.begin(), unbound.end()) != argv.end());
}

// A CUDA run on this host only is not bound either (a rank's threads need more than one core).
TEST(RunLine, CudaRanksOnThisHostAreNotBound) {
    cli::LaunchRequest r = request();
    r.online_cores = 64;
    r.train_flags = {"--backend=cuda"};
    const std::vector<std::string> argv = cli::launcher_argv(r);
    EXPECT_EQ(std::count(argv.begin(), argv.end(), "none"), 1);
    EXPECT_EQ(std::count(argv.begin(), argv.end(), "core"), 0);
}

// srun inside a Slurm allocation of 4 nodes: the tasks spread evenly, a dead task kills the step.
TEST(RunLine, SrunOnTheAllocationPinned) {
    cli::LaunchRequest r = request();
    r.launcher = cli::Launcher::srun;
    r.mpirun = "/usr/bin/srun";
    r.ranks = 32;
    cli::SlurmAllocation allocation;
    allocation.job_id = "99";
    allocation.nodes = cli::expand_slurm_hostlist("gpu[01-04]");
    r.layout = cli::place_ranks_on_allocation(allocation, 32);
    r.train_flags = {"--backend", "cuda"};
    EXPECT_EQ(cli::launcher_argv(r),
              (std::vector<std::string>{"/usr/bin/srun", "--nodes=4", "--ntasks=32", "--ntasks-per-node=8",
                                        "--kill-on-bad-exit=1", "--cpu-bind=none", "/opt/epochcast-train", "--backend",
                                        "cuda", "--trace-out", "/tmp/run.trace.json"}));
    r.ranks = 8;
    r.layout = cli::place_ranks_on_allocation(allocation, 8);
    r.train_flags = {"--threads", "12"};
    r.ps_ranks = 1;
    EXPECT_EQ(cli::launcher_argv(r),
              (std::vector<std::string>{"/usr/bin/srun", "--nodes=4", "--ntasks=8", "--ntasks-per-node=2",
                                        "--kill-on-bad-exit=1", "--cpus-per-task=12", "--cpu-bind=cores",
                                        "/opt/epochcast-train", "--threads", "12", "--ps-ranks", "1", "--trace-out",
                                        "/tmp/run.trace.json"}));
}

// What mpirun's -x passes to other hosts: the run's folder always (run sets it for mpirun), the
// paths and the NCCL, libfabric, UCX and OpenMP settings only when they are set.
TEST(RunLine, OnlyVariablesThatAreSetAreForwarded) {
    EXPECT_EQ(cli::forwarded_variables({"HOME=/root", "PATH=/usr/bin", "OMP_NUM_THREADS=4", "NCCL_DEBUG=INFO",
                                        "FI_PROVIDER=efa", "UCX_TLS=rc", "NCCL_ALGO=Ring", "NCCLX=1", "OMP_"}),
              (std::vector<std::string>{"EPOCHCAST_PROGRESS_DIR", "PATH", "FI_PROVIDER", "NCCL_ALGO", "NCCL_DEBUG",
                                        "OMP_NUM_THREADS", "UCX_TLS"}));
    EXPECT_EQ(cli::forwarded_variables({"LD_LIBRARY_PATH=", "PATH=/bin", "LD_LIBRARY_PATHS=/x"}),
              (std::vector<std::string>{"EPOCHCAST_PROGRESS_DIR", "PATH", "LD_LIBRARY_PATH"}));
    EXPECT_EQ(cli::forwarded_variables({}), (std::vector<std::string>{"EPOCHCAST_PROGRESS_DIR"}));
}

// srun's job steps run every PMIx fence as a ring (MPI_Init's barrier then holds every rank until
// all have reached it), unless the user chose a fence; mpirun's environment gets nothing.
TEST(RunLine, SrunStepsFenceAsARingUnlessTheUserChose) {
    EXPECT_EQ(cli::launcher_environment(cli::Launcher::srun, {"PATH=/bin", "SLURM_JOB_ID=7"}),
              (std::vector<std::string>{"SLURM_PMIX_FENCE=ring"}));
    EXPECT_EQ(cli::launcher_environment(cli::Launcher::srun, {"SLURM_PMIX_FENCES=tree"}),
              (std::vector<std::string>{"SLURM_PMIX_FENCE=ring"}));
    EXPECT_TRUE(cli::launcher_environment(cli::Launcher::srun, {"SLURM_PMIX_FENCE=tree"}).empty());
    EXPECT_TRUE(cli::launcher_environment(cli::Launcher::mpirun, {"PATH=/bin"}).empty());
}

// Slurm's refusals as srun words them (Slurm 22.05): a step the allocation cannot hold, an
// allocation that is gone; a task that failed after it started is no refusal.
TEST(RunLine, SlurmsRefusalIsFoundInSrunsOutputAndNamedAsBadInput) {
    EXPECT_EQ(cli::slurm_refusal("# all-reduce sweep\nsrun: error: Unable to create step for job 7: More processors "
                                 "requested than permitted\r\n"),
              "Unable to create step for job 7: More processors requested than permitted");
    EXPECT_EQ(cli::slurm_refusal("srun: error: Unable to confirm allocation for job 99: Invalid job id specified\n"
                                 "srun: Check SLURM_JOB_ID environment variable. Expired or invalid job 99\n"),
              "Unable to confirm allocation for job 99: Invalid job id specified");
    EXPECT_EQ(cli::slurm_refusal("srun: error: ec-h2: task 1: Exited with exit code 2\n"), std::nullopt);
    EXPECT_EQ(cli::slurm_refusal(""), std::nullopt);
    EXPECT_NO_THROW(cli::throw_if_slurm_refused("srun: error: ec-h2: task 1: Killed\n", {}, "the step"));

    const std::vector<std::string> argv = {
        "/usr/bin/srun",        "--nodes=2",         "--ntasks=8",       "--ntasks-per-node=4",
        "--kill-on-bad-exit=1", "--cpus-per-task=1", "--cpu-bind=cores", "/opt/epochcast-train"};
    const auto message = [&](const std::string& output) {
        try {
            cli::throw_if_slurm_refused(output, argv, "the training's job step");
        } catch (const InputError& error) {
            return std::string(error.what());
        }
        return std::string("no InputError");
    };
    EXPECT_EQ(message("srun: error: Unable to create step for job 7: More processors requested than permitted\n"),
              "Slurm refused the training's job step: Unable to create step for job 7: More processors requested "
              "than permitted (srun --nodes=2 --ntasks=8 --ntasks-per-node=4 --cpus-per-task=1 asks for more than "
              "the allocation holds: give fewer ranks with --np or fewer --threads, or allocate more)");
    EXPECT_EQ(message("srun: error: Unable to confirm allocation for job 99: Invalid job id specified\n"),
              "Slurm refused the training's job step: Unable to confirm allocation for job 99: Invalid job id "
              "specified (run inside a Slurm allocation that is still there: salloc, or an sbatch script)");
}

// A child whose stderr is not merged into what is captured (a table, a document to parse) still
// has its stderr in the tail that error messages quote: srun says there why Slurm refused a step.
TEST(RunChild, StderrKeptApartFromTheCapturedOutputIsInTheTail) {
    std::string captured;
    const cli::ChildExit exit =
        cli::run_child({"sh", "-c", "echo '{\"document\": 1}'; echo 'srun: error: refused' >&2; exit 1"}, nullptr,
                       &captured, /*merge_stderr=*/false);
    EXPECT_EQ(captured, "{\"document\": 1}\n");
    EXPECT_TRUE(exit.exited && exit.code == 1) << exit.describe();
    EXPECT_TRUE(contains(exit.output_tail, "srun: error: refused")) << exit.output_tail;
    EXPECT_TRUE(contains(exit.output_tail, "{\"document\": 1}")) << exit.output_tail;
}

TEST(RunLine, CommandLineQuotesWhatTheShellWouldSplit) {
    EXPECT_EQ(cli::command_line({"/usr/bin/mpirun", "-np", "2", "--data", "/data/image net", "it's"}),
              "/usr/bin/mpirun -np 2 --data '/data/image net' 'it'\\''s'");
}

/// A folder of executable scripts standing in for mpirun and epochcast-train, with
/// EPOCHCAST_TRAIN pointing at the fake trainer while the test runs.
class FakePrograms : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ =
            std::filesystem::temp_directory_path() / ("epochcast-run-test-" + std::to_string(::getpid()) + "-" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(dir_);
        // The trainer only describes the host (the catalog of host.json), and only with the
        // threads the trace says (2); anything else fails.
        write_script("epochcast-train",
                     "[ \"$1\" = --describe-host ] && [ \"$2\" = --threads ] && [ \"$3\" = 2 ] || exit 3\ncat '" +
                         path("host.json") + "'\n");
        std::ofstream(path("host.json")) << host_catalog().dump();
        // What epochcast-train --allreduce-sweep prints for 2 ranks: 2(n-1)/n = 1, so busbw = algbw.
        std::ofstream(path("sweep.txt"))
            << "# epochcast-train --allreduce-sweep: nranks 2, nodes 1, backend cpu (ring)\n"
               "#       size         count      type   redop     time   algbw   busbw  #wrong     time   algbw   "
               "busbw  #wrong\n"
               "        1024           256     float     sum    12.00    0.09    0.09       0    12.00    0.09    "
               "0.09       0\n"
               "     1048576        262144     float     sum   112.00    9.36    9.36       0   112.00    9.36    "
               "9.36       0\n"
               "    16777216       4194304     float     sum  1612.00   10.41   10.41       0  1612.00   10.41   "
               "10.41       0\n"
               "# Avg bus bandwidth    : 6.62\n";
        ::setenv("EPOCHCAST_TRAIN", path("epochcast-train").c_str(), 1);
        // The remote shell the watchdog reaches other hosts' ranks with (`rsh HOST COMMAND`): it
        // runs the command here, so that a process of this host stands in for another host's.
        write_script("rsh", "exec sh -c \"$2\"\n");
        ::setenv("OMPI_MCA_plm_rsh_agent", path("rsh").c_str(), 1);
    }
    void TearDown() override {
        ::unsetenv("OMPI_MCA_plm_rsh_agent");
        ::unsetenv("EPOCHCAST_TRAIN");
        std::filesystem::remove_all(dir_);
    }

    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    void write_script(const std::string& name, const std::string& body) const {
        std::ofstream(path(name)) << "#!/bin/sh\n" << body;
        ::chmod(path(name).c_str(), 0755);
    }

    /// An mpirun that records its arguments, prints a step table and copies `trace` to the
    /// --trace-out it was given. Asked to describe the host, it records those arguments apart and
    /// runs the trainer once with its flags.
    void write_mpirun_writing(const nlohmann::json& trace) const {
        std::ofstream(path("prepared.json")) << trace.dump();
        write_script("mpirun", "case \" $* \" in *\" --describe-host \"*) printf '%s\\n' \"$@\" > '" +
                                   path("describe-args") +
                                   "'; while [ \"$1\" != --bind-to ]; do shift; done; shift 2; exec \"$@\";; "
                                   "*\" --allreduce-sweep \"*) printf '%s\\n' \"$@\" > '" +
                                   path("sweep-args") + "'; cat '" + path("sweep.txt") +
                                   "'; exit 0;; esac\n"
                                   "printf '%s\\n' \"$@\" > '" +
                                   path("args") +
                                   "'\nout=''; prev=''\nfor a in \"$@\"; do [ \"$prev\" = --trace-out ] && out=$a; "
                                   "prev=$a; done\necho 'Step  Epoch  Speed(img/s)  Loss  LR'\n"
                                   "echo '   1   0.01          9.90  6.9100  0.1000'\ncp '" +
                                   path("prepared.json") + "' \"$out\"\necho 'measured: 9.87 img/s'\n");
    }

    std::vector<std::string> recorded_args(const std::string& file = "args") const {
        std::vector<std::string> args;
        std::ifstream in(path(file));
        for (std::string line; std::getline(in, line);) args.push_back(line);
        return args;
    }

    static nlohmann::json host_catalog() { return testing::local_cpu_catalog_json(); }

    /// One rank of 2 threads, ResNet-50 224 px, batch 16, bf16: 9.87 img/s measured.
    static nlohmann::json prepared_trace() {
        return {{"schema", "epochcast.trace/1"},
                {"runs",
                 {{{"source", "epochcast-train on test-host (Test CPU)"},
                   {"model", "resnet50"},
                   {"image_size", 224},
                   {"classes", 1000},
                   {"dataset_images", 1600},
                   {"instance", "local-cpu"},
                   {"nodes", 1},
                   {"gpus_per_node", 1},
                   {"framework", "epochcast"},
                   {"strategy", "ring"},
                   {"precision", "bf16"},
                   {"batch_per_gpu", 16},
                   {"measured",
                    {{"throughput_images_per_s", 9.87},
                     {"iteration_s", 1.6211},
                     {"phases_s", {{"compute", 1.6}, {"data_wait", 0.0011}, {"exposed_communication", 0.02}}},
                     {"loss", {6.91, 6.88}},
                     {"steps_timed", 2}}},
                   {"configuration", {{"backend", "cpu"}, {"ranks", 1}, {"threads", 2}, {"steps", 3}}},
                   {"host", {{"cpu_model", "Test CPU"}, {"isa", "avx512_core_bf16"}}}}}}};
    }

    /// The built-in model's prediction for the prepared run on the test host.
    static Prediction expected_prediction() {
        Catalog catalog = Catalog::built_in();
        catalog.merge(Catalog::parse(host_catalog().dump(), "host", catalog));
        const CostModel model(catalog, Calibration::built_in());
        Scenario s;
        s.instance = "local-cpu";
        s.nodes = 1;
        s.gpus_per_node = 1;
        s.batch_per_gpu = 16;
        s.precision = Precision::bf16;
        s.strategy = Strategy::ring;
        s.framework = Framework::epochcast;
        s.dataset_images = 1600;
        return model.predict(s);
    }

    std::filesystem::path dir_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST_F(FakePrograms, PredictedBesideMeasuredAfterASuccessfulRun) {
    write_mpirun_writing(prepared_trace());
    const testing::ProcessResult r =
        run_epochcast("run --np 1 --mpirun '" + path("mpirun") + "' --model resnet50 --precision bf16 --threads 2");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    // The trainer's output streamed through.
    EXPECT_TRUE(contains(r.out, "Step  Epoch  Speed(img/s)")) << r.out;
    EXPECT_TRUE(contains(r.out, "measured: 9.87 img/s")) << r.out;
    // The table: the measured figure, the model's prediction and the error between them.
    const Prediction p = expected_prediction();
    EXPECT_TRUE(contains(r.out, "throughput (img/s)")) << r.out;
    EXPECT_TRUE(contains(r.out, "9.87")) << r.out;
    EXPECT_TRUE(contains(r.out, cli::format_number(p.throughput_images_per_s, 2))) << r.out;
    EXPECT_TRUE(contains(r.out, cli::format_number(100.0 * (p.throughput_images_per_s / 9.87 - 1.0), 1) + " %"))
        << r.out;
    EXPECT_TRUE(contains(r.out, "1.6211")) << r.out;
    EXPECT_TRUE(contains(r.out, "95% band")) << r.out;

    // The mpirun line: our flags, then the trainer with the user's flags verbatim and a trace.
    const std::vector<std::string> args = recorded_args();
    ASSERT_GE(args.size(), 10U);
    EXPECT_EQ(args[0], "-np");
    EXPECT_EQ(args[1], "1");
    const auto train = std::find(args.begin(), args.end(), path("epochcast-train"));
    ASSERT_NE(train, args.end());
    EXPECT_EQ(std::vector<std::string>(train + 1, train + 7),
              (std::vector<std::string>{"--model", "resnet50", "--precision", "bf16", "--threads", "2"}));
    const auto trace = std::find(args.begin(), args.end(), "--trace-out");
    ASSERT_NE(trace, args.end());
    // The temporary trace is gone once the comparison is printed.
    EXPECT_FALSE(std::filesystem::exists(*(trace + 1))) << *(trace + 1);
}

TEST_F(FakePrograms, UsersTraceIsKeptAndHostCatalogCanBeGivenAndSaved) {
    write_mpirun_writing(prepared_trace());
    write_script("epochcast-train", "exit 3\n");  // --host-catalog: the trainer is not asked
    const std::string mine = path("mine.json");
    const testing::ProcessResult r = run_epochcast("run --np 1 --mpirun '" + path("mpirun") + "' --host-catalog '" +
                                                   path("host.json") + "' --threads 2 --trace-out '" + mine + "'");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(std::filesystem::exists(mine));
    EXPECT_TRUE(contains(r.out, cli::format_number(expected_prediction().throughput_images_per_s, 2))) << r.out;
    const std::vector<std::string> args = recorded_args();
    EXPECT_EQ(std::count(args.begin(), args.end(), "--trace-out"), 1);

    // Measured by the trainer and saved for calibration.
    write_script("epochcast-train",
                 "[ \"$1\" = --describe-host ] && [ \"$3\" = 2 ] || exit 3\ncat '" + path("host.json") + "'\n");
    const std::string saved = path("saved-host.json");
    const testing::ProcessResult again =
        run_epochcast("run --np 1 --mpirun '" + path("mpirun") + "' --save-host-catalog '" + saved + "' --threads 2");
    ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
    EXPECT_DOUBLE_EQ(Catalog::load(saved).gpu("local-cpu").bf16_tflops, 0.575);
}

// The host description's "nodes" (each node's ranks and measured peaks, read after the training)
// is the trainer's output: a count of ranks that is not a whole number from 1, or a negative peak,
// fails the run naming the field, where get<int> would have truncated 2.5 and wrapped 1e10.
TEST_F(FakePrograms, AHostDescriptionWithBadNodePeaksIsRefusedNamingThem) {
    write_mpirun_writing(prepared_trace());
    struct Case {
        nlohmann::json ranks;
        double peak;
        std::string says;
    };
    for (const Case& c :
         {Case{2.5, 1.0, "a node's \"ranks\" is not a whole number from 1 (got 2.5)"},
          Case{0, 1.0, "a node's \"ranks\" is not a whole number from 1 (got 0)"},
          Case{10000000000LL, 1.0, "(got 10000000000)"}, Case{1, -1.0, "a node's peaks are negative (node-a)"}}) {
        nlohmann::json described = host_catalog();
        described["nodes"] = {{{"host", "node-a"},
                               {"ranks", c.ranks},
                               {"fp32_tflops", c.peak},
                               {"bf16_tflops", 1.0},
                               {"memory_GBps", 10.0}}};
        std::ofstream(path("host.json")) << described.dump();
        const testing::ProcessResult r = run_epochcast("run --np 1 --mpirun '" + path("mpirun") + "' --threads 2");
        EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
        EXPECT_TRUE(contains(r.err, c.says)) << r.err;
    }
}

// With one thread per rank the host holds a rank per core, and they describe it together under
// the same mpirun (that is how their all-reduce gets measured); with a thread per core, the trainer
// alone.
TEST_F(FakePrograms, HostWithSeveralRanksIsDescribedByThemUnderMpirun) {
    nlohmann::json one_thread = prepared_trace();
    one_thread["runs"][0]["configuration"]["threads"] = 1;
    write_mpirun_writing(one_thread);
    write_script("epochcast-train",
                 "[ \"$1\" = --describe-host ] && [ \"$2\" = --threads ] && [ \"$3\" = 1 ] || exit 3\ncat '" +
                     path("host.json") + "'\n");
    const testing::ProcessResult r = run_epochcast("run --np 1 --mpirun '" + path("mpirun") + "' --threads 1");
    const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const std::vector<std::string> describe = recorded_args("describe-args");
    if (cores < 2) {
        EXPECT_TRUE(describe.empty());
        return;
    }
    ASSERT_GE(describe.size(), 8U);
    EXPECT_EQ(describe[0], "-np");
    EXPECT_EQ(describe[1], std::to_string(cores));
    EXPECT_EQ(std::vector<std::string>(describe.end() - 4, describe.end()),
              (std::vector<std::string>{path("epochcast-train"), "--describe-host", "--threads", "1"}));
    EXPECT_EQ(std::count(describe.begin(), describe.end(), "--trace-out"), 0);
}

TEST_F(FakePrograms, MissingMpirunFailsAtOnceNamingIt) {
    auto start = std::chrono::steady_clock::now();
    testing::ProcessResult r = run_epochcast("run --np 2 --mpirun /nonexistent/mpirun --threads 1");
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "/nonexistent/mpirun")) << r.err;

    const std::string saved_path = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", dir_.c_str(), 1);  // no mpirun in it
    r = run_epochcast("run --np 2 --threads 1");
    ::setenv("PATH", saved_path.c_str(), 1);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "mpirun not found on PATH")) << r.err;
    EXPECT_TRUE(contains(r.err, "openmpi-bin")) << r.err;
    EXPECT_LT(seconds_since(start), 10.0);
}

TEST_F(FakePrograms, RankThatDiesIsReportedWithinSecondsEvenWithAChildLeftBehind) {
    // mpirun fails, and a process it left behind still holds the output open for a while.
    write_script("mpirun", "echo 'step 1 of 3'\n(sleep 15) &\necho 'rank 1 died: exit code 134' >&2\nexit 1\n");
    const auto start = std::chrono::steady_clock::now();
    const testing::ProcessResult r =
        run_epochcast("run --np 2 --no-network-test --mpirun '" + path("mpirun") + "' --threads 1");
    EXPECT_LT(seconds_since(start), 8.0);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "mpirun exited with status 1")) << r.err;
    EXPECT_TRUE(contains(r.err, "rank 1 died")) << r.err;
    EXPECT_TRUE(contains(r.out, "step 1 of 3")) << r.out;  // streamed as it came
}

TEST_F(FakePrograms, MpirunKilledBySignalIsReported) {
    write_script("mpirun", "kill -9 $$\n");
    const testing::ProcessResult r = run_epochcast("run --np 1 --mpirun '" + path("mpirun") + "'");
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "killed by signal 9")) << r.err;
}

TEST_F(FakePrograms, RunThatWritesNoTraceFails) {
    write_script("mpirun", "echo 'all done'\n");
    const testing::ProcessResult r = run_epochcast("run --np 1 --mpirun '" + path("mpirun") + "'");
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "wrote no trace")) << r.err;
}

/// The progress folder `epochcast run` named on its first lines ("progress reports in DIR; ...").
std::string progress_folder(const std::string& out) {
    const std::string marker = "progress reports in ";
    const std::size_t begin = out.find(marker);
    if (begin == std::string::npos) return "";
    const std::size_t start = begin + marker.size();
    return out.substr(start, out.find(';', start) - start);
}

// The case: the trainer's exit 2 (bad input) became exit 1. When every rank that failed
// exited 2, `run` exits 2 with the trainer's one-line message, and leaves no progress folder.
TEST_F(FakePrograms, TrainersBadInputIsExitTwoWithItsMessage) {
    write_script("mpirun",
                 "echo '{\"rank\": 0, \"code\": 2, \"message\": \"--lr must be a positive finite number\"}' > "
                 "\"$EPOCHCAST_PROGRESS_DIR/rank-0.failed.json\"\n"
                 "echo '{\"rank\": 1, \"code\": 2, \"message\": \"--lr must be a positive finite number\"}' > "
                 "\"$EPOCHCAST_PROGRESS_DIR/rank-1.failed.json\"\n"
                 "echo 'epochcast-train (rank 0): error: --lr must be a positive finite number' >&2\nexit 1\n");
    const testing::ProcessResult r =
        run_epochcast("run --np 2 --no-network-test --mpirun '" + path("mpirun") + "' --lr 0");
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.err, "epochcast: error: epochcast-train (rank 0): --lr must be a positive finite number\n");
    const std::string folder = progress_folder(r.out);
    ASSERT_FALSE(folder.empty()) << r.out;
    EXPECT_FALSE(std::filesystem::exists(folder)) << folder;
}

// A rank that failed at run time (exit 1) makes the run fail (exit 1) whatever the others said,
// and its message is passed on.
TEST_F(FakePrograms, ARunFailureAmongBadInputsIsExitOne) {
    write_script(
        "mpirun",
        "echo '{\"rank\": 0, \"code\": 2, \"message\": \"bad\"}' > \"$EPOCHCAST_PROGRESS_DIR/rank-0.failed.json\"\n"
        "echo '{\"rank\": 1, \"code\": 1, \"message\": \"loss is NaN at step 3\"}' > "
        "\"$EPOCHCAST_PROGRESS_DIR/rank-1.failed.json\"\nexit 1\n");
    const testing::ProcessResult r = run_epochcast("run --np 2 --no-network-test --mpirun '" + path("mpirun") + "'");
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "epochcast-train (rank 1): loss is NaN at step 3")) << r.err;
}

/// This host's name, as the ranks report it.
std::string hostname() {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    return name;
}

// A rank that reports two steps and then makes no progress (it sleeps, as a stopped rank would;
// rank 0, on another host, did one step more and waits for it):
// with --watchdog 1, the job is killed and reported naming the rank and host, within the
// deadline + 10 s; the rank's process (which has the run's progress folder in its environment)
// is killed too.
TEST_F(FakePrograms, WatchdogKillsAJobWhoseRankMakesNoProgress) {
    write_script("mpirun",
                 "echo \"{\\\"rank\\\": 1, \\\"host\\\": \\\"$(uname -n)\\\", \\\"pid\\\": $$, "
                 "\\\"steps\\\": 2, \\\"slowest_step_s\\\": 0.25}\" > \"$EPOCHCAST_PROGRESS_DIR/rank-1.json\"\n"
                 "echo '{\"rank\": 0, \"host\": \"elsewhere\", \"pid\": 1, \"steps\": 3, \"slowest_step_s\": 0.2}' > "
                 "\"$EPOCHCAST_PROGRESS_DIR/rank-0.json\"\necho 'step 2 done'\nexec sleep 60\n");
    const auto start = std::chrono::steady_clock::now();
    const testing::ProcessResult r =
        run_epochcast("run --np 2 --no-network-test --watchdog 1 --mpirun '" + path("mpirun") + "'");
    const double elapsed = seconds_since(start);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_LT(elapsed, 1 + 10.0);
    EXPECT_TRUE(contains(r.err, "rank 1 on host " + hostname() + " made no progress for")) << r.err;
    EXPECT_TRUE(contains(r.err, "the slowest step so far took 0.25 s")) << r.err;
    EXPECT_TRUE(contains(r.err, "the job was killed")) << r.err;
    EXPECT_TRUE(contains(r.out, "watchdog: 1 s without a step")) << r.out;
}

// --watchdog 0 turns it off (the run ends by itself here), and a bad value is bad input.
TEST_F(FakePrograms, WatchdogCanBeTurnedOffAndRefusesBadValues) {
    write_script("mpirun",
                 "echo '{\"rank\": 0, \"host\": \"h\", \"pid\": 1, \"steps\": 1, \"slowest_step_s\": 0.1}' > "
                 "\"$EPOCHCAST_PROGRESS_DIR/rank-0.json\"\nsleep 2\necho done\n");
    const testing::ProcessResult r = run_epochcast("run --np 1 --watchdog 0 --mpirun '" + path("mpirun") + "'");
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // the fake writes no trace
    EXPECT_TRUE(contains(r.err, "wrote no trace")) << r.err;
    EXPECT_TRUE(contains(r.out, "watchdog: off")) << r.out;
    // Issue 59, item 15: 1e300 printed 301 digits, 1e-300 "0 s" (and killed the job at its second step).
    for (const char* value : {"-1", "nan", "inf", "1e300", "1e-300", "0.5"}) {
        const testing::ProcessResult bad =
            run_epochcast(std::string("run --np 1 --watchdog ") + value + " --mpirun '" + path("mpirun") + "'");
        EXPECT_EQ(bad.exit_code, 2) << value << ": " << bad.err;
        EXPECT_EQ(bad.err,
                  "epochcast: error: run: --watchdog must be 0 (off) or from 1 to 31,536,000 seconds (a year)\n")
            << value;
    }
}

/// Writes rank `rank`'s progress report into `folder`, as epochcast-train does.
void write_report(const std::string& folder, int rank, long long steps, double slowest_s, pid_t pid = 1,
                  const std::string& host = "elsewhere") {
    std::ofstream(folder + "/rank-" + std::to_string(rank) + ".json")
        << nlohmann::json{{"rank", rank}, {"host", host}, {"pid", pid}, {"steps", steps}, {"slowest_step_s", slowest_s}}
               .dump();
}

/// Checks `watchdog` every second of made-up time from `from` to `to` (seconds after `start`);
/// the first message, if any, and when.
std::optional<std::pair<double, std::string>> first_stall(cli::Watchdog& watchdog,
                                                          cli::Watchdog::Clock::time_point start, int from, int to) {
    for (int second = from; second <= to; ++second) {
        if (auto message = watchdog.check(start + std::chrono::seconds(second)))
            return std::pair{double(second), *message};
    }
    return std::nullopt;
}

// The default deadline: 10 x the slowest step any rank reported, never under 300 s; start-up (no
// step done yet) gets 300 s even when --watchdog asks for less.
TEST_F(FakePrograms, WatchdogDeadlinesFollowTheSlowestStepWithAStartUpFloor) {
    const auto start = cli::Watchdog::Clock::now();
    {
        cli::Watchdog watchdog(dir_, 2, std::nullopt, start);
        write_report(path(""), 0, 3, 40.0);
        write_report(path(""), 1, 3, 2.0);
        const auto stall = first_stall(watchdog, start, 0, 500);
        ASSERT_TRUE(stall);
        EXPECT_EQ(stall->first, 401) << stall->second;  // 10 x 40 s, not 300
        EXPECT_TRUE(contains(stall->second, "rank 0 on host elsewhere made no progress for 401 s")) << stall->second;
        EXPECT_TRUE(contains(stall->second, "deadline 400 s; 3 steps done, the slowest step so far took 40 s"))
            << stall->second;
    }
    {
        cli::Watchdog watchdog(dir_, 2, std::nullopt, start);
        write_report(path(""), 0, 3, 0.25);
        write_report(path(""), 1, 2, 0.25);  // one step behind: the others wait for it
        const auto stall = first_stall(watchdog, start, 0, 500);
        ASSERT_TRUE(stall);
        EXPECT_EQ(stall->first, 301);
        EXPECT_TRUE(contains(stall->second, "rank 1 on host elsewhere")) << stall->second;
    }
    {
        cli::Watchdog watchdog(dir_, 2, 3.0, start);  // --watchdog 3: after the first step only
        write_report(path(""), 0, 0, 0);
        write_report(path(""), 1, 5, 0.5);
        const auto stall = first_stall(watchdog, start, 0, 500);
        ASSERT_TRUE(stall);
        EXPECT_EQ(stall->first, 4);  // rank 1, 3 s after its last step
        EXPECT_TRUE(contains(stall->second, "rank 1")) << stall->second;
        for (int second = 5; second <= 300; ++second) {  // rank 1 moves on each second; rank 0 is still starting
            write_report(path(""), 1, 100 + second, 0.5);
            ASSERT_FALSE(watchdog.check(start + std::chrono::seconds(second))) << second;
        }
        write_report(path(""), 1, 401, 0.5);
        const auto starting = first_stall(watchdog, start, 301, 301);
        ASSERT_TRUE(starting);
        EXPECT_TRUE(contains(starting->second,
                             "rank 0 on host elsewhere made no progress for 301 s (deadline 300 s; 0 "
                             "steps done, still starting)"))
            << starting->second;
    }
    {
        for (const char* name : {"rank-0.json", "rank-1.json"}) std::filesystem::remove(dir_ / name);
        cli::Watchdog watchdog(dir_, 3, std::nullopt, start);  // no rank reports
        const auto stall = first_stall(watchdog, start, 0, 400);
        ASSERT_TRUE(stall);
        EXPECT_TRUE(contains(stall->second, "rank 0 made no progress for 301 s: it has not started")) << stall->second;
    }
}

// Time during which `epochcast run` did not run (Ctrl-Z stops the ranks too) is not held against
// the ranks: a gap between checks of more than 5 s is left out.
TEST_F(FakePrograms, WatchdogLeavesOutTimeItWasNotRunning) {
    const auto start = cli::Watchdog::Clock::now();
    cli::Watchdog watchdog(dir_, 1, 3.0, start);
    write_report(path(""), 0, 4, 0.1);
    EXPECT_FALSE(watchdog.check(start + std::chrono::seconds(1)));
    EXPECT_FALSE(watchdog.check(start + std::chrono::seconds(600)));  // suspended for 10 minutes
    EXPECT_FALSE(watchdog.check(start + std::chrono::seconds(602)));
    EXPECT_TRUE(watchdog.check(start + std::chrono::seconds(604)));
}

/// A child process that waits for a signal, stopped with SIGSTOP: returns once it has stopped.
void start_stopped_child(pid_t& child) {
    child = ::fork();
    if (child == 0) {
        ::pause();
        ::_exit(0);
    }
    ASSERT_GT(child, 0);
    ASSERT_EQ(::kill(child, SIGSTOP), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, WUNTRACED), child);  // it has stopped
}

// Among ranks that all stopped reporting, a stopped process is the one named, even when another
// rank did fewer steps; kill_ranks leaves alone a process that is not one of the run's ranks.
TEST_F(FakePrograms, WatchdogNamesTheStoppedProcess) {
    pid_t child = 0;
    ASSERT_NO_FATAL_FAILURE(start_stopped_child(child));
    const auto start = cli::Watchdog::Clock::now();
    cli::Watchdog watchdog(dir_, 2, 2.0, start);
    write_report(path(""), 0, 3, 0.1, ::getpid(), hostname());
    write_report(path(""), 1, 4, 0.1, child, hostname());
    const auto stall = first_stall(watchdog, start, 0, 10);
    watchdog.kill_ranks();  // neither has the run's progress folder in its environment
    const bool survived = ::kill(child, 0) == 0;
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    ASSERT_TRUE(stall);
    EXPECT_TRUE(contains(stall->second, "rank 1 on host " + hostname())) << stall->second;
    EXPECT_TRUE(contains(stall->second, "its process " + std::to_string(child) + " is stopped")) << stall->second;
    EXPECT_TRUE(survived);
}

// The race the Watchdog test lost under load: the rank that is stopped reported its last
// step after the rank that now waits for it in the all-reduce, so the waiting rank passes the
// deadline first. The stopped process is still the one named.
TEST_F(FakePrograms, WatchdogNamesTheStoppedProcessBeforeItsOwnDeadline) {
    pid_t child = 0;
    ASSERT_NO_FATAL_FAILURE(start_stopped_child(child));
    const auto start = cli::Watchdog::Clock::now();
    cli::Watchdog watchdog(dir_, 2, 2.0, start);
    write_report(path(""), 0, 3, 0.1, ::getpid(), hostname());
    write_report(path(""), 1, 3, 0.1, child, hostname());
    EXPECT_FALSE(watchdog.check(start + std::chrono::seconds(1)));
    write_report(path(""), 1, 4, 0.1, child, hostname());  // rank 1's last step, a second later
    EXPECT_FALSE(watchdog.check(start + std::chrono::seconds(2)));
    const auto stall = watchdog.check(start + std::chrono::seconds(4));  // rank 0 silent 3 s, rank 1 2 s
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    ASSERT_TRUE(stall);
    EXPECT_TRUE(contains(*stall, "rank 1 on host " + hostname() + " made no progress for 2 s")) << *stall;
    EXPECT_TRUE(contains(*stall, "its process " + std::to_string(child) + " is stopped")) << *stall;
}

// A rank on another host that is stopped (issue 44: on the namespaced cluster the watchdog named
// rank 0 on this host, which only waited for it, since it looked at this host's processes only).
// The other host is asked through the remote shell (here a stand-in running the command on this
// host, where the stopped process is); kill_ranks kills it there, as it is one of the run's ranks.
TEST_F(FakePrograms, WatchdogNamesAndKillsAStoppedRankOnAnotherHost) {
    const std::string ours = std::string(kProgressDirVariable) + "=" + dir_.string();
    int exec_pipe[2];  // closed (close-on-exec) once the child runs sleep with the run's variable
    ASSERT_EQ(::pipe2(exec_pipe, O_CLOEXEC), 0);
    const pid_t child = ::fork();
    if (child == 0) {
        char* const argv[] = {const_cast<char*>("sleep"), const_cast<char*>("60"), nullptr};
        char* const environment[] = {const_cast<char*>(ours.c_str()), nullptr};
        ::execve("/bin/sleep", argv, environment);
        ::_exit(127);
    }
    ::close(exec_pipe[1]);
    char byte = 0;
    while (::read(exec_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    ::close(exec_pipe[0]);
    ASSERT_GT(child, 0);
    ASSERT_EQ(::kill(child, SIGSTOP), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, WUNTRACED), child);
    const auto start = cli::Watchdog::Clock::now();
    cli::Watchdog watchdog(dir_, 2, 2.0, start);
    write_report(path(""), 0, 3, 0.1, ::getpid(), hostname());
    write_report(path(""), 1, 3, 0.1, child, "node2-elsewhere");
    const auto stall = first_stall(watchdog, start, 0, 10);
    watchdog.kill_ranks();  // rank 0 (this test) lacks the run's folder in its environment: left alone
    pid_t ended = 0;
    for (int tries = 0; tries < 250 && ended == 0; ++tries) {  // SIGKILL ends it at once; 5 s at most
        ended = ::waitpid(child, &status, WNOHANG);
        if (ended == 0) ::usleep(20000);
    }
    if (ended == 0) {  // not killed: ours to end
        ::kill(child, SIGKILL);
        ::waitpid(child, nullptr, 0);
    }
    ASSERT_TRUE(stall);
    EXPECT_TRUE(contains(stall->second, "rank 1 on host node2-elsewhere made no progress")) << stall->second;
    EXPECT_TRUE(contains(stall->second, "its process " + std::to_string(child) + " is stopped")) << stall->second;
    EXPECT_EQ(ended, child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
}

TEST_F(FakePrograms, BadRankCountsAreBadInput) {
    write_mpirun_writing(prepared_trace());
    for (const char* flags : {"--np 0", "--np 2 --ps-ranks 2", "--np 2 --ps-ranks -1", "--ps-ranks 1"}) {
        const testing::ProcessResult r =
            run_epochcast(std::string("run ") + flags + " --mpirun '" + path("mpirun") + "'");
        EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
        EXPECT_FALSE(std::filesystem::exists(path("args"))) << flags << ": mpirun must not start";
    }
    const testing::ProcessResult r = run_epochcast("run --np 2 --ps-ranks 2 --mpirun '" + path("mpirun") + "'");
    EXPECT_TRUE(contains(r.err, "--ps-ranks")) << r.err;
}

// Issue 42, item 7: epochcast-train's flags beyond what it runs (libgomp crashed on --threads
// 100000, --data-threads 100000 ran out of processes, --classes 2147483647 out of memory, --classes
// 0 trained 1000) are refused by run itself, one line naming the flag, before mpirun starts. The
// batch of 10^6 ResNet-50 images at 224 px needs some 100 TiB, more than any host has.
TEST_F(FakePrograms, TrainerFlagsBeyondWhatTheHostRunsAreRefusedBeforeMpirunStarts) {
    write_mpirun_writing(prepared_trace());
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"--threads 100000", "--threads 100000 is more than this host runs"},
        {"--data-threads=100000", "--data-threads 100000 is more than this host runs"},
        {"--classes 2147483647", "--classes must be 1 to 1,000,000 (got 2147483647)"},
        {"--classes 0", "--classes must be 1 to 1,000,000 (got 0)"},
        {"--batch-per-gpu 100000000", "--batch-per-gpu must be 1 to 1,000,000 images (got 100000000)"},
        {"--batch-per-gpu 1000000", "more than this host's"},
        {"--image-size 100000", "--image-size must be 32 to 4,096 px (got 100000)"},
        {"--threads 0", "--threads must be at least 1 (got 0)"}};
    for (const auto& [flags, message] : cases) {
        const testing::ProcessResult r = run_epochcast("run --np 1 --mpirun '" + path("mpirun") + "' " + flags);
        EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
        EXPECT_TRUE(contains(r.err, message)) << flags << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << flags << ": " << r.err;
        EXPECT_FALSE(std::filesystem::exists(path("args"))) << flags << ": mpirun must not start";
    }
    // A value that is no number is the trainer's to name; within bounds the run starts.
    const testing::ProcessResult r =
        run_epochcast("run --np 1 --mpirun '" + path("mpirun") + "' --threads 2 --classes 10 --batch-per-gpu 16");
    EXPECT_TRUE(std::filesystem::exists(path("args"))) << r.err;
}

// The hostfile case with stand-ins: `localhost slots=2`, 2 ranks. The line names the host
// with its ranks; no other host, so nothing is checked over ssh; the all-reduce sweep runs first
// with the same layout and is fitted; the trace written holds the launcher line and the network.
TEST_F(FakePrograms, HostfileRunRecordsTheLauncherLineAndTheNetwork) {
    nlohmann::json two = prepared_trace();
    two["runs"][0]["gpus_per_node"] = 2;
    two["runs"][0]["configuration"]["ranks"] = 2;
    two["runs"][0]["configuration"]["threads"] = 1;
    write_mpirun_writing(two);
    write_script("epochcast-train",
                 "[ \"$1\" = --describe-host ] && [ \"$3\" = 1 ] || exit 3\ncat '" + path("host.json") + "'\n");
    std::ofstream(path("hosts")) << "localhost slots=2\n";
    const std::string trace = path("run.json");
    const testing::ProcessResult r =
        run_epochcast("run --hostfile '" + path("hosts") + "' --np 2 --mpirun '" + path("mpirun") +
                      "' --threads 1 --network-test-max-mib 16 --trace-out '" + trace + "'");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_FALSE(contains(r.out, "checking")) << r.out;  // localhost is this host: no ssh
    const std::vector<std::string> args = recorded_args();
    const std::vector<std::string> placed = {"--host", "localhost:2", "--map-by", "ppr:2:node"};
    EXPECT_TRUE(std::search(args.begin(), args.end(), placed.begin(), placed.end()) != args.end());
    const std::vector<std::string> sweep = recorded_args("sweep-args");
    EXPECT_TRUE(std::search(sweep.begin(), sweep.end(), placed.begin(), placed.end()) != sweep.end());
    const std::vector<std::string> sized = {"--allreduce-sweep", "--sweep-max-bytes", "16777216"};
    EXPECT_TRUE(std::search(sweep.begin(), sweep.end(), sized.begin(), sized.end()) != sweep.end());
    EXPECT_TRUE(contains(r.out, "All-reduce across the ranks, measured beside the catalog's local-cpu")) << r.out;
    EXPECT_TRUE(contains(r.out, "10.41")) << r.out;

    const nlohmann::json written = nlohmann::json::parse(testing::read_text(trace));
    const nlohmann::json& launch = written["runs"][0]["launch"];
    EXPECT_EQ(launch["launcher"], "mpirun");
    EXPECT_EQ(launch["hosts"], nlohmann::json::array({"localhost"}));
    EXPECT_EQ(launch["ranks_per_node"], 2);
    EXPECT_TRUE(contains(launch["command"].get<std::string>(), "--host localhost:2 --map-by ppr:2:node"));
    ASSERT_EQ(written["networks"].size(), 1U);
    const nlohmann::json& network = written["networks"][0];
    EXPECT_EQ(network["instance"], "local-cpu");
    EXPECT_EQ(network["ranks"], 2);
    EXPECT_EQ(network["samples"].size(), 3U);
    // The fit of t = alpha + S / B through the rows: B near the large-message 10.4 GB/s.
    EXPECT_NEAR(network["bus_bandwidth_GBps"].get<double>(), 10.4, 0.2);
    EXPECT_EQ(network["max_bus_bandwidth_GBps"], 10.41);
}

// --instance names a catalog instance: checked before anything starts, passed to the trainer, and
// the hosts are not measured (the catalog describes them).
TEST_F(FakePrograms, InstanceIsCheckedAndPassedAndTheHostsAreNotMeasured) {
    nlohmann::json lab = prepared_trace();
    lab["runs"][0]["instance"] = "lab-node";
    write_mpirun_writing(lab);
    write_script("epochcast-train", "exit 3\n");  // not asked to describe the host
    nlohmann::json catalog = host_catalog();
    catalog["gpus"][0]["name"] = "lab-cpu";
    catalog["gpus"][0]["kind"] = "cpu";
    catalog["instances"][0]["name"] = "lab-node";
    catalog["instances"][0]["gpu"] = "lab-cpu";
    std::ofstream(path("lab.json")) << catalog.dump();
    const testing::ProcessResult r = run_epochcast("run --np 1 --mpirun '" + path("mpirun") + "' --catalog '" +
                                                   path("lab.json") + "' --instance lab-node --threads 2");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const std::vector<std::string> args = recorded_args();
    const std::vector<std::string> named = {"--instance", "lab-node"};
    EXPECT_TRUE(std::search(args.begin(), args.end(), named.begin(), named.end()) != args.end());
    EXPECT_TRUE(contains(r.out, "beside measured, lab-node x 1 node x 1 rank x 2 threads")) << r.out;

    for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
             {"--instance no-such-type", "unknown instance 'no-such-type'"},
             {"--instance p4d.24xlarge", "--instance p4d.24xlarge has GPUs"},
             {"--backend cuda", "--backend cuda needs --instance NAME"}}) {
        const testing::ProcessResult bad = run_epochcast("run --np 1 --mpirun '" + path("mpirun") + "' " + flags);
        EXPECT_EQ(bad.exit_code, 2) << flags << ": " << bad.err;
        EXPECT_TRUE(contains(bad.err, message)) << flags << ": " << bad.err;
    }
    const testing::ProcessResult many =
        run_epochcast("run --host gpu1:16 --mpirun '" + path("mpirun") + "' --backend cuda --instance p4d.24xlarge");
    EXPECT_EQ(many.exit_code, 2) << many.err;
    EXPECT_TRUE(contains(many.err, "has 8 GPUs, and 16 ranks would run on each node")) << many.err;
}

// A hostfile naming a host that cannot be reached fails before mpirun starts, within seconds,
// naming the host (a remote shell standing in for ssh that cannot connect), and leaves no run
// folder in the shared folder.
TEST_F(FakePrograms, UnreachableHostFailsFastNamingIt) {
    write_mpirun_writing(prepared_trace());
    write_script("rsh", "echo \"ssh: connect to host $1 port 22: No route to host\" >&2\nexit 255\n");
    std::ofstream(path("hosts")) << "localhost slots=1\nnode-17.cluster slots=1\n";
    std::filesystem::create_directories(path("shared"));
    ::setenv("OMPI_MCA_plm_rsh_agent", path("rsh").c_str(), 1);
    const auto start = std::chrono::steady_clock::now();
    const testing::ProcessResult r = run_epochcast("run --hostfile '" + path("hosts") + "' --shared-dir '" +
                                                   path("shared") + "' --mpirun '" + path("mpirun") + "'");
    ::unsetenv("OMPI_MCA_plm_rsh_agent");
    EXPECT_LT(seconds_since(start), 30.0);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(r.err, "epochcast: failed: host node-17.cluster is unreachable (" + path("rsh") +
                         " exited with status 255: ssh: connect to host node-17.cluster port 22: No route to host)\n");
    EXPECT_FALSE(std::filesystem::exists(path("args"))) << "mpirun must not start";
    EXPECT_TRUE(std::filesystem::is_empty(path("shared")));
}

// Issue 44: with LD_LIBRARY_PATH unset, the line across hosts passed `-x LD_LIBRARY_PATH` and
// Open MPI's mpirun warned of it on every run; a variable is forwarded only when it is set.
TEST_F(FakePrograms, AVariableThatIsNotSetIsNotForwardedToOtherHosts) {
    write_mpirun_writing(prepared_trace());
    std::ofstream(path("hosts")) << "localhost slots=1\nnode-b slots=1\n";  // node-b: the rsh stand-in, here
    const std::string command = "run --hostfile '" + path("hosts") + "' --shared-dir '" + path("") +
                                "' --host-catalog '" + path("host.json") + "' --no-network-test --mpirun '" +
                                path("mpirun") + "'";
    const char* saved = std::getenv("LD_LIBRARY_PATH");
    const std::optional<std::string> library_path = saved ? std::optional<std::string>(saved) : std::nullopt;
    ::unsetenv("LD_LIBRARY_PATH");
    const testing::ProcessResult unset = run_epochcast(command);
    const std::vector<std::string> unset_args = recorded_args();
    ::setenv("LD_LIBRARY_PATH", "/opt/epochcast/lib", 1);
    const testing::ProcessResult set = run_epochcast(command);
    const std::vector<std::string> set_args = recorded_args();
    if (library_path) {
        ::setenv("LD_LIBRARY_PATH", library_path->c_str(), 1);
    } else {
        ::unsetenv("LD_LIBRARY_PATH");
    }
    ASSERT_EQ(unset.exit_code, 0) << unset.out << unset.err;
    ASSERT_EQ(set.exit_code, 0) << set.out << set.err;
    const auto passes = [](const std::vector<std::string>& args, const std::string& name) {
        const std::vector<std::string> x = {"-x", name};
        return std::search(args.begin(), args.end(), x.begin(), x.end()) != args.end();
    };
    EXPECT_TRUE(passes(unset_args, "PATH")) << cli::command_line(unset_args);
    EXPECT_FALSE(passes(unset_args, "LD_LIBRARY_PATH")) << cli::command_line(unset_args);
    EXPECT_TRUE(passes(set_args, "LD_LIBRARY_PATH")) << cli::command_line(set_args);
}

// Issue 44: a job step that Slurm refuses inside the allocation (more ranks per node than its
// CPUs) is bad input named in one line, exit 2, with nothing left in the shared folder (srun's own
// line passes through before it, as a launcher's stderr does); before, srun's reason went to the
// terminal unread and `run` failed (exit 1) on "a rank failed".
TEST_F(FakePrograms, AJobStepSlurmRefusesIsBadInputNamingWhy) {
    // The hosts' check runs (one task per node, each answering), every other step is refused.
    write_script("srun",
                 "case \" $* \" in *\" sh -c \"*) echo 'EPOCHCAST-CHECK n1 ok'; echo 'EPOCHCAST-CHECK n2 ok'; "
                 "exit 0;; esac\necho 'srun: error: Unable to create step for job 7: More processors requested than "
                 "permitted' >&2\nexit 1\n");
    std::filesystem::create_directories(path("shared"));
    ::setenv("SLURM_JOB_ID", "7", 1);
    ::setenv("SLURM_JOB_NODELIST", "n[1-2]", 1);
    const std::string command =
        "run --launcher srun --np 8 --srun '" + path("srun") + "' --shared-dir '" + path("shared") + "'";
    const testing::ProcessResult sweep = run_epochcast(command);
    const testing::ProcessResult training = run_epochcast(command + " --no-network-test --threads 2");
    ::unsetenv("SLURM_JOB_ID");
    ::unsetenv("SLURM_JOB_NODELIST");
    EXPECT_EQ(sweep.exit_code, 2) << sweep.out << sweep.err;
    // The nodes were checked through srun, this one among them if it were one: not "other hosts".
    EXPECT_TRUE(contains(sweep.out, "epochcast run: checking the 2 nodes of Slurm job 7 through srun (")) << sweep.out;
    EXPECT_EQ(sweep.err.substr(sweep.err.find("epochcast: ")),
              "epochcast: error: Slurm refused the all-reduce sweep's job step: Unable to create step for job 7: "
              "More processors requested than permitted (srun --nodes=2 --ntasks=8 --ntasks-per-node=4 "
              "--cpus-per-task=1 asks for more than the allocation holds: give fewer ranks with --np or fewer "
              "--threads, or allocate more)\n");
    EXPECT_EQ(training.exit_code, 2) << training.out << training.err;
    EXPECT_TRUE(contains(training.err,
                         "epochcast: error: Slurm refused the training's job step: Unable to create "
                         "step for job 7"))
        << training.err;
    EXPECT_TRUE(contains(training.err, "--ntasks-per-node=4 --cpus-per-task=2 asks")) << training.err;
    EXPECT_TRUE(std::filesystem::is_empty(path("shared")));
}

// The same with the real ssh, where there is one: a name that cannot resolve.
TEST_F(FakePrograms, UnreachableHostFailsFastWithRealSsh) {
    if (!cli::find_program("ssh")) GTEST_SKIP() << "no ssh on PATH";
    write_mpirun_writing(prepared_trace());
    ::unsetenv("OMPI_MCA_plm_rsh_agent");
    const auto start = std::chrono::steady_clock::now();
    const testing::ProcessResult r =
        run_epochcast("run --host localhost:1,epochcast-test-host.invalid:1 --shared-dir '" + path("") +
                      "' --mpirun '" + path("mpirun") + "'");
    EXPECT_LT(seconds_since(start), 30.0);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "host epochcast-test-host.invalid ")) << r.err;
    EXPECT_FALSE(std::filesystem::exists(path("args"))) << "mpirun must not start";
}

// A rank that dies on another host is named with its host: from its failure report, or from
// what Open MPI's mpirun says when the rank was killed without one.
TEST_F(FakePrograms, ARankThatDiesIsNamedWithItsHost) {
    write_script("mpirun",
                 "echo '{\"rank\": 3, \"code\": 1, \"host\": \"node-b\", \"message\": \"CUDA error: out of "
                 "memory\"}' > \"$EPOCHCAST_PROGRESS_DIR/rank-3.failed.json\"\nexit 1\n");
    testing::ProcessResult r = run_epochcast("run --np 4 --no-network-test --mpirun '" + path("mpirun") + "'");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "epochcast-train (rank 3 on node-b): CUDA error: out of memory")) << r.err;
    write_script("mpirun",
                 "echo 'mpirun noticed that process rank 5 with PID 0 on node node-c exited on signal 9 (Killed).' "
                 ">&2\nexit 137\n");
    r = run_epochcast("run --np 8 --no-network-test --mpirun '" + path("mpirun") + "'");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "(rank 5 on host node-c was killed by signal 9 (Killed))")) << r.err;
}

// Issue 44: a rank killed on another host, while the survivor died first of its lost connection
// (Open MPI's ob1 "writev failed: Connection reset by peer"), so that mpirun names only the
// survivor's exit. The killed rank's supervisor reported it (rank-1.died.json), and so did rank 0's
// after the teardown, later: run names the first to die, not the survivor or the teardown.
TEST_F(FakePrograms, ARankKilledBySignalIsNamedFromItsSupervisorsReport) {
    write_script("mpirun",
                 "d=\"$EPOCHCAST_PROGRESS_DIR\"\n"
                 "echo '{\"rank\": 1, \"host\": \"node-b\", \"pid\": 77, \"signal\": 9, \"time_s\": 1000.5}' "
                 "> \"$d/rank-1.died.json\"\n"
                 "echo '{\"rank\": 0, \"host\": \"node-a\", \"pid\": 76, \"signal\": 15, \"time_s\": 1001}' "
                 "> \"$d/rank-0.died.json\"\n"
                 "echo '{\"rank\": 2, \"host\": \"node-c\", \"code\": 1, \"message\": \"MPI error: lost a peer\"}' "
                 "> \"$d/rank-2.failed.json\"\n"
                 "echo 'mca_btl_tcp_frag_send: writev failed: Connection reset by peer (104)' >&2\n"
                 "echo 'mpirun detected that one or more processes exited with non-zero status' >&2\n"
                 "exit 1\n");
    testing::ProcessResult r = run_epochcast("run --np 3 --no-network-test --mpirun '" + path("mpirun") + "'");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "mpirun exited with status 1 (rank 1 on host node-b was killed by signal 9 (Killed))"))
        << r.err;
    // Reports that are not a death (a signal out of range, no time) are left out.
    write_script(
        "mpirun",
        "d=\"$EPOCHCAST_PROGRESS_DIR\"\n"
        "echo '{\"rank\": 1, \"host\": \"node-b\", \"signal\": 1e9, \"time_s\": 1}' > \"$d/rank-1.died.json\"\n"
        "echo '{\"rank\": 2, \"host\": \"node-c\", \"signal\": 9}' > \"$d/rank-2.died.json\"\n"
        "exit 1\n");
    r = run_epochcast("run --np 3 --no-network-test --mpirun '" + path("mpirun") + "'");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "mpirun exited with status 1 (a rank failed or was killed)")) << r.err;
}

// Ctrl-C on `run` stops the job (the stand-in mpirun would sleep a minute) and removes the run's
// folder: what is left behind on a shared filesystem is every user's clutter.
TEST_F(FakePrograms, CtrlCStopsTheJobAndLeavesNoRunFolder) {
    write_script("mpirun", "exec sleep 60\n");
    std::filesystem::create_directories(path("shared"));
    const auto start = std::chrono::steady_clock::now();
    const testing::ProcessResult r =
        testing::run_command(std::string("timeout --preserve-status -s INT 2 '") + EPOCHCAST_CLI_PATH +
                             "' run --np 1 --shared-dir '" + path("shared") + "' --mpirun '" + path("mpirun") + "'");
    EXPECT_LT(seconds_since(start), 2 + cli::kKillGraceS + 3);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "interrupted by Ctrl-C during the training; the job was stopped")) << r.err;
    EXPECT_TRUE(std::filesystem::is_empty(path("shared")));
}

// Issue 42, item 8: `kill -KILL` of run left mpirun (and its ranks) training. The launcher dies
// with run: here a stand-in mpirun that only waits (as `sleep`, which catches no signal).
TEST_F(FakePrograms, KillingRunEndsTheLauncher) {
    write_script("mpirun", "exec sleep 600\n");
    std::filesystem::create_directories(path("shared"));
    const pid_t run = testing::start_process({testing::test_program(EPOCHCAST_CLI_PATH), "run", "--np", "1",
                                              "--shared-dir", path("shared"), "--mpirun", path("mpirun")},
                                             path("out"), path("err"));
    ASSERT_GT(run, 0);
    std::vector<pid_t> children;
    const bool started = testing::wait_until(
        [&] {
            children = testing::descendants(run);
            return std::any_of(children.begin(), children.end(),
                               [](pid_t pid) { return contains(testing::command_line_of(pid), "sleep 600"); });
        },
        std::chrono::seconds(120));
    ::kill(run, SIGKILL);
    ::waitpid(run, nullptr, 0);
    ASSERT_TRUE(started) << testing::read_text(path("err"));
    EXPECT_TRUE(testing::all_gone(children, std::chrono::seconds(60)));
}

// Issue 44: Open MPI keeps its session folder in mpirun's TMPDIR and leaves it there when mpirun is
// killed. run gives mpirun a temporary folder of the run's own and removes it however the job
// ends: here Ctrl-C, with a stand-in mpirun that makes a session folder in its TMPDIR and ignores
// SIGTERM, so that run kills it with SIGKILL after the grace period. The folder is in the run's
// folder, or in run's TMPDIR when the run's folder is shared with another host (node-b: the rsh
// stand-in, here); nothing is left in either.
TEST_F(FakePrograms, AKilledMpirunLeavesNothingInTheTemporaryFolder) {
    write_script("mpirun", "trap '' TERM\nmkdir -p \"$TMPDIR/ompi.test-host.0/pid.$$/0\"\necho \"$TMPDIR\" > '" +
                               path("tmpdir.part") + "'\nmv '" + path("tmpdir.part") + "' '" + path("tmpdir") +
                               "'\nexec sleep 600\n");
    std::ofstream(path("hosts")) << "localhost slots=1\nnode-b slots=1\n";
    const std::string temporary = path("tmp");
    const std::string shared = path("shared");
    for (const bool other_host : {false, true}) {
        SCOPED_TRACE(other_host ? "with another host" : "this host only");
        std::filesystem::create_directories(temporary);
        std::filesystem::create_directories(shared);
        std::filesystem::remove(path("tmpdir"));
        std::vector<std::string> argv = {"/usr/bin/env", "TMPDIR=" + temporary,
                                         testing::test_program(EPOCHCAST_CLI_PATH)};
        argv.insert(argv.end(), {"run", "--mpirun", path("mpirun")});
        if (other_host) {
            argv.insert(argv.end(), {"--hostfile", path("hosts"), "--shared-dir", shared, "--no-network-test"});
        } else {
            argv.insert(argv.end(), {"--np", "1"});
        }
        const pid_t run = testing::start_process(argv, path("out"), path("err"));
        ASSERT_GT(run, 0);
        const bool started =
            testing::wait_until([&] { return std::filesystem::exists(path("tmpdir")); }, std::chrono::seconds(120));
        ::kill(run, started ? SIGINT : SIGKILL);
        int status = 0;
        ASSERT_EQ(::waitpid(run, &status, 0), run);
        const std::string err = testing::read_text(path("err"));
        ASSERT_TRUE(started) << err;
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status << ": " << err;
        EXPECT_TRUE(contains(err, "interrupted by Ctrl-C during the training")) << err;
        // mpirun's TMPDIR was a folder of the run's ...
        const std::string given = testing::read_text(path("tmpdir"));
        const std::string within = other_host ? temporary + "/epochcast-mpi-" : temporary + "/epochcast-run-";
        EXPECT_EQ(given.rfind(within, 0), 0U) << given;
        EXPECT_TRUE(contains(given, "/epochcast-mpi-")) << given;
        // ... and nothing is left of it, of the session folder in it or of the run's folder.
        std::string left;
        for (const std::string& folder : {temporary, shared}) {
            for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) {
                left += entry.path().string() + "\n";
            }
        }
        EXPECT_EQ(left, "");
    }
}

// Bad values of run's own flags are bad input, refused before anything starts.
TEST_F(FakePrograms, BadClusterFlagsAreBadInput) {
    write_mpirun_writing(prepared_trace());
    std::ofstream(path("hosts")) << "localhost\n";
    for (const std::string& flags : std::vector<std::string>{
             "--np 2 --network-test-max-mib 0", "--np 2 --network-test-max-mib 5000",
             "--np 2 --network-test-max-mib nan", "--np 1 --launcher pbs", "--hostfile '" + path("hosts") + "'",
             "--hostfile '" + path("none") + "'", "--host a:1 --hostfile '" + path("hosts") + "'",
             "--launcher srun --np 2", "--host 'a:1,b$:1'", "--np 1 --shared-dir '" + path("none") + "/deeper'"}) {
        ::unsetenv("SLURM_JOB_ID");
        const testing::ProcessResult r = run_epochcast("run " + flags + " --mpirun '" + path("mpirun") + "'");
        EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << flags << ": " << r.err;
        EXPECT_FALSE(std::filesystem::exists(path("args"))) << flags << ": mpirun must not start";
    }
}

// Issue 59, item 15: run's comparison printed "-100 %" where a phase's predicted and measured
// seconds both showed as 0 (a measurement too small for the column); it prints "-" there.
TEST(RunComparison, AnErrorAgainstAFigureThatPrintsAsZeroIsADash) {
    EXPECT_EQ(cli::error_cell(0.0, 0.00003, 4), "-");  // 0.0000 beside 0.0000, not -100 %
    EXPECT_EQ(cli::error_cell(0.00001, 0.00004, 4), "-");
    EXPECT_EQ(cli::error_cell(1.0, std::nullopt, 4), "-");  // nothing measured
    EXPECT_EQ(cli::error_cell(1.0, 0.0, 4), "-");
    EXPECT_EQ(cli::error_cell(0.0, 0.5, 4), "-100 %");  // a measurement that shows: the error stands
    EXPECT_EQ(cli::error_cell(104.5, 100.0, 2), "4.5 %");
    EXPECT_EQ(cli::error_cell(0.0001, 0.0001, 4), "0 %");
}

}  // namespace
}  // namespace epochcast
