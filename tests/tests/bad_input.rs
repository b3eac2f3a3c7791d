//! Bad input gets the specific HTTP status and JSON-RPC error, and the server keeps serving.

use http::StatusCode;
use mcp_fleet_server::HandlerOptions;
use mcp_fleet_tests::{McpClient, TestNode, request, test_server};
use serde_json::{Value, json};

fn headers(method: &str) -> Vec<(String, String)> {
    McpClient::standard_headers(&json!({"method": method}))
}

async fn node() -> (TestNode, McpClient) {
    let options = HandlerOptions::default().max_body_bytes(1024 * 1024);
    let node = TestNode::start(test_server(), options).await;
    let client = McpClient::new(node.url());
    (node, client)
}

async fn raw(client: &McpClient, headers: &[(String, String)], body: &[u8]) -> (StatusCode, Value) {
    let resp = client.send_raw("POST", headers, body.to_vec()).await;
    let status = resp.status();
    let bytes = http_body_util::BodyExt::collect(resp.into_body()).await.expect("body").to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// Name, headers, body, expected status, expected JSON-RPC code.
type Case = (&'static str, Vec<(String, String)>, Vec<u8>, StatusCode, i64);

#[tokio::test]
async fn each_bad_input_gets_its_specific_error_and_the_server_keeps_serving() {
    let (node, client) = node().await;
    let list = headers("tools/list");
    let ok = serde_json::to_vec(&request(json!(1), "tools/list", json!({}))).unwrap();
    let cases: Vec<Case> = vec![
        ("malformed JSON", list.clone(), b"{\"jsonrpc\":".to_vec(), StatusCode::BAD_REQUEST, -32700),
        ("batch array", list.clone(), format!("[{}]", String::from_utf8_lossy(&ok)).into_bytes(), StatusCode::BAD_REQUEST, -32600),
        ("posted response", list.clone(), br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec(), StatusCode::BAD_REQUEST, -32600),
        ("wrong jsonrpc", list.clone(), br#"{"jsonrpc":"1.0","id":1,"method":"tools/list"}"#.to_vec(), StatusCode::BAD_REQUEST, -32600),
        ("missing Mcp-Method", list[..3].to_vec(), ok.clone(), StatusCode::BAD_REQUEST, -32020),
        ("mismatched Mcp-Method", headers("prompts/list"), ok.clone(), StatusCode::BAD_REQUEST, -32020),
        (
            "unknown version",
            vec![("content-type".into(), "application/json".into()), ("mcp-protocol-version".into(), "v9".into()), ("mcp-method".into(), "tools/list".into())],
            serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v9","io.modelcontextprotocol/clientCapabilities":{}}}})).unwrap(),
            StatusCode::BAD_REQUEST,
            -32022,
        ),
        ("missing envelope", list.clone(), br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#.to_vec(), StatusCode::BAD_REQUEST, -32602),
        (
            "filter with wrong types",
            headers("subscriptions/listen"),
            serde_json::to_vec(&request(json!(1), "subscriptions/listen", json!({"notifications":{"toolsListChanged":"yes"}}))).unwrap(),
            StatusCode::OK,
            -32602,
        ),
        ("unknown method", headers("nope/nope"), serde_json::to_vec(&request(json!(1), "nope/nope", json!({}))).unwrap(), StatusCode::NOT_FOUND, -32601),
        ("removed method", headers("initialize"), serde_json::to_vec(&request(json!(1), "initialize", json!({}))).unwrap(), StatusCode::NOT_FOUND, -32601),
    ];
    for (name, headers, body, status, code) in cases {
        let (got_status, got) = raw(&client, &headers, &body).await;
        assert_eq!(got_status, status, "{name}: {got}");
        assert_eq!(got["error"]["code"], code, "{name}: {got}");
    }
    // Still serving.
    assert!(client.result("tools/list", json!({})).await["tools"].is_array());
    // Counted by method (bounded: unknown methods are `other`) and status.
    let metrics = node.handler.metrics_text();
    for line in [
        r#"mcp_fleet_http_requests_total{method="tools/list",status="200"} 1"#,
        r#"mcp_fleet_http_requests_total{method="other",status="404"} 2"#,
        r#"mcp_fleet_http_requests_total{method="invalid",status="400"}"#,
    ] {
        assert!(metrics.contains(line), "{line} missing from:\n{metrics}");
    }
    node.shutdown().await;
}

#[tokio::test]
async fn http_level_refusals() {
    let (node, client) = node().await;
    let ok = serde_json::to_vec(&request(json!(1), "tools/list", json!({}))).unwrap();
    // The 2026 era has no GET stream and no session to DELETE.
    let get = client.send_raw("GET", &headers("tools/list"), Vec::new()).await;
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(get.headers()["allow"], "POST");
    let delete = client.send_raw("DELETE", &headers("tools/list"), Vec::new()).await;
    assert_eq!(delete.status(), StatusCode::METHOD_NOT_ALLOWED);
    // A 2025-era one without its session: 400 (2025-11-25 §Session Management).
    let delete = client.send_raw("DELETE", &[], Vec::new()).await;
    assert_eq!(delete.status(), StatusCode::BAD_REQUEST);
    let put = client.send_raw("PUT", &[], Vec::new()).await;
    assert_eq!(
        (put.status(), put.headers()["allow"].to_str().unwrap()),
        (StatusCode::METHOD_NOT_ALLOWED, "POST, GET, DELETE")
    );

    let mut text = headers("tools/list");
    text[0].1 = "text/plain".into();
    assert_eq!(raw(&client, &text, &ok).await.0, StatusCode::UNSUPPORTED_MEDIA_TYPE);

    let mut evil = headers("tools/list");
    evil.push(("origin".into(), "http://evil.example.com".into()));
    assert_eq!(raw(&client, &evil, &ok).await.0, StatusCode::FORBIDDEN);

    let big = vec![b' '; 10 * 1024 * 1024];
    let (status, body) = raw(&client, &headers("tools/list"), &big).await;
    assert_eq!((status, body["error"]["code"].clone()), (StatusCode::PAYLOAD_TOO_LARGE, json!(-32600)));

    let mut bad_bytes = headers("tools/list");
    bad_bytes.push(("mcp-name".into(), String::new()));
    let req = http::Request::builder()
        .method("POST")
        .uri(node.url())
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", http::HeaderValue::from_bytes(b"tools/\xfflist").unwrap())
        .body(http_body_util::Full::new(bytes::Bytes::from(ok.clone())))
        .unwrap();
    let client_raw = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
    let resp = client_raw.request(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "non-UTF-8 header");

    let notification = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#;
    let resp = client.send_raw("POST", &headers("notifications/cancelled"), notification.to_vec()).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    node.shutdown().await;
}

#[tokio::test]
async fn too_many_uris_in_one_listen_is_invalid_params() {
    let node = TestNode::start(test_server(), HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let uris: Vec<String> = (0..100_000).map(|i| format!("test://r/{i}")).collect();
    let body = request(json!(7), "subscriptions/listen", json!({"notifications": {"resourceSubscriptions": uris}}));
    let reply = client.post(&body).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.error_code(), Some(-32602));
    assert_eq!(reply.json()["id"], 7);
    assert_eq!(node.handler.open_streams(), 0);
    node.shutdown().await;
}
