#include "model/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "model/errors.hpp"
#include "model/resnet.hpp"
#include "model/text_io.hpp"

namespace epochcast {
namespace {

using nlohmann::json;

/// The spec's value of `key` as a list: a list stays, a single value becomes a list of one.
std::vector<json> values_of(const json& spec, std::string_view key, std::string_view origin) {
    const json& value = spec.at(std::string(key));
    if (!value.is_array()) return {value};
    if (value.empty()) throw InputError(std::string(origin) + ": \"" + std::string(key) + "\" is an empty list");
    return {value.begin(), value.end()};
}

std::string field_error(std::string_view origin, std::string_view key, const json& value, std::string_view problem) {
    return std::string(origin) + ": \"" + std::string(key) + "\" value " + value.dump() + " " + std::string(problem);
}

/// Each value of `key` through `convert`, which throws InputError on a bad value; the message
/// gains the origin, the key and the value.
template <typename T>
std::vector<T> parse_list(const json& spec, std::string_view key, std::string_view origin,
                          const std::function<T(const json&)>& convert) {
    std::vector<T> out;
    for (const json& value : values_of(spec, key, origin)) {
        try {
            out.push_back(convert(value));
        } catch (const InputError& error) {
            throw InputError(field_error(origin, key, value, error.what()));
        } catch (const json::exception&) {
            throw InputError(field_error(origin, key, value, "has the wrong type"));
        }
    }
    return out;
}

/// A whole number from `minimum` to `maximum` (a count stored in an int must fit one).
std::int64_t integer(const json& value, std::int64_t minimum,
                     std::int64_t maximum = std::numeric_limits<std::int64_t>::max()) {
    if (!value.is_number_integer()) throw InputError("is not a whole number");
    if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(maximum)) {
        throw InputError("must be at most " + std::to_string(maximum));
    }
    const std::int64_t n = value.get<std::int64_t>();
    if (n < minimum) throw InputError("must be at least " + std::to_string(minimum));
    if (n > maximum) throw InputError("must be at most " + std::to_string(maximum));
    return n;
}

double positive(const json& value) {
    if (!value.is_number()) throw InputError("is not a number");
    const double x = value.get<double>();
    if (!(x > 0) || !std::isfinite(x)) throw InputError("must be positive");
    return x;
}

std::string text(const json& value) {
    if (!value.is_string()) throw InputError("is not a string");
    return value.get<std::string>();
}

}  // namespace

std::size_t SweepSpec::combinations() const {
    return model.size() * image_size.size() * classes.size() * dataset_images.size() * epochs.size() * pricing.size() *
           framework.size() * precision.size() * stack.size() * memory_format.size() * loader.size() * instance.size() *
           gpus_per_node.size() * std::max<std::size_t>(strategy.size(), 1) * ps_instance.size() * ps_ratio.size() *
           ps_nodes.size() * ps_colocated.size() * efa_adapters.size() * nodes.size() *
           (global_batch.empty() ? batch_per_gpu.size() : global_batch.size());
}

Scenario SweepSpec::scenario_at(std::size_t index, const Catalog& catalog) const {
    // Mixed radix, last field fastest: peel the digits off from the back.
    auto digit = [&index](std::size_t radix) {
        const std::size_t d = index % radix;
        index /= radix;
        return d;
    };
    Scenario s;
    if (global_batch.empty()) {
        s.batch_per_gpu = batch_per_gpu[digit(batch_per_gpu.size())];
    } else {
        s.global_batch = global_batch[digit(global_batch.size())];
    }
    s.nodes = nodes[digit(nodes.size())];
    s.efa_adapters = efa_adapters[digit(efa_adapters.size())];
    const bool colocated = ps_colocated[digit(ps_colocated.size())];
    const int servers = ps_nodes[digit(ps_nodes.size())];
    const double ratio = ps_ratio[digit(ps_ratio.size())];
    const std::string& server_instance = ps_instance[digit(ps_instance.size())];
    const std::size_t strategy_digit = digit(std::max<std::size_t>(strategy.size(), 1));
    s.gpus_per_node = gpus_per_node[digit(gpus_per_node.size())];
    s.instance = instance[digit(instance.size())];
    s.loader = loader[digit(loader.size())];
    s.memory_format = memory_format[digit(memory_format.size())];
    s.stack = stack[digit(stack.size())];
    s.precision = precision[digit(precision.size())];
    s.framework = framework[digit(framework.size())];
    s.pricing = pricing[digit(pricing.size())];
    s.epochs = epochs[digit(epochs.size())];
    s.dataset_images = dataset_images[digit(dataset_images.size())];
    s.classes = classes[digit(classes.size())];
    s.image_size = image_size[digit(image_size.size())];
    s.model = model[digit(model.size())];
    s.target_top1_percent = target_top1_percent;
    s.recipe = recipe;

    // 0 means all the instance has; the row says how many that is. More than it has stays, for
    // resolve() to reject with its reason.
    if (s.gpus_per_node == 0) s.gpus_per_node = catalog.instance(s.instance).gpus;
    s.strategy = strategy.empty() ? Strategy::nccl : strategy[strategy_digit];
    if (s.strategy == Strategy::ps) {
        s.ps_colocated = colocated;
        if (!colocated) {
            s.ps_instance = server_instance;
            s.ps_nodes = ratio > 0 ? clamped_count(std::ceil(ratio * s.nodes - 1e-9)) : servers;
        }
    }
    return s;
}

