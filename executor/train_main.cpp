// epochcast-train, the program mpirun starts (docs/cli.md, "epochcast-train").
// The only place where errors become exit codes: 2 for bad input, 1 for a failed run. With more
// than one rank an error on any rank aborts the whole job (MPI_Abort with that code), so no rank
// is left waiting in a collective.
#include <malloc.h>
#include <mpi.h>

#include <cmath>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <limits>
#include <string>

#include <CLI/CLI.hpp>

#include "executor/allreduce_sweep.hpp"
#include "executor/cluster.hpp"
#include "executor/distributed.hpp"
#include "executor/host.hpp"
#include "executor/progress.hpp"
#include "executor/rank_supervisor.hpp"
#include "executor/train_limits.hpp"
#include "executor/trainer.hpp"
#include "model/errors.hpp"
#include "model/text_io.hpp"

namespace {

/// Stops the job with `code`: every rank of a multi-rank job, or just this process. Under
/// `epochcast run` the rank's failure report (executor/progress.hpp) carries code and message.
int fail(int code, const std::string& prefix, const char* message) {
    int rank = epochcast::launcher_rank(), ranks = 1, initialised = 0;
    MPI_Initialized(&initialised);
    if (initialised) {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    }
    epochcast::report_failure(rank, code, message);
    std::cerr << "epochcast-train" << (ranks > 1 ? " (rank " + std::to_string(rank) + ")" : std::string()) << ": "
              << prefix << message << std::endl;
    if (initialised && ranks > 1) {
        MPI_Abort(MPI_COMM_WORLD, code);
    }
    if (initialised) {
        MPI_Finalize();
    }
    return code;
}

/// Keep freed memory in the process. MPI's non-blocking collectives allocate and free a bucket-sized
/// scratch buffer for every all-reduce; glibc serves blocks that large with fresh mmap()s and hands
/// them back on free(), so every step page-faults them in again (kernel time a step and rank:
/// docs/performance.md). Served from the heap instead, the pages stay mapped and are reused.
void keep_freed_memory() {
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);  // glibc's ceiling for this setting on 64-bit hosts
    mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
}

}  // namespace

