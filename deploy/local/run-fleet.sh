#!/usr/bin/env bash
# Run a three-replica mcp-fleet on this machine, without containers.
#
#   deploy/local/run-fleet.sh                                   # Redis on 127.0.0.1:6379/0
#   MCP_FLEET_BUS=nats://127.0.0.1:4222 deploy/local/run-fleet.sh   # NATS (JetStream on: nats-server -js)
#
# Builds the node (release), starts replicas on 127.0.0.1:8081-8083 (MCP at /mcp) with admin
# endpoints on 127.0.0.1:9091-9093, each with its own copy of the catalog file in its own
# directory (like pods with their own ConfigMap mounts), waits until each /readyz is 200, puts
# HAProxy in front on 127.0.0.1:8080 (deploy/local/haproxy.cfg: round robin, SSE-safe) when it
# is installed (`apt-get install haproxy`), and keeps running until Ctrl-C; then every replica
# gets SIGTERM (listen streams receive their completion result and the node drains within
# --shutdown-secs) and the script exits. Logs, pids and catalog copies go to a temp dir
# (printed; override with FLEET_DIR).
#
# Environment: MCP_FLEET_BUS (default redis://127.0.0.1:6379/0), CARGO_TARGET_DIR (where to
# build; default the workspace's target/), FLEET_REPLICAS (default 3, at most 9; HAProxy
# fronts exactly 3), FLEET_CATALOG (the file each replica gets a copy of; default
# deploy/local/catalog.toml; `none` serves the compiled-in demo catalog), FLEET_LB=0 to skip
# HAProxy, FLEET_NO_BUILD=1 to use an existing binary, and any other MCP_FLEET_* variable,
# which the replicas inherit (e.g. MCP_FLEET_KEEPALIVE_SECS=5).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export MCP_FLEET_BUS=${MCP_FLEET_BUS:-redis://127.0.0.1:6379/0}
REPLICAS=${FLEET_REPLICAS:-3}
CATALOG=${FLEET_CATALOG:-$ROOT/deploy/local/catalog.toml}
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
lb_pid=
stop() {
    trap - EXIT INT TERM
    if [ -n "$lb_pid" ]; then kill "$lb_pid" 2>/dev/null || true; wait "$lb_pid" 2>/dev/null || true; fi
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
    catalog_args=()
    if [ "$CATALOG" != none ]; then
        mkdir -p "$DIR/node-$i"
        cp "$CATALOG" "$DIR/node-$i/catalog.toml"
        catalog_args=(--catalog "$DIR/node-$i/catalog.toml")
    fi
    "$BIN" \
        --listen "127.0.0.1:808$i" \
        --admin-listen "127.0.0.1:909$i" \
        --node-id "local-$i" \
        "${catalog_args[@]}" \
        >"$DIR/node-$i.log" 2>&1 &
    pids+=($!)
    echo $! >"$DIR/node-$i.pid"
done

# Ready = every admin /readyz answers 200 (bus connected, handler serving).
deadline=$((SECONDS + 30))
for i in $(seq 1 "$REPLICAS"); do
    until curl -fsS -o /dev/null "http://127.0.0.1:909$i/readyz" 2>/dev/null; do
        if ! kill -0 "${pids[$((i - 1))]}" 2>/dev/null; then
            echo "run-fleet: replica $i exited; its log:" >&2
            cat "$DIR/node-$i.log" >&2
            exit 1
        fi
        if [ $SECONDS -ge $deadline ]; then
            echo "run-fleet: replica $i not ready after 30 s (bus $MCP_FLEET_BUS); its log:" >&2
            tail -n 20 "$DIR/node-$i.log" >&2
            exit 1
        fi
        sleep 0.2
    done
done

if [ "${FLEET_LB:-1}" = 1 ] && [ "$REPLICAS" = 3 ] && command -v haproxy >/dev/null; then
    LB_BIND=127.0.0.1:8080 NODE1=127.0.0.1:8081 NODE2=127.0.0.1:8082 NODE3=127.0.0.1:8083 \
        ADMIN1_PORT=9091 ADMIN2_PORT=9092 ADMIN3_PORT=9093 \
        haproxy -f "$ROOT/deploy/local/haproxy.cfg" >"$DIR/haproxy.log" 2>&1 &
    lb_pid=$!
fi

echo "run-fleet: $REPLICAS replicas up on bus $MCP_FLEET_BUS; logs and pids in $DIR"
for i in $(seq 1 "$REPLICAS"); do
    line="  replica $i: MCP http://127.0.0.1:808$i/mcp  admin http://127.0.0.1:909$i  pid ${pids[$((i - 1))]}"
    if [ "$CATALOG" != none ]; then line="$line  catalog $DIR/node-$i/catalog.toml"; fi
    echo "$line"
done
if [ -n "$lb_pid" ]; then
    echo "  load balancer (HAProxy, round robin): http://127.0.0.1:8080/mcp  log $DIR/haproxy.log"
fi
echo "run-fleet: the fleet as replica 1 sees it: curl -s http://127.0.0.1:9091/admin/fleet"
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
