#!/usr/bin/env bash
# Start a local fleet of release-built mcp-fleet nodes on core 0, run the load tester on core
# 1 against all of them, then stop the nodes. Every figure in BENCHMARKS.md's fleet tables
# comes from one invocation of this script (the command is printed next to each table).
#
#   loadtest/scripts/fleet-bench.sh NODES BUS NAME [loadtest args…]
#
#   NODES  how many nodes (ports 1808N for MCP, 1909N for admin)
#   BUS    redis | nats (the shared 127.0.0.1 brokers; a fresh stream per run) | memory
#          (in-process: one node only)
#   NAME   the run's name: its JSON goes to runs/NAME.json
#
# Build first: cargo build --release -p mcp-fleet-node -p mcp-fleet-loadtest
set -euo pipefail
cd "$(dirname "$0")/../.."
nodes=$1 bus=$2 name=$3
shift 3
target=${CARGO_TARGET_DIR:-target}
node_bin=${NODE_BIN:-$target/release/mcp-fleet}
loader_bin=${LOADTEST_BIN:-$target/release/mcp-fleet-loadtest}
stamp=$(date +%s)
case $bus in
  redis) bus_url="redis://127.0.0.1:6379/0?stream=bench-$stamp" ;;
  nats) bus_url="nats://127.0.0.1:4222?stream=BENCH_$stamp&prefix=bench$stamp" ;;
  memory) bus_url="memory://"; [ "$nodes" = 1 ] || { echo "BUS memory is one node" >&2; exit 2; } ;;
  *) echo "BUS must be redis, nats or memory" >&2; exit 2 ;;
esac
mkdir -p runs
pids=() args=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT
for i in $(seq 1 "$nodes"); do
  taskset -c 0 "$node_bin" --listen "127.0.0.1:1808$i" --admin-listen "127.0.0.1:1909$i" --bus "$bus_url" \
    --node-id "bench-n$i" --worker-threads 1 --max-streams 120000 --max-session-streams 120000 \
    >"runs/$name.node$i.log" 2>&1 &
  pids+=($!)
  args+=(--url "http://127.0.0.1:1808$i/mcp" --metrics "127.0.0.1:1909$i" --server-pid "$!")
done
for i in $(seq 1 "$nodes"); do
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:1909$i/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
done
taskset -c 1 "$loader_bin" "${args[@]}" --admin 127.0.0.1:19091 --json "runs/$name.json" "$@"
