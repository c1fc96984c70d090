#include "model/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/embedded.hpp"
#include "model/errors.hpp"
#include "model/text_io.hpp"

namespace epochcast {
namespace {

using nlohmann::json;

constexpr std::string_view kSchema = "epochcast.calibration/1";
/// The data-free prior's origin: the one file that must give every network key itself.
constexpr std::string_view kPriorOrigin = "built-in prior";

/// Reads one JSON object's keys, naming the file and the path of the key in every error.
class Fields {
public:
    Fields(const json& object, std::string origin, std::string path)
        : object_(object), origin_(std::move(origin)), path_(std::move(path)) {
        if (!object_.is_object()) fail("", "must be an object");
    }

    double number(const char* key, double min, double max) const {
        const json& value = at(key);
        if (!value.is_number()) fail(key, "must be a number");
        const double x = value.get<double>();
        if (!(x >= min && x <= max)) {
            std::ostringstream message;
            message << "is " << x << ", must be between " << min << " and " << max;
            fail(key, message.str());
        }
        return x;
    }
    std::string text(const char* key) const {
        const json& value = at(key);
        if (!value.is_string()) fail(key, "must be a string");
        return value.get<std::string>();
    }
    std::string text_or(const char* key, std::string fallback) const {
        return object_.contains(key) ? text(key) : fallback;
    }
    int integer(const char* key, int min, int max) const {
        const json& value = at(key);
        if (!value.is_number_integer()) fail(key, "must be a whole number");
        const std::optional<std::int64_t> x = json_whole_number(value);
        if (!x || *x < min || *x > max) fail(key, "is out of range");
        return static_cast<int>(*x);
    }
    bool object_contains(const char* key) const { return object_.contains(key); }
    Fields child(const char* key) const { return Fields(at(key), origin_, path_ + "." + key); }
    const json& at(const char* key) const {
        if (!object_.contains(key)) fail(key, "is missing");
        return object_.at(key);
    }
    [[noreturn]] void fail(std::string_view key, std::string_view what) const {
        std::string where = path_;
        if (!key.empty()) where += (where.empty() ? "" : ".") + std::string(key);
        throw InputError(origin_ + ": " + (where.empty() ? "document" : where) + " " + std::string(what));
    }
    const std::string& origin() const { return origin_; }
    const std::string& path() const { return path_; }

private:
    const json& object_;
    std::string origin_;
    std::string path_;
};

RooflinePrior read_roofline(const Fields& f) {
    RooflinePrior r;
    r.fp32_compute_efficiency = f.number("fp32_compute_efficiency", 1e-3, 1.0);
    r.tensor_compute_efficiency = f.number("tensor_compute_efficiency", 1e-3, 1.0);
    r.memory_efficiency = f.number("memory_efficiency", 1e-3, 10.0);
    r.relative_sigma = f.number("relative_sigma", 0.0, 10.0);
    r.source = f.text_or("source", "");
    return r;
}

FrameworkProfile read_framework(const Fields& f, const FrameworkProfile* defaults) {
    FrameworkProfile p;
    // Files written before the key existed take the data-free prior's bucket.
    p.bucket_MiB =
        defaults && !f.object_contains("bucket_MiB") ? defaults->bucket_MiB : f.number("bucket_MiB", 1e-6, 1e6);
    p.fixed_overhead_s = f.number("fixed_overhead_s", 0.0, 10.0);
    p.sync_jitter = f.number("sync_jitter", 0.0, kMaxSyncJitter);
    p.allreduce_overlap = f.number("allreduce_overlap", 0.0, 1.0);
    p.ps_overlap = f.number("ps_overlap", 0.0, 1.0);
    p.relative_sigma = f.number("relative_sigma", 0.0, 10.0);
    // Files written before the key existed: the prior's, or their input_pipeline's shared rate
    // (Calibration::parse).
    p.cpu_decode_images_per_s_per_vcpu = defaults && !f.object_contains("cpu_decode_images_per_s_per_vcpu")
                                             ? defaults->cpu_decode_images_per_s_per_vcpu
                                             : f.number("cpu_decode_images_per_s_per_vcpu", 1e-3, 1e9);
    p.source = f.text_or("source", "");
    return p;
}

ComputeCurve read_curve(const Fields& f) {
    ComputeCurve c;
    c.gpu = f.text("gpu");
    c.precision = parse_precision(f.text("precision"), f.origin() + ": " + f.path() + ".precision");
    c.framework = parse_framework(f.text("framework"), f.origin() + ": " + f.path() + ".framework");
    if (f.object_contains("stack"))
        c.stack = parse_software_stack(f.text("stack"), f.origin() + ": " + f.path() + ".stack");
    if (f.object_contains("memory_format")) {
        c.memory_format = parse_memory_format(f.text("memory_format"), f.origin() + ": " + f.path() + ".memory_format");
    }
    c.model = f.text_or("model", "resnet50");
    c.image_size = f.object_contains("image_size") ? f.integer("image_size", 32, 100000) : 224;
    c.time_per_image_s = f.number("time_per_image_s", 1e-9, 100.0);
    c.fixed_s = f.number("fixed_s", 0.0, 100.0);
    if (f.object_contains("measured_batch")) c.measured_batch = f.integer("measured_batch", 1, 100000000);
    c.relative_sigma = f.number("relative_sigma", 0.0, 10.0);
    c.source = f.text_or("source", "");
    return c;
}

/// The network section. Files written before the fabrics existed name only tcp_* and efa_* and
/// one intra_efficiency / intra_latency_s (then NVLink's): every key they lack comes from
/// `defaults` (the data-free prior), or is required when there is none.
NetworkParams read_network(const Fields& f, const NetworkParams* defaults) {
    NetworkParams n;
    auto value = [&](const std::string& key, double low, double high, double fallback) {
        if (defaults && !f.object_contains(key.c_str())) return fallback;
        return f.number(key.c_str(), low, high);
    };
    // Keys no file needs, the prior included (0: none): a fabric's cap and its Simple latency.
    auto optional = [&](const std::string& key, double high, double fallback) {
        return f.object_contains(key.c_str()) ? f.number(key.c_str(), 0.0, high) : fallback;
    };
    for (const Interconnect i : kAllInterconnects) {
        const std::string name(to_string(i));
        const FabricParams fallback = defaults ? defaults->fabric(i) : FabricParams{};
        FabricParams& p = n.fabric(i);
        p.efficiency = value(name + "_efficiency", 1e-3, 1.0, fallback.efficiency);
        p.latency_s = value(name + "_latency_s", 0.0, 1.0, fallback.latency_s);
        p.cap_GBps = optional(name + "_cap_GBps", 1e6, fallback.cap_GBps);
        p.simple_latency_s = optional(name + "_simple_latency_s", 1.0, fallback.simple_latency_s);
    }
    for (const IntraLink l : kAllIntraLinks) {
        const std::string name(to_string(l));
        LinkParams fallback = defaults ? defaults->link(l) : LinkParams{};
        if (l == IntraLink::nvlink && f.object_contains("intra_efficiency")) {
            fallback = {f.number("intra_efficiency", 1e-3, 1.0),
                        value("intra_latency_s", 0.0, 1.0, fallback.latency_s)};
        }
        n.link(l).efficiency = value(name + "_efficiency", 1e-3, 1.0, fallback.efficiency);
        n.link(l).latency_s = value(name + "_latency_s", 0.0, 1.0, fallback.latency_s);
    }
    n.nvls_efficiency = value("nvls_efficiency", 1e-3, 1.0, defaults ? defaults->nvls_efficiency : 0.0);
    n.relative_sigma = f.number("relative_sigma", 0.0, 10.0);
    n.source = f.text_or("source", "");
    return n;
}

/// The largest variance a parameter may have in its internal coordinate: a sigma of 10 in the log
/// (or logit), the same bound as every relative_sigma. More says nothing, and 1e308 would
/// overflow the band's arithmetic.
constexpr double kMaxVariance = 100.0;
/// Bound of a residual's figures: any finite number a fit could print.
constexpr double kLargestFigure = 1e300;

/// A covariance must be one: variances from 0 to kMaxVariance, symmetric, and no covariance larger
/// than its variances allow (|c_ij| <= sqrt(c_ii c_jj), with a little slack for printed digits).
void check_covariance(const std::vector<double>& c, std::size_t n, const Fields& f) {
    for (std::size_t i = 0; i < n; ++i) {
        const double variance = c[i * n + i];
        if (!(variance >= 0)) f.fail("covariance", "has a negative variance in row " + std::to_string(i));
        if (variance > kMaxVariance) {
            std::ostringstream message;
            message << "has a variance of " << variance << " in row " << i << ", more than " << kMaxVariance
                    << " (a sigma of 10 in its log or logit coordinate)";
            f.fail("covariance", message.str());
        }
    }
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < i; ++j) {
            const double a = c[i * n + j], b = c[j * n + i];
            const double bound = std::sqrt(c[i * n + i] * c[j * n + j]) * (1 + 1e-6) + 1e-300;
            if (std::abs(a - b) > 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-300) {
                f.fail("covariance", "is not symmetric (rows " + std::to_string(j) + " and " + std::to_string(i) + ")");
            }
            if (std::abs(a) > bound) {
                f.fail("covariance", "row " + std::to_string(i) + " column " + std::to_string(j) +
                                         " exceeds what the two variances allow (|c_ij| <= sqrt(c_ii c_jj))");
            }
        }
    }
}

