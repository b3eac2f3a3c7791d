#!/usr/bin/env bash
# The `tools/call` echo figure for several node builds or flag sets, in the same run: rounds
# alternate between the variants (so the machine's drift hits all of them alike) and the
# script prints each variant's median req/s and p50 latency, and the server's CPU time per
# request (from /proc/PID/schedstat; its ratio is that of the rates the CPU time allows).
#
#   loadtest/scripts/echo-ab.sh ROUNDS 'LABEL|BINARY|NODE ARGS…' 'LABEL|BINARY|NODE ARGS…' …
#
# Each round starts the variant's node on core 0 with one worker (a fresh process, memory
# bus, port 18602), warms it up for 2 s, then runs wrk for WRK_SECS (default 8) on core 1
# with 64 connections and ../shared/bench/mcp-echo.lua, which checks every body. Any
# non-200 or bad body fails the run. Raw wrk lines go to runs/echo-ab.LABEL.log.
# METRICS=REGEX: the node also serves its admin port (18604), and after each round the
# /metrics lines matching REGEX are printed (e.g. a counter of what the variant dropped).
# For a quiet machine wrap it: loadtest/scripts/quiet-run.sh loadtest/scripts/echo-ab.sh …
# A variant whose ARGS contain {port} is not a node: BINARY is started on core 0 with just
# those ARGS, {port} replaced (no admin port, so no METRICS). The bare-hyper floor of
# ../shared/bench/README.md is then one more variant of the same run:
#   'floor|../.bench-target/release/hyper-echo|{port}'
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=$1
shift
lua=${MCP_ECHO_LUA:-../shared/bench/mcp-echo.lua}
secs=${WRK_SECS:-8}
port=18602
admin_port=18604
mkdir -p runs
declare -A rps_of p50_of cpu_of
labels=()
for variant in "$@"; do
  IFS='|' read -r label _ _ <<<"$variant"
  labels+=("$label")
  : >"runs/echo-ab.$label.log"
done

run_round() { # variant → appends "rps p50_us" to the label's list
  local label bin args
  IFS='|' read -r label bin args <<<"$1"
  local admin=() raw=""
  [[ "$args" == *"{port}"* ]] && raw=1
  [ -z "${METRICS:-}" ] || [ -n "$raw" ] || admin=(--admin-listen "127.0.0.1:$admin_port")
  # shellcheck disable=SC2086 # the arguments are meant to split
  if [ -n "$raw" ]; then
    taskset -c 0 "$bin" ${args//\{port\}/$port} >>"runs/echo-ab.$label.node.log" 2>&1 &
  else
    taskset -c 0 "$bin" --listen "127.0.0.1:$port" "${admin[@]}" --bus memory:// --worker-threads 1 $args \
      >>"runs/echo-ab.$label.node.log" 2>&1 &
  fi
  local node=$!
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
  taskset -c 1 wrk -t1 -c64 -d2s -s "$lua" "http://127.0.0.1:$port/mcp" >/dev/null
  local out ran_before ran_after
  # schedstat's first field: nanoseconds the process ran on a CPU (time the hypervisor stole
  # is not in it), which spreads less than req/s on a shared machine.
  ran_before=$(cut -d' ' -f1 "/proc/$node/schedstat")
  out=$(taskset -c 1 wrk -t1 -c64 "-d${secs}s" --latency -s "$lua" "http://127.0.0.1:$port/mcp")
  ran_after=$(cut -d' ' -f1 "/proc/$node/schedstat")
  if [ -n "${METRICS:-}" ] && [ -z "$raw" ]; then
    curl -fsS "http://127.0.0.1:$admin_port/metrics" | grep -E "$METRICS" | sed "s/^/echo-ab: $label: /" >&2 || true
  fi
  kill "$node"
  wait "$node" 2>/dev/null || true
  echo "$out" >>"runs/echo-ab.$label.log"
  local json
  json=$(grep '^mcp-echo-json:' <<<"$out" | sed 's/^mcp-echo-json: //')
  python3 - "$json" <<'EOF' || { echo "echo-ab: $label: errors in the run" >&2; exit 1; }
import json, sys
r = json.loads(sys.argv[1])
sys.exit(1 if r["non200"] or r["bad_body"] or r["errors_socket"] else 0)
EOF
  rps_of[$label]+="$(python3 -c 'import json,sys; print(round(json.loads(sys.argv[1])["rps"]))' "$json") "
  p50_of[$label]+="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["lat_p50_us"])' "$json") "
  cpu_of[$label]+="$(python3 -c 'import json,sys; print(round((int(sys.argv[3]) - int(sys.argv[2])) / 1000 / json.loads(sys.argv[1])["requests"], 2))' "$json" "$ran_before" "$ran_after") "
}

for round in $(seq 1 "$rounds"); do
  for variant in "$@"; do run_round "$variant"; done
  echo "echo-ab: round $round of $rounds done" >&2
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
first="" first_cpu=""
for label in "${labels[@]}"; do
  m=$(median <<<"${rps_of[$label]}")
  p=$(median <<<"${p50_of[$label]}")
  c=$(median <<<"${cpu_of[$label]}")
  [ -n "$first" ] || { first=$m; first_cpu=$c; }
  ratio=$(python3 -c "print(f'{$m / $first:.3f}')")
  cpu_ratio=$(python3 -c "print(f'{$first_cpu / $c:.3f}')")
  echo "$label: median ${m} req/s (rounds: ${rps_of[$label]% }), median p50 ${p} µs, ${ratio}× the first variant;" \
    "server CPU median ${c} µs per request (rounds: ${cpu_of[$label]% }), ${cpu_ratio}× the first variant's rate"
done
