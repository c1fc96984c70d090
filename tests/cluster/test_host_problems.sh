#!/usr/bin/env bash
# What `epochcast run --hostfile` says before anything starts, on the local cluster (cluster.sh):
# a host that is unreachable (a name resolving to an address no host has), a host without
# epochcast-train at the path this host runs (its copy in the shared folder hidden on that host by
# an empty mount), and a --shared-dir another host does not mount (hidden likewise): each is
# named with its problem, exit 1, within 20 s, and no rank starts.
source "$(dirname "$0")/lib.sh"
[ ${#cluster_hosts[@]} -ge 3 ] || fail "needs 3 hosts (cluster.sh -n 3)"

mkdir -p bin shared
cp "$build/epochcast" "$build/epochcast-train" bin/
on "${cluster_hosts[2]}" mount -t tmpfs ec-hidden "$PWD/bin" || fail "cannot hide bin/ on ${cluster_hosts[2]}"
on "${cluster_hosts[1]}" mount -t tmpfs ec-hidden "$PWD/shared" || fail "cannot hide shared/ on ${cluster_hosts[1]}"

# expect_refused NAME EXPECTED_TEXT [run flags...]: exit 1 within 20 s naming the problem.
expect_refused() {
    local name=$1 expected=$2
    shift 2
    local start
    start=$(date +%s.%N)
    on "$head_host" "$@" "${small_run[@]}" --steps 4 --no-network-test >"$name.out" 2>&1
    local code=$? took
    took=$(seconds_since "$start")
    [ "$code" -eq 1 ] || fail "$name: exit $code, not 1: $(tail -n 20 "$name.out")"
    expect_in "$name.out" "$expected"
    awk -v t="$took" 'BEGIN { exit !(t < 20) }' || fail "$name: named after $took s, not within 20 s"
    grep -q "epochcast-train: resnet18" "$name.out" && fail "$name: the ranks started"
    echo "$name: named in $took s: $(grep 'epochcast: failed' "$name.out")"
}

hostfile gone.hosts "$head_host" "$EC_CLUSTER_GONE"
expect_refused unreachable "host $EC_CLUSTER_GONE is unreachable (ssh" "$epochcast" run --hostfile gone.hosts

hostfile no-trainer.hosts "$head_host" "${cluster_hosts[2]}"
expect_refused no-trainer "host ${cluster_hosts[2]} has no executable epochcast-train at $PWD/bin/epochcast-train" \
    bin/epochcast run --hostfile no-trainer.hosts

hostfile no-share.hosts "$head_host" "${cluster_hosts[1]}"
expect_refused no-shared-folder "host ${cluster_hosts[1]} cannot see the folder $PWD/shared/epochcast-run-" \
    bin/epochcast run --hostfile no-share.hosts --shared-dir "$PWD/shared"

no_process_left
