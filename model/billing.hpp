// The price as billed (docs/model.md, "Pricing models", eq. H1): how many hours of each instance a
// run is billed for under the way it is sold. On demand and spot are billed by the second while the
// run lasts; an EC2 Capacity Block is bought whole, for a length AWS sells (1 to 14 days by the
// day, then by the week up to 182 days); a reservation or commitment for its whole term. The run's
// share (Prediction::cost_usd) is the run's hours at the same rate; the bill (Prediction::bill_usd)
// is what the user pays for it, and what plan ranks by unless asked for the share.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "model/types.hpp"

namespace epochcast {

/// Capacity Blocks are sold in 1-day steps up to this many days (AWS EC2 User Guide, "Find and
/// purchase Capacity Blocks": "1-day increments up to 14 days, and in 7-day increments up to 182
/// days"; read 2026-11-29).
inline constexpr int kCapacityBlockDailyStepsUpToDays = 14;
/// ... and in 7-day steps up to this many days, the longest block; a longer run takes consecutive blocks.
inline constexpr int kCapacityBlockLongestDays = 182;
/// The hours of a one-year term: AWS, Google Cloud and Azure bill a year's commitment as 365 days of
/// hours (8,760), a three-year one as three of them.
inline constexpr double kHoursPerTermYear = 8760.0;

/// What a run is billed for: the whole days of a Capacity Block, or a reservation's term, against a
/// run billed by the second.
enum class Charge {
    bill,       ///< what the user pays: the block or the term, whole (plan's default ranking)
    run_share,  ///< the run's hours at the same rate: the share of a block or a commitment already held
};

/// Eq. K1: the hours of each instance a run that keeps it `run_hours` is billed for under `pricing`:
/// the run's own hours on demand and on spot (by the second); the shortest Capacity Block AWS sells
/// that holds them (whole days up to 14, whole weeks beyond, up to 182 a block, then another); a
/// reservation's whole terms (8,760 hours a year). 0 for a run of no time.
double billed_hours_per_node(Pricing pricing, double run_hours);

/// Eq. K1 in dollars: what is paid for a run whose share is `share_usd`: its instances at
/// `usd_per_hour` over the cluster for `instance_hours`, plus `other_usd` (its store and traffic,
/// paid by use). Where the instances are sold whole, their billed hours at that rate plus
/// `other_usd`; the share itself where the run is billed by the second.
double bill_usd(Pricing pricing, double usd_per_hour, double instance_hours, double share_usd, double other_usd);

/// How the bill is counted, for a reader: "a 2-day Capacity Block", "2 consecutive Capacity Blocks
/// (189 days)", "a 1-year term", "3 1-year terms"; empty where the run is billed by the second.
std::string billing_text(Pricing pricing, double billed_hours);

/// Whether `pricing` bills more than the run's own hours (a block or a term).
bool billed_whole(Pricing pricing);

/// A price older than this many days is stale (issue 58): the clouds move GPU prices within a
/// quarter (AWS cut P4 and P5 on-demand prices by up to 45% in June 2025).
inline constexpr int kStalePriceDays = 90;
/// A spot price below this share of its on-demand price is flagged as implausibly low: the catalog's
/// quoted spot prices of current GPU instances (A100 to B200, AWS and Google Cloud) sit at 0.30 to
/// 0.60 of on-demand; AWS advertises "up to 90%" off, which only old, idle families approach.
inline constexpr double kLowestPlausibleSpotShare = 0.2;

/// The day a YYYY-MM-DD text names; nullopt where it names none (2026-02-30, 2026-1-21).
std::optional<std::chrono::sys_days> parse_date(std::string_view text);

/// Whole days from `read` (YYYY-MM-DD) to `today`; nullopt where `read` is not such a date.
std::optional<int> price_age_days(std::string_view read, std::chrono::sys_days today);

}  // namespace epochcast
