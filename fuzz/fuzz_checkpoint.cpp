// libFuzzer target: a checkpoint file (executor/checkpoint.cpp, compiled alone with the model's
// headers): the bytes become <temp folder>/checkpoint.ecp and read_checkpoint reads them, as
// `epochcast-train --resume` does.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "executor/checkpoint.hpp"
#include "fuzz/harness.hpp"

using namespace epochcast;

namespace {

/// A folder of this process's own, removed at exit.
const std::filesystem::path& folder() {
    static const std::filesystem::path path = [] {
        std::filesystem::path p =
            std::filesystem::temp_directory_path() / ("fuzz_checkpoint." + std::to_string(::getpid()));
        std::filesystem::create_directories(p);
        std::atexit([] {
            std::error_code ignored;
            std::filesystem::remove_all(folder(), ignored);
        });
        return p;
    }();
    return path;
}

/// Writes `bytes` as the checkpoint file and reads it as `--resume` does, holding the reader to its
/// contract.
int read_as_checkpoint(const std::string& bytes) {
    {
        std::ofstream out(folder() / kCheckpointFile, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        if (!out) fuzz::fail("cannot write the checkpoint file", (folder() / kCheckpointFile).string());
    }
    return fuzz::run(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), [](std::string_view) {
        const Checkpoint checkpoint = read_checkpoint(folder());
        if (checkpoint.momentum.size() != checkpoint.weights.size()) {
            fuzz::fail("a checkpoint read with momentum and weights of different sizes", "");
        }
    });
}

}  // namespace

// Each input is read twice: as it is, and re-signed (its FNV-1a checksum appended, as anyone who can
// write the folder can do; issue 59, item 1). Random bytes almost never carry a valid checksum, so
// only the re-signed file reaches the header's counts, the state list and the values behind them.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string bytes(reinterpret_cast<const char*>(data), size);
    read_as_checkpoint(bytes);
    const std::uint64_t checksum = fnv1a64(bytes);
    for (int i = 0; i < 8; ++i) bytes += static_cast<char>((checksum >> (8 * i)) & 0xFF);
    return read_as_checkpoint(bytes);
}
