// `predict --emit` and `plan --emit` (issue 61): each launch file recomputed from the prediction it
// is written from (the nodes, the time limit from the band's slow end, the learning rate by the
// recipe's rule, the fabric's environment), checked by bash, and run with stand-ins for torchrun,
// srun and scontrol that print what they were given; and each bad request one error, no file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "cli/job_files.hpp"
#include "model/catalog.hpp"
#include "model/errors.hpp"
#include "tests/cli/cli_process.hpp"
#include "tests/support/error_of.hpp"
#include "tests/support/temp_folder.hpp"

namespace epochcast {
namespace {

using testing::input_error_of;
using testing::read_text;
using testing::run_command;
using testing::TempFolder;

nlohmann::json json_of(std::vector<std::string> args) {
    args.push_back("--json");
    std::ostringstream out;
    cli::run(args, out);
    return nlohmann::json::parse(out.str());
}

/// The launch file `args` plus `--emit format -o` write, its text.
std::string emitted(std::vector<std::string> args, const std::string& format, const TempFolder& folder) {
    const std::string file = folder / ("job." + format);
    args.insert(args.end(), {"--emit", format, "-o", file});
    std::ostringstream out;
    cli::run(args, out);
    EXPECT_NE(out.str().find("launch file (" + format + "): " + file), std::string::npos) << out.str();
    return read_text(file);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// `name` in `folder`, executable, printing its arguments and the variables `variables` names.
void stand_in(const TempFolder& folder, const std::string& name, const std::string& body) {
    const std::string path = folder / name;
    std::ofstream(path) << "#!/bin/bash\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
}

std::string figure(double value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

TEST(JobFiles, ASbatchScriptOnP5AsksForThePlansNodesAndItsBandsSlowEnd) {
    TempFolder folder;
    const std::vector<std::string> args{"predict", "--instance",    "p5.48xlarge", "--nodes",
                                        "4",       "--target-top1", "75.9"};
    const nlohmann::json p = json_of(args);
    const std::string script = emitted(args, "sbatch", folder);

    EXPECT_TRUE(has(script, "#SBATCH --nodes=4\n")) << script;
    EXPECT_TRUE(has(script, "#SBATCH --gpus-per-node=8\n"));
    EXPECT_TRUE(has(script, "#SBATCH --ntasks-per-node=1\n"));  // torchrun starts a node's 8
    // The time limit: the 95% band's slow end and a tenth more, whole minutes.
    const double limit_s = std::ceil(p["time_to_train_interval"]["high"].get<double>() * 1.1 / 60.0) * 60.0;
    const auto minutes = static_cast<long long>(limit_s / 60);
    char time[32];
    std::snprintf(time, sizeof time, "%lld-%02lld:%02lld:00", minutes / 1440, minutes % 1440 / 60, minutes % 60);
    EXPECT_TRUE(has(script, std::string("#SBATCH --time=") + time + "\n")) << script;
    // Goyal et al.'s linear rule at the plan's global batch: 0.1 x 8,192 / 256 = 3.2.
    const double global_batch = p["global_batch"].get<double>();
    EXPECT_EQ(global_batch, 4 * 8 * 256);
    EXPECT_TRUE(has(script, "--lr " + figure(0.1 * global_batch / 256) + " --lr-warmup-epochs 5")) << script;
    EXPECT_TRUE(has(script, "--batch-size 256 --epochs " + figure(p["epochs"].get<double>()) + " "));
    EXPECT_TRUE(has(script, "export FI_PROVIDER=\"efa\"\n"));
    EXPECT_TRUE(has(script, "export FI_EFA_USE_DEVICE_RDMA=\"1\"\n"));
    EXPECT_TRUE(has(script, "--amp"));
    // What it assumed, and the check afterwards with the same configuration.
    EXPECT_TRUE(has(script, "#   epochs:        " + figure(p["epochs"].get<double>()) + " (goyal2017, published)"));
    EXPECT_TRUE(has(script,
                    "#   epochcast predict --instance p5.48xlarge --nodes 4 --gpus-per-node 8 "
                    "--batch-per-gpu 256"));
    EXPECT_TRUE(has(script, "--target-top1 75.9 --pricing on-demand --calibration calibration.json\n")) << script;

    // bash reads it, and run under stand-ins srun starts one torchrun a node meeting at the first.
    const std::string path = folder / "job.sbatch";
    EXPECT_EQ(run_command("bash -n '" + path + "'").exit_code, 0);
    // A long host list: a reader that stops at the first line would leave scontrol to SIGPIPE,
    // which the script's pipefail turns into a failed job.
    stand_in(folder, "scontrol", "printf 'ec-a\\nec-b\\nec-c\\nec-d\\n'; seq 200000");
    stand_in(folder, "srun", "echo \"srun $* FI_PROVIDER=$FI_PROVIDER DATA=$DATA\"");
    const testing::ProcessResult run = run_command(
        "cd '" + folder.path.string() + "' && PATH='" + folder.path.string() +
        "':$PATH SLURM_JOB_NODELIST=ec-[a-d] SLURM_JOB_NUM_NODES=4 SLURM_JOB_ID=7 DATA=/images bash '" + path + "'");
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_TRUE(has(run.out,
                    "srun --ntasks-per-node=1 torchrun --nnodes=4 --nproc_per_node=8 --rdzv_id=7 "
                    "--rdzv_backend=c10d --rdzv_endpoint=ec-a:29500 train.py --model resnet50 "
                    "--data-path /images "))
        << run.out;
    EXPECT_TRUE(has(run.out, "FI_PROVIDER=efa DATA=/images")) << run.out;
    // A first start resumes nothing; a requeued one goes on from train.py's last checkpoint.
    EXPECT_TRUE(has(run.out, "--output-dir checkpoints FI_PROVIDER=efa")) << run.out;
    std::filesystem::create_directories(folder.path / "checkpoints");
    std::ofstream(folder / "checkpoints/checkpoint.pth") << "saved";
    const testing::ProcessResult requeued = run_command(
        "cd '" + folder.path.string() + "' && PATH='" + folder.path.string() +
        "':$PATH SLURM_JOB_NODELIST=ec-[a-d] SLURM_JOB_NUM_NODES=4 SLURM_JOB_ID=7 DATA=/images bash '" + path + "'");
    EXPECT_EQ(requeued.exit_code, 0) << requeued.err;
    EXPECT_TRUE(has(requeued.out, "--output-dir checkpoints --resume checkpoints/checkpoint.pth FI_PROVIDER=efa"))
        << requeued.out;
    // Without the images' folder it stops before anything starts, saying so.
    const testing::ProcessResult unset = run_command("PATH='" + folder.path.string() + "':$PATH bash '" + path + "'");
    EXPECT_NE(unset.exit_code, 0);
    EXPECT_TRUE(has(unset.err, "set DATA to the image folder")) << unset.err;
}

TEST(JobFiles, ASkyPilotTaskOnGcpA3NamesTheCloudTheInstanceSpotAndTcpx) {
    TempFolder folder;
    const std::vector<std::string> args{"predict", "--instance", "a3-highgpu-8g", "--nodes", "2", "--pricing", "spot"};
    const nlohmann::json p = json_of(args);
    const std::string task = emitted(args, "skypilot", folder);
    EXPECT_TRUE(has(task, "\nnum_nodes: 2\n")) << task;
    EXPECT_TRUE(has(task, "\n  cloud: gcp\n  instance_type: a3-highgpu-8g\n  region: us-central1\n  use_spot: true\n"));
    EXPECT_TRUE(has(task, "\n  NCCL_GPUDIRECTTCPX_SOCKET_IFNAME: \"eth1,eth2,eth3,eth4\"\n"));
    EXPECT_TRUE(has(task, "export LD_LIBRARY_PATH=\"/usr/local/tcpx/lib64:${LD_LIBRARY_PATH:-}\""));
    EXPECT_TRUE(has(task,
                    "torchrun --nnodes=\"$SKYPILOT_NUM_NODES\" --node_rank=\"$SKYPILOT_NODE_RANK\" "
                    "--nproc_per_node=8 --master_addr=\"$head\" "));
    EXPECT_EQ(p["global_batch"].get<double>(), 2 * 8 * 256);
    EXPECT_TRUE(has(task, "--lr " + figure(0.1 * 4096 / 256) + " "));
    // On demand it is not spot.
    const std::string on_demand =
        emitted({"predict", "--instance", "a3-highgpu-8g", "--nodes", "2"}, "skypilot", folder);
    EXPECT_TRUE(has(on_demand, "\n  use_spot: false\n"));
    EXPECT_TRUE(has(on_demand, "#   checkpoints:   once an epoch\n"));
    // On spot where the catalog knows how often a node is taken back: the checkpoint interval the
    // prediction priced, Young's beside it, and epochcast-train told to checkpoint at it.
    const std::vector<std::string> spot{"predict",   "--instance", "p4d.24xlarge", "--nodes",  "4",
                                        "--pricing", "spot",       "--framework",  "epochcast"};
    const nlohmann::json q = json_of(spot);
    ASSERT_TRUE(q.contains("spot")) << q.dump();
    const std::string aws = emitted(spot, "skypilot", folder);
    EXPECT_TRUE(has(aws, "#   checkpoints:   every ")) << aws;
    EXPECT_TRUE(has(aws, "on spot (Young's interval "));
    const double steps = std::round(q["spot"]["checkpoint_interval_s"].get<double>() *
                                    q["throughput_images_per_s"].get<double>() / q["global_batch"].get<double>());
    EXPECT_TRUE(has(aws, "--checkpoint-every " + std::to_string(static_cast<long long>(std::max(1.0, steps))) + " "))
        << aws;
    EXPECT_TRUE(has(aws, "\n  use_spot: true\n"));
    EXPECT_TRUE(has(aws, "--host \"$hosts\""));  // epochcast run starts every rank from the first node
}

// epochcast run's hosts get the plan's GPUs a node as their slots, not $SKYPILOT_NUM_GPUS_PER_NODE:
// SkyPilot counts the accelerators its catalog gives the instance type, 12 for the ND H100 v5
// (tests/fixtures/skypilot-catalog/README.md), and a plan may use fewer GPUs than the instance has.
TEST(JobFiles, ASkyPilotTaskGivesEpochcastRunThePlansGpusANode) {
    TempFolder folder;
    for (const int gpus : {8, 4}) {
        const std::string task = emitted({"predict", "--instance", "Standard_ND96isr_H100_v5", "--nodes", "2",
                                          "--gpus-per-node", std::to_string(gpus), "--framework", "epochcast"},
                                         "skypilot", folder);
        const std::size_t start = task.find("hosts=");
        ASSERT_NE(start, std::string::npos) << task;
        const std::string line = task.substr(start, task.find('\n', start) - start);
        EXPECT_FALSE(has(line, "SKYPILOT_NUM_GPUS_PER_NODE")) << line;
        // Run by bash as SkyPilot's nodes would, with two nodes' addresses and SkyPilot's count of 12.
        std::ofstream(folder / "hosts.sh") << line << "\necho \"$hosts\"\n";
        const testing::ProcessResult r = run_command(
            "SKYPILOT_NODE_IPS=\"$(printf '10.0.0.1\\n10.0.0.2')\" "
            "SKYPILOT_NUM_GPUS_PER_NODE=12 bash '" +
            (folder / "hosts.sh") + "'");
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(r.out, "10.0.0.1:" + std::to_string(gpus) + ",10.0.0.2:" + std::to_string(gpus) + "\n") << line;
    }
}

TEST(JobFiles, TorchrunLinesOnAzureNdH100HaveOneLineANodeAndAzuresTopologyFile) {
    TempFolder folder;
    const std::string lines =
        emitted({"predict", "--instance", "Standard_ND96isr_H100_v5", "--nodes", "3"}, "torchrun", folder);
    for (int node = 0; node < 3; ++node) {
        EXPECT_TRUE(has(lines, "  " + std::to_string(node) + ") torchrun --nnodes=3 --node_rank=" +
                                   std::to_string(node) + " --nproc_per_node=8 --master_addr=\"$HEAD\" "))
            << lines;
    }
    EXPECT_FALSE(has(lines, "--node_rank=3"));
    EXPECT_TRUE(has(lines, "export NCCL_TOPO_FILE=\"/opt/microsoft/ndv5-topo.xml\"\n"));

    // Node 2's line is the one node 2 runs, with the fabric's settings in its environment.
    const std::string path = folder / "job.torchrun";
    stand_in(folder, "torchrun", "echo \"torchrun $* topology=$NCCL_TOPO_FILE\"");
    const std::string path_env = "PATH='" + folder.path.string() + "':$PATH";
    const testing::ProcessResult node2 =
        run_command(path_env + " HEAD=10.0.0.1 NODE_RANK=2 DATA=/images bash '" + path + "'");
    EXPECT_EQ(node2.exit_code, 0) << node2.err;
    EXPECT_TRUE(has(node2.out, "--node_rank=2 --nproc_per_node=8 --master_addr=10.0.0.1 --master_port=29500 train.py"))
        << node2.out;
    EXPECT_TRUE(has(node2.out, "topology=/opt/microsoft/ndv5-topo.xml"));
    // A node the plan has not: refused by the script itself.
    const testing::ProcessResult node3 =
        run_command(path_env + " HEAD=10.0.0.1 NODE_RANK=3 DATA=/images bash '" + path + "'");
    EXPECT_EQ(node3.exit_code, 2);
    EXPECT_TRUE(has(node3.err, "this plan has nodes 0 to 2")) << node3.err;
}

TEST(JobFiles, PlanEmitsItsAnswer) {
    TempFolder folder;
    const std::vector<std::string> args{"plan", "--deadline", "24h", "--instance", "p4d.24xlarge"};
    const nlohmann::json answer = json_of(args)["cheapest_within_deadline"];
    const std::string script = emitted(args, "sbatch", folder);
    EXPECT_TRUE(has(script, "#SBATCH --nodes=" + std::to_string(answer["scenario"]["nodes"].get<int>()) + "\n"))
        << script;
    EXPECT_TRUE(has(script, "--batch-size " + std::to_string(answer["scenario"]["batch_per_gpu"].get<int>()) + " "));
    EXPECT_TRUE(has(script, "export FI_PROVIDER=\"efa\"\n"));
}

TEST(JobFiles, EachFabricHasTheEnvironmentItsCloudDocuments) {
    const Catalog& catalog = Catalog::built_in();
    EXPECT_EQ(cli::fabric_environment(catalog.instance("p4d.24xlarge")).variables.front().first, "FI_PROVIDER");
    EXPECT_TRUE(has(std::string(cli::fabric_environment(catalog.instance("a3-megagpu-8g")).name), "TCPXO"));
    EXPECT_TRUE(has(std::string(cli::fabric_environment(catalog.instance("a3-highgpu-8g")).name), "TCPX"));
    EXPECT_TRUE(cli::fabric_environment(catalog.instance("p3.16xlarge")).variables.empty());  // TCP sockets
    for (const char* name : {"p4d.24xlarge", "a3-highgpu-8g", "a3-megagpu-8g", "Standard_ND96isr_H100_v5"})
        EXPECT_FALSE(cli::fabric_environment(catalog.instance(name)).source.empty()) << name;
}

TEST(JobFiles, EachBadRequestIsOneErrorAndLeavesNoFile) {
    TempFolder folder;
    const std::string file = folder / "job.sh";
    auto error = [&](std::vector<std::string> args) {
        return input_error_of([&] {
            std::ostringstream out;
            cli::run(args, out);
        });
    };
    const std::vector<std::string> p5{"predict", "--instance", "p5.48xlarge"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = p5;
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    };
    EXPECT_EQ(error(with({"--emit", "slurm", "-o", file})),
              "--emit: unknown format 'slurm' (sbatch, skypilot or torchrun)");
    EXPECT_EQ(error(with({"--emit", "sbatch"})), "--emit sbatch: name the file to write with -o");
    EXPECT_EQ(error(with({"-o", file})), "-o: a launch file needs --emit sbatch, skypilot or torchrun");
    EXPECT_EQ(error(with({"--train-cmd", "x.py"})), "--train-cmd: only with --emit");
    EXPECT_TRUE(has(error(with({"--emit", "sbatch", "-o", file, "--train-cmd", "x.py {speed}"})),
                    "--train-cmd: unknown placeholder {speed} (known: {amp}, {batch},"));
    EXPECT_EQ(error({"predict", "--emit", "sbatch", "-o", file}),
              "--emit: a launch file is for one configuration: name it (--instance, --nodes, ...)");
    // MLPerf's LARS sets its own learning rate: {lr} has nothing to say.
    EXPECT_TRUE(has(error(with({"--nodes", "8", "--target-top1", "75.9", "--recipe", "mlperf-lars", "--emit", "sbatch",
                                "-o", file, "--train-cmd", "x.py --lr {lr}"})),
                    "--train-cmd: {lr}, but mlperf-lars sets its learning rate per global batch in its own code"));
    EXPECT_EQ(error({"predict", "--instance", "dgx-1v", "--nodes", "2", "--emit", "skypilot", "-o", file}),
              "--emit skypilot: dgx-1v is 'owned' hardware, not a cloud SkyPilot launches on (use --emit sbatch or "
              "torchrun)");
    EXPECT_TRUE(has(error(with({"--framework", "epochcast", "--emit", "torchrun", "-o", file})),
                    "--emit torchrun: the epochcast framework starts its ranks with srun or mpirun, not torchrun"));
    EXPECT_TRUE(has(error(with({"--framework", "mxnet", "--emit", "sbatch", "-o", file})),
                    "epochcast knows no training script for mxnet; give yours with --train-cmd"));
    EXPECT_TRUE(has(error(with({"--emit", "sbatch", "-o", folder / "no/such/job.sh"})), "-o"));
    EXPECT_TRUE(std::filesystem::is_empty(folder.path));
}

}  // namespace
}  // namespace epochcast
