#include "traces/trace.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

#include "model/errors.hpp"
#include "model/text_io.hpp"
#include "model/types.hpp"

namespace epochcast {
namespace {

using nlohmann::json;

/// Reads the keys of one JSON object, naming the file, the entry and the key in every error:
/// "FILE: run 2: key \"nodes\" ..." or, for a nested object, "FILE: comparisons[1]: key
/// \"baseline.instance\" ...".
class ObjectReader {
public:
    /// `where` is "FILE: run I" or "FILE: comparisons[I]"; `prefix` qualifies the keys of a nested
    /// object ("baseline", "measured"); "" for the entry itself.
    ObjectReader(const json& object, std::string where, std::string prefix = "")
        : object_(object), where_(std::move(where)), prefix_(std::move(prefix)) {
        if (!object_.is_object()) fail("", "must be an object");
    }

    [[noreturn]] void fail(std::string_view key, std::string_view what) const {
        const std::string name = qualified(key);
        throw InputError(where_ + (name.empty() ? "" : ": key \"" + name + "\"") + " " + std::string(what));
    }
    const json* find(std::string_view key) const {
        const auto it = object_.find(std::string(key));
        return it == object_.end() ? nullptr : &*it;
    }
    /// The nested object under `key`, read with keys named "key.inner"; missing is an error.
    ObjectReader child(std::string_view key) const {
        const json* value = find(key);
        if (!value) fail(key, "is missing");
        if (!value->is_object()) fail(key, "must be an object, got " + std::string(value->type_name()));
        return ObjectReader(*value, where_, qualified(key));
    }
    std::string text(std::string_view key, const std::string* fallback = nullptr) const {
        const json* value = find(key);
        if (!value) {
            if (fallback) return *fallback;
            fail(key, "is missing");
        }
        if (!value->is_string()) fail(key, "must be a string, got " + std::string(value->type_name()));
        return value->get<std::string>();
    }
    /// A whole number from `min` to `max` (by default what an int holds: most keys are ints).
    long long integer(std::string_view key, long long min, const long long* fallback = nullptr,
                      long long max = std::numeric_limits<int>::max()) const {
        const json* value = find(key);
        if (!value) {
            if (fallback) return *fallback;
            fail(key, "is missing");
        }
        if (!value->is_number_integer()) fail(key, "must be a whole number, got " + value->dump());
        const std::optional<std::int64_t> x = json_whole_number(*value);
        if (!x || *x > max) fail(key, "must be at most " + std::to_string(max) + ", got " + value->dump());
        if (*x < min) fail(key, "must be at least " + std::to_string(min) + ", got " + std::to_string(*x));
        return *x;
    }
    /// A number, >= 0 or (with `positive`) > 0; std::nullopt when absent and not `required`.
    std::optional<double> number(std::string_view key, bool required, bool positive = true) const {
        const json* value = find(key);
        if (!value) {
            if (required) fail(key, "is missing");
            return std::nullopt;
        }
        if (!value->is_number()) fail(key, "must be a number, got " + value->dump());
        const double x = value->get<double>();
        if (positive && !(x > 0)) fail(key, "must be positive, got " + value->dump());
        if (!positive && !(x >= 0)) fail(key, "must be >= 0, got " + value->dump());
        return x;
    }
    /// An array of positive numbers; empty when absent.
    std::vector<double> positive_numbers(std::string_view key) const {
        const json* value = find(key);
        if (!value) return {};
        if (!value->is_array()) fail(key, "must be an array of numbers, got " + std::string(value->type_name()));
        std::vector<double> numbers;
        numbers.reserve(value->size());
        for (const json& item : *value) {
            if (!item.is_number() || !(item.get<double>() > 0)) {
                fail(key,
                     "must hold positive numbers, got " + item.dump() + " at index " + std::to_string(numbers.size()));
            }
            numbers.push_back(item.get<double>());
        }
        return numbers;
    }
    /// An instance name the catalog knows.
    std::string instance(std::string_view key, const Catalog& catalog) const {
        std::string name = text(key);
        try {
            catalog.instance(name);
        } catch (const InputError& error) {
            fail(key, std::string("names ") + error.what());
        }
        return name;
    }
    /// "efa_adapters": a whole number from 0 to what `instance` has; `fallback` when absent.
    int efa_adapters(const InstanceSpec& instance, int fallback) const {
        if (!find("efa_adapters")) return fallback;
        const long long n = integer("efa_adapters", 0);
        if (n > instance.efa_adapters) {
            fail("efa_adapters", "must be at most " + std::to_string(instance.efa_adapters) + " (" + instance.name +
                                     " has " + std::to_string(instance.efa_adapters) + " EFA adapters), got " +
                                     std::to_string(n));
        }
        return static_cast<int>(n);
    }

private:
    std::string qualified(std::string_view key) const {
        if (prefix_.empty()) return std::string(key);
        return key.empty() ? prefix_ : prefix_ + "." + std::string(key);
    }

