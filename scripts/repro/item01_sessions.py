"""Item 1: what an anonymous 2025-era caller may make a node hold.

(a) 3 rounds of 100 `initialize` without a token, each with a 3 MB `capabilities` object
    (was, for 100: 100 sessions, RSS 26 -> 411 MiB): each must be refused (-32602, HTTP 400),
    no session, and RSS must not grow with the requests (at most 160 MiB over all 300: what
    the allocator keeps of the refused bodies, measured flat at 50-110 MiB over 1,000). The
    bound itself is probed at 15 KiB (admitted) and just past 16 KiB (refused).
(b) Sessions per client address. Loopback is exempt by default and the node has no flag to
    turn that off (HandlerOptions::loopback_exempt_from_address_limit is library-only), so
    the node listens on a non-loopback address of this machine and is called from it:
    --max-sessions-per-address 3 -> 3 admitted, the 4th 429, admitted again after a DELETE;
    the default (1,000) -> 1,000 admitted, the 1,001st 429. The same small cap from loopback
    admits 5 (the documented exemption).
(c) `resources/subscribe` per session: 1,000 URIs (the default) admitted, the 1,001st
    -32602; a URI of 2,049 bytes (default max URI bytes 2,048) -32602.
"""

import json
import sys

import lib

# RSS may grow by what the allocator keeps of the refused bodies' buffers (a few 3 MB bodies
# per worker thread: measured 50-110 MiB, flat over 1,000 requests), never per request: the
# issue's 100 requests added 385 MiB, so 300 would add over 1 GiB.
ROUNDS = 3
RSS_GROWTH_LIMIT_MIB = 160


def initialize(client, capabilities):
    body = json.dumps(lib.initialize_body(capabilities)).encode()
    status, hdrs, data = client.send("POST", body, lib.headers_2025())
    return status, hdrs.get("mcp-session-id"), lib.error_code(data, hdrs.get("content-type", ""))


def open_sessions(client, count):
    """Statuses of `count` initializes (the sessions are kept)."""
    return [lib.Session2025(client).init_status for _ in range(count)]


def main():
    lib.binary()
    problems, notes = [], []

    # (a) 3 MB capabilities, 100 times, from loopback.
    node = lib.Node(["--bus", "memory://", "--max-sessions-per-address", "3"], name="item1a")
    client = lib.Client("127.0.0.1", node.port)
    before = node.rss_kib()
    huge = {"experimental": {"x": "y" * (3 * 1000 * 1000)}}
    statuses, codes, sessions, rss = {}, {}, 0, [before]
    # Rounds of 100, RSS after each: bounded growth, not growth per request.
    for _ in range(ROUNDS):
        for _ in range(100):
            status, session, code = initialize(client, huge)
            statuses[status] = statuses.get(status, 0) + 1
            codes[code] = codes.get(code, 0) + 1
            sessions += 1 if session else 0
        rss.append(node.rss_kib())
    notes.append(f"{ROUNDS}x100 initialize with 3 MB capabilities -> HTTP {statuses}, JSON-RPC codes {codes}, "
                 f"{sessions} sessions, RSS {' -> '.join(lib.mib(r) for r in rss)}")
    if statuses != {400: 100 * ROUNDS} or codes != {-32602: 100 * ROUNDS} or sessions:
        problems.append("3 MB capabilities not all refused with 400/-32602")
    if (max(rss) - rss[0]) / 1024 > RSS_GROWTH_LIMIT_MIB:
        problems.append(f"RSS grew {(max(rss) - rss[0]) / 1024:.0f} MiB over {100 * ROUNDS} refused requests")

    under = initialize(client, {"experimental": {"x": "y" * (15 * 1024)}})
    over = initialize(client, {"experimental": {"x": "y" * (16 * 1024)}})
    notes.append(f"15 KiB capabilities -> {under[0]}, 16 KiB+ -> {over[0]}/{over[2]}")
    if under[0] != 200 or not under[1] or over[0] != 400 or over[2] != -32602 or over[1]:
        problems.append("the 16 KiB bound is not where it should be")

    loopback = open_sessions(lib.Client("127.0.0.1", node.port), 5)
    notes.append(f"cap 3 from loopback: {loopback.count(200)}/5 admitted (exempt)")

    # (c) subscriptions per session (defaults: 1,000 URIs, 2,048 bytes each).
    session = lib.Session2025(client)
    sub = lambda uri: session.post({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",  # noqa: E731
                                    "params": {"uri": uri}})
    admitted = 0
    for i in range(1000):
        status, hdrs, data = sub(f"fleet://items/{i}")
        if status == 200 and lib.error_code(data, hdrs.get("content-type", "")) is None:
            admitted += 1
    status, hdrs, data = sub("fleet://items/one-too-many")
    past_count = (status, lib.error_code(data, hdrs.get("content-type", "")))
    status, hdrs, data = sub("fleet://items/" + "l" * (2049 - len("fleet://items/")))
    long_uri = (status, lib.error_code(data, hdrs.get("content-type", "")))
    notes.append(f"subscribe: {admitted}/1000 admitted, 1001st -> {past_count[0]}/{past_count[1]}, "
                 f"2049-byte URI -> {long_uri[0]}/{long_uri[1]}")
    if admitted != 1000 or past_count[1] != -32602 or long_uri[1] != -32602:
        problems.append("resources/subscribe not bounded as documented")
    rss_end = node.rss_kib()
    node.stop()

    # (b) per client address, from a non-loopback address of this machine.
    addr = lib.non_loopback_ipv4()
    if addr is None:
        problems.append("no non-loopback IPv4 address here: the per-address cap was not tested")
    else:
        small = lib.Node(["--bus", "memory://", "--max-sessions-per-address", "3"], host=addr, name="item1b")
        c = lib.Client(addr, small.port)
        first = lib.Session2025(c)
        rest = open_sessions(c, 2)
        fourth = initialize(c, {})
        deleted = first.delete()
        again = initialize(c, {})
        notes.append(f"cap 3 from {addr}: {[first.init_status] + rest} then {fourth[0]}, "
                     f"DELETE {deleted}, then {again[0]}")
        if [first.init_status] + rest != [200, 200, 200] or fourth[0] != 429 or again[0] != 200:
            problems.append("--max-sessions-per-address 3 not enforced from a non-loopback address")
        small.stop()

        default = lib.Node(["--bus", "memory://"], host=addr, name="item1c")
        c = lib.Client(addr, default.port)
        opened = [initialize(c, {})[0] for _ in range(1000)]
        extra = initialize(c, {})
        notes.append(f"default cap from {addr}: {opened.count(200)}/1000 admitted, 1001st -> {extra[0]}")
        if opened.count(200) != 1000 or extra[0] != 429:
            problems.append("the default 1,000 sessions per address not enforced")
        default.stop()

    notes.append(f"RSS at the end {lib.mib(rss_end)}")
    lib.verdict(1, not problems, "; ".join(problems + notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
