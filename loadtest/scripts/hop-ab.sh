#!/usr/bin/env bash
# The cross-replica hop for several node builds, in the same run: per round and variant, two
# fresh nodes on the shared Redis (a fresh stream each round), both on core 0 with one worker;
# the loader (core 1) holds STREAMS HTTP/1.1 listen streams on node B and publishes EVENTS
# changes INTERVAL_MS apart through node A's admin port, so every change crosses the broker.
# Prints per variant and round: publish → frame p50 / p99, and node B's CPU per delivery.
#
#   loadtest/scripts/hop-ab.sh ROUNDS STREAMS 'LABEL|NODE BINARY' 'LABEL|NODE BINARY' …
#
# EVENTS (default 100), INTERVAL_MS (default 20). JSON reports: runs/hop-ab.LABEL.N.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=$1 streams=$2
shift 2
target=${CARGO_TARGET_DIR:-target}
lt=${LOADTEST_BIN:-$target/release/mcp-fleet-loadtest}
events=${EVENTS:-100} interval=${INTERVAL_MS:-20}
mkdir -p runs
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT

ready() { # admin port
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$1/readyz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

for n in $(seq 1 "$rounds"); do
  for variant in "$@"; do
    label=${variant%%|*} bin=${variant#*|}
    bus="redis://127.0.0.1:6379/0?stream=hop-$label-$n-$(date +%s)"
    pids=()
    for node in a:1 b:2; do
      taskset -c 0 "$bin" --listen "127.0.0.1:1818${node#*:}" --admin-listen "127.0.0.1:1919${node#*:}" \
        --bus "$bus" --node-id "hop-${node%%:*}" --worker-threads 1 --max-streams $((streams * 2)) \
        >>"runs/hop-ab.$label.node.log" 2>&1 &
      pids+=($!)
    done
    ready 19191 && ready 19192
    json=runs/hop-ab.$label.$n.json
    taskset -c 1 "$lt" --mcp 127.0.0.1:18182 --admin 127.0.0.1:19191 --streams "$streams" --events "$events" \
      --interval-ms "$interval" --server-pid "${pids[1]}" --json "$json" >/dev/null 2>&1
    cleanup
    python3 - "$label" "$n" "$json" <<'EOF'
import json, sys
label, n, path = sys.argv[1:]
d = json.load(open(path))
lat, s = d["phases"]["events"]["deliveryLatencyUs"], d["server"]
lost = d["phases"]["events"]["streamsComplete"] != d["phases"]["open"]["opened"]
print(f"{label:<12} round {n}: p50 {lat['p50'] / 1000:.2f} ms  p99 {lat['p99'] / 1000:.2f} ms  "
      f"node B {s['cpuPerDeliveryUs']:.2f} µs/delivery{'  LOST' if lost else ''}")
EOF
  done
done
