// Which configuration to rent (issue 7): enumerate the catalog's space of clusters (instances, node
// counts, GPUs per node, strategies, parameter-server instances and ratios, batch sizes that fit),
// predict each with the analytic model, and pick the cheapest plan that meets a deadline, the
// fastest within a budget, and the Pareto front of time against cost. docs/model.md, "Plan search".
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/billing.hpp"
#include "model/cost_model.hpp"

namespace epochcast {

/// A point in the time-against-cost plane.
struct TimeCost {
    double time_to_train_s = 0;  ///< seconds
    double cost_usd = 0;         ///< US dollars
};

/// Indices of the points no other point beats: none is at least as fast and as cheap and better
/// in one of the two. Sorted by time (fastest first); of equal points the first index is kept.
std::vector<std::size_t> pareto_front(const std::vector<TimeCost>& points);

/// The space the search enumerates. Empty lists mean "what the catalog offers".
struct SearchSpace {
    Scenario base;                       ///< model, image size, dataset, epochs (or target and recipe), precision,
                                         ///< framework, pricing;
                                         ///< a global_batch > 0 is kept on every size (batch_per_gpu unused)
    std::vector<std::string> instances;  ///< worker instances; empty: every GPU instance of the catalog (in `cloud`)
                                         ///< with a price under base.pricing
    std::string cloud;                   ///< only instances of this cloud (InstanceSpec::cloud); empty: every cloud
    std::vector<int> nodes{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};  ///< worker node counts
    std::vector<int> gpus_per_node;  ///< empty: 1, 2, 4, ... below the instance's count, and the count itself
    std::vector<Strategy> strategies{Strategy::nccl, Strategy::ring, Strategy::hierarchical, Strategy::tree,
                                     Strategy::ps};
    std::vector<std::string> ps_instances;     ///< dedicated servers; empty: every CPU-only instance of the catalog
                                               ///< (in `cloud`) with a price under base.pricing
    std::vector<double> ps_ratios{0.5, 1, 2};  ///< server nodes per worker node (ps_nodes = ceil(ratio x nodes))
    bool ps_colocated = true;                  ///< also one server on each worker node
    std::vector<int> batch_per_gpu{32, 64, 128, 256, 512};  ///< those that do not fit are dropped
    /// Leave out configurations whose global batch is beyond every recipe published for the model
    /// (Prediction::global_batch_beyond_published): no published run says what accuracy they reach.
    bool published_batches_only = false;
    /// The quantile of time and cost at which plans are compared and the deadline and budget met,
    /// in [0.5, 1): 0.5 is the point prediction, 0.95 the time and cost a run stays within 19
    /// times in 20 (at_confidence).
    double confidence = 0.5;
    /// How the instances may be bought, searched in one run (issue 60): each worker is planned under
    /// each of these it is sold under, and plans bought one way are ranked against plans bought
    /// another by `charge` (a Capacity Block's whole days against on demand's seconds, say). Empty:
    /// base.pricing alone. Given, base.pricing is not read.
    std::vector<Pricing> pricings;
    /// With spot searched: also every spot cluster that can shrink priced elastic
    /// (Scenario::spot_elastic, eq. X7), and every configuration on demand where its instances are
    /// sold so, so that a plan whose interruptions eat the spot discount loses to its on-demand twin
    /// (docs/model.md, "Spot interruptions"), unless on demand is searched itself. The elastic twins
    /// follow the searched configurations, then the on-demand twins.
    bool spot_with_on_demand = false;
    /// What plans are ranked, met against the budget and put on the front by: the bill (a Capacity
    /// Block's whole days, a reservation's term; eq. H1), or the run's share of it (a block or a
    /// commitment already held). The same under on-demand and spot, billed by the second.
    Charge charge = Charge::bill;
};

/// The pricings the space searches, in its order: SearchSpace::pricings, else base.pricing alone.
/// Throws InputError for a pricing listed twice.
std::vector<Pricing> searched_pricings(const SearchSpace& space);

/// Whether `pricings` holds `pricing`.
bool searches(const std::vector<Pricing>& pricings, Pricing pricing);

/// The pricings as a reader lists them: "on-demand", "on-demand or spot", "on-demand, spot and
/// capacity-block" (`conjunction` "and").
std::string pricings_text(const std::vector<Pricing>& pricings, std::string_view conjunction = "or");

/// The standard normal distribution's quantile: z with Phi(z) = probability, for probability in
/// (0, 1). Throws InputError outside it.
double normal_quantile(double probability);

/// A prediction's time to train and cost (what is paid, eq. H1, under Charge::bill; the run's share
/// under Charge::run_share) at the `confidence` quantile of its uncertainty (docs/model.md,
/// "Plan search"): the throughput z sigmas below its point, the epochs z / 1.96 of the way to the
/// high end of their 95% band (z = normal_quantile(confidence)), the cost at the cluster's price.
/// On spot, the wall time is eq. X6's `confidence` quantile for the work at that throughput and
/// those epochs (its interruptions counted). At 0.5, the point prediction.
TimeCost at_confidence(const Prediction& prediction, double confidence, Charge charge = Charge::bill);

/// The GPU instances (in the space's cloud) that have prices but none under the space's pricings,
/// which the search leaves out (p5e.48xlarge, sold only as capacity blocks, from an on-demand
/// search); empty when the space names its instances.
std::vector<std::string> unsold_instances(const SearchSpace& space, const Catalog& catalog);

/// The confidence of plan's second answer to a deadline (issue 58, item 3): the point prediction's
/// cheapest plan meets it one time in two, and its 95% band may run past it; this one meets it nine
/// times in ten.
inline constexpr double kSaferConfidence = 0.9;

/// The most configurations a search holds (about 2 KB each once predicted: 2 GB).
inline constexpr std::size_t kMaxPlanConfigurations = 1'000'000;

/// Every Scenario of the space, in a fixed order: pricing (searched_pricings' order), instance, GPUs
/// per node, strategy (with, for ps, each server instance sold that way and ratio, then co-located),
/// node count, batch; then spot's twins (SearchSpace::spot_with_on_demand). An instance is planned
/// under each pricing it is sold under; one with no price at all (named) once, under the first.
/// Hierarchical and tree
/// all-reduce are left out with one GPU per node (they are the ring there, hierarchical exactly;
/// tree is kept across nodes). GPU counts above the instance's are left out. Throws InputError for
/// a space of more than kMaxPlanConfigurations (counted before any is built), a cloud no instance
/// names (listing the clouds), or a named worker of another cloud or with
/// prices but none under the space's pricings (naming the pricings it has).
std::vector<Scenario> enumerate_space(const SearchSpace& space, const Catalog& catalog);

/// One feasible configuration and its prediction.
struct Plan {
    Scenario scenario;
    Prediction prediction;
    TimeCost at_confidence;  ///< time and cost at the search's confidence (the point prediction's at 0.5)
};

/// Two phases on the same instances, strategy and global batch with different node counts
/// (seed 003's elastic schedule: shrink or grow between epochs, checkpoint and relaunch).
struct ElasticPlan {
    std::size_t first = 0;       ///< index into PlanSearch::plans of the first phase's cluster
    std::size_t second = 0;      ///< index of the second phase's cluster
    double first_epochs = 0;     ///< epochs on the first
    double second_epochs = 0;    ///< epochs on the second
    double time_to_train_s = 0;  ///< startup + first phase + relaunch (the second's startup) + second phase
    double cost_usd = 0;         ///< both phases and both startups, billed per second
};

/// What the search found.
struct PlanSearch {
    std::vector<Plan> plans;          ///< every feasible configuration, in enumeration order
    std::size_t considered = 0;       ///< configurations enumerated
    std::size_t infeasible = 0;       ///< of those, rejected (batch does not fit, no such precision, ...)
    std::size_t unpublished = 0;      ///< of those, left out for a global batch beyond published recipes
    std::size_t host_short = 0;       ///< of those, left out for fewer vCPUs per GPU than the loader needs (eq. D3)
    std::vector<std::string> unsold;  ///< GPU instances left out: not sold under the pricing (unsold_instances)
    std::vector<std::size_t> front;   ///< indices into plans: the Pareto front, fastest first
    /// Indices into plans of the plans with no price by the hour, set apart from the front and the
    /// answers where some plan has a price (empty where none has: then every plan is ranked by time).
    std::vector<std::size_t> unpriced;
    std::vector<std::string> unpriced_instances;          ///< their instances, in enumeration order
    std::optional<std::size_t> fastest_unpriced;          ///< the fastest of them (at the search's confidence)
    std::optional<std::size_t> cheapest_within_deadline;  ///< index into plans, when a deadline is given and met
    std::optional<std::size_t> fastest_within_budget;     ///< index into plans, when a budget is given and met
    /// With a deadline searched at a confidence below kSaferConfidence: the cheapest ranked plan that
    /// meets the deadline at kSaferConfidence (index into plans), for an answer whose band runs past it.
    std::optional<std::size_t> safer_within_deadline;
    std::optional<ElasticPlan> elastic_within_deadline;  ///< cheapest two-phase schedule meeting the deadline, when
                                                         ///< asked for and cheaper than every fixed plan that meets it
    std::optional<ElasticPlan> elastic_within_budget;    ///< fastest two-phase schedule within the budget, when asked
                                                         ///< for and faster than every fixed plan within it
};

/// Search the space. A deadline in seconds and a budget in US dollars are each optional (the front
/// is found either way); `elastic` also considers two-phase schedules (billed by the second: none
/// of plans under a pricing sold whole, a Capacity Block or a reservation). The front and both answers
/// are at the space's confidence (Plan::at_confidence). Throws InputError for a deadline or budget
/// that is not positive, a confidence outside [0.5, 1), elastic schedules at a confidence other
/// than 0.5, a name in the space the catalog does not know, or what enumerate_space refuses.
PlanSearch search_plans(const CostModel& model, const SearchSpace& space, std::optional<double> deadline_s,
                        std::optional<double> budget_usd, bool elastic = false);

/// A two-phase schedule's time and cost: `first_epochs` on plan a then `second_epochs` on plan b,
/// each cluster starting once (eq. E1 of docs/model.md).
TimeCost elastic_time_cost(const Prediction& a, double first_epochs, const Prediction& b, double second_epochs);

}  // namespace epochcast
