//! The fleet specification every real broker must meet: three nodes, each with its own
//! connection to one private stream, listen streams spread across them. Each function is one
//! behaviour; `tests/tests/cluster_redis.rs` and `cluster_nats.rs` run all of them against
//! their broker (like centrifuge's one broker suite for every backend).

use std::time::Duration;

use mcp_fleet_server::HandlerOptions;
use serde_json::json;

use crate::cluster::{
    Broker, EVENT_META, Fleet, NODES, await_versions, follow_all, publish_during, publish_each, tenant_options,
};

/// Long enough for a wrongly delivered notification to show up once the right ones arrived.
const QUIET: Duration = Duration::from_millis(100);

/// A list change published on one node reaches every stream following that list on every node, once; other streams hear nothing.
pub async fn list_change_reaches_every_matching_stream_on_every_node(broker: Broker) {
    let Some(fleet) = Fleet::start(broker, HandlerOptions::default).await else { return };
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
        assert_eq!(msg["params"]["_meta"][EVENT_META]["epoch"], event.epoch, "one epoch across the fleet");
        s.expect_silence(QUIET).await;
    }
    for s in &mut others {
        s.expect_silence(QUIET).await;
    }
    fleet.shutdown().await;
}

/// A resource update reaches only subscribers of that URI, on every node.
pub async fn resource_update_reaches_only_its_subscribers_on_every_node(broker: Broker) {
    let Some(fleet) = Fleet::start(broker, HandlerOptions::default).await else { return };
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

/// A tenant's change reaches only that tenant's streams on every node; a global one reaches all.
/// A tenant's stream numbers its notifications (`seq`) instead of showing the bus's position.
pub async fn scoped_change_stays_in_its_tenant_and_global_reaches_all(broker: Broker) {
    let Some(fleet) = Fleet::start(broker, tenant_options).await else { return };
    let mut tenant_a = Vec::new();
    let mut tenant_b = Vec::new();
    for i in 0..NODES {
        tenant_a.push(fleet.listen(i, Some("a"), json!({"toolsListChanged": true})).await);
        tenant_b.push(fleet.listen((i + 1) % NODES, Some("b"), json!({"toolsListChanged": true})).await);
    }
    let scoped = fleet.nodes[1].handler.notify().tenant("a").tools_changed().await.unwrap();
    for s in &mut tenant_a {
        let msg = s.next_message().await.unwrap();
        assert_eq!(msg["params"]["_meta"][EVENT_META], json!({"seq": 1, "publishedAtMs": scoped.published_at_ms}));
    }
    for s in &mut tenant_b {
        s.expect_silence(QUIET).await;
    }
    let global = fleet.nodes[0].handler.notify().tools_changed().await.unwrap();
    for (s, seq) in tenant_a.iter_mut().map(|s| (s, 2)).chain(tenant_b.iter_mut().map(|s| (s, 1))) {
        let msg = s.next_message().await.unwrap();
        assert_eq!(msg["params"]["_meta"][EVENT_META], json!({"seq": seq, "publishedAtMs": global.published_at_ms}));
    }
    fleet.shutdown().await;
}

/// Cutting every node's broker connection while publishing loses no last change of any kind.
pub async fn cutting_broker_connections_while_publishing_loses_no_last_change(broker: Broker) {
    let Some(fleet) = Fleet::start(broker, HandlerOptions::default).await else { return };
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

/// After its connection is cut, every node reports its bus connected again and delivers new changes.
pub async fn every_node_reports_its_bus_connected_after_the_cut(broker: Broker) {
    let Some(fleet) = Fleet::start(broker, HandlerOptions::default).await else { return };
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

/// Generate one `#[tokio::test]` per behaviour of this spec for `broker`, so every backend's
/// test file is the same list by construction.
#[macro_export]
macro_rules! fleet_spec_tests {
    ($broker:expr) => {
        #[tokio::test]
        async fn a_list_change_on_one_node_reaches_every_stream_following_that_list_on_every_node() {
            $crate::cluster_spec::list_change_reaches_every_matching_stream_on_every_node($broker).await;
        }

        #[tokio::test]
        async fn a_resource_update_reaches_only_subscribers_of_that_uri_on_every_node() {
            $crate::cluster_spec::resource_update_reaches_only_its_subscribers_on_every_node($broker).await;
        }

        #[tokio::test]
        async fn a_scoped_change_reaches_only_its_tenant_on_every_node_and_a_global_one_reaches_all() {
            $crate::cluster_spec::scoped_change_stays_in_its_tenant_and_global_reaches_all($broker).await;
        }

        #[tokio::test]
        async fn cutting_the_broker_connections_while_publishing_loses_no_last_change() {
            $crate::cluster_spec::cutting_broker_connections_while_publishing_loses_no_last_change($broker).await;
        }

        #[tokio::test]
        async fn every_node_reports_its_bus_connected_again_after_the_cut() {
            $crate::cluster_spec::every_node_reports_its_bus_connected_after_the_cut($broker).await;
        }
    };
}
