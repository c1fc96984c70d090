#!/usr/bin/env bash
# `epochcast run --hostfile` across two and three hosts of the local cluster (cluster.sh), CPU
# backend, ResNet-18 at 32 px: the hosts are checked, the all-reduce sweep and the training cross
# between them over Open MPI's TCP transport, each node is measured, and the trace records the
# layout and each node. Then a calibration from the two-host run predicts the three-host run,
# whose error is printed. Figures are printed, never asserted: the machine is shared and busy.
source "$(dirname "$0")/lib.sh"
[ ${#cluster_hosts[@]} -ge 3 ] || fail "needs 3 hosts (cluster.sh -n 3)"

run_hosts() {  # run_hosts NAME HOST...: a run over those hosts, output in NAME.out, trace NAME.json
    local name=$1
    shift
    hostfile "$name.hosts" "$@"
    on "$head_host" "$epochcast" run --hostfile "$name.hosts" "${small_run[@]}" --steps 4 \
        --network-test-max-mib 1 --trace-out "$PWD/$name.json" --save-host-catalog "$PWD/$name.host.json" \
        >"$name.out" 2>&1 || fail "run over $* exited $?:
$(tail -n 30 "$name.out")"
    expect_run_across "$name.out" mpirun "--host $(printf '%s:1,' "$@" | sed 's/,$//') --map-by ppr:1:node" "$@"
}

run_hosts two "${cluster_hosts[0]}" "${cluster_hosts[1]}"
read -r predicted measured error < <(throughput_row two.out)
echo "two hosts (1 rank each): measured $measured img/s, predicted $predicted img/s by the built-in calibration ($error %)"

run_hosts three "${cluster_hosts[0]}" "${cluster_hosts[1]}" "${cluster_hosts[2]}"
read -r predicted3 measured3 error3 < <(throughput_row three.out)
echo "three hosts (1 rank each): measured $measured3 img/s, predicted $predicted3 img/s by the built-in calibration ($error3 %)"

# Calibrated on the two-host run, predicting the three-host one.
on "$head_host" "$epochcast" calibrate two.json --catalog two.host.json -o two.cal.json >calibrate.out 2>&1 ||
    fail "calibrate from the two-host run exited $?: $(tail -n 20 calibrate.out)"
on "$head_host" "$epochcast" validate three.json --catalog two.host.json --calibration two.cal.json --json \
    >validate.json 2>validate.err || fail "validate of the three-host run exited $?: $(tail -n 20 validate.err)"
python3 - validate.json <<'PY' || fail "validate printed no prediction of the three-host run: $(head -c 2000 validate.json)"
import json, sys
doc = json.load(open(sys.argv[1]))
rows = doc["runs"] if isinstance(doc, dict) and "runs" in doc else doc
row = rows[0]
predicted = row.get("predicted_throughput_images_per_s", row.get("predicted"))
measured = row.get("measured_throughput_images_per_s", row.get("measured"))
error = row.get("error_percent", row.get("error"))
assert predicted and measured, row
print(f"three hosts predicted from the two-host calibration: {predicted:.2f} img/s, measured {measured:.2f} img/s, error {error:+.1f} %")
PY