/// Names a calibration's covariance used for parameters that no longer exist: the one CPU decode
/// rate shared by every framework, before each framework had its own (its row and column go; the
/// frameworks' rates keep their group sigma).
constexpr std::string_view kRetiredParameters[] = {"input_pipeline.decode_images_per_s_per_vcpu"};

void drop_retired_parameters(Uncertainty& u) {
    for (std::string_view retired : kRetiredParameters) {
        const auto found = std::find(u.parameters.begin(), u.parameters.end(), retired);
        if (found == u.parameters.end()) continue;
        const std::size_t n = u.parameters.size(), gone = static_cast<std::size_t>(found - u.parameters.begin());
        std::vector<double> kept;
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                if (i != gone && j != gone) kept.push_back(u.covariance[i * n + j]);
            }
        }
        u.covariance = std::move(kept);
        u.parameters.erase(found);
    }
}

Uncertainty read_uncertainty(const json& section, const std::string& origin) {
    const Fields f(section, origin, "uncertainty");
    Uncertainty u;
    u.model_sigma = f.number("model_sigma", 0.0, 10.0);
    u.method = f.text_or("method", "");
    if (section.contains("parameters")) {
        const json& names = section.at("parameters");
        if (!names.is_array()) f.fail("parameters", "must be an array of names");
        for (const json& name : names) {
            if (!name.is_string()) f.fail("parameters", "must be an array of names");
            u.parameters.push_back(name.get<std::string>());
        }
        const json& rows = f.at("covariance");
        const std::size_t n = u.parameters.size();
        if (!rows.is_array() || rows.size() != n) {
            f.fail("covariance", "must be a " + std::to_string(n) + " x " + std::to_string(n) + " array of numbers");
        }
        for (std::size_t i = 0; i < n; ++i) {
            if (!rows[i].is_array() || rows[i].size() != n) {
                f.fail("covariance", "row " + std::to_string(i) + " must hold " + std::to_string(n) + " numbers");
            }
            for (std::size_t j = 0; j < n; ++j) {
                if (!rows[i][j].is_number()) f.fail("covariance", "row " + std::to_string(i) + " must hold numbers");
                u.covariance.push_back(rows[i][j].get<double>());
            }
        }
        check_covariance(u.covariance, n, f);
        drop_retired_parameters(u);
    }
    if (section.contains("residuals")) {
        const json& residuals = section.at("residuals");
        if (!residuals.is_array()) f.fail("residuals", "must be an array of objects");
        for (std::size_t i = 0; i < residuals.size(); ++i) {
            const Fields r(residuals[i], origin, "uncertainty.residuals[" + std::to_string(i) + "]");
            auto figure = [&r](const char* key) {
                return r.object_contains(key) ? r.number(key, -kLargestFigure, kLargestFigure) : 0.0;
            };
            u.residuals.push_back(
                {r.text_or("origin", ""), r.text_or("quantity", ""), figure("measured"), figure("predicted")});
        }
    }
    return u;
}

