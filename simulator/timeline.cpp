#include "simulator/timeline.hpp"

#include "model/text_io.hpp"

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
    write_text_file_atomically(path, to_json(other_data).dump() + "\n", "timeline");
}

}  // namespace epochcast::sim
