#!/usr/bin/env bash
# loadtest/scripts/audit-bench.sh: the tools/call echo figure (echo-ab.sh: one node, one
# runtime worker on core 0, wrk on core 1, ../shared/bench/mcp-echo.lua) with the audit trail
# off, to a file, and to a FIFO nobody reads (a stalled sink); three rounds, interleaved, in
# one run, each round printing the audit counters. Run it under flock /tmp/bench.lock and
# loadtest/scripts/quiet-run.sh. B= the release binary (default below).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-target/release/mcp-fleet}
D=${D:-/tmp/mcp-fleet-audit-bench}
rm -rf "$D"
mkdir -p "$D"
mkfifo "$D/stalled.fifo"
export RUST_LOG=${RUST_LOG:-warn}
METRICS='^mcp_fleet_audit_records_(dropped|written)_total' exec loadtest/scripts/echo-ab.sh 3 \
  "off|$B|" "file|$B|--audit-file $D/audit.jsonl" "stalled|$B|--audit-file $D/stalled.fifo"
