#!/usr/bin/env bash
# Open one 2025-era session on an mcp-fleet node and print its Mcp-Session-Id: POST initialize
# (protocolVersion 2025-11-25), then notifications/initialized in the session (202). Used by
# the session-store benchmark (legacy-echo.lua) in BENCHMARKS.md.
#
#   loadtest/scripts/legacy-session.sh http://127.0.0.1:18080/mcp
set -euo pipefail
url=${1:?usage: legacy-session.sh URL}
headers=$(mktemp)
trap 'rm -f "$headers"' EXIT
curl -fsS -o /dev/null -D "$headers" "$url" \
  -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -H 'MCP-Protocol-Version: 2025-11-25' \
  -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"legacy-session.sh","version":"1"}}}'
session=$(tr -d '\r' <"$headers" | awk -F': ' 'tolower($1) == "mcp-session-id" {print $2}')
if [ -z "$session" ]; then
  echo "legacy-session.sh: $url answered initialize without Mcp-Session-Id (a stateless node?)" >&2
  exit 1
fi
status=$(curl -sS -o /dev/null -w '%{http_code}' "$url" \
  -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -H 'MCP-Protocol-Version: 2025-11-25' -H "Mcp-Session-Id: $session" \
  -d '{"jsonrpc":"2.0","method":"notifications/initialized"}')
[ "$status" = 202 ] || { echo "legacy-session.sh: notifications/initialized answered $status" >&2; exit 1; }
echo "$session"
