// libFuzzer target: a checkpoint file (executor/checkpoint.cpp, compiled alone with the model's
// headers): the bytes become <temp folder>/checkpoint.ecp and read_checkpoint reads them, as
// `epochcast-train --resume` does.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    {
        std::ofstream out(folder() / kCheckpointFile, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
        if (!out) fuzz::fail("cannot write the checkpoint file", (folder() / kCheckpointFile).string());
    }
    return fuzz::run(data, size, [](std::string_view) {
        const Checkpoint checkpoint = read_checkpoint(folder());
        if (checkpoint.momentum.size() != checkpoint.weights.size()) {
            fuzz::fail("a checkpoint read with momentum and weights of different sizes", "");
        }
    });
}
