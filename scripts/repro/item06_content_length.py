"""Item 6: `Content-Length: +5` on a POST and `Content-Length: +331` on a listen body, on the
direct HTTP/1.1 path (raw sockets, each the connection's first request, so the node's own
head parser reads it, not hyper). Safe: 400, never an open SSE stream. The same listen body
with a plain `Content-Length: 331` is acknowledged, to show the request is otherwise good.
"""

import json
import sys
import time

import lib


def send(node, headers, body):
    lines = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{node.port}"] + [f"{k}: {v}" for k, v in headers.items()]
    resp = lib.raw_request("127.0.0.1", node.port, ("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    ctype = resp.headers.get("content-type", "")
    if "text/event-stream" in ctype:
        if b"\n\n" not in resp.body:
            resp.read_more(time.time() + 3)
        snippet = resp.body[:120]
    else:
        snippet = resp.read_body(timeout=3)[:120]
    resp.sock.close()
    shape = ctype or f"content-length {resp.headers.get('content-length', '?')}, " \
                     f"connection {resp.headers.get('connection', 'keep-alive')}"
    return resp.status, shape, snippet


def listen_body(length):
    body = json.dumps(lib.request_2026("cl-listen", "subscriptions/listen",
                                       {"notifications": {"toolsListChanged": True}})).encode()
    if len(body) > length:
        raise SystemExit(f"listen body is {len(body)} bytes, more than {length}")
    return body + b" " * (length - len(body))  # JSON allows trailing whitespace


def main():
    lib.binary()
    node = lib.Node(["--bus", "memory://"], name="item6")
    post_body = b"[1,2]"
    post = send(node, {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                       "MCP-Protocol-Version": lib.VERSION_2026, "Mcp-Method": "tools/list",
                       "Content-Length": "+5"}, post_body)
    listen = listen_body(331)
    h = lib.headers_2026("subscriptions/listen")
    plus = send(node, {**h, "Content-Length": "+331"}, listen)
    plain = send(node, {**h, "Content-Length": "331"}, listen)
    node.stop()
    refused = lambda r: r[0] == 400 and "text/event-stream" not in r[1]  # noqa: E731
    safe = refused(post) and refused(plus)
    what = (f"POST Content-Length: +5 -> {post[0]} ({post[1]}) body {post[2][:60]!r}; "
            f"listen Content-Length: +331 -> {plus[0]} ({plus[1]}) body {plus[2][:60]!r}; "
            f"control, Content-Length: 331 -> {plain[0]} {plain[1]}"
            f"{' (acknowledged)' if b'acknowledged' in plain[2] else ''}")
    lib.verdict(6, safe, what)
    return 0


if __name__ == "__main__":
    sys.exit(main())
