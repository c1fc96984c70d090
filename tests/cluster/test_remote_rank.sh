#!/usr/bin/env bash
# A rank on another host of the local cluster (cluster.sh) that dies (SIGKILL) or stops without
# dying (SIGSTOP) during `epochcast run --hostfile` over two hosts: the run ends (exit 1), names
# the rank and its host, and leaves no process on any host. The time from the signal to the end
# is printed (the watchdog's detection time with --watchdog 5).
source "$(dirname "$0")/lib.sh"
[ ${#cluster_hosts[@]} -ge 2 ] || fail "needs 2 hosts (cluster.sh -n 2)"
remote="${cluster_hosts[1]}"
hostfile two.hosts "$head_host" "$remote"

for signal in KILL STOP; do
    rm -rf epochcast-run-*
    on "$head_host" "$epochcast" run --hostfile two.hosts "${small_run[@]}" --steps 100000 --no-network-test \
        --watchdog 5 >"$signal.out" 2>&1 &
    run=$!
    # Rank 1 (on the other host) once it has done 2 steps: its progress report in the run's folder.
    report=""
    for _ in $(seq 1 900); do
        report=$(ls epochcast-run-*/rank-1.json 2>/dev/null | head -n 1)
        if [ -n "$report" ] && python3 -c "import json,sys; sys.exit(json.load(open('$report'))['steps'] < 2)" 2>/dev/null; then
            break
        fi
        kill -0 "$run" 2>/dev/null || fail "SIG$signal: the run ended before rank 1 did 2 steps: $(tail -n 20 "$signal.out")"
        sleep 0.2
    done
    read -r pid host < <(python3 -c "import json; r = json.load(open('$report')); print(r['pid'], r['host'])") ||
        fail "SIG$signal: rank 1 did not report 2 steps within 180 s: $(tail -n 20 "$signal.out")"
    [ "$host" = "$remote" ] || fail "rank 1 runs on $host, not $remote"
    start=$(date +%s.%N)
    on "$remote" kill "-$signal" "$pid" || fail "cannot send SIG$signal to rank 1 ($pid) on $remote"
    wait "$run"
    code=$?
    took=$(seconds_since "$start")
    [ "$code" -eq 1 ] || fail "SIG$signal: exit $code, not 1: $(tail -n 20 "$signal.out")"
    if [ "$signal" = KILL ]; then
        expect_in "$signal.out" "rank 1 on host $remote was killed by signal 9"
    else
        expect_in "$signal.out" "rank 1 on host $remote made no progress for"
        expect_in "$signal.out" "its process $pid is stopped"
    fi
    echo "SIG$signal to rank 1 on $remote: the run ended $took s later: $(grep 'epochcast: failed' "$signal.out")"
    no_process_left
done
