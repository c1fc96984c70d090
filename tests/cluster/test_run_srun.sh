#!/usr/bin/env bash
# `epochcast run --launcher srun` against a real Slurm on the local cluster (cluster.sh --slurm):
# test_run_hosts.sh's small CPU run (ResNet-18 at 32 px, one rank per node) inside an salloc
# allocation of two nodes that leaves out the host it is typed on (every rank on another host),
# then inside an sbatch job of all three (the batch script on the first node, a rank there too).
# The hosts are checked through srun, the all-reduce sweep and the training cross between them,
# each node is measured, and the trace records the srun line, the layout and each node; every PMIx
# fence of those steps, MPI_Init's barrier among them, runs as a ring through the nodes. Then a
# job step Slurm refuses (4 ranks on nodes of 2 CPUs): one line naming it, exit 2, no process, job
# or run folder left. Then a launch file from `predict --emit sbatch`, checked by sbatch --test-only
# and run. Last, `epochcast sweep` under srun shares its rows between the tasks.
# Figures are printed, never asserted: the machine is shared and busy.
source "$(dirname "$0")/lib.sh"
[ ${#cluster_hosts[@]} -ge 3 ] || fail "needs 3 hosts (cluster.sh -n 3 --slurm)"
[ -n "${SLURM_CONF:-}" ] || fail "needs Slurm (cluster.sh --slurm)"

run_flags=("${small_run[@]}" --steps 4 --network-test-max-mib 1)
srun_line() { echo "srun --nodes=$1 --ntasks=$1 --ntasks-per-node=1 --kill-on-bad-exit=1 --cpus-per-task=1"; }

# expect_ring_fences WHAT: every PMIx fence of the job steps so far ran as a ring through the
# nodes, MPI_Init's barrier (a fence without data) among them, as each node's slurmstepd logs it
# (SlurmdDebug=debug). Left to Slurm 22.05, that barrier is a tree that, with TreeWidth above the
# step's node count, completes on each node alone (docs/cli.md, "MPI_Init under srun").
expect_ring_fences() {
    local logs=("$EC_CLUSTER_DIR"/log/slurmd-debug_*.log) trees barriers
    trees=$(cat "${logs[@]}" | grep -c 'pmixp_coll_contrib_local: .*COLL_FENCE_TREE')
    barriers=$(cat "${logs[@]}" | grep -c 'pmixp_coll_contrib_local: .*COLL_FENCE_RING seq=[0-9]*, size=0$')
    [ "$trees" -eq 0 ] || fail "$1: $trees PMIx fences ran as a tree: $(cat "${logs[@]}" | grep -m 3 COLL_FENCE_TREE)"
    [ "$barriers" -gt 0 ] || fail "$1: no PMIx fence without data ran as a ring (${#logs[@]} logs)"
    echo "$1: every PMIx fence a ring, $barriers barriers"
}

# Nothing of the job is left: no job in Slurm's queue (up to 120 s for it to complete), no process.
no_job_left() {
    local deadline=$((SECONDS + 120)) jobs=""
    while :; do
        jobs=$(on "$head_host" squeue -h -o '%i %T %R' 2>&1)
        [ -z "$jobs" ] && break
        [ "$SECONDS" -lt "$deadline" ] || fail "jobs left in Slurm's queue: $jobs"
        sleep 0.5
    done
    no_process_left
}

# Inside salloc, on two nodes other than the one it is typed on.
on "$head_host" salloc -N 2 -n 2 --exclude="$head_host" \
    sh -c 'scontrol show hostnames "$SLURM_JOB_NODELIST" >salloc.nodes && exec "$@"' sh \
    "$epochcast" run --launcher srun "${run_flags[@]}" --trace-out "$PWD/salloc.json" >salloc.out 2>&1 ||
    fail "run under salloc exited $?:
$(tail -n 30 salloc.out)"
mapfile -t nodes <salloc.nodes
[ ${#nodes[@]} -eq 2 ] || fail "salloc allocated '${nodes[*]}', not 2 nodes"
case " ${nodes[*]} " in *" $head_host "*) fail "salloc allocated $head_host, which --exclude left out" ;; esac
expect_run_across salloc.out srun "$(srun_line 2)" "${nodes[@]}"
read -r predicted measured error < <(throughput_row salloc.out)
echo "salloc, 2 nodes (${nodes[*]}, 1 rank each, epochcast on $head_host): measured $measured img/s," \
    "predicted $predicted img/s by the built-in calibration ($error %)"
no_job_left

# An sbatch script: it runs on the allocation's first node, which holds rank 0.
cat >sbatch-job.sh <<EOF
#!/bin/sh
scontrol show hostnames "\$SLURM_JOB_NODELIST" >sbatch.nodes
exec '$epochcast' run --launcher srun ${run_flags[*]} --trace-out '$PWD/sbatch.json'
EOF
on "$head_host" sbatch --wait -N 3 -n 3 --output="$PWD/sbatch.out" sbatch-job.sh >sbatch.submitted 2>&1 ||
    fail "the sbatch job exited $?: $(cat sbatch.submitted)
$(tail -n 30 sbatch.out)"
mapfile -t nodes <sbatch.nodes
[ ${#nodes[@]} -eq 3 ] || fail "sbatch allocated '${nodes[*]}', not 3 nodes"
expect_run_across sbatch.out srun "$(srun_line 3)" "${nodes[@]}"
expect_in sbatch.out "epochcast run: checking the 3 nodes of Slurm job "
read -r predicted measured error < <(throughput_row sbatch.out)
echo "sbatch, 3 nodes (${nodes[*]}, 1 rank each): measured $measured img/s, predicted $predicted img/s" \
    "by the built-in calibration ($error %)"
no_job_left
expect_ring_fences "run under salloc and sbatch"

# A launch file (issue 61): `predict --emit sbatch` for the three hosts as the catalog has them
# (epochcast-train --describe-host), accepted by Slurm's own check (sbatch --test-only), then run
# for real with `epochcast run` as its training command; the trace the job writes goes back through
# `epochcast calibrate`, the check the file's comments give.
on "$head_host" "$build/epochcast-train" --describe-host --threads 1 >host.json 2>describe.err ||
    fail "describe-host exited $?: $(cat describe.err)"
train_cmd="'$epochcast' run {launcher} --model {model} --image-size {image_size} --batch-per-gpu {batch}"
train_cmd+=" --precision {precision} --threads 1 --steps 4 --network-test-max-mib 1"
train_cmd+=" --host-catalog '$PWD/host.json' --trace-out '$PWD/emitted.json'"
"$epochcast" predict --catalog host.json --instance local-cpu --nodes 3 --framework epochcast --model resnet18 \
    --image-size 32 --batch-per-gpu 4 --precision fp32 --epochs 1 --emit sbatch -o emitted.sh \
    --train-cmd "$train_cmd" >emit.out 2>&1 || fail "predict --emit sbatch exited $?: $(cat emit.out)"
expect_in emitted.sh "#SBATCH --nodes=3"
expect_in emitted.sh "epochcast predict --instance local-cpu --nodes 3"
on "$head_host" sbatch --test-only emitted.sh >test-only.out 2>&1 ||
    fail "sbatch --test-only refused the launch file ($?): $(cat test-only.out)"
expect_in test-only.out "to start at"
on "$head_host" sbatch --wait emitted.sh >emitted.submitted 2>&1 ||
    fail "the emitted job exited $?: $(cat emitted.submitted) $(tail -n 30 epochcast-*.out 2>/dev/null)"
[ -s emitted.json ] || fail "the emitted job wrote no trace: $(tail -n 30 epochcast-*.out)"
"$epochcast" calibrate emitted.json --catalog host.json -o emitted-calibration.json >calibrate.out 2>&1 ||
    fail "calibrate of the emitted job's trace exited $?: $(cat calibrate.out)"
echo "predict --emit sbatch: $(tr -d '\n' <test-only.out | cut -c1-100); the job ran on 3 nodes and its" \
    "trace calibrates ($(grep -c . calibrate.out) lines)"
no_job_left

# The launch files for today's GPU clusters, each accepted by Slurm's own check: the test cluster's
# nodes declare 8 GPUs each (tests/cluster/slurm.sh), so a script's --gpus-per-node=8 is a request
# Slurm can place; --test-only schedules it without running it.
for instance in p5.48xlarge a3-highgpu-8g Standard_ND96isr_H100_v5; do
    "$epochcast" predict --instance "$instance" --nodes 2 --emit sbatch -o "gpu-$instance.sbatch" >gpu-emit.out 2>&1 ||
        fail "predict --emit sbatch for $instance exited $?: $(cat gpu-emit.out)"
    expect_in "gpu-$instance.sbatch" "#SBATCH --gpus-per-node=8"
    on "$head_host" sbatch --test-only "gpu-$instance.sbatch" >gpu-test-only.out 2>&1 ||
        fail "sbatch --test-only refused the $instance launch file ($?): $(cat gpu-test-only.out)"
    expect_in gpu-test-only.out "to start at"
done
echo "predict --emit sbatch for 2 x p5.48xlarge, a3-highgpu-8g and Standard_ND96isr_H100_v5: each accepted" \
    "by sbatch --test-only"
no_job_left

# A step the allocation cannot hold: 8 ranks, 4 on each node of 2 CPUs. Slurm refuses it, and
# `run` names the refusal in one line, exit 2, before any rank starts.
on "$head_host" salloc -N 2 -n 2 --exclude="$head_host" \
    "$epochcast" run --launcher srun --np 8 "${run_flags[@]}" >refused.out 2>&1
code=$?
[ "$code" -eq 2 ] || fail "a step Slurm refuses: exit $code, not 2: $(tail -n 20 refused.out)"
[ "$(grep -c '^epochcast: ' refused.out)" -eq 1 ] || fail "not one line of epochcast's: $(cat refused.out)"
expect_in refused.out "epochcast: error: Slurm refused the all-reduce sweep's job step: Unable to create step for job"
expect_in refused.out "(srun --nodes=2 --ntasks=8 --ntasks-per-node=4 --cpus-per-task=1 asks for more than the allocation holds"
grep -q "epochcast-train: resnet18" refused.out && fail "the ranks started: $(cat refused.out)"
echo "a step Slurm refuses, exit $code: $(grep '^epochcast: ' refused.out)"
no_job_left
left=$(find . -maxdepth 1 -name 'epochcast-run-*')
[ -z "$left" ] || fail "run folders left: $left"

# `epochcast sweep` under srun: the two tasks share the rows (PMIx's ranks), rank 0 writes them all.
echo '{"instance": ["p3.16xlarge", "p4d.24xlarge"], "nodes": [1, 2, 4, 8, 16]}' >spec.json
"$epochcast" sweep spec.json -o one.csv >sweep-one.out 2>&1 || fail "sweep exited $?: $(cat sweep-one.out)"
on "$head_host" env SLURM_PMIX_FENCE=ring salloc -N 2 -n 2 srun "$epochcast" sweep spec.json -o two.csv \
    >sweep-two.out 2>&1 ||
    fail "sweep under srun exited $?: $(tail -n 20 sweep-two.out)"
expect_in sweep-two.out "over 2 ranks"
cmp -s one.csv two.csv || fail "the rows under srun differ from one process's: $(diff one.csv two.csv | head -n 5)"
echo "sweep under srun: $(grep -c . two.csv) lines over 2 ranks, as one process writes them"
no_job_left
expect_ring_fences "sweep under srun"
