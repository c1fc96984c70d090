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

# Seconds since $1 (date +%s.%N).
seconds_since() { echo "$(date +%s.%N) $1" | awk '{printf "%.1f", $1 - $2}'; }

# No process but sshd on any host (waits up to 15 s for the ranks and Open MPI's daemons to go).
no_process_left() {
    local left=""
    for _ in $(seq 1 75); do
        left=$(ps -eo pid=,comm= | awk '$2 ~ /^(epochcast-train|orted|prted|mpirun)$/' |
            while read -r pid comm; do
                host=$(nsenter -t "$pid" -u hostname 2>/dev/null)
                case " $EC_CLUSTER_HOSTS " in *" $host "*) echo "$comm ($pid) on $host" ;; esac
            done)
        [ -z "$left" ] && return 0
        sleep 0.2
    done
    fail "processes left on the cluster's hosts: $left"
}
