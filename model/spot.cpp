#include "model/spot.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace epochcast {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// Where eq. X6's atoms stop mattering: past the mean count of interruptions plus 40 standard
/// deviations (Var N = Var T / d^2) the remaining mass is below a double's resolution.
double last_count(double a, double rate, double d) {
    const double mean = rate * a / (1.0 - rate * d);
    const double sd = std::sqrt(spot_time_variance_s2(a, rate, d)) / d;
    return std::min(mean + 40.0 * sd + 100.0, 1e8);
}

/// One atom of eq. X6: P(T = a + k d) = a / (a + k d) x e^(-Lambda t) (Lambda t)^k / k!, t = a + k d.
double atom(double a, double rate, double d, double k) {
    const double t = a + k * d;
    const double mean = rate * t;
    const double log_poisson = k > 0 ? -mean + k * std::log(mean) - std::lgamma(k + 1.0) : -mean;
    return a / t * std::exp(log_poisson);
}

}  // namespace

double band_monthly_fraction(std::string_view band) {
    if (band == "<5%") return 0.025;
    if (band == "5-10%") return 0.075;
    if (band == "10-15%") return 0.125;
    if (band == "15-20%") return 0.175;
    if (band == ">20%") return 0.25;
    return -1;
}

double interruptions_per_node_hour(double monthly_fraction) { return -std::log1p(-monthly_fraction) / kHoursPerMonth; }

double loss_per_interruption_s(double restart_s, double replacement_wait_s, double checkpoint_interval_s) {
    return restart_s + replacement_wait_s + checkpoint_interval_s / 2.0;
}

double elastic_loss_per_interruption_s(double restart_s, double replacement_wait_s, double checkpoint_interval_s,
                                       double smaller_throughput_ratio) {
    return 2.0 * restart_s + checkpoint_interval_s / 2.0 + replacement_wait_s * (1.0 - smaller_throughput_ratio);
}

double checkpointed_work_s(double work_s, double checkpoint_write_s, double checkpoint_interval_s) {
    return work_s * (1.0 + checkpoint_write_s / checkpoint_interval_s);
}

double young_checkpoint_interval_s(double checkpoint_write_s, double cluster_rate_per_s) {
    if (!(cluster_rate_per_s > 0)) return kInfinity;
    return std::sqrt(2.0 * checkpoint_write_s / cluster_rate_per_s);
}

double spot_expected_time_s(double checkpointed_work_s, double cluster_rate_per_s, double loss_s) {
    const double busy = cluster_rate_per_s * loss_s;
    if (!(busy < 1)) return kInfinity;
    return checkpointed_work_s / (1.0 - busy);
}

double spot_time_variance_s2(double checkpointed_work_s, double cluster_rate_per_s, double loss_s) {
    const double busy = cluster_rate_per_s * loss_s;
    if (!(busy < 1)) return kInfinity;
    return checkpointed_work_s * cluster_rate_per_s * loss_s * loss_s / std::pow(1.0 - busy, 3);
}

double spot_finish_probability(double a, double rate, double d, double budget_s) {
    if (!(budget_s >= a)) return 0;
    if (!(rate > 0) || !(d > 0)) return 1;
    if (!(rate * d < 1)) {
        // Mass escapes to infinity: sum what the budget holds all the same (at most 1e8 atoms).
    }
    const double most = std::floor((budget_s - a) / d);
    const double last = rate * d < 1 ? std::min(most, last_count(a, rate, d)) : std::min(most, 1e8);
    double sum = 0;
    for (double k = 0; k <= last; k += 1) sum += atom(a, rate, d, k);
    return std::clamp(sum, 0.0, 1.0);
}

double spot_time_quantile_s(double a, double rate, double d, double probability) {
    if (!(rate > 0) || !(d > 0)) return a;
    if (!(rate * d < 1)) return kInfinity;
    const double last = last_count(a, rate, d);
    double sum = 0;
    for (double k = 0; k <= last; k += 1) {
        sum += atom(a, rate, d, k);
        if (sum >= probability) return a + k * d;
    }
    return a + last * d;
}

}  // namespace epochcast
