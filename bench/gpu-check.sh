#!/usr/bin/env bash
# The GPU check in one call (issues 6, 28 and 40): on a machine with one NVIDIA GPU and no network
# or Debian packages, from the bundle bench/gpu-bundle made, measure the CUDA backend and write each
# step's result as it ends, so that a run cut off still says what it did. How to send it to a lent
# GPU machine, and what each figure means: docs/performance.md, "Training on a GPU".
#
#   bench/gpu-check.sh --bundle PATH [--out DIR] [--steps LIST] [--rehearse]
#   bench/gpu-check.sh --print-test-filter
#
#   --bundle PATH   the archive bench/gpu-bundle wrote (.tar.xz or .tar.gz, unpacked into a
#                   temporary folder) or the bundle's folder
#   --out DIR       the results (default $OUT, else build-gpu-check), rewritten after every step:
#                   summary.txt (the table so far), steps.log (a line per step), results.json (every
#                   figure), logs.tar.gz (each step's output, the traces, the calibration)
#   --steps LIST    some of tests,throughput,compile,sweep,run, comma-separated (default all of them):
#                   to repeat part of the check in a shorter call
#   --rehearse      the script's plumbing on a machine without a GPU: no driver check, the CPU
#                   backend, resnet18 at 32 px, fp32, batches 16 and 32, PyTorch on the CPU (when
#                   importable); its figures are not GPU figures, and the summary says so
#   --print-test-filter   print the gtest filter of the CUDA tests (bench/gpu-bundle-check uses it)
#
# The steps, in this order, within BUDGET_S seconds (default 480) from the start; each has a
# timeout of its own, cut to what the budget leaves after the steps that follow it:
#   unpack, driver (nvidia-smi; the check stops here without a GPU), libraries (launch --check;
#   stops when one is missing), catalog (the GPU's entry: its dense fp16 peak, and the instance for
#   `run`); tests (the CUDA executor tests: layers against the fp64 reference, one step CPU
#   against GPU at fp32, training that learns); throughput (ResNet-50 224 px fp16 training,
#   batch 256, then the largest batch that fits: epochcast-train, then PyTorch AMP channels_last
#   eager); compile (the same two in PyTorch with torch.compile); sweep (NCCL's all-reduce from 8 B
#   to 128 MiB on the GPU); run (epochcast run --backend cuda at batches 128 and 256, calibrate from
#   128, predict 256, the error).
# Exit 0 when every step ran and passed, 1 otherwise; bad arguments or a PATH without a bundle: 2.
set -euo pipefail
usage() { echo "gpu-check: $*" >&2; exit 2; }

# The CUDA tests of executor_tests (and the loss scaler's, on the host).
cuda_tests='*Cuda*:*Gpu*:*cuda_fp*:*Nccl*:LossScaler.*'
# ResNet-50's training FLOPs per image at 224 px: 3 x 2 x 4,089,184,256 multiply-accumulates
# (docs/model.md, "Workload"; tests/model/test_workload.cpp holds the count).
resnet50_gflop=24.54

bundle_path=""
out=${OUT:-build-gpu-check}
steps=tests,throughput,compile,sweep,run
rehearse=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle | --out | --steps)
      [ $# -ge 2 ] && [ -n "$2" ] || usage "$1 needs a value"
      case "$1" in --bundle) bundle_path=$2 ;; --out) out=$2 ;; --steps) steps=$2 ;; esac
      shift 2 ;;
    --rehearse) rehearse=1; shift ;;
    --print-test-filter) echo "$cuda_tests"; exit 0 ;;
    *) usage "unknown argument '$1' (see the comment at the top of bench/gpu-check.sh)" ;;
  esac
done
[ -n "$bundle_path" ] || usage "--bundle PATH is required (bench/gpu-bundle makes the bundle)"
[ -e "$bundle_path" ] || usage "--bundle: '$bundle_path' does not exist"
for step in ${steps//,/ }; do
  case "$step" in tests | throughput | compile | sweep | run) ;; *) usage "--steps: unknown step '$step'" ;; esac
done
budget=${BUDGET_S:-480}
[[ $budget =~ ^[0-9]+$ ]] && [ "$budget" -ge 60 ] || usage "BUDGET_S must be a whole number of seconds, at least 60"
wanted() { [[ ",$steps," == *",$1,"* ]]; }

