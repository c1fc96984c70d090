#include "traces/log_import.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "model/errors.hpp"

namespace epochcast {
namespace {

[[noreturn]] void fail(std::string_view origin, const std::string& what) {
    throw InputError(std::string(origin) + ": " + what);
}

/// One piece of the log: a line, or one of a line's carriage-return-separated redraws (tqdm).
struct Segment {
    std::string_view text;
    long line = 0;  ///< 1-based line number, for errors
};

template <class F>
void for_each_segment(std::string_view text, F&& f) {
    long line = 1;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= text.size(); ++i) {
        if (i == text.size() || text[i] == '\n' || text[i] == '\r') {
            if (i > start) f(Segment{text.substr(start, i - start), line});
            if (i < text.size() && text[i] == '\n') ++line;
            start = i + 1;
        }
    }
}

void skip_blanks(std::string_view s, std::size_t& pos) {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t')) ++pos;
}

bool read_long(std::string_view s, std::size_t& pos, long& value) {
    skip_blanks(s, pos);
    const auto [end, ec] = std::from_chars(s.data() + pos, s.data() + s.size(), value);
    if (ec != std::errc()) return false;
    pos = static_cast<std::size_t>(end - s.data());
    return true;
}

bool read_double(std::string_view s, std::size_t& pos, double& value) {
    skip_blanks(s, pos);
    const auto [end, ec] = std::from_chars(s.data() + pos, s.data() + s.size(), value);
    if (ec != std::errc() || !std::isfinite(value)) return false;
    pos = static_cast<std::size_t>(end - s.data());
    return true;
}

bool expect(std::string_view s, std::size_t& pos, char c) {
    skip_blanks(s, pos);
    if (pos >= s.size() || s[pos] != c) return false;
    ++pos;
    return true;
}

/// "H:MM:SS", "MM:SS" or Python's timedelta "D day(s), H:MM:SS", as seconds; -1 when it is none.
double read_clock_s(std::string_view s, std::size_t pos) {
    double days = 0;
    long value = 0;
    std::size_t p = pos;
    if (read_long(s, p, value)) {
        skip_blanks(s, p);
        if (s.substr(p).starts_with("day")) {
            days = static_cast<double>(value);
            p = s.find(',', p);
            if (p == std::string_view::npos) return -1;
            pos = p + 1;
        }
    }
    double total = 0;
    int parts = 0;
    p = pos;
    while (true) {
        if (!read_long(s, p, value) || value < 0) return -1;
        total = total * 60 + static_cast<double>(value);
        ++parts;
        if (p < s.size() && s[p] == ':') {
            ++p;
            continue;
        }
        break;
    }
    if (parts < 2 || parts > 3) return -1;
    return days * 86400 + total;
}

/// An integer "key=" of Python's Namespace(...) repr, or 0.
int namespace_int(std::string_view s, std::string_view key) {
    for (std::size_t at = s.find(key); at != std::string_view::npos; at = s.find(key, at + 1)) {
        if (at > 0 && s[at - 1] != ' ' && s[at - 1] != '(' && s[at - 1] != ',') continue;
        std::size_t p = at + key.size();
        long value = 0;
        if (read_long(s, p, value) && value > 0 && value <= 1 << 30) return static_cast<int>(value);
    }
    return 0;
}

bool is_torchvision(std::string_view s) {
    const std::size_t at = s.find("Epoch: [");
    return at != std::string_view::npos && (s.find("time: ", at) != std::string_view::npos);
}

bool is_dllogger(std::string_view s) { return s.find("DLLL {") != std::string_view::npos; }

/// The position after "Epoch N:" of a Lightning bar, or npos.
std::size_t lightning_epoch(std::string_view s, long& epoch) {
    for (std::size_t at = s.find("Epoch "); at != std::string_view::npos; at = s.find("Epoch ", at + 1)) {
        std::size_t p = at + 6;
        if (p < s.size() && s[p] >= '0' && s[p] <= '9' && read_long(s, p, epoch) && p < s.size() && s[p] == ':')
            return p + 1;
    }
    return std::string_view::npos;
}

bool is_lightning(std::string_view s) {
    long epoch = 0;
    return lightning_epoch(s, epoch) != std::string_view::npos &&
           (s.find("it/s") != std::string_view::npos || s.find("s/it") != std::string_view::npos);
}

// torchvision: "Epoch: [E]  [  I/N]  eta: ...  time: T  data: D  max mem: M" and
// "Epoch: [E] Total time: H:MM:SS".
void read_torchvision(const Segment& seg, std::string_view origin, TrainingLog& log) {
    const std::string_view s = seg.text;
    if (s.find("Namespace(") != std::string_view::npos) {
        if (const int b = namespace_int(s, "batch_size="); b > 0) log.batch_per_gpu = b;
        if (const int w = namespace_int(s, "world_size="); w > 0) log.world_size = w;
        return;
    }
    const std::size_t at = s.find("Epoch: [");
    if (at == std::string_view::npos) return;
    std::size_t p = at + 8;
    long epoch = 0;
    if (!read_long(s, p, epoch) || !expect(s, p, ']')) return;
    skip_blanks(s, p);
    if (s.substr(p).starts_with("Total time:")) {
        const double seconds = read_clock_s(s, p + 11);
        if (seconds < 0)
            fail(origin, "line " + std::to_string(seg.line) + ": an epoch's total time that is no H:MM:SS");
        // train.py prints whole seconds: an epoch under one second reads 0:00:00, which says nothing of its time.
        if (seconds > 0) log.epoch_s.push_back(seconds);
        return;
    }
    long step = 0;
    long steps = 0;
    if (!expect(s, p, '[') || !read_long(s, p, step) || !expect(s, p, '/') || !read_long(s, p, steps) ||
        !expect(s, p, ']'))
        return;
    std::size_t t = s.find("time: ", p);
    while (t != std::string_view::npos && s[t - 1] != ' ' && s[t - 1] != '\t') t = s.find("time: ", t + 1);
    if (t == std::string_view::npos) return;
    std::size_t q = t + 6;
    double seconds = 0;
    if (!read_double(s, q, seconds) || !(seconds > 0)) {
        fail(origin, "line " + std::to_string(seg.line) + ": a step time that is no positive number of seconds");
    }
    if (step < 0 || steps < 1 || step >= steps) {
        fail(origin,
             "line " + std::to_string(seg.line) + ": step " + std::to_string(step) + " of " + std::to_string(steps));
    }
    // MetricLogger's iter_time keeps the epoch's last 20 steps (a deque of 20, new each epoch).
    log.figures.push_back({static_cast<int>(epoch), std::max(0L, step - 19), step, seconds, 0});
    log.steps_per_epoch = std::max(log.steps_per_epoch, steps);
}

// DLLogger: "DLLL {"type": "LOG", "step": [E, I], "data": {"train.total_ips": X, ...}}".
void read_dllogger(const Segment& seg, std::string_view origin, TrainingLog& log) {
    const std::size_t at = seg.text.find("DLLL {");
    if (at == std::string_view::npos) return;
    nlohmann::json entry;
    try {
        entry = nlohmann::json::parse(seg.text.substr(at + 5));
    } catch (const nlohmann::json::exception&) {
        fail(origin, "line " + std::to_string(seg.line) + ": a DLLL line that is not JSON");
    }
    if (!entry.is_object() || entry.value("type", "") != "LOG" || !entry.contains("data") || !entry["data"].is_object())
        return;
    const nlohmann::json& step = entry.contains("step") ? entry["step"] : nlohmann::json();
    const nlohmann::json& data = entry["data"];
    auto whole = [&](const char* key) {
        const auto found = data.find(key);
        if (found == data.end() || !found->is_number()) return 0;
        const double v = found->get<double>();
        return v >= 1 && v <= (1 << 30) && v == std::floor(v) ? static_cast<int>(v) : 0;
    };
    if (step.is_string() && step.get<std::string>() == "PARAMETER") {
        if (const int b = whole("batch_size"); b > 0) log.batch_per_gpu = b;
        if (const int w = whole("world_size"); w > 0) log.world_size = w;
        return;
    }
    // Training iterations only: [epoch, iteration] ([E, I, V] are validation's, [E] an epoch's summary).
    if (!step.is_array() || step.size() != 2 || !step[0].is_number_integer() || !step[1].is_number_integer()) return;
    const auto ips = data.find("train.total_ips");
    if (ips == data.end() || !ips->is_number()) return;
    const double images_per_s = ips->get<double>();
    if (!(images_per_s > 0) || !std::isfinite(images_per_s)) {
        fail(origin, "line " + std::to_string(seg.line) + ": train.total_ips is not a positive number");
    }
    const int epoch = step[0].get<int>();
    const long iteration = step[1].get<long>();
    long first = 0;
    if (!log.figures.empty() && log.figures.back().epoch == epoch && log.figures.back().last_step < iteration) {
        first = log.figures.back().last_step + 1;
    }
    // The meters average every step since the previous line of the epoch.
    log.figures.push_back({epoch, first, std::max(first, iteration), 0, images_per_s});
}

// Lightning (tqdm): "Epoch E:  45%|####5     | 2250/5005 [12:30<15:19,  3.00it/s, v_num=0, loss=5.1]".
void read_lightning(const Segment& seg, TrainingLog& log, long& previous_done, int& previous_epoch) {
    const std::string_view s = seg.text;
    long epoch = 0;
    std::size_t p = lightning_epoch(s, epoch);
    if (p == std::string_view::npos) return;
    const std::size_t bar = s.find('|', p);
    if (bar == std::string_view::npos) return;
    p = s.find('|', bar + 1);
    if (p == std::string_view::npos) return;
    ++p;
    long done = 0;
    long total = 0;
    if (!read_long(s, p, done) || !expect(s, p, '/') || !read_long(s, p, total) || !expect(s, p, '[')) return;
    const std::size_t elapsed_at = p;
    const std::size_t lt = s.find('<', p);
    const std::size_t comma = s.find(',', p);
    if (lt == std::string_view::npos || comma == std::string_view::npos || comma < lt) return;
    p = comma + 1;
    double rate = 0;
    if (!read_double(s, p, rate) || !(rate > 0)) return;  // "?it/s": no rate yet
    const std::string_view unit = s.substr(p, 4);
    if (unit != "it/s" && unit != "s/it") return;
    if (static_cast<int>(epoch) != previous_epoch) {
        previous_epoch = static_cast<int>(epoch);
        previous_done = 0;
    }
    if (total > 0) log.steps_per_epoch = std::max(log.steps_per_epoch, total);
    if (done <= previous_done) return;  // a redraw of the same count
    const double iteration_s = unit == "it/s" ? 1.0 / rate : rate;
    log.figures.push_back({static_cast<int>(epoch), previous_done, done - 1, iteration_s, 0});
    previous_done = done;
    if (done == total) {
        const double seconds = read_clock_s(s.substr(0, lt), elapsed_at);
        if (seconds > 0) log.epoch_s.push_back(seconds);
    }
}

}  // namespace

