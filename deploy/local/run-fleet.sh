#!/usr/bin/env bash
# Run a three-replica mcp-fleet on this machine, without containers.
#
#   deploy/local/run-fleet.sh                                   # Redis on 127.0.0.1:6379/0
#   MCP_FLEET_BUS=nats://127.0.0.1:4222 deploy/local/run-fleet.sh   # NATS (JetStream on: nats-server -js)
#
# Builds the node (release), starts replicas on 127.0.0.1:8081-8083 (MCP at /mcp) with admin
# endpoints on 127.0.0.1:9091-9093, waits until each /healthz says the bus is connected, and
# keeps running until Ctrl-C; then every replica gets SIGTERM (listen streams receive their
# completion result and the node drains within --shutdown-secs) and the script exits.
# Logs and pids go to a temp dir (printed; override with FLEET_DIR).
#
# Environment: MCP_FLEET_BUS (default redis://127.0.0.1:6379/0), CARGO_TARGET_DIR (where to
# build; default the workspace's target/), FLEET_REPLICAS (default 3, at most 9),
# FLEET_NO_BUILD=1 to use an existing binary, and any other MCP_FLEET_* variable, which the
# replicas inherit (e.g. MCP_FLEET_KEEPALIVE_SECS=5).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export MCP_FLEET_BUS=${MCP_FLEET_BUS:-redis://127.0.0.1:6379/0}
REPLICAS=${FLEET_REPLICAS:-3}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=$TARGET/release/mcp-fleet

if ! [[ $REPLICAS =~ ^[1-9]$ ]]; then
    echo "run-fleet: FLEET_REPLICAS must be 1..9" >&2
    exit 2
fi

if [ "${FLEET_NO_BUILD:-0}" != 1 ]; then
    echo "run-fleet: building mcp-fleet-node (release) into $TARGET" >&2
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET cargo build --release -q -p mcp-fleet-node)
fi
[ -x "$BIN" ] || { echo "run-fleet: no binary at $BIN" >&2; exit 1; }

DIR=${FLEET_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/mcp-fleet.XXXXXX")}
mkdir -p "$DIR"

pids=()
stop() {
    trap - EXIT INT TERM
    if [ ${#pids[@]} -gt 0 ]; then
        echo "run-fleet: stopping ${#pids[@]} replicas (SIGTERM, graceful drain)" >&2
        kill -TERM "${pids[@]}" 2>/dev/null || true
        # The node exits once its streams are closed and connections drained (--shutdown-secs).
        local deadline=$((SECONDS + ${MCP_FLEET_SHUTDOWN_SECS:-10} + 5))
        for pid in "${pids[@]}"; do
            while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
            if kill -0 "$pid" 2>/dev/null; then
                echo "run-fleet: replica pid $pid did not exit in time; SIGKILL" >&2
                kill -KILL "$pid" 2>/dev/null || true
            fi
            wait "$pid" 2>/dev/null || true
        done
        rm -f "$DIR"/node-*.pid
    fi
    echo "run-fleet: stopped; logs kept in $DIR" >&2
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for i in $(seq 1 "$REPLICAS"); do
    "$BIN" \
        --listen "127.0.0.1:808$i" \
        --admin-listen "127.0.0.1:909$i" \
        --node-id "local-$i" \
        >"$DIR/node-$i.log" 2>&1 &
    pids+=($!)
    echo $! >"$DIR/node-$i.pid"
done

# Ready = every admin /healthz answers 200 (bus connected).
deadline=$((SECONDS + 30))
for i in $(seq 1 "$REPLICAS"); do
    until curl -fsS -o /dev/null "http://127.0.0.1:909$i/healthz" 2>/dev/null; do
        if ! kill -0 "${pids[$((i - 1))]}" 2>/dev/null; then
            echo "run-fleet: replica $i exited; its log:" >&2
            cat "$DIR/node-$i.log" >&2
            exit 1
        fi
        if [ $SECONDS -ge $deadline ]; then
            echo "run-fleet: replica $i not healthy after 30 s (bus $MCP_FLEET_BUS); its log:" >&2
            tail -n 20 "$DIR/node-$i.log" >&2
            exit 1
        fi
        sleep 0.2
    done
done

echo "run-fleet: $REPLICAS replicas up on bus $MCP_FLEET_BUS; logs and pids in $DIR"
for i in $(seq 1 "$REPLICAS"); do
    echo "  replica $i: MCP http://127.0.0.1:808$i/mcp  admin http://127.0.0.1:909$i  pid ${pids[$((i - 1))]}"
done
echo "run-fleet: Ctrl-C stops them all"

# Wait until a replica dies or we are interrupted (the traps stop the rest).
while :; do
    for i in "${!pids[@]}"; do
        if ! kill -0 "${pids[$i]}" 2>/dev/null; then
            echo "run-fleet: replica $((i + 1)) exited unexpectedly; last log lines:" >&2
            tail -n 20 "$DIR/node-$((i + 1)).log" >&2
            exit 1
        fi
    done
    sleep 1
done
