// Seeds for the fuzz targets, made from the repository's own files (fuzz/gather-seeds runs it):
//   make_seeds checkpoints DIR   checkpoints written by executor/checkpoint.cpp itself, so they
//                                follow its format: DIR/empty.ecp, DIR/small.ecp, DIR/state.ecp
//   make_seeds split FILE DIR    FILE (a JSON object) cut into small documents the fuzzer mutates
//                                quickly: for each top-level array (runs, instances, compute, ...),
//                                up to 16 copies holding one of its entries, the other top-level
//                                arrays emptied (a calibration's uncertainty's too)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "executor/checkpoint.hpp"

using namespace epochcast;
using nlohmann::ordered_json;

namespace {

constexpr std::size_t kEntriesPerArray = 16;

void write_checkpoints(const std::filesystem::path& out) {
    const std::filesystem::path scratch = out / ".scratch";
    auto save = [&](const Checkpoint& checkpoint, const char* name) {
        write_checkpoint(scratch, checkpoint);
        std::filesystem::rename(scratch / kCheckpointFile, out / name);
    };
    Checkpoint empty;
    empty.run = {{"model", "resnet18"}, {"batch_per_gpu", 16}};
    save(empty, "empty.ecp");
    Checkpoint small = empty;
    small.next_step = 7;
    small.weights = {0.5f, -1.25f, 3.0f};
    small.momentum = {0.0f, 0.125f, -0.5f};
    save(small, "small.ecp");
    Checkpoint state = small;
    state.state = {{"bn1.mean", {0.1f, 0.2f}}, {"bn1.variance", {1.0f, 2.0f}}};
    save(state, "state.ecp");
    std::filesystem::remove_all(scratch);
}

void split(const std::filesystem::path& file, const std::filesystem::path& out) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    ordered_json document = ordered_json::parse(text.str());
    if (!document.is_object()) return;
    ordered_json bare = document;
    for (auto& [key, value] : bare.items()) {
        if (value.is_array()) value = ordered_json::array();
    }
    // A fitted calibration's uncertainty (a covariance of 71 x 71, hundreds of residuals) stays in
    // the whole file only.
    if (bare.contains("uncertainty") && bare["uncertainty"].is_object()) {
        for (auto& [key, value] : bare["uncertainty"].items()) {
            if (value.is_array()) value = ordered_json::array();
        }
    }
    const std::string stem = file.stem().string();
    for (const auto& [key, value] : document.items()) {
        if (!value.is_array()) continue;
        for (std::size_t i = 0; i < value.size() && i < kEntriesPerArray; ++i) {
            ordered_json piece = bare;
            piece[key] = ordered_json::array({value[i]});
            std::ofstream(out / (stem + "." + key + "." + std::to_string(i) + ".json")) << piece.dump(1) << '\n';
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    try {
        if (mode == "checkpoints" && argc == 3) {
            write_checkpoints(argv[2]);
            return 0;
        }
        if (mode == "split" && argc == 4) {
            split(argv[2], argv[3]);
            return 0;
        }
    } catch (const std::exception& error) {
        std::fprintf(stderr, "make_seeds: %s\n", error.what());
        return 1;
    }
    std::fprintf(stderr, "usage: make_seeds checkpoints DIR | make_seeds split FILE DIR\n");
    return 2;
}
