"""Item 5: a session quota must come back when its sessions expire without DELETE.

Sessions with --session-ttl-secs 3; the quota (2) reached; the sessions left to expire, never
used nor deleted; `initialize` retried every second (was: 429 for 14 s, never admitted).
Safe: 429 while the sessions live, then admitted once they have expired (within a few
seconds of the TTL). Run twice: anonymous callers counted per client address
(--max-sessions-per-address 2, the node on a non-loopback address since loopback is
exempt), and an authenticated principal (--max-sessions-per-principal 2, RS256 tokens from
idp.py).
"""

import json
import sys
import time

import idp as idp_mod
import lib

TTL = 3
GIVE_UP = 20  # seconds of retrying (the issue saw 14 s of 429s)


def lockout(client, extra):
    """Fill the quota, then retry initialize every second: (statuses of the fill,
    [(seconds since the last session was made, status)...])."""
    body = json.dumps(lib.initialize_body()).encode()
    fill = [lib.Session2025(client, extra=extra).init_status for _ in range(2)]
    made = time.time()
    tries = []
    while time.time() - made < GIVE_UP:
        status = client.send("POST", body, lib.headers_2025(None, extra))[0]
        tries.append((round(time.time() - made, 1), status))
        if status != 429:
            break
        time.sleep(1)
    return fill, tries


def judge(label, fill, tries, problems, notes):
    first_ok = next((t for t, s in tries if s == 200), None)
    refused = [t for t, s in tries if s == 429]
    notes.append(f"{label}: fill {fill}, then " + ", ".join(f"{s}@{t}s" for t, s in tries))
    if fill != [200, 200] or not refused or refused[0] > 0.5:
        problems.append(f"{label}: the quota of 2 was not reached as expected")
    elif first_ok is None:
        problems.append(f"{label}: never admitted again within {GIVE_UP} s (TTL {TTL} s)")
    elif first_ok < TTL - 1 or first_ok > TTL + 4:
        problems.append(f"{label}: admitted at {first_ok} s, not around the TTL ({TTL} s)")


def main():
    lib.binary()
    problems, notes = [], []

    addr = lib.non_loopback_ipv4()
    if addr is None:
        problems.append("no non-loopback IPv4 address: the per-address run was skipped")
    else:
        node = lib.Node(["--bus", "memory://", "--session-ttl-secs", str(TTL), "--max-sessions-per-address", "2"],
                        host=addr, name="item5a")
        judge(f"per address ({addr})", *lockout(lib.Client(addr, node.port), {}), problems, notes)
        node.stop()

    idp = idp_mod.Idp()
    port = lib.free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    node = lib.Node(["--bus", "memory://", "--session-ttl-secs", str(TTL), "--max-sessions-per-principal", "2",
                     "--auth-issuer", idp.issuer, "--auth-audience", audience, "--auth-jwks-url", idp.jwks_url],
                    name="item5b", port=port)
    token = {"Authorization": "Bearer " + idp.token(audience, "u1")}
    judge("per principal", *lockout(lib.Client("127.0.0.1", node.port), token), problems, notes)
    node.stop()
    idp.close()
    lib.verdict(5, not problems, "; ".join(problems + notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
