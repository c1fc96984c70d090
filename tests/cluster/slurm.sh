# shellcheck shell=bash disable=SC2154  # cluster.sh's $dir and $names
# A real Slurm on the hosts of tests/cluster/cluster.sh (its --slurm), sourced by it: munge (one
# key for every host), slurmctld on the first host, one slurmd on each host, a partition "ec" of
# them all. Every daemon runs in its host's namespaces (network, hostname, and the mount namespace
# with the host's private /run, where munged's socket is), so cluster.sh's teardown ends them with
# the host's other processes; every file they write (the key, slurm.conf, the controller's state,
# each slurmd's spool folder, logs, munge's seed) is under the cluster's folder, and Slurm's TmpFS is
# the host's private /run, so nothing is left when the folder is removed. No accounting, no cgroups
# (proctrack/pgid, task/affinity, cgroup/v1 which loads without a cgroup file system), no systemd.
# slurmd and every slurmstepd log at debug level to $dir/log/slurmd-debug_HOST.log, which names
# each PMIx fence a node takes part in (test_run_srun.sh reads them).
#
# Uses cluster.sh's $dir, $names (the hosts), $dir/on, skip and fail; exports SLURM_CONF.

# slurm_check_programs: skips (77) naming the first Slurm or munge program missing.
slurm_check_programs() {
    local program
    for program in munged slurmctld slurmd slurmstepd srun salloc sbatch sinfo scontrol squeue; do
        command -v "$program" >/dev/null ||
            skip "no $program on PATH (slurm-wlm and munge; scripts/setup installs them)"
    done
}

# The folder of Slurm's and munge's files.
slurm_dir() { echo "$dir/slurm"; }

# slurm_daemon DAEMON HOST CMD...: CMD (DAEMON in the foreground) on HOST, its output in
# $dir/log/DAEMON_HOST.log, its PID in $dir/slurm/DAEMON-HOST.pid.
slurm_daemon() {
    local daemon=$1 host=$2
    shift 2
    "$dir/on" "$host" "$@" </dev/null >>"$dir/log/${daemon}_$host.log" 2>&1 &
    echo $! >"$(slurm_dir)/$daemon-$host.pid"
    disown $!
}

# slurm_address HOST: HOST's address, from the cluster's hosts file.
slurm_address() { awk -v host="$1" '$2 == host { print $1 }' "$dir/hosts"; }

# slurm_alive DAEMON HOST: returns while DAEMON runs on HOST; skips (77) naming the last line of its
# log when it has ended (it could not start on this machine).
slurm_alive() {
    kill -0 "$(cat "$(slurm_dir)/$1-$2.pid")" 2>/dev/null && return 0
    skip "$1 could not be started on $2: $(grep -v '^[[:space:]]*$' "$dir/log/${1}_$2.log" | tail -n 1)"
}

# slurm_up: brings Slurm up on the hosts and waits until every node is idle in the partition (up
# to 180 s in all: a busy machine).
slurm_up() {
    local s start conf hardware controller="${names[0]}" name
    s=$(slurm_dir)
    start=$(date +%s.%N)
    mkdir -p "$s/state" "$dir/log"
    if ! head -c 1024 /dev/urandom >"$s/munge.key" || ! chmod 400 "$s/munge.key"; then
        fail "cannot write the munge key in $s"
    fi
    # The hardware slurmd sees (every host is this machine), so that no node is drained for a mismatch.
    hardware=$(slurmd -C 2>/dev/null | head -n 1 | tr ' ' '\n' |
        grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=' | tr '\n' ' ')
    [ -n "$hardware" ] || skip "slurmd -C does not describe this machine: $(slurmd -C 2>&1 | tail -n 1)"
    conf="$s/slurm.conf"
    {
        echo "# slurm.conf of tests/cluster/cluster.sh --slurm: removed with the cluster"
        echo "ClusterName=epochcast"
        echo "SlurmctldHost=$controller($(slurm_address "$controller"))"
        cat <<EOF
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool-%n
SlurmctldPidFile=$s/slurmctld.pidfile
SlurmdPidFile=$s/slurmd-%n.pidfile
TmpFS=/run/ec-slurm-tmp
PlugStackConfig=$s/plugstack.conf
ProctrackType=proctrack/pgid
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=pmix
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
SlurmdParameters=config_overrides
ReturnToService=2
EnforcePartLimits=ALL
MessageTimeout=60
SlurmdLogFile=$dir/log/slurmd-debug_%n.log
SlurmdDebug=debug
EOF
        for name in "${names[@]}"; do
            echo "NodeName=$name NodeAddr=$(slurm_address "$name") NodeHostname=$name $hardware Gres=gpu:8 State=UNKNOWN"
        done
        echo "PartitionName=ec Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
    } >"$conf"
    : >"$s/plugstack.conf"
    # Eight GPUs a node for Slurm to count (no job here uses them): a launch file's
    # --gpus-per-node=8 is then a request it can place (sbatch --test-only of the GPU clusters'
    # scripts, test_run_srun.sh). Slurm drops a GPU without a device file, and does not open it
    # without a cgroup device constraint: empty files in the cluster's folder stand in.
    for g in 0 1 2 3 4 5 6 7; do : >"$s/gpu$g"; done
    echo "Name=gpu File=$s/gpu[0-7]" >"$s/gres.conf"
    echo "CgroupPlugin=cgroup/v1" >"$s/cgroup.conf"
    export SLURM_CONF="$conf"

    for name in "${names[@]}"; do
        mkdir -p "$s/spool-$name"
        slurm_daemon munged "$name" sh -c \
            "mkdir -p /run/munge /run/ec-slurm-tmp && exec munged --foreground --key-file='$s/munge.key' \
                --pid-file=/run/munge/munged.pid --seed-file='$s/munge-seed-$name' \
                --log-file='$dir/log/munged_$name.log'"
    done
    local deadline=$((SECONDS + 180))
    for name in "${names[@]}"; do  # its socket, in the host's /run
        until "$dir/on" "$name" test -S /run/munge/munge.socket.2; do
            slurm_alive munged "$name"
            [ "$SECONDS" -lt "$deadline" ] || fail "munged on $name made no socket within 180 s"
            sleep 0.3
        done
    done
    slurm_daemon slurmctld "$controller" slurmctld -D -f "$conf"
    for name in "${names[@]}"; do
        slurm_daemon slurmd "$name" slurmd -D -f "$conf" -N "$name"
    done
    local states=""
    while [ "$SECONDS" -lt "$deadline" ]; do
        states=$("$dir/on" "$controller" sinfo -h -N -p ec -o '%N %T' 2>/dev/null)
        if [ "$(grep -c ' idle$' <<<"$states")" -eq "${#names[@]}" ]; then
            echo "cluster.sh: Slurm up in $(echo "$(date +%s.%N) $start" | awk '{printf "%.1f", $1 - $2}') s:" \
                "slurmctld on $controller, slurmd on ${names[*]}, partition ec; SLURM_CONF=$conf"
            return 0
        fi
        slurm_alive slurmctld "$controller"
        for name in "${names[@]}"; do slurm_alive slurmd "$name"; done
        sleep 0.3
    done
    fail "Slurm's nodes are not all idle after 180 s: $(tr '\n' ';' <<<"$states") $(tail -n 3 "$dir/log/slurmctld_$controller.log")"
}