std::optional<TrainingLogFormat> parse_training_log_format(std::string_view text) {
    if (text == "auto") return std::nullopt;
    if (text == "torchvision") return TrainingLogFormat::torchvision;
    if (text == "dllogger") return TrainingLogFormat::dllogger;
    if (text == "lightning") return TrainingLogFormat::lightning;
    throw InputError("--format must be auto, torchvision, dllogger or lightning, got '" + std::string(text) + "'");
}

std::string_view to_string(TrainingLogFormat format) {
    switch (format) {
        case TrainingLogFormat::torchvision:
            return "torchvision";
        case TrainingLogFormat::dllogger:
            return "dllogger";
        case TrainingLogFormat::lightning:
            return "lightning";
    }
    return "?";
}

TrainingLog read_training_log(std::string_view text, std::string_view origin, std::optional<TrainingLogFormat> format) {
    if (!format) {
        for_each_segment(text, [&](const Segment& seg) {
            if (format) return;
            if (is_dllogger(seg.text)) {
                format = TrainingLogFormat::dllogger;
            } else if (is_torchvision(seg.text)) {
                format = TrainingLogFormat::torchvision;
            } else if (is_lightning(seg.text)) {
                format = TrainingLogFormat::lightning;
            }
        });
        if (!format) {
            fail(origin,
                 "no throughput line of torchvision's train.py (\"Epoch: [E]  [I/N] ... time: T\"), DLLogger "
                 "(\"DLLL {...}\") or Lightning's progress bar (\"Epoch E: ... it/s\")");
        }
    }
    TrainingLog log;
    log.format = *format;
    long previous_done = 0;
    int previous_epoch = -1;
    for_each_segment(text, [&](const Segment& seg) {
        switch (log.format) {
            case TrainingLogFormat::torchvision:
                read_torchvision(seg, origin, log);
                break;
            case TrainingLogFormat::dllogger:
                read_dllogger(seg, origin, log);
                break;
            case TrainingLogFormat::lightning:
                read_lightning(seg, log, previous_done, previous_epoch);
                break;
        }
    });
    if (log.figures.empty()) {
        fail(origin,
             "no training step's throughput in the log as " + std::string(to_string(log.format)) + " prints it");
    }
    return log;
}

