#include "model/billing.hpp"

#include <charconv>
#include <cmath>

namespace epochcast {

namespace {

/// The days of the shortest Capacity Block that holds `days` (at most kCapacityBlockLongestDays).
double block_days(double days) {
    if (days <= kCapacityBlockDailyStepsUpToDays) return std::ceil(days);
    return std::ceil(days / 7.0) * 7.0;
}

int term_years(Pricing pricing) { return pricing == Pricing::reserved_3y ? 3 : 1; }

/// "1", "2.5": a count without trailing zeros.
std::string count_text(double value) {
    const double rounded = std::round(value);
    if (std::abs(value - rounded) < 1e-9) return std::to_string(static_cast<long long>(rounded));
    return std::to_string(value);
}

}  // namespace

bool billed_whole(Pricing pricing) {
    return pricing == Pricing::capacity_block || pricing == Pricing::reserved_1y || pricing == Pricing::reserved_3y;
}

double billed_hours_per_node(Pricing pricing, double run_hours) {
    if (!(run_hours > 0)) return 0.0;
    switch (pricing) {
        case Pricing::on_demand:
        case Pricing::spot:
            return run_hours;
        case Pricing::capacity_block: {
            // Whole longest blocks first, then the shortest block that holds the rest (eq. H1).
            const double days = run_hours / 24.0;
            const double longest = std::floor(days / kCapacityBlockLongestDays);
            const double rest = days - longest * kCapacityBlockLongestDays;
            return 24.0 * (longest * kCapacityBlockLongestDays + (rest > 0 ? block_days(rest) : 0.0));
        }
        case Pricing::reserved_1y:
        case Pricing::reserved_3y: {
            const double term_hours = kHoursPerTermYear * term_years(pricing);
            return std::ceil(run_hours / term_hours) * term_hours;
        }
    }
    return run_hours;
}

double bill_usd(Pricing pricing, double usd_per_hour, double instance_hours, double share_usd, double other_usd) {
    if (!billed_whole(pricing) || !(instance_hours > 0)) return share_usd;
    return usd_per_hour * billed_hours_per_node(pricing, instance_hours) + other_usd;
}

std::string billing_text(Pricing pricing, double billed_hours) {
    if (!billed_whole(pricing) || !(billed_hours > 0)) return {};
    if (pricing == Pricing::capacity_block) {
        const double days = std::round(billed_hours / 24.0);
        const double blocks = std::ceil(days / kCapacityBlockLongestDays);
        if (blocks <= 1) return "a " + count_text(days) + "-day Capacity Block";
        return count_text(blocks) + " consecutive Capacity Blocks (" + count_text(days) + " days)";
    }
    const int years = term_years(pricing);
    const double terms = std::round(billed_hours / (kHoursPerTermYear * years));
    const std::string term = std::to_string(years) + "-year term";
    return terms <= 1 ? "a " + term : count_text(terms) + " " + term + "s";
}

std::optional<std::chrono::sys_days> parse_date(std::string_view text) {
    if (text.size() != 10 || text[4] != '-' || text[7] != '-') return std::nullopt;
    auto number = [&](std::size_t at, std::size_t length) -> std::optional<int> {
        int value = 0;
        const auto [end, error] = std::from_chars(text.data() + at, text.data() + at + length, value);
        if (error != std::errc() || end != text.data() + at + length) return std::nullopt;
        return value;
    };
    const auto year = number(0, 4), month = number(5, 2), day = number(8, 2);
    if (!year || !month || !day) return std::nullopt;
    const std::chrono::year_month_day date{std::chrono::year{*year}, std::chrono::month{static_cast<unsigned>(*month)},
                                           std::chrono::day{static_cast<unsigned>(*day)}};
    if (!date.ok()) return std::nullopt;
    return std::chrono::sys_days{date};
}

std::optional<int> price_age_days(std::string_view read, std::chrono::sys_days today) {
    const auto day = parse_date(read);
    if (!day) return std::nullopt;
    return static_cast<int>((today - *day).count());
}

}  // namespace epochcast
