//! The protocol crate's per-request and per-delivery work, measured on its own so a regression
//! shows here before it shows in a load test (`cargo bench -p mcp-fleet-protocol`):
//!
//! - `validate_tools_call`: the validation ladder over a `tools/call echo` body, headers and
//!   all — what every 2026-07-28 request pays before dispatch;
//! - `tool_arguments`: the echo tool's compiled JSON Schema checked against its arguments;
//! - `encode_result`: the JSON-RPC answer of that call;
//! - `frame_build` / `frame_write`: one change notification serialised once per event, and
//!   stamped with one stream's subscription id (what the router does per open stream).

use divan::{Bencher, black_box};
use http::{HeaderMap, HeaderValue};
use mcp_fleet_protocol::SUPPORTED_VERSIONS;
use mcp_fleet_protocol::jsonrpc::{RequestId, encode_result};
use mcp_fleet_protocol::schema::CompiledSchema;
use mcp_fleet_protocol::sse::NotificationFrame;
use mcp_fleet_protocol::validate::validate_message;
use serde_json::json;

fn main() {
    divan::main();
}

/// The body `../shared/bench/mcp-echo.lua` posts.
const ECHO_BODY: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"4.1.0"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;

fn echo_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers
}

#[divan::bench]
fn validate_tools_call(bencher: Bencher) {
    let headers = echo_headers();
    bencher.bench(|| validate_message(black_box(&headers), black_box(ECHO_BODY), SUPPORTED_VERSIONS));
}

#[divan::bench]
fn tool_arguments(bencher: Bencher) {
    let schema = CompiledSchema::compile(&json!({
        "type": "object",
        "properties": {"text": {"type": "string", "description": "Text to echo"}},
        "required": ["text"]
    }))
    .expect("the echo tool's schema compiles");
    let arguments = json!({"text": "hello"});
    bencher.bench(|| schema.check(black_box(&arguments)));
}

#[divan::bench]
fn encode_result_echo(bencher: Bencher) {
    let id = RequestId::Number(1.into());
    let result = json!({"content": [{"type": "text", "text": "hello"}], "resultType": "complete"});
    bencher.bench(|| encode_result(black_box(&id), black_box(&result)));
}

fn event_meta() -> serde_json::Value {
    json!({"version": "1764647000000-0", "publishedAtMs": 1764647000000_u64})
}

#[divan::bench]
fn frame_build(bencher: Bencher) {
    let meta = event_meta();
    bencher.bench(|| NotificationFrame::new("notifications/tools/list_changed", None, black_box(&meta)));
}

#[divan::bench(args = [1, 100, 10_000])]
fn frame_write(bencher: Bencher, streams: usize) {
    let frame = NotificationFrame::new("notifications/tools/list_changed", None, &event_meta());
    let ids: Vec<Vec<u8>> = (0..streams).map(|i| format!("\"sub-{i}\"").into_bytes()).collect();
    let mut buf = Vec::with_capacity(512);
    bencher.counter(divan::counter::ItemsCount::new(streams)).bench_local(|| {
        for id in &ids {
            buf.clear();
            frame.write(&mut buf, id);
            black_box(&buf);
        }
    });
}
