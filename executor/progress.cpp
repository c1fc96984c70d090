#include "executor/progress.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "executor/host.hpp"
#include "model/text_io.hpp"

namespace epochcast {
namespace {

std::string progress_directory() {
    const char* directory = std::getenv(kProgressDirVariable);
    return directory ? directory : "";
}

/// `text` into `directory`/`name` through a temporary and a rename; failures are ignored.
void replace_file(const std::string& directory, const std::string& name, const std::string& text) {
    const std::string final_path = directory + "/" + name;
    // A new file (O_EXCL | O_NOFOLLOW): a link planted at the temporary's name is never written through.
    const NewFile file = create_file_beside(directory + "/." + name, "tmp");
    if (file.fd < 0) return;
    const std::string temporary = file.path.string();
    const bool written = ::write(file.fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(file.fd);
    if (!written || std::rename(temporary.c_str(), final_path.c_str()) != 0) ::unlink(temporary.c_str());
}

/// One line of JSON; bytes that are not UTF-8 (a host name, a message echoing input) are replaced
/// rather than thrown on, so that a report never fails the training.
std::string dumped(const nlohmann::json& report) {
    return report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

ProgressReport::ProgressReport(int rank) : directory_(progress_directory()), rank_(rank) { write(); }

void ProgressReport::step_done(double step_s) {
    ++steps_;
    slowest_step_s_ = std::max(slowest_step_s_, step_s);
    write();
}

void ProgressReport::write() const {
    if (directory_.empty()) return;
    static const std::string host = host_name();
    const nlohmann::json report = {
        {"rank", rank_}, {"host", host}, {"pid", ::getpid()}, {"steps", steps_}, {"slowest_step_s", slowest_step_s_}};
    replace_file(directory_, "rank-" + std::to_string(rank_) + ".json", dumped(report));
}

void report_failure(int rank, int code, const std::string& message) {
    const std::string directory = progress_directory();
    if (directory.empty()) return;
    const nlohmann::json report = {{"rank", rank}, {"host", host_name()}, {"code", code}, {"message", message}};
    replace_file(directory, "rank-" + std::to_string(rank) + ".failed.json", dumped(report));
}

void report_death(int rank, long long pid, int signal) {
    const std::string directory = progress_directory();
    if (directory.empty()) return;
    const double time_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    const nlohmann::json report = {
        {"rank", rank}, {"host", host_name()}, {"pid", pid}, {"signal", signal}, {"time_s", time_s}};
    replace_file(directory, "rank-" + std::to_string(rank) + ".died.json", dumped(report));
}

}  // namespace epochcast
