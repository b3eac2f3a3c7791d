//! The example over real HTTP: axum's own routes and the MCP endpoint answer on one port, a
//! listen stream stays open, and `shutdown()` ends it and axum's drain together.

#![allow(clippy::unwrap_used)] // in a test, a panic at the failing line is the report we want

use std::time::Duration;

use mcp_fleet_example_axum_embed::{demo_server, serve};
use mcp_fleet_server::{HandlerOptions, create_mcp_handler};
use serde_json::{Value, json};

const META: &str =
    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn mcp(
    client: &reqwest::Client,
    url: &str,
    method: &str,
    name: Option<&str>,
    params: Value,
) -> reqwest::RequestBuilder {
    let mut params = params;
    params["_meta"] = serde_json::from_str(META).unwrap();
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string());
    if let Some(name) = name {
        req = req.header("mcp-name", name);
    }
    req
}

#[tokio::test]
async fn mcp_beside_other_routes_and_one_graceful_shutdown() {
    let handler = create_mcp_handler(demo_server(), HandlerOptions::default()).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let served = tokio::spawn(serve(listener, handler.clone()));
    let client = reqwest::Client::new();

    assert_eq!(client.get(format!("{base}/health")).send().await.unwrap().text().await.unwrap(), "ok");
    let url = format!("{base}/mcp");
    let called: Value =
        mcp(&client, &url, "tools/call", Some("echo"), json!({"name": "echo", "arguments": {"text": "hi"}}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    assert_eq!(called["result"]["content"][0]["text"], "hi", "{called}");

    // An open listen stream: shutdown must end it, or axum's drain would wait forever.
    let listen = mcp(&client, &url, "subscriptions/listen", None, json!({"notifications": {"toolsListChanged": true}}))
        .send()
        .await
        .unwrap();
    assert_eq!(listen.headers()["content-type"], "text/event-stream");
    let stream = tokio::spawn(async move { listen.text().await.unwrap() });

    handler.shutdown().await;
    let frames = tokio::time::timeout(Duration::from_secs(10), stream).await.unwrap().unwrap();
    assert!(frames.contains("\"result\""), "the stream ended with its completion result: {frames}");
    tokio::time::timeout(Duration::from_secs(10), served).await.unwrap().unwrap().unwrap();
}
