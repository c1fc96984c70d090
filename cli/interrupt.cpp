#include "cli/interrupt.hpp"

namespace epochcast::cli {

volatile std::sig_atomic_t g_interrupted = 0;

namespace {
extern "C" void on_interrupt(int signal) { g_interrupted = signal; }
}  // namespace

InterruptGuard::InterruptGuard() {
    g_interrupted = 0;
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &action, &previous_[i]);
}

InterruptGuard::~InterruptGuard() {
    for (std::size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &previous_[i], nullptr);
}

std::string interruption_name(int signal) {
    if (signal == SIGTERM) return "SIGTERM";
    if (signal == SIGHUP) return "SIGHUP";
    return "Ctrl-C";
}

}  // namespace epochcast::cli
