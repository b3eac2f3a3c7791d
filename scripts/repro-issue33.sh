#!/usr/bin/env bash
# Re-run the reproductions of issue 33 (an outside review's security findings) against a
# node binary, as a new user would: every item starts its own `mcp-fleet` processes on free
# ports (memory:// bus, or a private redis-server in a temp dir for the 3-replica fleet behind
# HAProxy), talks to them with Python's standard library only, and stops them by pid. The
# shared brokers on 6379/4222 are not used.
#
#   cargo build --release -p mcp-fleet-node
#   scripts/repro-issue33.sh target/release/mcp-fleet            # every item
#   scripts/repro-issue33.sh target/release/mcp-fleet 2 13       # some items
#
# Prints one line per item: `item N: SAFE|UNSAFE: what happened`, each verdict computed
# from the statuses, JSON-RPC codes, RSS and timings observed in this run (the helpers are
# in scripts/repro/, one file per item, each runnable alone with the binary as argument).
# Exits 1 if any item is UNSAFE or could not be run. Logs of the nodes go to a temp dir
# (printed at the end; REPRO_DIR overrides it).
#
# Needs: python3, redis-server and haproxy (item 14), `ip` (items 1 and 5 call the node from
# a non-loopback address of this machine: loopback is exempt from the per-address limits and
# the node has no flag to change that).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${1:?usage: $0 PATH_TO_NODE_BINARY [ITEM...]}
shift
[ -x "$BIN" ] || { echo "repro-issue33: $BIN is not an executable" >&2; exit 2; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
ITEMS=("$@")
[ ${#ITEMS[@]} -gt 0 ] || ITEMS=(1 2 3 4 5 6 11 13 14)

export REPRO_DIR=${REPRO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/repro-issue33.XXXXXX")}
mkdir -p "$REPRO_DIR"
export PYTHONDONTWRITEBYTECODE=1

script_for() {
    case $1 in
        1) echo item01_sessions.py ;;
        2) echo item02_batch.py ;;
        3) echo item03_listen_taskids.py ;;
        4) echo item04_session_owner.py ;;
        5) echo item05_quota_expiry.py ;;
        6) echo item06_content_length.py ;;
        11) echo item11_admin_token_and_bus_url.py ;;
        13) echo item13_replay.py ;;
        14) echo item14_haproxy.py ;;
        *) return 1 ;;
    esac
}

failed=0
for item in "${ITEMS[@]}"; do
    if ! script=$(script_for "$item"); then
        echo "item $item: UNSAFE: no reproduction for this item in scripts/repro/"
        failed=1
        continue
    fi
    out=$(mktemp "$REPRO_DIR/item$item.XXXXXX")
    # Each helper runs in its own process and stops what it started (by pid) on exit.
    if python3 "$HERE/repro/$script" "$BIN" >"$out" 2>"$out.err"; then :; fi
    if grep -q "^item $item: " "$out"; then
        grep "^item $item: " "$out"
        grep -q "^item $item: SAFE: " "$out" || failed=1
    else
        echo "item $item: UNSAFE: the reproduction did not finish ($(tail -n 1 "$out.err" 2>/dev/null || true))"
        failed=1
    fi
done
echo "repro-issue33: node logs and helper output in $REPRO_DIR" >&2
exit "$failed"