double median_of(std::vector<double> values) {
    const std::size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
    const double upper = values[mid];
    if (values.size() % 2 == 1) return upper;
    return (upper + *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

LogThroughput steady_throughput(const TrainingLog& log, long skip_steps, long images_per_step,
                                std::string_view origin) {
    if (skip_steps < 0) throw InputError("--skip-steps must be 0 or more (got " + std::to_string(skip_steps) + ")");
    if (images_per_step < 1) throw InputError("the global batch must be at least 1 image");
    std::vector<double> values;
    LogThroughput out;
    for (const LogFigure& f : log.figures) {
        if (f.first_step < skip_steps) {
            ++out.figures_skipped;
            continue;
        }
        values.push_back(f.images_per_s > 0 ? f.images_per_s : f.iteration_s);
    }
    if (values.empty()) {
        fail(origin, "each of its " + std::to_string(log.figures.size()) +
                         " throughput figures averages over one of "
                         "an epoch's first " +
                         std::to_string(skip_steps) + " steps (--skip-steps): a longer log, or fewer steps skipped");
    }
    out.figures_used = static_cast<int>(values.size());
    const double median = median_of(std::move(values));
    const double images = static_cast<double>(images_per_step);
    const bool by_images = log.format == TrainingLogFormat::dllogger;
    out.throughput_images_per_s = by_images ? median : images / median;
    out.iteration_s = by_images ? images / median : median;
    return out;
}

}  // namespace epochcast