start=$(date +%s)
deadline=$((start + budget))
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/{summary.txt,steps.log,results.json,logs.tar.gz}
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
mkdir -p "$work/logs"
logs=$work/logs
trap 'rm -rf "$work"' EXIT

declare -A R=()  # every figure and step result, by name (results.json)
R[date]=$(date -u +%Y-%m-%dT%H:%M:%SZ)
R[budget_s]=$budget
R[rehearsal]=$rehearse
# The configuration measured: the real one, or the rehearsal's on the CPU.
if [ "$rehearse" = 1 ]; then
  backend=cpu model=resnet18 image=32 precision=fp32 small=16 big=32 torch_device=cpu
else
  backend=cuda model=resnet50 image=224 precision=fp16 small=128 big=256 torch_device=cuda
fi

log() { echo "gpu-check: $*" >&2; }
remaining() { echo $((deadline - $(date +%s))); }
# timeout_for CAP RESERVE [MIN]: the seconds a step may take: CAP, or less where the budget minus
# what the later steps are expected to need (RESERVE) is less; 0 when under MIN (15) s are left.
timeout_for() {
  local t=$(($(remaining) - $2))
  [ "$t" -lt "$1" ] || t=$1
  [ "$t" -ge "${3:-15}" ] && echo "$t" || echo 0
}
# json FILE EXPRESSION: a value from a JSON file (d), with python3; "?" when it has none.
json() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null || echo "?"; }
# last_words FILE: a program's error message: its last line naming an error, else its last line
# that is not a table row nor one of mpirun's rules.
last_words() { { grep -iE 'error|fail' "$1" || grep -vE '^ *[0-9]|^[- ]*$' "$1" || true; } | tail -1; }
# fraction IMG_PER_S: of the GPU's dense fp16 peak, in percent ("-" without a peak).
fraction() {
  if [ -n "${R[peak_fp16_tflops]:-}" ] && [[ ${1:-} =~ ^[0-9.]+$ ]]; then
    python3 -c "import sys; print(f'{float(sys.argv[1]) * $resnet50_gflop / 1e3 / float(sys.argv[2]) * 100:.1f} %')" \
      "$1" "${R[peak_fp16_tflops]}"
  else
    echo "-"
  fi
}

