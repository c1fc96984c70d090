// Where `epochcast run` puts its ranks (cli/layout.hpp): hostfiles, --host lists, Slurm's node
// lists and environment, the even placement of ranks, this host's names and straggler nodes.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/layout.hpp"
#include "model/errors.hpp"
#include "tests/support/error_of.hpp"

namespace epochcast {
namespace {

using cli::HostSlots;

using testing::input_error_of;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Hostfile, OpenMpisFormatWithCommentsRepeatsAndMaxSlots) {
    const std::string text =
        "# the lab's nodes\n"
        "node1 slots=8 max_slots=8\n"
        "\n"
        "node2   slots=8   # second rack\n"
        "10.0.0.3 slots=4 max-slots=16\n"
        "node1 slots=2\n";
    const std::vector<HostSlots> expected = {{"node1", 10}, {"node2", 8}, {"10.0.0.3", 4}};
    EXPECT_EQ(cli::parse_hostfile(text, "hosts"), expected);
}

TEST(Hostfile, BadLinesAreNamedWithTheirLine) {
    EXPECT_EQ(input_error_of([] { cli::parse_hostfile("node1\n", "hosts"); }),
              "hosts: line 1: node1 has no slots=N (say how many ranks it holds: one per GPU, or cores / --threads)");
    EXPECT_TRUE(contains(input_error_of([] { cli::parse_hostfile("a slots=1\nb slots=0\n", "h"); }),
                         "h: line 2: slots must be a whole number from 1 to 4096, got '0'"));
    EXPECT_TRUE(contains(input_error_of([] { cli::parse_hostfile("a slots=-1\n", "h"); }), "got '-1'"));
    EXPECT_TRUE(contains(input_error_of([] { cli::parse_hostfile("a slots=1e3\n", "h"); }), "got '1e3'"));
    EXPECT_TRUE(
        contains(input_error_of([] { cli::parse_hostfile("a slots=99999999999999\n", "h"); }), "from 1 to 4096"));
    EXPECT_TRUE(contains(input_error_of([] { cli::parse_hostfile("a cpus=4\n", "h"); }),
                         "'cpus=4' is not slots=N or max_slots=N"));
    EXPECT_TRUE(contains(input_error_of([] { cli::parse_hostfile("a slots=4 max_slots=2\n", "h"); }),
                         "max_slots=2 is less than slots=4"));
    EXPECT_TRUE(contains(input_error_of([] { cli::parse_hostfile("a$b slots=1\n", "h"); }), "is not a host name"));
    EXPECT_TRUE(contains(input_error_of([] { cli::parse_hostfile("a slots=4000\na slots=4000\n", "h"); }),
                         "more than 4096 slots"));
    EXPECT_EQ(input_error_of([] { cli::parse_hostfile("# nothing\n\n", "h"); }), "h: the hostfile names no host");
}

// A hostfile may name up to kMaxHosts hosts, each once or more (their slots summed in the place of
// the first line); one more is refused, naming the line. (The tally is indexed by name: 65,536
// lines took seconds when each line searched the hosts before it.)
TEST(Hostfile, HoldsUpToTheMostHostsAndSumsRepeatsInPlace) {
    std::string text;
    for (int i = 0; i < cli::kMaxHosts; ++i) text += "n" + std::to_string(i) + " slots=1\n";
    text += "n7 slots=3\nn0 slots=2\n";
    const std::vector<HostSlots> hosts = cli::parse_hostfile(text, "hosts");
    ASSERT_EQ(hosts.size(), static_cast<std::size_t>(cli::kMaxHosts));
    EXPECT_EQ(hosts[0], (HostSlots{"n0", 3}));
    EXPECT_EQ(hosts[7], (HostSlots{"n7", 4}));
    EXPECT_EQ(hosts.back(), (HostSlots{"n65535", 1}));
    EXPECT_EQ(input_error_of([&] { cli::parse_hostfile(text + "extra slots=1\n", "hosts"); }),
              "hosts: line 65539: more than 65536 hosts");
}

// Issue 59, item 15: a hostfile saved with a byte-order mark (as Windows editors write one) is
// read as without it; a host name of 100,000 characters is named cut, not echoed whole.
TEST(Hostfile, AByteOrderMarkIsNoPartOfTheFirstHostAndALongNameIsCut) {
    EXPECT_EQ(cli::parse_hostfile("\xEF\xBB\xBFnode1 slots=2\n", "hosts"), (std::vector<HostSlots>{{"node1", 2}}));
    const std::string message =
        input_error_of([] { cli::parse_hostfile(std::string(100'000, 'a') + "$ slots=1\n", "hosts"); });
    EXPECT_TRUE(contains(message, "... (100,001 bytes in all)' is not a host name")) << message.substr(0, 400);
    EXPECT_LT(message.size(), 400u);
}

TEST(HostList, SlotsAfterTheLastColonOrOne) {
    const std::vector<HostSlots> expected = {{"n1", 4}, {"n2", 1}, {"fe80::1", 2}};
    EXPECT_EQ(cli::parse_host_list("n1:4,n2,fe80::1:2"), expected);
    EXPECT_EQ(cli::parse_host_list("n1:2,n1:2"), (std::vector<HostSlots>{{"n1", 4}}));
    EXPECT_TRUE(contains(input_error_of([] { cli::parse_host_list("n1:0"); }), "from 1 to 4096"));
    // Issue 42: a signed count is a bad count, not part of a host name ssh then fails to resolve.
    EXPECT_TRUE(contains(input_error_of([] { cli::parse_host_list("localhost:-1"); }), "from 1 to 4096"));
    EXPECT_TRUE(contains(input_error_of([] { cli::parse_host_list("localhost:+2"); }), "from 1 to 4096"));
    EXPECT_TRUE(contains(input_error_of([] { cli::parse_host_list("n1,,n2"); }), "not HOST or HOST:SLOTS"));
    EXPECT_TRUE(contains(input_error_of([] { cli::parse_host_list(""); }), "names no host"));
    // Issue 59, item 13: "localhost:" (slots missing) reached ssh as a host named "localhost:".
    EXPECT_TRUE(contains(input_error_of([] { cli::parse_host_list("localhost:"); }),
                         "--host 'localhost:': the slots after ':' are missing"));
    EXPECT_EQ(cli::parse_host_list("::1:1"), (std::vector<HostSlots>{{"::1", 1}}));
}

TEST(SlurmHostlist, RangesKeepTheirPaddingAndOrder) {
    EXPECT_EQ(cli::expand_slurm_hostlist("node[08-10,3],gpu-a5,rack[1-2]-x"),
              (std::vector<std::string>{"node08", "node09", "node10", "node3", "gpu-a5", "rack1-x", "rack2-x"}));
    EXPECT_EQ(cli::expand_slurm_hostlist("single"), std::vector<std::string>{"single"});
    EXPECT_TRUE(contains(input_error_of([] { cli::expand_slurm_hostlist("node[1-3"); }), "'[' without ']'"));
    EXPECT_TRUE(contains(input_error_of([] { cli::expand_slurm_hostlist("node[5-2]"); }), "'5-2' is not a number"));
    EXPECT_TRUE(contains(input_error_of([] { cli::expand_slurm_hostlist("node[]"); }), "empty '[]'"));
    EXPECT_TRUE(contains(input_error_of([] { cli::expand_slurm_hostlist("n[0-99999]"); }), "more than 65536 hosts"));
    EXPECT_TRUE(contains(input_error_of([] { cli::expand_slurm_hostlist("a,,b"); }), "empty entry"));
}

TEST(SlurmAllocation, ReadFromTheEnvironmentOnlyInsideAJob) {
    std::map<std::string, std::string> environment;
    const auto variable = [&](const std::string& name) -> std::optional<std::string> {
        const auto found = environment.find(name);
        return found == environment.end() ? std::nullopt : std::optional<std::string>(found->second);
    };
    EXPECT_FALSE(cli::slurm_allocation(variable));
    environment = {{"SLURM_JOB_ID", "4242"},
                   {"SLURM_JOB_NODELIST", "p4d-[001-004]"},
                   {"SLURM_NTASKS", "32"},
                   {"SLURM_GPUS_ON_NODE", "8"}};
    const std::optional<cli::SlurmAllocation> allocation = cli::slurm_allocation(variable);
    ASSERT_TRUE(allocation);
    EXPECT_EQ(allocation->job_id, "4242");
    EXPECT_EQ(allocation->nodes, (std::vector<std::string>{"p4d-001", "p4d-002", "p4d-003", "p4d-004"}));
    EXPECT_EQ(allocation->tasks, 32);
    EXPECT_EQ(allocation->gpus_per_node, 8);
    environment["SLURM_NTASKS"] = "lots";
    EXPECT_EQ(input_error_of([&] { cli::slurm_allocation(variable); }), "SLURM_NTASKS is 'lots', not a count");
    environment.erase("SLURM_JOB_NODELIST");
    EXPECT_TRUE(contains(input_error_of([&] { cli::slurm_allocation(variable); }), "has no SLURM_JOB_NODELIST"));
}

TEST(PlaceRanks, FillSlotsInOrderAndMustBeEven) {
    const std::vector<HostSlots> four = {{"n1", 8}, {"n2", 8}, {"n3", 8}, {"n4", 8}};
    cli::RankLayout layout = cli::place_ranks(four, std::nullopt);
    EXPECT_EQ(layout.hosts, (std::vector<std::string>{"n1", "n2", "n3", "n4"}));
    EXPECT_EQ(layout.ranks_per_node, 8);
    EXPECT_EQ(layout.ranks(), 32);
    layout = cli::place_ranks(four, 16);  // two full nodes, as Open MPI maps by slot
    EXPECT_EQ(layout.hosts, (std::vector<std::string>{"n1", "n2"}));
    layout = cli::place_ranks(four, 4);
    EXPECT_EQ(layout.hosts, std::vector<std::string>{"n1"});
    EXPECT_EQ(layout.ranks_per_node, 4);
    EXPECT_EQ(input_error_of([&] { cli::place_ranks(four, 20); }),
              "--np 20 fills the hosts' slots (n1 8, n2 8, n3 8, n4 8) unevenly, 8 ranks on n1 and 4 on n3; epochcast "
              "describes a cluster of equal nodes: give --np 16, or hosts with equal slots");
    EXPECT_EQ(input_error_of([&] { cli::place_ranks(four, 33); }),
              "--np 33 is more than the 32 slots of the hosts (n1 8, n2 8, n3 8, n4 8)");
    EXPECT_TRUE(contains(input_error_of([&] { cli::place_ranks(four, 0); }), "--np must be at least 1"));
    // The localhost case of the issue: one host of two slots.
    layout = cli::place_ranks(cli::parse_hostfile("localhost slots=2\n", "hosts"), 2);
    EXPECT_EQ(layout.hosts, std::vector<std::string>{"localhost"});
    EXPECT_EQ(layout.ranks_per_node, 2);
}

TEST(PlaceRanks, OnASlurmAllocationTheRanksDivideOverItsNodes) {
    cli::SlurmAllocation allocation;
    allocation.job_id = "7";
    allocation.nodes = {"a", "b", "c", "d"};
    const cli::RankLayout layout = cli::place_ranks_on_allocation(allocation, 32);
    EXPECT_EQ(layout.hosts, allocation.nodes);
    EXPECT_EQ(layout.ranks_per_node, 8);
    EXPECT_TRUE(contains(input_error_of([&] { cli::place_ranks_on_allocation(allocation, 6); }),
                         "--np 6 does not divide evenly over the 4 nodes of Slurm job 7"));
}

TEST(ThisHost, LoopbackAndOwnNamesFullOrShort) {
    EXPECT_TRUE(cli::is_this_host("localhost", "node1.cluster"));
    EXPECT_TRUE(cli::is_this_host("127.0.0.1", "node1.cluster"));
    EXPECT_TRUE(cli::is_this_host("node1", "node1.cluster"));
    EXPECT_TRUE(cli::is_this_host("node1.cluster", "node1"));
    EXPECT_TRUE(cli::is_this_host("node1.cluster", "node1.cluster"));
    EXPECT_FALSE(cli::is_this_host("node1.other", "node1.cluster"));
    EXPECT_FALSE(cli::is_this_host("node2", "node1"));
    EXPECT_FALSE(cli::is_this_host("10.0.0.1", "10"));
    EXPECT_FALSE(cli::is_this_host("", "node1"));
    // Issue 59, item 13: LOCALHOST and ::1 went to ssh (exit 1, "unreachable"); names are case-insensitive.
    EXPECT_TRUE(cli::is_this_host("LOCALHOST", "node1"));
    EXPECT_TRUE(cli::is_this_host("Node1.Cluster", "node1"));
    EXPECT_TRUE(cli::is_this_host("::1", "node1"));
}

TEST(Stragglers, ANodeBelowFourFifthsOfTheMedianIsNamedWithItsFigure) {
    const std::vector<cli::NodePeaks> nodes = {
        {"n1", 2, 1.0, 4.0, 100.0}, {"n2", 2, 1.0, 3.9, 98.0}, {"n3", 2, 0.5, 2.0, 99.0}, {"n4", 2, 1.0, 4.0, 60.0}};
    EXPECT_EQ(cli::straggler_reason(nodes[0], nodes, true), "");
    EXPECT_EQ(cli::straggler_reason(nodes[1], nodes, true), "");
    EXPECT_EQ(cli::straggler_reason(nodes[2], nodes, true), "bf16 peak 2 TFLOP/s, 51% of the median node's");
    EXPECT_EQ(cli::straggler_reason(nodes[2], nodes, false), "fp32 peak 0.5 TFLOP/s, 50% of the median node's");
    EXPECT_EQ(cli::straggler_reason(nodes[3], nodes, false), "memory 60 GB/s, 61% of the median node's");
    // One node has no others to be slower than.
    EXPECT_EQ(cli::straggler_reason(nodes[2], {nodes[2]}, true), "");
}

}  // namespace
}  // namespace epochcast
