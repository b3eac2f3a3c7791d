//! A lag or gap in bus events is never ignored: the node invalidates conservatively — every
//! listen stream gets a `{"gap": true, "epoch": …, "lastVersion": …}` notification for every
//! list and URI it follows, naming the last event the node delivered before the gap — and
//! counts the gap in `mcp_fleet_bus_gaps_total`.

use std::collections::HashSet;
use std::sync::Arc;

use mcp_fleet_bus::MemoryBus;
use mcp_fleet_tests::cluster::EVENT_META;
use mcp_fleet_tests::{McpClient, TestNode, test_server};
use serde_json::{Value, json};

#[tokio::test]
async fn a_consumer_that_lags_invalidates_every_followed_list_and_uri_and_counts_the_gap() {
    // Capacity 1: the node's bus consumer falls behind as soon as two events are queued.
    let node = TestNode::on_bus(test_server(), Arc::new(MemoryBus::with_capacity(1))).await;
    let mut stream = McpClient::new(node.url())
        .listen(json!(1), json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a"]}))
        .await;
    stream.next_message().await.unwrap();
    let before = node.handler.notify().tools_changed().await.unwrap();
    let delivered = stream.next_message().await.unwrap();
    let meta = &delivered["params"]["_meta"][EVENT_META];
    assert_eq!((meta["epoch"].as_u64(), meta["version"].as_u64()), (Some(before.epoch), Some(before.version)));
    // The memory bus publishes without yielding, and this (single-threaded) test does not yield
    // in the loop, so the consumer cannot run until all ten are queued: it lags by nine.
    // Prompts only, so the one event it still receives matches nothing this stream follows.
    let notify = node.handler.notify();
    for _ in 0..10 {
        notify.prompts_changed().await.unwrap();
    }
    let mut invalidated = HashSet::new();
    while invalidated.len() < 2 {
        let msg = stream.next_message().await.unwrap();
        let gap = json!({"gap": true, "epoch": before.epoch, "lastVersion": before.version});
        assert_eq!(msg["params"]["_meta"][EVENT_META], gap, "{msg}");
        invalidated.insert((msg["method"].clone(), msg["params"]["uri"].clone()));
    }
    let expected = [
        (json!("notifications/tools/list_changed"), Value::Null),
        (json!("notifications/resources/updated"), json!("test://a")),
    ];
    assert_eq!(invalidated, HashSet::from(expected));
    assert!(gaps_total(&node.handler.metrics_text()) >= 1);
    node.shutdown().await;
}

/// The value of `mcp_fleet_bus_gaps_total` in OpenMetrics `text`.
fn gaps_total(text: &str) -> u64 {
    let line = text.lines().find_map(|l| l.strip_prefix("mcp_fleet_bus_gaps_total "));
    line.unwrap_or_else(|| panic!("no gaps counter in:\n{text}")).trim().parse().expect("a number")
}