# The summary, results.json and logs.tar.gz from what is known so far.
publish() {
  {
    if [ "$rehearse" = 1 ]; then
      echo "REHEARSAL on a machine without a GPU: the CPU backend, $model at $image px, $precision; no figure below is a GPU figure."
    fi
    echo "epochcast GPU check, ${R[date]}; budget ${budget} s, $(($(date +%s) - start)) s used"
    echo "bundle: ${R[bundle]:-not unpacked}"
    echo "GPU: ${R[gpu]:-not checked}"
    echo "driver: ${R[driver]:-not checked}"
    echo "libraries: ${R[libraries]:-not checked}"
    echo "catalog: ${R[catalog]:-not read}"
    echo "CUDA tests: ${R[tests]:-not run}"
    echo
    printf '%-48s %6s %9s %9s  %s\n' "$model $image px $precision training, 1 GPU" batch "img/s" "of peak" notes
    local row label
    for row in ours:"epochcast-train --backend $backend" eager:"PyTorch${R[torch_version]:+ ${R[torch_version]}} eager AMP channels_last" \
               compile:"PyTorch${R[torch_version]:+ ${R[torch_version]}} torch.compile AMP channels_last"; do
      label=${row#*:}
      row=${row%%:*}
      for batch in base max; do
        local key=${row}_$batch
        printf '%-48s %6s %9s %9s  %s\n' "$label" "${R[${key}_batch]:--}" "${R[${key}_img_s]:--}" \
          "$(fraction "${R[${key}_img_s]:-}")" "${R[${key}_note]:-not run}"
      done
    done
    echo "largest batch that fits: ${R[largest]:-not searched}"
    echo "of peak: images/s x ${resnet50_gflop} GFLOP per image (ResNet-50 at 224 px, docs/model.md) over the GPU's dense fp16 peak (${R[peak_fp16_tflops]:-?} TFLOP/s, model/catalog.json)"
    echo
    echo "NCCL all-reduce on 1 GPU: ${R[sweep]:-not run}"
    echo "epochcast run, batch $small: ${R[run_small]:-not run}"
    echo "epochcast run, batch $big: ${R[run_big]:-not run}"
    echo "calibrate from batch $small, predict batch $big: ${R[calibrated]:-not run}"
  } >"$out/summary.txt.tmp"
  mv "$out/summary.txt.tmp" "$out/summary.txt"
  local key
  for key in "${!R[@]}"; do printf '%s\t%s\n' "$key" "${R[$key]}"; done |
    python3 -c 'import json, sys
print(json.dumps(dict(sorted(line.rstrip("\n").split("\t", 1) for line in sys.stdin)), indent=1))' \
      >"$out/results.json.tmp" && mv "$out/results.json.tmp" "$out/results.json"
  tar -czf "$out/logs.tar.gz.tmp" -C "$work" logs && mv "$out/logs.tar.gz.tmp" "$out/logs.tar.gz"
}
# step NAME RESULT: the step's line in steps.log and on stderr, then everything rewritten.
step() {
  printf '%s +%4d s  %-10s %s\n' "$(date -u +%H:%M:%S)" "$(($(date +%s) - start))" "$1" "$2" >>"$out/steps.log"
  [ "${3:-}" = quiet ] || log "$1: $2"
  publish
}
stop() {  # stop NAME RESULT [STATUS]: the last step, in one line; the summary stays partial
  step "$1" "$2" quiet
  log "stopped at the $1 check: $2 (partial summary in $out)"
  exit "${3:-1}"
}
failed=0

# --- unpack -------------------------------------------------------------------------------------
if [ -d "$bundle_path" ]; then
  bundle=$(cd "$bundle_path" && pwd)
else
  mkdir -p "$work/bundle"
  # tar, or python3's tarfile where tar lacks the compressor (xz).
  tar -xf "$bundle_path" -C "$work/bundle" 2>"$logs/unpack.log" ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$bundle_path" "$work/bundle" \
      2>>"$logs/unpack.log" || stop unpack "$bundle_path could not be unpacked: $(tail -1 "$logs/unpack.log")" 2
  bundle=$(find "$work/bundle" -maxdepth 2 -name launch -printf '%h\n' | head -1)
fi
[ -n "$bundle" ] && [ -x "$bundle/launch" ] || stop unpack "$bundle_path holds no bundle (no launch)" 2
R[bundle]="$(sed -n 's/^commit: //p' "$bundle/bundle.txt"), $(head -1 "$bundle/bundle.txt")"
step unpack "$bundle in $(($(date +%s) - start)) s"
launch=("$bundle/launch")

# --- driver -------------------------------------------------------------------------------------
if [ "$rehearse" = 1 ]; then
  R[gpu]="none (rehearsal)"
  R[driver]="not checked (rehearsal)"
  step driver "rehearsal: not checked"
else
  smi=$(command -v nvidia-smi || true)
  [ -n "$smi" ] || [ ! -x /usr/local/nvidia/bin/nvidia-smi ] || smi=/usr/local/nvidia/bin/nvidia-smi
  if [ -z "$smi" ]; then
    R[driver]="no NVIDIA driver: nvidia-smi is not on PATH nor in /usr/local/nvidia/bin"
    stop driver "${R[driver]}"
  fi
  if ! "$smi" --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader >"$logs/nvidia-smi.csv" 2>&1 &&
     ! "$smi" --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$logs/nvidia-smi.csv" 2>&1; then
    R[driver]="nvidia-smi found no GPU: $(head -1 "$logs/nvidia-smi.csv")"
    stop driver "${R[driver]}"
  fi
  "$smi" >"$logs/nvidia-smi.txt" 2>&1 || true
  IFS=, read -r gpu_name driver_version memory compute_cap <"$logs/nvidia-smi.csv"
  R[gpu]="$gpu_name,$memory${compute_cap:+, compute capability ${compute_cap# }}$(
    [ "$(wc -l <"$logs/nvidia-smi.csv")" -le 1 ] || echo " (GPU 0 of $(wc -l <"$logs/nvidia-smi.csv"))")"
  R[driver]=${driver_version# }
  step driver "${R[gpu]}, driver ${R[driver]}"
fi

# --- libraries ----------------------------------------------------------------------------------
if "${launch[@]}" --check >"$logs/libraries.txt" 2>&1; then
  R[libraries]="$({ grep -v '^launch:' "$logs/libraries.txt" || true; } | sed 's|^\([^:]*\): .*/\([^/]*/[^/]*/[^/]*\)/[^/]*$|\1 (\2)|' |
    paste -sd, - | sed 's/,/, /g')"
  step libraries "${R[libraries]}"
