// `epochcast plan --deadline 2h --budget 500 [--pricing MODEL] [--cloud NAME] [--elastic] [--plot FILE]
// [--json]`: which configuration to rent. Searches the catalog's space (model/search.hpp) for the cheapest plan
// that meets the deadline and the fastest within the budget, and prints the Pareto front of time
// against cost. When nothing meets the deadline or the budget, it says so on stderr after the
// output and exits with code 3 (cli/output.hpp).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/job_files.hpp"
#include "cli/output.hpp"
#include "cli/plot.hpp"
#include "cli/report.hpp"
#include "cli/table.hpp"
#include "model/billing.hpp"
#include "model/errors.hpp"
#include "model/iteration.hpp"
#include "model/search.hpp"
#include "model/text_io.hpp"

namespace epochcast::cli {
namespace {

struct PlanOptions {
    EmitFlags emit;  ///< --emit: the answer as a launch file
    std::string deadline;
    double budget_usd = 0;
    CLI::Option* budget_option = nullptr;  ///< given: a budget, which must be positive (0 is not "none")
    std::string pricing = "on-demand";
    std::string rank_by = "bill";  ///< --rank-by: bill or share (eq. H1)
    bool spot = false;             ///< --spot, the older spelling of --pricing spot
    SpotFlags spot_flags;
    RunCostFlags run_costs;
    std::string cloud;
    bool elastic = false;
    bool json = false;
    std::string plot;
    std::string model = "resnet50";
    int image_size = 224;
    std::int64_t dataset_images = kImageNetTrainImages;
    double epochs = 90;
    CLI::Option* epochs_option = nullptr;  ///< given: the epochs are fixed, no target is assumed
    bool allow_unpublished_batch = false;
    double confidence = 0.5;
    std::string precision = "amp";
    std::string framework = "pytorch";
    std::string loader = "default";
    std::string memory_format = "channels_last";
    bool compiled = false;
    std::vector<std::string> instances;
    std::vector<int> nodes;
    std::vector<int> batches;
    int global_batch = 0;
    CLI::Option* global_batch_option = nullptr;  ///< given: at least 1 (0 is not "none")
    std::vector<std::string> catalogs;
    std::string calibration = "built-in";
    TargetFlags target;
};

/// The largest budget plan takes: a trillion dollars. Past it nothing changes the answer.
constexpr double kMaxBudgetUsd = 1e12;

double parse_deadline_s(const std::string& text) { return parse_duration_s(text, "--deadline"); }

/// "8 x p3.16xlarge = 64 x V100-SXM2-16GB", with how it is sold when `with_pricing` (a spot search,
/// which weighs elastic and on-demand twins, or one of several pricings): ", spot (0.12
/// interruptions)", ", spot elastic (0.12 interruptions)", ", on-demand", ", capacity-block".
std::string cluster_text(const Catalog& catalog, const Plan& plan, bool with_pricing = false) {
    const Scenario& s = plan.scenario;
    const Prediction& p = plan.prediction;
    const InstanceSpec& instance = catalog.instance(s.instance);
    std::string text = std::to_string(s.nodes) + " x " + s.instance;
    if (s.gpus_per_node < instance.gpus) text += " (" + std::to_string(s.gpus_per_node) + " GPUs each)";
    text += " = " + std::to_string(p.gpus) + " x " + instance.gpu;
    if (!with_pricing) return text;
    if (s.pricing == Pricing::spot) {
        text += p.spot.modelled ? std::string(p.spot.elastic_priced ? ", spot elastic (" : ", spot (") +
                                      format_number(p.spot.expected_interruptions, 2) + " interruptions)"
                                : ", spot (interruptions unknown)";
    } else {
        text += ", " + std::string(to_string(s.pricing));
    }
    return text;
}

std::string strategy_text(const Scenario& s) {
    if (s.strategy != Strategy::ps) return std::string(to_string(s.strategy));
    if (s.ps_colocated) return "ps, co-located";
    return "ps, " + std::to_string(s.ps_nodes) + " x " + s.ps_instance;
}

/// The strategy with what ran over which link: "nccl (tree over infiniband)" between nodes; on one
/// node the GPUs' own link, "nccl (nvls over nvswitch)", since nothing crosses the fabric.
std::string strategy_text(const Catalog& catalog, const Plan& plan) {
    const Prediction& p = plan.prediction;
    std::string text = strategy_text(plan.scenario);
    if (p.algorithm == Algorithm::none) return text;
    const std::string_view link = catalog.instance(plan.scenario.instance).gradient_link(p.nodes, p.interconnect);
    return text + " (" + std::string(to_string(p.algorithm)) + " over " + std::string(link) + ")";
}

/// A plan's epochs with what the table flags: "35", "97 (extrapolated) [global batch beyond published recipes]".
std::string epochs_cell(const Prediction& p) {
    std::string epochs = format_number(p.epochs, 3);
    if (p.epochs_basis == EpochsBasis::extrapolated) epochs += " (extrapolated)";
    if (p.global_batch_beyond_published) epochs += " [global batch beyond published recipes]";
    return epochs;
}

/// "95%" for a confidence of 0.95.
std::string percent_text(double confidence) { return format_number(100 * confidence, 3) + "%"; }

void print_plan(std::ostream& out, const Catalog& catalog, const std::string& heading, const Plan& plan,
                double confidence, bool with_pricing, Charge charge) {
    const Prediction& p = plan.prediction;
    out << heading << ":\n  " << cluster_text(catalog, plan, with_pricing) << ", " << strategy_text(catalog, plan)
        << ", batch " << batch_per_gpu(plan.prediction) << " per GPU (global " << format_count(p.global_batch) << "), "
        << epochs_cell(p) << " epochs"
        << (p.epochs_basis == EpochsBasis::given ? std::string() : ", " + epochs_source_of(p)) << "\n  time to train "
        << format_duration(p.time_to_train_s) << " (" << format_duration(p.time_to_train_interval.low) << " - "
        << format_duration(p.time_to_train_interval.high) << "), ";
    if (p.priced && billed_whole(p.pricing)) {
        // Sold whole (eq. H1): the bill first, then the run's share of it.
        out << "bill " << format_dollars(p.bill_usd) << " for " << billing_text(p.pricing, p.billed_hours_per_node)
            << (p.nodes > 1 ? " of " + std::to_string(p.nodes) + " instances" : std::string()) << " at "
            << format_dollars(p.cluster_usd_per_hour) << "/h; the run's share " << format_dollars(p.cost_usd) << " ("
            << format_dollars(p.cost_interval.low) << " - " << format_dollars(p.cost_interval.high) << ")";
    } else if (p.priced) {
        out << "cost " << format_dollars(p.cost_usd) << " (" << format_dollars(p.cost_interval.low) << " - "
            << format_dollars(p.cost_interval.high) << ") at " << format_dollars(p.cluster_usd_per_hour) << "/h";
    } else {
        out << "cost n/a (no price by the hour)";
    }
    out << ", " << format_count(p.throughput_images_per_s) << " images/s, bottleneck " << bottleneck_text(p) << "\n";
    if (p.spot.elastic) out << "  " << elastic_spot_text(p) << "\n";
    if (const std::string inputs = spot_inputs_text(catalog, plan.scenario, today()); !inputs.empty()) {
        out << "  spot inputs: " << inputs << "\n";
    }
    if (const std::string stale = stale_price_text(catalog, plan.scenario, today()); !stale.empty()) {
        out << "  price: " << stale << "\n";
    }
    if (confidence != 0.5) {
        out << "  at " << percent_text(confidence) << " confidence: done within "
            << format_duration(plan.at_confidence.time_to_train_s);
        if (p.priced) {
            out << ", for at most " << format_dollars(plan.at_confidence.cost_usd)
                << (billed_whole(p.pricing) && charge == Charge::run_share ? " of the run's share" : "");
        }
        out << "\n";
    }
}

void print_elastic(std::ostream& out, const Catalog& catalog, const std::string& heading, const PlanSearch& search,
                   const ElasticPlan& e) {
    const Plan& a = search.plans[e.first];
    const Plan& b = search.plans[e.second];
    out << heading << ":\n  " << format_number(e.first_epochs, 1) << " epochs on " << cluster_text(catalog, a)
        << " (batch " << batch_per_gpu(a.prediction) << " per GPU), then " << format_number(e.second_epochs, 1)
        << " epochs on " << cluster_text(catalog, b) << " (batch " << batch_per_gpu(b.prediction) << " per GPU), "
        << strategy_text(a.scenario) << "\n  time to train " << format_duration(e.time_to_train_s) << ", cost "
        << format_cost(e.cost_usd, a.prediction.priced && b.prediction.priced)
        << " (same global batch; checkpoint and relaunch between the phases)\n";
}

nlohmann::json elastic_json(const PlanSearch& search, const ElasticPlan& e) {
    return {{"first", prediction_json({search.plans[e.first].scenario, search.plans[e.first].prediction})},
            {"first_epochs", e.first_epochs},
            {"second", prediction_json({search.plans[e.second].scenario, search.plans[e.second].prediction})},
            {"second_epochs", e.second_epochs},
            {"time_to_train_s", e.time_to_train_s},
            {"cost_usd", search.plans[e.first].prediction.priced && search.plans[e.second].prediction.priced
                             ? nlohmann::json(e.cost_usd)
                             : nlohmann::json(nullptr)}};
}

/// "no configuration meets the deadline of 1 h (the fastest takes 3.2 h, $412.00)": what plan's
/// exit code 3 says, for the constraints given that no plan meets.
std::string unmet_text(const PlanSearch& search, std::optional<double> deadline_s, std::optional<double> budget_usd) {
    if (search.front.empty()) {
        return "no configuration meets " +
               std::string(deadline_s && budget_usd ? "the deadline or the budget"
                           : deadline_s             ? "the deadline"
                                                    : "the budget") +
               ": none of the " + std::to_string(search.considered) + " configurations searched is feasible" +
               (search.unpublished > 0 ? " (" + std::to_string(search.unpublished) +
                                             " have a global batch beyond every published recipe: "
                                             "--allow-unpublished-batch plans them)"
                                       : std::string()) +
               (search.host_short > 0 ? " (" + std::to_string(search.host_short) +
                                            " are on nodes with fewer vCPUs per GPU than the loader needs)"
                                      : std::string());
    }
    const Plan& fastest = search.plans[search.front.front()];
    const Plan& cheapest = search.plans[search.front.back()];
    std::string text;
    if (deadline_s) {
        text = "no configuration meets the deadline of " + format_duration(*deadline_s) + " (the fastest takes " +
               format_duration(fastest.at_confidence.time_to_train_s) + ", " +
               format_cost(fastest.at_confidence.cost_usd, fastest.prediction.priced) + ")";
    }
    if (budget_usd) {
        text += (text.empty() ? "no configuration meets" : "; none meets") + std::string(" the budget of ") +
                format_dollars(*budget_usd) + " (the cheapest costs " +
                format_cost(cheapest.at_confidence.cost_usd, cheapest.prediction.priced) + ", " +
                format_duration(cheapest.at_confidence.time_to_train_s) + ")";
    }
    return text;
}

/// The recipe a --target-top1 trains with: --recipe, else the model's default.
const std::string& recipe_name(const SearchSpace& space, const CostModel& model) {
    return space.base.recipe.empty() ? model.convergence().default_recipe_for(space.base.model) : space.base.recipe;
}

/// The constraints asked for: a deadline, a budget or both (InputError otherwise).
struct Constraints {
    std::optional<double> deadline_s;
    std::optional<double> budget_usd;
};

Constraints read_constraints(const PlanOptions& o) {
    Constraints c;
    if (!o.deadline.empty()) c.deadline_s = parse_deadline_s(o.deadline);
    if (o.budget_option != nullptr && o.budget_option->count() > 0) {
        if (!(o.budget_usd > 0))
            throw InputError("--budget must be positive US dollars (got " + format_number(o.budget_usd) + ")");
        if (o.budget_usd > kMaxBudgetUsd) {
            throw InputError("--budget must be at most " + format_dollars(kMaxBudgetUsd) + " (got " +
                             shortest(o.budget_usd) + ")");
        }
        c.budget_usd = o.budget_usd;
    }
    if (!c.deadline_s && !c.budget_usd)
        throw InputError("plan needs --deadline (e.g. 2h) and/or --budget (US dollars)");
    return c;
}

/// --pricing: one pricing, a comma-separated list or `all` (every pricing, in kAllPricings' order),
/// or spot for --spot (its older spelling); InputError for an unknown or repeated name, or when --spot
/// and --pricing disagree.
std::vector<Pricing> pricings_of(const PlanOptions& o) {
    std::vector<Pricing> pricings;
    if (o.pricing == "all") {
        pricings.assign(std::begin(kAllPricings), std::end(kAllPricings));
    } else {
        std::string_view rest = o.pricing;
        while (true) {
            const std::size_t comma = rest.find(',');
            const std::string_view name = rest.substr(0, comma);
            if (name == "all") throw InputError("--pricing: all names every pricing, alone (got '" + o.pricing + "')");
            Pricing pricing = Pricing::on_demand;
            try {
                pricing = parse_pricing(name, "--pricing");
            } catch (const InputError&) {
                throw InputError("--pricing: unknown value '" + std::string(name) +
                                 "' (expected on-demand, spot, capacity-block, reserved-1y or reserved-3y, several "
                                 "separated by commas, or all)");
            }
            if (searches(pricings, pricing)) {
                throw InputError("--pricing names " + std::string(to_string(pricing)) + " twice");
            }
            pricings.push_back(pricing);
            if (comma == std::string_view::npos) break;
            rest.remove_prefix(comma + 1);
        }
    }
    if (o.spot && pricings != std::vector<Pricing>{Pricing::spot} && o.pricing != "on-demand") {
        throw InputError("--spot and --pricing " + o.pricing + " contradict each other (--spot means --pricing spot)");
    }
    return o.spot ? std::vector<Pricing>{Pricing::spot} : pricings;
}

/// Whether some plan may be bought whole, a block or a term (eq. H1): then the bill and the run's
/// share differ.
bool any_billed_whole(const std::vector<Pricing>& pricings) {
    return std::any_of(pricings.begin(), pricings.end(), [](Pricing p) { return billed_whole(p); });
}

/// --rank-by: what plans are ranked and held to the budget by (eq. H1).
Charge charge_of(const PlanOptions& o) {
    if (o.rank_by == "bill") return Charge::bill;
    if (o.rank_by == "share") return Charge::run_share;
    throw InputError("--rank-by must be bill or share (got '" + o.rank_by + "')");
}

/// The space the flags describe, with `o.target` applied to its base; InputError naming the flag
/// for a value that cannot be searched.
SearchSpace search_space(const PlanOptions& o, const CostModel& model) {
    SearchSpace space;
    space.base.model = o.model;
    space.base.image_size = o.image_size;
    space.base.dataset_images = o.dataset_images;
    space.base.epochs = o.epochs;
    space.base.precision = parse_precision(o.precision, "--precision");
    space.base.framework = parse_framework(o.framework, "--framework");
    space.base.loader = parse_loader(o.loader, "--loader");
    space.base.memory_format = parse_memory_format(o.memory_format, "--memory-format");
    space.base.compiled = o.compiled;
    space.pricings = pricings_of(o);
    space.base.pricing = space.pricings.front();
    space.spot_with_on_demand = searches(space.pricings, Pricing::spot);
    space.charge = charge_of(o);
    o.spot_flags.apply(space.base);
    o.run_costs.apply(space.base);
    space.instances = o.instances;
    if (!o.cloud.empty()) model.catalog().check_cloud(o.cloud, "--cloud");
    space.cloud = o.cloud;
    if (!o.nodes.empty()) space.nodes = o.nodes;
    if (!o.batches.empty()) space.batch_per_gpu = o.batches;
    if (o.global_batch < 0 ||
        (o.global_batch_option != nullptr && o.global_batch_option->count() > 0 && o.global_batch == 0))
        throw InputError("--global-batch must be at least 1 (got " + std::to_string(o.global_batch) + ")");
    if (o.global_batch > 0 && !o.batches.empty()) throw InputError("give --batch-per-gpu or --global-batch, not both");
    space.base.global_batch = o.global_batch;
    // Every node count and batch within the limits epochcast models (model/scenario.hpp), each
    // refused by the flag it came from, before any configuration is enumerated.
    for (int n : space.nodes) {
        for (int b : space.batch_per_gpu) {
            Scenario probe = space.base;
            probe.nodes = n;
            probe.batch_per_gpu = b;
            check_scenario_limits(probe);
        }
    }
    model.workload(o.model, o.image_size, space.base.classes);  // an unknown model or size fails here, named
    // --recipe alone names the recipe whose published accuracy the plans train to (below).
    const bool recipe_alone = o.target.recipe_option->count() > 0 && o.target.target->count() == 0;
    if (recipe_alone) {
        if (o.epochs_option->count()) {
            throw InputError(
                "--recipe goes with --target-top1, or alone without --epochs (the epochs its "
                "published runs need)");
        }
        model.convergence().require_known(o.target.recipe);
        space.base.recipe = o.target.recipe;
    } else {
        o.target.apply(space.base);
    }
    if (space.base.target_top1_percent <= 0 && !o.epochs_option->count()) {
        // Neither --epochs nor --target-top1: the epochs that converge, at each plan's global batch,
        // to what the recipe's (--recipe, else the default's) published runs reached, where it applies
        // to this model.
        try {
            const Recipe& recipe = model.convergence().recipe(recipe_name(space, model), o.model);
            check_recipe_applies(recipe, o.model, o.dataset_images, o.image_size);
            double target = 100;
            for (const RecipePoint& point : recipe.points) target = std::min(target, point.top1_percent);
            space.base.target_top1_percent = target;
        } catch (const InputError&) {
            if (recipe_alone) throw;  // the recipe named does not apply: say so
            // No published recipe for this model and data: the epochs stay --epochs' default.
        }
    }
    space.published_batches_only = !o.allow_unpublished_batch;
    space.confidence = o.confidence;
    if (space.base.target_top1_percent > 0) {
        // A recipe that does not apply to the model fails here, not as every configuration infeasible.
        check_recipe_applies(model.convergence().recipe(recipe_name(space, model), o.model), o.model, o.dataset_images,
                             o.image_size);
    }
    return space;
}

/// "90 epochs", or "the epochs mlperf-lars needs for 75.9% top-1".
std::string epochs_text(const SearchSpace& space, const CostModel& model) {
    if (space.base.target_top1_percent <= 0) return format_number(space.base.epochs, 3) + " epochs";
    return "the epochs " + recipe_name(space, model) + " needs for " +
           format_number(space.base.target_top1_percent, 3) + "% top-1";
}

/// The instances of the search's spot plans that no interruption rate is known for (the catalog gives
/// no frequency band and none was given: GCP's and Azure's): their plans are priced as if never
/// interrupted, which the report says so that such a plan is not taken for a safe one. In catalog order.
std::vector<std::string> unrated_spot_instances(const Catalog& catalog, const PlanSearch& search) {
    std::set<std::string> unrated;
    for (const Plan& plan : search.plans) {
        if (plan.scenario.pricing == Pricing::spot && !plan.prediction.spot.modelled) {
            unrated.insert(plan.scenario.instance);
        }
    }
    std::vector<std::string> names;
    for (const InstanceSpec& instance : catalog.instances()) {
        if (unrated.count(instance.name)) names.push_back(instance.name);
    }
    return names;
}

/// What plan found, written as text or JSON.
class PlanReport : public Report {
public:
    PlanReport(const PlanOptions& o, const Catalog& catalog, const PlanSearch& search, const Constraints& constraints,
               std::string epochs, std::vector<Pricing> pricings)
        : o_(o),
          catalog_(catalog),
          search_(search),
          c_(constraints),
          epochs_(std::move(epochs)),
          unrated_(unrated_spot_instances(catalog, search)),
          pricings_(std::move(pricings)) {}