    const json& object_;
    std::string where_;
    std::string prefix_;
};

/// The scenario keys of a run, a comparison's baseline or its scenario (docs/formats.md, "Trace").
Scenario read_scenario(const ObjectReader& r, const Catalog& catalog) {
    Scenario s;
    const std::string default_model = s.model;
    s.model = r.text("model", &default_model);
    const long long default_image = 224, default_classes = 1000, default_images = kImageNetTrainImages, zero = 0;
    s.image_size = static_cast<int>(r.integer("image_size", 32, &default_image));
    s.classes = static_cast<int>(r.integer("classes", 1, &default_classes));
    s.dataset_images = r.integer("dataset_images", 1, &default_images, std::numeric_limits<long long>::max());
    if (const auto epochs = r.number("epochs", false)) s.epochs = *epochs;
    s.instance = r.instance("instance", catalog);
    s.nodes = static_cast<int>(r.integer("nodes", 1));
    s.gpus_per_node = static_cast<int>(r.integer("gpus_per_node", 0, &zero));
    if (r.find("global_batch")) {
        s.global_batch = static_cast<int>(r.integer("global_batch", 1));
        const long long fallback = 0;
        s.batch_per_gpu = static_cast<int>(r.integer("batch_per_gpu", 0, &fallback));
    } else {
        s.batch_per_gpu = static_cast<int>(r.integer("batch_per_gpu", 1));
    }
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
    if (r.find("stack")) s.stack = parse("stack", parse_software_stack);
    if (r.find("memory_format")) s.memory_format = parse("memory_format", parse_memory_format);
    if (r.find("loader")) {
        s.loader = parse("loader", parse_loader);
    } else if (const json* data = r.find("data");
               data && data->is_string() && data->get<std::string>() == "synthetic") {
        s.loader = Loader::synthetic;  // a benchmark on synthetic data decodes nothing
    }
    if (r.find("pricing")) s.pricing = parse("pricing", parse_pricing);
    if (const json* compiled = r.find("compiled")) {
        if (!compiled->is_boolean()) r.fail("compiled", "must be true or false");
        s.compiled = compiled->get<bool>();
    }
    if (s.strategy == Strategy::ps) {
        if (const json* colocated = r.find("ps_colocated")) {
            if (!colocated->is_boolean()) r.fail("ps_colocated", "must be true or false");
            s.ps_colocated = colocated->get<bool>();
        }
        if (!s.ps_colocated) {
            s.ps_instance = r.instance("ps_instance", catalog);
            s.ps_nodes = static_cast<int>(r.integer("ps_nodes", 1));
        }
    }
    s.efa_adapters = r.efa_adapters(catalog.instance(s.instance), -1);
    return s;
}

Observation read_run(const json& run, const std::string& where, const std::string& origin, const Catalog& catalog) {
    const ObjectReader r(run, where);
    Observation o;
    o.origin = origin;
    o.source = r.text("source");
    if (r.find("campaign")) {
        o.campaign = r.text("campaign");
        if (o.campaign.empty()) r.fail("campaign", "must not be empty (leave it out: the trace file is the campaign)");
    }
    o.scenario = read_scenario(r, catalog);
    const ObjectReader measured = r.child("measured");
    o.throughput_images_per_s = *measured.number("throughput_images_per_s", true);
    o.epoch_s = measured.number("epoch_s", false);
    o.time_to_train_s = measured.number("time_to_train_s", false);
    o.iteration_s = measured.number("iteration_s", false);
    o.node_scaling_efficiency = measured.number("node_scaling_efficiency", false);
    o.step_compute_s = measured.positive_numbers("step_compute_s");
    if (const json* approximate = r.find("approximate")) {
        if (!approximate->is_boolean()) r.fail("approximate", "must be true or false");
        o.approximate = approximate->get<bool>();
    }
    return o;
}

Comparison read_comparison(const json& entry, const std::string& where, const std::string& origin,
                           const Catalog& catalog) {
    const ObjectReader r(entry, where);
    Comparison c;
    c.origin = origin;
    c.source = r.text("source");
    const std::string quantity = r.text("quantity");
    try {
        c.quantity = parse_comparison_quantity(quantity, "quantity");
    } catch (const InputError& error) {
        r.fail("quantity", error.what());
    }
    c.baseline = read_scenario(r.child("baseline"), catalog);
    c.scenario = read_scenario(r.child("scenario"), catalog);
    const ObjectReader measured = r.child("measured");
    const auto ratio = measured.number("ratio", false);
    const auto low = measured.number("low", false);
    const auto high = measured.number("high", false);
    if (ratio) {
        if (low || high) measured.fail(low ? "low" : "high", "cannot be given with \"ratio\" (give one or the other)");
        c.measured_low = c.measured_high = *ratio;
        return c;
    }
    if (!low && !high) measured.fail("ratio", "is missing (give \"ratio\", or \"low\" and \"high\")");
    if (!low) measured.fail("low", "is missing (\"high\" is given)");
    if (!high) measured.fail("high", "is missing (\"low\" is given)");
    if (*low > *high) {
        measured.fail("low", "must not exceed \"high\" (" + json(*high).dump() + "), got " + json(*low).dump());
    }
    c.measured_low = *low;
    c.measured_high = *high;
    return c;
}

NetworkMeasurement read_network(const json& entry, const std::string& where, const Catalog& catalog) {
    const ObjectReader r(entry, where);
    NetworkMeasurement m;
    m.instance = r.instance("instance", catalog);
    const std::string no_source;
    m.source = r.text("source", &no_source);
    m.ranks = static_cast<int>(r.integer("ranks", 2));
    m.efa_adapters = r.efa_adapters(catalog.instance(m.instance), -1);
    if (r.find("algorithm")) {
        const std::string none;
        m.algorithm = parse_strategy(r.text("algorithm", &none), where + ": key \"algorithm\"");
        if (m.algorithm != Strategy::nccl && m.algorithm != Strategy::ring && m.algorithm != Strategy::tree) {
            r.fail("algorithm", "must be nccl, ring or tree (NCCL_ALGO of the test)");
        }
    }
    if (const json* samples = r.find("samples")) {
        if (!samples->is_array()) r.fail("samples", "must be an array");
        for (std::size_t i = 0; i < samples->size(); ++i) {
            const ObjectReader s((*samples)[i], where, "samples[" + std::to_string(i) + "]");
            m.samples.push_back({*s.number("bytes", true), *s.number("time_s", true),
                                 s.number("algorithm_GBps", false, false).value_or(0.0),
                                 s.number("bus_GBps", false, false).value_or(0.0)});
        }
    }
    // A fitted entry carries its alpha; a published table without samples may not give one.
    m.latency_s = r.number("latency_s", !m.samples.empty(), false).value_or(0.0);
    m.bus_bandwidth_GBps = *r.number("bus_bandwidth_GBps", true);
    m.max_bus_bandwidth_GBps = r.number("max_bus_bandwidth_GBps", false, false).value_or(0.0);
    m.message_bytes = r.number("message_bytes", false, true).value_or(0.0);
    m.average_bus_bandwidth_GBps = r.number("average_bus_bandwidth_GBps", false, false).value_or(0.0);
    return m;
}

/// `raw` (unknown keys kept) with the typed view's keys written over it.
json merged(const json& raw, const json& typed) {
    json result = raw.is_object() ? raw : json::object();
    result.update(typed);
    return result;
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
    for (const char* key : {"comparisons", "networks"}) {
        const auto it = document.find(key);
        if (it != document.end() && !it->is_array()) {
            throw InputError(origin + ": key \"" + std::string(key) + "\" must be an array");
        }
    }

    Trace trace;
    trace.origin = origin;
    for (std::size_t i = 0; i < runs->size(); ++i) {
        const std::string where = origin + ": run " + std::to_string(i);
        trace.runs.push_back({read_run((*runs)[i], where, origin + "#" + std::to_string(i), catalog), (*runs)[i]});
    }
    if (const auto comparisons = document.find("comparisons"); comparisons != document.end()) {
        for (std::size_t i = 0; i < comparisons->size(); ++i) {
            const std::string entry = "comparisons[" + std::to_string(i) + "]";
            trace.comparisons.push_back(
                read_comparison((*comparisons)[i], origin + ": " + entry, origin + "#" + entry, catalog));
            trace.comparisons_raw.push_back((*comparisons)[i]);
        }
    }
    if (const auto networks = document.find("networks"); networks != document.end()) {
        for (std::size_t i = 0; i < networks->size(); ++i) {
            const std::string where = origin + ": networks[" + std::to_string(i) + "]";
            trace.networks.push_back(read_network((*networks)[i], where, catalog));
            trace.networks_raw.push_back((*networks)[i]);
        }
    }
    document.erase("runs");
    document.erase("comparisons");
    document.erase("networks");
    trace.document = std::move(document);
    return trace;
}

Trace read_trace(const std::filesystem::path& path, const Catalog& catalog) {
    return parse_trace(read_text_file(path, "trace"), path.string(), catalog);
}

void add_evidence(const Trace& trace, const Catalog& catalog, std::string_view origin, Evidence& evidence) {
    for (const TraceRun& run : trace.runs) evidence.runs.push_back(run.observation);
    for (std::size_t i = 0; i < trace.networks.size(); ++i) {
        const NetworkMeasurement& m = trace.networks[i];
        const int adapters = catalog.instance(m.instance).efa_adapters;
        const int used = m.efa_adapters < 0 ? (adapters > 0 ? adapters : -1) : m.efa_adapters;
        if (used > 0 && used < adapters) continue;
        const int gpus = std::max(1, catalog.instance(m.instance).gpus);
        std::string name(origin);
        name += "#networks[" + std::to_string(i) + "]";
        evidence.networks.push_back({name, m.instance, used, m.ranks, (m.ranks + gpus - 1) / gpus, m.algorithm,
                                     m.bus_bandwidth_GBps, m.message_bytes});
    }
    evidence.comparisons.insert(evidence.comparisons.end(), trace.comparisons.begin(), trace.comparisons.end());
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
    if (s.global_batch > 0) fields["global_batch"] = s.global_batch;
    if (s.stack != SoftwareStack::current) fields["stack"] = to_string(s.stack);
    if (s.memory_format != MemoryFormat::channels_last) fields["memory_format"] = to_string(s.memory_format);
    if (s.loader != Loader::framework_default) fields["loader"] = to_string(s.loader);
    if (s.compiled) fields["compiled"] = true;
    if (s.strategy == Strategy::ps) {
        if (s.ps_colocated) {
            fields["ps_colocated"] = true;
        } else {
            fields["ps_instance"] = s.ps_instance;
            fields["ps_nodes"] = s.ps_nodes;
        }
    }
    if (s.efa_adapters >= 0) fields["efa_adapters"] = s.efa_adapters;
    if (s.spot_elastic) fields["spot_elastic"] = true;
    if (s.target_top1_percent > 0) {
        fields.erase("epochs");  // an output of the target, not an input
        fields["target_top1_percent"] = s.target_top1_percent;
        if (!s.recipe.empty()) fields["recipe"] = s.recipe;
    }
    return fields;
}

json run_json(const Observation& o) {
    json run = scenario_json(o.scenario);
    run["source"] = o.source;
    if (!o.campaign.empty()) run["campaign"] = o.campaign;
    json measured = {{"throughput_images_per_s", o.throughput_images_per_s}};
    if (o.epoch_s) measured["epoch_s"] = *o.epoch_s;
    if (o.time_to_train_s) measured["time_to_train_s"] = *o.time_to_train_s;
    if (o.iteration_s) measured["iteration_s"] = *o.iteration_s;
    if (o.node_scaling_efficiency) measured["node_scaling_efficiency"] = *o.node_scaling_efficiency;
    if (!o.step_compute_s.empty()) measured["step_compute_s"] = o.step_compute_s;
    run["measured"] = measured;
    if (o.approximate) run["approximate"] = true;
    return run;
}

json comparison_json(const Comparison& c) {
    json measured = c.measured_low == c.measured_high ? json{{"ratio", c.measured_low}}
                                                      : json{{"low", c.measured_low}, {"high", c.measured_high}};
    return {{"source", c.source},
            {"quantity", to_string(c.quantity)},
            {"baseline", scenario_json(c.baseline)},
            {"scenario", scenario_json(c.scenario)},
            {"measured", measured}};
}

json network_json(const NetworkMeasurement& m) {
    json entry = {{"instance", m.instance},
                  {"source", m.source},
                  {"ranks", m.ranks},
                  {"bus_bandwidth_GBps", m.bus_bandwidth_GBps},
                  {"max_bus_bandwidth_GBps", m.max_bus_bandwidth_GBps},
                  {"average_bus_bandwidth_GBps", m.average_bus_bandwidth_GBps}};
    if (m.efa_adapters >= 0) entry["efa_adapters"] = m.efa_adapters;
    if (m.algorithm != Strategy::nccl) entry["algorithm"] = to_string(m.algorithm);
    if (m.message_bytes > 0) entry["message_bytes"] = m.message_bytes;
    // A table without samples has no fitted alpha: write none rather than a made-up 0.
    if (!m.samples.empty() || m.latency_s > 0) entry["latency_s"] = m.latency_s;
    if (!m.samples.empty()) {
        json samples = json::array();
        for (const NcclSample& s : m.samples) {
            samples.push_back({{"bytes", s.bytes},
                               {"time_s", s.time_s},
                               {"algorithm_GBps", s.algorithm_GBps},
                               {"bus_GBps", s.bus_GBps}});
        }
        entry["samples"] = samples;
    }
    return entry;
}

std::string trace_json(const Trace& trace) {
    json document = trace.document.is_object() ? trace.document : json::object();
    document["schema"] = kTraceSchema;
    document["runs"] = json::array();
    for (const TraceRun& run : trace.runs) {
        // Keep every key as read, then let the typed view speak for the keys it owns.
        json typed = run_json(run.observation);
        json measured = run.raw.is_object() && run.raw.contains("measured") && run.raw["measured"].is_object()
                            ? run.raw["measured"]
                            : json::object();
        measured.update(typed["measured"]);
        typed.erase("measured");
        json entry = merged(run.raw, typed);
        entry["measured"] = measured;
        document["runs"].push_back(entry);
    }
    if (!trace.comparisons.empty()) {
        document["comparisons"] = json::array();
        for (std::size_t i = 0; i < trace.comparisons.size(); ++i) {
            const json raw = i < trace.comparisons_raw.size() && trace.comparisons_raw[i].is_object()
                                 ? trace.comparisons_raw[i]
                                 : json::object();
            const json typed = comparison_json(trace.comparisons[i]);
            json entry = merged(raw, typed);
            for (const char* part : {"baseline", "scenario"}) {
                entry[part] = merged(raw.value(part, json::object()), typed[part]);
            }
            // "ratio" or "low"/"high" come from the typed view alone, so the two never both appear.
            json measured = raw.value("measured", json::object());
            if (!measured.is_object()) measured = json::object();
            for (const char* key : {"ratio", "low", "high"}) measured.erase(key);
            measured.update(typed["measured"]);
            entry["measured"] = measured;
            document["comparisons"].push_back(entry);
        }
    }
    if (!trace.networks.empty()) {
        document["networks"] = json::array();
        for (std::size_t i = 0; i < trace.networks.size(); ++i) {
            const json raw = i < trace.networks_raw.size() ? trace.networks_raw[i] : json::object();
            document["networks"].push_back(merged(raw, network_json(trace.networks[i])));
        }
    }
    return document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void write_trace(const Trace& trace, const std::filesystem::path& path) {
    write_text_file_atomically(path, trace_json(trace), "trace");
}

}  // namespace epochcast
