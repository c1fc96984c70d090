#include "cli/layout.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "model/errors.hpp"
#include "model/text_io.hpp"

namespace epochcast::cli {
namespace {

/// A whole number from `low` to `high` written in decimal digits only, or nullopt.
std::optional<long long> whole_number(std::string_view text, long long low, long long high) {
    if (text.empty() || text.size() > 12 ||
        !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
        return std::nullopt;
    }
    const long long value = std::stoll(std::string(text));
    if (value < low || value > high) return std::nullopt;
    return value;
}

/// Host names as hostfiles and Slurm write them: letters, digits and . - _ : (IPv6) only.
bool is_host_name(std::string_view name) {
    return !name.empty() && name.size() <= 255 && std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::isalnum(c) != 0 || c == '.' || c == '-' || c == '_' || c == ':';
    });
}

/// Hosts in the order first named, a host named again adding to its slots (Open MPI's count); an
/// index by name keeps a list of kMaxHosts lines linear, not quadratic, in its length.
class HostTally {
public:
    /// Adds `slots` to `host` (its first place), or appends it; throws InputError naming `where`.
    void add(const std::string& host, int slots, const std::string& where) {
        const auto [found, added] = index_.try_emplace(host, hosts_.size());
        if (added) {
            if (hosts_.size() >= static_cast<std::size_t>(kMaxHosts)) {
                throw InputError(where + ": more than " + std::to_string(kMaxHosts) + " hosts");
            }
            hosts_.push_back({host, slots});
            return;
        }
        HostSlots& known = hosts_[found->second];
        if (known.slots + slots > kMaxSlotsPerHost) {
            throw InputError(where + ": " + host + " has more than " + std::to_string(kMaxSlotsPerHost) + " slots");
        }
        known.slots += slots;
    }
    bool empty() const { return hosts_.empty(); }
    std::vector<HostSlots> hosts() && { return std::move(hosts_); }

private:
    std::vector<HostSlots> hosts_;
    std::unordered_map<std::string, std::size_t> index_;
};

std::string slots_text(const std::vector<HostSlots>& hosts) {
    std::string text;
    for (std::size_t i = 0; i < hosts.size() && i < 8; ++i) {
        text += (i ? ", " : "") + hosts[i].name + " " + std::to_string(hosts[i].slots);
    }
    if (hosts.size() > 8) text += ", ... (" + std::to_string(hosts.size()) + " hosts)";
    return text;
}

/// The ranks each host gets when `ranks` fill the slots in order.
std::vector<int> fill_by_slot(const std::vector<HostSlots>& hosts, int ranks) {
    std::vector<int> counts;
    for (const HostSlots& host : hosts) {
        if (ranks <= 0) break;
        counts.push_back(std::min(host.slots, ranks));
        ranks -= counts.back();
    }
    return counts;
}

bool all_equal(const std::vector<int>& counts) {
    return std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()) == counts.end();
}

}  // namespace

std::vector<HostSlots> parse_hostfile(std::string_view text, std::string_view origin) {
    // A byte-order mark, as Windows editors write one at a file's start, is no part of a host name.
    constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
    if (text.substr(0, kByteOrderMark.size()) == kByteOrderMark) text.remove_prefix(kByteOrderMark.size());
    HostTally hosts;
    std::istringstream lines{std::string(text)};
    std::string line;
    int number = 0;
    while (std::getline(lines, line)) {
        ++number;
        const std::string where = std::string(origin) + ": line " + std::to_string(number);
        if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
        std::istringstream words(line);
        std::string host;
        if (!(words >> host)) continue;
        if (!is_host_name(host)) {
            throw InputError(where + ": '" + escape_for_message(host) + "' is not a host name");
        }
        std::optional<long long> slots;
        std::optional<long long> max_slots;
        for (std::string word; words >> word;) {
            const auto equals = word.find('=');
            const std::string key = word.substr(0, equals);
            const std::string value = equals == std::string::npos ? "" : word.substr(equals + 1);
            std::optional<long long>* target = key == "slots"                             ? &slots
                                               : key == "max_slots" || key == "max-slots" ? &max_slots
                                                                                          : nullptr;
            if (!target) {
                throw InputError(where + ": '" + escape_for_message(word) +
                                 "' is not slots=N or max_slots=N (Open MPI's hostfile format)");
            }
            *target = whole_number(value, 1, kMaxSlotsPerHost);
            if (!*target) {
                throw InputError(where + ": " + key + " must be a whole number from 1 to " +
                                 std::to_string(kMaxSlotsPerHost) + ", got '" + escape_for_message(value) + "'");
            }
        }
        if (!slots) {
            throw InputError(where + ": " + host +
                             " has no slots=N (say how many ranks it holds: one per GPU, or cores / --threads)");
        }
        if (max_slots && *max_slots < *slots) {
            throw InputError(where + ": max_slots=" + std::to_string(*max_slots) +
                             " is less than slots=" + std::to_string(*slots));
        }
        hosts.add(host, static_cast<int>(*slots), where);
    }
    if (hosts.empty()) throw InputError(std::string(origin) + ": the hostfile names no host");
    return std::move(hosts).hosts();
}

