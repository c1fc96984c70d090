// Checkpoints: everything a run needs to continue exactly where it stopped. One file,
// "<dir>/checkpoint.ecp", replaced atomically (a temporary file, then a rename), holding
//   line 1: a JSON header {"schema": "epochcast.checkpoint/2", "run": {...identity...},
//           "next_step": S, "parameters": P, "state": [{"name", "elements"}...]}
//   then raw little-endian fp32: P weights, P momentum values, then each state tensor,
//   then 8 bytes: the FNV-1a 64 hash (little-endian) of every byte before them, header included.
// The data position and the learning rate are functions of the step, so the step is all the
// loop itself needs.
//
// Verification on read: the sizes the header announces must match the file, the checksum must
// match the bytes, and every value must be finite; otherwise the file is refused (InputError
// naming it), never resumed. Files of the first schema, "epochcast.checkpoint/1", carry no
// checksum: they are refused with a message saying so (start the run again, or resume with the
// epochcast that wrote them), because a checkpoint that cannot be verified is what let a
// corrupted file resume silently.
//
// Temporaries: a write goes through "checkpoint.ecp.tmp.<PID>" (model/text_io's atomic write).
// A writer killed mid-write leaves its temporary behind; each write removes the temporaries in
// the folder whose PID is no live process on this host (another run sharing the folder keeps
// its own in-flight temporary). A temporary written from another host into a shared folder
// cannot be told from a dead one: two runs on different hosts must not share a folder (they
// would overwrite each other's checkpoint anyway).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace epochcast {

inline constexpr const char* kCheckpointSchema = "epochcast.checkpoint/2";
inline constexpr const char* kUncheckedCheckpointSchema = "epochcast.checkpoint/1";  ///< before checksums
inline constexpr const char* kCheckpointFile = "checkpoint.ecp";

struct NamedTensor {
    std::string name;
    std::vector<float> values;
};

struct Checkpoint {
    nlohmann::json run;           ///< what must match on resume: model, image size, classes, batch, workers, precision
    std::int64_t next_step = 0;   ///< the first step a resumed run performs (0-based)
    std::vector<float> weights;   ///< fp32 master weights, arena layout (executor/arena.hpp)
    std::vector<float> momentum;  ///< SGD momentum, same layout
    std::vector<NamedTensor> state;  ///< batch-norm running statistics
};

/// FNV-1a, 64 bits (Fowler, Noll and Vo; offset basis 14695981039346656037, prime 1099511628211),
/// of `bytes`, continuing from `hash` (pass the result of an earlier call to hash in pieces).
/// Not cryptographic: it detects accidental damage (flipped bits, a cut or patched file).
std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t hash = 14695981039346656037ULL);

/// Write `checkpoint` into `directory` (created if missing) atomically, after removing stale
/// temporaries (see above). Throws InputError when the folder cannot be created or written.
void write_checkpoint(const std::filesystem::path& directory, const Checkpoint& checkpoint);

/// Read and verify the checkpoint in `directory`. Throws InputError naming the file when it is
/// missing, truncated, damaged (checksum mismatch), holds a non-finite value, is of the old
/// unchecked schema, or is not a checkpoint.
Checkpoint read_checkpoint(const std::filesystem::path& directory);

/// Throws InputError naming the first key whose value differs between a checkpoint's run and
/// this run ("checkpoint was written for batch_per_gpu 16, this run has 32").
void check_resumable(const nlohmann::json& saved_run, const nlohmann::json& this_run,
                     const std::filesystem::path& directory);

}  // namespace epochcast