    void print_json(std::ostream& out) const override {
        auto plan_json = [&](std::optional<std::size_t> i) {
            if (!i) return nlohmann::json(nullptr);
            const Plan& plan = search_.plans[*i];
            nlohmann::json j = prediction_json({plan.scenario, plan.prediction});
            j["at_confidence"] = {{"time_to_train_s", plan.at_confidence.time_to_train_s},
                                  {"cost_usd", plan.at_confidence.cost_usd}};
            return j;
        };
        nlohmann::json j = {{"considered", search_.considered},
                            {"feasible", search_.plans.size()},
                            {"unpublished_batch", search_.unpublished},
                            {"host_vcpus_short", search_.host_short},
                            {"confidence", o_.confidence},
                            {"pricing", pricing_flag_text()},
                            {"pricings", pricing_names()},
                            {"ranked_by", charge_of(o_) == Charge::bill ? "bill" : "share"},
                            {"cloud", o_.cloud.empty() ? nlohmann::json(nullptr) : nlohmann::json(o_.cloud)},
                            {"not_sold", search_.unsold},
                            {"spot_rate_unknown", unrated_},
                            {"deadline_s", c_.deadline_s ? nlohmann::json(*c_.deadline_s) : nlohmann::json(nullptr)},
                            {"budget_usd", c_.budget_usd ? nlohmann::json(*c_.budget_usd) : nlohmann::json(nullptr)},
                            {"cheapest_within_deadline", plan_json(search_.cheapest_within_deadline)},
                            {"safer_within_deadline", safer_json()},
                            {"fastest_within_budget", plan_json(search_.fastest_within_budget)}};
        if (o_.elastic) {
            j["elastic_within_deadline"] = search_.elastic_within_deadline
                                               ? elastic_json(search_, *search_.elastic_within_deadline)
                                               : nlohmann::json(nullptr);
            j["elastic_within_budget"] = search_.elastic_within_budget
                                             ? elastic_json(search_, *search_.elastic_within_budget)
                                             : nlohmann::json(nullptr);
        }
        nlohmann::json front = nlohmann::json::array();
        for (std::size_t i : search_.front) front.push_back(plan_json(i));
        j["front"] = front;
        j["unpriced"] = {{"instances", search_.unpriced_instances},
                         {"plans", search_.unpriced.size()},
                         {"fastest", plan_json(search_.fastest_unpriced)}};
        print_json_document(j, out);
    }

