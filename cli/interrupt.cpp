#include "cli/interrupt.hpp"

namespace epochcast::cli {

volatile std::sig_atomic_t g_interrupted = 0;
std::atomic<bool> g_interrupt_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler stores into g_interrupt_requested");

namespace {
extern "C" void on_interrupt(int signal) {
    g_interrupted = signal;
    g_interrupt_requested.store(true);
}
}  // namespace

InterruptGuard::InterruptGuard() {
    g_interrupted = 0;
    g_interrupt_requested.store(false);
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
