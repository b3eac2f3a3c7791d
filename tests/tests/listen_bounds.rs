//! Listen streams hold bounded memory, over HTTP: a URI length cap, subscription bytes per
//! stream and per principal, streams per client address when callers are anonymous, and
//! optionally only URIs the catalog knows. Each refusal is the listen's JSON-RPC error instead
//! of its ack (the right code and status) and is counted in `/metrics`.

use http::StatusCode;
use mcp_fleet_server::HandlerOptions;
use mcp_fleet_tests::cluster::tenant_options;
use mcp_fleet_tests::{ListenStream, McpClient, Reply, TestNode, request, test_server};
use serde_json::{Value, json};

/// A listen body following `uris`.
fn listen(uris: &[String]) -> Value {
    request(json!("l"), "subscriptions/listen", json!({"notifications": {"resourceSubscriptions": uris}}))
}

fn uris(n: usize, len: usize) -> Vec<String> {
    (0..n).map(|i| format!("test://{i:0>width$}", width = len - 7)).collect()
}

/// POST a listen that must be refused (read whole: no stream was opened).
async fn refused(client: &McpClient, body: &Value, headers: &[(String, String)]) -> Reply {
    let mut all = McpClient::standard_headers(body);
    all.extend(headers.iter().cloned());
    let reply = client.post_with(body, &all).await;
    assert!(
        !reply.headers["content-type"].as_bytes().starts_with(b"text/event-stream"),
        "refused before the ack: {}",
        String::from_utf8_lossy(&reply.body[..reply.body.len().min(300)])
    );
    reply
}

/// Open a listen that must be acknowledged, with extra `headers`.
async fn opened(client: &McpClient, body: &Value, headers: &[(String, String)]) -> ListenStream {
    let mut all = McpClient::standard_headers(body);
    all.extend(headers.iter().cloned());
    let mut stream =
        ListenStream::from_response(client.send_raw("POST", &all, serde_json::to_vec(body).unwrap()).await);
    let ack = stream.next_message().await.expect("ack");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    stream
}

fn refusals(node: &TestNode, reason: &str) -> String {
    let metrics = node.handler.metrics_text();
    let line = format!("mcp_fleet_listen_streams_refused_total{{reason=\"{reason}\"}}");
    metrics.lines().find(|l| l.starts_with(&line)).map(str::to_owned).unwrap_or_else(|| format!("{line} missing"))
}

#[tokio::test]
async fn a_listen_of_a_thousand_4_kib_uris_is_refused_before_the_ack() {
    let node = TestNode::start(test_server(), HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    // The case: 1 000 URIs of 4 KiB, about 8 MiB held once acknowledged.
    let reply = refused(&client, &listen(&uris(1000, 4096)), &[]).await;
    assert_eq!(reply.status, StatusCode::OK, "in band, as the URI count limit");
    assert_eq!(reply.error_code(), Some(-32602));
    assert!(reply.json()["error"]["message"].as_str().unwrap().contains("limit is 2048"), "{}", reply.json());
    assert_eq!(refusals(&node, "uri_too_long"), "mcp_fleet_listen_streams_refused_total{reason=\"uri_too_long\"} 1");
    // Short URIs, but 1 000 of 1 KiB: over the 128 KiB a stream may hold.
    let reply = refused(&client, &listen(&uris(1000, 1024)), &[]).await;
    assert_eq!((reply.status, reply.error_code()), (StatusCode::OK, Some(-32602)));
    assert_eq!(refusals(&node, "stream_bytes"), "mcp_fleet_listen_streams_refused_total{reason=\"stream_bytes\"} 1");
    assert_eq!(node.handler.open_streams(), 0);
    // Within both limits: acknowledged.
    let _ok = opened(&client, &listen(&uris(100, 1024)), &[]).await;
    assert_eq!(node.handler.open_streams(), 1);
    node.shutdown().await;
}

#[tokio::test]
async fn a_principals_streams_share_one_budget_of_subscription_bytes() {
    let node = TestNode::start(test_server(), tenant_options().max_subscription_bytes_per_principal(25_000)).await;
    let client = McpClient::new(node.url());
    let tenant = |t: &str| [("x-tenant".to_owned(), t.to_owned())];
    let body = listen(&uris(10, 1000)); // 10 000 bytes each
    let first = opened(&client, &body, &tenant("a")).await;
    let _second = opened(&client, &body, &tenant("a")).await;
    let reply = refused(&client, &body, &tenant("a")).await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(reply.error_code(), Some(-32603));
    assert_eq!(
        refusals(&node, "principal_bytes"),
        "mcp_fleet_listen_streams_refused_total{reason=\"principal_bytes\"} 1"
    );
    let _other = opened(&client, &body, &tenant("b")).await; // another principal's budget
    drop(first);
    mcp_fleet_tests::eventually("the closed stream gave its bytes back", mcp_fleet_tests::WAIT, async || {
        node.handler.open_streams() == 2
    })
    .await;
    let _third = opened(&client, &body, &tenant("a")).await;
    node.shutdown().await;
}

#[tokio::test]
async fn without_auth_one_client_address_cannot_take_every_stream_slot() {
    let strict = HandlerOptions::default().max_streams_per_address(3).loopback_exempt_from_address_limit(false);
    let node = TestNode::start(test_server(), strict).await;
    let client = McpClient::new(node.url());
    let body = request(json!("l"), "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}));
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(opened(&client, &body, &[]).await);
    }
    let reply = refused(&client, &body, &[]).await;
    assert_eq!((reply.status, reply.error_code()), (StatusCode::TOO_MANY_REQUESTS, Some(-32603)));
    assert!(reply.json()["error"]["message"].as_str().unwrap().contains("client address"), "{}", reply.json());
    assert_eq!(refusals(&node, "address_limit"), "mcp_fleet_listen_streams_refused_total{reason=\"address_limit\"} 1");
    held.pop();
    mcp_fleet_tests::eventually("a slot is free again", mcp_fleet_tests::WAIT, async || {
        node.handler.open_streams() == 2
    })
    .await;
    held.push(opened(&client, &body, &[]).await);
    node.shutdown().await;

    // By default loopback peers (a sidecar proxy, a local load test) are exempt.
    let node = TestNode::start(test_server(), HandlerOptions::default().max_streams_per_address(1)).await;
    let client = McpClient::new(node.url());
    let _a = opened(&client, &body, &[]).await;
    let _b = opened(&client, &body, &[]).await;
    node.shutdown().await;
}

#[tokio::test]
async fn subscribed_uris_may_be_required_to_exist_in_the_catalog() {
    let node = TestNode::start(test_server(), HandlerOptions::default().listen_uris_must_exist(true)).await;
    let client = McpClient::new(node.url());
    let _known = opened(&client, &listen(&["test://a".into()]), &[]).await;
    let reply = refused(&client, &listen(&["test://a".into(), "test://nope".into()]), &[]).await;
    assert_eq!((reply.status, reply.error_code()), (StatusCode::OK, Some(-32602)));
    assert_eq!(reply.json()["error"]["data"]["unknownUris"], json!(["test://nope"]));
    assert_eq!(refusals(&node, "unknown_uri"), "mcp_fleet_listen_streams_refused_total{reason=\"unknown_uri\"} 1");
    node.shutdown().await;
}
