"""A real 2025-era MCP client — the Python SDK v1's ClientSession over its
streamable_http_client transport, with nothing of the wire written here — remote-controlled by
crates/node/tests/legacy_clients.rs, which checks what a fleet behind a load balancer does for
it. It is a thin adapter so that every assertion lives in the Rust test; the line protocol is
the one of ts_client.mjs beside it:

- stdin: one command per line, {"id": n, "op": "...", ...}; ops run one at a time, in order:
  connect {url} | list_tools | call {name, arguments} | subscribe {uri} | unsubscribe {uri}
  | terminate | close.
- stdout: one JSON object per line, the reply to command n ({"reply": n, "ok": ...} or
  {"reply": n, "error": "..."}) or an event heard meanwhile: {"event": "notification",
  "method", "params"}, {"event": "elicitation", "params"} (answered with accept,
  {"confirmed": true}), {"event": "error", "message"} (an exception the session delivered).

The SDK has no call that ends a session and keeps the client: `terminate` leaves the
transport's context, which sends the DELETE (terminate_on_close, the default).
The SDK's own log (reconnections of the GET stream) and httpx's (each request and its status)
go to stderr at INFO.
"""

import json
import logging
import sys
import traceback
from contextlib import AsyncExitStack

import anyio
import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def emit(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True) if model is not None else {}


async def on_message(message):
    if isinstance(message, types.ServerNotification):
        root = message.root
        emit({"event": "notification", "method": root.method, "params": dump(root.params)})
    elif isinstance(message, Exception):
        emit({"event": "error", "message": repr(message)})


async def on_elicitation(context, params):
    emit({"event": "elicitation", "params": dump(params)})
    return types.ElicitResult(action="accept", content={"confirmed": True})


class Driven:
    def __init__(self):
        self.stack = None
        self.session = None
        self.session_id = None

    async def run(self, command):
        op = command["op"]
        if op == "connect":
            self.stack = AsyncExitStack()
            read, write, self.session_id = await self.stack.enter_async_context(
                streamable_http_client(command["url"])
            )
            self.session = await self.stack.enter_async_context(
                ClientSession(
                    read,
                    write,
                    message_handler=on_message,
                    elicitation_callback=on_elicitation,
                    client_info=types.Implementation(name="mcp-fleet-legacy-clients-py", version="1.0.0"),
                )
            )
            result = await self.session.initialize()
            return {
                "sessionId": self.session_id(),
                "protocolVersion": str(result.protocolVersion),
                "server": dump(result.serverInfo),
                "capabilities": dump(result.capabilities),
            }
        if op == "list_tools":
            return [tool.name for tool in (await self.session.list_tools()).tools]
        if op == "call":
            return dump(await self.session.call_tool(command["name"], command.get("arguments") or {}))
        if op == "subscribe":
            return dump(await self.session.subscribe_resource(command["uri"]))
        if op == "unsubscribe":
            return dump(await self.session.unsubscribe_resource(command["uri"]))
        if op == "terminate":
            session_id = self.session_id()
            stack, self.stack, self.session = self.stack, None, None
            await stack.aclose()
            return {"sessionId": session_id}
        if op == "close":
            if self.stack is not None:
                await self.stack.aclose()
            return {}
        raise ValueError(f"unknown op {op}")


async def main():
    driven = Driven()
    while True:
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        if not line:
            break
        if not line.strip():
            continue
        command = json.loads(line)
        try:
            result = await driven.run(command)
            emit({"reply": command["id"], "ok": result if result is not None else {}})
        except Exception:
            emit({"reply": command["id"], "error": traceback.format_exc()})
        if command["op"] == "close":
            break


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    # The SDK's reconnections, and every request the client sends with its status line.
    logging.getLogger("mcp.client.streamable_http").setLevel(logging.INFO)
    logging.getLogger("httpx").setLevel(logging.INFO)
    anyio.run(main)
