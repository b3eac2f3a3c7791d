//! With immediate catalog notifications, catalog-driven changes survive a bus outage: while node A cannot publish, a handle update on
//! A is live at once for A's own streams, and reaches node B's streams as soon as the bus takes
//! A's publish again (the outbox retries); explicit `notify()` meanwhile returns its error.
//!
//! The broker is the shared Redis; node A reaches it through a cuttable loopback proxy.

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus_redis::{RedisBus, RedisBusOptions};
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_server::{HandlerOptions, McpServer, fleet::CatalogAnnouncePolicy};
use mcp_fleet_tests::cluster::{Broker, EVENT_META, broker_or_skip, unique_name};
use mcp_fleet_tests::eventually;
use mcp_fleet_tests::faults::metric;
use mcp_fleet_tests::proxy::CuttableProxy;
use mcp_fleet_tests::{McpClient, TestNode, WAIT};
use serde_json::json;

async fn node(url: &str, key: &str, name: &str, server: McpServer) -> TestNode {
    let mut options = RedisBusOptions::new(url, name).expect("url").with_stream_key(key);
    options.publish_timeout = Duration::from_millis(500);
    options.reconnect_max = Duration::from_millis(200);
    let bus = Arc::new(RedisBus::connect(options).await.expect("bus"));
    let options = HandlerOptions::default().catalog_notifications(CatalogAnnouncePolicy::Immediate);
    TestNode::start(server, options.bus(bus)).await
}

#[tokio::test]
async fn a_catalog_change_during_an_outage_is_live_locally_at_once_and_reaches_the_fleet_when_the_bus_returns() {
    let Some(url) = broker_or_skip(Broker::Redis).await else { return };
    let upstream = url.trim_start_matches("redis://").split('/').next().expect("host:port").to_owned();
    let proxy =
        CuttableProxy::start(tokio::net::lookup_host(&upstream).await.expect("resolve").next().expect("addr")).await;
    let key = format!("mcp-fleet-test:{}", unique_name());
    let server_a = McpServer::builder("a", "1").build();
    let search = server_a.tool(Tool::new("search", "Searches"), |_| async { Ok(CallToolResult::text("…")) });
    let a = node(&format!("redis://{}", proxy.addr), &key, "node-a", server_a).await;
    let b = node(&url, &key, "node-b", McpServer::builder("b", "1").build()).await;
    let mut on_a = McpClient::new(a.url()).listen(json!("a"), json!({"toolsListChanged": true})).await;
    let mut on_b = McpClient::new(b.url()).listen(json!("b"), json!({"toolsListChanged": true})).await;
    on_a.next_message().await.expect("ack");
    on_b.next_message().await.expect("ack");

    proxy.cut();
    assert!(a.handler.notify().tools_changed().await.is_err(), "explicit notify() reports the outage");
    search.update_tool(Tool::new("search", "Searches orders")).await.expect("the catalog change is accepted");
    // A's own streams hear it at once, marked as delivered before the bus had it.
    let local = on_a.next_message().await.expect("local delivery");
    assert_eq!(local["method"], "notifications/tools/list_changed");
    assert_eq!(local["params"]["_meta"][EVENT_META]["local"], true, "{local}");
    on_b.expect_silence(Duration::from_millis(300)).await;
    eventually("the outbox is retrying", WAIT, || async {
        let text = a.handler.metrics_text();
        metric(&text, "mcp_fleet_outbox_retries") >= 1 && text.contains("mcp_fleet_outbox_pending 1")
    })
    .await;

    proxy.restore();
    // The retried publish reaches B; on A it is a duplicate of what A's streams already heard.
    let remote = on_b.next_message().await.expect("the change reaches the fleet");
    assert_eq!(remote["method"], "notifications/tools/list_changed");
    assert!(remote["params"]["_meta"][EVENT_META]["version"].as_u64().is_some(), "{remote}");
    eventually("the outbox drained", WAIT, || async {
        a.handler.metrics_text().contains("mcp_fleet_outbox_pending 0")
    })
    .await;
    eventually("A dropped the bus copy", WAIT, || async {
        metric(&a.handler.metrics_text(), "mcp_fleet_bus_duplicates_dropped") >= 1
    })
    .await;
    on_a.expect_silence(Duration::from_millis(300)).await;
    a.shutdown().await;
    b.shutdown().await;
}
