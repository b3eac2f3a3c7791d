//! `subscriptions/listen`: ack first with the honoured subset, every message stamped with the
//! subscription id, only opted-in types, resource updates only for subscribed URIs, several
//! subscriptions per client, coalescing, capacity, h2c, and graceful close.

use mcp_fleet_tests::cluster::EVENT_META;
use std::time::Duration;

use mcp_fleet_server::HandlerOptions;
use mcp_fleet_tests::{McpClient, TestNode, request, test_server};
use serde_json::{Value, json};

const SUB: &str = "io.modelcontextprotocol/subscriptionId";

async fn start(options: HandlerOptions) -> (TestNode, McpClient) {
    let node = TestNode::start(test_server(), options).await;
    let client = McpClient::new(node.url());
    (node, client)
}

#[tokio::test]
async fn ack_first_then_only_what_was_asked_for_stamped() {
    let (node, client) = start(HandlerOptions::default()).await;
    let mut tools =
        client.listen(json!(42), json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a"]})).await;
    assert_eq!(tools.status, 200);
    assert_eq!(tools.headers["content-type"], "text/event-stream");
    assert_eq!(tools.headers["x-accel-buffering"], "no");
    let ack = tools.next_message().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a"]})
    );
    assert_eq!(ack["params"]["_meta"][SUB], 42);

    let mut prompts = client.listen(json!("p"), json!({"promptsListChanged": true, "unknownField": true})).await;
    assert_eq!(prompts.next_message().await.unwrap()["params"]["notifications"], json!({"promptsListChanged": true}));

    let notify = node.handler.notify();
    notify.tools_changed().await.unwrap();
    notify.resource_updated("test://other").await.unwrap();
    let published = notify.resource_updated("test://a").await.unwrap();

    let first = tools.next_message().await.unwrap();
    assert_eq!(first["method"], "notifications/tools/list_changed");
    assert_eq!(first["params"]["_meta"][SUB], 42);
    assert!(first["params"]["_meta"][EVENT_META]["version"].is_u64());
    let second = tools.next_message().await.unwrap();
    assert_eq!(
        (second["method"].clone(), second["params"]["uri"].clone()),
        (json!("notifications/resources/updated"), json!("test://a"))
    );
    assert_eq!(second["params"]["_meta"][EVENT_META]["version"], published.version);
    prompts.expect_silence(Duration::from_millis(300)).await;
    notify.prompts_changed().await.unwrap();
    let p = prompts.next_message().await.unwrap();
    assert_eq!(
        (p["method"].clone(), p["params"]["_meta"][SUB].clone()),
        (json!("notifications/prompts/list_changed"), json!("p"))
    );
    tools.expect_silence(Duration::from_millis(300)).await;
    let metrics = node.handler.metrics_text();
    assert!(metrics.contains("mcp_fleet_bus_event_age_seconds_count 4"), "{metrics}");
    assert!(metrics.contains("mcp_fleet_listen_fanout_seconds_count 4"), "{metrics}");
    assert!(metrics.contains("mcp_fleet_listen_frames_written_total 3"), "{metrics}");
    node.shutdown().await;
}

#[tokio::test]
async fn a_burst_coalesces_and_the_last_notification_is_the_newest() {
    let (node, client) = start(HandlerOptions::default()).await;
    let mut stream = client.listen(json!(1), json!({"toolsListChanged": true})).await;
    stream.next_message().await.unwrap();
    let mut last = 0;
    for _ in 0..200 {
        last = node.handler.notify().tools_changed().await.unwrap().version;
    }
    let mut seen = 0;
    loop {
        let msg = stream.next_message().await.unwrap();
        seen += 1;
        if msg["params"]["_meta"][EVENT_META]["version"] == last {
            break;
        }
    }
    assert!(seen <= 200, "no more notifications than changes");
    stream.expect_silence(Duration::from_millis(200)).await;
    node.shutdown().await;
}

#[tokio::test]
async fn capacity_is_refused_before_the_ack_and_freed_on_close() {
    let (node, client) = start(HandlerOptions::default().max_streams(2)).await;
    let mut a = client.listen(json!(1), json!({"toolsListChanged": true})).await;
    a.next_message().await.unwrap();
    let mut b = client.listen(json!(2), json!({})).await;
    b.next_message().await.unwrap();
    let full = client.post(&request(json!(3), "subscriptions/listen", json!({"notifications": {}}))).await;
    assert_eq!(full.headers["content-type"], "application/json");
    assert_eq!(full.error_code(), Some(-32603));
    assert_eq!(full.json()["id"], 3);
    drop(b);
    mcp_fleet_tests::eventually("the closed stream is unregistered", Duration::from_secs(5), async || {
        node.handler.open_streams() == 1
    })
    .await;
    let mut c = client.listen(json!(4), json!({})).await;
    assert_eq!(c.next_message().await.unwrap()["method"], "notifications/subscriptions/acknowledged");
    node.shutdown().await;
}

#[tokio::test]
async fn listen_works_over_h2c() {
    let (node, _) = start(HandlerOptions::default()).await;
    let client = McpClient::h2c(node.url());
    let mut s = client.listen(json!("h2"), json!({"toolsListChanged": true})).await;
    s.next_message().await.unwrap();
    node.handler.notify().tools_changed().await.unwrap();
    assert_eq!(s.next_message().await.unwrap()["params"]["_meta"][SUB], "h2");
    node.shutdown().await;
}

#[tokio::test]
async fn shutdown_sends_the_completion_result_then_ends_the_stream() {
    let (node, client) = start(HandlerOptions::default()).await;
    let mut s = client.listen(json!(8), json!({"toolsListChanged": true})).await;
    s.next_message().await.unwrap();
    let handler = node.handler.clone();
    let shutting = tokio::spawn(async move { handler.shutdown().await });
    let done: Value = s.next_message().await.unwrap();
    assert_eq!(done["id"], 8);
    assert_eq!(done["result"]["resultType"], "complete");
    assert_eq!(done["result"]["_meta"][SUB], 8);
    assert_eq!(done["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "test-server");
    assert!(s.next_message().await.is_none(), "stream ends after the completion result");
    tokio::time::timeout(Duration::from_secs(5), shutting).await.expect("shutdown finishes").unwrap();
}
