#!/usr/bin/env bash
# Smoke test of a running local fleet (deploy/local/run-fleet.sh): a change published on one
# replica must reach a listen stream held on another, through the bus.
#
#   deploy/local/smoke.sh            # listen on replica 2, publish on replica 1
#
# 1. opens `subscriptions/listen` (toolsListChanged) on replica 2 with curl -N and waits for
#    the acknowledgement, so the subscription is registered before anything is published;
# 2. publishes a tools change through replica 1's admin endpoint (POST /admin/notify);
# 3. expects `notifications/tools/list_changed` on the stream within 5 s.
# Prints PASS or FAIL and exits 0 or 1. Only talks to 127.0.0.1.
#
# Environment: LISTEN_URL (default http://127.0.0.1:8082/mcp), ADMIN_URL (default
# http://127.0.0.1:9091), SMOKE_TIMEOUT (seconds, default 5), ADMIN_TOKEN (sent as
# `Authorization: Bearer …` to /admin/notify when set: replicas started with an admin token,
# e.g. a cluster reached through kubectl port-forward).
set -euo pipefail

LISTEN_URL=${LISTEN_URL:-http://127.0.0.1:8082/mcp}
ADMIN_URL=${ADMIN_URL:-http://127.0.0.1:9091}
TIMEOUT=${SMOKE_TIMEOUT:-5}
VERSION=2026-07-28

work=$(mktemp -d "${TMPDIR:-/tmp}/mcp-fleet-smoke.XXXXXX")
stream=$work/stream.sse
curl_pid=
cleanup() {
    if [ -n "$curl_pid" ]; then kill "$curl_pid" 2>/dev/null || true; wait "$curl_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*"
    if [ -s "$stream" ]; then
        echo "--- listen stream so far:"
        cat "$stream"
    fi
    exit 1
}

# Wait until $stream contains $1, for at most $2 seconds.
await() {
    local deadline=$((SECONDS + $2))
    until grep -q -- "$1" "$stream" 2>/dev/null; do
        [ $SECONDS -lt "$deadline" ] || return 1
        kill -0 "$curl_pid" 2>/dev/null || { grep -q -- "$1" "$stream" 2>/dev/null; return; }
        sleep 0.05
    done
}

body=$(cat <<JSON
{"jsonrpc":"2.0","id":"smoke-listen","method":"subscriptions/listen","params":{
  "notifications":{"toolsListChanged":true},
  "_meta":{"io.modelcontextprotocol/protocolVersion":"$VERSION",
           "io.modelcontextprotocol/clientCapabilities":{}}}}
JSON
)

curl -sN --max-time $((TIMEOUT + 15)) \
    -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -H "MCP-Protocol-Version: $VERSION" \
    -H 'Mcp-Method: subscriptions/listen' \
    --data-binary "$body" \
    "$LISTEN_URL" >"$stream" 2>"$work/curl.err" &
curl_pid=$!

await 'notifications/subscriptions/acknowledged' 5 \
    || fail "no acknowledgement on the listen stream at $LISTEN_URL ($(cat "$work/curl.err"))"

auth=()
if [ -n "${ADMIN_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $ADMIN_TOKEN"); fi
published=$(curl -sS --max-time 5 -w '\n%{http_code}' -H 'Content-Type: application/json' "${auth[@]}" \
    -d '{"kind":"tools"}' "$ADMIN_URL/admin/notify") || fail "could not reach $ADMIN_URL/admin/notify"
code=${published##*$'\n'}
[ "$code" = 200 ] || fail "POST $ADMIN_URL/admin/notify answered $code: ${published%$'\n'*}"

start=$(date +%s%N)
await 'notifications/tools/list_changed' "$TIMEOUT" \
    || fail "no notifications/tools/list_changed within ${TIMEOUT}s of publishing (${published%$'\n'*})"
elapsed_ms=$((($(date +%s%N) - start) / 1000000))

echo "PASS: published on $ADMIN_URL (${published%$'\n'*}), heard on $LISTEN_URL after ~${elapsed_ms} ms"
