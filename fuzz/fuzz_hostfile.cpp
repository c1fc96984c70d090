// libFuzzer target: the host lists `epochcast run` reads (cli/layout.cpp, compiled alone): the same
// bytes as an Open MPI hostfile, as a `--host` list and as a Slurm node list, then the ranks placed
// on what parsed. Every host that comes back is a host name with 1 to kMaxSlotsPerHost slots, named
// once, at most kMaxHosts of them; a placement uses no more ranks than the hosts have slots.
#include <algorithm>
#include <optional>
#include <set>

#include "cli/layout.hpp"
#include "fuzz/harness.hpp"

using namespace epochcast;
using cli::HostSlots;

namespace {

/// What `epochcast run` may hand to ssh or mpirun as a host: cli/layout.cpp's is_host_name.
void require_host_name(const std::string& name) {
    const bool plain = std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '-' ||
               c == '_' || c == ':';
    });
    if (name.empty() || name.size() > 255 || !plain) fuzz::fail("a parsed host is not a host name", name);
}

void check_hosts(const std::vector<HostSlots>& hosts) {
    if (hosts.empty()) fuzz::fail("a parsed host list is empty", "");
    if (hosts.size() > static_cast<std::size_t>(cli::kMaxHosts)) fuzz::fail("more hosts than kMaxHosts", "");
    std::set<std::string> seen;
    int slots = 0;
    for (const HostSlots& host : hosts) {
        require_host_name(host.name);
        if (!seen.insert(host.name).second) fuzz::fail("a host is listed twice", host.name);
        if (host.slots < 1 || host.slots > cli::kMaxSlotsPerHost) fuzz::fail("slots out of range", host.name);
        slots = std::min(slots + host.slots, 1 << 30);
    }
    // One rank first: it always fits, so it is checked even where a later count is refused.
    for (const std::optional<int> ranks : {std::optional<int>{1}, std::optional<int>{}, std::optional<int>{8}}) {
        try {
            const cli::RankLayout layout = cli::place_ranks(hosts, ranks);
            if (layout.ranks_per_node < 1 || layout.ranks() > slots) fuzz::fail("a placement past the slots", "");
            if (ranks && layout.ranks() != *ranks) fuzz::fail("a placement of another rank count", "");
        } catch (const InputError&) {
            // A count the hosts cannot hold evenly: an answer (the harness checks its message).
            if (ranks == 1) fuzz::fail("one rank could not be placed", "");
            throw;
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::run(data, size, [](std::string_view text) { check_hosts(cli::parse_hostfile(text, "fuzz-hosts")); });
    fuzz::run(data, size, [](std::string_view text) { check_hosts(cli::parse_host_list(text)); });
    fuzz::run(data, size, [](std::string_view text) {
        const std::vector<std::string> names = cli::expand_slurm_hostlist(text);
        if (names.empty() || names.size() > static_cast<std::size_t>(cli::kMaxHosts)) {
            fuzz::fail("a Slurm node list of no or too many names", "");
        }
        for (const std::string& name : names) require_host_name(name);
    });
    return 0;
}
