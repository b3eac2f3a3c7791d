//! The example over real HTTP: axum's own routes and the MCP endpoint answer on one port, a
//! listen stream stays open, and `shutdown()` ends it and axum's drain together; and the
//! endpoint nested with `nest_service`, the router owning its path.

#![allow(clippy::unwrap_used)] // in a test, a panic at the failing line is the report we want

use std::time::Duration;

use mcp_fleet_example_axum_embed::{demo_server, nested_router, serve};
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

/// Call the `echo` tool at `url` with `text`; the text it answered.
async fn echo(client: &reqwest::Client, url: &str, text: &str) -> Value {
    let call = json!({"name": "echo", "arguments": {"text": text}});
    let called: Value = mcp(client, url, "tools/call", Some("echo"), call).send().await.unwrap().json().await.unwrap();
    called["result"]["content"][0]["text"].clone()
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
    assert_eq!(echo(&client, &url, "hi").await, "hi");

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

/// Serve [`nested_router`] around a handler built with `options` on a free port; its base URL.
async fn serve_nested(options: HandlerOptions) -> String {
    let handler = create_mcp_handler(demo_server(), options).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, nested_router(handler)).await });
    base
}

#[tokio::test]
async fn nest_service_owns_the_path_once_the_handler_stops_matching_it() {
    let client = reqwest::Client::new();

    // Today's default: the handler sees `/` under the nest and answers 404.
    let matching = serve_nested(HandlerOptions::default()).await;
    let refused = mcp(&client, &format!("{matching}/mcp"), "tools/call", Some("echo"), json!({"name": "echo"}));
    assert_eq!(refused.send().await.unwrap().status(), 404);

    let base = serve_nested(HandlerOptions::default().match_path(false)).await;
    assert_eq!(echo(&client, &format!("{base}/mcp"), "nested").await, "nested");
    assert_eq!(client.get(format!("{base}/health")).send().await.unwrap().text().await.unwrap(), "ok");
    let elsewhere = client.post(format!("{base}/other")).send().await.unwrap();
    assert_eq!(elsewhere.status(), 404, "paths the router does not nest stay the router's");
}
