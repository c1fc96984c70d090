#include "cli/common.hpp"

#include "model/convergence.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/resnet.hpp"
#include "model/text_io.hpp"
#include "model/types.hpp"
#include "traces/trace.hpp"

namespace epochcast::cli {

void SpotFlags::apply(Scenario& scenario) const {
    if (rate_option != nullptr && rate_option->count() > 0) {
        check_given_spot_rate(interruptions_per_node_hour);
        scenario.spot_interruptions_per_node_hour = interruptions_per_node_hour;
    }
    if (!checkpoint_every.empty())
        scenario.checkpoint_interval_s = parse_duration_s(checkpoint_every, "--checkpoint-every");
    if (!replacement_wait.empty()) {
        scenario.spot_replacement_wait_s = parse_duration_or_zero_s(replacement_wait, "--spot-replacement-wait");
    }
    check_spot_limits(scenario);
}

void add_spot_flags(CLI::App& cmd, SpotFlags& flags) {
    flags.rate_option = without_default(cmd.add_option(
        "--spot-interruptions-per-node-hour", flags.interruptions_per_node_hour,
        "With --pricing spot: how often one node is taken back, per node-hour (default: the catalog's frequency band "
        "for the instance; docs/model.md, \"Spot interruptions\")"));
    cmd.add_option(
        "--checkpoint-every", flags.checkpoint_every,
        "With --pricing spot: work between checkpoints, e.g. 30min (default: one epoch's, as on demand, or Young's "
        "interval sqrt(2 C / interruption rate) where that is shorter; the output recommends Young's)");
    cmd.add_option("--spot-replacement-wait", flags.replacement_wait,
                   "With --pricing spot: the wait for a replacement node after an interruption, e.g. 10min (default "
                   "5min, an assumption)");
}

CLI::Option* add_catalog_option(CLI::App& cmd, std::vector<std::string>& files) {
    return cmd
        .add_option("--catalog", files,
                    "Extra catalog file (epochcast.catalog/1) merged over the built-in one; repeatable, later files "
                    "override earlier ones by name")
        ->type_name("FILE")
        ->allow_extra_args(false);
}

CLI::Option* add_calibration_option(CLI::App& cmd, std::string& name, const std::string& flag,
                                    const std::string& role) {
    return cmd
        .add_option(flag, name,
                    role +
                        ": built-in (fitted to the published runs), data-free (the prior, no published run in it) "
                        "or a calibration file (epochcast.calibration/1)")
        ->type_name("CAL");
}

CLI::Option* without_default(CLI::Option* option) { return option->default_str(""); }

CLI::Option* add_json_flag(CLI::App& cmd, bool& json, const std::string& what) {
    return cmd.add_flag("--json", json, "Print " + what + " instead of the text");
}

bool ScenarioFlags::any_given() const {
    for (const CLI::Option* option : options) {
        if (option->count() > 0) return true;
    }
    return false;
}

void TargetFlags::apply(Scenario& scenario) const {
    const bool has_target = target != nullptr && target->count() > 0;
    if (recipe_option != nullptr && recipe_option->count() > 0) {
        if (!has_target)
            throw InputError("--recipe goes with --target-top1 (without a target the epochs are --epochs)");
        Convergence::built_in().require_known(recipe);
    }
    if (!has_target) return;
    check_target_top1(target_top1_percent);
    scenario.target_top1_percent = target_top1_percent;
    scenario.recipe = recipe;
}

void add_target_flags(CLI::App& cmd, TargetFlags& flags, CLI::Option* epochs) {
    flags.target =
        cmd.add_option("--target-top1", flags.target_top1_percent,
                       "Target ImageNet top-1 accuracy in percent (e.g. 75.9): the epochs become what the recipe "
                       "needs at the run's global batch (replaces --epochs)");
    without_default(flags.target);  // 0: no target, the epochs are --epochs
    flags.recipe_option = cmd.add_option("--recipe", flags.recipe,
                                         "Training recipe for --target-top1: " + Convergence::built_in().names() +
                                             " (default " + Convergence::built_in().default_recipe +
                                             " where it is published for the model, else the first that is; "
                                             "mlperf-lars only when named)");
    if (epochs != nullptr) flags.target->excludes(epochs);
}

Scenario ScenarioFlags::to_scenario() const {
    Scenario s = scenario;
    target.apply(s);
    s.precision = parse_precision(precision, "--precision");
    s.framework = parse_framework(framework, "--framework");
    s.pricing = parse_pricing(pricing, "--pricing");
    s.stack = parse_software_stack(stack, "--stack");
    s.memory_format = parse_memory_format(memory_format, "--memory-format");
    s.loader = parse_loader(loader, "--loader");
    run_costs.apply(s);
    s.strategy = strategy.empty() ? Strategy::nccl : parse_strategy(strategy, "--strategy");
    // The model's sentinels (0 GPUs per node: all; 0 global batch: --batch-per-gpu rules; 0
    // servers: none; -1 adapters: all) are what a flag left out means; given, each must be a count.
    struct Floor {
        const CLI::Option* option;
        int value;
        int lowest;
        const char* left_out;
    };
    for (const Floor& f : {Floor{gpus_per_node, s.gpus_per_node, 1, "leave it out to use all the instance's GPUs"},
                           Floor{global_batch, s.global_batch, 1, "leave it out to set --batch-per-gpu"},
                           Floor{ps_nodes, s.ps_nodes, 1, "leave it out with --ps-colocated or an all-reduce strategy"},
                           Floor{efa_adapters, s.efa_adapters, 0, "leave it out to use all the instance's adapters"}}) {
        if (f.option != nullptr && f.option->count() > 0 && f.value < f.lowest) {
            throw InputError(f.option->get_name() + " must be at least " + std::to_string(f.lowest) + " (got " +
                             std::to_string(f.value) + "; " + f.left_out + ")");
        }
    }
    check_scenario_limits(s);
    return s;
}

void add_scenario_flags(CLI::App& cmd, ScenarioFlags& flags) {
    Scenario& s = flags.scenario;
    auto& scen = flags.options;
    scen.push_back(cmd.add_option("--instance", s.instance, "Worker instance type (see `epochcast catalog`)"));
    scen.push_back(cmd.add_option("--nodes", s.nodes, "Worker instances, 1 to " + format_count(kMaxNodes)));
    flags.gpus_per_node = cmd.add_option("--gpus-per-node", s.gpus_per_node,
                                         "GPUs used per instance, 1 to what the instance has (at most " +
                                             format_count(kMaxGpusPerNode) + "; default: all of them)");
    without_default(flags.gpus_per_node);
    scen.push_back(flags.gpus_per_node);
    scen.push_back(cmd.add_option("--batch-per-gpu", s.batch_per_gpu,
                                  "Images per GPU per iteration, 1 to " + format_count(kMaxBatchPerGpu)));
    flags.global_batch =
        cmd.add_option("--global-batch", s.global_batch,
                       "Images per iteration over all GPUs (1 to " + format_count(kMaxGlobalBatch) +
                           "), held fixed: the per-GPU batch is this over the GPUs (replaces --batch-per-gpu)");
    without_default(flags.global_batch);
    scen.push_back(flags.global_batch);
    scen.push_back(cmd.add_option(
        "--precision", flags.precision,
        "amp (fp16 mixed precision), bf16 (bf16 mixed precision), tf32 (fp32 tensors on TF32 tensor cores: what "
        "PyTorch and TensorFlow run 'fp32' convolutions as by default on A100 and later) or fp32 (strict)"));
    scen.push_back(cmd.add_option(
        "--strategy", flags.strategy,
        "nccl (NCCL's own choice of ring, tree or NVLS per bucket; the default), ring or tree (NCCL_ALGO "
        "forced), hierarchical (Horovod's) or ps"));
    scen.push_back(
        cmd.add_option("--framework", flags.framework,
                       "pytorch, tensorflow, mxnet or epochcast (this project's own executor, `epochcast run`)"));
    scen.push_back(cmd.add_option(
        "--loader", flags.loader,
        "How images reach the GPU: default (the framework's: cpu for pytorch, tensorflow and epochcast, dali for "
        "mxnet), cpu (the framework's own CPU pipeline), dali-cpu, dali (decoding on the GPU) or synthetic"));
    scen.push_back(cmd.add_option("--memory-format", flags.memory_format,
                                  "channels_last (NHWC, as NVIDIA's tuned code and MLPerf run) or nchw (PyTorch's "
                                  "default memory format); matters for tensor-core precisions"));
    scen.push_back(cmd.add_flag(
        "--compile", s.compiled,
        "PyTorch under torch.compile (TorchInductor's default mode) rather than eager: the eager curve carried by "
        "one measured pair, its band wider at small batches (docs/model.md, eq. C9)"));
    // --stack, like --pricing, is no scenario flag for predict's default: it applies to its set-ups.
    cmd.add_option("--stack", flags.stack,
                   "Software stack: current (NGC-tuned and current releases; the default) or legacy (2017-2018 "
                   "stock releases on CUDA 9; docs/model.md)");
    scen.push_back(cmd.add_option("--ps-instance", s.ps_instance, "Parameter-server instance type (--strategy ps)"));
    flags.ps_nodes =
        cmd.add_option("--ps-nodes", s.ps_nodes,
                       "Dedicated parameter-server instances, at least 1 (--strategy ps without --ps-colocated; "
                       "left out: none)");
    without_default(flags.ps_nodes);
    scen.push_back(flags.ps_nodes);
    scen.push_back(cmd.add_flag("--ps-colocated", s.ps_colocated, "One server on each worker node (--strategy ps)"));
    flags.efa_adapters =
        cmd.add_option("--efa-adapters", s.efa_adapters,
                       "EFA adapters used per node, 0 (TCP sockets) up to what the instance has (default: all)");
    without_default(flags.efa_adapters);
    scen.push_back(flags.efa_adapters);
    scen.push_back(cmd.add_option("--model", s.model, "resnet18, resnet34, resnet50, resnet101 or resnet152"));
    scen.push_back(
        cmd.add_option("--image-size", s.image_size, "Input side in pixels, 32 to " + format_count(kMaxImageSizePx)));
    scen.push_back(cmd.add_option("--classes", s.classes, "Classifier outputs, 1 to " + format_count(kMaxClasses)));
    scen.push_back(cmd.add_option("--dataset-images", s.dataset_images,
                                  "Images per epoch, 1 to " + format_count(static_cast<double>(kMaxDatasetImages)) +
                                      " (default: ImageNet-1k's)"));
    scen.push_back(
        cmd.add_option("--epochs", s.epochs, "Epochs to train, more than 0 and at most " + format_count(kMaxEpochs)));
    add_target_flags(cmd, flags.target, scen.back());
    scen.push_back(flags.target.target);
    scen.push_back(flags.target.recipe_option);
    cmd.add_option("--pricing", flags.pricing,
                   "How the instances are sold: on-demand, spot, capacity-block, reserved-1y or reserved-3y (an "
                   "instance not sold that way is refused, naming the ways it is sold)");
    add_run_cost_flags(cmd, flags.run_costs, &scen);
}

void RunCostFlags::apply(Scenario& scenario) const {
    scenario.storage = parse_store(storage, "--storage");
    scenario.storage_tib = storage_tib;
    scenario.storage_tier_MBps_per_TiB = storage_tier_MBps_per_TiB;
    scenario.eval_every_epochs = eval_every_epochs;
    scenario.eval_images = eval_images;
    if (!startup.empty()) scenario.startup_s = parse_duration_or_zero_s(startup, "--startup");
    check_run_cost_limits(scenario);
}

void add_run_cost_flags(CLI::App& cmd, RunCostFlags& flags, std::vector<CLI::Option*>* options) {
    const std::vector<CLI::Option*> added = {
        cmd.add_option("--storage", flags.storage,
                       "Where the images are read from: none (not modelled; the default), local-nvme (staged to each "
                       "node's NVMe), fsx-lustre (staged to FSx for Lustre), s3 (streamed) or efs (staged to EFS): "
                       "the store's read bound, the staging copy and the store's cost"),
        without_default(cmd.add_option("--storage-tib", flags.storage_tib,
                                       "With --storage fsx-lustre: the capacity provisioned, in TiB (default 1.2, the "
                                       "smallest; its throughput grows with it)")),
        without_default(cmd.add_option("--storage-tier", flags.storage_tier_MBps_per_TiB,
                                       "With --storage fsx-lustre: the throughput tier, 125, 250, 500 or 1000 MB/s per "
                                       "TiB (default 125)")),
        cmd.add_option("--eval-every", flags.eval_every_epochs,
                       "An evaluation pass over the validation images after every this many epochs, 0 for none "
                       "(default: the recipe's with --target-top1, every 4 for mlperf-lars, else none; 1 as "
                       "torchvision's reference script)"),
        cmd.add_option("--eval-images", flags.eval_images,
                       "Validation images per evaluation pass (default: ImageNet-1k's 50,000; 0: none)"),
        cmd.add_option("--startup", flags.startup,
                       "Launch to first iteration, e.g. 5min or 0 (default: the calibration's, 90 s at any cluster "
                       "size; docs/model.md, eq. L1)")};
    if (options != nullptr) options->insert(options->end(), added.begin(), added.end());
}

Evidence load_evidence(const std::vector<std::string>& files, const Catalog& catalog) {
    Evidence evidence;
    for (const std::string& file : files) {
        std::string path = file;
        int selected = -1;
        if (const auto hash = file.rfind('#'); hash != std::string::npos) {
            path = file.substr(0, hash);
            const std::string index = file.substr(hash + 1);
            try {
                std::size_t used = 0;
                selected = std::stoi(index, &used);
                if (used != index.size() || selected < 0) throw std::invalid_argument(index);
            } catch (const std::exception&) {
                throw InputError("'" + file + "': after '#' comes a run index (0, 1, ...), not '" + index + "'");
            }
        }
        const Trace trace = read_trace(path, catalog);
        if (selected >= 0) {
            if (static_cast<std::size_t>(selected) >= trace.runs.size()) {
                throw InputError("'" + file + "': " + path + " has " + std::to_string(trace.runs.size()) + " runs");
            }
            evidence.runs.push_back(trace.runs[static_cast<std::size_t>(selected)].observation);
            continue;
        }
        add_evidence(trace, catalog, path, evidence);
    }
    return evidence;
}

}  // namespace epochcast::cli