int main(int argc, char** argv) {
    epochcast::supervise_this_rank();  // a rank under `epochcast run`: named if a signal kills it
    epochcast::TrainOptions options;
    std::string precision = "fp32";
    bool describe_host = false;
    bool allreduce_sweep = false;
    epochcast::SweepOptions sweep;
    CLI::App app{"epochcast-train: real data-parallel ResNet training (started by mpirun or `epochcast run`)"};
    app.add_option("--backend", options.backend, "cpu (oneDNN) or cuda (cuDNN + NCCL)")->capture_default_str();
    app.add_option("--model", options.model, "resnet18|resnet34|resnet50|resnet101|resnet152")->capture_default_str();
    app.add_option("--image-size", options.image_size, "input side in pixels (>= 32)")->capture_default_str();
    int classes = 0;
    CLI::Option* classes_option =
        app.add_option("--classes", classes,
                       "classes, 1 to 1,000,000 (default 1000 for synthetic data, the folder's count otherwise)");
    app.add_option("--batch-per-gpu", options.batch_per_gpu, "images per step per worker")->capture_default_str();
    app.add_option("--precision", precision, "fp32, bf16 (CPU mixed precision) or fp16 (GPU mixed precision)")
        ->capture_default_str();
    app.add_option("--threads", options.threads, "compute threads per rank, at most 4 per core of the host")
        ->capture_default_str();
    std::string steps, stop_after, seed;
    CLI::Option* steps_option = app.add_option("--steps", steps, "steps to run in all, 1 to 10^12");
    app.add_option("--epochs", options.epochs, "epochs to run in all (when --steps is not given)");
    app.add_option("--data", options.data, "synthetic, or an image folder with one subfolder per class")
        ->capture_default_str();
    app.add_option("--synthetic-images", options.synthetic_images, "epoch length of synthetic data")
        ->capture_default_str();
    CLI::Option* lr =
        app.add_option("--lr", options.lr,
                       "per-worker learning rate before linear scaling (default 0.1 x batch / 256); a positive number");
    app.add_option("--warmup-epochs", options.warmup_epochs, "epochs of linear warm-up")->capture_default_str();
    app.add_option("--checkpoint-dir", options.checkpoint_dir, "folder for the checkpoint");
    app.add_option("--checkpoint-every", options.checkpoint_every, "steps between checkpoints (and one at the end)");
    app.add_flag("--resume", options.resume, "continue from the checkpoint in --checkpoint-dir");
    CLI::Option* stop_after_option = app.add_option(
        "--stop-after", stop_after,
        "stop after this many steps, 1 or more (checkpointed); the schedule still plans for the whole run");
    app.add_option("--trace-out", options.trace_out, "write the measured run as an epochcast.trace/1 file");
    app.add_option("--ps-ranks", options.ps_ranks, "parameter servers (the last ranks); 0 for all-reduce")
        ->capture_default_str();
    CLI::Option* seed_option = app.add_option("--seed", seed, "seed of weights and data, 0 to 2^64 - 1 (default 1)");
    app.add_option(
           "--data-threads", options.data_threads,
           "decode threads per rank, at most 4 per core of the host (unused with --backend cuda --data synthetic: the "
           "GPU makes the batches)")
        ->capture_default_str();
    app.add_option("--fusion-mib", options.fusion_mib, "all-reduce bucket threshold in MiB")->capture_default_str();
    app.add_option("--allreduce", options.allreduce,
                   "CPU all-reduce: ring (our reduce-scatter + all-gather) or mpi (MPI_Iallreduce)")
        ->capture_default_str();
    std::string instance;
    CLI::Option* instance_option =
        app.add_option("--instance", instance,
                       "the trace's instance (and ps_instance): a catalog name, 1-100 printable characters without "
                       "spaces (default local-cpu, or local-gpu with --backend cuda)");
    CLI::Option* describe_flag =
        app.add_flag("--describe-host", describe_host,
                     "print the local-cpu catalog entry measured on this host (under mpirun: on every rank's node) and "
                     "exit");
    CLI::Option* sweep_flag =
        app.add_flag("--allreduce-sweep", allreduce_sweep,
                     "measure the all-reduce across every rank (--backend's, --allreduce's), print nccl-tests' "
                     "all_reduce_perf table and exit; no training")
            ->excludes(describe_flag);
    app.add_option("--sweep-min-bytes", sweep.min_bytes, "--allreduce-sweep's first message size, a multiple of 4")
        ->capture_default_str()
        ->needs(sweep_flag);
    app.add_option("--sweep-max-bytes", sweep.max_bytes,
                   "--allreduce-sweep's last message size (sizes double from the first), at most 4 GiB")
        ->capture_default_str()
        ->needs(sweep_flag);
    app.add_option("--sweep-iterations", sweep.iterations,
                   "--allreduce-sweep's timed all-reduces per size (after 5 warm-up ones)")
        ->capture_default_str()
        ->needs(sweep_flag);
    try {
        app.parse(argc, argv);
        options.precision = epochcast::parse_precision(precision, "--precision");
        if (instance_option->count() > 0) options.instance = instance;
        if (classes_option->count() > 0) options.classes = classes;
        if (lr->count() > 0 && !(options.lr > 0 && std::isfinite(options.lr))) {
            throw epochcast::InputError(
                "--lr must be a positive finite number (omit it for the default 0.1 x batch / 256)");
        }
        // The weights are fp32: a rate below its smallest normal number updates nothing.
        if (lr->count() > 0 && !(options.lr >= static_cast<double>(std::numeric_limits<float>::min()))) {
            throw epochcast::InputError(
                "--lr " + epochcast::shortest(options.lr) +
                " is below fp32's smallest normal number (1.2e-38): the weights would not move");
        }
        if (steps_option->count() > 0) {
            options.steps =
                static_cast<std::int64_t>(epochcast::parse_whole_number(steps, "--steps", 1, epochcast::kMaxSteps));
        }
        if (stop_after_option->count() > 0) {
            options.stop_after = static_cast<std::int64_t>(
                epochcast::parse_whole_number(stop_after, "--stop-after", 1, epochcast::kMaxSteps));
        }
        if (seed_option->count() > 0) {
            options.seed = epochcast::parse_whole_number(seed, "--seed", 0, std::numeric_limits<std::uint64_t>::max());
        }
        if (allreduce_sweep) {
            sweep.backend = options.backend;
            sweep.allreduce = options.allreduce;
            epochcast::validate(sweep);
        }
    } catch (const CLI::ParseError& error) {
        if (error.get_exit_code() == 0) {
            return app.exit(error);
        }
        return fail(2, "error: ", error.what());
    } catch (const epochcast::InputError& error) {
        return fail(2, "error: ", error.what());
    }

    try {
        if (describe_host) {
            const epochcast::HostCapacity host = epochcast::this_host_capacity();
            epochcast::check_threads("--threads", options.threads, &host);
            keep_freed_memory();
            if (!epochcast::started_by_launcher()) {
                std::cout << epochcast::describe_host_catalog(options.threads).dump(1) << std::endl;
                return 0;
            }
            // Started by mpirun or srun (`epochcast run` does so with the ranks the hosts hold): measure
            // their all-reduce, and the peaks with every rank busy at once.
            MPI_Init(&argc, &argv);
            const nlohmann::json catalog = epochcast::describe_job_catalog(options.threads, options.fusion_mib);
            if (!catalog.is_null()) std::cout << catalog.dump(1) << std::endl;
            MPI_Finalize();
            return 0;
        }
        keep_freed_memory();
        MPI_Init(&argc, &argv);
        if (allreduce_sweep) {  // no progress reports: the watchdog watches training steps
            epochcast::run_allreduce_sweep(sweep);
            MPI_Finalize();
            return 0;
        }
        epochcast::run_training(options);
        MPI_Finalize();
        return 0;
    } catch (const epochcast::InputError& error) {
        return fail(2, "error: ", error.what());
    } catch (const std::exception& error) {
        return fail(1, "failed: ", error.what());
    }
}
