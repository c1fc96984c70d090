#include "model/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/resnet.hpp"
#include "model/storage.hpp"
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
    const std::optional<std::int64_t> n = json_whole_number(value);
    if (!n || *n > maximum) throw InputError("must be at most " + std::to_string(maximum));
    if (*n < minimum) throw InputError("must be at least " + std::to_string(minimum));
    return *n;
}

double number(const json& value) {
    if (!value.is_number()) throw InputError("is not a number");
    return value.get<double>();
}

double positive(const json& value) {
    const double x = number(value);
    if (!(x > 0) || !std::isfinite(x)) throw InputError("must be positive");
    return x;
}

bool boolean(const json& value) {
    if (!value.is_boolean()) throw InputError("is not true or false");
    return value.get<bool>();
}

std::string text(const json& value) {
    if (!value.is_string()) throw InputError("is not a string");
    return value.get<std::string>();
}

/// A duration as predict's flags take it, a string: "30min", "1h30m".
std::string duration_text(const json& value) {
    if (!value.is_string()) throw InputError("is not a duration such as \"30min\" (a string)");
    return value.get<std::string>();
}

/// `value`, once predict's `check` of a scenario with it as `field` (the defaults otherwise) passes.
template <typename Field>
Field checked_on_probe(Field Scenario::*field, Field value, void (*check)(const Scenario&)) {
    Scenario probe;
    probe.*field = value;
    check(probe);
    return value;
}

/// What `check` returns, a check of predict's own run on the value of its flag; the message it
/// throws, which names the flag, follows "is refused: " (parse_list puts the key and the value first).
template <typename Check>
auto as_predict_refuses(Check&& check) {
    try {
        return check();
    } catch (const InputError& error) {
        throw InputError(std::string("is refused: ") + error.what());
    }
}

}  // namespace

std::array<std::size_t, kSweepFields.size()> SweepSpec::lengths() const {
    return {model.size(),
            image_size.size(),
            classes.size(),
            dataset_images.size(),
            epochs.size(),
            pricing.size(),
            spot_interruptions_per_node_hour.size(),
            checkpoint_interval_s.size(),
            spot_replacement_wait_s.size(),
            elastic_spot.size(),
            framework.size(),
            precision.size(),
            stack.size(),
            memory_format.size(),
            compiled.size(),
            loader.size(),
            storage.size(),
            storage_tib.size(),
            storage_tier_MBps_per_TiB.size(),
            eval_every_epochs.size(),
            eval_images.size(),
            startup_s.size(),
            instance.size(),
            gpus_per_node.size(),
            std::max<std::size_t>(strategy.size(), 1),
            ps_instance.size(),
            ps_ratio.size(),
            ps_nodes.size(),
            ps_colocated.size(),
            efa_adapters.size(),
            nodes.size(),
            global_batch.empty() ? batch_per_gpu.size() : 1,
            std::max<std::size_t>(global_batch.size(), 1)};
}

std::size_t SweepSpec::combinations() const {
    std::size_t product = 1;
    for (std::size_t n : lengths()) product *= n;
    return product;
}

