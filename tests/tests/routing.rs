//! Interest routing on a bus split into shards (`shards=8&routing=interest`), on the real Redis
//! (`MCP_FLEET_REDIS_URL`, default 127.0.0.1:6379) and the real NATS JetStream
//! (`MCP_FLEET_NATS_URL`, default 127.0.0.1:4222), each test once per backend: each node
//! consumes the fleet-wide events and those of the tenants and URIs its own streams follow —
//! not the fleet's total — and every stream still hears everything it follows, from its ack on.
//!
//! Skipped (with `skipped: … not reachable at …`) when a broker is down, unless
//! `MCP_FLEET_REQUIRE_BROKERS=1`.

use std::sync::atomic::Ordering;

use mcp_fleet_bus::shard::{Routing, shard_of};
use mcp_fleet_bus::{Change, EventEnvelope, EventKind};
use mcp_fleet_server::HandlerOptions;
use mcp_fleet_tests::cluster::{Broker, Fleet, tenant_options};
use mcp_fleet_tests::legacy::LegacySession;
use mcp_fleet_tests::{ListenStream, McpClient};
use serde_json::json;

const SHARDS: usize = 8;

/// A fleet of three nodes on `broker`, each bus split into [`SHARDS`] and routed by interest.
async fn routed(broker: Broker, options: impl Fn() -> HandlerOptions) -> Option<Fleet> {
    match broker {
        Broker::Redis => Fleet::start_on_redis(|o| (o.shards, o.routing) = (SHARDS, Routing::Interest), options).await,
        Broker::Nats => Fleet::start_on_nats(|o| (o.shards, o.routing) = (SHARDS, Routing::Interest), options).await,
    }
}

/// Two tenants whose events land on different shards, neither the fleet-wide one.
fn two_tenants_apart() -> (String, String) {
    let shard = |change: Change| shard_of(&EventEnvelope::new(change, "n"), SHARDS);
    let fleet_wide = shard(Change::list(EventKind::ToolsListChanged));
    let of = |t: usize| shard(Change::list(EventKind::ToolsListChanged).in_scope(format!("tenant-{t}")));
    let a = (0..).find(|t| of(*t) != fleet_wide).expect("a tenant off shard 0");
    let b = (a + 1..).find(|t| of(*t) != fleet_wide && of(*t) != of(a)).expect("a tenant on another shard");
    (format!("tenant-{a}"), format!("tenant-{b}"))
}

/// Read `stream` until a notification whose method is `method` arrives.
async fn hears(stream: &mut ListenStream, method: &str) {
    loop {
        let message = stream.next_message().await.expect("a notification");
        if message["method"] == method {
            return;
        }
    }
}

#[tokio::test]
async fn each_node_consumes_its_own_tenants_events_not_the_fleets_on_redis() {
    each_node_consumes_its_own_tenants_events_not_the_fleets(Broker::Redis).await;
}

#[tokio::test]
async fn each_node_consumes_its_own_tenants_events_not_the_fleets_on_nats() {
    each_node_consumes_its_own_tenants_events_not_the_fleets(Broker::Nats).await;
}

