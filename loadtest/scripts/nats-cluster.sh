#!/usr/bin/env bash
# A local 3-server NATS cluster with JetStream for the bus benchmarks (BENCHMARKS.md, "Past one
# broker primary"): SERVERS servers (default 3), client ports BASE.. (default 4301), route
# ports ROUTE_BASE.. (default 6301), stores in a temp dir. `nats-cluster.sh start` prints the
# bus URL (streams with `replicas=3`); `nats-cluster.sh stop` kills them by pid. Never touches
# 4222.
set -euo pipefail
servers=${SERVERS:-3} base=${BASE:-4301} route_base=${ROUTE_BASE:-6301}
dir=${CLUSTER_DIR:-/tmp/mcp-fleet-bench-nats}

case "${1:-start}" in
start)
    mkdir -p "$dir"
    routes=$(for i in $(seq 0 $((servers - 1))); do printf 'nats://127.0.0.1:%d,' $((route_base + i)); done)
    urls=()
    for i in $(seq 0 $((servers - 1))); do
        nats-server -a 127.0.0.1 -p $((base + i)) -js -sd "$dir/n$i-js" --server_name "bench-$i" \
            --cluster "nats://127.0.0.1:$((route_base + i))" --routes "${routes%,}" --cluster_name mcpfb \
            -l "$dir/n$i.log" -P "$dir/n$i.pid" >/dev/null 2>&1 &
        urls+=("127.0.0.1:$((base + i))")
    done
    # JetStream is ready once the cluster elected its meta leader.
    until grep -q "JetStream cluster new metadata leader\|Self is new JetStream cluster metadata leader" "$dir"/n*.log 2>/dev/null; do sleep 0.2; done
    sleep 1
    echo "nats://$(IFS=,; echo "${urls[*]}")"
    ;;
stop)
    for pid in "$dir"/*.pid; do [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null || true; done
    sleep 0.5
    rm -rf "$dir"
    ;;
*) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
