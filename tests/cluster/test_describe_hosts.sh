#!/usr/bin/env bash
# `epochcast-train --describe-host` under mpirun across the local cluster's hosts (cluster.sh), 2
# ranks on each of 2 hosts, as `epochcast run` measures the hosts: each node's peaks under its own
# name, the all-reduce among each node's ranks (Open MPI's shared memory) and across the nodes
# (its TCP transport between namespaces), in the catalog entry it prints.
source "$(dirname "$0")/lib.sh"
[ ${#cluster_hosts[@]} -ge 2 ] || fail "needs 2 hosts (cluster.sh -n 2)"
a="${cluster_hosts[0]}" b="${cluster_hosts[1]}"
on "$head_host" mpirun --allow-run-as-root --host "$a:2,$b:2" --map-by ppr:2:node --bind-to none \
    "$build/epochcast-train" --describe-host --threads 1 >describe.json 2>describe.err ||
    fail "--describe-host across $a and $b exited $?: $(tail -n 20 describe.err)"
python3 - describe.json "$a" "$b" <<'PY' || fail "the description does not hold both nodes: $(head -c 3000 describe.json)"
import json, sys
doc, hosts = json.load(open(sys.argv[1])), sys.argv[2:]
nodes = doc["nodes"]
assert [n["host"] for n in nodes] == hosts and all(n["ranks"] == 2 for n in nodes), nodes
for n in nodes:
    assert n["fp32_tflops"] > 0 and n["memory_GBps"] > 0, n
    print(f"node {n['host']}: {n['ranks']} ranks, fp32 {n['fp32_tflops']:.3f} TFLOP/s, memory {n['memory_GBps']:.1f} GB/s")
instance = next(i for i in doc["instances"] if i["name"] == "local-cpu")
text = json.dumps(instance)
assert "within node" in text and "across the nodes" in text, instance
print(f"all-reduce within a node: {instance['intra_node_GBps']:.2f} GB/s bus; across the nodes: {instance['network_gbps']:.2f} Gbit/s")
PY