else
  R[libraries]="missing: $(sed -n 's/^launch: \(lib[^ ]*\) not found.*/\1/p' "$logs/libraries.txt" | paste -sd' ')"
  if [ "$rehearse" = 1 ]; then
    step libraries "${R[libraries]} (rehearsal: going on, the CPU backend needs none)"
  else
    cat "$logs/libraries.txt" >&2
    stop libraries "${R[libraries]}"
  fi
fi

# --- catalog: the GPU's peak and the instance for `run` ---------------------------------------------
catalog_gpu="" instance=""
if [ "$rehearse" = 1 ]; then
  R[catalog]="rehearsal: the CPU's peaks are measured by epochcast run (local-cpu)"
else
  case "${gpu_name^^}" in
    *H200*) catalog_gpu=H200-SXM-141GB instance=p5en.48xlarge ;;
    *H100*NVL*) ;;
    *H100*PCIE*) catalog_gpu=H100-PCIE-80GB instance=lambda-h100-pcie ;;
    *H100*) catalog_gpu=H100-SXM5-80GB instance=p5.4xlarge ;;
    *A100*SXM4*80GB*) catalog_gpu=A100-SXM4-80GB instance=p4de.24xlarge ;;
    *A100*SXM4*40GB*) catalog_gpu=A100-SXM4-40GB instance=p4d.24xlarge ;;
    *A100*PCIE*80GB*) catalog_gpu=A100-PCIE-80GB instance=dell-r750xa-a100-pcie-80gb ;;
    *A100*PCIE*40GB*) catalog_gpu=A100-PCIE-40GB instance=lambda-scalar-a100-pcie-40gb ;;
  esac
  if [ -z "$catalog_gpu" ]; then
    R[catalog]="no catalog entry for '$gpu_name': no fraction of peak, no epochcast run"
  elif "${launch[@]}" epochcast catalog --json >"$logs/catalog.json" 2>"$logs/catalog.err"; then
    R[peak_fp16_tflops]=$(json "$logs/catalog.json" "[g['fp16_tflops'] for g in d['gpus'] if g['name'] == '$catalog_gpu'][0]")
    R[instance]=$instance
    R[catalog]="$catalog_gpu, dense fp16 peak ${R[peak_fp16_tflops]} TFLOP/s; instance for run and predict: $instance"
  else
    R[catalog]="epochcast catalog failed: $(head -1 "$logs/catalog.err")"
  fi
fi
step catalog "${R[catalog]}"

# --- tests --------------------------------------------------------------------------------------
if wanted tests; then
  t=$(timeout_for 150 0)  # the first step: the budget (at least 60 s) leaves it time
  rc=0
  timeout -k 10 "$t" "${launch[@]}" executor_tests "--gtest_filter=$cuda_tests" >"$logs/tests.log" 2>&1 || rc=$?
  passed=$(grep -c '^\[       OK \]' "$logs/tests.log" || true)
  failed_tests=$(sed -n 's/^\[  FAILED  \] \([^ ,]*\)\( (.*\)\{0,1\}$/\1/p' "$logs/tests.log" | { grep -v '^[0-9]' || true; } | sort -u | tr '\n' ' ')
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$logs/tests.log")
  # On a GPU the two tests of the no-GPU message skip; others that skip say the GPU was not usable.
  skipped_names=$(sed -n 's/^\[  SKIPPED \] \([^ ]*\)$/\1/p' "$logs/tests.log" | sort -u | paste -sd' ')
  case "$rc" in
    0) R[tests]="passed: $passed passed, ${skipped:-0} skipped"
       [ "${skipped:-0}" -gt 4 ] || R[tests]+="${skipped_names:+ ($skipped_names)}"
       if [ "$rehearse" = 0 ] && [ "${skipped:-0}" -gt 2 ]; then
         R[tests]+=": more than the 2 expected, the tests did not all see the GPU"; failed=1
       fi ;;
    124) R[tests]="TIMED OUT after $t s: $passed passed so far${failed_tests:+, failed: $failed_tests}"; failed=1 ;;
    *) R[tests]="FAILED (exit $rc): $passed passed, ${skipped:-0} skipped, failed: ${failed_tests:-see tests.log}"; failed=1 ;;
  esac
  step tests "${R[tests]}"
