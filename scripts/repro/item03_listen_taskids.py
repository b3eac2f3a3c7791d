"""Item 3: a 2026-07-28 `subscriptions/listen` with 1,000 task ids of 4,000 characters each
(was: acknowledged, a 4 MB acknowledgement). Safe: a JSON-RPC error (a task id is 32
lowercase hex digits), never an acknowledgement. A well-formed id is then acknowledged, to
show the method itself works on this node.
"""

import json
import sys

import lib


def listen(node, task_ids):
    # taskIds belong to the tasks extension: the client declares it, as the did.
    body = json.dumps(lib.request_2026("listen-1", "subscriptions/listen", {"notifications": {"taskIds": task_ids}},
                                       {"extensions": {"io.modelcontextprotocol/tasks": {}}})).encode()
    stream = lib.SseStream("127.0.0.1", node.port, "POST", lib.headers_2026("subscriptions/listen"), body)
    ctype = stream.headers.get("content-type", "")
    if "text/event-stream" in ctype:
        event = stream.next_event(timeout=5)
        data = (event[1] if event else "").encode()
        first = json.loads(data) if data else {}
    else:
        data = stream.resp.read_body(timeout=5)
        first = json.loads(data) if data.strip() else {}
    stream.close()
    return stream.status, ctype, first, len(body), len(data)


def main():
    lib.binary()
    node = lib.Node(["--bus", "memory://"], name="item3")
    status, ctype, first, sent, got = listen(node, ["a" * 4000 for _ in range(1000)])
    acked = first.get("method") == "notifications/subscriptions/acknowledged"
    code = first.get("error", {}).get("code")
    message = first.get("error", {}).get("message", "")
    ok_status, _, ok_first, _, _ = listen(node, ["0123456789abcdef0123456789abcdef"])
    node.stop()
    safe = code is not None and not acked
    what = (f"listen with 1,000 taskIds x 4,000 chars ({sent} bytes) -> HTTP {status} {ctype or '-'}, "
            f"JSON-RPC {'error ' + str(code) if code is not None else 'no error'}"
            f"{' (acknowledged!)' if acked else ''}, {got}-byte reply: {message[:90]!r}; "
            f"a 32-hex task id -> HTTP {ok_status} {ok_first.get('method', ok_first.get('error'))}")
    lib.verdict(3, safe, what)
    return 0


if __name__ == "__main__":
    sys.exit(main())