json uncertainty_json(const Uncertainty& u) {
    json section = {{"method", u.method}, {"model_sigma", u.model_sigma}, {"parameters", u.parameters}};
    const std::size_t n = u.parameters.size();
    json rows = json::array();
    for (std::size_t i = 0; i < n; ++i) {
        json row = json::array();
        for (std::size_t j = 0; j < n; ++j) row.push_back(u.covariance[i * n + j]);
        rows.push_back(row);
    }
    section["covariance"] = rows;
    json residuals = json::array();
    for (const FitResidual& r : u.residuals) {
        residuals.push_back(
            {{"origin", r.origin}, {"quantity", r.quantity}, {"measured", r.measured}, {"predicted", r.predicted}});
    }
    section["residuals"] = residuals;
    return section;
}

}  // namespace

double* Calibration::decode_rate_field(Loader loader, Framework framework) {
    switch (loader) {
        case Loader::cpu:
            return &this->framework(framework).cpu_decode_images_per_s_per_vcpu;
        case Loader::dali_cpu:
            return &dali_cpu_images_per_s_per_vcpu;
        case Loader::dali:
            return &dali_images_per_s_per_gpu;
        case Loader::framework_default:
        case Loader::synthetic:
            break;
    }
    return nullptr;
}

Calibration Calibration::built_in() { return parse(embedded::calibration_json, "built-in calibration"); }

