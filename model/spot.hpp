// A training run on spot instances that the cloud may take back (issue 45, item 1), one small
// function per formula. Derivations in docs/model.md, section "Spot interruptions" (eqs. X1-X6).
// Times in seconds, rates per second unless the name says per hour; no function throws or allocates.
#pragma once

#include <string_view>

namespace epochcast {

/// Hours in the month of a cloud's "per month" figures: AWS bills and quotes 730 hours a month.
inline constexpr double kHoursPerMonth = 730.0;

/// The share of a family's instances interrupted in a month (AWS Spot Instance Advisor's "frequency of
/// interruption", https://aws.amazon.com/ec2/spot/instance-advisor/) for one of its bands "<5%",
/// "5-10%", "10-15%", "15-20%" or ">20%": the band's midpoint, and 25% for the open band ">20%"
/// (docs/model.md, eq. X0). -1 for any other text.
double band_monthly_fraction(std::string_view band);

/// Interruptions per node-hour from the share of instances interrupted in a month (eq. X0): an
/// instance interrupted at a constant rate lambda is interrupted within a month with probability
/// 1 - exp(-lambda x 730 h), so lambda = -ln(1 - fraction) / 730 h. fraction in [0, 1).
double interruptions_per_node_hour(double monthly_fraction);

/// What one interruption costs the run (eq. X1): the restart (launch to first iteration), the wait
/// for a replacement node, and the work since the last checkpoint, half an interval on average.
/// d = R + W + tau / 2.
double loss_per_interruption_s(double restart_s, double replacement_wait_s, double checkpoint_interval_s);

/// What one interruption costs an elastic run instead (eq. X7; seed 003's dynamic training), which
/// goes on without the lost node rather than waiting for its replacement: a restart on the N - 1
/// nodes left, the work since the last checkpoint, the wait at the smaller cluster's share `eta` of
/// the throughput, and a second restart when the replacement joins. d_e = 2 R + tau / 2 + W (1 - eta).
double elastic_loss_per_interruption_s(double restart_s, double replacement_wait_s, double checkpoint_interval_s,
                                       double smaller_throughput_ratio);
/// The run's work with a checkpoint written every `checkpoint_interval_s` of it (eq. X2):
/// a = work x (1 + C / tau).
double checkpointed_work_s(double work_s, double checkpoint_write_s, double checkpoint_interval_s);

/// Young's optimal checkpoint interval (Young 1974; Daly 2006, to first order): the interval that
/// minimises eq. X3's expected time, tau* = sqrt(2 C / Lambda), for a cluster interrupted `cluster_rate_per_s`
/// times a second (eq. X4). Infinite for a rate of 0.
double young_checkpoint_interval_s(double checkpoint_write_s, double cluster_rate_per_s);

/// Expected wall time of `checkpointed_work_s` of work on a cluster interrupted Lambda =
/// `cluster_rate_per_s` times a second, each interruption costing `loss_s` (eq. X3, by Wald's
/// identity): E[T] = a / (1 - Lambda d). Infinite where Lambda d >= 1: the run never finishes.
double spot_expected_time_s(double checkpointed_work_s, double cluster_rate_per_s, double loss_s);

/// The variance of that wall time, in s^2 (eq. X5: the first passage of a drift with Poisson
/// jumps): Var T = a Lambda d^2 / (1 - Lambda d)^3. Infinite where Lambda d >= 1.
double spot_time_variance_s2(double checkpointed_work_s, double cluster_rate_per_s, double loss_s);

/// The probability that the run is done within `budget_s` of wall time (eq. X6, Kendall's identity for
/// the first passage): T = a + k d with probability a / (a + k d) x Poisson(k; Lambda (a + k d)),
/// summed over k <= (budget - a) / d. 0 where budget < a.
double spot_finish_probability(double checkpointed_work_s, double cluster_rate_per_s, double loss_s, double budget_s);

/// The wall time the run is done within with `probability` (in (0, 1)), from eq. X6's atoms: the
/// smallest a + k d whose cumulative probability reaches it. Infinite where Lambda d >= 1.
double spot_time_quantile_s(double checkpointed_work_s, double cluster_rate_per_s, double loss_s, double probability);

}  // namespace epochcast
