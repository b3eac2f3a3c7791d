//! Test support: start the fixture server on a loopback port and POST JSON-RPC requests to it
//! with a real HTTP client, the way a 2026-07-28 client would. Every wait is bounded.

#![allow(dead_code, unreachable_pub)] // each test binary uses a different part of this module

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use mcp_fleet_server::McpHandler;
use mcp_fleet_server::protocol::sse::{SseDecoder, SseEvent};
use serde_json::{Value, json};

/// Longest any single request may take, SSE stream included.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The capabilities the conformance harness declares by default.
pub fn default_caps() -> Value {
    json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}})
}

/// A running fixture server.
pub struct Fixture {
    pub addr: SocketAddr,
    pub handler: McpHandler,
}

/// Serve the fixtures on 127.0.0.1:0.
pub async fn start() -> Fixture {
    let options = mcp_fleet_conformance::handler_options(mcp_fleet_conformance::DEV_REQUEST_STATE_KEY.to_vec());
    let handler = mcp_fleet_conformance::fixture_handler(options).await.expect("fixture handler");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    tokio::spawn({
        let handler = handler.clone();
        async move { handler.serve(listener).await }
    });
    Fixture { addr, handler }
}

/// A decoded response: status, content type, and every JSON-RPC message in the body (one for
/// a JSON body; each `data:` event for SSE).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub content_type: String,
    pub messages: Vec<Value>,
}

impl Reply {
    /// The final response message (the one with an `id`).
    pub fn response(&self) -> &Value {
        self.messages.iter().rev().find(|m| m.get("id").is_some()).expect("a response message")
    }

    /// Its `result`, failing the test on an error.
    pub fn result(&self) -> &Value {
        let response = self.response();
        assert!(response.get("error").is_none(), "unexpected error: {response}");
        &response["result"]
    }

    /// Its `error` object, failing the test on a result.
    pub fn error(&self) -> &Value {
        let response = self.response();
        assert!(response.get("result").is_none(), "expected an error, got: {response}");
        &response["error"]
    }

    /// Notifications with `method`, in arrival order.
    pub fn notifications(&self, method: &str) -> Vec<&Value> {
        self.messages.iter().filter(|m| m["method"] == method).collect()
    }
}

impl Fixture {
    /// POST `method` with the default envelope and the standard headers.
    pub async fn request(&self, method: &str, params: Value) -> Reply {
        self.request_as(method, params, default_caps()).await
    }

    /// POST `method` declaring `caps` as the client capabilities.
    pub async fn request_as(&self, method: &str, params: Value, caps: Value) -> Reply {
        let body = rpc(method, params, caps);
        let headers = standard_headers(&body);
        self.post(&body, &headers).await
    }

    /// `tools/call name arguments`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Reply {
        self.request("tools/call", json!({"name": name, "arguments": arguments})).await
    }

    /// POST `body` with exactly `headers` (plus Host and Content-Length).
    pub async fn post(&self, body: &Value, headers: &[(String, String)]) -> Reply {
        let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
        let mut request = Request::post(format!("http://{}/mcp", self.addr));
        for (name, value) in headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let request = request.body(Full::new(Bytes::from(body.to_string()))).expect("valid request");
        let exchange = async {
            let response = client.request(request).await.expect("HTTP exchange");
            let status = response.status();
            let content_type = response
                .headers()
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let bytes = response.into_body().collect().await.expect("response body").to_bytes();
            Reply { status, messages: decode(&content_type, &bytes), content_type }
        };
        tokio::time::timeout(TIMEOUT, exchange).await.expect("response within the timeout")
    }
}

/// A JSON-RPC request with the 2026-07-28 `_meta` envelope merged into `params` (keys the
/// caller already put in `params._meta`, like `progressToken`, are kept).
pub fn rpc(method: &str, mut params: Value, caps: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "fixture-tests", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    if let (Value::Object(meta), Value::Object(extra)) = (&mut meta, params["_meta"].take()) {
        meta.extend(extra);
    }
    params["_meta"] = meta;
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// The headers a conformant client sends for `body`: content negotiation, version, method,
/// and `Mcp-Name` for the methods that target a name or URI.
pub fn standard_headers(body: &Value) -> Vec<(String, String)> {
    let method = body["method"].as_str().expect("method").to_owned();
    let mut headers = vec![
        ("Content-Type".into(), "application/json".into()),
        ("Accept".into(), "application/json, text/event-stream".into()),
        ("MCP-Protocol-Version".into(), "2026-07-28".into()),
        ("Mcp-Method".into(), method.clone()),
    ];
    let target = match method.as_str() {
        "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
        "resources/read" => body["params"]["uri"].as_str(),
        _ => None,
    };
    if let Some(target) = target {
        headers.push(("Mcp-Name".into(), target.to_owned()));
    }
    headers
}

fn decode(content_type: &str, bytes: &[u8]) -> Vec<Value> {
    if content_type.starts_with("text/event-stream") {
        let mut events = Vec::new();
        SseDecoder::new().feed(bytes, &mut events);
        events
            .into_iter()
            .filter_map(|e| match e {
                SseEvent::Message(data) => Some(serde_json::from_str(&data).expect("SSE data is JSON")),
                SseEvent::Comment(_) => None,
            })
            .collect()
    } else if bytes.is_empty() {
        Vec::new()
    } else {
        vec![serde_json::from_slice(bytes).expect("JSON body")]
    }
}
