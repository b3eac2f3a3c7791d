#!/usr/bin/env bash
# The session store's cost per request (BENCHMARKS.md): one release-built node on core 0 (one
# runtime worker), wrk on core 1 (WRK_CONNECTIONS connections, default 64; WRK_DURATION each,
# default 8s), four cases in one run:
#
#   2026          tools/call echo, stateless 2026-07-28 (../shared/bench/mcp-echo.lua)
#   2025-session  tools/call echo in one 2025-11-25 session (legacy-echo.lua): each request
#                 loads the session record from the bus keyspace (one GET on Redis)
#   2025-ping     ping in that session: the session load and little else
#   2025-stateless tools/call echo, 2025-11-25, node restarted with --legacy stateless (no
#                 session, no store): the era's bridging cost without the store
#
#   loadtest/scripts/session-bench.sh BUS NAME
#
#   BUS   memory | redis (the shared 127.0.0.1:6379; a fresh stream per run, removed after)
#   NAME  the run's name: wrk's output goes to runs/NAME.txt
#
# Build first: cargo build --release -p mcp-fleet-node; needs wrk and curl. NODE_FLAGS adds flags
# to the node (e.g. --session-cache-ms 1000).
set -euo pipefail
cd "$(dirname "$0")/../.."
bus=$1 name=$2
target=${CARGO_TARGET_DIR:-target}
node_bin=$target/release/mcp-fleet
echo_lua=${MCP_ECHO_LUA:-../shared/bench/mcp-echo.lua}
legacy_lua=loadtest/scripts/legacy-echo.lua
duration=${WRK_DURATION:-8s}
connections=${WRK_CONNECTIONS:-64}
stamp=$(date +%s)
case $bus in
  memory) bus_url="memory://" ;;
  redis) bus_url="redis://127.0.0.1:6379/0?stream=bench-sessions-$stamp" ;;
  *) echo "BUS must be memory or redis" >&2; exit 2 ;;
esac
url=http://127.0.0.1:18080/mcp
mkdir -p runs
out=runs/$name.txt
: >"$out"
pid=
stop_node() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; }
cleanup() {
  stop_node || true
  if [ "$bus" = redis ] && command -v redis-cli >/dev/null; then
    redis-cli -h 127.0.0.1 DEL "bench-sessions-$stamp" "bench-sessions-$stamp:version" >/dev/null || true
  fi
}
trap cleanup EXIT
start_node() { # extra node flags…
  taskset -c 0 "$node_bin" ${NODE_FLAGS:-} --listen 127.0.0.1:18080 --admin-listen 127.0.0.1:19090 --bus "$bus_url" \
    --node-id bench-sessions --worker-threads 1 "$@" >>"runs/$name.node.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do
    curl -fsS http://127.0.0.1:19090/readyz >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "the node did not become ready" >&2
  exit 1
}
bench() { # case-name script [env…]
  local case=$1 script=$2
  shift 2
  echo "== $case" | tee -a "$out"
  env "$@" taskset -c 1 wrk -t1 -c"$connections" -d"$duration" --latency -s "$script" "$url" | tee -a "$out"
}
warm_up() { # a short unreported run, so the first case does not pay for the node's warm-up
  env "$@" taskset -c 1 wrk -t1 -c"$connections" -d2s -s "$echo_lua" "$url" >/dev/null
}
start_node
session=$(loadtest/scripts/legacy-session.sh "$url")
warm_up
bench 2026 "$echo_lua"
bench 2025-session "$legacy_lua" MCP_SESSION_ID="$session"
bench 2025-ping "$legacy_lua" MCP_SESSION_ID="$session" MCP_METHOD=ping
stop_node
start_node --legacy stateless
warm_up
bench 2025-stateless "$legacy_lua" MCP_SESSION_ID=
grep -E '^== |-json: ' "$out"