fi

# --- throughput and compile ---------------------------------------------------------------------
# ours KEY BATCH STEPS CAP: epochcast-train's throughput, from its trace; "oom" when out of memory.
ours() {
  local key=$1 batch=$2 steps=$3 t rc=0
  t=$(timeout_for "$4" 180)
  [ "$t" -gt 0 ] || { R[${key}_note]="skipped: the budget was spent"; return 1; }
  R[${key}_batch]=$batch
  timeout -k 10 "$t" "${launch[@]}" epochcast-train --backend "$backend" --model "$model" --image-size "$image" \
    --batch-per-gpu "$batch" --precision "$precision" --steps "$steps" --data synthetic \
    --trace-out "$logs/$key-b$batch.json" >"$logs/$key-b$batch.log" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ]; then
    R[${key}_img_s]=$(json "$logs/$key-b$batch.json" "round(d['runs'][0]['measured']['throughput_images_per_s'], 1)")
    R[${key}_note]="$(json "$logs/$key-b$batch.json" "d['runs'][0]['measured']['steps_timed']") timed steps, $(
      json "$logs/$key-b$batch.json" "d['runs'][0]['measured']['skipped_steps']") skipped by loss scaling"
  elif grep -qiE "out of memory|alloc(ation)?_failed" "$logs/$key-b$batch.log"; then
    R[${key}_note]="out of memory"; return 2
  elif [ "$rc" -eq 124 ]; then
    R[${key}_note]="timed out after $t s"; failed=1; return 1
  else
    R[${key}_note]="FAILED (exit $rc): $(last_words "$logs/$key-b$batch.log")"; failed=1; return 1
  fi
}
# torch_run KEY BATCH WARMUP STEPS CAP RESERVE MIN [--compile]: bench/pytorch_resnet50.py's throughput.
torch_run() {
  local key=$1 batch=$2 warmup=$3 steps=$4 t rc=0
  t=$(timeout_for "$5" "$6" "$7")
  [ "$t" -gt 0 ] || { R[${key}_note]="skipped: under $7 s of the budget were left for it"; return 0; }
  R[${key}_batch]=$batch
  timeout -k 10 "$t" python3 "$bundle/bench/pytorch_resnet50.py" --device "$torch_device" --precision "$precision" \
    --batch "$batch" --image-size "$image" --warmup "$warmup" --steps "$steps" --threads "$(nproc)" "${@:8}" \
    >"$logs/$key-b$batch.json" 2>"$logs/$key-b$batch.log" || rc=$?
  case "$rc" in
    0)
      R[${key}_img_s]=$(json "$logs/$key-b$batch.json" "round(d['images_per_s'], 1)")
      R[torch_version]=$(json "$logs/$key-b$batch.json" "d['torch_version']")
      R[${key}_note]="median of $steps steps after $warmup$( [ "${8:-}" != --compile ] ||
        echo ", compiling and warming up $(json "$logs/$key-b$batch.json" "round(sum(d['warmup_s']))") s")" ;;
    3) R[${key}_note]="out of memory" ;;
    124) R[${key}_note]="timed out after $t s" ;;
    *) R[${key}_note]="FAILED (exit $rc): $(last_words "$logs/$key-b$batch.log")"; failed=1 ;;
  esac
}
if [ "$rehearse" = 0 ] && ! python3 -c 'import torch' 2>/dev/null; then torch_missing="python3 cannot import torch"; fi
if [ "$rehearse" = 1 ] && ! python3 -c 'import torch, torchvision' 2>/dev/null; then torch_missing="no torch here (rehearsal)"; fi
max_batch=""
if wanted throughput; then
  ours ours_base "$big" 60 90 || true
  step ours "batch $big: ${R[ours_base_img_s]:-no figure} img/s (${R[ours_base_note]})"
  # The largest batch: the model's memory estimate (epochcast predict refuses a batch that does not
  # fit and names the largest that does), then tried, 25% smaller after each out-of-memory (5 tries).
  # (The rehearsal asks about p5.4xlarge, an H100, and tries at most batch 64 on the CPU.)
  search_instance=$instance
  [ "$rehearse" = 0 ] || search_instance=p5.4xlarge
  if [ -n "$search_instance" ]; then
    "${launch[@]}" epochcast predict --instance "$search_instance" --nodes 1 --gpus-per-node 1 --framework epochcast \
      --model "$model" --image-size "$image" --precision "$precision" --batch-per-gpu 1000000 \
      >"$logs/largest-predict.log" 2>&1 || true
    estimate=$(sed -n 's/.*the largest batch that fits is \([0-9]*\).*/\1/p' "$logs/largest-predict.log")
    if [ -n "$estimate" ]; then
      tries="" batch=$((estimate / 32 * 32))
      [ "$rehearse" = 0 ] || [ "$batch" -le 64 ] || batch=64
      for attempt in 1 2 3 4 5; do
        rc=0
        ours ours_max "$batch" 25 90 || rc=$?
        tries+="${tries:+, }$batch: $([ "$rc" -ne 0 ] || echo "ok, ")${R[ours_max_note]%%,*}"
        [ "$rc" -eq 2 ] || break
        unset 'R[ours_max_note]'
        batch=$((batch * 3 / 4 / 32 * 32))
      done
      [ -z "${R[ours_max_img_s]:-}" ] || max_batch=$batch
      R[largest]="${max_batch:-none found}: the model's memory estimate for $search_instance is $estimate; tried $tries"
    else
      R[largest]="not found: epochcast predict said $(last_words "$logs/largest-predict.log")"
    fi
  else
    R[largest]="not searched: no catalog entry for the GPU"
  fi
  step largest "${R[largest]}${R[ours_max_img_s]:+; ours: ${R[ours_max_img_s]} img/s}"
  if [ -n "${torch_missing:-}" ]; then
    R[eager_base_note]=$torch_missing R[eager_max_note]=$torch_missing
  else
    torch_run eager_base "$big" 10 40 120 140 15
    [ -z "$max_batch" ] || torch_run eager_max "$max_batch" 5 20 120 100 15
  fi
  step eager "batch $big: ${R[eager_base_img_s]:-no figure} (${R[eager_base_note]:-}); batch ${max_batch:--}: ${R[eager_max_img_s]:-no figure} (${R[eager_max_note]:-not run})"
