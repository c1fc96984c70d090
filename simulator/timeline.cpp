#include "simulator/timeline.hpp"

#include <unistd.h>

#include <fstream>
#include <system_error>

#include "model/errors.hpp"

namespace epochcast::sim {
namespace {

constexpr double kMicrosecondsPerSecond = 1e6;

}  // namespace

void Timeline::name_process(int process, const std::string& name) { names_.push_back({process, -1, name}); }

void Timeline::name_thread(int process, int thread, const std::string& name) {
    names_.push_back({process, thread, name});
}

nlohmann::json Timeline::to_json(const nlohmann::json& other_data) const {
    nlohmann::json events = nlohmann::json::array();
    for (const Name& n : names_) {
        nlohmann::json meta = {{"ph", "M"}, {"pid", n.process}, {"args", {{"name", n.name}}}};
        if (n.thread < 0) {
            meta["name"] = "process_name";
            meta["tid"] = 0;
        } else {
            meta["name"] = "thread_name";
            meta["tid"] = n.thread;
        }
        events.push_back(std::move(meta));
    }
    for (const TimelineEvent& e : events_) {
        nlohmann::json event = {{"name", e.name},
                                {"cat", e.category},
                                {"ph", "X"},
                                {"ts", e.start_s * kMicrosecondsPerSecond},
                                {"dur", (e.end_s - e.start_s) * kMicrosecondsPerSecond},
                                {"pid", e.process},
                                {"tid", e.thread}};
        if (!e.args.is_null()) event["args"] = e.args;
        events.push_back(std::move(event));
    }
    return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"otherData", other_data}};
}

void Timeline::write(const std::filesystem::path& path, const nlohmann::json& other_data) const {
    const std::string text = to_json(other_data).dump() + "\n";
    std::filesystem::path temporary = path;
    temporary += ".tmp." + std::to_string(::getpid());
    const std::string failure = "cannot write timeline file '" + path.string() + "'";
    {
        std::ofstream out(temporary, std::ios::trunc);
        if (!out) throw InputError(failure);
        out << text;
        out.flush();
        if (!out) {
            std::error_code ignored;
            std::filesystem::remove(temporary, ignored);
            throw InputError(failure);
        }
    }
    std::error_code error;
    std::filesystem::rename(temporary, path, error);
    if (error) {
        std::filesystem::remove(temporary, error);
        throw InputError(failure);
    }
}

}  // namespace epochcast::sim
