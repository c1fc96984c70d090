// Progress of a long simulation for a person watching (issue 25: `simulate --nodes 100000` ran for
// over a minute showing nothing). A thread of its own prints the iterations done and the time
// elapsed at a fixed pace, so that a run whose first iteration takes minutes still shows it is
// alive; short runs print nothing. No SimGrid here: it is tested on its own.
#pragma once

#include <condition_variable>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

namespace epochcast::sim {

/// "simulated 3 of 10 iterations (30%), 41 s".
std::string progress_line(int done, int total, double elapsed_s);

/// When and how progress is printed.
struct ProgressPace {
    double first_s = 10;   ///< nothing before this much time has passed
    double every_s = 10;   ///< then a report this often
    bool rewrite = false;  ///< rewrite one line in place ('\r'), for a terminal; else one line each
};

/// A terminal gets a line rewritten every second after 2 s; anything else (a log file, a pipe) a
/// line every 10 s after 10 s, a modest rate for a log.
ProgressPace progress_pace(bool terminal);

/// Prints progress_line() to `out` at `pace` from its own thread until stop() (or destruction).
class ProgressPrinter {
public:
    ProgressPrinter(std::ostream& out, ProgressPace pace);
    ~ProgressPrinter();
    ProgressPrinter(const ProgressPrinter&) = delete;
    ProgressPrinter& operator=(const ProgressPrinter&) = delete;

    /// Record the iterations done so far (any thread).
    void update(int done, int total);
    /// Stop the thread; a rewritten line is ended with a newline. Idempotent.
    void stop();

private:
    void run();

    std::ostream& out_;
    ProgressPace pace_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    bool printed_ = false;
    int done_ = 0, total_ = 0;
    std::thread thread_;
};

}  // namespace epochcast::sim
