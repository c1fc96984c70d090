#!/usr/bin/env bash
# The torchrun lines `predict --emit torchrun` and `--emit sbatch` write for today's GPU clusters,
# read by torchrun's own argument parser (below), then started for real on this machine: the file
# for 2 x p3.2xlarge (one GPU, so one process, a node) run twice, NODE_RANK=0 and NODE_RANK=1, both
# with HEAD=127.0.0.1, so that two torchrun agents meet by their static rendezvous at node 0's port
# and their two processes train tests/cli/torchrun_train.py together over gloo (PyTorch on the
# CPU: Debian's python3-torch, which scripts/setup installs). The training checks that the ranks
# agree after DDP's all-reduce; node 0's output, as torchvision's train.py prints it, then goes
# through the header's own `epochcast import-log` line and the trace through its `calibrate` line.
#
# p3.2xlarge is AWS's with TCP between its nodes: the file exports no fabric variables (EFA's
# FI_PROVIDER and the rest are NCCL's business and have no place on a CPU-only localhost run).
# Both "nodes" are this machine, so gloo is told to use the loopback interface (GLOO_SOCKET_IFNAME),
# whatever the machine's hostname resolves to. The file's fixed port 29500 is changed to a free one
# so that the test cannot meet another program's (or another build's run of it) there.
#
# Run as: torchrun_lines.sh EPOCHCAST [PYTHON] (tests/CMakeLists.txt); PYTHON (default
# /usr/bin/python3) is the interpreter with torch. Exits 0 when both nodes train and the log
# imports, 77 (saying so) where PYTHON has no torch.distributed with gloo, 1 otherwise.
set -euo pipefail