    void print_text(std::ostream& out, bool) const override {
        out << "Searched " << format_count(static_cast<double>(search_.considered)) << " configurations of " << o_.model
            << " (" << epochs_ << " of " << format_count(static_cast<double>(o_.dataset_images)) << " images, "
            << o_.precision << ", " << o_.framework
            << (o_.loader == "default" ? std::string() : ", " + o_.loader + " loader")
            << (o_.memory_format == "channels_last" ? std::string() : ", " + o_.memory_format)
            << (o_.compiled ? ", torch.compile" : "") << ", " << pricings_text(pricings_, "and") << " prices"
            << (searches(pricings_, Pricing::spot) && !searches(pricings_, Pricing::on_demand) ? " beside on-demand"
                                                                                               : "")
            << (o_.cloud.empty() ? std::string() : ", cloud " + o_.cloud)
            << "): " << format_count(static_cast<double>(search_.plans.size())) << " feasible";
        if (search_.unpublished > 0) {
            out << "; " << format_count(static_cast<double>(search_.unpublished))
                << " more at a global batch beyond every published recipe left out (--allow-unpublished-batch keeps "
                   "them)";
        }
        if (search_.host_short > 0) {
            out << "; " << format_count(static_cast<double>(search_.host_short))
                << " more on nodes with fewer vCPUs per GPU than the loader needs beside the training process left "
                   "out ("
                << host_vcpus_per_gpu_needed(Loader::dali) << " for DALI, " << host_vcpus_per_gpu_needed(Loader::cpu)
                << " for a CPU loader)";
        }
        out << ".\n";
        if (any_billed_whole(pricings_)) {
            // What each pricing searched bills: a block's whole days, a term, or (beside those) the seconds
            // the run takes; each named by its pricings where the search holds several.
            std::vector<Pricing> blocks, terms, seconds;
            for (Pricing pricing : pricings_) {
                (pricing == Pricing::capacity_block ? blocks
                 : billed_whole(pricing)            ? terms
                                                    : seconds)
                    .push_back(pricing);
            }
            const bool several = pricings_.size() > 1;
            std::string text;
            auto add = [&](const std::vector<Pricing>& which, const char* bill) {
                if (which.empty()) return;
                if (!text.empty()) text += "; ";
                if (several) text += "for " + pricings_text(which, "and") + " ";
                text += bill;
            };
            add(blocks,
                "each instance's whole Capacity Block, sold by the day up to 14 days and by the week up to 182");
            add(terms, "each instance's whole term, billed whether it runs or not");
            add(seconds, "the run's own seconds");
            out << (charge_of(o_) == Charge::bill ? "Ranked by the bill: "
                                                  : "Ranked by the run's share (--rank-by share): a block or a "
                                                    "commitment already held; the bill is ")
                << text
                << (charge_of(o_) == Charge::bill ? " (--rank-by share ranks by the run's share of it).\n" : ".\n");
        }
        if (o_.confidence != 0.5) {
            out << "Deadline and budget met at " << percent_text(o_.confidence)
                << " confidence: the time and cost each run stays within (docs/model.md, \"Plan search\").\n";
        }
        if (!search_.unsold.empty()) {
            // A few are named with how they are sold; many are counted (--json names them under not_sold).
            constexpr std::size_t kNamed = 6;
            std::string names;
            for (const std::string& name : search_.unsold) {
                names += (names.empty() ? "" : ", ") + name + " (" + catalog_.instance(name).pricings_text() + ")";
            }
            out << "Not sold " << pricings_text(pricings_) << ", left out: "
                << (search_.unsold.size() <= kNamed
                        ? names
                        : std::to_string(search_.unsold.size()) + " GPU instances (--json names them)")
                << ".\n";
        }
        if (searches(pricings_, Pricing::spot)) {
            out << "Spot capacity: " << kSpotAvailabilityNote << ".\n";
        }
        if (!unrated_.empty()) {
            std::string names;
            for (const std::string& name : unrated_) names += (names.empty() ? "" : ", ") + name;
            const bool one = unrated_.size() == 1;
            out << "No interruption rate is known for " << names << " (the catalog has no frequency band for "
                << (one ? "it" : "them") << "): " << (one ? "its" : "their")
                << " spot plans (\"interruptions unknown\") are priced as if never interrupted; "
                   "--spot-interruptions-per-node-hour gives every spot plan one rate.\n";
        }
        if (search_.fastest_unpriced) {
            std::string names;
            for (const std::string& name : search_.unpriced_instances) names += (names.empty() ? "" : ", ") + name;
            const Plan& fastest_unpriced = search_.plans[*search_.fastest_unpriced];
            const bool one = search_.unpriced_instances.size() == 1;
            out << "No price by the hour for " << names << " (under " << pricings_text(pricings_)
                << "): " << (one ? "its " : "their ") << format_count(static_cast<double>(search_.unpriced.size()))
                << " plans are left out of the ranking, their cost unknown (a --catalog file can price "
                << (one ? "it" : "them") << "); the fastest, " << cluster_text(catalog_, fastest_unpriced)
                << ", trains in " << format_duration(fastest_unpriced.at_confidence.time_to_train_s) << ".\n";
        }
        out << '\n';
        if (c_.deadline_s) {
            print_answer(out, "Cheapest within the deadline of " + format_duration(*c_.deadline_s),
                         search_.cheapest_within_deadline,
                         search_.front.empty()
                             ? ""
                             : "the fastest plan takes " + format_duration(fastest().at_confidence.time_to_train_s),
                         search_.elastic_within_deadline, "cheaper within the deadline");
            print_safer(out);
        }
        if (c_.budget_usd) {
            print_answer(
                out, "Fastest within the budget of " + format_dollars(*c_.budget_usd), search_.fastest_within_budget,
                search_.front.empty() ? ""
                                      : "the cheapest plan costs " + format_cost(cheapest().at_confidence.cost_usd,
                                                                                 cheapest().prediction.priced),
                search_.elastic_within_budget, "faster within the budget");
        }
        out << "\nPareto front of time against cost (no plan is both faster and cheaper than one of these):\n";
        const bool quantile = o_.confidence != 0.5;
        // The money column is what the plans are ranked by: the bill or the run's share where a block or a
        // term is sold whole, else the cost (the two are one).
        const std::string money = !any_billed_whole(pricings_)    ? "cost"
                                  : charge_of(o_) == Charge::bill ? "bill"
                                                                  : "run's share";
        std::vector<std::string> header{"time to train", money};
        if (quantile) {
            header.push_back("time at " + percent_text(o_.confidence));
            header.push_back(money + " at " + percent_text(o_.confidence));
        }
        for (const char* column : {"cluster", "synchronisation", "batch/GPU", "epochs", "images/s", "$/h"})
            header.emplace_back(column);
        Table table(header);
        for (std::size_t i : search_.front) {
            const Plan& plan = search_.plans[i];
            const Prediction& p = plan.prediction;
            std::vector<std::string> row{
                format_duration(p.time_to_train_s),
                format_cost(charge_of(o_) == Charge::bill ? p.bill_usd : p.cost_usd, p.priced)};
            if (quantile) {
                row.push_back(format_duration(plan.at_confidence.time_to_train_s));
                row.push_back(format_cost(plan.at_confidence.cost_usd, p.priced));
            }
            for (std::string cell :
                 {cluster_text(catalog_, plan, with_pricing()), strategy_text(catalog_, plan),
                  format_count(batch_per_gpu(plan.prediction)), epochs_cell(p), format_count(p.throughput_images_per_s),
                  format_cost(p.cluster_usd_per_hour, p.priced)})
                row.push_back(std::move(cell));
            table.add_row(row);
        }
        table.print(out);
        if (!o_.plot.empty()) out << "\nplots: " << o_.plot << '\n';
    }

private:
    const Plan& fastest() const { return search_.plans[search_.front.front()]; }
    const Plan& cheapest() const { return search_.plans[search_.front.back()]; }

