#include "traces/nccl_import.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <regex>
#include <sstream>
#include <unordered_map>

#include "model/collectives.hpp"
#include "model/errors.hpp"
#include "model/text_io.hpp"

namespace epochcast {
namespace {

bool is_integer(const std::string& token) {
    if (token.empty()) return false;
    std::size_t start = token[0] == '-' ? 1 : 0;
    return start < token.size() &&
           std::all_of(token.begin() + start, token.end(), [](char c) { return std::isdigit(c); });
}

bool is_number(const std::string& token) {
    char* end = nullptr;
    std::strtod(token.c_str(), &end);
    return !token.empty() && end == token.c_str() + token.size();
}

/// More ranks than any cluster has: a "nranks" line or a bandwidth ratio beyond it is not a test.
constexpr long long kMaxRanks = 1 << 24;

/// "<origin>: line N" for errors.
std::string at_line(std::string_view origin, int line_number) {
    return std::string(origin) + ": line " + std::to_string(line_number);
}

/// The most GB/s a bandwidth column may say: the catalog's bound on every figure (10^9), far past
/// any link (a log of 1e300 GB/s printed a 300-digit table and fitted on).
constexpr double kMaxBandwidthGBps = 1e9;

/// One column of a result row as a finite number >= 0 (> 0 with `positive`), at most `most`; the
/// error names the line and the column.
double column(const std::string& token, std::string_view name, bool positive, std::string_view origin, int line_number,
              double most = std::numeric_limits<double>::max()) {
    const double x = std::strtod(token.c_str(), nullptr);
    if (!std::isfinite(x) || x < 0 || (positive && !(x > 0))) {
        throw InputError(at_line(origin, line_number) + ": the " + std::string(name) + " column is " +
                         escape_for_message(token) + ", not a finite " + (positive ? "positive" : "non-negative") +
                         " number");
    }
    if (x > most) {
        throw InputError(at_line(origin, line_number) + ": the " + std::string(name) + " column is " +
                         escape_for_message(token) + ", more than " + shortest(most) + " GB/s");
    }
    return x;
}

}  // namespace

std::vector<NcclSample> parse_nccl_all_reduce(std::string_view log, std::string_view origin, int* ranks) {
    std::vector<NcclSample> samples;
    std::unordered_map<double, int> line_of_size;  // each sample's message size and line
    long long nranks = 0;
    int nranks_line = 0;  // where nranks was first given
    const std::regex nranks_pattern(R"(nranks\s+(-?\d+))");
    std::istringstream lines{std::string(log)};
    std::string line;
    int line_number = 0;
    while (std::getline(lines, line)) {
        ++line_number;
        std::smatch match;
        if (std::regex_search(line, match, nranks_pattern)) {
            const std::string digits = match[1];
            const long long given = digits.size() > 9 ? kMaxRanks + 1 : std::stoll(digits);
            if (given > kMaxRanks) {
                throw InputError(at_line(origin, line_number) + ": nranks " + digits + " is more than " +
                                 std::to_string(kMaxRanks));
            }
            if (given < 2) {
                throw InputError(at_line(origin, line_number) + ": nranks " + digits +
                                 ": an all-reduce test measures a network between 2 ranks or more");
            }
            // NCCL's INFO lines name nranks once per rank, each the same; another count is another test.
            if (nranks_line != 0 && given != nranks) {
                throw InputError(at_line(origin, line_number) + ": nranks " + digits + " where line " +
                                 std::to_string(nranks_line) + " said " + std::to_string(nranks) +
                                 ": one all_reduce_perf test per log");
            }
            if (nranks_line == 0) nranks_line = line_number;
            nranks = given;
        }
        // Strip an MPI output prefix like "[1,0]<stdout>:".
        if (const auto at = line.find(">:"); at != std::string::npos && line.find("<std") != std::string::npos) {
            line = line.substr(at + 2);
        }
        std::istringstream words(line);
        std::vector<std::string> tokens;
        for (std::string token; words >> token;) tokens.push_back(token);
        if (tokens.size() < 8 || tokens[0].front() == '#' || !is_integer(tokens[0]) || !is_integer(tokens[1])) continue;
        // size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong
        std::size_t time_column = 4;
        if (is_integer(tokens[4]) && tokens.size() >= 9 && tokens.size() != 12) time_column = 5;
        if (tokens.size() < time_column + 3 || !is_number(tokens[time_column]) || !is_number(tokens[time_column + 1]) ||
            !is_number(tokens[time_column + 2])) {
            throw InputError(at_line(origin, line_number) +
                             " looks like a result row but its time and bandwidth columns are not numbers");
        }
        NcclSample sample;
        sample.bytes = column(tokens[0], "size", false, origin, line_number);
        sample.time_s = column(tokens[time_column], "time", true, origin, line_number) * 1e-6;  // microseconds
        sample.algorithm_GBps = column(tokens[time_column + 1], "algbw", false, origin, line_number, kMaxBandwidthGBps);
        sample.bus_GBps = column(tokens[time_column + 2], "busbw", false, origin, line_number, kMaxBandwidthGBps);
        if (!(sample.time_s > 0)) {
            throw InputError(at_line(origin, line_number) + " has a time that is not positive");
        }
        // A 0-byte all-reduce (nccl-tests -b 0) moves nothing: it has no bandwidth to fit.
        if (sample.bytes == 0) continue;
        // nccl-tests prints each size once: a size again is a second table (another test, or the
        // same one pasted twice), whose rows would count as independent points of the fit.
        if (const auto [earlier, first] = line_of_size.emplace(sample.bytes, line_number); !first) {
            throw InputError(at_line(origin, line_number) + ": the message size " + tokens[0] +
                             " is given again (line " + std::to_string(earlier->second) +
                             "): one all_reduce_perf table per log");
        }
        samples.push_back(sample);
    }
    if (samples.empty()) {
        throw InputError(std::string(origin) + ": no all_reduce_perf result rows found (expected nccl-tests output)");
    }
    if (nranks == 0) {
        // busbw / algbw = 2(n-1)/n  =>  n = 2 / (2 - ratio), from the largest message.
        const NcclSample& largest = samples.back();
        if (largest.algorithm_GBps > 0) {
            const double ratio = largest.bus_GBps / largest.algorithm_GBps;
            const double n = ratio < 2.0 ? std::round(2.0 / (2.0 - ratio)) : 0.0;
            if (n <= static_cast<double>(kMaxRanks)) nranks = static_cast<long long>(n);
        }
    }
    if (nranks < 2) throw InputError(std::string(origin) + ": cannot tell how many ranks ran the test");
    if (ranks) *ranks = static_cast<int>(nranks);
    return samples;
}

NetworkMeasurement fit_alpha_beta(const std::vector<NcclSample>& samples, int ranks, bool times_must_grow) {
    if (samples.size() < 2) throw InputError("the alpha-beta fit needs at least 2 message sizes");
    const double factor = allreduce_bus_factor(ranks);
    // Ordinary least squares of t = alpha + (S factor) x beta, beta = 1/B. Absolute errors let the
    // large messages, where the link is saturated, set B (what the model's bandwidth term needs);
    // alpha then comes out as the small-message floor.
    Eigen::MatrixXd a(samples.size(), 2);
    Eigen::VectorXd t(samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
        a(i, 0) = 1.0;
        a(i, 1) = samples[i].bytes * factor;
        t(i) = samples[i].time_s;
    }
    const Eigen::Vector2d x = a.colPivHouseholderQr().solve(t);
    // A link's time grows with the bytes it moves: a table whose times stay level or fall as the
    // messages grow measured no bandwidth (the largest busbw column would be taken for one).
    if (times_must_grow && !(x(1) > 0)) {
        throw InputError(
            "the alpha-beta fit gives no finite, positive bus bandwidth: the times do not grow with the message size");
    }
    NetworkMeasurement m;
    m.ranks = ranks;
    double sum = 0;
    for (const NcclSample& s : samples) {
        m.max_bus_bandwidth_GBps = std::max(m.max_bus_bandwidth_GBps, s.bus_GBps);
        sum += s.bus_GBps;
    }
    m.average_bus_bandwidth_GBps = sum / static_cast<double>(samples.size());
    // The line's slope is the bandwidth no message exceeded: a fitted B above the largest bus
    // bandwidth measured (the unconstrained fit reaches 43.05 GB/s on seed 004's table, whose
    // largest is 42.03) is the plateau itself, and alpha is refitted under that slope.
    const double fitted_GBps = x(1) > 0 ? 1.0 / x(1) / 1e9 : 0.0;
    m.bus_bandwidth_GBps = fitted_GBps > 0 ? std::min(fitted_GBps, m.max_bus_bandwidth_GBps) : m.max_bus_bandwidth_GBps;
    if (m.bus_bandwidth_GBps > 0 && m.bus_bandwidth_GBps < fitted_GBps) {
        double residual = 0;
        for (const NcclSample& s : samples) residual += s.time_s - s.bytes * factor / (m.bus_bandwidth_GBps * 1e9);
        m.latency_s = std::max(0.0, residual / static_cast<double>(samples.size()));
    } else {
        m.latency_s = std::max(0.0, x(0));
    }
    // Sizes near a double's limit overflow the least squares; bandwidths of 0 in every row leave
    // nothing to fit. Either way the log cannot give a measurement the model could use.
    if (!std::isfinite(m.latency_s) || !std::isfinite(m.average_bus_bandwidth_GBps) || !(m.bus_bandwidth_GBps > 0) ||
        !std::isfinite(m.bus_bandwidth_GBps)) {
        std::ostringstream message;
        message << "the alpha-beta fit gives no finite, positive bus bandwidth (the largest in the table is "
                << m.max_bus_bandwidth_GBps << " GB/s)";
        throw InputError(message.str());
    }
    m.samples = samples;
    return m;
}

}  // namespace epochcast
