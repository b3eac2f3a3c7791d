//! Helpers shared by the integration tests: a real handler around an `McpServer`, and MCP
//! requests sent to it directly (no socket), with the 2026-07-28 headers and `_meta`.

// Each test file uses its own subset of these helpers.
#![allow(dead_code)]

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use mcp_fleet_server::{
    HandlerOptions, McpHandler, McpServer, catalog::ListKind, create_mcp_handler, options::ResponseMode,
};
use serde_json::{Value, json};

/// A handler serving `server`, JSON responses only.
pub(crate) async fn handler(server: McpServer) -> McpHandler {
    let options = HandlerOptions::default().response_mode(ResponseMode::Json);
    create_mcp_handler(server, options).await.expect("handler")
}

/// Send one request; the JSON-RPC response.
pub(crate) async fn rpc(h: &McpHandler, method: &str, name: Option<&str>, params: Value) -> Value {
    rpc_with(h, &[], method, name, params).await.1
}

/// Send one request with extra `headers`; the HTTP status and the JSON-RPC response.
pub(crate) async fn rpc_with(
    h: &McpHandler,
    headers: &[(&str, &str)],
    method: &str,
    name: Option<&str>,
    mut params: Value,
) -> (u16, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let mut req = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        req = req.header("mcp-name", name);
    }
    for (header, value) in headers {
        req = req.header(*header, *value);
    }
    let resp = h.handle(req.body(Full::new(Bytes::from(body))).expect("request")).await;
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (status, serde_json::from_slice(&bytes).expect("a JSON response"))
}

/// `tools/call`; the result.
pub(crate) async fn call_tool(h: &McpHandler, name: &str, arguments: Value) -> Value {
    let resp = rpc(h, "tools/call", Some(name), json!({"name": name, "arguments": arguments})).await;
    resp.get("result").cloned().unwrap_or_else(|| panic!("no result: {resp}"))
}

/// The text of a result's first content block.
pub(crate) fn first_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content: {result}"))
}

/// The server's keys of `kind`, read without changing anything.
pub(crate) async fn keys(server: &McpServer, kind: ListKind) -> Vec<String> {
    server.batch(|edit| Ok(edit.keys(kind))).await.expect("keys")
}
