// Seeds for the fuzz targets, made from the repository's own files (fuzz/gather-seeds runs it):
//   make_seeds checkpoints DIR   checkpoints written by executor/checkpoint.cpp itself, so they
//                                follow its format: DIR/empty.ecp, DIR/small.ecp, DIR/state.ecp,
//                                and small.ecp with a next step of 7.1e26, checksummed again
//                                (DIR/huge-next-step.ecp: CI's fuzz run, UBSan)
//   make_seeds split FILE DIR    FILE (a JSON object) cut into small documents the fuzzer mutates
//                                quickly: for each top-level array (runs, instances, compute, ...),
//                                up to 16 copies holding one of its entries, the other top-level
//                                arrays emptied (a calibration's uncertainty's too)
//   make_seeds cases OUT         the inputs of issue 42's attack, each into OUT/<target>/ (the
//                                folders gather-seeds makes): zero-variance and extreme steps,
//                                huge money and figures, names that are not UTF-8, 10^12 rows,
//                                2,000 node losses
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "executor/checkpoint.hpp"
#include "model/calibration.hpp"

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

    // small.ecp with its header's next step 7.1e26 and the checksum made again: the reader gets as
    // far as the step (where nlohmann's float-to-integer conversion was undefined).
    std::ifstream in(out / "small.ecp", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes.resize(bytes.size() - 8);  // the old checksum
    const std::string step = "\"next_step\":7";
    const std::size_t at = bytes.find(step);
    if (at == std::string::npos) throw std::runtime_error("small.ecp has no next_step 7");
    bytes.replace(at, step.size(), "\"next_step\":711111111111111111111111111");
    std::uint64_t hash = 14695981039346656037ULL;  // FNV-1a 64, as executor/checkpoint.cpp
    for (const char byte : bytes) hash = (hash ^ static_cast<unsigned char>(byte)) * 1099511628211ULL;
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((hash >> (8 * i)) & 0xff));
    std::ofstream(out / "huge-next-step.ecp", std::ios::binary) << bytes;
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

/// A byte sequence that is not UTF-8, for names.
constexpr const char* kNotUtf8 = "n\xff\xfe";

void write_text(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }

/// A trace of one p3.2xlarge run whose `measured` is `measured` (JSON text), named `source`.
std::string one_run_trace(const std::string& measured, const std::string& source = "issue 42") {
    return R"({"schema": "epochcast.trace/1", "runs": [{"instance": "p3.2xlarge", "nodes": 1, "precision": "amp",
        "strategy": "nccl", "framework": "pytorch", "batch_per_gpu": 64, "source": ")" +
           source + R"(", "measured": )" + measured + "}]}";
}

