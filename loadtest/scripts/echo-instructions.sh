#!/usr/bin/env bash
# Instructions per `tools/call echo`, counted by callgrind: unlike req/s, the count repeats
# run to run (within ~0.2 % here) whatever else the machine does, so a small per-call cost
# (a schema check, an audit record) shows where wrk's ±20 % spread would hide it.
#
#   loadtest/scripts/echo-instructions.sh LABEL BINARY [NODE ARGS…]
#
# Starts BINARY (a release-built node) under `valgrind --tool=callgrind` on port 18603 with the
# memory bus and one worker, warms it up with wrk for 5 s, zeroes the counters, runs wrk for
# 20 s (4 connections, ../shared/bench/mcp-echo.lua, which checks every body), dumps, and
# prints the user-space instructions per request. Needs valgrind and wrk. The profile is kept
# in runs/callgrind/LABEL.*: `callgrind_annotate` on it shows where the instructions go.
# NODE ARGS containing {port} mean BINARY is not a node (the bare-hyper floor of
# ../shared/bench/README.md): it is started with just those arguments, {port} replaced:
#   loadtest/scripts/echo-instructions.sh floor ../.bench-target/release/hyper-echo {port}
# Only the main thread is counted (callgrind --separate-threads): with one worker the node
# serves every request there, as the floor does, and a background thread (the node hashes its
# own executable at start, for its identity) cannot leak into the figure.
# CACHE_SIM=1 also simulates the caches and branch predictors (valgrind's model of this
# machine's L1: 32 KiB, 8-way, 64 B lines) and prints, per request, the L1 instruction misses,
# L1 data read and write misses and mispredicted branches. Instruction counts do not show what
# a request costs in memory traffic; these do (BENCHMARKS.md, "`tools/call`, third pass").
set -euo pipefail
cd "$(dirname "$0")/../.."
label=$1 bin=$2
shift 2
port=18603
lua=${MCP_ECHO_LUA:-../shared/bench/mcp-echo.lua}
dir=runs/callgrind
mkdir -p "$dir"
rm -f "$dir/$label".*
if [[ "$*" == *"{port}"* ]]; then
  args=("${@//\{port\}/$port}")
else
  args=(--listen "127.0.0.1:$port" --bus memory:// --worker-threads 1 "$@")
fi
sim=()
[ "${CACHE_SIM:-0}" = 1 ] && sim=(--cache-sim=yes --branch-sim=yes)
valgrind --tool=callgrind --separate-threads=yes "${sim[@]}" --callgrind-out-file="$dir/$label.%p.out" "$bin" "${args[@]}" >"$dir/$label.node.log" 2>&1 &
vg=$!
trap 'kill $vg 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.2
done
wrk -t1 -c4 -d5s -s "$lua" "http://127.0.0.1:$port/mcp" >/dev/null
callgrind_control -z "$vg" >/dev/null
out=$(wrk -t1 -c4 -d20s -s "$lua" "http://127.0.0.1:$port/mcp")
callgrind_control -d "$vg" >/dev/null
summary=$(grep '^mcp-echo:' <<<"$out")
requests=$(sed 's/.*requests=\([0-9]*\).*/\1/' <<<"$summary")
grep -q 'non200=0 bad_body=0' <<<"$summary" || { echo "$label: errors in the run: $summary" >&2; exit 1; }
# The main thread's profile of this dump: LABEL.PID.out.1-01 (part 1, thread 1).
profile=$(ls -t "$dir/$label".*.out.1-01 | head -1)
read -r -a events < <(awk '/^events:/ { $1 = ""; print; exit }' "$profile")
read -r -a totals < <(awk '/^(summary|totals):/ { $1 = ""; print; exit }' "$profile")
instructions=${totals[0]}
echo "$label: $((instructions / requests)) instructions per request ($requests requests, $instructions in all; $profile)"
if [ "${CACHE_SIM:-0}" = 1 ]; then
  per=""
  for i in "${!events[@]}"; do
    case ${events[$i]} in I1mr | D1mr | D1mw | Bcm | Bim) per+=" ${events[$i]}=$((totals[i] / requests))" ;; esac
  done
  echo "$label: per request:$per (L1 instruction misses, L1 data read/write misses, mispredicted conditional/indirect branches)"
fi