epochcast=$(realpath "${1:?usage: torchrun_lines.sh EPOCHCAST [PYTHON]}")
python=${2:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
images=1600  # an epoch's images over both ranks: 100 steps of 8 x 2, --dataset-images below too

if ! "$python" -c 'import sys, torch.distributed.run, torch.distributed as d
sys.exit(not d.is_gloo_available())' 2>/dev/null; then
  echo "skipped: $python cannot import torch with gloo (scripts/setup installs Debian's python3-torch)"
  exit 77
fi

work=$(mktemp -d)
pids=()
cleanup() {
  # Each node was started in a session of its own: its torchrun and the workers it started go.
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  sleep 0.2
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/node*.log; do
    [ -f "$f" ] && { echo "--- $f" >&2; tail -n 40 "$f" >&2; }
  done
  exit 1
}

# torchrun runs the script with the interpreter torchrun itself runs in: the torchrun installed
# beside PYTHON (Debian's /usr/bin/torchrun), else PYTHON's torch.distributed.run, which is what the
# torchrun console script starts.
mkdir "$work/bin"
if [ -x "$(dirname "$python")/torchrun" ]; then
  ln -s "$(dirname "$python")/torchrun" "$work/bin/torchrun"
else
  printf '#!/bin/sh\nexec %q -m torch.distributed.run "$@"\n' "$python" >"$work/bin/torchrun"
  chmod +x "$work/bin/torchrun"
fi
export PATH="$work/bin:$PATH"
# torch 1.13's torchrun under Python 3.11 (Debian 12's pair) reads its default --redirects and --tee,
# "0", as None (3.11's IntFlag leaves NONE out of iteration; PyTorch 2.0 fixed it) and stops before
# starting a process. A mapping for a local rank there is none of, given the way torchrun reads its
# flags from the environment (PET_<FLAG>), is the same "redirect nothing" without touching the file.
if "$python" -c 'import sys
from torch.distributed.elastic.multiprocessing.api import Std
sys.exit(Std.from_str("0") is not None)'; then
  export PET_REDIRECTS=9:0 PET_TEE=9:0
fi

# The torchrun lines of today's GPU clusters, 2 x p5.48xlarge, a3-highgpu-8g and
# Standard_ND96isr_H100_v5 with their fabrics' variables and the default train.py command, each
# node's line of the torchrun file and the batch script's srun line, given to torchrun's own
# argument parser and launch configuration (torch.distributed.run's, as torchrun reads them before it
# starts the processes; 8 a node cannot start on this machine). The batch script runs with stand-ins
# for srun (its own flags dropped) and scontrol (two hosts). torchrun runs the script with Python's -u:
# the script and its first argument follow it.
mkdir "$work/check" "$work/check/bin"
cat >"$work/check/bin/torchrun" <<EOF_TORCHRUN
#!/bin/sh
OMP_NUM_THREADS=1 exec $(printf %q "$python") -c 'import sys
from torch.distributed.run import config_from_args, get_args_parser
config, program, arguments = config_from_args(get_args_parser().parse_args(sys.argv[1:]))
print("torchrun: nodes %d, %d a node, rendezvous %s at %s, %s" % (config.max_nodes, config.nproc_per_node,
      config.rdzv_backend, config.rdzv_endpoint, " ".join(arguments[1:3])))' "\$@"
EOF_TORCHRUN
printf '#!/bin/sh\nwhile [ "${1#--}" != "$1" ]; do shift; done\nexec "$@"\n' >"$work/check/bin/srun"
printf '#!/bin/sh\nprintf "%%s\\n" ec-a ec-b\n' >"$work/check/bin/scontrol"
chmod +x "$work/check/bin/"*
for instance in p5.48xlarge a3-highgpu-8g Standard_ND96isr_H100_v5; do
  for format in torchrun sbatch; do
    "$epochcast" predict --instance "$instance" --nodes 2 --emit "$format" -o "$work/check/$instance.$format" \
      >/dev/null || fail "predict --instance $instance --emit $format: exit $?"
  done
  for node in 0 1; do
    out=$(cd "$work/check" && PATH="$work/check/bin:$PATH" HEAD=10.0.0.1 NODE_RANK=$node DATA=/data \
      bash "$instance.torchrun" 2>&1) || fail "$instance's torchrun line for node $node: $out"
    [ "$out" = "torchrun: nodes 2, 8 a node, rendezvous static at 10.0.0.1:29500, train.py --model" ] ||
      fail "$instance's torchrun line for node $node reads as: $out"
  done
  out=$(cd "$work/check" && PATH="$work/check/bin:$PATH" SLURM_JOB_NODELIST="ec-[a-b]" SLURM_JOB_NUM_NODES=2 \
    SLURM_JOB_ID=7 DATA=/data bash "$instance.sbatch" 2>&1) || fail "$instance's batch script: $out"
  [ "$out" = "torchrun: nodes 2, 8 a node, rendezvous c10d at ec-a:29500, train.py --model" ] ||
    fail "$instance's batch script's torchrun reads as: $out"
done
echo "torchrun's own parser takes the lines for 2 x p5.48xlarge, a3-highgpu-8g and Standard_ND96isr_H100_v5"

# Under torchrun the command is the script and its arguments: torchrun starts it with its Python.
command="$(printf %q "$here/torchrun_train.py") --data {data} --image-size {image_size}"
command+=" --batch-size {batch} --epochs {epochs} --lr {lr} --images $images"
"$epochcast" predict --instance p3.2xlarge --nodes 2 --batch-per-gpu 8 --image-size 32 \
  --dataset-images "$images" --epochs 1 --emit torchrun -o "$work/job.sh" --train-cmd "$command" \
  >"$work/predict.out" || fail "predict --emit torchrun: exit $?"

job=$work/job.sh
for node in 0 1; do
  line="^  $node\) torchrun --nnodes=2 --node[-_]rank=$node --nproc[-_]per[-_]node=1"
  line+=" --master[-_]addr=\"\\\$HEAD\" --master[-_]port=29500 "
  grep -Eq "$line" "$job" || fail "no torchrun line for node $node in the file"
done
if grep -v '^export DATA$' "$job" | grep -q '^export '; then fail "the file exports a fabric's variables"; fi
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -Ei "s/(--master[-_]port)=29500 /\1=$port /" "$job"

mkdir "$work/data"
for node in 0 1; do
  mkdir "$work/node$node"  # each node its own working folder, as on two machines
  (cd "$work/node$node" &&
    HEAD=127.0.0.1 NODE_RANK=$node DATA="$work/data" GLOO_SOCKET_IFNAME=lo OMP_NUM_THREADS=1 \
      exec setsid bash "$job" >"$work/node$node.log" 2>&1) &
  pids+=($!)
done

# Generous: on two busy cores the four Python processes take their time importing torch. A node
# that fails leaves the other waiting for it (torchrun's rendezvous): the test stops there.
deadline=$((SECONDS + 240))
status=("" "")
while [ -z "${status[0]}" ] || [ -z "${status[1]}" ]; do
  for i in 0 1; do
    if [ -z "${status[$i]}" ] && ! kill -0 "${pids[$i]}" 2>/dev/null; then
      rc=0
      wait "${pids[$i]}" || rc=$?
      status[i]=$rc
    fi
  done
  if [ "${status[0]:-0}" != 0 ] || [ "${status[1]:-0}" != 0 ]; then break; fi
  ((SECONDS < deadline)) || fail "the nodes still run after 240 s (exits so far: '${status[0]}' '${status[1]}')"
  sleep 0.5
done
if [ "${status[0]}" != 0 ] || [ "${status[1]}" != 0 ]; then
  if grep -q "torchrun: error: unrecognized arguments" "$work"/node*.log; then
    fail "node exits ${status[*]}: torch $("$python" -c 'import torch; print(torch.__version__)')'s torchrun" \
      "does not know the file's flags (before torch 2.0 it knows only --node_rank, --nproc_per_node," \
      "--master_addr and --master_port, which every later version knows too)"
  fi
  fail "node exits ${status[*]} (want 0 0)"
fi

log=$work/node0.log
grep -q "^Namespace(.*batch_size=8, .*world_size=2" "$log" ||
  fail "no Namespace line with batch_size=8 and world_size=2"
steps=$(grep -c "^Epoch: \[0\]  \[ *[0-9]*/100\]  eta: .*  time: [0-9.]*  data: " "$log" || true)
[ "$steps" = 11 ] || fail "$steps step lines of 100 steps in node 0's log (want 11: steps 0, 10, ..., 90, 99)"
grep -q "^Epoch: \[0\] Total time: " "$log" || fail "no epoch's total time"
grep -q "^rank 0 of 2 .*agree" "$log" || fail "rank 0 did not say that the ranks agree"
grep -q "^rank 1 of 2 .*agree" "$work/node1.log" || fail "rank 1 (node 1) did not say that the ranks agree"
if grep -q "^Epoch: " "$work/node1.log"; then fail "node 1 printed step lines: rank 0 alone prints them"; fi
echo "2 nodes x 1 process trained together; node 0 printed $steps step lines of a world of 2"

# The header's own check commands, as written there: LOG is node 0's output.
import_line=$(sed -n 's/^#   epochcast \(import-log LOG .*\)$/\1/p' "$job")
calibrate_line=$(sed -n 's/^#   epochcast \(calibrate .*\)$/\1/p' "$job")
if [ -z "$import_line" ] || [ -z "$calibrate_line" ]; then fail "no import-log or calibrate line in the header"; fi
cd "$work"
rc=0
# shellcheck disable=SC2086  # the header's flags, split as its reader's shell would
"$epochcast" ${import_line/LOG/node0.log} >import.out 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat import.out >&2; fail "import-log: exit $rc"; }
[ -s run-trace.json ] || fail "import-log wrote no run-trace.json"
# shellcheck disable=SC2086
"$epochcast" $calibrate_line >calibrate.out 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat calibrate.out >&2; fail "calibrate: exit $rc"; }
[ -s calibration.json ] || fail "calibrate wrote no calibration.json"
cat import.out
echo "import-log read node 0's log into run-trace.json; calibrate read it into calibration.json"
