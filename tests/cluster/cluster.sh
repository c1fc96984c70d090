#!/usr/bin/env bash
# A small real cluster on this machine, for `epochcast run` across hosts (issue 44): N "hosts"
# (default 3), each a network namespace with its own address on a private bridge, its own
# hostname (a UTS namespace) and a real OpenSSH server, so that Open MPI sees distinct hosts, starts
# its daemons over ssh and crosses between them over TCP. The namespaces share the filesystem: the
# cluster's folder is every host's shared folder. Everything is removed when this script ends,
# however it ends (the command's exit, Ctrl-C, SIGTERM, SIGHUP): no namespace, process, bridge,
# veth or file is left.
#
#   tests/cluster/cluster.sh [-n N] [--slurm] [COMMAND [ARG...]]
#
# runs COMMAND (default: an interactive shell on the first host) with, in its environment:
#   EC_CLUSTER_DIR     the cluster's folder (keys, ssh_config, logs); removed at the end
#   EC_CLUSTER_WORK    $EC_CLUSTER_DIR/work, a folder every host sees at the same path
#   EC_CLUSTER_HOSTS   the hosts' names, "ec-h1 ec-h2 ec-h3" (resolved on every host)
#   EC_CLUSTER_GONE    a name every host resolves to an address nobody has (an unreachable host)
#   EC_CLUSTER_ON      a program: `$EC_CLUSTER_ON HOST CMD...` runs CMD on HOST (its network, hostname
#                      and mounts), in this folder, as a child of the caller
#   EC_CLUSTER_SSH_CONFIG  the ssh client configuration (key, no host-key prompts, BatchMode)
#   OMPI_MCA_plm_rsh_agent "ssh -F $EC_CLUSTER_SSH_CONFIG": Open MPI's and `epochcast run`'s remote shell
# and, with --slurm, a real Slurm on the hosts (tests/cluster/slurm.sh: munge, slurmctld on the
# first host, a slurmd on each, partition "ec", every file in the cluster's folder):
#   SLURM_CONF         the cluster's slurm.conf, which srun, salloc, sbatch, sinfo and scontrol read
# and exits with COMMAND's status. Needs root (network namespaces, a bridge) and /usr/sbin/sshd
# (openssh-server, which scripts/setup installs), and with --slurm Slurm's and munge's daemons
# (slurm-wlm and munge, which scripts/setup installs) starting on the hosts; without them it
# prints one line saying why and exits 77, which ctest counts as skipped.
#
# Hosts: ec-hI at 10.231.S.(10+I), the bridge at 10.231.S.1 in this machine's namespace, S the
# first of 0..9 whose range no interface of this machine uses (so two clusters can coexist: two
# suites at once, each with its clusters). Names: namespaces ecS-hI, bridge ecSbr, veth ecShI. The
# choice of S and the making of the bridge hold a lock (flock on /run/lock) so that two clusters
# starting at once never take one slot, and a cluster removes only what it made. Each sshd runs in
# a mount namespace of its host (ip netns exec makes one) with a private /run, where /etc/hosts is
# the cluster's.
set -uo pipefail

readonly SKIP=77
hosts=3
slurm=""
while [ $# -gt 0 ]; do
    case "$1" in
        -n)
            hosts="${2:-}"
            shift 2 || shift
            ;;
        --slurm)
            slurm=yes
            shift
            ;;
        --)
            shift
            break
            ;;
        *) break ;;
    esac
done
if ! [[ "$hosts" =~ ^[1-9]$ ]]; then
    echo "cluster.sh: -n takes 1 to 9 hosts, got '$hosts'" >&2
    exit 2
fi

skip() {
    echo "cluster.sh: skipped: $*"
    exit "$SKIP"
}
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root (running as $(id -un))"
[ -x /usr/sbin/sshd ] || skip "no /usr/sbin/sshd (openssh-server; scripts/setup installs it)"
for program in ip nsenter unshare ssh ssh-keygen; do
    command -v "$program" >/dev/null || skip "no $program on PATH"
done
if [ -n "$slurm" ]; then
    # shellcheck source=tests/cluster/slurm.sh
    source "$(dirname "$0")/slurm.sh"
    slurm_check_programs
fi

# Clusters starting or ending at once take turns here (a lock on a folder every Debian has, so
# that no lock file is left behind); the lock is held for moments, never while a command runs.
lock_folder=/run/lock
[ -d "$lock_folder" ] || lock_folder=/tmp
# ip netns makes /run/netns (mounted on itself) where there is none; this file, while any cluster
# of ours is up, says that it was one of ours, so that the last cluster out removes it.
ours_run_netns=$lock_folder/epochcast-cluster.run-netns
locked() { flock "$lock_folder" "$@"; }

