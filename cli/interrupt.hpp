// Ctrl-C (SIGINT), SIGTERM (kill, a batch system's time limit) and SIGHUP (a closed terminal)
// while a long command runs: instead of dying where it stands, leaving a half-written file or a
// run's folder behind, the command notices the signal, stops what it started and ends through its
// destructors with an error that names the signal (`sweep`, `run`).
#pragma once

#include <csignal>
#include <iterator>
#include <string>

namespace epochcast::cli {

/// The signal that interrupted the command, 0 for none; set by InterruptGuard's handler.
extern volatile std::sig_atomic_t g_interrupted;

/// Catches the three signals into g_interrupted while it lives (resetting it first); the previous
/// handlers come back afterwards.
class InterruptGuard {
public:
    static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
    InterruptGuard();
    ~InterruptGuard();
    InterruptGuard(const InterruptGuard&) = delete;
    InterruptGuard& operator=(const InterruptGuard&) = delete;

private:
    struct sigaction previous_[std::size(kSignals)]{};
};

/// "Ctrl-C", "SIGTERM", "SIGHUP": what interrupted the command.
std::string interruption_name(int signal);

}  // namespace epochcast::cli
