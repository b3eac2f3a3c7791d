#!/usr/bin/env bash
# Run a three-replica mcp-fleet on this machine, without containers.
#
#   deploy/local/run-fleet.sh                                   # Redis on 127.0.0.1:6379/0
#   MCP_FLEET_BUS=nats://127.0.0.1:4222 deploy/local/run-fleet.sh   # NATS (JetStream on: nats-server -js)
#   deploy/local/run-fleet.sh --bin ./mcp-fleet --mcp-port 18081 --admin-port 19091 --lb-port 18080
#
# Builds the node (release) unless given a binary, starts replicas on 127.0.0.1:8081-8083 (MCP
# at /mcp) with admin endpoints on 127.0.0.1:9091-9093, each with its own copy of the catalog
# file in its own directory (like pods with their own ConfigMap mounts), waits until each
# /readyz is 200, puts HAProxy in front on 127.0.0.1:8080 (deploy/local/haproxy.cfg: round
# robin, SSE-safe) when it is installed (`apt-get install haproxy`), and keeps running until
# Ctrl-C; then every replica gets SIGTERM (listen streams receive their completion result and
# the node drains within --shutdown-secs) and the script exits. Logs, pids and catalog copies
# go to a temp dir (printed; override with FLEET_DIR).
#
# Options (each also an environment variable; the defaults are the ports above):
#   --bin PATH         FLEET_BIN          the node binary to run (then nothing is built)
#   --mcp-port N       FLEET_MCP_PORT     replica i listens on N+i-1 (default 8081)
#   --admin-port N     FLEET_ADMIN_PORT   replica i's admin endpoints on N+i-1 (default 9091)
#   --lb-port N        FLEET_LB_PORT      HAProxy's port (default 8080)
#   --replicas N       FLEET_REPLICAS     how many replicas (default 3, at most 9; HAProxy
#                                         fronts exactly 3)
#
# Environment: MCP_FLEET_BUS (default redis://127.0.0.1:6379/0), CARGO_TARGET_DIR (where to
# build; default the workspace's target/), FLEET_CATALOG (the file each replica gets a copy
# of; default deploy/local/catalog.toml; `none` serves the compiled-in demo catalog),
# FLEET_LB=0 to skip HAProxy, FLEET_NO_BUILD=1 to use an existing binary in CARGO_TARGET_DIR,
# and any other MCP_FLEET_* variable, which the replicas inherit (e.g.
# MCP_FLEET_KEEPALIVE_SECS=5).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export MCP_FLEET_BUS=${MCP_FLEET_BUS:-redis://127.0.0.1:6379/0}
REPLICAS=${FLEET_REPLICAS:-3}
CATALOG=${FLEET_CATALOG:-$ROOT/deploy/local/catalog.toml}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=${FLEET_BIN:-}
MCP_PORT=${FLEET_MCP_PORT:-8081}
ADMIN_PORT=${FLEET_ADMIN_PORT:-9091}
LB_PORT=${FLEET_LB_PORT:-8080}

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit "$1"
}

while [ $# -gt 0 ]; do
    case $1 in
        --bin) BIN=${2:?--bin needs a path}; shift 2 ;;
        --mcp-port) MCP_PORT=${2:?--mcp-port needs a port}; shift 2 ;;
        --admin-port) ADMIN_PORT=${2:?--admin-port needs a port}; shift 2 ;;
        --lb-port) LB_PORT=${2:?--lb-port needs a port}; shift 2 ;;
        --replicas) REPLICAS=${2:?--replicas needs a count}; shift 2 ;;
        -h | --help) usage 0 ;;
        *) echo "run-fleet: unknown argument $1" >&2; usage 2 ;;
    esac
done

if ! [[ $REPLICAS =~ ^[1-9]$ ]]; then
    echo "run-fleet: FLEET_REPLICAS must be 1..9" >&2
    exit 2
fi
for port in "$MCP_PORT" "$ADMIN_PORT" "$LB_PORT"; do
    if ! [[ $port =~ ^[1-9][0-9]{0,4}$ ]] || [ $((port + REPLICAS)) -gt 65536 ]; then
        echo "run-fleet: $port is not a port with room for $REPLICAS replicas" >&2
        exit 2
    fi
done
mcp_port() { echo $((MCP_PORT + $1 - 1)); }
admin_port() { echo $((ADMIN_PORT + $1 - 1)); }

# A binary of the caller's is run as it is; else the workspace's release build.
if [ -z "$BIN" ]; then
    BIN=$TARGET/release/mcp-fleet
    if [ "${FLEET_NO_BUILD:-0}" != 1 ]; then
        echo "run-fleet: building mcp-fleet-node (release) into $TARGET" >&2
        (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET cargo build --release -q -p mcp-fleet-node)
    fi
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
        --listen "127.0.0.1:$(mcp_port "$i")" \
        --admin-listen "127.0.0.1:$(admin_port "$i")" \
        --node-id "local-$i" \
        "${catalog_args[@]}" \
        >"$DIR/node-$i.log" 2>&1 &
    pids+=($!)
    echo $! >"$DIR/node-$i.pid"
done

# Ready = every admin /readyz answers 200 (bus connected, handler serving).
deadline=$((SECONDS + 30))
for i in $(seq 1 "$REPLICAS"); do
    until curl -fsS -o /dev/null "http://127.0.0.1:$(admin_port "$i")/readyz" 2>/dev/null; do
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
    LB_BIND=127.0.0.1:$LB_PORT \
        NODE1=127.0.0.1:$(mcp_port 1) NODE2=127.0.0.1:$(mcp_port 2) NODE3=127.0.0.1:$(mcp_port 3) \
        ADMIN1_PORT=$(admin_port 1) ADMIN2_PORT=$(admin_port 2) ADMIN3_PORT=$(admin_port 3) \
        haproxy -f "$ROOT/deploy/local/haproxy.cfg" >"$DIR/haproxy.log" 2>&1 &
    lb_pid=$!
fi

echo "run-fleet: $REPLICAS replicas up on bus $MCP_FLEET_BUS; logs and pids in $DIR"
for i in $(seq 1 "$REPLICAS"); do
    line="  replica $i: MCP http://127.0.0.1:$(mcp_port "$i")/mcp  admin http://127.0.0.1:$(admin_port "$i")"
    line="$line  pid ${pids[$((i - 1))]}"
    if [ "$CATALOG" != none ]; then line="$line  catalog $DIR/node-$i/catalog.toml"; fi
    echo "$line"
done
if [ -n "$lb_pid" ]; then
    echo "  load balancer (HAProxy, round robin): http://127.0.0.1:$LB_PORT/mcp  log $DIR/haproxy.log"
fi
echo "run-fleet: the fleet as replica 1 sees it: curl -s http://127.0.0.1:$(admin_port 1)/admin/fleet"
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
