#!/usr/bin/env python3
"""Regenerate the load-test tables of BENCHMARKS.md from saved `--json` reports.

Usage: python3 loadtest/scripts/tables.py RUN.json [RUN.json ...]

Each file is one run of mcp-fleet-loadtest (schema "mcp-fleet-loadtest/1"); its label is the
file name without ".json". Runs of 2025-era GET streams (`--era 2025`) say so in the protocol
column. Prints two Markdown tables: fan-out (every run) and convergence of
re-listing clients (runs made with --relist). Standard library only.
"""

import json
import os
import sys

SCHEMA = "mcp-fleet-loadtest/1"


def ms(us):
    """Microseconds as a short millisecond figure."""
    if us is None:
        return "—"
    return f"{us / 1000:.1f} ms" if us >= 10_000 else f"{us / 1000:.2f} ms"


def load(path):
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    if report.get("schema") != SCHEMA:
        sys.exit(f"{path}: not a {SCHEMA} report (schema {report.get('schema')!r})")
    label = os.path.splitext(os.path.basename(path))[0]
    return label, report


def shape(inputs):
    s = inputs["shape"]
    if s["kind"] == "events":
        return f"{s['events']} × every {s['intervalMs']} ms"
    if s["kind"] == "rate":
        return f"{s['rate']:g}/s for {s['durationSecs']:g} s"
    return f"burst of {s['events']}"


def node_sum(report, field, counter=None):
    total, seen = 0.0, False
    for node in report.get("nodes", []):
        delta = node.get("delta")
        if not delta:
            continue
        seen = True
        total += delta["counters"].get(counter, 0.0) if counter else delta.get(field, 0.0)
    return f"{total:.0f}" if seen else "—"


def fanout_row(label, r):
    i, e, v = r["inputs"], r["phases"]["events"], r["verify"]
    server = r.get("server") or {}
    cpu = f"{server['cpuPerDeliveryUs']:.2f} µs" if server else "—"
    rss = f"{server['rssPerStreamBytes'] / 1024:.1f} KiB" if server else "—"
    proto = i["protocol"] + (f" ×{i['h2StreamsPerConn']}" if i["protocol"] == "h2c" else "")
    if i.get("era") == "2025":  # reports before --era have no "era": listen streams
        proto += ", 2025 GET"
    return [
        label,
        f"{i['streams']:,}",
        proto,
        str(i["workers"] or 1),
        f"{i['publishVia']}",
        shape(i),
        ms(e["fanoutUs"]["p50"]),
        f"{ms(e['deliveryLatencyUs']['p50'])} / {ms(e['deliveryLatencyUs']['p99'])}",
        cpu,
        rss,
        node_sum(r, None, "coalesced"),
        f"{v['lost']}" + ("" if v["passed"] else " ✗"),
    ]


def convergence_row(label, r):
    rl, i = r["phases"]["relist"], r["inputs"]
    c, s = rl["convergenceUs"], rl["storm"]
    # 1 = every client holds the same snapshot of each list.
    revisions = max((len(v) for v in rl["revisions"].values()), default=0)
    return [
        label,
        f"{i['streams']:,}",
        shape(i),
        f"{ms(c['p50'])} / {ms(c['p99'])} / {ms(c['max'])}",
        f"{s['requests']:,}",
        f"{s['ratePerSec']:,.0f}/s",
        f"{ms(s['requestLatencyUs']['p50'])} / {ms(s['requestLatencyUs']['p99'])}",
        f"{s['errors']} / {s['fetchErrors']}",
        node_sum(r, "listRequests"),
        str(rl["unconverged"]),
        str(revisions),
    ]


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main(paths):
    if not paths:
        sys.exit(__doc__)
    runs = [load(p) for p in paths]
    print(table(
        ["run", "streams", "protocol", "loaders", "publish", "events", "publish → last stream (median)",
         "delivery p50 / p99", "server CPU per delivery", "RSS per stream", "coalesced (nodes)", "lost"],
        [fanout_row(label, r) for label, r in runs],
    ))
    relisting = [(label, r) for label, r in runs if r["phases"].get("relist")]
    if relisting:
        print()
        print(table(
            ["run", "clients", "events", "time to convergence p50 / p99 / max", "re-list requests", "rate",
             "request p50 / p99 (client)", "errors (pages / fetches)", "list requests (nodes)", "unconverged",
             "distinct revisions held (max per list)"],
            [convergence_row(label, r) for label, r in relisting],
        ))


if __name__ == "__main__":
    main(sys.argv[1:])