std::vector<HostSlots> parse_host_list(std::string_view list) {
    HostTally hosts;
    std::string entry;
    std::istringstream entries{std::string(list)};
    while (std::getline(entries, entry, ',')) {
        const std::string where = "--host '" + escape_for_message(entry) + "'";
        // The last colon parts host from slots, unless what follows is not a number (IPv6 has colons).
        const auto colon = entry.rfind(':');
        std::string host = entry;
        long long slots = 1;
        // A sign before the digits ("h:-1") is slots that are not a count, not part of a name.
        auto digit_at = [&entry](std::size_t i) {
            return i < entry.size() && std::isdigit(static_cast<unsigned char>(entry[i]));
        };
        const bool signed_number = colon != std::string::npos && colon + 1 < entry.size() &&
                                   (entry[colon + 1] == '-' || entry[colon + 1] == '+') && digit_at(colon + 2);
        if (colon != std::string::npos && (digit_at(colon + 1) || signed_number)) {
            const std::optional<long long> n =
                whole_number(std::string_view(entry).substr(colon + 1), 1, kMaxSlotsPerHost);
            if (!n) {
                throw InputError(where + ": the slots after ':' must be a whole number from 1 to " +
                                 std::to_string(kMaxSlotsPerHost));
            }
            host = entry.substr(0, colon);
            slots = *n;
        }
        if (!entry.empty() && entry.back() == ':') {
            throw InputError(where + ": the slots after ':' are missing (HOST:SLOTS, or HOST alone for 1)");
        }
        if (!is_host_name(host)) throw InputError(where + ": not HOST or HOST:SLOTS");
        hosts.add(host, static_cast<int>(slots), "--host");
    }
    if (hosts.empty()) throw InputError("--host names no host (expected h1:N,h2:N)");
    return std::move(hosts).hosts();
}

