//! What one 2025-era caller may make the fleet hold, over HTTP: the `capabilities` and
//! `clientInfo` a session record keeps, sessions per anonymous client address (as listen
//! streams are counted), and resource subscriptions per session, each URI bounded like a
//! listen's. Each refusal is a specific JSON-RPC error with its status.

use http::StatusCode;
use mcp_fleet_server::{HandlerOptions, options::Era2025Options};
use mcp_fleet_tests::legacy::{LegacySession, initialize_raw};
use mcp_fleet_tests::{McpClient, TestNode, test_server};
use serde_json::{Value, json};

fn error_message(body: &[u8]) -> String {
    let reply: Value = serde_json::from_slice(body).unwrap();
    reply["error"]["message"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn capabilities_larger_than_the_limit_are_refused_before_a_session_is_stored() {
    let node = TestNode::start(test_server(), HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    // The case, smaller: a capabilities object of 3 MB (here 64 KiB) per session.
    let huge = json!({"experimental": {"x": "y".repeat(64 * 1024)}});
    let reply = initialize_raw(&client, huge, &[]).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", String::from_utf8_lossy(&reply.body));
    assert_eq!(reply.error_code(), Some(-32602));
    assert!(error_message(&reply.body).contains("limit is 16384"), "{}", error_message(&reply.body));
    assert!(!reply.headers.contains_key("mcp-session-id"), "no session");
    let _ok = LegacySession::open(&client, json!({"sampling": {}, "roots": {"listChanged": true}})).await;
    node.shutdown().await;
}

#[tokio::test]
async fn anonymous_sessions_are_counted_per_client_address() {
    let legacy = Era2025Options::default().max_sessions_per_address(2);
    let options = HandlerOptions::default().era2025(legacy).loopback_exempt_from_address_limit(false);
    let node = TestNode::start(test_server(), options).await;
    let client = McpClient::new(node.url());
    let first = LegacySession::open(&client, json!({})).await;
    let _second = LegacySession::open(&client, json!({})).await;
    let refused = initialize_raw(&client, json!({}), &[]).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS, "{}", String::from_utf8_lossy(&refused.body));
    assert!(error_message(&refused.body).contains("client address"), "{}", error_message(&refused.body));
    assert_eq!(first.delete(&client).await, StatusCode::OK);
    let _third = LegacySession::open(&client, json!({})).await;
    node.shutdown().await;

    // Loopback is exempt by default (a sidecar proxy, a local load test).
    let legacy = Era2025Options::default().max_sessions_per_address(1);
    let node = TestNode::start(test_server(), HandlerOptions::default().era2025(legacy)).await;
    let client = McpClient::new(node.url());
    for _ in 0..3 {
        LegacySession::open(&client, json!({})).await;
    }
    node.shutdown().await;
}

#[tokio::test]
async fn a_session_follows_a_bounded_number_of_bounded_uris() {
    let legacy = Era2025Options::default().max_subscriptions_per_session(2);
    let node = TestNode::start(test_server(), HandlerOptions::default().era2025(legacy).max_uri_bytes(64)).await;
    let client = McpClient::new(node.url());
    let session = LegacySession::open(&client, json!({})).await;
    let subscribe =
        |method: &str, uri: &str| json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"uri": uri}});
    let error = |reply: mcp_fleet_tests::Reply| {
        assert_eq!(reply.status, StatusCode::OK, "in band");
        (reply.error_code(), error_message(&reply.body))
    };
    let long = format!("test://{}", "l".repeat(100));
    for method in ["resources/subscribe", "resources/unsubscribe"] {
        let (code, message) = error(session.post(&client, &subscribe(method, &long)).await);
        assert_eq!(code, Some(-32602), "{method}");
        assert!(message.contains("limit is 64"), "{method}: {message}");
    }
    for uri in ["test://a", "test://b", "test://a"] {
        assert_eq!(session.result(&client, "resources/subscribe", json!({"uri": uri})).await, json!({}), "{uri}");
    }
    let (code, message) = error(session.post(&client, &subscribe("resources/subscribe", "test://c")).await);
    assert_eq!(code, Some(-32602));
    assert!(message.contains("follows 2 resources"), "{message}");
    session.result(&client, "resources/unsubscribe", json!({"uri": "test://a"})).await;
    session.result(&client, "resources/subscribe", json!({"uri": "test://c"})).await;
    node.shutdown().await;
}