Calibration Calibration::data_free_prior() { return parse(embedded::prior_calibration_json, kPriorOrigin); }

Calibration Calibration::parse(std::string_view json_text, std::string_view origin_view) {
    const std::string origin(origin_view);
    const json document = parse_json(json_text, origin);
    const Fields root(document, origin, "");
    if (root.text("schema") != kSchema) {
        root.fail("schema", "is '" + root.text("schema") + "', expected '" + std::string(kSchema) + "'");
    }
    Calibration c;
    c.description = root.text_or("description", "");
    if (document.contains("fitted_from")) {
        const json& runs = document.at("fitted_from");
        if (!runs.is_array()) root.fail("fitted_from", "must be an array of strings");
        for (const json& run : runs) {
            if (!run.is_string()) root.fail("fitted_from", "must be an array of strings");
            c.fitted_from.push_back(run.get<std::string>());
        }
    }
    c.roofline = read_roofline(root.child("roofline"));
    // Every file but the data-free prior itself takes the keys it lacks (written before they
    // existed) from the prior, read once here.
    const std::optional<Calibration> prior =
        origin == kPriorOrigin ? std::nullopt : std::optional<Calibration>(data_free_prior());
    const Fields frameworks = root.child("frameworks");
    std::vector<Framework> without_cpu_rate;  // profiles written before each framework had its own
    for (Framework f : kAllFrameworks) {
        const std::string name(to_string(f));
        if (!frameworks.object_contains(name.c_str()) ||
            !frameworks.child(name.c_str()).object_contains("cpu_decode_images_per_s_per_vcpu")) {
            without_cpu_rate.push_back(f);
        }
        if (prior && f == Framework::epochcast && !frameworks.object_contains(name.c_str())) {
            // Files written before epochcast's own executor had a profile: take the prior's.
            c.framework(f) = prior->framework(f);
            continue;
        }
        c.framework(f) = read_framework(frameworks.child(name.c_str()), prior ? &prior->framework(f) : nullptr);
    }
    const json& curves = root.at("compute");
    if (!curves.is_array()) root.fail("compute", "must be an array");
    for (std::size_t i = 0; i < curves.size(); ++i) {
        c.compute.push_back(read_curve(Fields(curves[i], origin, "compute[" + std::to_string(i) + "]")));
    }
    c.network = read_network(root.child("network"), prior ? &prior->network : nullptr);
    const Fields pipeline = root.child("input_pipeline");
    // Files written before each framework had its own CPU loader rate gave one for all.
    if (pipeline.object_contains("decode_images_per_s_per_vcpu")) {
        const double shared = pipeline.number("decode_images_per_s_per_vcpu", 1e-3, 1e9);
        for (const Framework f : without_cpu_rate) c.framework(f).cpu_decode_images_per_s_per_vcpu = shared;
    }
    // Files written before DALI was a loader take the prior's DALI rates.
    auto rate = [&](const char* key, double fallback) {
        return prior && !pipeline.object_contains(key) ? fallback : pipeline.number(key, 1e-3, 1e9);
    };
    c.dali_cpu_images_per_s_per_vcpu =
        rate("dali_cpu_images_per_s_per_vcpu", prior ? prior->dali_cpu_images_per_s_per_vcpu : 0.0);
    c.dali_images_per_s_per_gpu = rate("dali_images_per_s_per_gpu", prior ? prior->dali_images_per_s_per_gpu : 0.0);
    c.decode_relative_sigma = pipeline.number("relative_sigma", 0.0, 10.0);
    const Fields schedule = root.child("schedule");
    c.startup_s = schedule.number("startup_s", 0.0, 1e6);
    // Files written before start-up grew with the cluster take the prior's growth.
    c.startup_s_per_doubling = prior && !schedule.object_contains("startup_s_per_doubling")
                                   ? prior->startup_s_per_doubling
                                   : schedule.number("startup_s_per_doubling", 0.0, 1e6);
    c.checkpoint_write_GBps = schedule.number("checkpoint_write_GBps", 1e-6, 1e6);
    if (document.contains("uncertainty")) c.uncertainty = read_uncertainty(document.at("uncertainty"), origin);
    return c;
}

