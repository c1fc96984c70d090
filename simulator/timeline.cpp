#include "simulator/timeline.hpp"

#include "model/errors.hpp"
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
    write_text_file_atomically(
        path, to_json(other_data).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "timeline");
}

std::string Timeline::name_of(int process, int thread) const {
    for (const Name& n : names_) {
        if (n.process == process && n.thread == thread) return n.name;
    }
    return {};
}

Timeline Timeline::from_json(const nlohmann::json& document, const std::string& origin) {
    if (!document.is_object() || !document.contains("traceEvents") || !document["traceEvents"].is_array()) {
        throw InputError(origin + ": not a trace-event timeline (no \"traceEvents\" array)");
    }
    Timeline timeline;
    try {
        for (const nlohmann::json& e : document["traceEvents"]) {
            const std::string phase = e.value("ph", "");
            if (phase == "M") {
                const std::string what = e.at("name");
                const std::string name = e.at("args").at("name");
                if (what == "process_name") timeline.name_process(e.at("pid"), name);
                if (what == "thread_name") timeline.name_thread(e.at("pid"), e.at("tid"), name);
            } else if (phase == "X") {
                TimelineEvent event;
                event.name = e.at("name");
                event.category = e.value("cat", "");
                event.process = e.at("pid");
                event.thread = e.at("tid");
                event.start_s = e.at("ts").get<double>() / kMicrosecondsPerSecond;
                event.end_s = event.start_s + e.at("dur").get<double>() / kMicrosecondsPerSecond;
                if (e.contains("args")) event.args = e["args"];
                timeline.add(std::move(event));
            }
        }
    } catch (const nlohmann::json::exception& error) {
        throw InputError(origin + ": bad trace event: " + error.what());
    }
    return timeline;
}

Timeline Timeline::read(const std::filesystem::path& path) {
    const nlohmann::json document = parse_json(read_text_file(path, "timeline"), path.string());
    return from_json(document, path.string());
}

}  // namespace epochcast::sim