fi
if wanted compile; then
  if [ -n "${torch_missing:-}" ]; then
    R[compile_base_note]=$torch_missing R[compile_max_note]=$torch_missing
  else
    torch_run compile_base "$big" 5 30 240 100 15 --compile
    [ -z "$max_batch" ] || torch_run compile_max "$max_batch" 5 15 240 100 120 --compile
  fi
  step compile "batch $big: ${R[compile_base_img_s]:-no figure} (${R[compile_base_note]:-}); batch ${max_batch:--}: ${R[compile_max_img_s]:-no figure} (${R[compile_max_note]:-not run})"
fi

# --- sweep: the all-reduce of the training (NCCL on the GPU), 8 B to 128 MiB, one rank ----------------
if wanted sweep; then
  t=$(timeout_for 60 80)
  rc=0
  if [ "$t" -gt 0 ]; then
    timeout -k 10 "$t" "${launch[@]}" mpirun -np 1 epochcast-train --backend "$backend" --allreduce-sweep \
      >"$logs/sweep.txt" 2>"$logs/sweep.log" || rc=$?
    if [ "$rc" -eq 0 ]; then
      R[sweep]=$(awk '/^ *[0-9]/ { size = $1; time = $5; algbw = $6; itime = $9; ialgbw = $10 }
        /Out of bounds values/ { wrong = $7 " " $8 }
        END { printf "%d bytes: %s us (algbw %s GB/s) out of place, %s us (%s GB/s) in place; wrong elements: %s",
              size, time, algbw, itime, ialgbw, wrong }' "$logs/sweep.txt")
      R[sweep]+=" (busbw is 0 on one rank)"
    else
      R[sweep]="FAILED (exit $rc): $(last_words "$logs/sweep.log")"; failed=1
    fi
  else
    R[sweep]="skipped: the budget was spent"
  fi
  step sweep "${R[sweep]}"
fi

# --- run, calibrate, predict ----------------------------------------------------------------------
if wanted run; then
  run_flags=(--np 1 --backend "$backend" --model "$model" --image-size "$image" --precision "$precision" --steps 40 --data synthetic)
  catalog_flags=()
  if [ "$rehearse" = 1 ]; then
    run_flags+=(--save-host-catalog "$logs/host-catalog.json")
    catalog_flags=(--catalog "$logs/host-catalog.json")
    instance=local-cpu
  elif [ -n "$instance" ]; then
    run_flags+=(--instance "$instance")
  fi
  if [ -z "$instance" ]; then
    R[run_small]="skipped: no catalog instance for the GPU" R[run_big]=${R[run_small]}
  else
    for size in small big; do
      if [ "$size" = small ]; then batch=$small reserve=40; else batch=$big reserve=5; fi
      t=$(timeout_for 75 "$reserve")
      rc=0
      if [ "$t" -eq 0 ]; then R[run_$size]="skipped: the budget was spent"; continue; fi
      timeout -k 10 "$t" "${launch[@]}" epochcast run "${run_flags[@]}" --batch-per-gpu "$batch" \
        --trace-out "$logs/run-b$batch.json" >"$logs/run-b$batch.log" 2>&1 || rc=$?
      if [ "$rc" -eq 0 ]; then
        R[run_${size}_img_s]=$(json "$logs/run-b$batch.json" "round(d['runs'][0]['measured']['throughput_images_per_s'], 1)")
        R[run_$size]="${R[run_${size}_img_s]} img/s measured; built-in calibration predicted $(
          awk '/^throughput \(img\/s\)/ { print $3 }' "$logs/run-b$batch.log") img/s"
      else
        R[run_$size]="FAILED (exit $rc): $(last_words "$logs/run-b$batch.log")"; failed=1
      fi
      step "run-b$batch" "${R[run_$size]}"
    done
    if [[ ${R[run_small_img_s]:-} =~ ^[0-9.]+$ && ${R[run_big_img_s]:-} =~ ^[0-9.]+$ ]]; then
      rc=0
      { "${launch[@]}" epochcast calibrate "$logs/run-b$small.json" "${catalog_flags[@]}" -o "$logs/calibration.json" &&
        "${launch[@]}" epochcast predict --instance "$instance" --nodes 1 --gpus-per-node 1 --framework epochcast \
          --strategy ring --model "$model" --image-size "$image" --precision "$precision" --batch-per-gpu "$big" \
          "${catalog_flags[@]}" --calibration "$logs/calibration.json" --json >"$logs/predict-b$big.json"
      } >"$logs/calibrate.log" 2>&1 || rc=$?
      if [ "$rc" -eq 0 ]; then
        predicted=$(json "$logs/predict-b$big.json" "round(d['throughput_images_per_s'], 1)")
        R[calibrated_img_s]=$predicted
        R[calibrated_error_percent]=$(python3 -c "import sys; print(f'{(float(sys.argv[1]) / float(sys.argv[2]) - 1) * 100:+.1f}')" \
          "$predicted" "${R[run_big_img_s]}" 2>/dev/null || echo "?")
        R[calibrated]="$predicted img/s predicted, ${R[run_big_img_s]} measured: error ${R[calibrated_error_percent]} %"
      else
        R[calibrated]="FAILED (exit $rc): $(last_words "$logs/calibrate.log")"; failed=1
      fi
    else
      R[calibrated]="not run: a run above has no figure"
    fi
  fi
  step calibrate "${R[calibrated]:-not run}"
fi

step summary "$out/summary.txt, $(($(date +%s) - start)) s of $budget"
cat "$out/summary.txt"
exit "$failed"
