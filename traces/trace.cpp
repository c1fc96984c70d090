#include "traces/trace.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <system_error>

#include "model/errors.hpp"
#include "model/text_io.hpp"
#include "model/types.hpp"

namespace epochcast {
namespace {

using nlohmann::json;

/// Reads one run, naming the file, the run's index and the key in every error.
class RunReader {
public:
    RunReader(const json& run, std::string where) : run_(run), where_(std::move(where)) {
        if (!run_.is_object()) fail("", "must be an object");
    }

    [[noreturn]] void fail(std::string_view key, std::string_view what) const {
        throw InputError(where_ + (key.empty() ? "" : ": key \"" + std::string(key) + "\"") + " " + std::string(what));
    }
    const json* find(const json& object, std::string_view key) const {
        const auto it = object.find(std::string(key));
        return it == object.end() ? nullptr : &*it;
    }
    std::string text(std::string_view key, const std::string* fallback = nullptr) const {
        const json* value = find(run_, key);
        if (!value) {
            if (fallback) return *fallback;
            fail(key, "is missing");
        }
        if (!value->is_string()) fail(key, "must be a string, got " + std::string(value->type_name()));
        return value->get<std::string>();
    }
    long long integer(std::string_view key, long long min, const long long* fallback = nullptr) const {
        const json* value = find(run_, key);
        if (!value) {
            if (fallback) return *fallback;
            fail(key, "is missing");
        }
        if (!value->is_number_integer()) fail(key, "must be a whole number, got " + value->dump());
        const long long x = value->get<long long>();
        if (x < min) fail(key, "must be at least " + std::to_string(min) + ", got " + std::to_string(x));
        return x;
    }
    /// A measured figure: a number greater than zero.
    std::optional<double> measured(const json& measured, std::string_view key, bool required) const {
        const json* value = find(measured, key);
        const std::string name = "measured." + std::string(key);
        if (!value) {
            if (required) fail(name, "is missing");
            return std::nullopt;
        }
        if (!value->is_number()) fail(name, "must be a number, got " + value->dump());
        const double x = value->get<double>();
        if (!(x > 0)) fail(name, "must be positive, got " + value->dump());
        return x;
    }
    const json& run() const { return run_; }

private:
    const json& run_;
    std::string where_;
};

Observation read_run(const RunReader& r, const Catalog& catalog, const std::string& origin) {
    Observation o;
    o.origin = origin;
    o.source = r.text("source");
    Scenario& s = o.scenario;
    const std::string default_model = s.model;
    s.model = r.text("model", &default_model);
    const long long default_image = 224, default_classes = 1000, default_images = kImageNetTrainImages,
                    zero = 0;
    s.image_size = static_cast<int>(r.integer("image_size", 32, &default_image));
    s.classes = static_cast<int>(r.integer("classes", 1, &default_classes));
    s.dataset_images = r.integer("dataset_images", 1, &default_images);
    if (const json* epochs = r.find(r.run(), "epochs")) {
        if (!epochs->is_number() || !(epochs->get<double>() > 0)) r.fail("epochs", "must be a positive number");
        s.epochs = epochs->get<double>();
    }
    s.instance = r.text("instance");
    try {
        catalog.instance(s.instance);
    } catch (const InputError& error) {
        r.fail("instance", std::string("names ") + error.what());
    }
    s.nodes = static_cast<int>(r.integer("nodes", 1));
    s.gpus_per_node = static_cast<int>(r.integer("gpus_per_node", 0, &zero));
    s.batch_per_gpu = static_cast<int>(r.integer("batch_per_gpu", 1));
    auto parse = [&](std::string_view key, auto parser) {
        const std::string value = r.text(key);
        try {
            return parser(value, key);
        } catch (const InputError& error) {
            r.fail(key, error.what());
        }
    };
    s.precision = parse("precision", parse_precision);
    s.strategy = parse("strategy", parse_strategy);
    s.framework = parse("framework", parse_framework);
    if (r.find(r.run(), "pricing")) s.pricing = parse("pricing", parse_pricing);
    if (s.strategy == Strategy::ps) {
        if (const json* colocated = r.find(r.run(), "ps_colocated")) {
            if (!colocated->is_boolean()) r.fail("ps_colocated", "must be true or false");
            s.ps_colocated = colocated->get<bool>();
        }
        if (!s.ps_colocated) {
            s.ps_instance = r.text("ps_instance");
            try {
                catalog.instance(s.ps_instance);
            } catch (const InputError& error) {
                r.fail("ps_instance", std::string("names ") + error.what());
            }
            s.ps_nodes = static_cast<int>(r.integer("ps_nodes", 1));
        }
    }
    if (r.find(r.run(), "efa_adapters")) s.efa_adapters = static_cast<int>(r.integer("efa_adapters", 0));
    const json* measured = r.find(r.run(), "measured");
    if (!measured) r.fail("measured", "is missing");
    if (!measured->is_object()) r.fail("measured", "must be an object");
    o.throughput_images_per_s = *r.measured(*measured, "throughput_images_per_s", true);
    o.epoch_s = r.measured(*measured, "epoch_s", false);
    o.time_to_train_s = r.measured(*measured, "time_to_train_s", false);
    o.iteration_s = r.measured(*measured, "iteration_s", false);
    return o;
}

NetworkMeasurement read_network(const json& entry, const std::string& where, const Catalog& catalog) {
    if (!entry.is_object()) throw InputError(where + " must be an object");
    auto number = [&](const char* key) {
        const auto it = entry.find(key);
        if (it == entry.end()) throw InputError(where + ": key \"" + std::string(key) + "\" is missing");
        if (!it->is_number() || !(it->get<double>() >= 0)) {
            throw InputError(where + ": key \"" + std::string(key) + "\" must be a number >= 0");
        }
        return it->get<double>();
    };
    NetworkMeasurement m;
    const auto instance = entry.find("instance");
    if (instance == entry.end() || !instance->is_string()) {
        throw InputError(where + ": key \"instance\" must be a string");
    }
    m.instance = instance->get<std::string>();
    try {
        catalog.instance(m.instance);
    } catch (const InputError& error) {
        throw InputError(where + ": key \"instance\" names " + error.what());
    }
    m.source = entry.value("source", "");
    m.ranks = static_cast<int>(number("ranks"));
    if (m.ranks < 2) throw InputError(where + ": key \"ranks\" must be at least 2");
    m.latency_s = number("latency_s");
    m.bus_bandwidth_GBps = number("bus_bandwidth_GBps");
    if (!(m.bus_bandwidth_GBps > 0)) throw InputError(where + ": key \"bus_bandwidth_GBps\" must be positive");
    m.max_bus_bandwidth_GBps = entry.value("max_bus_bandwidth_GBps", 0.0);
    m.average_bus_bandwidth_GBps = entry.value("average_bus_bandwidth_GBps", 0.0);
    if (const auto samples = entry.find("samples"); samples != entry.end() && samples->is_array()) {
        for (const json& s : *samples) {
            m.samples.push_back({s.value("bytes", 0.0), s.value("time_s", 0.0), s.value("algorithm_GBps", 0.0),
                                 s.value("bus_GBps", 0.0)});
        }
    }
    return m;
}

json network_json(const NetworkMeasurement& m) {
    json samples = json::array();
    for (const NcclSample& s : m.samples) {
        samples.push_back({{"bytes", s.bytes}, {"time_s", s.time_s}, {"algorithm_GBps", s.algorithm_GBps},
                           {"bus_GBps", s.bus_GBps}});
    }
    return {{"instance", m.instance},
            {"source", m.source},
            {"ranks", m.ranks},
            {"latency_s", m.latency_s},
            {"bus_bandwidth_GBps", m.bus_bandwidth_GBps},
            {"max_bus_bandwidth_GBps", m.max_bus_bandwidth_GBps},
            {"average_bus_bandwidth_GBps", m.average_bus_bandwidth_GBps},
            {"samples", samples}};
}

}  // namespace

Trace parse_trace(std::string_view json_text, std::string_view origin_view, const Catalog& catalog) {
    const std::string origin(origin_view);
    json document = parse_json(json_text, origin);
    if (!document.is_object()) throw InputError(origin + ": a trace must be a JSON object");
    const auto schema = document.find("schema");
    if (schema == document.end() || !schema->is_string() || schema->get<std::string>() != kTraceSchema) {
        throw InputError(origin + ": key \"schema\" must be \"" + std::string(kTraceSchema) + "\"");
    }
    const auto runs = document.find("runs");
    if (runs == document.end() || !runs->is_array()) throw InputError(origin + ": key \"runs\" must be an array");
    const auto networks = document.find("networks");
    if (networks != document.end() && !networks->is_array()) {
        throw InputError(origin + ": key \"networks\" must be an array");
    }

    Trace trace;
    trace.origin = origin;
    for (std::size_t i = 0; i < runs->size(); ++i) {
        const std::string where = origin + ": run " + std::to_string(i);
        const RunReader reader((*runs)[i], where);
        trace.runs.push_back({read_run(reader, catalog, origin + "#" + std::to_string(i)), (*runs)[i]});
    }
    if (networks != document.end()) {
        for (std::size_t i = 0; i < networks->size(); ++i) {
            trace.networks.push_back(read_network((*networks)[i], origin + ": networks[" + std::to_string(i) + "]", catalog));
        }
    }
    document.erase("runs");
    document.erase("networks");
    trace.document = std::move(document);
    return trace;
}

Trace read_trace(const std::filesystem::path& path, const Catalog& catalog) {
    return parse_trace(read_text_file(path, "trace"), path.string(), catalog);
}

json scenario_json(const Scenario& s) {
    json fields = {{"model", s.model},
                   {"image_size", s.image_size},
                   {"classes", s.classes},
                   {"dataset_images", s.dataset_images},
                   {"epochs", s.epochs},
                   {"instance", s.instance},
                   {"nodes", s.nodes},
                   {"gpus_per_node", s.gpus_per_node},
                   {"framework", to_string(s.framework)},
                   {"strategy", to_string(s.strategy)},
                   {"precision", to_string(s.precision)},
                   {"batch_per_gpu", s.batch_per_gpu},
                   {"pricing", to_string(s.pricing)}};
    if (s.strategy == Strategy::ps) {
        if (s.ps_colocated) {
            fields["ps_colocated"] = true;
        } else {
            fields["ps_instance"] = s.ps_instance;
            fields["ps_nodes"] = s.ps_nodes;
        }
    }
    if (s.efa_adapters >= 0) fields["efa_adapters"] = s.efa_adapters;
    return fields;
}

json run_json(const Observation& o) {
    json run = scenario_json(o.scenario);
    run["source"] = o.source;
    json measured = {{"throughput_images_per_s", o.throughput_images_per_s}};
    if (o.epoch_s) measured["epoch_s"] = *o.epoch_s;
    if (o.time_to_train_s) measured["time_to_train_s"] = *o.time_to_train_s;
    if (o.iteration_s) measured["iteration_s"] = *o.iteration_s;
    run["measured"] = measured;
    return run;
}

std::string trace_json(const Trace& trace) {
    json document = trace.document.is_object() ? trace.document : json::object();
    document["schema"] = kTraceSchema;
    document["runs"] = json::array();
    for (const TraceRun& run : trace.runs) {
        // Keep every key as read, then let the typed view speak for the keys it owns.
        json merged = run.raw.is_object() ? run.raw : json::object();
        json typed = run_json(run.observation);
        json measured = merged.contains("measured") && merged["measured"].is_object() ? merged["measured"] : json::object();
        measured.update(typed["measured"]);
        typed.erase("measured");
        merged.update(typed);
        merged["measured"] = measured;
        document["runs"].push_back(merged);
    }
    if (!trace.networks.empty()) {
        document["networks"] = json::array();
        for (const NetworkMeasurement& m : trace.networks) document["networks"].push_back(network_json(m));
    }
    return document.dump(2) + "\n";
}

void write_trace(const Trace& trace, const std::filesystem::path& path) {
    write_text_file_atomically(path, trace_json(trace), "trace");
}

}  // namespace epochcast
