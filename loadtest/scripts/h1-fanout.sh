#!/usr/bin/env bash
# HTTP/1.1 listen fan-out of one node against the machine's limit, in the same run: rounds
# alternate between the raw limit writer (`--mode limit-writer`) and each node variant, so the
# machine's drift hits all of them alike; the script prints, per variant, the median over the
# rounds of server CPU per delivery, publish → all streams (the fan-out p50 across publishes),
# and RSS per open stream. Two limit rows: `limit`, the writer's CPU per frame and one round's
# loop over the sockets; `limit-read`, when each round had reached the last socket as the
# limit's tokio reader saw it (a reader like the load tester's, which times the node's rows).
# "write pass": the writer's own time per round, the limit's loop over the sockets beside the
# node's mcp_fleet_listen_fanout_seconds (mean over the run: one event offered and written to
# every stream, as the node's thread timed it; "-" for a build without that histogram).
#
#   loadtest/scripts/h1-fanout.sh ROUNDS STREAMS 'LABEL|NODE ARGS…' 'LABEL|NODE ARGS…' …
#
# Each node round starts a fresh node (memory bus) on NODE_CPUS (default core 0; NODE ARGS
# starting with `@CPUS ` pin that variant to CPUS instead, e.g. '2w|@0,1 --worker-threads 2',
# and with `bin=PATH ` run another build, e.g. 'before|bin=/tmp/mcp-fleet-before')
# with `--worker-threads 1` unless the args say otherwise, opens STREAMS HTTP/1.1 listen streams
# (one connection each) from the loader on LOADER_CPUS (default core 1), publishes EVENTS
# (default 20) tools changes INTERVAL_MS (default 300) apart, and writes
# runs/h1-fanout.LABEL.N.json. The limit writer runs on NODE_CPUS, its reader on LOADER_CPUS.
# LOADER_ARGS are passed to every node round's loader (e.g. `--h2-streams-per-conn 100` for the
# same table over h2c); SKIP_LIMIT=1 leaves out the limit writer.
# Wrap it for a quiet machine: loadtest/scripts/quiet-run.sh loadtest/scripts/h1-fanout.sh …
# Build first: cargo build --release -p mcp-fleet-node -p mcp-fleet-loadtest
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=$1 streams=$2
shift 2
target=${CARGO_TARGET_DIR:-target}
node_bin=${NODE_BIN:-$target/release/mcp-fleet}
lt=${LOADTEST_BIN:-$target/release/mcp-fleet-loadtest}
node_cpus=${NODE_CPUS:-0} loader_cpus=${LOADER_CPUS:-1}
events=${EVENTS:-20} interval=${INTERVAL_MS:-300}
port=18093 admin=19093
mkdir -p runs
declare -A rows
labels=()
[ -n "${SKIP_LIMIT:-}" ] || labels=(limit limit-read)
for variant in "$@"; do labels+=("${variant%%|*}"); done

limit_round() {
  taskset -c "$node_cpus" "$lt" --mode limit-writer --mcp "127.0.0.1:$port" --streams "$streams" \
    --events "$events" --interval-ms "$interval" >runs/h1-fanout.limit.log 2>&1 &
  local writer=$!
  sleep 0.5
  taskset -c "$loader_cpus" "$lt" --mode limit-reader --mcp "127.0.0.1:$port" --streams "$streams" \
    >runs/h1-fanout.limit-reader.log
  wait "$writer"
  # "… CPU 10.52 µs per frame; one round to all N sockets: median 154.2ms"
  sed -n 's/.*CPU \([0-9.]*\) µs per frame.*median \(.*\)$/\1 \2 - \2/p' runs/h1-fanout.limit.log
}

node_round() { # label args n
  local label=$1 args=$2 n=$3 cpus=$node_cpus bin=$node_bin word
  while [[ $args == @* || $args == bin=* ]]; do
    word=${args%% *}
    case $word in @*) cpus=${word#@} ;; bin=*) bin=${word#bin=} ;; esac
    [[ $args == *" "* ]] && args=${args#* } || args=
  done
  # shellcheck disable=SC2086 # the node arguments are meant to split
  taskset -c "$cpus" "$bin" --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin" \
    --bus memory:// --max-streams $((streams * 2)) \
    $( [[ $args == *--worker-threads* ]] || echo --worker-threads 1 ) $args \
    >>"runs/h1-fanout.$label.node.log" 2>&1 &
  local node=$!
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$admin/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  local json=runs/h1-fanout.$label.$n.json
  taskset -c "$loader_cpus" "$lt" --mcp "127.0.0.1:$port" --admin "127.0.0.1:$admin" --streams "$streams" \
    --events "$events" --interval-ms "$interval" --server-pid "$node" --json "$json" ${LOADER_ARGS:-} >/dev/null # shellcheck disable=SC2086
  # The node's own write pass per event (mcp_fleet_listen_fanout_seconds: sum / count), in ms.
  local pass
  pass=$(curl -fsS "http://127.0.0.1:$admin/metrics" | awk '/^mcp_fleet_listen_fanout_seconds_sum /{s=$2}
    /^mcp_fleet_listen_fanout_seconds_count /{c=$2} END{if (c) printf "%.1fms", s*1000/c; else print "-"}')
  kill "$node"
  wait "$node" 2>/dev/null || true
  python3 - "$json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s, e = d["server"], d["phases"]["events"]
lost = e["streamsComplete"] != d["phases"]["open"]["opened"]
print(f'{s["cpuPerDeliveryUs"]:.2f} {e["fanoutUs"]["p50"] / 1000:.1f}ms {s["rssPerStreamBytes"] / 1024:.1f}KiB{" LOST" if lost else ""}', end=' ')
EOF
  echo "$pass"
}

for n in $(seq 1 "$rounds"); do
  if [ -z "${SKIP_LIMIT:-}" ]; then
    rows[limit]+="$(limit_round)"$'\n'
    # The same rounds as the reader saw them: "… sockets: median 61.2 ms over 20 rounds"
    rows[limit-read]+="$(sed -n 's/.*sockets: median \([0-9.]*\) ms.*/- \1ms - -/p' runs/h1-fanout.limit-reader.log)"$'\n'
  fi
  for variant in "$@"; do
    label=${variant%%|*} args=${variant#*|}
    rows[$label]+="$(node_round "$label" "$args" "$n")"$'\n'
  done
  echo "round $n done" >&2
done

printf '%-24s %-26s %-26s %-26s %s\n' variant "CPU/delivery µs (rounds)" "publish→all (rounds)" "write pass (rounds)" "RSS/stream"
for label in "${labels[@]}"; do
  cpu=$(awk 'NF{print $1}' <<<"${rows[$label]}" | paste -sd' ')
  fan=$(awk 'NF{print $2}' <<<"${rows[$label]}" | paste -sd' ')
  rss=$(awk 'NF{print $3}' <<<"${rows[$label]}" | paste -sd' ')
  pass=$(awk 'NF{print $4}' <<<"${rows[$label]}" | paste -sd' ')
  printf '%-24s %-26s %-26s %-26s %s\n' "$label" "$cpu" "$fan" "$pass" "$rss"
done