    /// Whether a plan says how it is bought: where plans bought differently are ranked together (a spot
    /// search, which holds on-demand twins, or several pricings).
    bool with_pricing() const { return pricings_.size() > 1 || searches(pricings_, Pricing::spot); }

    /// --pricing as the JSON names it: "on-demand", "all", "on-demand,spot".
    std::string pricing_flag_text() const {
        if (pricings_.size() == kPricingCount) return "all";
        std::string text;
        for (Pricing pricing : pricings_) text += (text.empty() ? "" : ",") + std::string(to_string(pricing));
        return text;
    }

    std::vector<std::string> pricing_names() const {
        std::vector<std::string> names;
        for (Pricing pricing : pricings_) names.emplace_back(to_string(pricing));
        return names;
    }

    /// The safer answer (PlanSearch::safer_within_deadline) as a plan of its own, its time and cost at
    /// kSaferConfidence.
    std::optional<Plan> safer_plan() const {
        if (!search_.safer_within_deadline) return std::nullopt;
        Plan plan = search_.plans[*search_.safer_within_deadline];
        plan.at_confidence = at_confidence(plan.prediction, kSaferConfidence, charge_of(o_));
        return plan;
    }

    /// With a deadline given, the cheapest plan meeting it at kSaferConfidence: null where none does
    /// or the search was at that confidence or above.
    nlohmann::json safer_json() const {
        const std::optional<Plan> plan = safer_plan();
        if (!plan) return nullptr;
        nlohmann::json j = prediction_json({plan->scenario, plan->prediction});
        j["at_confidence"] = {{"confidence", kSaferConfidence},
                              {"time_to_train_s", plan->at_confidence.time_to_train_s},
                              {"cost_usd", plan->at_confidence.cost_usd}};
        return j;
    }

