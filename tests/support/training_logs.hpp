// Training logs written as the scripts print them, from figures a test chooses, so that the test
// knows what the reader must find: torchvision's references/classification/train.py (MetricLogger
// lines, delimiter two spaces, the step padded to the width of the epoch's step count), NVIDIA
// DeepLearningExamples' DLLogger JSON stream ("DLLL {...}" lines) and PyTorch Lightning's tqdm bar
// (redraws separated by carriage returns). The figures are the tests', not measurements.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace epochcast::testing {

/// One printed figure: the step (0-based within its epoch) and the seconds per step (torchvision,
/// Lightning) or the images per second over all ranks (DLLogger).
struct PrintedFigure {
    long step;
    double value;
};

inline std::string clock_text(long seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", seconds / 3600, seconds / 60 % 60, seconds % 60);
    return text;
}

/// torchvision's train.py output for `epochs` (each its printed figures and its total seconds),
/// after the arguments' Namespace line with `batch_size` and `world_size`; an evaluation after each
/// epoch, whose lines the reader must leave out.
inline std::string torchvision_log(const std::vector<std::vector<PrintedFigure>>& epochs,
                                   const std::vector<long>& epoch_seconds, long steps_per_epoch, int batch_size,
                                   int world_size, const std::string& prefix = "") {
    std::string out = "| distributed init (rank 0): env://\n";
    out += prefix + "Namespace(data_path='/data/imagenet', model='resnet50', device='cuda', batch_size=" +
           std::to_string(batch_size) + ", epochs=90, workers=16, lr=0.1, world_size=" + std::to_string(world_size) +
           ", dist_url='env://', amp=True)\n";
    const int width = static_cast<int>(std::to_string(steps_per_epoch).size());
    for (std::size_t e = 0; e < epochs.size(); ++e) {
        for (const PrintedFigure& f : epochs[e]) {
            char line[512];
            std::snprintf(line, sizeof line,
                          "Epoch: [%zu]  [%*ld/%ld]  eta: 0:02:13  lr: 0.1  img/s: 650.21  loss: 6.9021 (6.9100)  "
                          "acc1: 0.0000 (0.0777)  acc5: 0.3906 (0.5149)  time: %.4f  data: 0.0132  max mem: 21054\n",
                          e, width, f.step, steps_per_epoch, f.value);
            out += prefix + line;
        }
        out += prefix + "Epoch: [" + std::to_string(e) + "] Total time: " + clock_text(epoch_seconds[e]) + "\n";
        out += prefix +
               "Test:   [ 0/13]  eta: 0:00:20  loss: 6.1 (6.1)  acc1: 1.2 (1.2)  time: 1.5012  data: 1.1  "
               "max mem: 21054\n";
        out += prefix + "Test:  Total time: 0:00:12\n";
        out += prefix + "Test:  Acc@1 1.234 Acc@5 4.567\n";
    }
    out += "Training time " + clock_text(epoch_seconds.empty() ? 0 : epoch_seconds.back()) + "\n";
    return out;
}

