// Time to accuracy: the epochs a training recipe needs to reach a target top-1 accuracy at a
// global batch, from the recipe's published runs (model/convergence.json). docs/model.md, "Time to
// accuracy" (eqs. K1-K3).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace epochcast {

/// One published result of a recipe: trained `epochs_low` to `epochs_high` epochs at a global
/// batch (a range where several runs at about that batch differ; equal ends for one figure) and
/// reached `top1_percent` ImageNet top-1 accuracy.
struct RecipePoint {
    double global_batch = 0;  ///< images per iteration over all GPUs
    double epochs_low = 0;    ///< fewest epochs published at this batch
    double epochs_high = 0;   ///< most
    double top1_percent = 0;  ///< top-1 accuracy reached (the target, for time-to-target results)
    std::string source;       ///< where the figure is published, with its conditions
};

/// Eq. K2, the empirical law of large-batch training (McCandlish et al. 2018, "An Empirical Model of
/// Large-Batch Training", arXiv:1812.06162): epochs = min_epochs x (1 + batch / noise_batch), fitted
/// by least squares to a recipe's published points (each at the middle of its range).
struct NoiseScaleLaw {
    double min_epochs = 0;      ///< epochs as the batch goes to zero
    double noise_batch = 0;     ///< the gradient noise scale, images: the batch at which epochs double
    double residual_sigma = 0;  ///< scatter of the points around the line, epochs
    double mean_batch = 0;      ///< of the points, for the prediction's sigma
    double batch_spread = 0;    ///< sum of (batch - mean)^2 over the points
    int points = 0;
    double epochs(double global_batch) const { return min_epochs * (1 + global_batch / noise_batch); }
    /// One sigma of the line at `global_batch` (the fitted line's own uncertainty and the scatter).
    double sigma(double global_batch) const;
};
NoiseScaleLaw fit_noise_scale_law(const std::vector<RecipePoint>& points);

/// How a recipe sets its learning rate for a global batch (what a launch file passes the training
/// script): per_256_images x global batch / 256, Goyal et al.'s linear scaling rule, after
/// warmup_epochs of linear warm-up. None given (0) where the recipe sets it otherwise (MLPerf's
/// LARS, per global batch in its own code).
struct LearningRateRule {
    double per_256_images = 0;
    double warmup_epochs = 0;
    std::string source;
    bool given() const { return per_256_images > 0; }
    double at(double global_batch) const { return per_256_images * global_batch / 256.0; }
};

/// A training recipe (optimizer, schedule, hyper-parameters rescaled with the batch) and what it is
/// published to reach.
struct Recipe {
    std::string name;                 ///< "mlperf-lars", "goyal2017"
    std::string description;          ///< optimizer and schedule, one line
    std::string model;                ///< the architecture its runs trained ("resnet50")
    std::int64_t dataset_images = 0;  ///< the training set of its runs (ImageNet-1k)
    int image_size = 0;               ///< their input side, pixels
    /// Beyond the largest published batch the epochs follow eq. K2 up to kMaxExtrapolation times
    /// that batch (true), or the recipe is not extrapolated at all (false).
    bool extrapolate = false;
    /// Its evaluation cadence, epochs between passes over the validation set, where its code
    /// publishes one (the default of --eval-every with --target-top1: eq. E2); 0: none published.
    int eval_every_epochs = 0;
    std::string eval_source;          ///< where that cadence is published
    LearningRateRule learning_rate;   ///< its learning rate at a global batch, where the file gives one
    std::vector<RecipePoint> points;  ///< increasing global batch, at least two
    NoiseScaleLaw law;                ///< eq. K2 fitted to the points once, when `extrapolate`

    double largest_batch() const { return points.back().global_batch; }
    double smallest_batch() const { return points.front().global_batch; }
};

/// How far past its largest published batch a recipe with `extrapolate` is carried by eq. K2.
inline constexpr double kMaxExtrapolation = 2.0;

/// The recipes, as compiled in from model/convergence.json or parsed from such a file. One recipe
/// name may be published for several models (goyal2017: ResNet-50 and ResNet-101).
struct Convergence {
    std::vector<Recipe> recipes;
    std::string default_recipe;  ///< what --target-top1 uses without --recipe, where published for the model