dir=""
slot=""
bridge=""
namespaces=()
command_pid=""

teardown() {
    trap '' INT TERM HUP
    local began
    began=$(date +%s.%N)
    # The command's process group, with whatever it left running.
    if [ -n "$command_pid" ] && kill -0 -- "-$command_pid" 2>/dev/null; then
        kill -TERM -- "-$command_pid" 2>/dev/null
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 -- "-$command_pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -KILL -- "-$command_pid" 2>/dev/null
    fi
    # Every process on a host (sshd, sessions, Open MPI's daemons, ranks, stopped ones too; with
    # --slurm munged, slurmctld, slurmd, slurmstepd). A process leaves its namespace as it starts
    # to exit, so each one killed is then waited for until it is gone (10 s at most).
    local killed=""
    for ns in "${namespaces[@]}"; do
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            pids=$(ip netns pids "$ns" 2>/dev/null)
            [ -z "$pids" ] && break
            # shellcheck disable=SC2086
            kill -KILL $pids 2>/dev/null
            killed+=" $pids"
            sleep 0.1
        done
        ip netns del "$ns" 2>/dev/null  # its veth end goes, and with it the pair
        rm -rf "/etc/netns/$ns"
    done
    for _ in $(seq 1 100); do
        local alive=""
        for pid in $killed; do kill -0 "$pid" 2>/dev/null && alive=yes && break; done
        [ -z "$alive" ] && break
        sleep 0.1
    done
    if [ -n "$bridge" ]; then ip link del "$bridge" 2>/dev/null; fi
    # /run/netns, when a cluster of ours made it and no namespace is left in it (the last one out);
    # /etc/netns when empty.
    locked sh -c "rmdir /etc/netns 2>/dev/null
        if [ -e '$ours_run_netns' ] && [ -z \"\$(ls -A /run/netns 2>/dev/null)\" ]; then
            umount /run/netns 2>/dev/null; rmdir /run/netns 2>/dev/null; rm -f '$ours_run_netns'
        fi"
    if [ -n "$dir" ]; then
        rm -rf "$dir"
        echo "cluster.sh: removed in $(echo "$(date +%s.%N) $began" | awk '{printf "%.1f", $1 - $2}') s"
    fi
}
on_signal() {
    echo "cluster.sh: interrupted by SIG$1; tearing the cluster down" >&2
    exit $((128 + $2))
}
trap teardown EXIT
trap 'on_signal INT 2' INT
trap 'on_signal TERM 15' TERM
trap 'on_signal HUP 1' HUP

# Under the lock: the first free range (no address of this machine in it, no bridge, namespace or veth
# by its names), whether namespaces can be made at all (not where CAP_SYS_ADMIN or CAP_NET_ADMIN
# is missing, as in a restricted container), and the range's bridge, which claims it. Prints the
# slot, or one line saying why not (and exits 1).
claim_slot() {
    [ -d /run/netns ] || touch "$ours_run_netns"
    local s
    for s in 0 1 2 3 4 5 6 7 8 9; do
        # A veth of the slot's (ecSh1...) outlives its namespace while the kernel keeps the
        # namespace for a closed socket still resending (minutes, when a cluster was killed mid-run).
        if ! ip -o addr | grep -q " 10\.231\.$s\." && ! ip link show "ec${s}br" >/dev/null 2>&1 &&
            ! ip netns list | grep -q "^ec${s}-" && ! ip -o link | grep -q "^[0-9]*: ec${s}h[0-9]"; then
            local error
            if ! error=$(ip netns add "ec${s}-probe" 2>&1); then
                echo "cannot create a network namespace ($error)"
                exit 1
            fi
            ip netns del "ec${s}-probe"
            if ! error=$(ip link add "ec${s}br" type bridge 2>&1); then
                echo "cannot create a bridge ($error)"
                exit 1
            fi
            echo "$s"
            exit 0
        fi
    done
    echo "the ranges 10.231.0-9.0/24 are all in use on this machine"
    exit 1
}
export -f claim_slot
export ours_run_netns
if ! claimed=$(locked bash -c claim_slot); then skip "$claimed"; fi
slot=$claimed
net="10.231.$slot"
bridge="ec${slot}br"

fail() {
    echo "cluster.sh: $*" >&2
    exit 1
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/epochcast-cluster.XXXXXX") || fail "cannot make a temporary folder"
chmod 755 "$dir"
mkdir -p "$dir/work" "$dir/log"
ip addr add "$net.1/24" dev "$bridge" && ip link set "$bridge" up || fail "cannot configure $bridge"

ssh-keygen -q -t ed25519 -N "" -C epochcast-cluster -f "$dir/id_ed25519" || fail "ssh-keygen failed"
ssh-keygen -q -t ed25519 -N "" -C epochcast-cluster-host -f "$dir/host_key" || fail "ssh-keygen failed"
cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
cat >"$dir/ssh_config" <<EOF
Host *
    IdentityFile $dir/id_ed25519
    IdentitiesOnly yes
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    GlobalKnownHostsFile /dev/null
    BatchMode yes
    LogLevel ERROR
    ConnectTimeout 10
EOF

names=()
{
    echo "127.0.0.1 localhost"
    for i in $(seq 1 "$hosts"); do echo "$net.$((10 + i)) ec-h$i"; done
    echo "$net.99 ec-gone"
} >"$dir/hosts"

for i in $(seq 1 "$hosts"); do
    name="ec-h$i"
    ns="ec${slot}-h$i"
    veth="ec${slot}h$i"
    names+=("$name")
    namespaces+=("$ns")
    ip netns add "$ns" || fail "cannot create namespace $ns"
    mkdir -p "/etc/netns/$ns"
    cp "$dir/hosts" "/etc/netns/$ns/hosts"
    echo "$name" >"/etc/netns/$ns/hostname"
    ip link add "$veth" type veth peer name eth0 netns "$ns" || fail "cannot create veth $veth"
    ip link set "$veth" master "$bridge" up
    ip -n "$ns" addr add "$net.$((10 + i))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    cat >"$dir/sshd_$name.conf" <<EOF
ListenAddress $net.$((10 + i))
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PidFile none
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 200
MaxSessions 200
LogLevel ERROR
EOF
    # Its own hostname (UTS) and a private /run (sshd's privilege-separation folder, and later
    # the host's own daemons' sockets) in the mount namespace ip netns exec made for it.
    ip netns exec "$ns" unshare --uts sh -c "hostname $name && mount -t tmpfs -o mode=755 ec-run /run &&
        mkdir -p /run/sshd && exec /usr/sbin/sshd -D -e -f '$dir/sshd_$name.conf'" \
        </dev/null >"$dir/log/sshd_$name.log" 2>&1 &
    echo $! >"$dir/sshd_$name.pid"
    disown $!
done

# `on HOST CMD...`: CMD in HOST's namespaces (those of its sshd), in the caller's folder.
cat >"$dir/on" <<EOF
#!/bin/sh
host="\$1"; shift
pid=\$(cat "$dir/sshd_\$host.pid" 2>/dev/null) || { echo "on: no host \$host" >&2; exit 2; }
exec nsenter -t "\$pid" -n -u -m --wd="\$PWD" -- "\$@"
EOF
chmod 755 "$dir/on"

# Every sshd answers before the command starts (a few seconds at most on a busy machine).
for name in "${names[@]}"; do
    ok=""
    for _ in $(seq 1 100); do
        if "$dir/on" "${names[0]}" ssh -n -F "$dir/ssh_config" "$name" true 2>/dev/null; then
            ok=yes
            break
        fi
        kill -0 "$(cat "$dir/sshd_$name.pid")" 2>/dev/null || break
        sleep 0.2
    done
    [ -n "$ok" ] || fail "host $name's sshd does not answer: $(tail -n 3 "$dir/log/sshd_$name.log")"
done

export EC_CLUSTER_DIR="$dir" EC_CLUSTER_WORK="$dir/work" EC_CLUSTER_HOSTS="${names[*]}" EC_CLUSTER_GONE=ec-gone
export EC_CLUSTER_ON="$dir/on" EC_CLUSTER_SSH_CONFIG="$dir/ssh_config"
export OMPI_MCA_plm_rsh_agent="ssh -F $dir/ssh_config"
echo "cluster.sh: ${#names[@]} hosts up (${names[*]}, $net.11-$((10 + hosts)), bridge $bridge); folder $dir"
if [ -n "$slurm" ]; then slurm_up; fi

if [ $# -eq 0 ]; then
    echo "cluster.sh: a shell on ${names[0]}; the cluster is removed when it exits"
    trap ':' INT  # Ctrl-C belongs to the shell's commands; the cluster goes when the shell exits
    "$dir/on" "${names[0]}" "${SHELL:-/bin/bash}"
    exit $?
fi
# The command in a process group of its own, so that teardown can end all of it.
setsid "$@" &
command_pid=$!
wait "$command_pid"
status=$?
exit "$status"
