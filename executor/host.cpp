// What this machine is (executor/host.hpp): /proc for the CPU and memory, oneDNN for the ISA,
// and the `local-cpu` catalog entry from peaks measured here: a oneDNN matmul for GFLOP/s and a
// large copy for memory bandwidth, each the best of a few repetitions.
#include "executor/host.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "executor/cpu/layers.hpp"
#include "model/errors.hpp"

namespace epochcast {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
/// Square matmul sides timed for the peak: large enough to reach the kernel's steady state,
/// small enough to take well under a second each on two cores.
constexpr int kMatmulSides[] = {1024, 2048};
constexpr int kMatmulRepetitions = 4;
/// The copy buffer: well beyond any last-level cache, capped at 1/16 of the host's memory.
constexpr double kCopyBytes = 256.0 * 1024 * 1024;
constexpr int kCopyRepetitions = 5;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string trim(const std::string& text) {
    const auto first = text.find_first_not_of(" \t");
    if (first == std::string::npos) return "";
    const auto last = text.find_last_not_of(" \t\r\n");
    return text.substr(first, last - first + 1);
}

/// The value of the first "key : value" line of a /proc file whose key is `key`, or "".
std::string proc_value(const char* path, const std::string& key) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        if (trim(line.substr(0, colon)) == key) return trim(line.substr(colon + 1));
    }
    return "";
}

/// Runs with OpenMP (oneDNN's threading runtime here) limited to `threads`, then restores it.
class ThreadLimit {
public:
    explicit ThreadLimit(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
    ~ThreadLimit() { omp_set_num_threads(saved_); }
    ThreadLimit(const ThreadLimit&) = delete;
    ThreadLimit& operator=(const ThreadLimit&) = delete;

private:
    int saved_;
};

/// Best matmul rate over kMatmulSides x kMatmulRepetitions, in FLOP/s: C(f32) = A x B with A and B
/// in `type` (f32, or bf16 accumulated in f32 as the convolutions of a bf16 step are).
double matmul_flops_per_s(dnnl::memory::data_type type) {
    using dnnl::memory;
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    double best = 0;
    for (const int n : kMatmulSides) {
        const memory::dims shape = {n, n};
        const memory::desc a_md(shape, type, memory::format_tag::ab);
        const memory::desc b_md(shape, type, memory::format_tag::ab);
        const memory::desc c_md(shape, memory::data_type::f32, memory::format_tag::ab);
        const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine);
        const dnnl::matmul matmul(pd);
        memory a(pd.src_desc(), engine);
        memory b(pd.weights_desc(), engine);
        memory c(pd.dst_desc(), engine);
        // Zero bits are 0.0 in f32 and bf16 alike: no denormals, every page touched before timing.
        std::memset(a.get_data_handle(), 0, pd.src_desc().get_size());
        std::memset(b.get_data_handle(), 0, pd.weights_desc().get_size());
        const std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
        matmul.execute(stream, args);  // warm-up: JIT, caches
        stream.wait();
        for (int i = 0; i < kMatmulRepetitions; ++i) {
            const auto start = Clock::now();
            matmul.execute(stream, args);
            stream.wait();
            best = std::max(best, 2.0 * n * n * n / seconds_since(start));
        }
    }
    return best;
}

/// Best copy rate of `bytes` split over `threads` threads, in bytes copied per second (each byte
/// read once and written once).
double copy_bytes_per_s(std::size_t bytes, int threads) {
    std::vector<char> from(bytes, 1);
    std::vector<char> to(bytes, 0);  // both touched: no page faults inside the timing
    const std::size_t chunk = bytes / static_cast<std::size_t>(threads);
    double best = 0;
    for (int repetition = 0; repetition < kCopyRepetitions; ++repetition) {
        const auto start = Clock::now();
        std::vector<std::thread> workers;
        for (int t = 0; t < threads; ++t) {
            workers.emplace_back([&, t] {
                const std::size_t offset = static_cast<std::size_t>(t) * chunk;
                const std::size_t length = t + 1 == threads ? bytes - offset : chunk;
                std::memcpy(to.data() + offset, from.data() + offset, length);
            });
        }
        for (std::thread& worker : workers) worker.join();
        best = std::max(best, static_cast<double>(bytes) / seconds_since(start));
    }
    return best;
}

/// The copy buffer of the memory figures: kCopyBytes, or 1/16 of the host's memory when smaller.
std::size_t copy_buffer_bytes(const HostInfo& host) {
    return static_cast<std::size_t>(std::min(kCopyBytes, host.memory_gib * kBytesPerGiB / 16));
}

std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

std::string rounded(double value, int digits) {
    std::ostringstream out;
    out.precision(digits);
    out << value;
    return out.str();
}

}  // namespace

