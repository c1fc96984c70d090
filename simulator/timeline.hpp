// A simulated run as a Chrome trace-event file that Perfetto (ui.perfetto.dev) and
// chrome://tracing open: complete events ("ph": "X", microseconds) on one track per GPU (compute)
// and one per collective or per node's parameter-server traffic, named by metadata events.
// Format: "Trace Event Format" (Google, docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace epochcast::sim {

/// One interval on one track.
struct TimelineEvent {
    std::string name;      ///< "forward", "backward", "all-reduce", "push/pull", ...
    std::string category;  ///< "compute" or "communication"
    int process = 0;       ///< Perfetto process (a node, the collectives, a server)
    int thread = 0;        ///< track inside the process (a GPU, a collective)
    double start_s = 0;    ///< simulated start, in seconds
    double end_s = 0;      ///< simulated end, in seconds
    nlohmann::json args;   ///< shown when the event is selected (bytes, iteration, bucket)
};

class Timeline {
public:
    void name_process(int process, const std::string& name);
    void name_thread(int process, int thread, const std::string& name);
    void add(TimelineEvent event) { events_.push_back(std::move(event)); }
    const std::vector<TimelineEvent>& events() const { return events_; }

    /// The name given to a process (thread < 0) or a thread's track; "" when none was given.
    std::string name_of(int process, int thread = -1) const;

    /// Read back what to_json() writes (complete and metadata events; others are skipped).
    /// Throws InputError naming `origin` when the JSON is not a trace-event object.
    static Timeline from_json(const nlohmann::json& document, const std::string& origin);
    /// Read a timeline file written by write(); InputError naming the path when it is missing or bad.
    static Timeline read(const std::filesystem::path& path);

    /// {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}
    nlohmann::json to_json(const nlohmann::json& other_data = nlohmann::json::object()) const;

    /// Write atomically (temporary file beside `path`, then rename); InputError naming the path
    /// when the folder cannot be written.
    void write(const std::filesystem::path& path, const nlohmann::json& other_data = nlohmann::json::object()) const;

private:
    struct Name {
        int process = 0;
        int thread = -1;  ///< -1: the process's name
        std::string name;
    };
    std::vector<Name> names_;
    std::vector<TimelineEvent> events_;
};

}  // namespace epochcast::sim
