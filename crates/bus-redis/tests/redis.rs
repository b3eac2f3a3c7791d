//! The Redis backend against a real Redis (127.0.0.1:6379, or `MCP_FLEET_REDIS_URL`): the
//! shared bus, membership and keyspace suites, recovery from a killed tailing connection, gaps
//! after trimming, undecodable entries, and interest routing over shards. Each test uses its own stream key, and faults are injected by killing
//! one named connection, never the server, because other tests share it.
//!
//! Without a reachable Redis each test prints `skipped: …` and passes, unless
//! `MCP_FLEET_REQUIRE_BROKERS=1`.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mcp_fleet_bus::shard::Routing;
use mcp_fleet_bus::testing::{self, WAIT, eventually, next_event, next_item};
use mcp_fleet_bus::{BoxFuture, BusItem, Change, EventEnvelope, EventKind, GapReason, ServerEventBus, Subject};
use mcp_fleet_bus_redis::{RedisBus, RedisBusOptions};

const TEST_TIMEOUT: Duration = Duration::from_secs(20);

fn redis_url() -> String {
    std::env::var("MCP_FLEET_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".into())
}

/// An admin connection, or `None` (after printing why) when Redis is down and not required.
async fn admin() -> Option<redis::aio::MultiplexedConnection> {
    let url = redis_url();
    let attempt = async { redis::Client::open(url.as_str())?.get_multiplexed_async_connection().await };
    match tokio::time::timeout(Duration::from_secs(2), attempt).await {
        Ok(Ok(conn)) => Some(conn),
        _ => {
            testing::skip_unreachable("redis", &url);
            None
        }
    }
}

fn unique_key(test: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("mcp-fleet-test:{test}:{}:{nanos}", std::process::id())
}

async fn bus(key: &str, node: &str, tweak: impl FnOnce(&mut RedisBusOptions)) -> RedisBus {
    let mut options = RedisBusOptions::new(&redis_url(), node).expect("valid url").with_stream_key(key);
    tweak(&mut options);
    RedisBus::connect(options).await.expect("connect to redis")
}

/// `make_node` for the shared suites: node `i` is `node-<i>` on the stream `key`.
fn nodes(key: &str) -> impl Fn(usize) -> BoxFuture<'static, Arc<dyn ServerEventBus>> + '_ {
    move |i| {
        let key = key.to_owned();
        Box::pin(async move { Arc::new(bus(&key, &format!("node-{i}"), |_| {}).await) as Arc<dyn ServerEventBus> })
    }
}

/// Delete the stream and its sibling keys (counter, epoch record).
async fn cleanup(admin: &mut redis::aio::MultiplexedConnection, key: &str) {
    let _: Result<(), _> =
        redis::cmd("DEL").arg(key).arg(keys(key).version_key()).arg(keys(key).epoch_key()).query_async(admin).await;
}

/// Options naming `key`'s sibling keys.
fn keys(key: &str) -> RedisBusOptions {
    RedisBusOptions::new(&redis_url(), "keys").expect("valid url").with_stream_key(key)
}

/// Kill the connections named `name`; returns how many were killed.
async fn kill_named(admin: &mut redis::aio::MultiplexedConnection, name: &str) -> usize {
    let list: String = redis::cmd("CLIENT").arg("LIST").query_async(admin).await.expect("client list");
    let ids: Vec<String> = list
        .lines()
        .filter(|line| line.split(' ').any(|field| field == format!("name={name}")))
        .filter_map(|line| line.split(' ').find_map(|f| f.strip_prefix("id=")).map(str::to_owned))
        .collect();
    for id in &ids {
        let _: Result<(), _> = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id).query_async(admin).await;
    }
    ids.len()
}

#[tokio::test]
async fn passes_the_shared_bus_suite() {
    let Some(mut admin) = admin().await else { return };
    let key = unique_key("suite");
    let suite = testing::run_suite(nodes(&key));
    tokio::time::timeout(TEST_TIMEOUT, suite).await.expect("suite finished in time");
    cleanup(&mut admin, &key).await;
}

/// A bus split over four streams on one server: the same contract, unpositioned.
#[tokio::test]
async fn passes_the_shared_bus_suite_split_into_shards() {
    let Some(mut admin) = admin().await else { return };
    let key = unique_key("suite-sharded");
    let nodes = |i: usize| {
        let key = key.clone();
        Box::pin(
            async move { Arc::new(bus(&key, &format!("node-{i}"), |o| o.shards = 4).await) as Arc<dyn ServerEventBus> },
        ) as BoxFuture<'static, Arc<dyn ServerEventBus>>
    };
    let suite = testing::run_suite_with(nodes, testing::SuiteOptions::sharded());
    tokio::time::timeout(TEST_TIMEOUT, suite).await.expect("suite finished in time");
    let shard_keys: Vec<String> =
        redis::cmd("KEYS").arg(format!("{{{key}#*")).query_async(&mut admin).await.expect("keys");
    assert_eq!(shard_keys.len(), 4 * 3, "each shard has its stream, counter and epoch: {shard_keys:?}");
    let _: () = redis::cmd("DEL").arg(&shard_keys).query_async(&mut admin).await.expect("del");
}

