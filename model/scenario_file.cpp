#include "model/scenario_file.hpp"

#include <cmath>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "model/convergence.hpp"
#include "model/errors.hpp"
#include "model/sweep.hpp"
#include "model/text_io.hpp"

namespace epochcast {
namespace {

using json = nlohmann::json;

/// One configuration's object: its name, target and recipe taken out, the rest read as a sweep
/// spec of single values.
NamedScenario read_configuration(const json& object, const std::string& origin, const Catalog& catalog) {
    if (!object.is_object()) throw InputError(origin + ": a scenario is a JSON object of its keys");
    NamedScenario out;
    json spec = object;
    spec.erase("schema");
    if (const auto name = spec.find("name"); name != spec.end()) {
        if (!name->is_string()) throw InputError(origin + ": \"name\" must be a string");
        out.name = name->get<std::string>();
        spec.erase("name");
    }
    double target = 0;
    std::string recipe;
    if (const auto t = spec.find("target_top1"); t != spec.end()) {
        if (!t->is_number()) throw InputError(origin + ": \"target_top1\" must be a number (percent top-1)");
        target = t->get<double>();
        try {
            check_target_top1(target);
        } catch (const InputError& error) {
            throw InputError(origin + ": \"target_top1\" " + error.what());
        }
        if (spec.contains("epochs")) {
            throw InputError(origin +
                             ": \"epochs\" and \"target_top1\" both given (with a target the epochs are what the "
                             "recipe needs): give one");
        }
        spec.erase("target_top1");
    }
    if (const auto r = spec.find("recipe"); r != spec.end()) {
        if (!r->is_string()) throw InputError(origin + ": \"recipe\" must be a string");
        if (target <= 0) throw InputError(origin + ": \"recipe\" goes with \"target_top1\"");
        recipe = r->get<std::string>();
        try {
            Convergence::built_in().require_known(recipe);
        } catch (const InputError& error) {
            throw InputError(origin + ": \"recipe\": " + error.what());
        }
        spec.erase("recipe");
    }
    for (const auto& [key, value] : spec.items()) {
        if (value.is_array()) {
            throw InputError(origin + ": \"" + key +
                             "\" is a list: a scenario is one configuration (a sweep spec takes lists)");
        }
    }
    SweepSpec parsed = parse_sweep_spec(spec.dump(), origin, catalog);
    parsed.target_top1_percent = target;
    parsed.recipe = recipe;
    out.scenario = parsed.scenario_at(0, catalog);
    // A sweep row says how many GPUs "all" is; the file keeps "all" (0), as predict's flags do.
    if (!spec.contains("gpus_per_node")) out.scenario.gpus_per_node = 0;
    return out;
}

std::string seconds_text(double seconds) { return shortest(seconds) + "s"; }

/// A number as JSON: a whole one without a fraction (the spec reads counts and tiers as whole numbers).
nlohmann::ordered_json number_json(double value) {
    if (value == std::floor(value) && std::fabs(value) < 9e15) return static_cast<std::int64_t>(value);
    return value;
}

/// One configuration's keys in the order a person reads them, `schema` first where given.
nlohmann::ordered_json configuration_json(const NamedScenario& named, bool with_schema) {
    const Scenario& s = named.scenario;
    const Scenario defaults;
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    if (with_schema) o["schema"] = kScenarioSchema;
    if (!named.name.empty()) o["name"] = named.name;
    o["instance"] = s.instance;
    o["nodes"] = s.nodes;
    if (s.gpus_per_node > 0) o["gpus_per_node"] = s.gpus_per_node;
    if (s.global_batch > 0) {
        o["global_batch"] = s.global_batch;
    } else {
        o["batch_per_gpu"] = s.batch_per_gpu;
    }
    o["precision"] = to_string(s.precision);
    o["strategy"] = to_string(s.strategy);
    o["framework"] = to_string(s.framework);
    o["model"] = s.model;
    o["image_size"] = s.image_size;
    if (s.classes != defaults.classes) o["classes"] = s.classes;
    if (s.dataset_images != defaults.dataset_images) o["dataset_images"] = s.dataset_images;
    if (s.target_top1_percent > 0) {
        o["target_top1"] = number_json(s.target_top1_percent);
        if (!s.recipe.empty()) o["recipe"] = s.recipe;
    } else {
        o["epochs"] = number_json(s.epochs);
    }
    o["pricing"] = to_string(s.pricing);
    if (s.pricing == Pricing::spot) {
        if (s.spot_interruptions_per_node_hour >= 0)
            o["spot_interruptions_per_node_hour"] = number_json(s.spot_interruptions_per_node_hour);
        if (s.checkpoint_interval_s > 0) o["checkpoint_every"] = seconds_text(s.checkpoint_interval_s);
        if (s.spot_replacement_wait_s != defaults.spot_replacement_wait_s)
            o["spot_replacement_wait"] = s.spot_replacement_wait_s > 0 ? seconds_text(s.spot_replacement_wait_s) : "0";
        if (s.spot_elastic) o["elastic_spot"] = true;
    }
    if (s.stack != defaults.stack) o["stack"] = to_string(s.stack);
    if (s.memory_format != defaults.memory_format) o["memory_format"] = to_string(s.memory_format);
    if (s.compiled) o["compiled"] = true;
    if (s.loader != defaults.loader) o["loader"] = to_string(s.loader);
    if (s.storage != defaults.storage) {
        o["storage"] = to_string(s.storage);
        if (s.storage == Store::fsx_lustre) {
            if (s.storage_tib > 0) o["storage_tib"] = number_json(s.storage_tib);
            if (s.storage_tier_MBps_per_TiB > 0) o["storage_tier"] = number_json(s.storage_tier_MBps_per_TiB);
        }
    }
    if (s.eval_every_epochs) o["eval_every"] = *s.eval_every_epochs;
    if (s.eval_images != defaults.eval_images) o["eval_images"] = s.eval_images;
    if (s.startup_s >= 0) o["startup"] = s.startup_s > 0 ? seconds_text(s.startup_s) : "0";
    if (s.strategy == Strategy::ps) {
        if (s.ps_colocated) {
            o["ps_colocated"] = true;
        } else {
            o["ps_instance"] = s.ps_instance;
            o["ps_nodes"] = s.ps_nodes;
        }
    }
    if (s.efa_adapters >= 0) o["efa_adapters"] = s.efa_adapters;
    return o;
}

/// `text` as a POSIX shell word: as it is where it holds only characters no shell treats specially.
std::string shell_word(const std::string& text) {
    const bool plain = !text.empty() && text.find_first_not_of(
                                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789._-/:+@%,=") == std::string::npos;
    if (plain) return text;
    std::string out = "'";
    for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

}  // namespace

std::string scenario_flags(const Scenario& scenario) {
    std::string out;
    const nlohmann::ordered_json keys = configuration_json({"", scenario}, false);  // outlives the loop
    for (auto item = keys.begin(); item != keys.end(); ++item) {
        const nlohmann::ordered_json& value = item.value();
        std::string flag = "--" + item.key();
        for (char& c : flag) c = c == '_' ? '-' : c;
        if (item.key() == "compiled") flag = "--compile";
        if (!out.empty()) out += ' ';
        if (value.is_boolean()) {
            out += flag;  // configuration_json writes a flag only when it is true
        } else if (value.is_string()) {
            out += flag + " " + shell_word(value.get<std::string>());
        } else if (value.is_number_integer()) {
            out += flag + " " + std::to_string(value.get<std::int64_t>());
        } else {
            out += flag + " " + shortest(value.get<double>());
        }
    }
    return out;
}

std::vector<NamedScenario> parse_scenario_file(std::string_view json_text, std::string_view origin,
                                               const Catalog& catalog) {
    const std::string where(origin);
    json document;
    try {
        document = json::parse(json_text);
    } catch (const json::parse_error& error) {
        throw InputError(where + ": not JSON (" + std::string(error.what()).substr(0, 120) + ")");
    }
    if (!document.is_object()) throw InputError(where + ": a scenario file is a JSON object");
    const auto schema = document.find("schema");
    if (schema == document.end() || !schema->is_string() || schema->get<std::string>() != kScenarioSchema) {
        throw InputError(where + ": not a scenario file (\"schema\" must be \"" + std::string(kScenarioSchema) + "\")");
    }
    std::vector<NamedScenario> out;
    if (const auto list = document.find("scenarios"); list != document.end()) {
        if (document.size() != 2) {
            throw InputError(where +
                             ": a file with \"scenarios\" has no other keys than \"schema\" (each "
                             "configuration's keys go in its entry)");
        }
        if (!list->is_array() || list->empty()) {
            throw InputError(where + ": \"scenarios\" must be a non-empty list of configurations");
        }
        for (std::size_t i = 0; i < list->size(); ++i) {
            out.push_back(read_configuration((*list)[i], where + "#scenarios[" + std::to_string(i) + "]", catalog));
        }
        return out;
    }
    out.push_back(read_configuration(document, where, catalog));
    return out;
}

std::vector<NamedScenario> read_scenario_file(const std::filesystem::path& path, const Catalog& catalog) {
    return parse_scenario_file(read_text_file(path, "scenario file"), path.string(), catalog);
}

std::string scenario_file_json(const std::vector<NamedScenario>& scenarios) {
    if (scenarios.size() == 1) return configuration_json(scenarios[0], true).dump(2) + "\n";
    nlohmann::ordered_json document = nlohmann::ordered_json::object();
    document["schema"] = kScenarioSchema;
    document["scenarios"] = nlohmann::ordered_json::array();
    for (const NamedScenario& s : scenarios) document["scenarios"].push_back(configuration_json(s, false));
    return document.dump(2) + "\n";
}

}  // namespace epochcast
