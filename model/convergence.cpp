#include "model/convergence.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "model/embedded.hpp"
#include "model/errors.hpp"
#include "model/prediction.hpp"
#include "model/resolved_scenario.hpp"
#include "model/scenario.hpp"
#include "model/storage.hpp"
#include "model/text_io.hpp"

namespace epochcast {
namespace {

using json = nlohmann::json;

constexpr std::string_view kSchema = "epochcast.convergence/1";
/// The largest global batch a recipe file may name: far past any published run, and exact in a double.
constexpr double kMaxGlobalBatch = 1e9;

std::string format_percent(double percent) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.2f", percent);
    std::string text = buffer;
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
    return text + "%";
}

std::string string_field(const json& object, const char* key, const std::string& where) {
    const auto found = object.find(key);
    if (found == object.end() || !found->is_string() || found->get<std::string>().empty()) {
        throw InputError(where + ": '" + key + "' must be a non-empty string");
    }
    return found->get<std::string>();
}

double number_field(const json& object, const char* key, const std::string& where, double low, double high) {
    const auto found = object.find(key);
    if (found == object.end() || !found->is_number()) throw InputError(where + ": '" + key + "' must be a number");
    const double value = found->get<double>();
    if (!std::isfinite(value) || value <= low || value > high) {
        throw InputError(where + ": '" + key + "' must be above " + format_count(low) + " and at most " +
                         format_count(high) + " (got " + found->dump() + ")");
    }
    return value;
}

RecipePoint parse_point(const json& entry, const std::string& where) {
    if (!entry.is_object()) throw InputError(where + ": must be an object");
    RecipePoint p;
    p.global_batch = number_field(entry, "global_batch", where, 0, kMaxGlobalBatch);
    p.epochs_low = number_field(entry, "epochs", where, 0, 1e4);
    p.epochs_high = entry.contains("epochs_high") ? number_field(entry, "epochs_high", where, 0, 1e4) : p.epochs_low;
    if (p.epochs_high < p.epochs_low) throw InputError(where + ": 'epochs_high' is below 'epochs'");
    p.top1_percent = number_field(entry, "top1_percent", where, 0, 100);
    p.source = string_field(entry, "source", where);
    return p;
}

Recipe parse_recipe(const json& entry, const std::string& where) {
    if (!entry.is_object()) throw InputError(where + ": must be an object");
    Recipe r;
    r.name = string_field(entry, "name", where);
    const std::string here = where + " ('" + r.name + "')";
    r.description = string_field(entry, "description", here);
    r.model = string_field(entry, "model", here);
    r.dataset_images = static_cast<std::int64_t>(number_field(entry, "dataset_images", here, 0, kMaxGlobalBatch));
    r.image_size = static_cast<int>(number_field(entry, "image_size", here, 0, 4096));
    const auto extrapolate = entry.find("extrapolate");
    if (extrapolate == entry.end() || !extrapolate->is_boolean())
        throw InputError(here + ": 'extrapolate' must be true or false");
    r.extrapolate = extrapolate->get<bool>();
    if (entry.contains("eval_every_epochs")) {
        const double every = number_field(entry, "eval_every_epochs", here, 0, kMaxEvalEveryEpochs);
        if (every != std::floor(every)) throw InputError(here + ": 'eval_every_epochs' must be a whole number");
        r.eval_every_epochs = static_cast<int>(every);
        r.eval_source = string_field(entry, "eval_source", here);
    }
    if (const auto rate = entry.find("learning_rate"); rate != entry.end()) {
        const std::string at = here + " learning_rate";
        if (!rate->is_object()) throw InputError(at + ": must be an object");
        r.learning_rate.per_256_images = number_field(*rate, "per_256_images", at, 0, 1e3);
        const auto warmup = rate->find("warmup_epochs");
        if (warmup == rate->end() || !warmup->is_number() || !(warmup->get<double>() >= 0) ||
            !(warmup->get<double>() <= 1e4)) {
            throw InputError(at + ": 'warmup_epochs' must be a number from 0 to 10,000");
        }
        r.learning_rate.warmup_epochs = warmup->get<double>();
        r.learning_rate.source = string_field(*rate, "source", at);
    }
    // One published result is a recipe at that batch; eq. K2 needs two to carry it further.
    const std::size_t least = r.extrapolate ? 2 : 1;
    const auto points = entry.find("points");
    if (points == entry.end() || !points->is_array() || points->size() < least) {
        throw InputError(here + ": 'points' must be an array of at least " + (least == 2 ? "two" : "one") +
                         " published result" + (least == 2 ? "s (an extrapolated recipe)" : ""));
    }
    for (std::size_t i = 0; i < points->size(); ++i) {
        r.points.push_back(parse_point((*points)[i], here + " point " + std::to_string(i)));
        if (i > 0 && !(r.points[i].global_batch > r.points[i - 1].global_batch)) {
            throw InputError(here + " point " + std::to_string(i) + ": global batches must increase");
        }
    }
    return r;
}

/// Linear interpolation of `value` between two points in the logarithm of the batch (eq. K1).
double between(double batch, const RecipePoint& a, const RecipePoint& b, double RecipePoint::*value) {
    const double w = std::log(batch / a.global_batch) / std::log(b.global_batch / a.global_batch);
    return a.*value + w * (b.*value - a.*value);
}

}  // namespace