#[tokio::test]
async fn passes_the_membership_suite() {
    let Some(mut admin) = admin().await else { return };
    let key = unique_key("members");
    let suite = testing::run_membership_suite(nodes(&key), Duration::from_millis(800));
    tokio::time::timeout(TEST_TIMEOUT, suite).await.expect("suite finished in time");
    let _: Result<(), _> = redis::cmd("DEL").arg(keys(&key).members_key()).query_async(&mut admin).await;
    cleanup(&mut admin, &key).await;
}

#[tokio::test]
async fn passes_the_keyspace_suite() {
    let Some(mut admin) = admin().await else { return };
    let key = unique_key("keyspace");
    let suite = testing::run_keyspace_suite(
        nodes(&key),
        testing::KeyspaceSuiteOptions { ttl: Duration::from_millis(300), expiry_slack: Duration::from_millis(100) },
    );
    tokio::time::timeout(TEST_TIMEOUT, suite).await.expect("suite finished in time");
    // Every record and revision counter of the suite's keyspaces.
    let pattern = format!("{}*", keys(&key).keyspace_prefix("*"));
    let found: Vec<String> = redis::cmd("KEYS").arg(&pattern).query_async(&mut admin).await.expect("keys");
    assert!(found.iter().any(|k| k.ends_with(":ks:suite:#rev")), "the layout is as documented: {found:?}");
    let _: Result<(), _> = redis::cmd("DEL").arg(found).query_async(&mut admin).await;
    cleanup(&mut admin, &key).await;
}

#[tokio::test]
async fn keyspaces_of_different_streams_do_not_share_records() {
    let Some(mut admin) = admin().await else { return };
    let (one, other) = (unique_key("ks_one"), unique_key("ks_other"));
    let ttl = Duration::from_secs(30);
    let a = bus(&one, "n", |_| {}).await.keyspace("shared", ttl).await.expect("open");
    let b = bus(&other, "n", |_| {}).await.keyspace("shared", ttl).await.expect("open");
    a.put("k", b"one".to_vec()).await.expect("put");
    assert_eq!(b.get("k").await.expect("get"), None);
    let record: i64 = redis::cmd("PTTL")
        .arg(format!("{}k", keys(&one).keyspace_prefix("shared")))
        .query_async(&mut admin)
        .await
        .expect("pttl");
    assert!(record > 0 && record <= 30_000, "the record expires with the TTL: {record} ms");
    for key in [one, other] {
        let prefix = keys(&key).keyspace_prefix("shared");
        let _: Result<(), _> =
            redis::cmd("DEL").arg(format!("{prefix}k")).arg(format!("{prefix}#rev")).query_async(&mut admin).await;
    }
}