SweepSpec parse_sweep_spec(std::string_view json_text, std::string_view origin, const Catalog& catalog) {
    const json spec = parse_json(json_text, origin);
    if (!spec.is_object()) throw InputError(std::string(origin) + ": a sweep spec is a JSON object of Scenario fields");
    for (const auto& [key, value] : spec.items()) {
        if (key == "schema") continue;
        if (std::find(kSweepFields.begin(), kSweepFields.end(), key) == kSweepFields.end()) {
            std::string known;
            for (std::string_view k : kSweepFields) known += (known.empty() ? "" : ", ") + std::string(k);
            throw InputError(std::string(origin) + ": unknown key \"" + escape_for_message(key) +
                             "\" (known: " + known + ")");
        }
    }
    auto given = [&](std::string_view key) { return spec.contains(std::string(key)); };
    SweepSpec out;
    auto whole = [](std::int64_t minimum) {
        return std::function<int(const json&)>([minimum](const json& v) {
            return static_cast<int>(integer(v, minimum, std::numeric_limits<int>::max()));
        });
    };
    if (given("model")) {
        out.model = parse_list<std::string>(spec, "model", origin, [](const json& v) {
            std::string name = text(v);
            const auto& known = resnet_models();
            if (std::find(known.begin(), known.end(), name) == known.end()) {
                std::string list;
                for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
                throw InputError("is not a known model (" + list + ")");
            }
            return name;
        });
    }
    if (given("image_size")) out.image_size = parse_list<int>(spec, "image_size", origin, whole(1));
    if (given("classes")) out.classes = parse_list<int>(spec, "classes", origin, whole(1));
    if (given("dataset_images")) {
        out.dataset_images =
            parse_list<std::int64_t>(spec, "dataset_images", origin, [](const json& v) { return integer(v, 1); });
    }
    if (given("epochs")) {
        out.epochs = parse_list<double>(spec, "epochs", origin, positive);
        out.epochs_given = true;
    }
    if (given("pricing")) {
        out.pricing =
            parse_list<Pricing>(spec, "pricing", origin, [](const json& v) { return parse_pricing(text(v)); });
    }
    if (given("framework")) {
        out.framework =
            parse_list<Framework>(spec, "framework", origin, [](const json& v) { return parse_framework(text(v)); });
    }
    if (given("precision")) {
        out.precision =
            parse_list<Precision>(spec, "precision", origin, [](const json& v) { return parse_precision(text(v)); });
    }
    if (given("stack")) {
        out.stack = parse_list<SoftwareStack>(spec, "stack", origin,
                                              [](const json& v) { return parse_software_stack(text(v)); });
    }
    if (given("memory_format")) {
        out.memory_format = parse_list<MemoryFormat>(spec, "memory_format", origin,
                                                     [](const json& v) { return parse_memory_format(text(v)); });
    }
    if (given("loader")) {
        out.loader = parse_list<Loader>(spec, "loader", origin, [](const json& v) { return parse_loader(text(v)); });
    }
    if (given("instance")) {
        out.instance = parse_list<std::string>(spec, "instance", origin, [&catalog](const json& v) {
            const InstanceSpec& instance = catalog.instance(text(v));
            if (instance.gpus == 0) throw InputError("is a CPU-only instance: it can be a ps_instance, not a worker");
            return instance.name;
        });
    }
    if (given("gpus_per_node")) out.gpus_per_node = parse_list<int>(spec, "gpus_per_node", origin, whole(1));
    if (given("strategy")) {
        out.strategy =
            parse_list<Strategy>(spec, "strategy", origin, [](const json& v) { return parse_strategy(text(v)); });
    }
    if (given("ps_instance")) {
        out.ps_instance = parse_list<std::string>(spec, "ps_instance", origin,
                                                  [&catalog](const json& v) { return catalog.instance(text(v)).name; });
    }
    if (given("ps_ratio") && given("ps_nodes")) {
        throw InputError(std::string(origin) +
                         ": give \"ps_ratio\" (server nodes per worker node) or \"ps_nodes\", not both");
    }
    if (given("ps_ratio")) out.ps_ratio = parse_list<double>(spec, "ps_ratio", origin, positive);
    if (given("ps_nodes")) out.ps_nodes = parse_list<int>(spec, "ps_nodes", origin, whole(1));
    if (given("ps_colocated")) {
        out.ps_colocated = parse_list<bool>(spec, "ps_colocated", origin, [](const json& v) {
            if (!v.is_boolean()) throw InputError("is not true or false");
            return v.get<bool>();
        });
    }
    if (given("efa_adapters")) out.efa_adapters = parse_list<int>(spec, "efa_adapters", origin, whole(0));
    if (given("nodes")) out.nodes = parse_list<int>(spec, "nodes", origin, whole(1));
    if (given("batch_per_gpu")) out.batch_per_gpu = parse_list<int>(spec, "batch_per_gpu", origin, whole(1));
    if (given("global_batch")) {
        if (given("batch_per_gpu")) {
            throw InputError(std::string(origin) + ": give \"batch_per_gpu\" or \"global_batch\", not both");
        }
        out.global_batch = parse_list<int>(spec, "global_batch", origin, whole(1));
    }

    // ceil(ps_ratio x nodes) server nodes must fit an int (scenario_at converts it).
    if (given("ps_ratio")) {
        const double ratio = *std::max_element(out.ps_ratio.begin(), out.ps_ratio.end());
        const int nodes = *std::max_element(out.nodes.begin(), out.nodes.end());
        if (ratio * nodes > std::numeric_limits<int>::max()) {
            throw InputError(
                field_error(origin, "ps_ratio", ratio,
                            "times " + std::to_string(nodes) + " nodes is more server nodes than an int holds"));
        }
    }

    // Guard the product against overflow before anyone sizes a loop by it.
    double product = 1;
    for (std::size_t n : {out.model.size(),         out.image_size.size(),
                          out.classes.size(),       out.dataset_images.size(),
                          out.epochs.size(),        out.pricing.size(),
                          out.framework.size(),     out.precision.size(),
                          out.stack.size(),         out.memory_format.size(),
                          out.loader.size(),        out.instance.size(),
                          out.gpus_per_node.size(), std::max<std::size_t>(out.strategy.size(), 1),
                          out.ps_instance.size(),   out.ps_ratio.size(),
                          out.ps_nodes.size(),      out.ps_colocated.size(),
                          out.efa_adapters.size(),  out.nodes.size(),
                          out.batch_per_gpu.size(), std::max<std::size_t>(out.global_batch.size(), 1)}) {
        product *= static_cast<double>(n);
    }
    // A row of CSV is about 360 bytes: 10^9 rows are some 360 GB already, and more is a spec that
    // lists more than anyone means to read.
    if (product > kMaxSweepRows) {
        throw InputError(std::string(origin) + ": the cross product has " + format_count(product) +
                         " combinations, more than " + format_count(kMaxSweepRows) + " (about " +
                         format_count(product * 360 / 1e12) + " TB of CSV): narrow a list, or split the spec");
    }
    return out;
}

SweepSpec read_sweep_spec(const std::filesystem::path& path, const Catalog& catalog) {
    return parse_sweep_spec(read_text_file(path, "sweep spec"), path.string(), catalog);
}

}  // namespace epochcast