double NoiseScaleLaw::sigma(double global_batch) const {
    const double leverage =
        batch_spread > 0 ? (global_batch - mean_batch) * (global_batch - mean_batch) / batch_spread : 0;
    return residual_sigma * std::sqrt(1.0 + 1.0 / points + leverage);
}

NoiseScaleLaw fit_noise_scale_law(const std::vector<RecipePoint>& points) {
    NoiseScaleLaw law;
    law.points = static_cast<int>(points.size());
    if (points.size() < 2) throw InputError("the noise-scale law needs two published points or more");
    double sum_b = 0, sum_e = 0;
    for (const RecipePoint& p : points) {
        sum_b += p.global_batch;
        sum_e += 0.5 * (p.epochs_low + p.epochs_high);
    }
    const double n = static_cast<double>(points.size());
    law.mean_batch = sum_b / n;
    const double mean_e = sum_e / n;
    double sxx = 0, sxy = 0;
    for (const RecipePoint& p : points) {
        const double dx = p.global_batch - law.mean_batch;
        sxx += dx * dx;
        sxy += dx * (0.5 * (p.epochs_low + p.epochs_high) - mean_e);
    }
    law.batch_spread = sxx;
    const double slope = sxy / sxx;
    law.min_epochs = mean_e - slope * law.mean_batch;
    if (!(slope > 0) || !(law.min_epochs > 0)) {
        throw InputError("the published points do not rise with the batch: eq. K2 cannot be fitted");
    }
    law.noise_batch = law.min_epochs / slope;
    double sum_sq = 0;
    for (const RecipePoint& p : points) {
        const double r = 0.5 * (p.epochs_low + p.epochs_high) - law.epochs(p.global_batch);
        sum_sq += r * r;
    }
    law.residual_sigma = points.size() > 2 ? std::sqrt(sum_sq / (n - 2)) : 0.0;
    return law;
}

int Convergence::recipe_index(std::string_view name, std::string_view model) const {
    require_known(name);
    std::string models;
    for (std::size_t i = 0; i < recipes.size(); ++i) {
        if (recipes[i].name != name) continue;
        if (recipes[i].model == model) return static_cast<int>(i);
        models += (models.empty() ? "" : ", ") + recipes[i].model;
    }
    std::string others;
    for (const Recipe& r : recipes) {
        if (r.model == model) others += (others.empty() ? "" : " or ") + r.name;
    }
    throw InputError("recipe " + std::string(name) + " is published for " + models + ", not " + std::string(model) +
                     (others.empty() ? "; no recipe is published for " + std::string(model) + ": give --epochs"
                                     : "; for " + std::string(model) + ": --recipe " + others));
}

const std::string& Convergence::default_recipe_for(std::string_view model) const {
    if (std::any_of(recipes.begin(), recipes.end(),
                    [&](const Recipe& r) { return r.name == default_recipe && r.model == model; })) {
        return default_recipe;
    }
    for (const Recipe& r : recipes) {
        if (r.model == model) return r.name;
    }
    return default_recipe;
}