std::vector<std::string> expand_slurm_hostlist(std::string_view list) {
    std::vector<std::string> names;
    const std::string where = "Slurm node list '" + escape_for_message(list) + "'";
    const auto add = [&](std::string name) {
        if (names.size() >= static_cast<std::size_t>(kMaxHosts)) {
            throw InputError(where + " names more than " + std::to_string(kMaxHosts) + " hosts");
        }
        names.push_back(std::move(name));
    };
    std::size_t i = 0;
    while (i < list.size()) {
        // One entry: a prefix, then an optional [ranges], then an optional suffix, up to a top-level comma.
        const std::size_t open = list.find_first_of("[,", i);
        if (open == std::string_view::npos || list[open] == ',') {
            const std::size_t end = open == std::string_view::npos ? list.size() : open;
            if (end == i) throw InputError(where + " has an empty entry");
            add(std::string(list.substr(i, end - i)));
            i = end + 1;
            continue;
        }
        const std::size_t close = list.find(']', open);
        if (close == std::string_view::npos) throw InputError(where + " has a '[' without ']'");
        const std::string prefix(list.substr(i, open - i));
        std::size_t end = list.find(',', close);
        if (end == std::string_view::npos) end = list.size();
        const std::string suffix(list.substr(close + 1, end - close - 1));
        if (suffix.find_first_of("[]") != std::string::npos) {
            throw InputError(where + ": one bracket per name is supported");
        }
        std::istringstream ranges{std::string(list.substr(open + 1, close - open - 1))};
        std::string range;
        bool any = false;
        while (std::getline(ranges, range, ',')) {
            const auto dash = range.find('-');
            const std::string first = range.substr(0, dash);
            const std::string last = dash == std::string::npos ? first : range.substr(dash + 1);
            const std::optional<long long> low = whole_number(first, 0, 999999999);
            const std::optional<long long> high = whole_number(last, 0, 999999999);
            if (!low || !high || *high < *low) {
                throw InputError(where + ": '" + escape_for_message(range) + "' is not a number or a range a-b");
            }
            for (long long n = *low; n <= *high; ++n) {
                std::string digits = std::to_string(n);
                if (digits.size() < first.size()) digits.insert(0, first.size() - digits.size(), '0');
                add(prefix + digits + suffix);
            }
            any = true;
        }
        if (!any) throw InputError(where + " has an empty '[]'");
        i = end + 1;
    }
    for (const std::string& name : names) {
        if (!is_host_name(name)) throw InputError(where + ": '" + escape_for_message(name) + "' is not a host name");
    }
    if (names.empty()) throw InputError(where + " names no host");
    return names;
}

std::optional<SlurmAllocation> slurm_allocation(
    const std::function<std::optional<std::string>(const std::string&)>& variable) {
    const std::optional<std::string> job = variable("SLURM_JOB_ID");
    if (!job || job->empty()) return std::nullopt;
    SlurmAllocation allocation;
    allocation.job_id = *job;
    std::optional<std::string> nodes = variable("SLURM_JOB_NODELIST");
    if (!nodes) nodes = variable("SLURM_NODELIST");
    if (!nodes || nodes->empty()) {
        throw InputError("Slurm job " + *job + " has no SLURM_JOB_NODELIST: run inside salloc or sbatch");
    }
    allocation.nodes = expand_slurm_hostlist(*nodes);
    const auto count = [&](const char* name) -> std::optional<int> {
        const std::optional<std::string> text = variable(name);
        if (!text) return std::nullopt;
        // SLURM_GPUS_ON_NODE is a count; a per-node list such as "8(x4)" keeps its first count.
        const std::string first = text->substr(0, text->find_first_of("(,"));
        const std::optional<long long> n = whole_number(first, 1, 1 << 24);
        if (!n) throw InputError(std::string(name) + " is '" + escape_for_message(*text) + "', not a count");
        return static_cast<int>(*n);
    };
    allocation.tasks = count("SLURM_NTASKS");
    allocation.gpus_per_node = count("SLURM_GPUS_ON_NODE");
    return allocation;
}

std::optional<SlurmAllocation> slurm_allocation_from_environment() {
    return slurm_allocation([](const std::string& name) -> std::optional<std::string> {
        const char* value = std::getenv(name.c_str());
        return value ? std::optional<std::string>(value) : std::nullopt;
    });
}

RankLayout place_ranks(const std::vector<HostSlots>& hosts, std::optional<int> ranks) {
    long long total = 0;
    for (const HostSlots& host : hosts) total += host.slots;
    const int wanted = ranks.value_or(static_cast<int>(std::min<long long>(total, 1 << 30)));
    if (wanted < 1) throw InputError("--np must be at least 1 (got " + std::to_string(wanted) + ")");
    if (wanted > total) {
        throw InputError("--np " + std::to_string(wanted) + " is more than the " + std::to_string(total) +
                         " slots of the hosts (" + slots_text(hosts) + ")");
    }
    const std::vector<int> counts = fill_by_slot(hosts, wanted);
    if (!all_equal(counts)) {
        // The largest count below that fills the hosts evenly, for the message.
        int fits = wanted - 1;
        while (fits > 0 && !all_equal(fill_by_slot(hosts, fits))) --fits;
        throw InputError("--np " + std::to_string(wanted) + " fills the hosts' slots (" + slots_text(hosts) +
                         ") unevenly, " + std::to_string(counts.front()) + " ranks on " + hosts.front().name + " and " +
                         std::to_string(counts.back()) + " on " + hosts[counts.size() - 1].name +
                         "; epochcast describes a cluster of equal nodes: give --np " + std::to_string(fits) +
                         ", or hosts with equal slots");
    }
    RankLayout layout;
    layout.ranks_per_node = counts.front();
    for (std::size_t i = 0; i < counts.size(); ++i) layout.hosts.push_back(hosts[i].name);
    return layout;
}

