"""Item 13: `Last-Event-ID` replay on a 2025-era GET stream.

A session subscribed to fleet://status opens its GET stream and reads the priming event (an
id, no data: P). A tools change is published through the admin API (POST /admin/notify) and
read live; the stream is dropped. More changes are published (the subscribed resource, the
prompts list, the tools list again). The stream is reopened with `Last-Event-ID: P`.
Safe: the reopened stream primes at P (the position before the replay), then replays what was
missed, each event under its own id (`<epoch>-<version>`, matching its `_meta` position), in
version order, ending at the last published version, every kind published after P present
(the two tools changes may be coalesced into the newer one).
"""

import json
import sys

import lib

URI = "fleet://status"


def position(event_id):
    epoch, _, version = (event_id or "").rpartition("-")
    return (int(epoch), int(version)) if epoch.isdigit() and version.isdigit() else None


def open_stream(node, session, last_event_id=None):
    h = {"Accept": "text/event-stream", "MCP-Protocol-Version": lib.VERSION_2025, "Mcp-Session-Id": session.id}
    if last_event_id:
        h["Last-Event-ID"] = last_event_id
    return lib.SseStream("127.0.0.1", node.port, "GET", h)


def main():
    lib.binary()
    node = lib.Node(["--bus", "memory://"], name="item13")
    client = lib.Client("127.0.0.1", node.port)
    session = lib.Session2025(client)
    sub = session.post({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": URI}})
    problems, notes = [], []

    stream = open_stream(node, session)
    prime = stream.next_event(timeout=5)
    if stream.status != 200 or prime is None or prime[1] != "" or position(prime[0]) is None:
        lib.verdict(13, False, f"GET stream {stream.status}, first event {prime!r}, subscribe {sub[0]}")
        return 1
    p = prime[0]
    live_pub = node.notify("tools")
    live = stream.next_event(timeout=5)
    stream.close()
    notes.append(f"priming id {p}; live tools change v{live_pub[1]} read as id {live[0] if live else None}")

    published = {"tools": live_pub}
    published["resource"] = node.notify("resource", URI)
    published["prompts"] = node.notify("prompts")
    published["tools"] = node.notify("tools")  # the tools list again: may coalesce with the first
    newest = max(v for _, v in published.values())

    resumed = open_stream(node, session, p)
    events = []
    while True:
        event = resumed.next_event(timeout=2)
        if event is None:
            break
        events.append(event)
        if position(event[0]) and position(event[0])[1] >= newest and event[1]:
            # Everything published was heard; wait a little for anything out of order.
            extra = resumed.next_event(timeout=1)
            if extra:
                events.append(extra)
            break
    resumed.close()
    node.stop()

    shown = []
    for event_id, data in events:
        if not data:
            shown.append(f"{event_id}(prime)")
            continue
        msg = json.loads(data)
        shown.append(f"{event_id}:{str(msg.get('method')).removeprefix('notifications/')}")
    notes.append(f"resumed with Last-Event-ID {p} (GET {resumed.status}): " + " ".join(shown))

    if not events or events[0] != (p, ""):
        problems.append(f"the resumed stream did not prime at {p} (the position before the replay)")
    data_events = [(i, json.loads(d)) for i, d in events if d]
    positions = [position(i) for i, _ in data_events]
    if any(pos is None for pos in positions):
        problems.append("a replayed event without its own id")
    elif positions != sorted(positions) or len(set(positions)) != len(positions):
        problems.append("replayed ids not in version order or repeated")
    for event_id, msg in data_events:
        meta = msg.get("params", {}).get("_meta", {}).get("dev.mcp-fleet/event", {})
        if f"{meta.get('epoch')}-{meta.get('version')}" != event_id:
            problems.append(f"id {event_id} is not its event's position {meta}")
            break
    methods = {m.get("method") for _, m in data_events}
    wanted = {"notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/updated"}
    if not wanted <= methods:
        problems.append(f"missed changes not all replayed: {sorted(wanted - methods)}")
    if positions and positions[-1] and positions[-1][1] != newest:
        problems.append(f"the replay did not end at the newest version {newest}")
    if any(pos and pos[1] <= position(p)[1] for pos in positions):
        problems.append("an event from before the priming id was replayed")
    lib.verdict(13, not problems, "; ".join(problems + notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
