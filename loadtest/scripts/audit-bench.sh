#!/usr/bin/env bash
# loadtest/scripts/audit-bench.sh: tools/call echo on one node (one runtime worker, core 0), wrk on
# core 1 (mcp-echo.lua from shared/bench): audit off, audit to a file, audit to a FIFO nobody reads
# (a stalled sink); three rounds, interleaved, in one run. Run it under flock /tmp/bench.lock and
# loadtest/scripts/quiet-run.sh. B= the release binary (default below).
B=${B:-target/release/mcp-fleet}
L=${L:-../shared/bench/mcp-echo.lua}
D=${D:-/tmp/mcp-fleet-audit-bench}; rm -rf $D; mkdir -p $D; mkfifo $D/stalled.fifo
run() {
  label=$1; shift
  RUST_LOG=warn taskset -c 0 $B --listen 127.0.0.1:18602 --admin-listen 127.0.0.1:18603 --worker-threads 1 "$@" >$D/node.log 2>&1 &
  P=$!
  sleep 1.5
  taskset -c 1 wrk -t1 -c64 -d2s -s $L http://127.0.0.1:18602/mcp >/dev/null
  echo "== $label: $B --listen 127.0.0.1:18602 --worker-threads 1 $*"
  taskset -c 1 wrk -t1 -c64 -d8s --latency -s $L http://127.0.0.1:18602/mcp | grep -E "Requests/sec|Latency|50%|99%|mcp-echo"
  curl -s http://127.0.0.1:18603/metrics | grep -E "^mcp_fleet_audit_records_(dropped|written)_total"
  kill -TERM $P; wait $P
  rm -f $D/audit.jsonl
}
for round in 1 2 3; do
  echo "### round $round"
  run "audit off"
  run "audit to a file" --audit-file $D/audit.jsonl
  run "audit to a stalled sink (FIFO nobody reads)" --audit-file $D/stalled.fifo
done