Calibration Calibration::load(const std::filesystem::path& path) {
    return parse(read_text_file(path, "calibration"), path.string());
}

std::string Calibration::to_json() const {
    json root;
    root["schema"] = kSchema;
    root["description"] = description;
    root["fitted_from"] = fitted_from;
    root["roofline"] = {{"fp32_compute_efficiency", roofline.fp32_compute_efficiency},
                        {"tensor_compute_efficiency", roofline.tensor_compute_efficiency},
                        {"memory_efficiency", roofline.memory_efficiency},
                        {"relative_sigma", roofline.relative_sigma},
                        {"source", roofline.source}};
    for (Framework f : kAllFrameworks) {
        const FrameworkProfile& p = framework(f);
        root["frameworks"][std::string(to_string(f))] = {
            {"fixed_overhead_s", p.fixed_overhead_s},
            {"sync_jitter", p.sync_jitter},
            {"allreduce_overlap", p.allreduce_overlap},
            {"ps_overlap", p.ps_overlap},
            {"bucket_MiB", p.bucket_MiB},
            {"cpu_decode_images_per_s_per_vcpu", p.cpu_decode_images_per_s_per_vcpu},
            {"relative_sigma", p.relative_sigma},
            {"source", p.source}};
    }
    root["compute"] = json::array();
    for (const ComputeCurve& curve : compute) {
        json entry = {{"gpu", curve.gpu},
                      {"precision", to_string(curve.precision)},
                      {"framework", to_string(curve.framework)},
                      {"model", curve.model},
                      {"image_size", curve.image_size},
                      {"time_per_image_s", curve.time_per_image_s},
                      {"fixed_s", curve.fixed_s},
                      {"relative_sigma", curve.relative_sigma},
                      {"source", curve.source}};
        if (curve.stack != SoftwareStack::current) entry["stack"] = to_string(curve.stack);
        if (curve.memory_format != MemoryFormat::channels_last) entry["memory_format"] = to_string(curve.memory_format);
        if (curve.measured_batch > 0) entry["measured_batch"] = curve.measured_batch;
        root["compute"].push_back(std::move(entry));
    }
    json& net = root["network"];
    for (const Interconnect i : kAllInterconnects) {
        const std::string name(to_string(i));
        net[name + "_efficiency"] = network.fabric(i).efficiency;
        net[name + "_latency_s"] = network.fabric(i).latency_s;
        if (network.fabric(i).cap_GBps > 0) net[name + "_cap_GBps"] = network.fabric(i).cap_GBps;
        if (network.fabric(i).simple_latency_s > 0)
            net[name + "_simple_latency_s"] = network.fabric(i).simple_latency_s;
    }
    for (const IntraLink l : kAllIntraLinks) {
        net[std::string(to_string(l)) + "_efficiency"] = network.link(l).efficiency;
        net[std::string(to_string(l)) + "_latency_s"] = network.link(l).latency_s;
    }
    net["nvls_efficiency"] = network.nvls_efficiency;
    net["relative_sigma"] = network.relative_sigma;
    net["source"] = network.source;
    root["input_pipeline"] = {{"dali_cpu_images_per_s_per_vcpu", dali_cpu_images_per_s_per_vcpu},
                              {"dali_images_per_s_per_gpu", dali_images_per_s_per_gpu},
                              {"relative_sigma", decode_relative_sigma}};
    root["schedule"] = {{"startup_s", startup_s},
                        {"startup_s_per_doubling", startup_s_per_doubling},
                        {"checkpoint_write_GBps", checkpoint_write_GBps}};
    if (!uncertainty.parameters.empty() || uncertainty.model_sigma > 0)
        root["uncertainty"] = uncertainty_json(uncertainty);
    return root.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Calibration load_calibration(const std::string& name_or_path) {
    if (name_or_path.empty() || name_or_path == "built-in") return Calibration::built_in();
    if (name_or_path == "data-free") return Calibration::data_free_prior();
    return Calibration::load(name_or_path);
}

}  // namespace epochcast
