//! Inputs a hostile or unusual client can send, answered cleanly: a list cursor crafted to
//! point near `usize::MAX`, and HTTP/2 requests (no `Host` header, only `:authority`) under a
//! `Host` allow-list.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::StatusCode;
use mcp_fleet_server::HandlerOptions;
use mcp_fleet_tests::{McpClient, TestNode, request, test_server};
use serde_json::json;

#[tokio::test]
async fn a_cursor_crafted_past_the_end_is_an_empty_last_page_not_an_overflow() {
    let node = TestNode::start(test_server(), HandlerOptions::default().page_size(1)).await;
    let client = McpClient::new(node.url());
    let first = client.result("tools/list", json!({})).await;
    let cursor = first["nextCursor"].as_str().expect("a next page");
    let decoded = String::from_utf8(URL_SAFE_NO_PAD.decode(cursor).unwrap()).unwrap();
    let (prefix, _offset) = decoded.rsplit_once(':').unwrap();
    for offset in [usize::MAX, usize::MAX - 1, 1_000_000] {
        let crafted = URL_SAFE_NO_PAD.encode(format!("{prefix}:{offset}"));
        let page = client.result("tools/list", json!({"cursor": crafted})).await;
        assert_eq!(page["tools"], json!([]), "offset {offset}");
        assert!(page.get("nextCursor").is_none());
    }
    node.shutdown().await;
}

#[tokio::test]
async fn an_allowed_host_list_judges_http2_requests_by_their_authority() {
    let node = TestNode::start(test_server(), HandlerOptions::default().allowed_hosts(["127.0.0.1"])).await;
    let body = request(json!(1), "tools/list", json!({}));
    let h2 = McpClient::h2c(node.url()).post(&body).await;
    assert_eq!(h2.status, StatusCode::OK, "{}", String::from_utf8_lossy(&h2.body));
    let mut headers = McpClient::standard_headers(&body);
    headers.push(("host".into(), "evil.example.com".into()));
    let refused = McpClient::new(node.url()).post_with(&body, &headers).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    node.shutdown().await;
}
