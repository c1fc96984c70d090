#!/usr/bin/env bash
# The CUDA backend on a machine with a GPU (issue 6): build, run the GPU tests, then a ResNet-50
# training throughput benchmark (batch 256, fp16, one GPU) of epochcast-train and of PyTorch AMP
# with channels_last in the same run, and print a table. Figures go to docs/performance.md.
#
#   bench/gpu-check.sh [OUTDIR]      (OUTDIR defaults to $OUT, else build-gpu/results)
#
# Environment: STEPS (timed+untimed steps of each benchmark, default 60), BATCH (default 256),
# JOBS (build parallelism, default nproc), BUILD (build folder, default build-gpu).
#
# The build needs the Debian packages of scripts/setup (oneDNN, Open MPI, Eigen, CLI11, GoogleTest,
# ...). Where they are installed, the build uses them. Where they are not and apt cannot reach a
# mirror (the lent GPU machines have no network), put the .deb files in .deps/ beside this
# repository's root (on a Debian 12 machine with network: `apt-get download` of scripts/setup's
# -dev packages and the libraries they depend on), ignored by git and named in the device tool's
# carry: this script unpacks them into .deps/root and builds against that. Untested so far: no
# GPU was lent to the session that wrote it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${1:-${OUT:-$root/build-gpu/results}}
build=${BUILD:-build-gpu}
steps=${STEPS:-60}
batch=${BATCH:-256}
jobs=${JOBS:-$(nproc)}
mkdir -p "$out"
log() { echo "gpu-check: $*" >&2; }

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  log "no GPU visible (nvidia-smi -L failed): nothing to check here"
  exit 1
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)
log "GPU: $gpu"

# Dependencies unpacked from carried .deb files, if any.
cmake_extra=()
if compgen -G ".deps/*.deb" >/dev/null; then
  mkdir -p .deps/root
  for deb in .deps/*.deb; do dpkg-deb -x "$deb" .deps/root; done
  prefix=$root/.deps/root/usr
  export LD_LIBRARY_PATH="$prefix/lib/x86_64-linux-gnu:$prefix/lib/x86_64-linux-gnu/openmpi/lib:${LD_LIBRARY_PATH:-}"
  export PATH="$prefix/bin:$PATH"
  export OPAL_PREFIX=$prefix  # a relocated Open MPI finds its components through this
  cmake_extra+=(-DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_LIBRARY_PATH="$prefix/lib/x86_64-linux-gnu")
  log "using the Debian packages unpacked from .deps/"
fi

# 1. Build (Release), the CUDA backend required.
configure_start=$(date +%s)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEPOCHCAST_WITH_GUI=OFF -DEPOCHCAST_BUILD_BENCH=OFF \
      "${cmake_extra[@]}" | tee "$out/configure.log" | grep -E "CUDA|executor|error" >&2 || true
if ! grep -q "EPOCHCAST_WITH_CUDA:BOOL=ON" "$build/CMakeCache.txt" 2>/dev/null; then
  log "the CUDA backend was not configured (see $out/configure.log): are the MPI and oneDNN packages there?"
  exit 1
fi
cmake --build "$build" -j"$jobs" --target epochcast epochcast-train executor_tests >"$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log" >&2; exit 1; }
build_s=$(( $(date +%s) - configure_start ))
log "built in ${build_s} s"

# 2. The GPU tests (and the host-side loss scaler), no skips expected here.
tests_status=passed
if ! ctest --test-dir "$build" -R 'Cuda|Gpu|LossScaler' --output-on-failure >"$out/ctest.log" 2>&1; then
  tests_status=FAILED
fi
tests_line=$(grep -E "tests passed|tests failed" "$out/ctest.log" | tail -1 || true)
skipped=$(grep -c "Skipped" "$out/ctest.log" || true)
log "GPU tests: $tests_status ($tests_line; $skipped skipped)"

# 3. ResNet-50, batch $batch, fp16, one GPU: ours.
ours=na
if "$build/epochcast-train" --backend cuda --model resnet50 --image-size 224 --batch-per-gpu "$batch" \
     --precision fp16 --steps "$steps" --data synthetic --data-threads 8 \
     --trace-out "$out/epochcast-resnet50.json" >"$out/epochcast-resnet50.log" 2>&1; then
  ours=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["runs"][0]["measured"]["throughput_images_per_s"],1))' \
         "$out/epochcast-resnet50.json")
  skipped_steps=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["measured"]["skipped_steps"])' \
         "$out/epochcast-resnet50.json")
else
  log "epochcast-train failed:"; tail -20 "$out/epochcast-resnet50.log" >&2
  skipped_steps=na
fi

# 4. The same with PyTorch AMP, channels_last (the machine's python3, which has torch).
torch_ips=na
torch_version=na
if python3 bench/pytorch_resnet50.py --device cuda --precision fp16 --batch "$batch" --image-size 224 \
     --warmup 10 --steps "$((steps - 10))" >"$out/pytorch-resnet50.json" 2>"$out/pytorch-resnet50.log"; then
  torch_ips=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["images_per_s"])' "$out/pytorch-resnet50.json")
  torch_version=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["torch_version"])' "$out/pytorch-resnet50.json")
else
  log "PyTorch benchmark failed:"; tail -20 "$out/pytorch-resnet50.log" >&2
fi

# 5. The table.
{
  echo "GPU: $gpu"
  echo "build: ${build_s} s; GPU tests: $tests_status ($tests_line)"
  printf '%-44s %12s %s\n' "ResNet-50 training, batch $batch, 1 GPU" "images/s" "notes"
  printf '%-44s %12s %s\n' "epochcast-train --backend cuda, fp16" "$ours" "skipped steps: $skipped_steps"
  printf '%-44s %12s %s\n' "PyTorch $torch_version AMP fp16, channels_last" "$torch_ips" "cudnn.benchmark, GradScaler"
  printf '%-44s %12s %s\n' "target (issue 6, one H100)" ">= 3000" "and >= PyTorch AMP"
} | tee "$out/summary.txt"
[ "$tests_status" = passed ]
