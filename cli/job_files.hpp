// Launch files for one predicted configuration (`predict --emit`, `plan --emit`; docs/cli.md,
// "Launch files"): a Slurm batch script, a SkyPilot task or the per-node torchrun lines that run
// the training epochcast predicted, the fabric's environment set as its cloud documents it, and
// what the prediction assumed written at the top as comments a person reads. job_file is a pure
// function of its request; write_job_file alone writes, the whole file or nothing.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "model/catalog.hpp"
#include "model/convergence.hpp"
#include "model/cost_model.hpp"
#include "model/prediction.hpp"
#include "model/scenario.hpp"

namespace epochcast::cli {

enum class JobFormat { sbatch, skypilot, torchrun };

/// "sbatch", "skypilot" or "torchrun"; throws InputError naming the three for anything else.
JobFormat parse_job_format(std::string_view text);
std::string_view to_string(JobFormat format);

/// The environment the fabric between the nodes needs, with where its cloud documents it.
struct FabricEnvironment {
    std::string_view name;  ///< "EFA", "GPUDirect-TCPX", "InfiniBand", ...
    std::vector<std::pair<std::string_view, std::string_view>> variables;
    std::string_view source;
};

/// The environment for `instance`: by its interconnect and cloud (EFA's libfabric provider and
/// NCCL's settings on AWS, InfiniBand's with Azure's topology file on its ND H100 v5, TCPX on GCP's
/// A3 High, TCPXO on A3 Mega), nothing to set for plain TCP or one node's NVLink.
const FabricEnvironment& fabric_environment(const InstanceSpec& instance);

/// What a launch file is written from: one configuration as predict resolved it and its prediction.
struct JobRequest {
    Scenario scenario;  ///< with the resolved GPUs per node and batch per GPU
    Prediction prediction;
    const InstanceSpec* instance = nullptr;
    DeviceKind device = DeviceKind::gpu;
    /// The learning rate's recipe: the epochs' recipe, else the model's default one; null where
    /// none is published for the model.
    const Recipe* recipe = nullptr;
    /// --train-cmd with its placeholders; empty: default_train_command's.
    std::string train_command;
    /// The predict flags that give this configuration again (scenario_flags), for the check at the end of the run.
    std::string predict_flags;
    /// " --catalog FILE" for each catalog file it was predicted with (calibrate needs them too).
    std::string catalog_flags;
};

/// The training command for `framework` when --train-cmd gives none: torchvision's reference
/// train.py for PyTorch, `epochcast run` (epochcast-train under srun or mpirun) for epochcast.
/// Throws InputError for another framework, whose script epochcast does not know.
std::string default_train_command(Framework framework);

/// The file's text. Throws InputError for a placeholder of the training command it does not know,
/// {lr} where the recipe gives no learning rate, a format the framework is not started by
/// (torchrun for epochcast), and SkyPilot on hardware that is no cloud's.
std::string job_file(JobFormat format, const JobRequest& request);

/// predict's and plan's --emit, -o and --train-cmd.
struct EmitFlags {
    std::string format;  ///< empty: no launch file
    std::string output;
    std::string train_command;
};
void add_emit_flags(CLI::App& command, EmitFlags& flags);

/// Before any work: a format it knows, -o with --emit and only with it (and --train-cmd too), the
/// file writable and none of `inputs`. Throws InputError naming the flag.
void check_emit_flags(const EmitFlags& flags, const std::vector<std::string>& inputs);

/// Writes --emit's file for `scenario` (as `resolved` has it) and its `prediction` to -o, whole or
/// not at all; `catalogs`, the --catalog files it was predicted with, go into the check's commands.
/// Nothing where flags.format is empty.
void write_job_file(const EmitFlags& flags, const CostModel& model, const Scenario& scenario,
                    const ResolvedScenario& resolved, const Prediction& prediction,
                    const std::vector<std::string>& catalogs);

}  // namespace epochcast::cli
