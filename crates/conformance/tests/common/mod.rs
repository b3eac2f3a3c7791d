//! Test support: start the fixture server on a loopback port and POST JSON-RPC requests to it
//! with a real HTTP client, the way a 2026-07-28 client would. Every wait is bounded.

#![allow(dead_code, unreachable_pub)] // each test binary uses a different part of this module

use http::StatusCode;
use mcp_fleet_tests::{McpClient, TestNode};
use serde_json::{Value, json};

/// The capabilities the conformance harness declares by default.
pub fn default_caps() -> Value {
    json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}})
}

/// A running fixture server and a client for it.
pub struct Fixture {
    pub node: TestNode,
    client: McpClient,
}

/// Serve the fixtures on 127.0.0.1:0.
pub async fn start() -> Fixture {
    let options = mcp_fleet_conformance::handler_options(mcp_fleet_conformance::DEV_REQUEST_STATE_KEY.to_vec());
    let handler = mcp_fleet_conformance::fixture_handler(options).await.expect("fixture handler");
    let node = TestNode::serve(handler).await;
    let client = McpClient::new(node.url());
    Fixture { node, client }
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

    /// POST `body` with exactly `headers`.
    pub async fn post(&self, body: &Value, headers: &[(String, String)]) -> Reply {
        let reply = self.client.post_with(body, headers).await;
        let content_type =
            reply.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
        Reply { status: reply.status, content_type: content_type.to_owned(), messages: reply.messages() }
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

/// The headers a conformant client sends for `body` (`Mcp-Name` included where it applies).
pub fn standard_headers(body: &Value) -> Vec<(String, String)> {
    McpClient::standard_headers(body)
}
