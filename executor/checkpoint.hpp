// Checkpoints: everything a run needs to continue exactly where it stopped. One file,
// "<dir>/checkpoint.ecp", replaced atomically (a temporary file, then a rename), holding
//   line 1: a JSON header {"schema": "epochcast.checkpoint/1", "run": {...identity...},
//           "next_step": S, "parameters": P, "state": [{"name", "elements"}...]}
//   then raw little-endian fp32: P weights, P momentum values, then each state tensor.
// The data position and the learning rate are functions of the step, so the step is all the
// loop itself needs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace epochcast {

inline constexpr const char* kCheckpointSchema = "epochcast.checkpoint/1";
inline constexpr const char* kCheckpointFile = "checkpoint.ecp";

struct NamedTensor {
    std::string name;
    std::vector<float> values;
};

struct Checkpoint {
    nlohmann::json run;              ///< what must match on resume: model, image size, classes, batch, workers, precision
    std::int64_t next_step = 0;      ///< the first step a resumed run performs (0-based)
    std::vector<float> weights;      ///< fp32 master weights, arena layout (executor/arena.hpp)
    std::vector<float> momentum;     ///< SGD momentum, same layout
    std::vector<NamedTensor> state;  ///< batch-norm running statistics
};

/// Write `checkpoint` into `directory` (created if missing) atomically. Throws InputError when the
/// folder cannot be created or written.
void write_checkpoint(const std::filesystem::path& directory, const Checkpoint& checkpoint);

/// Read the checkpoint in `directory`. Throws InputError naming the file when it is missing,
/// truncated or not a checkpoint.
Checkpoint read_checkpoint(const std::filesystem::path& directory);

/// Throws InputError naming the first key whose value differs between a checkpoint's run and
/// this run ("checkpoint was written for batch_per_gpu 16, this run has 32").
void check_resumable(const nlohmann::json& saved_run, const nlohmann::json& this_run, const std::filesystem::path& directory);

}  // namespace epochcast
