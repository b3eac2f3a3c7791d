//! Tenant scopes: the authenticator's principal decides which scoped events a listen stream
//! receives; one tenant's changes never reach another's streams; global events reach all; and a
//! tenant's stream numbers its own notifications instead of showing the bus's position, which
//! would count every tenant's changes.

use std::time::Duration;

use mcp_fleet_server::HandlerOptions;
use mcp_fleet_tests::cluster::EVENT_META;
use mcp_fleet_tests::{McpClient, TestNode, request, test_server};
use serde_json::json;

fn options() -> HandlerOptions {
    mcp_fleet_tests::cluster::tenant_options()
}

async fn listen_as(client: &McpClient, tenant: &str) -> mcp_fleet_tests::ListenStream {
    let body = request(json!(tenant), "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}));
    let mut headers = McpClient::standard_headers(&body);
    headers.push(("x-tenant".into(), tenant.into()));
    let resp = client.send_raw("POST", &headers, serde_json::to_vec(&body).unwrap()).await;
    mcp_fleet_tests::ListenStream::from_response(resp)
}

#[tokio::test]
async fn unauthenticated_requests_get_401_with_a_challenge() {
    let node = TestNode::start(test_server(), options()).await;
    let client = McpClient::new(node.url());
    let reply = client.post(&request(json!(1), "tools/list", json!({}))).await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.headers["www-authenticate"], "Bearer realm=\"test\"");
    node.shutdown().await;
}

#[tokio::test]
async fn scoped_events_stay_in_their_tenant_and_global_events_reach_everyone() {
    let node = TestNode::start(test_server(), options()).await;
    let client = McpClient::new(node.url());
    let mut a = listen_as(&client, "a").await;
    let mut b = listen_as(&client, "b").await;
    a.next_message().await.unwrap();
    b.next_message().await.unwrap();
    node.handler.notify().tenant("a").tools_changed().await.unwrap();
    assert_eq!(a.next_message().await.unwrap()["method"], "notifications/tools/list_changed");
    b.expect_silence(Duration::from_millis(300)).await;
    node.handler.notify().tools_changed().await.unwrap();
    assert_eq!(a.next_message().await.unwrap()["method"], "notifications/tools/list_changed");
    assert_eq!(b.next_message().await.unwrap()["method"], "notifications/tools/list_changed");
    node.shutdown().await;
}

#[tokio::test]
async fn a_tenants_stream_counts_its_own_notifications_and_never_sees_the_bus_position() {
    let node = TestNode::start(test_server(), options()).await;
    let client = McpClient::new(node.url());
    let mut a = listen_as(&client, "a").await;
    a.next_message().await.unwrap();
    let notify = node.handler.notify();
    let mut versions = Vec::new();
    for round in 0..3u64 {
        // Another tenant's changes in between: the bus's version moves on, a's count does not.
        notify.tenant("b").tools_changed().await.unwrap();
        notify.tenant("b").tools_changed().await.unwrap();
        let notifier = if round == 1 { notify.clone() } else { notify.tenant("a") };
        let event = notifier.tools_changed().await.unwrap();
        let msg = a.next_message().await.unwrap();
        let meta = &msg["params"]["_meta"][EVENT_META];
        assert_eq!(meta, &json!({"seq": round + 1, "publishedAtMs": event.published_at_ms}), "{msg}");
        versions.push(event.version);
    }
    assert!(versions.windows(2).all(|w| w[1] > w[0] + 1), "b's changes were in between: {versions:?}");
    node.shutdown().await;
}
