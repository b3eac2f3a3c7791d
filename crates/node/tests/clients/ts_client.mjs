// A real 2025-era MCP client — the TypeScript SDK v1's Client over its
// StreamableHTTPClientTransport, with nothing of the wire written here — remote-controlled by
// crates/node/tests/legacy_clients.rs, which checks what a fleet behind a load balancer does
// for it. It is a thin adapter so that every assertion lives in the Rust test:
//
// - stdin: one command per line, {"id": n, "op": "...", ...}; ops run one at a time, in order:
//   connect {url} | list_tools | call {name, arguments} | subscribe {uri} | unsubscribe {uri}
//   | terminate | close.
// - stdout: one JSON object per line, either the reply to command n ({"reply": n, "ok": ...}
//   or {"reply": n, "error": "..."}) or an event heard meanwhile: {"event": "notification",
//   "method", "params"}, {"event": "elicitation", "params"} (answered with accept,
//   {"confirmed": true}), {"event": "error", "message"} (the client's or transport's onerror).
//
// The transport keeps its default reconnection options: what the SDK does out of the box is
// what is tested. Its `fetch` option only logs each request and its status to stderr (as
// httpx does for the Python client), so a failure shows what went on the wire.
import readline from 'node:readline';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
    ElicitRequestSchema,
    PromptListChangedNotificationSchema,
    ResourceListChangedNotificationSchema,
    ResourceUpdatedNotificationSchema,
    ToolListChangedNotificationSchema
} from '@modelcontextprotocol/sdk/types.js';

function emit(message) {
    process.stdout.write(JSON.stringify(message) + '\n');
}

const client = new Client({ name: 'mcp-fleet-legacy-clients-ts', version: '1.0.0' }, { capabilities: { elicitation: {} } });
client.onerror = error => emit({ event: 'error', message: String(error?.message ?? error) });
for (const schema of [
    ToolListChangedNotificationSchema,
    PromptListChangedNotificationSchema,
    ResourceListChangedNotificationSchema,
    ResourceUpdatedNotificationSchema
]) {
    client.setNotificationHandler(schema, async notification => {
        emit({ event: 'notification', method: notification.method, params: notification.params ?? {} });
    });
}
client.setRequestHandler(ElicitRequestSchema, async request => {
    emit({ event: 'elicitation', params: request.params });
    return { action: 'accept', content: { confirmed: true } };
});

let transport;

async function loggingFetch(url, init) {
    const headers = new Headers(init?.headers);
    const resume = headers.get('last-event-id');
    const line = `${new Date().toISOString()} ${init?.method ?? 'GET'} ${url}${resume ? ` last-event-id=${resume}` : ''}`;
    try {
        const response = await fetch(url, init);
        process.stderr.write(`${line} -> ${response.status} ${response.headers.get('content-type') ?? ''}\n`);
        return response;
    } catch (error) {
        process.stderr.write(`${line} -> ${error?.cause?.code ?? error}\n`);
        throw error;
    }
}

async function run(command) {
    switch (command.op) {
        case 'connect': {
            transport = new StreamableHTTPClientTransport(new URL(command.url), { fetch: loggingFetch });
            await client.connect(transport);
            return {
                sessionId: transport.sessionId,
                protocolVersion: transport.protocolVersion,
                server: client.getServerVersion(),
                capabilities: client.getServerCapabilities()
            };
        }
        case 'list_tools':
            return (await client.listTools()).tools.map(tool => tool.name);
        case 'call':
            return await client.callTool({ name: command.name, arguments: command.arguments ?? {} });
        case 'subscribe':
            return await client.subscribeResource({ uri: command.uri });
        case 'unsubscribe':
            return await client.unsubscribeResource({ uri: command.uri });
        case 'terminate': {
            const sessionId = transport.sessionId;
            await transport.terminateSession();
            return { sessionId, after: transport.sessionId ?? null };
        }
        case 'close':
            await client.close();
            return {};
        default:
            throw new Error(`unknown op ${command.op}`);
    }
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
    if (!line.trim()) continue;
    const command = JSON.parse(line);
    try {
        emit({ reply: command.id, ok: (await run(command)) ?? {} });
    } catch (error) {
        emit({ reply: command.id, error: String(error?.stack ?? error) });
    }
    if (command.op === 'close') break;
}
process.exit(0);
