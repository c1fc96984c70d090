#!/usr/bin/env bash
# ctest's GpuBundle.CleanEnvironment (issue 40): the GPU bundle made from this build folder's
# programs (bench/gpu-bundle --from-build, into a temporary folder, no archive) passes
# bench/gpu-bundle-check --quick: only its own folder supplies libraries, the launcher names the
# missing NVIDIA libraries, predict, mpirun and run work, the CUDA tests skip. Then
# bench/gpu-check.sh --bundle on it stops at the driver check (no GPU here) with one line on
# stderr after the unpack's, exit 1, and a partial summary naming the driver's problem.
#
#   tests/bench/gpu_bundle.sh BUILD_DIR
#
# Exit 77 (ctest: skipped), with one line, where the bundle cannot be made: no patchelf (run
# scripts/setup --no-build). Leaves nothing behind: the temporary folder goes at exit.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -eq 1 ] && [ -f "$1/CMakeCache.txt" ] || { echo "usage: tests/bench/gpu_bundle.sh BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
if ! command -v patchelf >/dev/null; then
  echo "skipped: patchelf is not installed (scripts/setup --no-build installs it)"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$repo/bench/gpu-bundle" --from-build "$build" --folder "$tmp/epochcast-gpu" --no-archive --check quick

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_bundle.sh: a GPU is visible here, so bench/gpu-check.sh would not stop at the driver check: not tried"
  exit 0
fi
rc=0
env PATH=/usr/bin:/bin "$repo/bench/gpu-check.sh" --bundle "$tmp/epochcast-gpu" --out "$tmp/results" 2>"$tmp/err" || rc=$?
cat "$tmp/err"
[ "$rc" -eq 1 ] || { echo "gpu-check.sh without a GPU: exit $rc, not 1" >&2; exit 1; }
[ "$(wc -l <"$tmp/err")" -eq 2 ] && grep -q "^gpu-check: unpack: " "$tmp/err" &&
  grep -q "^gpu-check: stopped at the driver check: no NVIDIA driver" "$tmp/err" ||
  { echo "gpu-check.sh without a GPU: not the unpack's line and one line naming the driver" >&2; exit 1; }
grep -q "^driver: no NVIDIA driver: nvidia-smi is not on PATH" "$tmp/results/summary.txt" &&
  grep -q "^CUDA tests: not run" "$tmp/results/summary.txt" && [ "$(wc -l <"$tmp/results/steps.log")" -eq 2 ] ||
  { echo "gpu-check.sh without a GPU: the partial summary is not the driver's" >&2; cat "$tmp/results/summary.txt" >&2; exit 1; }
echo "gpu_bundle.sh: gpu-check.sh stops at the driver check with one line and a partial summary"
