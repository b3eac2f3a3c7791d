//! A fleet of three nodes on a real NATS JetStream (`MCP_FLEET_NATS_URL`, default
//! 127.0.0.1:4222), each with its own connection to one private stream and subject prefix: a
//! change published on any node reaches exactly the matching listen streams on every node,
//! tenant scopes never leak, and forcing every node's client to reconnect mid-publishing loses
//! no last change.
//!
//! Skipped (with `skipped: nats not reachable at …`) when NATS is down, unless
//! `MCP_FLEET_REQUIRE_BROKERS=1`.

use std::time::Duration;

use mcp_fleet_server::HandlerOptions;
use mcp_fleet_tests::cluster::{
    Broker, EVENT_META, Fleet, NODES, await_versions, follow_all, publish_during, publish_each, tenant_options,
};
use serde_json::json;

const BROKER: Broker = Broker::Nats;
/// Long enough for a wrongly delivered notification to show up once the right ones arrived.
const QUIET: Duration = Duration::from_millis(100);

#[tokio::test]
async fn a_list_change_on_one_node_reaches_every_stream_following_that_list_on_every_node() {
    let Some(fleet) = Fleet::start(BROKER, HandlerOptions::default).await else { return };
    let mut tools = Vec::new();
    let mut others = Vec::new();
    for i in 0..NODES {
        tools.push(fleet.listen(i, None, json!({"toolsListChanged": true})).await);
        others.push(fleet.listen(i, None, json!({"promptsListChanged": true})).await);
        others.push(fleet.listen(i, None, json!({"resourceSubscriptions": ["test://a"]})).await);
    }
    let event = fleet.nodes[1].handler.notify().tools_changed().await.unwrap();
    for s in &mut tools {
        let msg = s.next_message().await.unwrap();
        assert_eq!(msg["method"], "notifications/tools/list_changed");
        assert_eq!(msg["params"]["_meta"][EVENT_META]["version"], event.version);
        s.expect_silence(QUIET).await;
    }
    for s in &mut others {
        s.expect_silence(QUIET).await;
    }
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_resource_update_reaches_only_subscribers_of_that_uri_on_every_node() {
    let Some(fleet) = Fleet::start(BROKER, HandlerOptions::default).await else { return };
    let mut a = Vec::new();
    let mut b = Vec::new();
    for i in 0..NODES {
        a.push(fleet.listen(i, None, json!({"resourceSubscriptions": ["test://a"]})).await);
        b.push(fleet.listen(i, None, json!({"resourceSubscriptions": ["test://b"], "toolsListChanged": true})).await);
    }
    let event = fleet.nodes[2].handler.notify().resource_updated("test://a").await.unwrap();
    for s in &mut a {
        let msg = s.next_message().await.unwrap();
        assert_eq!(msg["method"], "notifications/resources/updated");
        assert_eq!(msg["params"]["uri"], "test://a");
        assert_eq!(msg["params"]["_meta"][EVENT_META]["version"], event.version);
    }
    for s in &mut b {
        s.expect_silence(QUIET).await;
    }
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_scoped_change_reaches_only_its_tenant_on_every_node_and_a_global_one_reaches_all() {
    let Some(fleet) = Fleet::start(BROKER, tenant_options).await else { return };
    let mut tenant_a = Vec::new();
    let mut tenant_b = Vec::new();
    for i in 0..NODES {
        tenant_a.push(fleet.listen(i, Some("a"), json!({"toolsListChanged": true})).await);
        tenant_b.push(fleet.listen((i + 1) % NODES, Some("b"), json!({"toolsListChanged": true})).await);
    }
    let scoped = fleet.nodes[1].handler.notify().scope("a").tools_changed().await.unwrap();
    for s in &mut tenant_a {
        assert_eq!(s.next_message().await.unwrap()["params"]["_meta"][EVENT_META]["version"], scoped.version);
    }
    for s in &mut tenant_b {
        s.expect_silence(QUIET).await;
    }
    let global = fleet.nodes[0].handler.notify().tools_changed().await.unwrap();
    for s in tenant_a.iter_mut().chain(&mut tenant_b) {
        assert_eq!(s.next_message().await.unwrap()["params"]["_meta"][EVENT_META]["version"], global.version);
    }
    fleet.shutdown().await;
}

#[tokio::test]
async fn forcing_reconnects_while_publishing_loses_no_last_change() {
    let Some(fleet) = Fleet::start(BROKER, HandlerOptions::default).await else { return };
    let mut streams = Vec::new();
    for i in 0..NODES {
        streams.push(fleet.listen(i, None, follow_all()).await);
        streams.push(fleet.listen(i, None, follow_all()).await);
    }
    let cut = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(fleet.cut_broker_connections().await, NODES);
        // Stop before the consumers are back (they retry after 100 ms at the earliest), so the
        // last changes are made while they are away and must come from resuming, not tailing.
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (last, failures) = publish_during(&fleet.notifiers(), cut).await;
    println!("last versions published around the cut: {last:?}; {failures} publishes failed and were retried");
    assert_eq!(last.len(), 3, "every kind was published at least once");
    fleet.await_recovered(1).await;
    // Every successful publish is delivered, so each stream sees the last one of every kind.
    for s in &mut streams {
        await_versions(s, &last, false).await;
    }
    // And the fleet keeps working: fresh changes reach every stream (or a gap invalidates it).
    let fresh = publish_each(&fleet.nodes[2].handler.notify()).await;
    for s in &mut streams {
        await_versions(s, &fresh, true).await;
    }
    fleet.shutdown().await;
}

#[tokio::test]
async fn every_node_reports_its_bus_connected_again_after_a_forced_reconnect() {
    let Some(fleet) = Fleet::start(BROKER, HandlerOptions::default).await else { return };
    let mut streams = Vec::new();
    for i in 0..NODES {
        streams.push(fleet.listen(i, None, json!({"toolsListChanged": true})).await);
    }
    assert_eq!(fleet.cut_broker_connections().await, NODES);
    fleet.await_recovered(1).await;
    for node in &fleet.nodes {
        assert!(node.handler.metrics_text().contains("mcp_fleet_bus_connected 1"), "{}", node.handler.metrics_text());
    }
    let event = fleet.nodes[0].handler.notify().tools_changed().await.unwrap();
    for s in &mut streams {
        assert_eq!(s.next_message().await.unwrap()["params"]["_meta"][EVENT_META]["version"], event.version);
    }
    fleet.shutdown().await;
}
