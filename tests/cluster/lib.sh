# Helpers of the cluster tests (tests/cluster/test_*.sh), sourced by each. The tests run under
# cluster.sh (its EC_CLUSTER_* variables), with the build folder holding epochcast and
# epochcast-train as their first argument; every command runs on the first host, ec-h1, in the
# cluster's shared folder, as a user on a cluster's login node would.
set -uo pipefail

build="${1:?usage: $0 BUILD_FOLDER (run under tests/cluster/cluster.sh)}"
build=$(cd "$build" && pwd)
epochcast="$build/epochcast"
: "${EC_CLUSTER_ON:?run under tests/cluster/cluster.sh}"
cd "$EC_CLUSTER_WORK" || exit 1
read -r -a cluster_hosts <<<"$EC_CLUSTER_HOSTS"
head_host="${cluster_hosts[0]}"

fail() {
    echo "FAILED: $*" >&2
    exit 1
}

# on HOST CMD...: CMD on HOST.
on() { "$EC_CLUSTER_ON" "$@"; }

# A hostfile of one slot on each host named: hostfile FILE HOST...
hostfile() {
    local file=$1
    shift
    : >"$file"
    for h in "$@"; do echo "$h slots=1" >>"$file"; done
}

# The small training every test runs: ResNet-18 on 32-pixel synthetic images, 4 per rank.
small_run=(--model resnet18 --image-size 32 --batch-per-gpu 4 --threads 1)

# expect_in FILE TEXT: FILE holds TEXT.
expect_in() {
    grep -qF -- "$2" "$1" || fail "'$2' not in $1:
$(tail -n 30 "$1")"
}

# "throughput (img/s)  PREDICTED  MEASURED  ERROR" of run's comparison table in FILE: throughput_row FILE.
throughput_row() { grep -E '^throughput \(img/s\)' "$1" | awk '{print $3, $4, $5}'; }

# expect_run_across OUT LAUNCHER LINE HOST...: `epochcast run`'s output OUT and its trace (OUT's
# name with .json for .out) show one rank on each HOST under LAUNCHER (mpirun or srun), whose line
# holds LINE: the hosts were checked, the sweep crossed them, each node was measured, and the trace
# records the layout, the launcher line and each node.
expect_run_across() {
    local out=$1 launcher=$2 line=$3
    shift 3
    expect_in "$out" "every host is ready"
    expect_in "$out" "$line"
    expect_in "$out" "nranks $#, nodes $#,"
    for host in "$@"; do
        grep -qE "^$host +1 " "$out" || fail "no measured peaks of node $host in $out"
    done
    python3 - "${out%.out}.json" "$launcher" "$line" "$@" <<'PY' || fail "${out%.out}.json does not record the run's layout"
import json, sys
path, launcher, line, hosts = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
run = json.load(open(path))["runs"][0]
assert run["nodes"] == len(hosts) and run["gpus_per_node"] == 1, (run["nodes"], run["gpus_per_node"])
assert [n["host"] for n in run["layout"]] == hosts, run["layout"]
assert [n["ranks"] for n in run["layout"]] == [[i] for i in range(len(hosts))], run["layout"]
assert run["launch"]["hosts"] == hosts and run["launch"]["launcher"] == launcher, run["launch"]
assert line in run["launch"]["command"], run["launch"]["command"]
assert run["measured"]["throughput_images_per_s"] > 0
PY
}

# Seconds since $1 (date +%s.%N).
seconds_since() { echo "$(date +%s.%N) $1" | awk '{printf "%.1f", $1 - $2}'; }

# No rank, launcher or job step on any host: no epochcast-train, Open MPI daemon, mpirun, srun,
# salloc or slurmstepd (waits up to 60 s for them to go: the machine is busy). A host is told by
# its network namespace (its sshd's), not its name: another cluster on this machine (a second
# suite's) has hosts of the same names.
no_process_left() {
    local left="" deadline=$((SECONDS + 60)) host net
    local -A host_of_net=()
    for host in "${cluster_hosts[@]}"; do
        host_of_net[$(readlink "/proc/$(cat "$EC_CLUSTER_DIR/sshd_$host.pid")/ns/net")]=$host
    done
    while :; do
        left=$(ps -eo pid=,comm= | awk '$2 ~ /^(epochcast-train|orted|prted|mpirun|srun|salloc|slurmstepd)$/' |
            while read -r pid comm; do
                net=$(readlink "/proc/$pid/ns/net" 2>/dev/null) || continue  # gone
                host=${host_of_net[$net]:-}
                [ -n "$host" ] && echo "$comm ($pid) on $host"
            done)
        [ -z "$left" ] && return 0
        [ "$SECONDS" -lt "$deadline" ] || break
        sleep 0.2
    done
    fail "processes left on the cluster's hosts: $left"
}
