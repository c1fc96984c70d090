// Import of nccl-tests `all_reduce_perf` output (NVIDIA/nccl-tests): the table of message sizes
// with time, algorithm and bus bandwidth, turned into a network measurement by an alpha-beta fit
// t(S) = alpha + S x 2(n-1)/n / B, where B is then the bus bandwidth (docs/model.md, eq. R1).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/types.hpp"

namespace epochcast {

/// One row of the table (out-of-place columns).
struct NcclSample {
    double bytes = 0;           ///< message size, in bytes
    double time_s = 0;          ///< time of one all-reduce, in seconds
    double algorithm_GBps = 0;  ///< bytes / time, in 10^9 bytes/s
    double bus_GBps = 0;        ///< algorithm bandwidth x 2(n-1)/n, in 10^9 bytes/s
};

/// The fitted network of one instance type, as a trace stores it. A published table that gives
/// only the average and largest bus bandwidth has no samples: then bus_bandwidth_GBps is the
/// largest (large-message) figure and latency_s is 0 (unknown).
struct NetworkMeasurement {
    std::string instance;  ///< catalog instance type the test ran on
    std::string source;    ///< where the log came from
    int ranks = 0;         ///< all-reduce participants (GPUs)
    /// NCCL_ALGO of the test: Strategy::nccl (NCCL's default choice, when the log does not say),
    /// ring or tree. Two nodes make the difference: NCCL's default there is a tree, whose bus
    /// bandwidth exceeds the network's line rate (docs/model.md, eq. T2).
    Strategy algorithm = Strategy::nccl;
    int efa_adapters = -1;              ///< EFA adapters per node the test used: -1 all the instance
                                        ///< has, 0 none (NCCL's TCP socket transport)
    double latency_s = 0;               ///< fitted alpha, seconds per all-reduce (0: unknown)
    double bus_bandwidth_GBps = 0;      ///< fitted B (or the table's largest), in 10^9 bytes/s
    double max_bus_bandwidth_GBps = 0;  ///< largest bus bandwidth in the table
    /// The message size bus_bandwidth_GBps was measured at, in bytes, for a figure read off one row
    /// of a published table; 0: the large-message plateau (a fitted B, or a table's largest).
    double message_bytes = 0;
    double average_bus_bandwidth_GBps = 0;  ///< mean over the table, as nccl-tests prints it
    std::vector<NcclSample> samples;
};

/// Parse the table rows of an all_reduce_perf log (MPI prefixes such as "[1,0]<stdout>:" and the
/// optional "root" column are handled). The rank count comes from a "nranks N" line when present,
/// else from the ratio of bus to algorithm bandwidth. Throws InputError naming `origin` when no
/// row is found, a row is malformed, a message size comes twice (a second table), or "nranks" is
/// below 2 or says two counts.
std::vector<NcclSample> parse_nccl_all_reduce(std::string_view log, std::string_view origin, int* ranks);

/// Ordinary least-squares fit of t = alpha + S x 2(n-1)/n / B over the samples: absolute errors
/// let the large, bandwidth-bound messages set B. B never exceeds the largest bus bandwidth of the
/// table: where the fit's is above it, B is that largest figure and alpha the mean of the rows'
/// t - S x 2(n-1)/n / B. Throws InputError with fewer than 2 samples, or, with `times_must_grow`,
/// where the fitted time does not grow with the message size (no bandwidth was measured); without
/// it, B is then the table's largest bus bandwidth (`epochcast run`'s own sweep on one host, whose
/// small messages are latency alone).
NetworkMeasurement fit_alpha_beta(const std::vector<NcclSample>& samples, int ranks, bool times_must_grow = true);

}  // namespace epochcast