    /// Where the answer's 95% band runs past the deadline, the cheapest plan that meets it nine times
    /// in ten (an engineer who must finish by then rents that one, or asks --confidence).
    void print_safer(std::ostream& out) const {
        // At kSaferConfidence or above the answer is already that safe: nothing to add.
        if (!search_.cheapest_within_deadline || o_.confidence >= kSaferConfidence) return;
        const Plan& answer = search_.plans[*search_.cheapest_within_deadline];
        if (!(answer.prediction.time_to_train_interval.high > *c_.deadline_s)) return;
        const std::optional<Plan> safer = safer_plan();
        const std::string confidence = percent_text(kSaferConfidence);
        if (!safer) {
            out << "  Its 95% band runs past the deadline, and no plan meets the deadline at " << confidence
                << " confidence.\n";
            return;
        }
        const std::string band_end = format_duration(answer.prediction.time_to_train_interval.high);
        if (*search_.safer_within_deadline == *search_.cheapest_within_deadline) {
            out << "  Its 95% band runs past the deadline (to " << band_end << "), but it meets the deadline at "
                << confidence << " confidence.\n";
            return;
        }
        out << "  Its 95% band runs past the deadline (to " << band_end << ").\n";
        print_plan(out, catalog_,
                   "Cheapest meeting the deadline at " + confidence + " confidence (--confidence " +
                       shortest(kSaferConfidence) + ")",
                   *safer, kSaferConfidence, with_pricing(), charge_of(o_));
    }