HostInfo host_info(bool bf16) {
    HostInfo host;
    host.hostname = host_name();
    host.cpu_model = proc_value("/proc/cpuinfo", "model name");
    if (host.cpu_model.empty()) host.cpu_model = "unknown CPU";
    host.isa = cpu::cpu_isa_name();
    host.native_bf16 = cpu::cpu_has_native_bf16();
    constexpr int kBatch = 16, kChannels = 64, kSide = 56;  // ResNet-50's first stage at 224 px
    const cpu::ConvolutionChoice choice = cpu::convolution_choice(
        kBatch, kChannels, kSide, bf16 && host.native_bf16 ? cpu::DataType::bf16 : cpu::DataType::fp32);
    host.convolution_kernel = choice.implementation;
    host.convolution_isa = cpu::implementation_isa(choice.implementation);
    host.activation_layout = cpu::layout_name(choice.layout);
    host.cores = std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
    std::istringstream kib(proc_value("/proc/meminfo", "MemTotal"));  // "24684092 kB"
    double mem_kib = 0;
    kib >> mem_kib;
    host.memory_gib = mem_kib * 1024.0 / kBytesPerGiB;
    return host;
}

json host_json(const HostInfo& host) {
    return {{"hostname", host.hostname},
            {"cpu_model", host.cpu_model},
            {"isa", host.isa},
            {"native_bf16", host.native_bf16},
            {"convolution_kernel", host.convolution_kernel},
            {"convolution_isa", host.convolution_isa},
            {"activation_layout", host.activation_layout},
            {"cores", host.cores},
            {"memory_gib", host.memory_gib}};
}

std::string host_name() {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
    return name;
}

MeasuredPeaks measure_peaks(int threads_per_rank) {
    if (threads_per_rank < 1) {
        throw InputError("--threads must be at least 1 (got " + std::to_string(threads_per_rank) + ")");
    }
    const HostInfo host = host_info();
    MeasuredPeaks peaks;
    {
        const ThreadLimit limit(threads_per_rank);
        peaks.fp32_tflops = matmul_flops_per_s(dnnl::memory::data_type::f32) / 1e12;
        // Without native bf16 oneDNN would emulate it several times slower; epochcast-train refuses
        // --precision bf16 there, so the catalog says the device has none (0).
        if (host.native_bf16) peaks.bf16_tflops = matmul_flops_per_s(dnnl::memory::data_type::bf16) / 1e12;
    }
    const std::size_t copy_bytes = copy_buffer_bytes(host);
    // A rank's own memory bandwidth (its threads together), and one thread's: MPI's shared-memory
    // transport moves a message between two ranks by copies of one thread.
    const double rank_copy_Bps = copy_bytes_per_s(copy_bytes, threads_per_rank);
    const double thread_copy_Bps = threads_per_rank == 1 ? rank_copy_Bps : copy_bytes_per_s(copy_bytes, 1);
    // The roofline's memory bandwidth counts reads and writes, as device datasheets do.
    peaks.memory_GBps = 2.0 * rank_copy_Bps / 1e9;
    peaks.thread_copy_GBps = thread_copy_Bps / 1e9;
    return peaks;
}

MeasuredPeaks slower(const MeasuredPeaks& a, const MeasuredPeaks& b) {
    return {std::min(a.fp32_tflops, b.fp32_tflops), std::min(a.bf16_tflops, b.bf16_tflops),
            std::min(a.memory_GBps, b.memory_GBps), std::min(a.thread_copy_GBps, b.thread_copy_GBps)};
}

SlowestNode slowest_node(const std::vector<NodePeaks>& nodes) {
    if (nodes.empty()) throw RunError("slowest_node: no nodes");
    SlowestNode slowest{nodes[0].peaks, 0, 0, 0};
    for (std::size_t i = 1; i < nodes.size(); ++i) {
        const MeasuredPeaks& peaks = nodes[i].peaks;
        if (peaks.fp32_tflops < slowest.peaks.fp32_tflops) slowest.fp32_node = i;
        if (peaks.bf16_tflops < slowest.peaks.bf16_tflops) slowest.bf16_node = i;
        if (peaks.memory_GBps < slowest.peaks.memory_GBps) slowest.memory_node = i;
        slowest.peaks = slower(slowest.peaks, peaks);
    }
    return slowest;
}

std::string MeasuredAllreduce::description() const {
    return "the MPI all-reduce bus bandwidth of " + std::to_string(ranks) +
           " ranks measured together (fp32 sums over " + rounded(total_MiB, 4) + " MiB in " + rounded(bucket_MiB, 4) +
           " MiB MPI_Allreduce calls, best round, slowest rank)";
}

MeasuredLinks one_host_links(const MeasuredPeaks& peaks, const MeasuredAllreduce* allreduce) {
    const double intra_GBps = allreduce ? allreduce->bus_GBps : peaks.thread_copy_GBps;
    return {intra_GBps, intra_GBps * 8.0,
            allreduce ? allreduce->description()
                      : "a one-thread memcpy (MPI shared memory between ranks; not measured with ranks together)",
            "the same rate in Gbit/s: no network between the ranks of one host (loopback)"};
}

