#!/usr/bin/env bash
# Where a node's CPU goes while it fans changes out to HTTP/1.1 listen streams: starts a node
# (memory bus, one worker, core 0) with NODE ARGS, opens STREAMS streams from the loader on
# core 1, records the node with `perf record -g` for the event phase (after the streams are
# open), and prints the top symbols by self time (`perf report --no-children`).
#
#   loadtest/scripts/h1-profile.sh LABEL STREAMS [NODE ARGS…]
#
# Writes runs/h1-profile.LABEL.txt. Needs linux-perf. Build first:
# cargo build --release -p mcp-fleet-node -p mcp-fleet-loadtest
set -euo pipefail
cd "$(dirname "$0")/../.."
label=$1 streams=$2
shift 2
target=${CARGO_TARGET_DIR:-target}
node_bin=${NODE_BIN:-$target/release/mcp-fleet}
lt=${LOADTEST_BIN:-$target/release/mcp-fleet-loadtest}
port=18095 admin=19095
mkdir -p runs
taskset -c 0 "$node_bin" --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin" --bus memory:// \
  --max-streams $((streams * 2)) --worker-threads 1 "$@" >"runs/h1-profile.$label.node.log" 2>&1 &
node=$!
trap 'kill $node 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$admin/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
taskset -c 1 "$lt" --mcp "127.0.0.1:$port" --admin "127.0.0.1:$admin" --streams "$streams" --events 40 \
  --interval-ms 300 >/dev/null 2>&1 &
loader=$!
# Wait until every stream is open (the node's gauge), then record 8 s of the event phase.
for _ in $(seq 1 600); do
  open=$(curl -fsS "http://127.0.0.1:$admin/metrics" | awk '/^mcp_fleet_listen_streams_open /{print $2}')
  [ "${open:-0}" -ge "$streams" ] && break
  sleep 0.1
done
perf record -q -g -p "$node" -o "runs/h1-profile.$label.data" -- sleep 8 2>/dev/null
wait "$loader" || true
perf report -q -i "runs/h1-profile.$label.data" --no-children --percent-limit 1.5 --stdio -g none \
  --sort symbol 2>/dev/null | sed -e '/^$/d' -e 's/  *-  *- *$//' -e 's/  */ /g' | cut -c1-120 | head -25 \
  | tee "runs/h1-profile.$label.txt"
