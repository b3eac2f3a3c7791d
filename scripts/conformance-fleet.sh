#!/usr/bin/env bash
# The official MCP conformance suite against a FLEET: three fixture nodes on one event bus
# behind HAProxy round robin (no affinity), so every request of a session may land on another
# replica — the 2025 era's session lookups, its GET stream, and the sampling and elicitation
# answers that must find the call waiting on another node; and the 2026 era's listen streams
# hearing triggers fired on another node.
#
#   scripts/conformance-fleet.sh [BUS_URL]     (default: a private stream on redis://127.0.0.1:6379/0)
#
# Needs the fixture binary built (`cargo build -p mcp-fleet-conformance`, found under
# $CARGO_TARGET_DIR or ./target) and haproxy. Prints the verdicts of scripts/conformance.sh (the
# two revisions, and the tasks-* extension scenarios, whose task store the nodes share through
# the bus); exits 1 if any fails. Every process it starts is stopped by pid on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=${CARGO_TARGET_DIR:-target}
BIN=$TARGET/debug/mcp-fleet-conformance
[ -x "$BIN" ] || { echo "build the fixture server first: cargo build -p mcp-fleet-conformance" >&2; exit 2; }
command -v haproxy >/dev/null || { echo "haproxy is not installed" >&2; exit 2; }
STREAM=mcp-fleet-conformance-$$
BUS=${1:-"redis://127.0.0.1:6379/0?stream=$STREAM"}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

DIR=$(mktemp -d "${TMPDIR:-/tmp}/mcp-conformance-fleet.XXXXXX")
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$DIR"
    # The default bus is a private stream on the shared Redis: remove it and its keyspaces.
    if [ $# -eq 0 ] && command -v redis-cli >/dev/null; then
        redis-cli --scan --pattern "*$STREAM*" | xargs -r redis-cli del >/dev/null || true
    fi
}
trap cleanup EXIT

SERVERS=""
for i in 1 2 3; do
    port=$(free_port)
    "$BIN" --listen "127.0.0.1:$port" --bus "$BUS" --node-id "conformance-$i" >"$DIR/node$i.log" 2>&1 &
    PIDS+=($!)
    SERVERS+="    server node$i 127.0.0.1:$port"$'\n'
    for _ in $(seq 1 100); do answers "$port" && break; sleep 0.1; done
    answers "$port" || { echo "fixture node $i did not start:" >&2; cat "$DIR/node$i.log" >&2; exit 1; }
done

LB=$(free_port)
cat >"$DIR/haproxy.cfg" <<CFG
# Round robin per request, no stickiness: as deploy/local/haproxy.cfg, without health checks
# (the fixture server has no admin port).
defaults
    mode http
    timeout connect 5s
    timeout client 1h
    timeout server 1h
    timeout http-request 30s
    timeout http-keep-alive 60s

frontend mcp
    bind 127.0.0.1:$LB
    default_backend fleet

backend fleet
    balance roundrobin
$SERVERS
CFG
haproxy -f "$DIR/haproxy.cfg" -db >"$DIR/haproxy.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do answers "$LB" && break; sleep 0.1; done

echo "conformance against 3 fixture nodes on $BUS behind HAProxy round robin (127.0.0.1:$LB)"
status=0
for revision in 2026-07-28 2025-11-25; do
    bash scripts/conformance.sh "http://127.0.0.1:$LB/mcp" "$revision" || status=1
done
exit $status