json host_catalog(int threads_per_rank, const std::vector<NodePeaks>& nodes, const MeasuredLinks& links) {
    if (threads_per_rank < 1) {
        throw InputError("--threads must be at least 1 (got " + std::to_string(threads_per_rank) + ")");
    }
    const HostInfo host = host_info();
    const int ranks = std::max(1, host.cores / threads_per_rank);
    const SlowestNode slowest = slowest_node(nodes);
    int measured_ranks = 0;
    json node_entries = json::array();
    for (const NodePeaks& node : nodes) {
        measured_ranks += node.ranks;
        node_entries.push_back({{"host", node.host},
                                {"ranks", node.ranks},
                                {"fp32_tflops", node.peaks.fp32_tflops},
                                {"bf16_tflops", node.peaks.bf16_tflops},
                                {"memory_GBps", node.peaks.memory_GBps}});
    }
    // Synchronous data-parallel training waits for its slowest rank: the device is the slowest's.
    std::string slowest_text;
    if (nodes.size() == 1) {
        slowest_text = "each figure is the slowest of the " + std::to_string(measured_ranks) +
                       " rank(s) measured at once on node " + nodes[0].host;
    } else {
        slowest_text = "each figure is the slowest node's of " + std::to_string(nodes.size()) + " nodes (" +
                       std::to_string(measured_ranks) +
                       " ranks measured at once, each node's figure its slowest rank's; \"nodes\" lists them): "
                       "fp32_tflops " +
                       nodes[slowest.fp32_node].host + ", bf16_tflops " + nodes[slowest.bf16_node].host +
                       ", memory_GBps " + nodes[slowest.memory_node].host;
    }
    slowest_text += " (synchronous training waits for its slowest rank)";

    const std::string when = utc_now();
    const std::string machine = host.hostname + " (" + host.cpu_model + ", oneDNN ISA " + host.isa + ", convolutions " +
                                host.convolution_kernel + ", " + std::to_string(host.cores) + " logical CPUs, " +
                                rounded(host.memory_gib, 3) + " GiB)";
    const std::string gpu_source =
        "measured on " + machine + " at " + when + " by epochcast-train --describe-host --threads " +
        std::to_string(threads_per_rank) + ": one rank of " + std::to_string(threads_per_rank) +
        " threads; fp32_tflops and bf16_tflops are the best of " + std::to_string(kMatmulRepetitions) +
        " oneDNN matmuls each of 1024^3 and 2048^3 (f32, and bf16 accumulated in f32" +
        (host.native_bf16 ? "" : "; bf16 0: this ISA has no native bf16") +
        "); no fp16 arithmetic on a CPU (0); memory_GBps is bytes read plus written by a " +
        rounded(static_cast<double>(copy_buffer_bytes(host)) / (1024.0 * 1024.0), 4) +
        " MiB memcpy on the rank's threads, best of " + std::to_string(kCopyRepetitions) + "; " + slowest_text +
        "; memory_gib is the host's memory shared by " + std::to_string(ranks) + " ranks";
    const std::string instance_source = "measured on " + machine + " at " + when + ": gpus = " + std::to_string(ranks) +
                                        " ranks of " + std::to_string(threads_per_rank) + " threads on " +
                                        std::to_string(host.cores) + " logical CPUs; intra_node_GBps is " +
                                        links.intra_node_source + "; network_gbps is " + links.network_source +
                                        "; price 0: a machine you own";

    json gpu = {{"name", "local-cpu"},
                {"kind", "cpu"},
                {"fp32_tflops", slowest.peaks.fp32_tflops},
                {"fp16_tflops", 0.0},
                {"bf16_tflops", slowest.peaks.bf16_tflops},
                {"memory_gib", host.memory_gib / ranks},
                {"memory_GBps", slowest.peaks.memory_GBps},
                {"source", gpu_source}};
    json instance = {{"name", "local-cpu"},
                     {"gpu", "local-cpu"},
                     {"gpus", ranks},
                     {"vcpus", host.cores},
                     {"memory_gib", host.memory_gib},
                     {"network_gbps", links.network_gbps},
                     {"efa_adapters", 0},
                     {"intra_node_GBps", links.intra_node_GBps},
                     {"cloud", "owned"},
                     {"prices", json::object()},  // the local host: no price by the hour
                     {"source", instance_source}};
    return {{"schema", "epochcast.catalog/1"},
            {"gpus", json::array({gpu})},
            {"instances", json::array({instance})},
            {"nodes", node_entries},
            {"host", host_json(host)}};
}

json describe_host_catalog(int threads_per_rank) {
    const MeasuredPeaks peaks = measure_peaks(threads_per_rank);
    return host_catalog(threads_per_rank, {NodePeaks{host_name(), 1, peaks}}, one_host_links(peaks, nullptr));
}

}  // namespace epochcast