RankLayout place_ranks_on_allocation(const SlurmAllocation& allocation, int ranks) {
    const int nodes = static_cast<int>(allocation.nodes.size());
    if (ranks < 1) throw InputError("--np must be at least 1 (got " + std::to_string(ranks) + ")");
    if (ranks % nodes != 0) {
        throw InputError("--np " + std::to_string(ranks) + " does not divide evenly over the " + std::to_string(nodes) +
                         " nodes of Slurm job " + allocation.job_id +
                         " (epochcast describes a cluster of equal nodes): give a multiple of " +
                         std::to_string(nodes) + ", or allocate " + std::to_string(ranks) +
                         " / (ranks per node) nodes");
    }
    return {allocation.nodes, ranks / nodes};
}

bool is_this_host(std::string_view host_as_given, std::string_view this_host_as_given) {
    // Host names are case-insensitive (LOCALHOST is localhost): compared in lower case.
    auto lower = [](std::string_view name) {
        std::string text(name);
        std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
        return text;
    };
    const std::string host_text = lower(host_as_given);
    const std::string this_text = lower(this_host_as_given);
    const std::string_view host = host_text;
    const std::string_view this_host = this_text;
    if (host == "localhost" || host == "127.0.0.1" || host == "::1" || host.rfind("localhost.", 0) == 0) return true;
    if (host == this_host) return true;
    // An address is this host only as a loopback address; names also match by their first part.
    const auto is_address = [](std::string_view name) {
        return name.find(':') != std::string_view::npos ||
               std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c) || c == '.'; });
    };
    if (is_address(host) || is_address(this_host)) return false;
    const auto short_name = [](std::string_view name) { return name.substr(0, name.find('.')); };
    return !host.empty() && short_name(host) == short_name(this_host) &&
           (host.find('.') == std::string_view::npos || this_host.find('.') == std::string_view::npos);
}

std::string this_host_name() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
    return name;
}

namespace {

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string percent_text(double fraction) {
    return std::to_string(static_cast<int>(std::lround(100 * fraction))) + "%";
}

}  // namespace

std::string straggler_reason(const NodePeaks& node, const std::vector<NodePeaks>& nodes, bool bf16) {
    if (nodes.size() < 2) return "";
    std::vector<double> compute;
    std::vector<double> memory;
    for (const NodePeaks& n : nodes) {
        compute.push_back(bf16 ? n.bf16_tflops : n.fp32_tflops);
        memory.push_back(n.memory_GBps);
    }
    const double compute_median = median(compute);
    const double memory_median = median(memory);
    const double own = bf16 ? node.bf16_tflops : node.fp32_tflops;
    std::string reason;
    if (compute_median > 0 && own < kStragglerFraction * compute_median) {
        std::ostringstream text;
        text.precision(3);
        text << (bf16 ? "bf16" : "fp32") << " peak " << own << " TFLOP/s, " << percent_text(own / compute_median)
             << " of the median node's";
        reason = text.str();
    }
    if (memory_median > 0 && node.memory_GBps < kStragglerFraction * memory_median) {
        std::ostringstream text;
        text.precision(3);
        text << "memory " << node.memory_GBps << " GB/s, " << percent_text(node.memory_GBps / memory_median)
             << " of the median node's";
        reason += (reason.empty() ? "" : "; ") + text.str();
    }
    return reason;
}

}  // namespace epochcast::cli