bool Convergence::knows(std::string_view name) const {
    return std::any_of(recipes.begin(), recipes.end(), [&](const Recipe& r) { return r.name == name; });
}

void Convergence::require_known(std::string_view name) const {
    if (!knows(name)) throw InputError("unknown recipe '" + std::string(name) + "' (known: " + names() + ")");
}

std::vector<std::string> Convergence::recipe_names() const {
    std::vector<std::string> sorted;
    for (const Recipe& r : recipes) sorted.push_back(r.name);
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    return sorted;
}

std::string Convergence::names() const {
    std::string out;
    for (const std::string& name : recipe_names()) out += (out.empty() ? "" : ", ") + name;
    return out;
}

double Convergence::largest_published_batch(std::string_view model) const {
    double largest = 0;
    for (const Recipe& r : recipes) {
        if (r.model == model) largest = std::max(largest, r.largest_batch());
    }
    return largest;
}

const Convergence& Convergence::built_in() {
    static const Convergence built = parse(embedded::convergence_json, "built-in convergence data");
    return built;
}

Convergence Convergence::parse(std::string_view json_text, std::string_view origin) {
    const json root = parse_json(json_text, origin);
    const std::string where(origin);
    if (!root.is_object() || root.value("schema", "") != kSchema) {
        throw InputError(where + ": not an " + std::string(kSchema) + " file ('schema' must say so)");
    }
    const auto recipes = root.find("recipes");
    if (recipes == root.end() || !recipes->is_array() || recipes->empty()) {
        throw InputError(where + ": 'recipes' must be a non-empty array");
    }
    Convergence out;
    for (std::size_t i = 0; i < recipes->size(); ++i) {
        Recipe r = parse_recipe((*recipes)[i], where + ": recipe " + std::to_string(i));
        for (const Recipe& known : out.recipes) {
            if (known.name == r.name && known.model == r.model) {
                throw InputError(where + ": recipe '" + r.name + "' is given twice for " + r.model);
            }
        }
        if (r.extrapolate) r.law = fit_noise_scale_law(r.points);  // fails here, not at the first prediction
        out.recipes.push_back(std::move(r));
    }
    out.default_recipe = string_field(root, "default_recipe", where);
    if (!out.knows(out.default_recipe)) {
        throw InputError(where + ": 'default_recipe' names no recipe (known: " + out.names() + ")");
    }
    return out;
}

std::string_view to_string(EpochsBasis basis) {
    switch (basis) {
        case EpochsBasis::given:
            return "given";
        case EpochsBasis::published:
            return "published";
        case EpochsBasis::extrapolated:
            return "extrapolated";
    }
    return "given";
}

void check_target_top1(double percent) {
    if (!std::isfinite(percent) || percent <= 0 || percent >= 100) {
        throw InputError("--target-top1 must be a top-1 accuracy in percent, above 0 and below 100 (got " +
                         format_percent(percent) + ")");
    }
}

void check_recipe_applies(const Recipe& recipe, std::string_view model, std::int64_t dataset_images, int image_size) {
    if (model != recipe.model || dataset_images != recipe.dataset_images || image_size != recipe.image_size) {
        throw InputError("recipe " + recipe.name + " is published for " + recipe.model + " at " +
                         std::to_string(recipe.image_size) + " px on " + format_count(double(recipe.dataset_images)) +
                         " images, not " + std::string(model) + " at " + std::to_string(image_size) + " px on " +
                         format_count(double(dataset_images)) + " images");
    }
}

