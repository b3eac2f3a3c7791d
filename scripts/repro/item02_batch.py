"""Item 2: a 2025-03-26 JSON-RPC batch against the rate limit.

Node with --rate-per-principal 1 --rate-burst-per-principal 1 (anonymous callers: a bucket
per client address). A 2025-03-26 session; two single requests back to back (expect 200 then
429); then one batch of 20,000 `tools/list` (was: HTTP 200, a 17.4 MB body; now: 413 with
-32600, the batch is over --max-batch-messages, default 64); then a batch of 5 with one token
left (expect 429: a batch costs its messages); then a batch of 1 (expect 200).
"""

import json
import sys
import time

import lib

V = "2025-03-26"


def main():
    lib.binary()
    node = lib.Node(["--bus", "memory://", "--rate-per-principal", "1", "--rate-burst-per-principal", "1"],
                    name="item2")
    client = lib.Client("127.0.0.1", node.port)
    session = lib.Session2025(client, version=V)  # initialize takes the one token...
    notes, problems = [f"initialize {session.init_status}"], []
    if not session.id:
        # ...and notifications/initialized may have met the limit: what the node said.
        lib.verdict(2, False, f"no session: initialize answered {session.init_status} {session.init_body[:200]!r}")
        return 1
    time.sleep(2.2)  # refill the bucket (1/s, burst 1)

    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    first = session.post(ping)
    second = session.post(ping)
    singles = (first[0], second[0])
    notes.append(f"two single requests -> {singles[0]} then {singles[1]}"
                 f" (Retry-After {second[1].get('retry-after')})")
    if singles != (200, 429):
        problems.append("the rate limit did not refuse the second single request")
    time.sleep(2.2)

    batch = [{"jsonrpc": "2.0", "id": i, "method": "tools/list"} for i in range(20000)]
    body = json.dumps(batch).encode()
    status, hdrs, data = session.post(batch)
    code = lib.error_code(data, hdrs.get("content-type", ""))
    notes.append(f"batch of 20,000 tools/list ({len(body)} bytes) -> HTTP {status}, code {code}, "
                 f"{len(data)}-byte body: {lib.error_message(data, hdrs.get('content-type', ''))[:80]!r}")
    if status != 413 or code != -32600:
        problems.append("the 20,000-message batch was not refused with 413/-32600")
    time.sleep(2.2)

    five = [{"jsonrpc": "2.0", "id": i, "method": "tools/list"} for i in range(5)]
    status5, hdrs5, data5 = session.post(five)
    notes.append(f"batch of 5 with 1 token -> {status5} (code {lib.error_code(data5, hdrs5.get('content-type', ''))})")
    if status5 != 429:
        problems.append("a batch of 5 passed a bucket holding 1 token")
    time.sleep(2.2)
    one = session.post([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}])
    answers = lib.messages(one[2], one[1].get("content-type", "")) if one[0] == 200 else []
    notes.append(f"batch of 1 -> {one[0]} ({len(answers)} answer)")
    if one[0] != 200 or len(answers) != 1 or "result" not in answers[0]:
        problems.append("a batch of 1 within the limit was not served")
    node.stop()
    lib.verdict(2, not problems, "; ".join(problems + notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
