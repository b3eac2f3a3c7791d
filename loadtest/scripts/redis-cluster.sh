#!/usr/bin/env bash
# A local Redis Cluster for the bus benchmarks (BENCHMARKS.md, "Past one broker primary"):
# MASTERS masters (default 3) with REPLICAS replicas each (default 1), no persistence, on
# ports BASE.. (default 7000) in a temp dir. `redis-cluster.sh start` prints the bus URL;
# `redis-cluster.sh stop` kills them by pid. Never touches 6379.
set -euo pipefail
masters=${MASTERS:-3} replicas=${REPLICAS:-1} base=${BASE:-7000}
dir=${CLUSTER_DIR:-/tmp/mcp-fleet-bench-cluster}
count=$((masters * (1 + replicas)))

case "${1:-start}" in
start)
    mkdir -p "$dir"
    hosts=()
    for i in $(seq 0 $((count - 1))); do
        port=$((base + i))
        redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
            --dbfilename "n$port.rdb" --cluster-enabled yes --cluster-config-file "n$port.conf" \
            --cluster-node-timeout 2000 --daemonize yes --pidfile "$dir/n$port.pid" --logfile "$dir/n$port.log"
        hosts+=("127.0.0.1:$port")
    done
    for h in "${hosts[@]}"; do
        until redis-cli -p "${h#*:}" ping >/dev/null 2>&1; do sleep 0.1; done
    done
    redis-cli --cluster create "${hosts[@]}" --cluster-replicas "$replicas" --cluster-yes >"$dir/create.log"
    until redis-cli -p "$base" cluster info | grep -q cluster_state:ok; do sleep 0.2; done
    sleep 6 # replicas finish their first sync (diskless, after a 5 s delay) before WAIT can count them
    echo "redis+cluster://$(IFS=,; echo "${hosts[*]}")"
    ;;
stop)
    for pid in "$dir"/*.pid; do [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null || true; done
    sleep 0.5
    rm -rf "$dir"
    ;;
*) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