/// DLLogger's JSON stream for `epochs` of train.total_ips figures, with the metadata and parameter
/// lines a run starts with, a verbose line per figure without throughput, each epoch's validation
/// and summary lines.
inline std::string dllogger_log(const std::vector<std::vector<PrintedFigure>>& epochs, int batch_size) {
    std::string out =
        "DLLL {\"timestamp\": \"1700000000.0\", \"elapsedtime\": \"0.1\", \"datetime\": \"2023-11-14 22:13:20\", "
        "\"type\": \"METADATA\", \"metric\": \"train.total_ips\", \"metadata\": {\"unit\": \"img/s\"}}\n";
    out +=
        "DLLL {\"timestamp\": \"1700000000.2\", \"elapsedtime\": \"0.2\", \"datetime\": \"2023-11-14 22:13:20\", "
        "\"type\": \"LOG\", \"step\": \"PARAMETER\", \"data\": {\"arch\": \"resnet50\", \"batch_size\": " +
        std::to_string(batch_size) + ", \"amp\": true}}\n";
    for (std::size_t e = 0; e < epochs.size(); ++e) {
        for (const PrintedFigure& f : epochs[e]) {
            char line[512];
            std::snprintf(line, sizeof line,
                          "DLLL {\"timestamp\": \"1700000100.0\", \"elapsedtime\": \"100.0\", \"datetime\": "
                          "\"2023-11-14 22:15:00\", \"type\": \"LOG\", \"step\": [%zu, %ld], \"data\": "
                          "{\"train.loss\": 6.5, \"train.compute_ips\": %.2f, \"train.total_ips\": %.2f, "
                          "\"train.lr\": 0.256}}\n",
                          e, f.step, f.value * 1.1, f.value);
            out += line;
            std::snprintf(line, sizeof line,
                          "DLLL {\"timestamp\": \"1700000100.0\", \"elapsedtime\": \"100.0\", \"datetime\": "
                          "\"2023-11-14 22:15:00\", \"type\": \"LOG\", \"step\": [%zu, %ld], \"data\": "
                          "{\"train.data_time\": 0.01, \"train.compute_time\": 0.3}}\n",
                          e, f.step);
            out += line;
        }
        out +=
            "DLLL {\"timestamp\": \"1700000200.0\", \"elapsedtime\": \"200.0\", \"datetime\": \"2023-11-14 "
            "22:16:40\", \"type\": \"LOG\", \"step\": [" +
            std::to_string(e) + ", 313, 10], \"data\": {\"val.total_ips\": 20000.0, \"val.top1\": 3.1}}\n";
        out +=
            "DLLL {\"timestamp\": \"1700000200.0\", \"elapsedtime\": \"200.0\", \"datetime\": \"2023-11-14 "
            "22:16:40\", \"type\": \"LOG\", \"step\": [" +
            std::to_string(e) + "], \"data\": {\"train.total_ips\": 99.0, \"val.top1\": 3.1}}\n";
    }
    out +=
        "DLLL {\"timestamp\": \"1700000300.0\", \"elapsedtime\": \"300.0\", \"datetime\": \"2023-11-14 22:18:20\", "
        "\"type\": \"LOG\", \"step\": [], \"data\": {\"train.total_ips\": 98.0}}\n";
    return out;
}

/// Lightning's bar: per epoch, one redraw per figure (`step` batches done, its rate as tqdm prints
/// it: "it/s" at or above one a second, else "s/it"), each redrawn twice as tqdm does at an
/// epoch's end, then a newline; the epoch's last redraw shows `epoch_seconds` elapsed.
inline std::string lightning_log(const std::vector<std::vector<PrintedFigure>>& epochs,
                                 const std::vector<long>& epoch_seconds, long steps_per_epoch) {
    std::string out = "GPU available: True (cuda), used: True\nLOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1]\n";
    for (std::size_t e = 0; e < epochs.size(); ++e) {
        out += "Epoch " + std::to_string(e) + ":   0%|          | 0/" + std::to_string(steps_per_epoch) +
               " [00:00<?, ?it/s]";
        for (const PrintedFigure& f : epochs[e]) {
            const double rate = 1.0 / f.value;
            char rate_text[32];
            if (rate >= 1) {
                std::snprintf(rate_text, sizeof rate_text, "%.2fit/s", rate);
            } else {
                std::snprintf(rate_text, sizeof rate_text, "%.2fs/it", f.value);
            }
            const bool last = f.step == steps_per_epoch;
            const std::string elapsed =
                last ? clock_text(epoch_seconds[e]).substr(clock_text(epoch_seconds[e]).find(':') + 1) : "00:10";
            const std::string bar = "\rEpoch " + std::to_string(e) + ":  50%|#####     | " + std::to_string(f.step) +
                                    "/" + std::to_string(steps_per_epoch) + " [" + elapsed + "<00:10, " + rate_text +
                                    ", v_num=0, train_loss=6.91]";
            out += bar + bar;  // tqdm redraws a count it has shown
        }
        out += "\n";
    }
    return out;
}

}  // namespace epochcast::testing
