#include "simulator/progress.hpp"

#include <chrono>
#include <cstdio>

namespace epochcast::sim {

std::string progress_line(int done, int total, double elapsed_s) {
    char line[128];
    const int percent = total > 0 ? static_cast<int>(100.0 * done / total) : 0;
    std::snprintf(line, sizeof line, "simulated %d of %d iterations (%d%%), %.0f s", done, total, percent, elapsed_s);
    return line;
}

ProgressPace progress_pace(bool terminal) {
    if (terminal) return {2, 1, true};
    return {10, 10, false};
}

ProgressPrinter::ProgressPrinter(std::ostream& out, ProgressPace pace) : out_(out), pace_(pace) {
    thread_ = std::thread([this] { run(); });
}

ProgressPrinter::~ProgressPrinter() { stop(); }

void ProgressPrinter::update(int done, int total) {
    const std::lock_guard<std::mutex> lock(mutex_);
    done_ = done;
    total_ = total;
}

void ProgressPrinter::stop() {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void ProgressPrinter::run() {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    auto next = start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(pace_.first_s));
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_until(lock, next, [this] { return stopping_; })) {
        const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
        const std::string line = progress_line(done_, total_, elapsed);
        if (pace_.rewrite) {
            out_ << '\r' << line << std::flush;
        } else {
            out_ << line << '\n' << std::flush;
        }
        printed_ = true;
        next += std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(pace_.every_s));
    }
    if (printed_ && pace_.rewrite) out_ << '\n' << std::flush;
}

}  // namespace epochcast::sim
