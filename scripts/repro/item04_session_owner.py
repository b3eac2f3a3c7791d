"""Item 4: a 2025-era session belongs to issuer + tenant + subject.

A node requiring bearer tokens (--auth-issuer/--auth-audience/--auth-jwks-url, tenant from
the claim `org` via --auth-tenant-claim), the issuer being idp.py (RS256 signed with the
standard library). A session is created by {sub u1, org A}; {sub u1, org B} must get 404,
exactly as for an unknown session id, on POST, GET and DELETE; the owner still has it.
"""

import json
import sys

import idp as idp_mod
import lib


def main():
    lib.binary()
    idp = idp_mod.Idp()
    port = lib.free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    args = ["--bus", "memory://", "--auth-issuer", idp.issuer, "--auth-audience", audience,
            "--auth-jwks-url", idp.jwks_url, "--auth-tenant-claim", "org"]
    node = lib.Node(args, name="item4", port=port)
    bearer = lambda org: {"Authorization": "Bearer " + idp.token(audience, "u1", "org", org)}  # noqa: E731
    client = lib.Client("127.0.0.1", node.port)
    problems, notes = [], []

    status, _, _ = client.send("POST", json.dumps(lib.initialize_body()).encode(), lib.headers_2025())
    notes.append(f"no token -> {status}")
    owner = lib.Session2025(client, extra=bearer("A"))
    if not owner.id:
        lib.verdict(4, False, f"the owner's initialize failed: {owner.init_status} {owner.init_body[:200]!r}")
        return 1
    other = lib.Session2025.__new__(lib.Session2025)
    other.client, other.extra, other.version, other.id = client, bearer("B"), lib.VERSION_2025, owner.id
    unknown = lib.Session2025.__new__(lib.Session2025)
    unknown.client, unknown.extra, unknown.version, unknown.id = client, bearer("B"), lib.VERSION_2025, "0" * 32

    tools = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    theirs, none = other.post(tools), unknown.post(tools)
    get_h = lambda s: {"Accept": "text/event-stream", "MCP-Protocol-Version": lib.VERSION_2025,  # noqa: E731
                       "Mcp-Session-Id": s.id, **s.extra}
    g_theirs = lib.SseStream("127.0.0.1", node.port, "GET", get_h(other))
    g_none = lib.SseStream("127.0.0.1", node.port, "GET", get_h(unknown))
    g_theirs.close()
    g_none.close()
    d_theirs, d_none = other.delete(), unknown.delete()
    notes.append(f"org B on org A's session: POST {theirs[0]}, GET {g_theirs.status}, DELETE {d_theirs}; "
                 f"unknown id: POST {none[0]}, GET {g_none.status}, DELETE {d_none}; "
                 f"POST bodies {'identical' if theirs[2] == none[2] else 'differ'}")
    if (theirs[0], g_theirs.status, d_theirs) != (404, 404, 404) or theirs[2] != none[2]:
        problems.append("another tenant's subject reached the session")

    ping = owner.post({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    g_owner = lib.SseStream("127.0.0.1", node.port, "GET", get_h(owner))
    g_owner.close()
    deleted = owner.delete()
    notes.append(f"owner (org A): POST {ping[0]}, GET {g_owner.status}, DELETE {deleted}")
    if (ping[0], g_owner.status, deleted) != (200, 200, 200):
        problems.append("the owner lost its session")
    node.stop()
    idp.close()
    lib.verdict(4, not problems, "; ".join(problems + notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
