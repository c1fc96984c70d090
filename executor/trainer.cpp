#include "executor/trainer.hpp"

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
#include <vector>

#include "executor/arena.hpp"
#include "executor/checkpoint.hpp"
#include "executor/cluster.hpp"
#include "executor/cpu/exchange.hpp"
#include "executor/cpu/network.hpp"
#ifdef EPOCHCAST_WITH_CUDA
#include "executor/cuda/exchange.hpp"
#include "executor/cuda/network.hpp"
#endif
#include "executor/distributed.hpp"
#include "executor/host.hpp"
#include "executor/loader.hpp"
#include "executor/optimizer.hpp"
#include "executor/progress.hpp"
#include "executor/train_limits.hpp"
#include "model/errors.hpp"
#include "model/resnet.hpp"
#include "model/text_io.hpp"
#include "traces/trace.hpp"

namespace epochcast {

namespace {

using Clock = std::chrono::steady_clock;

/// The longest --instance name (catalog names are short; a longer one is a mistake).
constexpr std::size_t kMaxInstanceName = 100;

/// `value` in printf's %g form ("1e+30", "0.05").
std::string compact(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// Steps of the whole run: --steps, or --epochs over the data at the global batch (rounded up).
std::int64_t total_steps(const TrainOptions& options, std::int64_t dataset_images, int workers) {
    if (options.steps > 0) {
        return options.steps;
    }
    const double global_batch = static_cast<double>(workers) * options.batch_per_gpu;
    return std::max<std::int64_t>(1,
                                  static_cast<std::int64_t>(std::ceil(options.epochs * dataset_images / global_batch)));
}

LearningRateSchedule make_schedule(const TrainOptions& options, std::int64_t dataset_images, int workers,
                                   std::int64_t steps) {
    const double worker_lr = options.lr > 0 ? options.lr : default_worker_lr(options.batch_per_gpu);
    const double steps_per_epoch =
        static_cast<double>(dataset_images) / (static_cast<double>(workers) * options.batch_per_gpu);
    LearningRateSchedule schedule;
    schedule.peak_lr = worker_lr * workers;
    schedule.warmup_steps = static_cast<std::int64_t>(std::llround(options.warmup_epochs * steps_per_epoch));
    schedule.total_steps = steps;
    return schedule;
}

/// The identity a checkpoint must match to be resumed by this run.
nlohmann::json checkpoint_identity(const TrainOptions& options, int classes, int workers, int ps_ranks) {
    return {{"model", options.model},
            {"image_size", options.image_size},
            {"classes", classes},
            {"batch_per_gpu", options.batch_per_gpu},
            {"workers", workers},
            {"ps_ranks", ps_ranks},
            {"precision", std::string(to_string(options.precision))},
            {"data", options.data},
            {"seed", options.seed}};
}

/// The step after which this invocation stops: the run's end, or earlier with --stop-after.
std::int64_t last_step_of_invocation(const TrainOptions& options, std::int64_t first_step, std::int64_t steps) {
    return options.stop_after > 0 ? std::min(steps, first_step + options.stop_after) : steps;
}

/// Whether a checkpoint is written after step `step` (0-based) when this invocation ends at `end`.
bool checkpoint_after(const TrainOptions& options, std::int64_t step, std::int64_t end) {
    if (options.checkpoint_dir.empty()) {
        return false;
    }
    const bool periodic = options.checkpoint_every > 0 && (step + 1) % options.checkpoint_every == 0;
    return periodic || step + 1 == end;
}

std::unique_ptr<Network> make_network(const TrainOptions& options, NetworkSpec spec) {
    if (options.backend == "cpu") {
        return make_cpu_network(spec);
    }
    if (options.backend == "cuda") {
#ifdef EPOCHCAST_WITH_CUDA
        return make_cuda_network(spec);
#else
        throw InputError(
            "--backend cuda: this build of epochcast-train has no CUDA backend (CUDA, cuDNN or NCCL was not found)");
#endif
    }
    throw InputError("--backend must be cpu or cuda, not '" + options.backend + "'");
}

std::unique_ptr<DataSource> make_data(const TrainOptions& options, int classes) {
    if (options.data == "synthetic") {
        return make_synthetic_data(classes, options.image_size, options.synthetic_images, options.seed);
    }
    return make_image_folder_data(options.data, options.image_size, options.seed);
}

/// The worker's gradient exchange: parameter servers, NCCL for device arenas, MPI otherwise.
std::unique_ptr<GradientExchange> make_exchange(const TrainOptions& options, const Topology& topology,
                                                const Architecture& architecture, Network& network, MPI_Comm workers) {
    const double fusion_bytes = options.fusion_mib * 1024 * 1024;
    if (topology.ps_ranks > 0) {
        return make_ps_push_pull(architecture, network, topology);
    }
    if (network.device_arenas()) {
#ifdef EPOCHCAST_WITH_CUDA
        return make_nccl_exchange(architecture, network, workers, fusion_bytes);
#else
        throw RunError("a network with device arenas needs the CUDA build's NCCL exchange");
#endif
    }
    return make_allreduce_exchange(architecture, network, workers, fusion_bytes, options.precision,
                                   parse_allreduce_algorithm(options.allreduce));
}

/// A whole arena copied to the host, and back.
std::vector<float> host_copy(Network& network, Arena arena) {
    std::vector<float> copy(static_cast<std::size_t>(network.parameter_elements()));
    network.read(arena, 0, network.parameter_elements(), copy.data());
    return copy;
}

void load(Network& network, Arena arena, const std::vector<float>& host) {
    network.write(arena, 0, static_cast<std::int64_t>(host.size()), host.data());
}

/// Per-step measurements of one rank.
struct StepRecord {
    double iteration_s = 0;
    double compute_s = 0;
    double data_wait_s = 0;
    double communication_s = 0;
    double loss = 0;
    bool skipped = false;  ///< the optimizer skipped the step (fp16 gradients overflowed)
};

/// Steps left out of the throughput: the first ones pay for first-touch memory and caches.
std::size_t untimed_steps(std::size_t steps) {
    if (steps <= 1) {
        return 0;
    }
    return std::clamp<std::size_t>(steps / 10, 1, 5);
}

void print_header(const TrainOptions& options, const Network& network, const DataSource& data, bool generated,
                  int workers, int ps_ranks) {
    std::printf(
        "epochcast-train: %s %dpx, %d classes, batch %d x %d worker%s%s, %s, %d thread%s per rank, %s, data %s%s\n",
        options.model.c_str(), options.image_size, data.classes(), options.batch_per_gpu, workers,
        workers == 1 ? "" : "s",
        ps_ranks > 0 ? (", " + std::to_string(ps_ranks) + " parameter server(s)").c_str() : ", all-reduce",
        std::string(to_string(options.precision)).c_str(), options.threads, options.threads == 1 ? "" : "s",
        network.implementation().c_str(), data.description().c_str(), generated ? " (made by the backend)" : "");
    std::printf("%8s  %8s  %14s  %9s  %10s\n", "Step", "Epoch", "Speed(img/s)", "Loss", "LR");
    std::fflush(stdout);
}

/// The trace document of this run (epochcast.trace/1, one run: docs/formats.md, "Trace").
nlohmann::json trace_document(const TrainOptions& options, const DataSource& data, const std::vector<NodeRanks>& layout,
                              int workers, int ps_ranks, std::int64_t first_step, std::int64_t steps,
                              const std::vector<StepRecord>& records) {
    const std::size_t skip = untimed_steps(records.size());
    double iteration = 0, compute = 0, wait = 0, communication = 0;
    std::int64_t skipped = 0;
    for (const StepRecord& record : records) {
        skipped += record.skipped ? 1 : 0;
    }
    Observation observation;
    for (std::size_t i = skip; i < records.size(); ++i) {
        iteration += records[i].iteration_s;
        compute += records[i].compute_s;
        // This worker's compute phase per timed step: calibration measures the straggler jitter
        // of the model's eq. S1 from them (eq. S2, docs/model.md).
        observation.step_compute_s.push_back(records[i].compute_s);
        wait += records[i].data_wait_s;
        communication += records[i].communication_s;
    }
    const double timed = static_cast<double>(records.size() - skip);
    const double global_batch = static_cast<double>(workers) * options.batch_per_gpu;
    nlohmann::json losses = nlohmann::json::array();
    for (const StepRecord& record : records) {
        losses.push_back(record.loss);
    }
    // The run's configuration and throughput under traces/'s key names, then what only a real run has.
    const HostInfo host = host_info(options.precision == Precision::bf16);
    observation.source = "epochcast-train on " + host.hostname + " (" + host.cpu_model + ")";
    Scenario& scenario = observation.scenario;
    scenario.model = options.model;
    scenario.image_size = options.image_size;
    scenario.classes = data.classes();
    scenario.dataset_images = data.images();
    scenario.epochs = static_cast<double>(steps) * global_batch / static_cast<double>(data.images());
    scenario.instance = options.instance.value_or(options.backend == "cuda" ? "local-gpu" : "local-cpu");
    // What really ran: the nodes holding workers (an uneven layout over-counts, report_run says so).
    const WorkerShape shape = worker_shape(layout);
    scenario.nodes = shape.nodes;
    scenario.gpus_per_node = shape.gpus_per_node;
    scenario.framework = Framework::epochcast;
    scenario.strategy = ps_ranks > 0 ? Strategy::ps : Strategy::ring;
    scenario.precision = options.precision;
    scenario.batch_per_gpu = options.batch_per_gpu;
    scenario.ps_instance = options.instance.value_or("local-cpu");  // servers are ranks of the same hosts
    scenario.ps_nodes = ps_ranks;
    observation.throughput_images_per_s = global_batch * timed / iteration;
    observation.iteration_s = iteration / timed;
    nlohmann::json run = run_json(observation);
    nlohmann::json& measured = run["measured"];
    measured["phases_s"] = {
        {"compute", compute / timed}, {"data_wait", wait / timed}, {"exposed_communication", communication / timed}};
    measured["loss"] = losses;
    measured["first_step"] = first_step;
    measured["steps_timed"] = records.size() - skip;
    measured["skipped_steps"] = skipped;  // optimizer steps skipped by fp16 loss scaling (overflow)
    run["configuration"] = {{"backend", options.backend},
                            {"ranks", workers + ps_ranks},
                            {"threads", options.threads},
                            {"steps", steps},
                            {"lr", options.lr > 0 ? options.lr : default_worker_lr(options.batch_per_gpu)},
                            {"warmup_epochs", options.warmup_epochs},
                            {"data", options.data},
                            {"seed", options.seed},
                            {"data_threads", options.data_threads},
                            {"fusion_mib", options.fusion_mib},
                            {"allreduce", options.allreduce}};
    run["host"] = host_json(host);
    run["layout"] = layout_json(layout);
    if (ps_ranks > 0) {
        run["ps_ranks"] = ps_ranks;
    }
    return {{"schema", kTraceSchema},
            {"description", "A real training run measured by epochcast-train."},
            {"runs", nlohmann::json::array({run})}};
}

/// What both roles agree on before the first step.
struct RunPlan {
    Architecture architecture;
    int classes = 0;
    std::int64_t dataset_images = 0;
    std::int64_t steps = 0;
    std::int64_t first_step = 0;
    LearningRateSchedule schedule;
};

/// The server side of parameter-server mode: holds one shard of the weights and momentum.
void serve_parameters(const TrainOptions& options, const Topology& topology, const RunPlan& plan,
                      ProgressReport& progress) {
    const std::vector<ParameterTensor> layout = parameter_layout(plan.architecture);
    const std::int64_t elements = layout_elements(layout);
    const Range shard = shard_of(elements, topology.ps_ranks, topology.server_index());
    const int count = static_cast<int>(shard.size());
    std::vector<float> weights(static_cast<std::size_t>(count)), momentum(weights.size());
    MPI_Recv(weights.data(), count, MPI_FLOAT, 0, kTagInitialShard, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(momentum.data(), count, MPI_FLOAT, 0, kTagInitialShard, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    const int workers = topology.workers();
    std::vector<std::vector<float>> pushed(static_cast<std::size_t>(workers), std::vector<float>(weights.size()));
    std::vector<MPI_Request> requests(static_cast<std::size_t>(workers));
    const std::int64_t end = last_step_of_invocation(options, plan.first_step, plan.steps);
    for (std::int64_t step = plan.first_step; step < end; ++step) {
        const Clock::time_point start = Clock::now();
        for (int w = 0; w < workers; ++w) {
            MPI_Irecv(pushed[static_cast<std::size_t>(w)].data(), count, MPI_FLOAT, w, kTagGradients, MPI_COMM_WORLD,
                      &requests[static_cast<std::size_t>(w)]);
        }
        MPI_Waitall(workers, requests.data(), MPI_STATUSES_IGNORE);
        std::vector<float>& sum = pushed[0];
        for (int w = 1; w < workers; ++w) {
            const std::vector<float>& other = pushed[static_cast<std::size_t>(w)];
            for (int i = 0; i < count; ++i) {
                sum[static_cast<std::size_t>(i)] += other[static_cast<std::size_t>(i)];
            }
        }
        average_in_place(sum.data(), count, workers);
        sgd_nesterov_step(weights.data(), sum.data(), momentum.data(), layout, shard.begin, count,
                          plan.schedule.at(step));
        for (int w = 0; w < workers; ++w) {
            MPI_Isend(weights.data(), count, MPI_FLOAT, w, kTagWeights, MPI_COMM_WORLD,
                      &requests[static_cast<std::size_t>(w)]);
        }
        MPI_Waitall(workers, requests.data(), MPI_STATUSES_IGNORE);
        if (checkpoint_after(options, step, end)) {
            MPI_Send(weights.data(), count, MPI_FLOAT, 0, kTagCheckpointShard, MPI_COMM_WORLD);
            MPI_Send(momentum.data(), count, MPI_FLOAT, 0, kTagCheckpointShard, MPI_COMM_WORLD);
        }
        progress.step_done(seconds_since(start));
    }
}

/// Worker 0 in parameter-server mode: fetch every server's weights and momentum for a checkpoint.
void gather_server_shards(const Topology& topology, std::vector<float>& weights, std::vector<float>& momentum) {
    const auto elements = static_cast<std::int64_t>(weights.size());
    for (int s = 0; s < topology.ps_ranks; ++s) {
        const Range shard = shard_of(elements, topology.ps_ranks, s);
        const int server = topology.workers() + s;
        MPI_Recv(weights.data() + shard.begin, static_cast<int>(shard.size()), MPI_FLOAT, server, kTagCheckpointShard,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(momentum.data() + shard.begin, static_cast<int>(shard.size()), MPI_FLOAT, server, kTagCheckpointShard,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

/// Worker 0 in parameter-server mode: hand each server its starting shard.
void send_initial_shards(const Topology& topology, const float* weights, const float* momentum, std::int64_t elements) {
    for (int s = 0; s < topology.ps_ranks; ++s) {
        const Range shard = shard_of(elements, topology.ps_ranks, s);
        const int server = topology.workers() + s;
        MPI_Send(weights + shard.begin, static_cast<int>(shard.size()), MPI_FLOAT, server, kTagInitialShard,
                 MPI_COMM_WORLD);
        MPI_Send(momentum + shard.begin, static_cast<int>(shard.size()), MPI_FLOAT, server, kTagInitialShard,
                 MPI_COMM_WORLD);
    }
}

void write_state(Network& network, const std::vector<NamedTensor>& saved, const std::string& directory) {
    const std::vector<StateTensor>& state = network.state();
    if (saved.size() != state.size()) {
        throw InputError("checkpoint in '" + directory + "' has " + std::to_string(saved.size()) +
                         " state tensors, the network " + std::to_string(state.size()));
    }
    for (std::size_t i = 0; i < state.size(); ++i) {
        if (saved[i].name != state[i].name || static_cast<std::int64_t>(saved[i].values.size()) != state[i].elements) {
            throw InputError("checkpoint in '" + directory + "' does not match the network at '" + state[i].name + "'");
        }
        std::copy(saved[i].values.begin(), saved[i].values.end(), state[i].value);
    }
    network.upload_state();
}

std::vector<NamedTensor> read_state(Network& network) {
    network.download_state();
    std::vector<NamedTensor> saved;
    for (const StateTensor& tensor : network.state()) {
        saved.push_back({tensor.name, std::vector<float>(tensor.value, tensor.value + tensor.elements)});
    }
    return saved;
}

/// Throws RunError when the workers' mean loss after step `step` (0-based) is not finite: the
/// run has diverged, and every later step would only carry NaN on. Under fp16 loss scaling a
/// step whose gradients overflowed is skipped by design (the scaler lowers the scale), so a
/// non-finite loss on a skipped step is not an error; the scaler itself fails the run when even
/// its minimum scale overflows (LossScaler::update).
void check_loss(double loss, std::int64_t step, double lr, const TrainOptions& options, bool skipped) {
    if (std::isfinite(loss) || (options.precision == Precision::amp && skipped)) return;
    throw RunError(std::string("loss is ") + (std::isnan(loss) ? "NaN" : "infinite") + " at step " +
                   std::to_string(step + 1) + " (learning rate " + compact(lr) +
                   "): training diverged; lower --lr (the last checkpoint, if any, is kept)");
}

/// Throws InputError when a checkpoint at `next_step` leaves nothing of this run's `steps` to
/// train (resuming a finished run was a silent no-op, and under `epochcast run` a missing trace).
void check_unfinished(std::int64_t next_step, std::int64_t steps, const std::string& directory) {
    if (next_step < steps) return;
    const std::string folder = escape_for_message(directory);
    const std::string more = " (give a larger --steps or --epochs to train on, or leave out --resume to start over)";
    if (next_step == steps) {
        throw InputError("nothing to resume: the checkpoint in '" + folder + "' has finished all " +
                         std::to_string(steps) + " steps of this run" + more);
    }
    throw InputError("nothing to resume: the checkpoint in '" + folder + "' is at step " + std::to_string(next_step) +
                     ", past this run's " + std::to_string(steps) + " steps" + more);
}

/// Resume: worker 0 reads the checkpoint into its network and shares it; everyone learns the first
/// step (plan.first_step stays 0 without --resume). Collective over every rank: the servers take
/// part in the first step's broadcast from run_training.
void resume_worker(const TrainOptions& options, const Topology& topology, RunPlan& plan, Network& network,
                   const nlohmann::json& identity, MPI_Comm workers_comm) {
    const std::int64_t elements = network.parameter_elements();
    if (options.resume && topology.rank == 0) {
        Checkpoint checkpoint = read_checkpoint(options.checkpoint_dir);
        check_resumable(checkpoint.run, identity, options.checkpoint_dir);
        if (static_cast<std::int64_t>(checkpoint.weights.size()) != elements) {
            throw InputError("checkpoint in '" + options.checkpoint_dir + "' has " +
                             std::to_string(checkpoint.weights.size()) + " weights, the network " +
                             std::to_string(elements));
        }
        check_unfinished(checkpoint.next_step, plan.steps, options.checkpoint_dir);
        load(network, Arena::values, checkpoint.weights);
        load(network, Arena::momentum, checkpoint.momentum);
        write_state(network, checkpoint.state, options.checkpoint_dir);
        plan.first_step = checkpoint.next_step;
    }
    MPI_Bcast(&plan.first_step, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (options.resume) {
        for (Arena arena : {Arena::values, Arena::momentum}) {
            std::vector<float> host = host_copy(network, arena);
            MPI_Bcast(host.data(), static_cast<int>(elements), MPI_FLOAT, 0, workers_comm);
            load(network, arena, host);
        }
        network.parameters_updated();
    }
}

/// One training step on this worker: its batch, forward and backward with the gradient exchange
/// overlapped, the optimizer step, and the workers' mean loss. Throws RunError when the loss
/// scaler gives up or the mean loss is not finite (check_loss).
StepRecord run_step(const TrainOptions& options, const Topology& topology, std::int64_t step, double lr,
                    Network& network, GradientExchange& exchange, BatchLoader* loader,
                    const std::function<void(int layer)>& layer_ready, MPI_Comm workers_comm) {
    const int workers = topology.workers();
    const Clock::time_point start = Clock::now();
    StepRecord record;
    const BatchView* batch = nullptr;  // null when the network generates its own (no wait)
    if (loader) {
        const double waited_before = loader->wait_s();
        batch = &loader->next();
        record.data_wait_s = loader->wait_s() - waited_before;
    }

    const Clock::time_point compute_start = Clock::now();
    exchange.begin_step(step, lr);
    const double loss = batch ? network.train_step(batch->images.data(), batch->labels.data(), layer_ready)
                              : network.train_step_generated(
                                    batch_position(step, topology.rank, workers, options.batch_per_gpu), layer_ready);
    record.compute_s = seconds_since(compute_start);

    const Clock::time_point exchange_start = Clock::now();
    const bool apply_optimizer = exchange.finish();
    record.communication_s = seconds_since(exchange_start);

    const Clock::time_point update_start = Clock::now();
    if (apply_optimizer) {  // the step refreshes the working copies; an exchange that stepped did too
        try {
            record.skipped = !network.optimizer_step(lr);
        } catch (const RunError& error) {  // the loss scaler gave up
            throw RunError("at step " + std::to_string(step + 1) + ": " + error.what());
        }
    }
    record.compute_s += seconds_since(update_start);

    const Clock::time_point loss_start = Clock::now();
    double loss_sum = loss;
    MPI_Allreduce(&loss, &loss_sum, 1, MPI_DOUBLE, MPI_SUM, workers_comm);
    record.loss = loss_sum / workers;
    record.communication_s += seconds_since(loss_start);
    record.iteration_s = seconds_since(start);
    check_loss(record.loss, step, lr, options, record.skipped);
    return record;
}

/// Rank 0's row of the per-step table.
void print_step(const TrainOptions& options, const RunPlan& plan, int workers, std::int64_t step, double lr,
                const StepRecord& record) {
    const double global_batch = static_cast<double>(workers) * options.batch_per_gpu;
    // A step fp16 loss scaling skipped may have no finite loss: the column says so.
    char loss[16];
    if (std::isfinite(record.loss)) std::snprintf(loss, sizeof loss, "%9.5f", record.loss);
    else std::snprintf(loss, sizeof loss, "%9s", "skipped");
    std::printf("%8lld  %8.4f  %14.2f  %s  %10.6f\n", static_cast<long long>(step + 1),
                static_cast<double>(step + 1) * global_batch / static_cast<double>(plan.dataset_images),
                global_batch / record.iteration_s, loss, lr);
    std::fflush(stdout);
}

/// The checkpoint after step `step` (0-based). Every worker calls it (a sharded exchange makes its
/// momentum whole collectively); worker 0 gathers the servers' shards and writes it.
void save_checkpoint(const TrainOptions& options, const Topology& topology, const nlohmann::json& identity,
                     std::int64_t step, Network& network, GradientExchange& exchange) {
    Checkpoint checkpoint{identity, step + 1, {}, {}, {}};
    exchange.complete_state();  // every worker: a sharded step keeps only its own momentum current
    if (topology.rank != 0) return;
    checkpoint.weights = host_copy(network, Arena::values);
    checkpoint.momentum = host_copy(network, Arena::momentum);
    if (topology.ps_ranks > 0) {
        gather_server_shards(topology, checkpoint.weights, checkpoint.momentum);
    }
    checkpoint.state = read_state(network);
    write_checkpoint(options.checkpoint_dir, checkpoint);
}

/// Rank 0's closing line (the timed steps' throughput and phases) and the trace, when asked for.
void report_run(const TrainOptions& options, const Topology& topology, const RunPlan& plan, const DataSource& data,
                const std::vector<NodeRanks>& layout, const std::vector<StepRecord>& records) {
    const nlohmann::json trace = trace_document(options, data, layout, topology.workers(), topology.ps_ranks,
                                                plan.first_step, plan.steps, records);
    if (const WorkerShape shape = worker_shape(layout); !shape.even) {
        std::string counts;
        for (const NodeRanks& node : layout) {
            if (node.workers > 0)
                counts += (counts.empty() ? "" : ", ") + node.host + " " + std::to_string(node.workers);
        }
        std::fprintf(stderr,
                     "epochcast-train: the workers are spread unevenly over the nodes (%s): the trace's nodes x "
                     "gpus_per_node (%d x %d) over-counts the %d workers; its \"layout\" has each node's ranks\n",
                     counts.c_str(), shape.nodes, shape.gpus_per_node, topology.workers());
    }
    const nlohmann::json& measured = trace["runs"][0]["measured"];
    const nlohmann::json& phases = measured["phases_s"];
    std::printf(
        "measured: %.2f img/s, %.4f s per step (compute %.4f s, data wait %.4f s, exposed communication %.4f s) over "
        "%d steps\n",
        measured["throughput_images_per_s"].get<double>(), measured["iteration_s"].get<double>(),
        phases["compute"].get<double>(), phases["data_wait"].get<double>(),
        phases["exposed_communication"].get<double>(), measured["steps_timed"].get<int>());
    std::fflush(stdout);
    if (!options.trace_out.empty()) {
        write_text_file_atomically(options.trace_out,
                                   trace.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "trace");
    }
}

/// A worker's run: set up (network, resume, exchange, data), the step loop with its table and
/// checkpoints, then the closing report.
void train_worker(const TrainOptions& options, const Topology& topology, RunPlan& plan, const DataSource& data,
                  const std::vector<NodeRanks>& layout, MPI_Comm workers_comm, ProgressReport& progress) {
    const int workers = topology.workers();
    const bool leader = topology.rank == 0;
    NetworkSpec spec{plan.architecture, options.batch_per_gpu, options.precision,
                     options.threads,   options.seed,          local_worker_index(workers_comm)};
    std::unique_ptr<Network> network = make_network(options, spec);
    const nlohmann::json identity = checkpoint_identity(options, plan.classes, workers, topology.ps_ranks);
    resume_worker(options, topology, plan, *network, identity, workers_comm);
    if (leader && topology.ps_ranks > 0) {
        send_initial_shards(topology, host_copy(*network, Arena::values).data(),
                            host_copy(*network, Arena::momentum).data(), network->parameter_elements());
    }

    std::unique_ptr<GradientExchange> exchange =
        make_exchange(options, topology, plan.architecture, *network, workers_comm);
    // Synthetic data on a backend that makes it where it computes (the CUDA backend): no host
    // decoding, no images handed over; otherwise the decode threads prefetch the host batches.
    const bool generated = options.data == "synthetic" &&
                           network->generate_synthetic_batches(plan.classes, options.image_size, options.seed);
    std::unique_ptr<BatchLoader> loader;
    if (!generated) {
        loader = std::make_unique<BatchLoader>(data, options.batch_per_gpu, topology.rank, workers, plan.first_step,
                                               options.data_threads, 2, network->batch_memory());
    }
    if (leader && options.print_steps) {
        print_header(options, *network, data, generated, workers, topology.ps_ranks);
    }

    const std::function<void(int layer)> layer_ready = [&](int layer) { exchange->layer_ready(layer); };
    std::vector<StepRecord> records;
    const std::int64_t end = last_step_of_invocation(options, plan.first_step, plan.steps);
    for (std::int64_t step = plan.first_step; step < end; ++step) {
        const double lr = plan.schedule.at(step);
        records.push_back(
            run_step(options, topology, step, lr, *network, *exchange, loader.get(), layer_ready, workers_comm));
        progress.step_done(records.back().iteration_s);
        if (leader && options.print_steps) {
            print_step(options, plan, workers, step, lr, records.back());
        }
        if (checkpoint_after(options, step, end)) {
            save_checkpoint(options, topology, identity, step, *network, *exchange);
        }
    }
    if (leader && !records.empty()) {
        report_run(options, topology, plan, data, layout, records);
    }
}

}  // namespace

void validate(const TrainOptions& options) {
    auto require = [](bool ok, const std::string& message) {
        if (!ok) throw InputError(message);
    };
    const HostCapacity host = this_host_capacity();
    check_trainer_limits({.backend = options.backend,
                          .model = options.model,
                          .image_size = options.image_size,
                          .classes = options.classes,
                          .batch_per_gpu = options.batch_per_gpu,
                          .precision = options.precision,
                          .threads = options.threads,
                          .data_threads = options.data_threads},
                         &host);
    require(options.steps > 0 || options.epochs > 0, "give --steps or --epochs (a positive number)");
    require(options.steps >= 0 && options.epochs >= 0, "--steps and --epochs must not be negative");
    require(std::isfinite(options.epochs), "--epochs must be a finite number");
    require(std::isfinite(options.lr) && options.lr >= 0, "--lr must be a positive finite number");
    require(std::isfinite(options.warmup_epochs) && options.warmup_epochs >= 0,
            "--warmup-epochs must be a finite number, not negative");
    require(options.checkpoint_every >= 0, "--checkpoint-every must not be negative");
    require(options.stop_after >= 0, "--stop-after must not be negative");
    require(options.synthetic_images >= 1, "--synthetic-images must be at least 1");
    require(options.fusion_mib > 0, "--fusion-mib must be positive");
    parse_allreduce_algorithm(options.allreduce);  // throws InputError naming --allreduce
    require(!options.resume || !options.checkpoint_dir.empty(), "--resume needs --checkpoint-dir");
    if (options.instance) {
        const std::string& name = *options.instance;
        const bool printable = std::all_of(name.begin(), name.end(), [](char c) { return c > ' ' && c <= '~'; });
        require(!name.empty() && name.size() <= kMaxInstanceName && printable,
                "--instance must be 1 to " + std::to_string(kMaxInstanceName) +
                    " printable ASCII characters without spaces, got '" + escape_for_message(name) + "'");
    }
    require(!(options.backend == "cuda" && options.ps_ranks > 0 && options.precision == Precision::amp),
            "--precision fp16 with --ps-ranks: the CPU parameter servers cannot skip a step whose fp16 gradients "
            "overflowed (dynamic loss scaling); use --precision fp32 with parameter servers, or all-reduce");
}

void run_training(const TrainOptions& options) {
    validate(options);
    const Topology topology = world_topology(options.ps_ranks);
    const int workers = topology.workers();
    // The optimizer computes in fp32: a peak rate beyond fp32's range is infinite from the start.
    if (options.lr * workers > FLT_MAX) {
        throw InputError(
            "--lr " + compact(options.lr) + " (x " + std::to_string(workers) +
            " worker(s), linear scaling) is beyond fp32's range (3.4e38), in which the optimizer computes");
    }
    ProgressReport progress(topology.rank);
    omp_set_num_threads(options.threads);

    // Every rank builds the same plan; servers never touch the data.
    std::unique_ptr<DataSource> data;
    RunPlan plan;
    if (!topology.is_server()) {
        data = make_data(options, options.classes.value_or(1000));
        if (options.data != "synthetic" && options.classes && *options.classes != data->classes()) {
            throw InputError("--classes " + std::to_string(*options.classes) + " but '" + options.data + "' has " +
                             std::to_string(data->classes()) + " class folders");
        }
        plan.classes = data->classes();
        plan.dataset_images = data->images();
    }
    std::int64_t shared[2] = {plan.classes, plan.dataset_images};
    MPI_Bcast(shared, 2, MPI_INT64_T, 0, MPI_COMM_WORLD);
    plan.classes = static_cast<int>(shared[0]);
    plan.dataset_images = shared[1];
    plan.architecture = build_resnet(options.model, options.image_size, plan.classes);
    plan.steps = total_steps(options, plan.dataset_images, workers);
    plan.schedule = make_schedule(options, plan.dataset_images, workers, plan.steps);

    const std::vector<NodeRanks> layout = world_layout(workers);  // collective: servers take part
    MPI_Comm group = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, topology.is_server() ? 1 : 0, topology.rank, &group);
    if (topology.is_server()) {
        MPI_Bcast(&plan.first_step, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
        serve_parameters(options, topology, plan, progress);
    } else {
        train_worker(options, topology, plan, *data, layout, group, progress);
    }
    MPI_Comm_free(&group);
}

}  // namespace epochcast
