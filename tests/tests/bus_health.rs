//! What a node does when it cannot hear the fleet's change events, and what it does not do when
//! only publishing fails:
//! - deaf for less than `bus_down_grace`: streams stay open, nothing changes for clients;
//! - deaf for longer: open listen streams get their completion result (so clients reconnect to
//!   a replica that hears the bus), new listens are refused before the ack, `bus_health()`
//!   says so; when the bus is back the node accepts streams again;
//! - a failed publish is a counter, never a health change.
//!
//! The broker is the shared Redis, taken away through a cuttable loopback proxy.

use mcp_fleet_tests::cluster::EVENT_META;
use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::testing::WrappedBus;
use mcp_fleet_bus::{BusError, MemoryBus};
use mcp_fleet_bus_redis::{RedisBus, RedisBusOptions};
use mcp_fleet_server::HandlerOptions;
use mcp_fleet_tests::cluster::{Broker, broker_or_skip, unique_name};
use mcp_fleet_tests::eventually;
use mcp_fleet_tests::faults::metric;
use mcp_fleet_tests::proxy::CuttableProxy;
use mcp_fleet_tests::{McpClient, TestNode, WAIT, test_server};
use serde_json::json;

const GRACE: Duration = Duration::from_millis(1500);

#[tokio::test]
async fn a_node_deaf_past_its_grace_closes_its_streams_and_refuses_new_ones_until_it_hears_again() {
    let Some(url) = broker_or_skip(Broker::Redis).await else { return };
    let upstream = url.trim_start_matches("redis://").split('/').next().expect("host:port").to_owned();
    let proxy =
        CuttableProxy::start(tokio::net::lookup_host(&upstream).await.expect("resolve").next().expect("addr")).await;
    let mut options = RedisBusOptions::new(&format!("redis://{}", proxy.addr), "deaf")
        .expect("url")
        .with_stream_key(format!("mcp-fleet-test:{}", unique_name()));
    options.block_timeout = Duration::from_millis(300);
    options.reconnect_max = Duration::from_millis(200);
    let bus = Arc::new(RedisBus::connect(options).await.expect("bus"));
    let node = TestNode::start(test_server(), HandlerOptions::default().bus_down_grace(GRACE).bus(bus)).await;
    let client = McpClient::new(node.url());
    let mut stream = client.listen(json!("s"), json!({"toolsListChanged": true})).await;
    stream.next_message().await.expect("ack");

    proxy.cut();
    eventually("the node knows it is deaf", WAIT, || async { !node.handler.bus_health().connected }).await;
    assert!(!node.handler.bus_health().past_grace, "within the grace period");
    stream.expect_silence(GRACE / 3).await;

    // Past the grace: the stream is closed with its completion result, then ends.
    let done = stream.next_message().await.expect("a completion result");
    assert_eq!(done["id"], "s");
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert!(stream.next_message().await.is_none(), "the stream ended");
    assert!(node.handler.bus_health().past_grace);
    let refused = client
        .post(&mcp_fleet_tests::request(
            json!("r"),
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        ))
        .await;
    assert_eq!(refused.error_code(), Some(-32603), "{}", String::from_utf8_lossy(&refused.body));
    assert!(String::from_utf8_lossy(&refused.body).contains("reconnect to another replica"));
    assert!(node.handler.metrics_text().contains("mcp_fleet_bus_connected 0"));
    // Plain requests are still served.
    assert!(client.result("tools/list", json!({})).await["tools"].is_array());

    proxy.restore();
    eventually("the node hears the bus again", WAIT, || async { node.handler.bus_health().connected }).await;
    let mut again = client.listen(json!("again"), json!({"toolsListChanged": true})).await;
    assert_eq!(again.next_message().await.expect("ack")["method"], "notifications/subscriptions/acknowledged");
    let event = node.handler.notify().tools_changed().await.expect("publish");
    let heard = again.next_message().await.expect("the change");
    assert_eq!(heard["params"]["_meta"][EVENT_META]["version"], event.version);
    node.shutdown().await;
}

#[tokio::test]
async fn a_failed_publish_is_counted_and_returned_but_is_no_health_change() {
    // Publishing always fails; consuming is a healthy in-memory bus.
    let bus = WrappedBus::new(Arc::new(MemoryBus::new()))
        .failing_publishes(|_| Some(BusError::Unavailable("publishing is down in this test".into())));
    let node = TestNode::on_bus(test_server(), Arc::new(bus)).await;
    assert!(node.handler.notify().tools_changed().await.is_err(), "notify() returns the error to its caller");
    tokio::time::sleep(Duration::from_millis(600)).await; // more than one health sample
    assert!(node.handler.bus_health().connected);
    let text = node.handler.metrics_text();
    assert!(text.contains("mcp_fleet_bus_connected 1"), "{text}");
    assert_eq!(metric(&text, "mcp_fleet_bus_publish_failures"), 1);
    node.shutdown().await;
}
