#include "cli/job_files.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "cli/output.hpp"
#include "cli/report.hpp"
#include "cli/table.hpp"
#include "model/errors.hpp"
#include "model/scenario_file.hpp"
#include "model/text_io.hpp"
#include "model/types.hpp"

#ifndef EPOCHCAST_VERSION
#define EPOCHCAST_VERSION "dev"
#endif

namespace epochcast::cli {

JobFormat parse_job_format(std::string_view text) {
    if (text == "sbatch") return JobFormat::sbatch;
    if (text == "skypilot") return JobFormat::skypilot;
    if (text == "torchrun") return JobFormat::torchrun;
    throw InputError("--emit: unknown format '" + std::string(text) + "' (sbatch, skypilot or torchrun)");
}

std::string_view to_string(JobFormat format) {
    switch (format) {
        case JobFormat::sbatch:
            return "sbatch";
        case JobFormat::skypilot:
            return "skypilot";
        case JobFormat::torchrun:
            return "torchrun";
    }
    return "?";
}

namespace {

// The fabrics' environments, each as the cloud that sells it documents it (docs/cli.md, "Launch
// files"). Read 2026-12-03.
const FabricEnvironment kNoFabric{"TCP sockets (nothing to set)", {}, ""};

const FabricEnvironment kEfa{
    "EFA (libfabric's efa provider through aws-ofi-nccl)",
    {{"FI_PROVIDER", "efa"},
     {"FI_EFA_USE_DEVICE_RDMA", "1"},
     {"RDMAV_FORK_SAFE", "1"},
     {"NCCL_SOCKET_IFNAME", "^lo,docker"}},
    "AWS EC2 User Guide, 'Get started with EFA and NCCL'; aws/sagemaker-training-toolkit commit 9a5ed9f "
    "(FI_EFA_USE_DEVICE_RDMA=1 and RDMAV_FORK_SAFE=1 on the RDMA instances, p4d and later)"};

const FabricEnvironment kAzureInfiniBand{
    "InfiniBand (NCCL's IB transport, Azure's topology file)",
    {{"NCCL_TOPO_FILE", "/opt/microsoft/ndv5-topo.xml"},
     {"NCCL_IB_PCI_RELAXED_ORDERING", "1"},
     {"NCCL_SOCKET_IFNAME", "eth0"}},
    "Azure HPC images' /etc/nccl.conf for the ND H100 v5 (the topology file in /opt/microsoft; "
    "jingchaozhang.github.io, 'Decoding Azure's NCCL Topology Files')"};

const FabricEnvironment kInfiniBand{"InfiniBand (NCCL's IB transport)",
                                    {{"NCCL_IB_DISABLE", "0"}},
                                    "NCCL User Guide, 'Environment Variables' (NCCL_IB_DISABLE)"};

const FabricEnvironment kTcpx{
    "GPUDirect-TCPX (Google's NCCL plugin)",
    {{"LD_LIBRARY_PATH", "/usr/local/tcpx/lib64:${LD_LIBRARY_PATH:-}"},
     {"NCCL_SOCKET_IFNAME", "eth0"},
     {"NCCL_GPUDIRECTTCPX_CTRL_DEV", "eth0"},
     {"NCCL_GPUDIRECTTCPX_SOCKET_IFNAME", "eth1,eth2,eth3,eth4"},
     {"NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX", "/run/tcpx"},
     {"NCCL_GPUDIRECTTCPX_FORCE_ACK", "0"},
     {"NCCL_GPUDIRECTTCPX_TX_COMPLETION_NANOSLEEP", "1000"},
     {"NCCL_DYNAMIC_CHUNK_SIZE", "524288"},
     {"NCCL_P2P_NET_CHUNKSIZE", "524288"},
     {"NCCL_P2P_PCI_CHUNKSIZE", "524288"},
     {"NCCL_P2P_NVL_CHUNKSIZE", "1048576"}},
    "GoogleCloudPlatform/container-engine-accelerators, gpudirect-tcpx/nccl-config.yaml (run-nccl.sh's "
    "settings for a3-highgpu-8g; the tcpgpudmarxd daemon must run on each node)"};

const FabricEnvironment kTcpxo{
    "GPUDirect-TCPXO (Google's NCCL plugin on A3 Mega)",
    {{"LD_LIBRARY_PATH", "/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"},
     {"NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "/dev/aperture_devices"}},
    "GoogleCloudPlatform/container-engine-accelerators, gpudirect-tcpxo/nccl-test-latest.yaml (the plugin's "
    "nccl-env-profile.sh in /usr/local/nvidia/lib64 sets the rest; the rxdm daemon must run on each node)"};

const FabricEnvironment kRoce{"RoCE (NCCL's IB transport on Ethernet)",
                              {{"NCCL_IB_DISABLE", "0"}},
                              "NCCL User Guide, 'Environment Variables' (NCCL_IB_DISABLE, NCCL_IB_GID_INDEX)"};

/// The text of `value` as a launch file writes a figure: 7 significant digits, no exponent for
/// everyday sizes (3.2, 8192, 0.0125).
std::string figure(double value) { return shortest(value); }

/// ceil(seconds) as Slurm's time limit, D-HH:MM:SS.
std::string slurm_time(double seconds) {
    const auto total = static_cast<long long>(std::ceil(seconds / 60.0)) * 60;
    const long long days = total / 86400;
    const long long hours = total % 86400 / 3600;
    const long long minutes = total % 3600 / 60;
    char text[48];
    std::snprintf(text, sizeof text, "%lld-%02lld:%02lld:00", days, hours, minutes);
    return text;
}

/// The time limit a file asks for: the 95% band's slow end and a tenth more, whole minutes.
constexpr double kTimeLimitMargin = 1.10;

int gpus_per_node(const JobRequest& r) { return r.device == DeviceKind::gpu ? r.scenario.gpus_per_node : 0; }

/// The precision flag of epochcast-train for the scenario's precision on its device.
std::string epochcast_precision(const JobRequest& r) {
    switch (r.scenario.precision) {
        case Precision::fp32:
        case Precision::tf32:
            return "fp32";
        case Precision::amp:
            return r.device == DeviceKind::gpu ? "fp16" : "bf16";
        case Precision::bf16:
            if (r.device == DeviceKind::cpu) return "bf16";
            break;
    }
    throw InputError("--emit: epochcast-train runs mixed precision as fp16 on GPUs; --precision " +
                     std::string(to_string(r.scenario.precision)) +
                     " has no such run there (use --precision amp, or --train-cmd for your own script)");
}

/// The learning rate at the plan's global batch, and where its rule comes from.
struct LearningRate {
    bool given = false;
    double rate = 0;
    double warmup_epochs = 0;
    std::string text;  ///< "3.2 = 0.1 x 8,192 / 256 after 5 warm-up epochs (goyal2017: ...)"
};

LearningRate learning_rate(const JobRequest& r) {
    LearningRate lr;
    const double batch = r.prediction.global_batch;
    if (!r.recipe || !r.recipe->learning_rate.given()) {
        lr.text = r.recipe
                      ? r.recipe->name + " sets its learning rate per global batch in its own code: none given here"
                      : "no recipe is published for " + r.scenario.model + ": none given here";
        return lr;
    }
    const LearningRateRule& rule = r.recipe->learning_rate;
    lr.given = true;
    lr.rate = rule.at(batch);
    lr.warmup_epochs = rule.warmup_epochs;
    lr.text = figure(lr.rate) + " = " + figure(rule.per_256_images) + " x " + format_count(batch) + " / 256" +
              (rule.warmup_epochs > 0 ? " after " + figure(rule.warmup_epochs) + " warm-up epochs" : "") + " (" +
              r.recipe->name + ": " + rule.source + ")";
    return lr;
}

/// The training command with its placeholders filled in.
/// Steps between checkpoints: the spot interval's work (Young's where shorter), else one epoch's.
long long checkpoint_every_steps(const JobRequest& r) {
    const Prediction& p = r.prediction;
    const double images_per_step = p.global_batch;
    const double seconds = p.spot.modelled ? p.spot.checkpoint_interval_s : p.epoch_s;
    const double steps = std::round(seconds * p.throughput_images_per_s / images_per_step);
    return std::max(1LL, static_cast<long long>(std::min(steps, 1e12)));
}

std::string training_command(JobFormat format, const JobRequest& r, const LearningRate& lr) {
    const std::string command = r.train_command.empty() ? default_train_command(r.scenario.framework) : r.train_command;
    const std::map<std::string, std::string> values{
        {"model", r.scenario.model},
        {"image_size", std::to_string(r.scenario.image_size)},
        {"batch", std::to_string(r.scenario.batch_per_gpu)},
        {"global_batch", std::to_string(r.prediction.global_batch)},
        {"epochs", figure(r.prediction.epochs)},
        {"lr", lr.given ? figure(lr.rate) : ""},
        {"warmup_epochs", figure(lr.warmup_epochs)},
        {"instance", r.scenario.instance},
        {"data", "\"$DATA\""},
        {"launcher", format == JobFormat::sbatch ? "--launcher srun" : ""},
        {"checkpoint_every_steps", std::to_string(checkpoint_every_steps(r))},
        {"amp", r.scenario.precision == Precision::amp ? "--amp" : ""},
        // A requeued or restarted job goes on from its checkpoint, tested for as it starts (nothing
        // on a first start): train.py's checkpoints/checkpoint.pth (saved each epoch), or
        // epochcast-train's checkpoints/checkpoint.ecp.
        {"resume", r.scenario.framework == Framework::epochcast
                       ? "$(test -f checkpoints/checkpoint.ecp && echo --resume)"
                       : "$(test -f checkpoints/checkpoint.pth && echo --resume checkpoints/checkpoint.pth)"},
        {"precision", r.scenario.framework == Framework::epochcast ? epochcast_precision(r)
                                                                   : std::string(to_string(r.scenario.precision))},
    };
    std::string out;
    for (std::size_t i = 0; i < command.size();) {
        if (command[i] != '{') {
            out += command[i++];
            continue;
        }
        const std::size_t close = command.find('}', i);
        if (close == std::string::npos) throw InputError("--train-cmd: a '{' without its '}'");
        const std::string name = command.substr(i + 1, close - i - 1);
        const auto found = values.find(name);
        if (found == values.end()) {
            std::string known;
            for (const auto& [key, value] : values) known += (known.empty() ? "{" : ", {") + key + "}";
            throw InputError("--train-cmd: unknown placeholder {" + name + "} (known: " + known + ")");
        }
        if (name == "lr" && !lr.given) throw InputError("--train-cmd: {lr}, but " + lr.text);
        out += found->second;
        i = close + 1;
    }
    // An empty placeholder ({amp} off) leaves two spaces: one.
    std::string squeezed;
    for (char c : out) {
        if (c == ' ' && !squeezed.empty() && squeezed.back() == ' ') continue;
        squeezed += c;
    }
    while (!squeezed.empty() && squeezed.back() == ' ') squeezed.pop_back();
    return squeezed;
}

std::string cluster_text(const JobRequest& r) {
    std::string text = std::to_string(r.scenario.nodes) + " x " + r.scenario.instance;
    if (r.device == DeviceKind::gpu) {
        text += " (" + std::to_string(r.scenario.nodes * r.scenario.gpus_per_node) + " x " + r.instance->gpu + ", " +
                std::to_string(r.scenario.gpus_per_node) + " per node)";
    }
    return text;
}

/// The commands that check the run against the prediction afterwards, as comment lines: epochcast's
/// own training writes a trace; another script's log becomes one with `epochcast import-log`.
std::string check_commands(const JobRequest& r, JobFormat format) {
    std::string out = "# Check the run against the prediction afterwards";
    if (r.scenario.framework == Framework::epochcast) {
        out += ": its trace (epochcast run --trace-out) to\n";
    } else {
        const char* log = format == JobFormat::sbatch     ? "epochcast-JOBID.out"
                          : format == JobFormat::skypilot ? "train.log (sky logs CLUSTER > train.log)"
                                                          : "train.log (the first node's output)";
        // torchvision's train.py is the default script; --format auto reads a command of the user's.
        const char* format_flag = r.train_command.empty() ? " --format torchvision" : "";
        out += ": its log, " + std::string(log) + ", to a trace, then\n";
        out += "#   epochcast import-log LOG" + std::string(format_flag) + " " + r.predict_flags + r.catalog_flags +
               " -o run-trace.json\n";
    }
    out += "#   epochcast calibrate run-trace.json" + r.catalog_flags + " -o calibration.json\n";
    out += "#   epochcast predict " + r.predict_flags + r.catalog_flags + " --calibration calibration.json\n";
    return out;
}

/// What the plan assumed, as comment lines ("# ...").
std::string header(const JobRequest& r, const LearningRate& lr, JobFormat format) {
    const Prediction& p = r.prediction;
    std::ostringstream out;
    out << "# epochcast " << EPOCHCAST_VERSION << ": " << to_string(format) << " launch file for the configuration "
        << "epochcast predicted (every figure below is its prediction, not a measurement).\n";
    out << "#   cluster:       " << cluster_text(r) << ", " << to_string(r.scenario.pricing);
    if (p.priced) out << " at " << format_cost(p.cluster_usd_per_hour, true) << "/h";
    out << "\n";
    out << "#   training:      " << r.scenario.model << " at " << r.scenario.image_size << " px, "
        << to_string(r.scenario.framework) << ", " << to_string(r.scenario.precision) << ", "
        << to_string(r.scenario.strategy) << "; batch " << r.scenario.batch_per_gpu << " per "
        << (r.device == DeviceKind::gpu ? "GPU" : "worker") << ", global batch " << format_count(p.global_batch)
        << "\n";
    out << "#   throughput:    " << format_count(p.throughput_images_per_s)
        << " img/s (95%: " << format_count(p.interval.low) << " - " << format_count(p.interval.high) << ")\n";
    out << "#   time to train: " << format_duration(p.time_to_train_s)
        << " (95%: " << format_duration(p.time_to_train_interval.low) << " - "
        << format_duration(p.time_to_train_interval.high) << ")"
        << (format == JobFormat::sbatch ? "; the time limit is the slow end and a tenth more" : "") << "\n";
    if (p.priced) {
        out << "#   cost:          " << format_cost(p.bill_usd, true)
            << " (95%: " << format_cost(p.bill_interval.low, true) << " - " << format_cost(p.bill_interval.high, true)
            << ")\n";
    } else {
        out << "#   cost:          the catalog has no " << to_string(r.scenario.pricing) << " price for "
            << r.scenario.instance << "\n";
    }
    out << "#   epochs:        " << figure(p.epochs) << " ("
        << (p.epochs_recipe >= 0 && r.recipe ? r.recipe->name + ", " + std::string(to_string(p.epochs_basis))
                                             : std::string("given"))
        << ")\n";
    out << "#   learning rate: " << lr.text << "\n";
    if (p.spot.modelled) {
        out << "#   checkpoints:   every " << format_duration(p.spot.checkpoint_interval_s)
            << " of work on spot (Young's interval " << format_duration(p.spot.recommended_checkpoint_interval_s)
            << " for " << format_significant(p.spot.interruptions_per_node_hour) << " interruptions per node-hour)\n";
    } else {
        out << "#   checkpoints:   once an epoch\n";
    }
    const FabricEnvironment& fabric = fabric_environment(*r.instance);
    out << "#   fabric:        " << fabric.name << (fabric.source.empty() ? "" : "; " + std::string(fabric.source))
        << "\n";
    out << check_commands(r, format);
    return out.str();
}

std::string exports(const FabricEnvironment& fabric, std::string_view indent) {
    std::string out;
    for (const auto& [name, value] : fabric.variables)
        out += std::string(indent) + "export " + std::string(name) + "=\"" + std::string(value) + "\"\n";
    return out;
}

/// The torchrun line every node runs, NODE_RANK and HEAD its shell's. Its flags are spelt with
/// underscores, which every torchrun takes; torch 2 added the hyphens, which torch 1.13 (Debian 12's
/// python3-torch) refuses.
std::string torchrun_line(const JobRequest& r, const std::string& command, const std::string& nodes,
                          const std::string& node_rank, const std::string& head) {
    return "torchrun --nnodes=" + nodes + " --node_rank=" + node_rank +
           " --nproc_per_node=" + std::to_string(std::max(1, gpus_per_node(r))) + " --master_addr=" + head +
           " --master_port=29500 " + command;
}

void require_launchable(JobFormat format, const JobRequest& r) {
    const Framework framework = r.scenario.framework;
    if (format == JobFormat::torchrun && framework == Framework::epochcast) {
        throw InputError(
            "--emit torchrun: the epochcast framework starts its ranks with srun or mpirun, not torchrun "
            "(use --emit sbatch or skypilot)");
    }
    if (format != JobFormat::sbatch && framework != Framework::pytorch && framework != Framework::epochcast) {
        throw InputError("--emit " + std::string(to_string(format)) + ": " + std::string(to_string(framework)) +
                         " is not started by torchrun (use --emit sbatch, which runs one task per GPU)");
    }
    if (format == JobFormat::skypilot &&
        (r.instance->cloud != "aws" && r.instance->cloud != "gcp" && r.instance->cloud != "azure")) {
        throw InputError("--emit skypilot: " + r.scenario.instance + " is " +
                         (r.instance->cloud.empty() ? std::string("no cloud's") : "'" + r.instance->cloud + "'") +
                         " hardware, not a cloud SkyPilot launches on (use --emit sbatch or torchrun)");
    }
}

/// The images' folder, DATA: epochcast-train may train on synthetic images, a script of one's own
/// needs the folder.
std::string data_line(const JobRequest& r, std::string_view how) {
    if (r.scenario.framework == Framework::epochcast) {
        return ": \"${DATA:=synthetic}\"  # the images: synthetic, or a folder with one subfolder per class (" +
               std::string(how) + ")\nexport DATA\n";
    }
    return ": \"${DATA:?set DATA to the image folder (train/ and val/, one subfolder per class)}\"\nexport DATA\n";
}

std::string sbatch_file(const JobRequest& r, const LearningRate& lr, const std::string& command) {
    const Prediction& p = r.prediction;
    const int gpus = gpus_per_node(r);
    const bool pytorch = r.scenario.framework == Framework::pytorch;
    const bool epochcast = r.scenario.framework == Framework::epochcast;
    std::ostringstream out;
    out << "#!/bin/bash\n" << header(r, lr, JobFormat::sbatch);
    out << "#SBATCH --job-name=epochcast-" << r.scenario.model << "\n";
    out << "#SBATCH --nodes=" << r.scenario.nodes << "\n";
    // torchrun starts each node's processes; Horovod-style frameworks one task per GPU; epochcast
    // run asks srun for its own ranks inside the allocation.
    const int tasks_per_node = pytorch ? 1 : std::max(1, gpus);
    out << "#SBATCH --ntasks-per-node=" << tasks_per_node << "\n";
    if (gpus > 0) out << "#SBATCH --gpus-per-node=" << gpus << "\n";
    out << "#SBATCH --exclusive\n";
    out << "#SBATCH --time=" << slurm_time(p.time_to_train_interval.high * kTimeLimitMargin) << "\n";
    out << "#SBATCH --output=epochcast-%j.out\n";
    if (r.scenario.pricing == Pricing::spot) out << "#SBATCH --requeue\n";
    out << "set -euo pipefail\n";
    out << data_line(r, "set DATA before sbatch");
    out << exports(fabric_environment(*r.instance), "");
    if (epochcast) {
        out << command << "\n";
    } else if (pytorch) {
        // One torchrun a node, meeting at the first node by c10d's rendezvous: no node needs its rank.
        out << "head=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | sed -n 1p)\n";  // reads it all: no SIGPIPE
                                                                                         // under pipefail
        out << "srun --ntasks-per-node=1 torchrun --nnodes=\"$SLURM_JOB_NUM_NODES\" --nproc_per_node="
            << std::max(1, gpus) << " --rdzv_id=\"$SLURM_JOB_ID\" --rdzv_backend=c10d --rdzv_endpoint=\"$head:29500\" "
            << command << "\n";
    } else {
        out << "srun " << command << "\n";
    }
    return out.str();
}

std::string yaml_quoted(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

std::string skypilot_file(const JobRequest& r, const LearningRate& lr, const std::string& command) {
    const bool epochcast = r.scenario.framework == Framework::epochcast;
    std::ostringstream out;
    out << header(r, lr, JobFormat::skypilot);
    out << "name: epochcast-" << r.scenario.model << "\n";
    out << "num_nodes: " << r.scenario.nodes << "\n";
    out << "resources:\n";
    out << "  cloud: " << r.instance->cloud << "\n";
    out << "  instance_type: " << r.scenario.instance << "\n";
    if (!r.instance->region.empty()) out << "  region: " << r.instance->region << "\n";
    out << "  use_spot: " << (r.scenario.pricing == Pricing::spot ? "true" : "false") << "\n";
    if (r.scenario.storage == Store::s3) {
        out << "file_mounts:\n";
        out << "  # the images, streamed from S3 as the plan priced them: name your bucket\n";
        out << "  /data/imagenet: s3://YOUR-BUCKET/imagenet\n";
    }
    out << "envs:\n";
    const bool synthetic = epochcast && r.scenario.storage != Store::s3;
    out << "  DATA: " << (synthetic ? "synthetic" : "/data/imagenet")
        << "  # the images: a folder with one subfolder per class on every node (sky launch --env DATA=...)\n";
    const FabricEnvironment& fabric = fabric_environment(*r.instance);
    for (const auto& [name, value] : fabric.variables) {
        if (name == "LD_LIBRARY_PATH") continue;  // extended in run, where the shell expands it
        out << "  " << name << ": " << yaml_quoted(value) << "\n";
    }
    out << "run: |\n";
    out << "  set -euo pipefail\n";
    for (const auto& [name, value] : fabric.variables) {
        if (name == "LD_LIBRARY_PATH") out << "  export LD_LIBRARY_PATH=\"" << value << "\"\n";
    }
    out << "  head=$(echo \"$SKYPILOT_NODE_IPS\" | sed -n 1p)\n";  // reads it all: no SIGPIPE under pipefail
    if (epochcast) {
        // epochcast run starts every rank from the first node, over mpirun and ssh.
        out << "  if [ \"$SKYPILOT_NODE_RANK\" = 0 ]; then\n";
        // The plan's GPUs a node, not $SKYPILOT_NUM_GPUS_PER_NODE: SkyPilot counts the accelerators its
        // catalog gives the instance type (12 for Standard_ND96isr_H100_v5, which has 8), and a plan
        // may use fewer than the instance has.
        out << "    hosts=$(echo \"$SKYPILOT_NODE_IPS\" | sed \"s/$/:" << std::max(1, gpus_per_node(r))
            << "/\" | paste -sd,)\n";
        out << "    " << command << " --host \"$hosts\"\n";
        out << "  fi\n";
    } else {
        out << "  " << torchrun_line(r, command, "\"$SKYPILOT_NUM_NODES\"", "\"$SKYPILOT_NODE_RANK\"", "\"$head\"")
            << "\n";
    }
    return out.str();
}

std::string torchrun_file(const JobRequest& r, const LearningRate& lr, const std::string& command) {
    std::ostringstream out;
    out << "#!/bin/bash\n" << header(r, lr, JobFormat::torchrun);
    out << "# One line a node, each started on its own node (node 0 first); HEAD is node 0's address,\n"
        << "# which every node must reach on port 29500, and DATA the images' folder on every node.\n";
    out << ": \"${HEAD:?set HEAD to the address of node 0}\"\n";
    out << data_line(r, "set DATA on each node");
    out << exports(fabric_environment(*r.instance), "");
    out << "case \"${NODE_RANK:?set NODE_RANK to the number of this node, 0 to " << r.scenario.nodes - 1 << "}\" in\n";
    for (int node = 0; node < r.scenario.nodes; ++node) {
        out << "  " << node << ") "
            << torchrun_line(r, command, std::to_string(r.scenario.nodes), std::to_string(node), "\"$HEAD\"")
            << " ;;\n";
    }
    out << "  *) echo \"NODE_RANK $NODE_RANK: this plan has nodes 0 to " << r.scenario.nodes - 1
        << "\" >&2; exit 2 ;;\n";
    out << "esac\n";
    return out.str();
}

}  // namespace

const FabricEnvironment& fabric_environment(const InstanceSpec& instance) {
    switch (instance.interconnect) {
        case Interconnect::efa:
            return kEfa;
        case Interconnect::infiniband:
            return instance.cloud == "azure" && instance.name.starts_with("Standard_ND96isr_H100_v5") ? kAzureInfiniBand
                                                                                                      : kInfiniBand;
        case Interconnect::tcpx:
            return instance.name.starts_with("a3-megagpu") ? kTcpxo : kTcpx;
        case Interconnect::roce:
            return kRoce;
        case Interconnect::tcp:
            break;
    }
    return kNoFabric;
}

std::string default_train_command(Framework framework) {
    switch (framework) {
        case Framework::pytorch:
            // torchvision's references/classification/train.py: --batch-size is per GPU, --lr as used.
            return "train.py --model {model} --data-path {data} --batch-size {batch} --epochs {epochs} --lr {lr} "
                   "--lr-warmup-epochs {warmup_epochs} --lr-warmup-method linear --train-crop-size {image_size} "
                   "{amp} --output-dir checkpoints {resume}";
        case Framework::epochcast:
            // epochcast-train scales its learning rate linearly itself (0.1 x global batch / 256).
            return "epochcast run {launcher} --instance {instance} --model {model} --image-size {image_size} "
                   "--batch-per-gpu {batch} --epochs {epochs} --precision {precision} --warmup-epochs {warmup_epochs} "
                   "--data {data} --checkpoint-dir checkpoints --checkpoint-every {checkpoint_every_steps} {resume} "
                   "--trace-out run-trace.json";
        case Framework::mxnet:
        case Framework::tensorflow:
            break;
    }
    throw InputError("--emit: epochcast knows no training script for " + std::string(to_string(framework)) +
                     "; give yours with --train-cmd");
}

std::string job_file(JobFormat format, const JobRequest& request) {
    require_launchable(format, request);
    const LearningRate lr = learning_rate(request);
    const std::string command = training_command(format, request, lr);
    switch (format) {
        case JobFormat::sbatch:
            return sbatch_file(request, lr, command);
        case JobFormat::skypilot:
            return skypilot_file(request, lr, command);
        case JobFormat::torchrun:
            return torchrun_file(request, lr, command);
    }
    return {};
}

void add_emit_flags(CLI::App& command, EmitFlags& flags) {
    command.add_option(
        "--emit", flags.format,
        "Also write the configuration as a launch file to -o: sbatch (a Slurm batch script), skypilot (a "
        "SkyPilot task) or torchrun (each node's line); docs/cli.md, \"Launch files\"");
    command.add_option("-o,--output", flags.output, "With --emit: the launch file to write");
    command.add_option("--train-cmd", flags.train_command,
                       "With --emit: the training command, with placeholders {model}, {batch} (per GPU), "
                       "{global_batch}, {epochs}, {lr}, {warmup_epochs}, {data}, ... (default: torchvision's train.py "
                       "for pytorch, epochcast run for epochcast)");
}

void check_emit_flags(const EmitFlags& flags, const std::vector<std::string>& inputs) {
    if (flags.format.empty()) {
        if (!flags.output.empty()) throw InputError("-o: a launch file needs --emit sbatch, skypilot or torchrun");
        if (!flags.train_command.empty()) throw InputError("--train-cmd: only with --emit");
        return;
    }
    parse_job_format(flags.format);
    if (flags.output.empty()) throw InputError("--emit " + flags.format + ": name the file to write with -o");
    check_outputs({{"-o", flags.output}}, inputs);
}

void write_job_file(const EmitFlags& flags, const CostModel& model, const Scenario& scenario,
                    const ResolvedScenario& resolved, const Prediction& prediction,
                    const std::vector<std::string>& catalogs) {
    if (flags.format.empty()) return;
    JobRequest request;
    request.scenario = scenario;
    request.scenario.nodes = resolved.nodes;
    request.scenario.gpus_per_node = resolved.gpus_per_node;
    request.scenario.batch_per_gpu = resolved.batch_per_gpu;
    request.prediction = prediction;
    request.instance = &model.catalog().instance(scenario.instance);
    request.device = model.catalog().device_kind(*request.instance);
    const Convergence& convergence = model.convergence();
    if (prediction.epochs_recipe >= 0) {
        request.recipe = &convergence.recipes[static_cast<std::size_t>(prediction.epochs_recipe)];
    } else {
        for (const Recipe& recipe : convergence.recipes) {
            if (recipe.name == convergence.default_recipe_for(scenario.model) && recipe.model == scenario.model) {
                request.recipe = &recipe;
                break;
            }
        }
    }
    request.train_command = flags.train_command;
    request.predict_flags = scenario_flags(request.scenario);
    for (const std::string& file : catalogs) request.catalog_flags += " --catalog " + file;
    write_text_file_atomically(flags.output, job_file(parse_job_format(flags.format), request), "launch");
}

}  // namespace epochcast::cli