#[tokio::test]
async fn a_killed_tailing_connection_loses_nothing() {
    let Some(mut admin) = admin().await else { return };
    let key = unique_key("kill");
    let consumer = bus(&key, "consumer", |o| o.reconnect_min = Duration::from_millis(50)).await;
    let publisher = bus(&key, "publisher", |_| {}).await;
    let mut stream = consumer.subscribe().await.expect("subscribe");
    let name = consumer.options().tail_client_name();

    let mut sent = HashSet::new();
    let mut kills = 0;
    for i in 0..60 {
        if i % 20 == 10 {
            kills += kill_named(&mut admin, &name).await;
        }
        sent.insert(publisher.publish(Change::resource(format!("test://k/{i}"))).await.expect("publish").event_id);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(kills >= 2, "the tailing connection was found and killed ({kills})");

    let mut seen = HashSet::new();
    let deadline = Instant::now() + TEST_TIMEOUT;
    while !sent.is_subset(&seen) {
        assert!(Instant::now() < deadline, "missing {} events", sent.difference(&seen).count());
        seen.insert(next_event(&mut stream).await.event_id);
    }
    let counters = consumer.counters();
    assert!(counters.reconnects.load(Ordering::Relaxed) >= 2);
    assert_eq!(counters.gaps.load(Ordering::Relaxed), 0);
    assert!(consumer.status().is_connected());
    cleanup(&mut admin, &key).await;
}

#[tokio::test]
async fn history_trimmed_while_disconnected_is_a_gap() {
    let Some(mut admin) = admin().await else { return };
    let key = unique_key("trim");
    // A long first backoff keeps the consumer away while the test trims.
    let consumer = bus(&key, "consumer", |o| o.reconnect_min = Duration::from_millis(1500)).await;
    let publisher = bus(&key, "publisher", |_| {}).await;
    let mut stream = consumer.subscribe().await.expect("subscribe");
    publisher.publish(Change::list(EventKind::ToolsListChanged)).await.expect("publish");
    next_event(&mut stream).await;

    assert_eq!(kill_named(&mut admin, &consumer.options().tail_client_name()).await, 1);
    eventually("the consumer sees the connection lost", WAIT, async || !consumer.status().is_connected()).await;
    for _ in 0..3 {
        publisher.publish(Change::list(EventKind::PromptsListChanged)).await.expect("publish");
    }
    let _: () = redis::cmd("XTRIM").arg(&key).arg("MAXLEN").arg(0).query_async(&mut admin).await.expect("xtrim");
    let last = publisher.publish(Change::resource("test://after")).await.expect("publish");

    assert_eq!(next_item(&mut stream).await, BusItem::Gap(GapReason::HistoryTrimmed));
    assert_eq!(next_event(&mut stream).await.event_id, last.event_id);
    assert_eq!(consumer.counters().gaps.load(Ordering::Relaxed), 1);
    cleanup(&mut admin, &key).await;
}

#[tokio::test]
async fn history_trimmed_while_disconnected_is_a_gap_even_when_nothing_is_published_after() {
    let Some(mut admin) = admin().await else { return };
    let key = unique_key("trim_quiet");
    let consumer = bus(&key, "consumer", |o| o.reconnect_min = Duration::from_millis(1500)).await;
    let publisher = bus(&key, "publisher", |_| {}).await;
    let mut stream = consumer.subscribe().await.expect("subscribe");
    assert_eq!(kill_named(&mut admin, &consumer.options().tail_client_name()).await, 1);
    eventually("the consumer sees the connection lost", WAIT, async || !consumer.status().is_connected()).await;
    let mut kept = None;
    for _ in 0..3 {
        kept = Some(publisher.publish(Change::list(EventKind::PromptsListChanged)).await.expect("publish"));
    }
    let _: () = redis::cmd("XTRIM").arg(&key).arg("MAXLEN").arg(1).query_async(&mut admin).await.expect("xtrim");
    // Two of the three are gone; the consumer learns it on reconnecting, and still gets the third.
    assert_eq!(next_item(&mut stream).await, BusItem::Gap(GapReason::HistoryTrimmed));
    assert_eq!(Some(next_event(&mut stream).await.event_id), kept.map(|e| e.event_id));
    assert!(consumer.status().is_connected());
    cleanup(&mut admin, &key).await;
}

#[tokio::test]
async fn an_undecodable_entry_is_counted_and_skipped() {
    let Some(mut admin) = admin().await else { return };
    let key = unique_key("garbage");
    let consumer = bus(&key, "consumer", |_| {}).await;
    let mut stream = consumer.subscribe().await.expect("subscribe");
    // A foreign entry with a valid next version, so it is not a gap, only garbage.
    let version: u64 = redis::cmd("INCR").arg(keys(&key).version_key()).query_async(&mut admin).await.expect("incr");
    let _: String = redis::cmd("XADD")
        .arg(&key)
        .arg("*")
        .arg("v")
        .arg(version)
        .arg("e")
        .arg("\u{1}not json")
        .query_async(&mut admin)
        .await
        .expect("xadd");
    let good = consumer.publish(Change::list(EventKind::ToolsListChanged)).await.expect("publish");

    assert_eq!(next_event(&mut stream).await.event_id, good.event_id);
    assert_eq!(consumer.counters().undecodable.load(Ordering::Relaxed), 1);
    assert_eq!(consumer.counters().gaps.load(Ordering::Relaxed), 0);
    cleanup(&mut admin, &key).await;
}

#[tokio::test]
async fn keys_deleted_while_idle_start_a_new_epoch_and_the_idle_consumer_reports_the_gap() {
    let Some(mut admin) = admin().await else { return };
    let key = unique_key("epoch");
    let consumer = bus(&key, "consumer", |o| o.block_timeout = Duration::from_millis(200)).await;
    let mut stream = consumer.subscribe().await.expect("subscribe");
    let before = consumer.publish(Change::list(EventKind::ToolsListChanged)).await.expect("publish");
    assert_eq!(next_event(&mut stream).await.epoch, before.epoch);
    // What a restart without persistence does to the bus's keys: all gone. Nobody publishes,
    // yet the idle consumer notices within its block time.
    cleanup(&mut admin, &key).await;
    assert_eq!(next_item(&mut stream).await, BusItem::Gap(GapReason::EpochChanged));
    let after = consumer.publish(Change::list(EventKind::ToolsListChanged)).await.expect("publish");
    assert_ne!(after.epoch, before.epoch, "lost history is a new epoch");
    let got = next_event(&mut stream).await;
    assert_eq!((got.event_id, got.epoch), (after.event_id, after.epoch));
    assert_eq!(consumer.counters().gaps.load(Ordering::Relaxed), 1);
    cleanup(&mut admin, &key).await;
}

#[tokio::test]
async fn a_deleted_counter_starts_a_new_epoch_instead_of_reusing_versions() {
    let Some(mut admin) = admin().await else { return };
    let key = unique_key("counter");
    let bus = bus(&key, "n", |_| {}).await;
    let first = bus.publish(Change::list(EventKind::ToolsListChanged)).await.expect("publish");
    let _: i64 = redis::cmd("DEL").arg(keys(&key).version_key()).query_async(&mut admin).await.expect("del");
    let second = bus.publish(Change::list(EventKind::ToolsListChanged)).await.expect("publish");
    assert_ne!(second.epoch, first.epoch);
    cleanup(&mut admin, &key).await;
}

#[tokio::test]
async fn an_unreachable_redis_fails_fast() {
    let mut options = RedisBusOptions::new("redis://127.0.0.1:1/0", "n").expect("valid url");
    options.publish_timeout = Duration::from_millis(500);
    let started = Instant::now();
    let result = RedisBus::connect(options).await;
    assert!(matches!(result, Err(mcp_fleet_bus::BusError::Unavailable(_))), "{:?}", result.err());
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// Interest routing: a node reads the fleet-wide shard and the shards its streams follow, from
/// the moment its gain resolves; a shard nobody follows any more stops being read.
#[tokio::test]
async fn a_routed_node_reads_only_the_shards_it_follows() {
    let Some(mut admin) = admin().await else { return };
    let key = unique_key("routing");
    let reader = bus(&key, "reader", |o| (o.shards, o.routing) = (8, Routing::Interest)).await;
    let writer = bus(&key, "writer", |o| o.shards = 8).await;
    let mut events = reader.subscribe().await.expect("subscribe");
    let fleet_wide = || Change::list(EventKind::ToolsListChanged);
    let scoped = |t: usize| Change::resource("test://x").in_scope(format!("tenant-{t}"));
    // A tenant outside shard 0, and its subject.
    let shard_zero = writer.options().stream_of(&EventEnvelope::new(fleet_wide(), "w"));
    let routed = (0..).find(|t| writer.options().stream_of(&EventEnvelope::new(scoped(*t), "w")) != shard_zero);
    let tenant = routed.expect("some tenant hashes outside shard 0");
    let subject = [Subject::Scope(format!("tenant-{tenant}"))];

    // Before any gain: the fleet-wide event arrives, the tenant's does not.
    writer.publish(scoped(tenant)).await.expect("publish");
    let marker = writer.publish(fleet_wide()).await.expect("publish");
    let heard = heard_until(&mut events, &marker.event_id).await;
    assert!(!heard.iter().any(|e| e.scope.is_some()), "nothing scoped on shard 0 here: {heard:?}");

    reader.gain(&subject).await.expect("gain");
    let mut sent = HashSet::new();
    for t in 0..16 {
        sent.insert(writer.publish(scoped(t)).await.expect("publish").event_id);
    }
    let ours = writer.publish(scoped(tenant)).await.expect("publish");
    let heard = heard_until(&mut events, &ours.event_id).await;
    let scopes: HashSet<_> = heard.iter().filter_map(|e| e.scope.clone()).collect();
    assert!(scopes.contains(&format!("tenant-{tenant}")), "the followed tenant's events arrive: {scopes:?}");
    assert!(scopes.len() < 16, "a node following one tenant reads 2 of 8 shards, not all: {scopes:?}");

    reader.lose(&subject);
    writer.publish(scoped(tenant)).await.expect("publish");
    let marker = writer.publish(fleet_wide()).await.expect("publish");
    let heard = heard_until(&mut events, &marker.event_id).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!heard.iter().any(|e| e.scope.is_some()), "the tenant's shard is no longer read: {heard:?}");
    assert!(reader.status().is_connected());
    let shard_keys: Vec<String> =
        redis::cmd("KEYS").arg(format!("{{{key}#*")).query_async(&mut admin).await.expect("keys");
    let _: () = redis::cmd("DEL").arg(&shard_keys).query_async(&mut admin).await.expect("del");
}

/// Every event up to and including `id` (gaps fail the test: none is expected here).
async fn heard_until(events: &mut mcp_fleet_bus::BusStream, id: &str) -> Vec<EventEnvelope> {
    let mut heard = Vec::new();
    loop {
        let event = next_event(events).await;
        if event.event_id == id {
            return heard;
        }
        heard.push(event);
    }
}