EpochsToTarget epochs_to_target(const Recipe& recipe, double global_batch, double target_top1_percent,
                                std::string_view model, std::int64_t dataset_images, int image_size) {
    check_target_top1(target_top1_percent);
    check_recipe_applies(recipe, model, dataset_images, image_size);
    if (!(global_batch > 0) || !std::isfinite(global_batch)) throw InputError("the global batch must be positive");
    const std::vector<RecipePoint>& pts = recipe.points;
    EpochsToTarget out;
    if (global_batch > recipe.largest_batch()) {
        const double limit = recipe.extrapolate ? kMaxExtrapolation * recipe.largest_batch() : recipe.largest_batch();
        if (global_batch > limit) {
            throw InputError("recipe " + recipe.name + " is published up to a global batch of " +
                             format_count(recipe.largest_batch()) +
                             (recipe.extrapolate ? " and carried to " + format_count(limit) : std::string()) + "; " +
                             format_count(global_batch) + " is beyond it (give --epochs to train it anyway)");
        }
        // Eq. K2 from the largest published point: the law's rise added to that point's range.
        const NoiseScaleLaw& law = recipe.law;
        const RecipePoint& last = pts.back();
        const double rise = law.epochs(global_batch) - law.epochs(last.global_batch);
        const double spread = kInterval95Sigmas * law.sigma(global_batch);
        out.epochs = 0.5 * (last.epochs_low + last.epochs_high) + rise;
        out.epochs_low = std::max(last.epochs_low, last.epochs_low + rise - spread);
        out.epochs_high = last.epochs_high + rise + spread;
        out.top1_percent = last.top1_percent;
        out.basis = EpochsBasis::extrapolated;
    } else if (global_batch <= recipe.smallest_batch()) {
        // Below the smallest published batch: its figures (a smaller batch does not need more epochs).
        out.epochs_low = pts.front().epochs_low;
        out.epochs_high = pts.front().epochs_high;
        out.epochs = 0.5 * (out.epochs_low + out.epochs_high);
        out.top1_percent = pts.front().top1_percent;
    } else {
        std::size_t k = 1;
        while (pts[k].global_batch < global_batch) ++k;
        const RecipePoint& a = pts[k - 1];
        const RecipePoint& b = pts[k];
        out.epochs_low = between(global_batch, a, b, &RecipePoint::epochs_low);
        out.epochs_high = between(global_batch, a, b, &RecipePoint::epochs_high);
        out.epochs = 0.5 * (out.epochs_low + out.epochs_high);
        out.top1_percent = between(global_batch, a, b, &RecipePoint::top1_percent);
    }
    // Eq. K3: the recipe reaches its published accuracy; a higher target is not published.
    if (out.top1_percent < target_top1_percent) {
        throw InputError("recipe " + recipe.name + " reaches " + format_percent(out.top1_percent) +
                         " top-1 at a global batch of " + format_count(global_batch) + ", below the target " +
                         format_percent(target_top1_percent));
    }
    return out;
}

std::string epochs_source(const Convergence& convergence, int recipe, EpochsBasis basis) {
    if (basis == EpochsBasis::given || recipe < 0 || recipe >= static_cast<int>(convergence.recipes.size())) {
        return "--epochs";
    }
    return convergence.recipes[static_cast<std::size_t>(recipe)].name + " (" + std::string(to_string(basis)) + ")";
}

void set_epochs(ResolvedScenario& r, const Convergence& convergence, const Scenario& scenario, double global_batch) {
    r.epochs = r.epochs_low = r.epochs_high = scenario.epochs;
    if (scenario.target_top1_percent != 0) {
        const std::string& name =
            scenario.recipe.empty() ? convergence.default_recipe_for(scenario.model) : scenario.recipe;
        r.epochs_recipe = convergence.recipe_index(name, scenario.model);
        const EpochsToTarget needed = epochs_to_target(convergence.recipes[static_cast<std::size_t>(r.epochs_recipe)],
                                                       global_batch, scenario.target_top1_percent, scenario.model,
                                                       scenario.dataset_images, scenario.image_size);
        r.epochs = needed.epochs;
        r.epochs_low = needed.epochs_low;
        r.epochs_high = needed.epochs_high;
        r.epochs_basis = needed.basis;
    }
    const double largest_published = convergence.largest_published_batch(scenario.model);
    r.global_batch_beyond_published = largest_published > 0 && global_batch > largest_published;
}

void set_evaluation_cadence(ResolvedScenario& r, const Convergence& convergence, const Scenario& scenario) {
    const int recipes =
        r.epochs_recipe >= 0 ? convergence.recipes[static_cast<std::size_t>(r.epochs_recipe)].eval_every_epochs : 0;
    r.eval_every_epochs = scenario.eval_every_epochs.value_or(recipes);
    r.eval_every_from_recipe = !scenario.eval_every_epochs && recipes > 0;
}

}  // namespace epochcast
