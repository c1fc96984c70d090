// Ctrl-C (SIGINT), SIGTERM (kill, a batch system's time limit) and SIGHUP (a closed terminal)
// while a long command runs: instead of dying where it stands, leaving a half-written file, a
// run's folder or a child process behind, the command notices the signal, stops what it started
// and ends through its destructors with an error that names the signal (`sweep`, `run`,
// `simulate`). A child that outlives a command killed outright (SIGKILL) is ended by the kernel:
// each one asks for a signal when its parent dies (spawn_child, the simulation's process).
#pragma once

#include <atomic>
#include <csignal>
#include <iterator>
#include <string>

namespace epochcast::cli {

/// The signal that interrupted the command, 0 for none; set by InterruptGuard's handler.
extern volatile std::sig_atomic_t g_interrupted;
/// The same as a flag for a library that polls one (sim::SimulationOptions::cancel): set with
/// g_interrupted (a lock-free atomic's store is safe in a signal handler).
extern std::atomic<bool> g_interrupt_requested;

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
