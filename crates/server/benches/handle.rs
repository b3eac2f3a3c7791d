//! The server's whole per-request work for one `tools/call echo` — HTTP checks, the validation
//! ladder, dispatch, the argument schema, the handler, the JSON answer and the request
//! metrics — in process, without sockets (`cargo bench -p mcp-fleet-server`). What is left
//! between this and the wrk figure in BENCHMARKS.md is hyper and the kernel.
//!
//! `tools_call_echo` is the 2026-07-28 stateless call; `tools_call_add` adds an `outputSchema`
//! check of the structured result; `server_discover` answers from what the handler holds, the
//! floor of the dispatch path. The `_typed` twins are the same tools written with the typed
//! API (arguments deserialized into a struct, a `Json<Sum>` result): the typed layer's cost.

use bytes::Bytes;
use divan::{Bencher, black_box};
use http::Request;
use http_body_util::{BodyExt, Full};
use mcp_fleet_server::typed::{self, Json};
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_server::{HandlerOptions, McpHandler, McpServer, create_mcp_handler};
use serde_json::{Value, json};

fn main() {
    divan::main();
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}"#;

fn runtime() -> tokio::runtime::Runtime {
    // One worker, as the node runs in BENCHMARKS.md.
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a current-thread runtime")
}

async fn handler() -> McpHandler {
    let server = McpServer::builder("bench", "1.0.0").build();
    server.tool(
        Tool::new("echo", "Echoes the given text").input_schema(json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        })),
        |call| async move {
            let text = call.arguments.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
            Ok(CallToolResult::text(text))
        },
    );
    server.tool(
        Tool::new("add", "Adds two integers")
            .input_schema(json!({
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"]
            }))
            .output_schema(json!({"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]})),
        |call| async move {
            let arg = |k: &str| call.arguments.get(k).and_then(Value::as_i64).unwrap_or(0);
            Ok(CallToolResult::structured(json!({"sum": arg("a").saturating_add(arg("b"))})))
        },
    );
    server
        .add(typed::tool("echo_typed", "Echoes the given text", |args: Echo| async move { args.text }))
        .expect("a new name");
    server
        .add(typed::tool("add_typed", "Adds two integers", |args: Add| async move {
            Json(Sum { sum: args.a.saturating_add(args.b) })
        }))
        .expect("a new name");
    // Room for the largest fan-out case; every other option at its default.
    let options = HandlerOptions::default().max_streams(20_000);
    create_mcp_handler(server, options).await.expect("a handler with default options")
}

/// The typed echo's arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    text: String,
}

/// The typed add's arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

/// The typed add's result.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    sum: i64,
}

fn request(method: &str, name: Option<&str>, params: &str) -> Request<Full<Bytes>> {
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{{params}{META}}}}}"#);
    let mut builder = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        builder = builder.header("mcp-name", name);
    }
    builder.body(Full::new(Bytes::from(body))).expect("a well-formed request")
}

/// The status and the whole body of the handler's answer to `request`.
async fn answer(handler: &McpHandler, request: Request<Full<Bytes>>) -> (http::StatusCode, Bytes) {
    let response = handler.handle(request).await;
    let status = response.status();
    (status, response.into_body().collect().await.expect("the body is complete").to_bytes())
}

/// Answer `make()`'s request, again and again; the first answer is checked to be a success
/// before timing starts.
fn bench_request(bencher: Bencher, make: impl Fn() -> Request<Full<Bytes>> + Sync) {
    let rt = runtime();
    let handler = rt.block_on(handler());
    let (status, body) = rt.block_on(answer(&handler, make()));
    let message: Value = serde_json::from_slice(&body).expect("a JSON answer");
    assert!(status == 200 && message.get("result").is_some(), "{status}: {message}");
    bencher.bench_local(|| black_box(rt.block_on(answer(&handler, make()))));
}

#[divan::bench]
fn tools_call_echo(bencher: Bencher) {
    bench_request(bencher, || request("tools/call", Some("echo"), r#""name":"echo","arguments":{"text":"hello"},"#));
}

#[divan::bench]
fn tools_call_add(bencher: Bencher) {
    bench_request(bencher, || request("tools/call", Some("add"), r#""name":"add","arguments":{"a":1,"b":2},"#));
}

#[divan::bench]
fn tools_call_echo_typed(bencher: Bencher) {
    bench_request(bencher, || {
        request("tools/call", Some("echo_typed"), r#""name":"echo_typed","arguments":{"text":"hello"},"#)
    });
}

#[divan::bench]
fn tools_call_add_typed(bencher: Bencher) {
    bench_request(bencher, || {
        request("tools/call", Some("add_typed"), r#""name":"add_typed","arguments":{"a":1,"b":2},"#)
    });
}

#[divan::bench]
fn server_discover(bencher: Bencher) {
    bench_request(bencher, || request("server/discover", None, ""));
}

/// One `tools` change reaching `streams` open listen streams, in process: the notifier's
/// publish on the in-memory bus, the router marking every matching stream, and each stream's
/// body writing its frame (the ack of every stream is read before timing starts).
#[divan::bench(args = [100, 1_000, 10_000], sample_count = 20)]
fn fanout_tools_changed(bencher: Bencher, streams: usize) {
    let rt = runtime();
    let (handler, mut bodies) = rt.block_on(async {
        let handler = handler().await;
        let mut bodies = Vec::with_capacity(streams);
        for _ in 0..streams {
            let listen = request("subscriptions/listen", None, r#""notifications":{"toolsListChanged":true},"#);
            let response = handler.handle(listen).await;
            assert_eq!(response.status(), 200);
            let mut body = response.into_body();
            let ack = body.frame().await.expect("the ack frame").expect("no body error");
            assert!(ack.is_data(), "the first frame is the acknowledgement");
            bodies.push(body);
        }
        (handler, bodies)
    });
    bencher.counter(divan::counter::ItemsCount::new(streams)).bench_local(|| {
        rt.block_on(async {
            handler.notify().tools_changed().await.expect("the in-memory bus accepts the publish");
            for body in &mut bodies {
                let frame = body.frame().await.expect("a change frame").expect("no body error");
                black_box(frame);
            }
        })
    });
}