void write_cases(const std::filesystem::path& out) {
    // Traces, as calibrate fits them (the calibration target) and as they are read (the trace
    // target): eight equal steps (a relative sigma of 0/0), a step of 1e300, runs of 1 and 10^12
    // images/s and one of 10^-300, a source that is not UTF-8.
    const std::vector<std::pair<std::string, std::string>> traces = {
        {"zero-variance-steps",
         one_run_trace(R"({"throughput_images_per_s": 800, "step_compute_s": [0.25, 0.25, 0.25, 0.25, 0.25, 0.25,
             0.25, 0.25]})")},
        {"huge-step", one_run_trace(R"({"throughput_images_per_s": 800, "step_compute_s": [1e300, 0.25]})")},
        {"tiny-throughput", one_run_trace(R"({"throughput_images_per_s": 1e-300})")},
        {"not-utf8-source", one_run_trace(R"({"throughput_images_per_s": 800})", kNotUtf8)},
        {"twelve-orders-apart",
         R"({"schema": "epochcast.trace/1", "runs": [
             {"instance": "p3.2xlarge", "nodes": 1, "precision": "amp", "strategy": "nccl", "framework": "pytorch",
              "batch_per_gpu": 16, "source": "a", "measured": {"throughput_images_per_s": 1}},
             {"instance": "p3.2xlarge", "nodes": 1, "precision": "amp", "strategy": "nccl", "framework": "pytorch",
              "batch_per_gpu": 32, "source": "b", "measured": {"throughput_images_per_s": 1e12}}]})"}};
    for (const auto& [name, text] : traces) {
        write_text(out / "calibration" / ("issue42-" + name + ".json"), text);
        write_text(out / "trace" / ("issue42-" + name + ".json"), text);
    }
    // A calibration whose every spread is zero.
    nlohmann::json calibration = nlohmann::json::parse(Calibration::built_in().to_json());
    std::vector<nlohmann::json*> pending = {&calibration};
    while (!pending.empty()) {
        nlohmann::json* node = pending.back();
        pending.pop_back();
        if (node->is_object()) {
            for (auto& [key, value] : node->items()) {
                if ((key == "relative_sigma" || key == "model_sigma") && value.is_number()) value = 0.0;
                pending.push_back(&value);
            }
        } else if (node->is_array()) {
            for (nlohmann::json& value : *node) pending.push_back(&value);
        }
    }
    write_text(out / "calibration" / "issue42-zero-sigmas.json", calibration.dump(1));

    // Catalogs: money and figures at the edges of what is accepted and past them, a name that is
    // not UTF-8.
    auto catalog = [](const std::string& gpu_figures, const std::string& price, const std::string& name) {
        return R"({"schema": "epochcast.catalog/1", "gpus": [{"name": "X1", "fp16_tflops": 20, "memory_gib": 16,
            "source": "t", )" +
               gpu_figures + R"(}], "instances": [{"name": ")" + name +
               R"(", "gpu": "X1", "gpus": 1, "vcpus": 12, "memory_gib": 96, "network_gbps": 100, "source": "t",
            "prices": {"on-demand": {"usd_per_hour": )" +
               price + "}}}]}";
    };
    write_text(out / "catalog" / "issue42-huge-price.json",
               catalog(R"("fp32_tflops": 10, "memory_GBps": 500)", "1e300", "x1.big"));
    write_text(out / "catalog" / "issue42-money-at-the-bound.json",
               catalog(R"("fp32_tflops": 10, "memory_GBps": 500)", "1e9", "x1.big"));
    write_text(out / "catalog" / "issue42-tiny-figures.json",
               catalog(R"("fp32_tflops": 1e-300, "memory_GBps": 1e-300)", "1e62", "x1.big"));
    write_text(out / "catalog" / "issue42-not-utf8-name.json",
               catalog(R"("fp32_tflops": 10, "memory_GBps": 500)", "4.5", kNotUtf8));

    // A sweep spec of 10^12 rows (four lists of 1,000 values) and one naming an instance that is
    // not UTF-8.
    nlohmann::json spec = {{"instance", "p3.16xlarge"}};
    for (const char* key : {"nodes", "batch_per_gpu", "classes", "dataset_images"}) {
        spec[key] = nlohmann::json::array();
        for (int i = 1; i <= 1000; ++i) spec[key].push_back(i);
    }
    write_text(out / "sweep_spec" / "issue42-trillion-rows.json", spec.dump());
    write_text(out / "sweep_spec" / "issue42-not-utf8-instance.json",
               std::string(R"({"instance": [")") + kNotUtf8 + R"("], "nodes": [1, 2]})");

    // An nccl-tests log with a bus bandwidth of 1e300 GB/s and a host name that is not UTF-8.
    write_text(out / "nccl_log" / "issue42-huge-bandwidth.log",
               std::string("worker-") + kNotUtf8 +
                   ":33:33 [0] NCCL INFO comm 0x7fd4a0000f60 rank 0 nranks 16 cudaDev 0 busId 901c0\n"
                   "#       size         count      type   redop     time   algbw   busbw  error\n"
                   "        1024           256     float     sum    646.6   1e300   1e300  2e-07\n"
                   "     1048576        262144     float     sum   1599.2    0.66    1.23  5e-07\n"
                   "  1073741824     268435456     float     sum    47904   22.41   42.03  5e-07\n");

    // An elastic schedule of 2,000 node losses, one every 0.04 epochs.
    nlohmann::json schedule = {{"schema", "epochcast.elastic/1"},
                               {"phases", {{{"epochs", 90}, {"nodes", 4000}}}},
                               {"node_losses", nlohmann::json::array()}};
    for (int i = 0; i < 2000; ++i) schedule["node_losses"].push_back({{"epoch", i * 0.04}});
    write_text(out / "elastic" / "issue42-2000-node-losses.json", schedule.dump());
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    try {
        if (mode == "checkpoints" && argc == 3) {
            write_checkpoints(argv[2]);
            return 0;
        }
        if (mode == "cases" && argc == 3) {
            write_cases(argv[2]);
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
    std::fprintf(stderr, "usage: make_seeds checkpoints DIR | make_seeds split FILE DIR | make_seeds cases OUT\n");
    return 2;
}