    /// The recipe --target-top1 uses for `model` without --recipe: default_recipe where it is published
    /// for the model, else the first recipe of the file that is (torchvision's for ResNet-18, -34
    /// and -152), else default_recipe (whose error then names what there is).
    const std::string& default_recipe_for(std::string_view model) const;

    /// The index in `recipes` of recipe `name` for `model`. Throws InputError naming the known
    /// recipes for an unknown name, and the models it is published for when `model` is not one,
    /// with the recipes that are published for `model` (or --epochs where none is).
    int recipe_index(std::string_view name, std::string_view model) const;
    const Recipe& recipe(std::string_view name, std::string_view model) const {
        return recipes[static_cast<std::size_t>(recipe_index(name, model))];
    }
    bool knows(std::string_view name) const;  ///< some model has a recipe of this name
    /// Throws InputError naming the known recipes when no model has a recipe called `name`.
    void require_known(std::string_view name) const;
    /// The recipes' names, each once, sorted.
    std::vector<std::string> recipe_names() const;
    /// "goyal2017, mlperf-lars"
    std::string names() const;
    /// The largest global batch any recipe for `model` was published at (0 when none is).
    double largest_published_batch(std::string_view model) const;

    static const Convergence& built_in();
    /// Throws InputError "<origin>: ..." for a malformed file: a point out of order, a non-positive
    /// or non-finite figure, an unknown default.
    static Convergence parse(std::string_view json_text, std::string_view origin);
};

/// Where the epochs of a prediction come from.
enum class EpochsBasis {
    given,         ///< --epochs (or a sweep's or schedule's epochs)
    published,     ///< a recipe's published runs at this batch, or between two of them (eq. K1)
    extrapolated,  ///< beyond the recipe's largest published batch, by eq. K2
};
std::string_view to_string(EpochsBasis basis);

/// The epochs to a target top-1 at a global batch by one recipe.
struct EpochsToTarget {
    double epochs = 0;      ///< central
    double epochs_low = 0;  ///< the band's ends: the published range, or eq. K2's 95% band
    double epochs_high = 0;
    double top1_percent = 0;  ///< what the recipe reaches at this batch (eq. K1)
    EpochsBasis basis = EpochsBasis::published;
};

/// Throws InputError unless `percent` is a top-1 accuracy above 0 and below 100 (--target-top1).
void check_target_top1(double percent);

/// Throws InputError when `recipe` was not published for this model, dataset size and image size.
void check_recipe_applies(const Recipe& recipe, std::string_view model, std::int64_t dataset_images, int image_size);

/// Eqs. K1-K3. Throws InputError when the recipe does not apply (another model, dataset or image
/// size), when the target is not a percentage in (0, 100), when the recipe reaches less than the
/// target at this batch (naming both), and beyond kMaxExtrapolation times its largest batch (or
/// beyond its largest at all, when it is not extrapolated).
EpochsToTarget epochs_to_target(const Recipe& recipe, double global_batch, double target_top1_percent,
                                std::string_view model, std::int64_t dataset_images, int image_size);

/// What the JSON's `epochs_source` says: "--epochs" for given epochs, else "<recipe> (published)"
/// or "<recipe> (extrapolated)".
std::string epochs_source(const Convergence& convergence, int recipe, EpochsBasis basis);

struct ResolvedScenario;
struct Scenario;

/// The epochs to train and their band, basis and recipe: the scenario's epochs, or, for a target
/// accuracy, its recipe's at the global batch (eqs. K1-K3); the fields of `r` from `epochs` to
/// global_batch_beyond_published. Throws InputError for an unknown recipe or a target it does not reach.
void set_epochs(ResolvedScenario& r, const Convergence& convergence, const Scenario& scenario, double global_batch);

/// Eq. E2's K of `r`: --eval-every where given, else the cadence of the recipe the epochs come
/// from (--target-top1; set_epochs() chose it) where it publishes one, else none.
void set_evaluation_cadence(ResolvedScenario& r, const Convergence& convergence, const Scenario& scenario);

}  // namespace epochcast