    /// One answer: the plan, or what comes closest, then the elastic schedule when asked for.
    void print_answer(std::ostream& out, const std::string& heading, std::optional<std::size_t> plan,
                      const std::string& closest, const std::optional<ElasticPlan>& elastic,
                      const std::string& elastic_heading) const {
        if (plan) {
            print_plan(out, catalog_, heading, search_.plans[*plan], o_.confidence, with_pricing(), charge_of(o_));
        } else {
            out << heading << ": none; " << (search_.front.empty() ? "no plan is feasible" : closest) << "\n";
        }
        if (elastic) {
            print_elastic(out, catalog_, "Elastic, " + elastic_heading, search_, *elastic);
        } else if (o_.elastic) {
            out << "Elastic: no two-phase schedule is " << elastic_heading << ".\n";
        }
    }

    const PlanOptions& o_;
    const Catalog& catalog_;
    const PlanSearch& search_;
    const Constraints& c_;
    std::string epochs_;
    std::vector<std::string> unrated_;  ///< unrated_spot_instances
    std::vector<Pricing> pricings_;     ///< SearchSpace::pricings: what the search bought the instances as
};

/// Draw every feasible plan, the front and the answers into --plot.
void plot_plans(const PlanOptions& o, const Catalog& catalog, const PlanSearch& search, const Constraints& c,
                const std::string& epochs) {
    PlotRequest request;
    request.path = o.plot;
    for (const Plan& plan : search.plans) request.points.push_back({plan.scenario, plan.prediction});
    request.front = search.front;
    if (search.cheapest_within_deadline) request.chosen.push_back(*search.cheapest_within_deadline);
    if (search.fastest_within_budget && search.fastest_within_budget != search.cheapest_within_deadline) {
        request.chosen.push_back(*search.fastest_within_budget);
    }
    request.deadline_s = c.deadline_s;
    request.budget_usd = c.budget_usd;
    request.title = "Plans for " + o.model + ", " + epochs + ": time against cost";
    request.catalog = &catalog;
    write_plots(request);
}

/// Exit code 3 (NoAnswer) when a constraint given has no plan that meets it; `out` is checked
/// first, so that a failed write is reported before the answer's exit code.
void require_answers(const PlanSearch& search, const Constraints& c, std::ostream& out) {
    const bool deadline_unmet = c.deadline_s && !search.cheapest_within_deadline;
    const bool budget_unmet = c.budget_usd && !search.fastest_within_budget;
    if (!deadline_unmet && !budget_unmet) return;
    check_written(out);
    throw NoAnswer(
        unmet_text(search, deadline_unmet ? c.deadline_s : std::nullopt, budget_unmet ? c.budget_usd : std::nullopt));
}

void run_plan(const PlanOptions& o, std::ostream& out) {
    const Constraints constraints = read_constraints(o);
    const OutputFormat format = output_format(o.json);
    if (!o.plot.empty()) check_plot_path(o.plot);
    std::vector<std::string> inputs = o.catalogs;
    inputs.push_back(calibration_file(o.calibration));
    check_outputs({{"--plot", o.plot}}, inputs);
    check_emit_flags(o.emit, inputs);
    if (!o.emit.output.empty() && o.emit.output == o.plot) throw InputError("-o and --plot name the same file");

    const CostModel model(load_catalog(o.catalogs), load_calibration(o.calibration));
    const SearchSpace space = search_space(o, model);
    const std::string epochs = epochs_text(space, model);
    const PlanSearch search = search_plans(model, space, constraints.deadline_s, constraints.budget_usd, o.elastic);
    if (!o.plot.empty()) plot_plans(o, model.catalog(), search, constraints, epochs);
    write_report(PlanReport(o, model.catalog(), search, constraints, epochs, space.pricings), format, out);
    require_answers(search, constraints, out);
    // The answer as a launch file: the cheapest meeting the deadline, else the fastest within the budget.
    if (const std::optional<std::size_t> answer =
            search.cheapest_within_deadline ? search.cheapest_within_deadline : search.fastest_within_budget;
        answer && !o.emit.format.empty()) {
        const Plan& plan = search.plans[*answer];
        write_job_file(o.emit, model, plan.scenario, model.resolve(plan.scenario), plan.prediction, o.catalogs);
        if (format == OutputFormat::text) out << "\nlaunch file (" << o.emit.format << "): " << o.emit.output << "\n";
        check_written(out);
    }
}

}  // namespace

void register_plan(CLI::App& app, std::ostream& out) {
    auto o = std::make_shared<PlanOptions>();
    CLI::App* cmd = app.add_subcommand(
        "plan",
        "Which configuration to rent: search the catalog (instances, node counts, GPUs per node, strategies, "
        "parameter-server instances and ratios, batch sizes that fit) for the cheapest plan that meets --deadline "
        "and the fastest within --budget, and print the Pareto front of time against cost. Exit code 3 (after the "
        "output) when no configuration meets the deadline or the budget: stderr says which, and how close the "
        "fastest or the cheapest comes.");
    add_emit_flags(*cmd, o->emit);
    cmd->add_option("--deadline", o->deadline, "Time to train at most, e.g. 2h, 90min, 1h30m (a bare number is hours)");
    o->budget_option =
        without_default(cmd->add_option("--budget", o->budget_usd, "Cost to train at most, in US dollars"));
    cmd->add_option("--pricing", o->pricing,
                    "How the instances are sold: on-demand, spot, capacity-block, reserved-1y or reserved-3y, "
                    "several separated by commas, or all (each instance under each way it is sold, ranked "
                    "together; instances sold none of those ways are left out)");
    cmd->add_option("--rank-by", o->rank_by,
                    "What plans are ranked and held to --budget by: bill (what is paid: a Capacity Block's whole "
                    "days, a reservation's whole term) or share (the run's hours of a block or commitment already "
                    "held); the same under on-demand and spot");
    cmd->add_flag("--spot", o->spot,
                  "The same as --pricing spot: each spot plan's expected interruptions weighed against its "
                  "on-demand twin");
    add_spot_flags(*cmd, o->spot_flags);
    add_run_cost_flags(*cmd, o->run_costs);
    cmd->add_option("--cloud", o->cloud,
                    "Only instances of this cloud (aws, gcp, azure, owned: the catalog's \"cloud\")");
    cmd->add_flag("--elastic", o->elastic,
                  "Also consider two-phase schedules that grow or shrink the cluster between epochs (seed 003)");
    cmd->add_option("--model", o->model, "resnet18, resnet34, resnet50, resnet101 or resnet152");
    cmd->add_option("--image-size", o->image_size, "Input side in pixels");
    cmd->add_option("--dataset-images", o->dataset_images, "Images per epoch (default: ImageNet-1k)");
    o->epochs_option = cmd->add_option("--epochs", o->epochs,
                                       "Epochs to train on every plan (default: the epochs that reach --target-top1 "
                                       "at each plan's global batch)");
    add_target_flags(*cmd, o->target, o->epochs_option);
    cmd->add_flag("--allow-unpublished-batch", o->allow_unpublished_batch,
                  "Also plan global batches beyond every published recipe for the model (no published run says "
                  "what accuracy they reach)");
    cmd->add_option("--confidence", o->confidence,
                    "Meet the deadline and the budget at this quantile of time and cost, 0.5 (the point "
                    "prediction) to below 1, e.g. 0.95");
    cmd->add_option("--precision", o->precision, "amp, bf16, tf32 or fp32 (GPUs without it are left out)");
    cmd->add_option("--framework", o->framework, "mxnet, tensorflow, pytorch or epochcast");
    cmd->add_option("--loader", o->loader,
                    "How images reach the GPUs, on every cluster: default (the framework's), cpu, dali-cpu, dali or "
                    "synthetic (as predict's)");
    cmd->add_option("--memory-format", o->memory_format, "channels_last or nchw (as predict's)");
    cmd->add_flag("--compile", o->compiled, "PyTorch under torch.compile rather than eager (as predict's)");
    cmd->add_option("--instance", o->instances,
                    "Worker instance types to consider (default: every GPU instance sold under --pricing, in "
                    "--cloud); repeatable");
    cmd->add_option("--nodes", o->nodes, "Worker node counts to consider (default 1,2,3,4,6,8,12,16,24,32,48,64)")
        ->delimiter(',');
    cmd->add_option("--batch-per-gpu", o->batches, "Batches per GPU to consider (default 32,64,128,256,512)")
        ->delimiter(',');
    o->global_batch_option = without_default(
        cmd->add_option("--global-batch", o->global_batch,
                        "Keep this global batch on every cluster (the per-GPU batch is it over the GPUs; "
                        "sizes it does not divide are left out)"));
    add_catalog_option(*cmd, o->catalogs);
    add_calibration_option(*cmd, o->calibration);
    cmd->add_option("--plot", o->plot,
                    "Also draw the scaling curve, time against cost and the breakdown (.png or .svg)");
    add_json_flag(*cmd, o->json, "one JSON object");
    cmd->callback([o, &out] { run_plan(*o, out); });
}

}  // namespace epochcast::cli
