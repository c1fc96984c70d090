#!/usr/bin/env bash
# Where the CUDA backend's step time goes, and what each implementation choice changes (issue 41):
# on a GPU machine, from the bundle bench/gpu-bundle made (docs/performance.md, "Training on a GPU").
#
#   bench/gpu-profile.sh --bundle PATH [--out DIR] [--batch N] [--steps N]
#
# For each pair of EPOCHCAST_CUDNN_ALGO (find, heuristic) and EPOCHCAST_CUDNN_BATCHNORM (persistent,
# spatial) (executor/cuda/layers.hpp): the fp16-against-fp32 step test, then ResNet-50 224 px fp16
# at --batch (default 256) for --steps (default 12) with EPOCHCAST_CUDA_PROFILE=1, which prints the
# GPU time of every layer's calls and their sums by kind (executor/cuda/network.cpp, StepProfile).
# Writes DIR/profiles.txt (default $OUT, else build-gpu-profile), rewritten after each run.
set -euo pipefail
usage() { echo "gpu-profile: $*" >&2; exit 2; }
bundle_path="" out=${OUT:-build-gpu-profile} batch=256 steps=12
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle | --out | --batch | --steps)
      [ $# -ge 2 ] && [ -n "$2" ] || usage "$1 needs a value"
      case "$1" in --bundle) bundle_path=$2 ;; --out) out=$2 ;; --batch) batch=$2 ;; --steps) steps=$2 ;; esac
      shift 2 ;;
    *) usage "unknown argument '$1' (see the comment at the top of bench/gpu-profile.sh)" ;;
  esac
done
[ -e "$bundle_path" ] || usage "--bundle PATH is required and must exist"
[[ $batch =~ ^[0-9]+$ && $steps =~ ^[0-9]+$ ]] || usage "--batch and --steps are whole numbers"
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-profile.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -d "$bundle_path" ]; then
  bundle=$(cd "$bundle_path" && pwd)
else
  tar -xf "$bundle_path" -C "$work" || python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$bundle_path" "$work"
  bundle=$(find "$work" -maxdepth 2 -name launch -printf '%h\n' | head -1)
fi
[ -x "$bundle/launch" ] || usage "$bundle_path holds no bundle"
report=$out/profiles.txt
: >"$report"
for algo in find heuristic; do
  for norm in persistent spatial; do
    export EPOCHCAST_CUDNN_ALGO=$algo EPOCHCAST_CUDNN_BATCHNORM=$norm
    {
      echo "=== algo=$algo batchnorm=$norm"
      timeout -k 5 60 "$bundle/launch" executor_tests --gtest_filter='CudaNetwork.OneFp16*' 2>&1 |
        grep -E 'Failure|Expected|actual|layer|conv|\[ *(OK|FAILED) *\]' | head -8 || true
      start=$(date +%s.%N)
      rc=0
      EPOCHCAST_CUDA_PROFILE=1 timeout -k 5 90 "$bundle/launch" epochcast-train --backend cuda --model resnet50 \
        --image-size 224 --batch-per-gpu "$batch" --precision fp16 --steps "$steps" --data synthetic \
        >"$work/run.log" 2>&1 || rc=$?
      echo "exit $rc after $(python3 -c "import time, sys; print(round(time.time() - float(sys.argv[1]), 1))" "$start") s"
      grep -E '^epochcast-train: resnet|failed|error' "$work/run.log" | head -3 || true
      awk '/^ *[0-9]+ +[0-9.]+ +[0-9.]+/ { last = $0 } END { print "last step: " last }' "$work/run.log"
      grep '^cuda profile' "$work/run.log" | head -45 || true
    } >>"$report" 2>&1
  done
done
unset EPOCHCAST_CUDNN_ALGO EPOCHCAST_CUDNN_BATCHNORM
cat "$report"