Scenario SweepSpec::scenario_at(std::size_t index, const Catalog& catalog) const {
    // Mixed radix, last field fastest: peel the digits off from the back.
    auto digit = [&index](std::size_t radix) -> std::size_t {
        if (radix == 1) return 0;  // most fields hold one value: no division (issue 60)
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
    s.startup_s = startup_s[digit(startup_s.size())];
    s.eval_images = eval_images[digit(eval_images.size())];
    s.eval_every_epochs = eval_every_epochs[digit(eval_every_epochs.size())];
    const double tier = storage_tier_MBps_per_TiB[digit(storage_tier_MBps_per_TiB.size())];
    const double tib = storage_tib[digit(storage_tib.size())];
    s.storage = storage[digit(storage.size())];
    s.loader = loader[digit(loader.size())];
    s.compiled = compiled[digit(compiled.size())];
    s.memory_format = memory_format[digit(memory_format.size())];
    s.stack = stack[digit(stack.size())];
    s.precision = precision[digit(precision.size())];
    s.framework = framework[digit(framework.size())];
    const bool elastic = elastic_spot[digit(elastic_spot.size())];
    const double replacement_wait = spot_replacement_wait_s[digit(spot_replacement_wait_s.size())];
    const double checkpoint = checkpoint_interval_s[digit(checkpoint_interval_s.size())];
    const double rate = spot_interruptions_per_node_hour[digit(spot_interruptions_per_node_hour.size())];
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
    if (s.storage == Store::fsx_lustre) {
        s.storage_tib = tib;
        s.storage_tier_MBps_per_TiB = tier;
    }
    if (s.pricing == Pricing::spot) {
        s.spot_interruptions_per_node_hour = rate;
        s.checkpoint_interval_s = checkpoint;
        s.spot_replacement_wait_s = replacement_wait;
        s.spot_elastic = elastic;
    }
    if (s.strategy == Strategy::ps) {
        s.ps_colocated = colocated;
        if (!colocated) {
            s.ps_instance = server_instance;
            // A positive ratio is at least one server (1e-300 of 4 nodes gave none: issue 59, item 15).
            s.ps_nodes = ratio > 0 ? std::max(1, clamped_count(std::ceil(ratio * s.nodes - 1e-9))) : servers;
        }
    }
    return s;
}

std::string in_spec_terms(std::string_view message) {
    std::string out;
    std::size_t i = 0;
    while (i < message.size()) {
        const std::size_t at = message.find("--", i);
        if (at == std::string_view::npos) break;
        std::size_t end = at + 2;
        while (end < message.size() && ((message[end] >= 'a' && message[end] <= 'z') || message[end] == '-')) ++end;
        std::string key(message.substr(at + 2, end - at - 2));
        std::replace(key.begin(), key.end(), '-', '_');
        out.append(message.substr(i, at - i));
        if (!key.empty() && std::find(kSweepFields.begin(), kSweepFields.end(), key) != kSweepFields.end()) {
            out += "\"" + key + "\"";
        } else {
            out.append(message.substr(at, end - at));
        }
        i = end;
    }
    out.append(message.substr(std::min(i, message.size())));
    return out;
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
    // The spot keys as predict reads --spot-interruptions-per-node-hour, --checkpoint-every and
    // --spot-replacement-wait (cli/common.cpp, SpotFlags), and check_spot_limits on a probe.
    auto spot_limits = [](double Scenario::*field, double value) {
        return checked_on_probe(field, value, check_spot_limits);
    };
    if (given("spot_interruptions_per_node_hour")) {
        out.spot_interruptions_per_node_hour =
            parse_list<double>(spec, "spot_interruptions_per_node_hour", origin, [&spot_limits](const json& v) {
                const double rate = number(v);
                return as_predict_refuses([&] {
                    check_given_spot_rate(rate);
                    return spot_limits(&Scenario::spot_interruptions_per_node_hour, rate);
                });
            });
    }
    if (given("checkpoint_every")) {
        out.checkpoint_interval_s = parse_list<double>(spec, "checkpoint_every", origin, [&spot_limits](const json& v) {
            const std::string duration = duration_text(v);
            return as_predict_refuses([&] {
                return spot_limits(&Scenario::checkpoint_interval_s, parse_duration_s(duration, "--checkpoint-every"));
            });
        });
    }
    if (given("spot_replacement_wait")) {
        out.spot_replacement_wait_s =
            parse_list<double>(spec, "spot_replacement_wait", origin, [&spot_limits](const json& v) {
                const std::string duration = duration_text(v);
                return as_predict_refuses([&] {
                    return spot_limits(&Scenario::spot_replacement_wait_s,
                                       parse_duration_or_zero_s(duration, "--spot-replacement-wait"));
                });
            });
    }
    if (given("elastic_spot")) {
        out.elastic_spot = parse_list<bool>(spec, "elastic_spot", origin, boolean);
    }
    for (std::string_view key :
         {"spot_interruptions_per_node_hour", "checkpoint_every", "spot_replacement_wait", "elastic_spot"}) {
        if (given(key) && std::find(out.pricing.begin(), out.pricing.end(), Pricing::spot) == out.pricing.end()) {
            throw InputError(std::string(origin) + ": \"" + std::string(key) +
                             "\" applies to spot rows only: list \"spot\" in \"pricing\"");
        }
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
    if (given("compiled")) out.compiled = parse_list<bool>(spec, "compiled", origin, boolean);
    if (given("loader")) {
        out.loader = parse_list<Loader>(spec, "loader", origin, [](const json& v) { return parse_loader(text(v)); });
    }
    // The store as predict reads --storage, --storage-tib and --storage-tier (cli/common.cpp,
    // RunCostFlags), with check_run_cost_limits on a probe and the fsx-lustre data's own checks of
    // a size and a tier (StorageCatalog::capacity_tib, tier) that resolve() runs on a row.
    if (given("storage")) {
        out.storage =
            parse_list<Store>(spec, "storage", origin, [](const json& v) { return parse_store(text(v), "storage"); });
    }
    const StorageCatalog& data = StorageCatalog::built_in();
    if (given("storage_tib")) {
        out.storage_tib = parse_list<double>(spec, "storage_tib", origin, [&data](const json& v) {
            Scenario probe;
            probe.storage_tib = number(v);
            return as_predict_refuses([&] {
                check_run_cost_limits(probe);
                return data.capacity_tib(data.store(Store::fsx_lustre), probe.storage_tib);
            });
        });
    }
    if (given("storage_tier")) {
        out.storage_tier_MBps_per_TiB = parse_list<double>(spec, "storage_tier", origin, [&data](const json& v) {
            Scenario probe;
            probe.storage_tier_MBps_per_TiB = number(v);
            return as_predict_refuses([&] {
                check_run_cost_limits(probe);
                return data.tier(data.store(Store::fsx_lustre), probe.storage_tier_MBps_per_TiB).MBps_per_TiB;
            });
        });
    }
    for (std::string_view key : {"storage_tib", "storage_tier"}) {
        if (given(key) && std::find(out.storage.begin(), out.storage.end(), Store::fsx_lustre) == out.storage.end()) {
            throw InputError(std::string(origin) + ": \"" + std::string(key) +
                             "\" applies to fsx-lustre rows only: list \"fsx-lustre\" in \"storage\"");
        }
    }
    // Evaluation and start-up as predict reads --eval-every, --eval-images and --startup, with
    // check_run_cost_limits on a probe.
    constexpr std::int64_t kIntLowest = std::numeric_limits<int>::min(), kIntHighest = std::numeric_limits<int>::max();
    auto run_cost_limits = [](auto Scenario::*field, auto value) {
        return checked_on_probe(field, value, check_run_cost_limits);
    };
    if (given("eval_every")) {
        out.eval_every_epochs =
            parse_list<std::optional<int>>(spec, "eval_every", origin, [&run_cost_limits](const json& v) {
                const int every = static_cast<int>(integer(v, kIntLowest, kIntHighest));
                return as_predict_refuses(
                    [&] { return run_cost_limits(&Scenario::eval_every_epochs, std::optional<int>(every)); });
            });
    }
    if (given("eval_images")) {
        out.eval_images = parse_list<int>(spec, "eval_images", origin, [&run_cost_limits](const json& v) {
            const int images = static_cast<int>(integer(v, kIntLowest, kIntHighest));
            return as_predict_refuses([&] { return run_cost_limits(&Scenario::eval_images, images); });
        });
    }
    if (given("startup")) {
        out.startup_s = parse_list<double>(spec, "startup", origin, [&run_cost_limits](const json& v) {
            const std::string duration = duration_text(v);
            return as_predict_refuses(
                [&] { return run_cost_limits(&Scenario::startup_s, parse_duration_or_zero_s(duration, "--startup")); });
        });
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
        out.ps_colocated = parse_list<bool>(spec, "ps_colocated", origin, boolean);
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
    for (std::size_t n : out.lengths()) {
        product *= static_cast<double>(n);
    }
    // 10^9 rows are some 500 GB of CSV already, and more is a spec that lists more than anyone
    // means to read.
    if (product > kMaxSweepRows) {
        throw InputError(std::string(origin) + ": the cross product has " + format_count(product) +
                         " combinations, more than " + format_count(kMaxSweepRows) + " (about " +
                         format_count(product * kSweepCsvBytesPerRow / 1e12) +
                         " TB of CSV): narrow a list, or split the spec");
    }
    return out;
}

SweepSpec read_sweep_spec(const std::filesystem::path& path, const Catalog& catalog) {
    return parse_sweep_spec(read_text_file(path, "sweep spec"), path.string(), catalog);
}

}  // namespace epochcast