async fn each_node_consumes_its_own_tenants_events_not_the_fleets(broker: Broker) {
    let Some(fleet) = routed(broker, tenant_options).await else { return };
    let (a, b) = two_tenants_apart();
    let follow = json!({"toolsListChanged": true});
    let mut on_a = [fleet.listen(0, Some(&a), follow.clone()).await, fleet.listen(0, Some(&a), follow.clone()).await];
    let mut on_b = [fleet.listen(1, Some(&b), follow.clone()).await];
    let consumed = |i: usize| fleet.bus_counters(i).received.load(Ordering::Relaxed);
    let before: Vec<u64> = (0..3).map(consumed).collect();

    let publisher = fleet.nodes[2].handler.notify();
    for _ in 0..20 {
        publisher.tenant(&a).tools_changed().await.expect("publish a");
        publisher.tenant(&b).tools_changed().await.expect("publish b");
    }
    publisher.tools_changed().await.expect("publish fleet-wide");
    for stream in on_a.iter_mut().chain(on_b.iter_mut()) {
        hears(stream, "notifications/tools/list_changed").await;
    }
    // Every stream hears the fleet-wide change too (coalesced with its tenant's, at the latest).
    let deadline = tokio::time::Instant::now() + mcp_fleet_tests::WAIT;
    let delta = |i: usize| consumed(i) - before[i];
    while (delta(0), delta(1), delta(2)) != (21, 21, 1) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // Node 0 reads tenant a's shard and the fleet-wide one, node 1 tenant b's, node 2 (no
    // streams) only the fleet-wide one: 21, 21 and 1 of the 41 events.
    assert_eq!((delta(0), delta(1), delta(2)), (21, 21, 1), "events consumed per node");
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_stream_opened_on_a_shard_nobody_read_hears_the_next_change_on_redis() {
    a_stream_opened_on_a_shard_nobody_read_hears_the_next_change(Broker::Redis).await;
}

#[tokio::test]
async fn a_stream_opened_on_a_shard_nobody_read_hears_the_next_change_on_nats() {
    a_stream_opened_on_a_shard_nobody_read_hears_the_next_change(Broker::Nats).await;
}

async fn a_stream_opened_on_a_shard_nobody_read_hears_the_next_change(broker: Broker) {
    let Some(fleet) = routed(broker, tenant_options).await else { return };
    let (a, _) = two_tenants_apart();
    // Open and close streams of the tenant again and again: each open starts its shard's tail
    // before the ack, each close stops it; a change right after the ack is never missed.
    for round in 0..5 {
        let mut stream = fleet.listen(round % 3, Some(&a), json!({"toolsListChanged": true})).await;
        fleet.nodes[(round + 1) % 3].handler.notify().tenant(&a).tools_changed().await.expect("publish");
        hears(&mut stream, "notifications/tools/list_changed").await;
        drop(stream);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    fleet.shutdown().await;
}

/// A 2025 session's stream follows every URI: a subscription made through another node, then
/// an update published at once, arrive in that order (the subscription is stored where the
/// URI's updates are).
#[tokio::test]
async fn a_2025_session_stream_hears_an_update_right_after_its_subscription_on_redis() {
    a_2025_session_stream_hears_an_update_right_after_its_subscription(Broker::Redis).await;
}

#[tokio::test]
async fn a_2025_session_stream_hears_an_update_right_after_its_subscription_on_nats() {
    a_2025_session_stream_hears_an_update_right_after_its_subscription(Broker::Nats).await;
}

async fn a_2025_session_stream_hears_an_update_right_after_its_subscription(broker: Broker) {
    let Some(fleet) = routed(broker, HandlerOptions::default).await else { return };
    let c: Vec<McpClient> = fleet.nodes.iter().map(|n| McpClient::new(n.url())).collect();
    let session = LegacySession::open(&c[0], json!({})).await;
    let mut stream = session.stream(&c[0], None).await;
    assert_eq!(stream.status, http::StatusCode::OK);
    for i in 0..10 {
        let uri = format!("test://r/{i}");
        session.result(&c[1 + i % 2], "resources/subscribe", json!({"uri": uri})).await;
        fleet.nodes[2 - i % 2].handler.notify().resource_updated(uri.clone()).await.expect("publish");
        let updated = stream.next_message().await.expect("the update");
        assert_eq!(updated["params"]["uri"], uri, "{updated}");
    }
    fleet.shutdown().await;
}

/// An unscoped stream subscribed to one resource: its node starts reading that URI's shard
/// before the ack, and hears the update published right after it.
#[tokio::test]
async fn a_resource_subscription_is_followed_from_its_ack_on_redis() {
    a_resource_subscription_is_followed_from_its_ack(Broker::Redis).await;
}

#[tokio::test]
async fn a_resource_subscription_is_followed_from_its_ack_on_nats() {
    a_resource_subscription_is_followed_from_its_ack(Broker::Nats).await;
}

async fn a_resource_subscription_is_followed_from_its_ack(broker: Broker) {
    let Some(fleet) = routed(broker, HandlerOptions::default).await else { return };
    for i in 0..6 {
        let uri = format!("test://routed/{i}");
        let mut stream = fleet.listen(i % 3, None, json!({"resourceSubscriptions": [uri]})).await;
        fleet.nodes[(i + 1) % 3].handler.notify().resource_updated(uri.clone()).await.expect("publish");
        let updated = stream.next_message().await.expect("the update");
        assert_eq!(updated["params"]["uri"], uri, "{updated}");
    }
    fleet.shutdown().await;
}
