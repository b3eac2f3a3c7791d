//! The NATS backend against a real NATS server with JetStream (127.0.0.1:4222, or
//! `MCP_FLEET_NATS_URL`): the shared suite in both modes, the membership and keyspace suites,
//! delivery across forced reconnects, gaps from retention and reconnects, and a bus split into
//! shards (the shared suite; interest routing). Each test uses its own stream and subject
//! prefix.
//!
//! Without a reachable NATS each test prints `skipped: …` and passes, unless
//! `MCP_FLEET_REQUIRE_BROKERS=1`.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mcp_fleet_bus::shard::Routing;
use mcp_fleet_bus::testing::{self, SuiteOptions, WAIT, eventually, next_event, next_item};
use mcp_fleet_bus::{BoxFuture, BusItem, Change, EventEnvelope, EventKind, GapReason, ServerEventBus, Subject};
use mcp_fleet_bus_nats::{NatsBus, NatsBusOptions, NatsMode};

const TEST_TIMEOUT: Duration = Duration::from_secs(20);

fn nats_url() -> String {
    std::env::var("MCP_FLEET_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

/// A JetStream admin context, or `None` (after printing why) when NATS is down and not required.
async fn admin() -> Option<async_nats::jetstream::Context> {
    let url = nats_url();
    match tokio::time::timeout(Duration::from_secs(2), async_nats::connect(url.as_str())).await {
        Ok(Ok(client)) => Some(async_nats::jetstream::new(client)),
        _ => {
            testing::skip_unreachable("nats", &url);
            None
        }
    }
}

/// Options for one test: a stream and prefix no other test uses.
fn options(test: &str, node: &str, mode: NatsMode) -> NatsBusOptions {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let unique = format!("{test}_{}_{nanos}", std::process::id());
    let mut options = NatsBusOptions::new(&nats_url(), node);
    options.mode = mode;
    options.stream_name = format!("MCPFT_{unique}");
    options.subject_prefix = format!("mcpft.{unique}");
    options.max_age = Duration::from_secs(300);
    options
}

fn as_node(options: &NatsBusOptions, node: &str) -> NatsBusOptions {
    let mut options = options.clone();
    options.node_id = node.to_owned();
    options
}

/// `make_node` for the shared suites: node `i` connects with `base` as `node-<i>`.
fn nodes(base: &NatsBusOptions) -> impl Fn(usize) -> BoxFuture<'static, Arc<dyn ServerEventBus>> + '_ {
    move |i| {
        let options = as_node(base, &format!("node-{i}"));
        Box::pin(async move { Arc::new(NatsBus::connect(options).await.expect("connect")) as Arc<dyn ServerEventBus> })
    }
}

async fn cleanup(admin: &async_nats::jetstream::Context, options: &NatsBusOptions) {
    let _ = admin.delete_stream(&options.stream_name).await;
}

async fn run_suite_in(mode: NatsMode, suite_options: SuiteOptions) {
    let Some(admin) = admin().await else { return };
    let base = options("suite", "node", mode);
    let suite = testing::run_suite_with(nodes(&base), suite_options);
    tokio::time::timeout(TEST_TIMEOUT, suite).await.expect("suite finished in time");
    cleanup(&admin, &base).await;
}

#[tokio::test]
async fn jetstream_passes_the_shared_bus_suite() {
    run_suite_in(NatsMode::JetStream, SuiteOptions::default()).await;
}

#[tokio::test]
async fn core_passes_the_shared_bus_suite_with_per_publisher_versions() {
    run_suite_in(NatsMode::Core, SuiteOptions { versions_ordered_across_publishers: false, positioned: true }).await;
}

/// Delete every shard's stream of `options`.
async fn cleanup_shards(admin: &async_nats::jetstream::Context, options: &NatsBusOptions) {
    for i in 0..options.shards {
        cleanup(admin, &options.shard(i)).await;
    }
}

#[tokio::test]
async fn jetstream_passes_the_shared_bus_suite_split_into_shards() {
    let Some(admin) = admin().await else { return };
    let mut base = options("sharded", "node", NatsMode::JetStream);
    base.shards = 4;
    let suite = testing::run_suite_with(nodes(&base), SuiteOptions::sharded());
    tokio::time::timeout(TEST_TIMEOUT, suite).await.expect("suite finished in time");
    cleanup_shards(&admin, &base).await;
}

/// Interest routing: a node reads shard 0 and the shards its streams follow, from the moment
/// its gain resolves; a shard nobody follows any more stops being read (its consumer is gone).
#[tokio::test]
async fn a_routed_node_reads_only_the_shards_it_follows() {
    let Some(admin) = admin().await else { return };
    let mut base = options("routing", "writer", NatsMode::JetStream);
    base.shards = 8;
    let writer = NatsBus::connect(base.clone()).await.expect("connect");
    let mut routed = as_node(&base, "reader");
    routed.routing = Routing::Interest;
    let reader = NatsBus::connect(routed).await.expect("connect");
    let mut events = reader.subscribe().await.expect("subscribe");
    let fleet_wide = || Change::list(EventKind::ToolsListChanged);
    let scoped = |t: usize| Change::resource("test://x").in_scope(format!("tenant-{t}"));
    let shard_of = |change: Change| mcp_fleet_bus::shard::shard_of(&EventEnvelope::new(change, "w"), 8);
    let tenant = (0..).find(|t| shard_of(scoped(*t)) != 0).expect("some tenant hashes outside shard 0");
    let subject = [Subject::Scope(format!("tenant-{tenant}"))];
    let consumers = |shard: usize| {
        let (admin, name) = (admin.clone(), base.shard(shard).stream_name);
        async move { admin.get_stream(name).await.expect("stream").info().await.expect("info").state.consumer_count }
    };

    // Before any gain: the fleet-wide event arrives, the tenant's does not.
    writer.publish(scoped(tenant)).await.expect("publish");
    let marker = writer.publish(fleet_wide()).await.expect("publish");
    let heard = heard_until(&mut events, &marker.event_id).await;
    assert!(!heard.iter().any(|e| e.scope.is_some()), "nothing scoped on shard 0: {heard:?}");
    assert_eq!(consumers(shard_of(scoped(tenant))).await, 0, "nobody reads the tenant's shard yet");

    reader.gain(&subject).await.expect("gain");
    let ours = writer.publish(scoped(tenant)).await.expect("publish");
    let mut sent = HashSet::new();
    for t in 0..16 {
        sent.insert(writer.publish(scoped(t)).await.expect("publish").event_id);
    }
    let marker = writer.publish(scoped(tenant)).await.expect("publish");
    let heard = heard_until(&mut events, &marker.event_id).await;
    assert_eq!(heard.first().map(|e| e.event_id.as_str()), Some(ours.event_id.as_str()), "heard from the gain on");
    let scopes: HashSet<_> = heard.iter().filter_map(|e| e.scope.clone()).collect();
    assert!(scopes.len() < 16, "a node following one tenant reads 2 of 8 shards, not all: {scopes:?}");
    assert!(heard.iter().all(|e| e.version == 0), "a sharded bus's events are unpositioned");

    reader.lose(&subject);
    let tenant_shard = shard_of(scoped(tenant));
    eventually("the tenant's consumer is deleted", WAIT, async || consumers(tenant_shard).await == 0).await;
    writer.publish(scoped(tenant)).await.expect("publish");
    let marker = writer.publish(fleet_wide()).await.expect("publish");
    let heard = heard_until(&mut events, &marker.event_id).await;
    assert!(!heard.iter().any(|e| e.scope.is_some()), "the tenant's shard is no longer read: {heard:?}");
    assert!(reader.status().is_connected());
    assert_eq!(reader.counters().gaps.load(Ordering::Relaxed), 0);
    cleanup_shards(&admin, &base).await;
}

/// One shard's stream deleted under a routed node: the reader of that shard reports the gap
/// (and recreates the stream), the fleet-wide shard reads on without one, and the shard's
/// events flow again.
#[tokio::test]
async fn a_deleted_shard_is_a_gap_of_that_shard_only() {
    let Some(admin) = admin().await else { return };
    let mut base = options("shard_deleted", "node", NatsMode::JetStream);
    (base.shards, base.routing, base.health_interval) = (4, Routing::Interest, Duration::from_millis(200));
    let node = NatsBus::connect(base.clone()).await.expect("connect");
    let mut events = node.subscribe().await.expect("subscribe");
    let scoped = |t: usize| Change::list(EventKind::ToolsListChanged).in_scope(format!("tenant-{t}"));
    let shard_of = |change: Change| mcp_fleet_bus::shard::shard_of(&EventEnvelope::new(change, "n"), 4);
    let tenant = (0..).find(|t| shard_of(scoped(*t)) != 0).expect("some tenant hashes outside shard 0");
    node.gain(&[Subject::Scope(format!("tenant-{tenant}"))]).await.expect("gain");
    let first = node.publish(scoped(tenant)).await.expect("publish");
    assert_eq!(next_event(&mut events).await.event_id, first.event_id);

    admin.delete_stream(&base.shard(shard_of(scoped(tenant))).stream_name).await.expect("delete the shard");
    assert_eq!(next_item(&mut events).await, BusItem::Gap(GapReason::EpochChanged));
    let fleet_wide = node.publish(Change::list(EventKind::ToolsListChanged)).await.expect("publish");
    assert_eq!(next_event(&mut events).await.event_id, fleet_wide.event_id);
    let again = node.publish(scoped(tenant)).await.expect("publish to the recreated shard");
    assert_eq!(next_event(&mut events).await.event_id, again.event_id);
    assert_eq!(node.counters().gaps.load(Ordering::Relaxed), 1, "one gap: the deleted shard's");
    cleanup_shards(&admin, &base).await;
}

/// Every event up to and including `id` (a gap fails the test: none is expected here).
async fn heard_until(events: &mut mcp_fleet_bus::BusStream, id: &str) -> Vec<EventEnvelope> {
    let mut heard = Vec::new();
    loop {
        let event = next_event(events).await;
        heard.push(event.clone());
        if event.event_id == id {
            return heard;
        }
    }
}

async fn membership_suite_in(mode: NatsMode) {
    let Some(admin) = admin().await else { return };
    let base = options("members", "node", mode);
    let suite = testing::run_membership_suite(nodes(&base), Duration::from_millis(1000));
    tokio::time::timeout(TEST_TIMEOUT, suite).await.expect("suite finished in time");
    let _ = admin.delete_key_value(format!("{}_MEMBERS", base.stream_name)).await;
    cleanup(&admin, &base).await;
}

#[tokio::test]
async fn jetstream_passes_the_membership_suite() {
    membership_suite_in(NatsMode::JetStream).await;
}

#[tokio::test]
async fn core_passes_the_membership_suite() {
    membership_suite_in(NatsMode::Core).await;
}

/// Delete the buckets of the keyspaces `names` of `options`'s bus.
async fn delete_keyspaces(admin: &async_nats::jetstream::Context, options: &NatsBusOptions, names: &[&str]) {
    for name in names {
        let _ = admin.delete_key_value(format!("{}_KS_{name}", options.stream_name)).await;
    }
}

#[tokio::test]
async fn jetstream_passes_the_keyspace_suite() {
    let Some(admin) = admin().await else { return };
    let base = options("keyspace", "node", NatsMode::JetStream);
    // The server ages messages out on a timer: expiry is late by up to about a second.
    let suite = testing::run_keyspace_suite(
        nodes(&base),
        testing::KeyspaceSuiteOptions { ttl: Duration::from_secs(1), expiry_slack: Duration::from_millis(1500) },
    );
    tokio::time::timeout(TEST_TIMEOUT, suite).await.expect("suite finished in time");
    delete_keyspaces(&admin, &base, &testing::KEYSPACE_SUITE_NAMES).await;
    cleanup(&admin, &base).await;
}

#[tokio::test]
async fn a_keyspace_bucket_keeps_the_longest_ttl_any_node_opened_it_with() {
    let Some(admin) = admin().await else { return };
    let base = options("keyspace_ttl", "node", NatsMode::JetStream);
    let bus = NatsBus::connect(base.clone()).await.expect("connect");
    let first = bus.keyspace("sessions", Duration::from_secs(60)).await.expect("open");
    let revision = first.put("k", b"v".to_vec()).await.expect("put");
    let bucket = format!("KV_{}_KS_sessions", base.stream_name);
    let max_age = async |admin: &async_nats::jetstream::Context| {
        admin.get_stream(&bucket).await.expect("the bucket's stream").cached_info().config.max_age
    };
    assert_eq!(max_age(&admin).await, Duration::from_secs(60));
    let shorter = bus.keyspace("sessions", Duration::from_secs(30)).await.expect("open with a shorter ttl");
    assert_eq!(max_age(&admin).await, Duration::from_secs(60), "a shorter TTL leaves the bucket as it is");
    assert_eq!(shorter.get("k").await.expect("get").map(|r| r.revision), Some(revision), "records are kept");
    bus.keyspace("sessions", Duration::from_secs(90)).await.expect("open with a longer ttl");
    assert_eq!(max_age(&admin).await, Duration::from_secs(90), "a longer one grows it");
    delete_keyspaces(&admin, &base, &["sessions"]).await;
    cleanup(&admin, &base).await;
}

#[tokio::test]
async fn core_mode_has_no_keyspaces() {
    let Some(_admin) = admin().await else { return };
    let bus = NatsBus::connect(options("keyspace_core", "node", NatsMode::Core)).await.expect("connect");
    let refused = bus.keyspace("sessions", Duration::from_secs(60)).await.err();
    assert!(matches!(&refused, Some(mcp_fleet_bus::BusError::Config(msg)) if msg.contains("JetStream")), "{refused:?}");
}

#[tokio::test]
async fn jetstream_delivers_everything_across_forced_reconnects() {
    let Some(admin) = admin().await else { return };
    let base = options("reconnect", "consumer", NatsMode::JetStream);
    let consumer = NatsBus::connect(base.clone()).await.expect("connect");
    let publisher = NatsBus::connect(as_node(&base, "publisher")).await.expect("connect");
    let mut stream = consumer.subscribe().await.expect("subscribe");

    let mut sent = HashSet::new();
    for i in 0..60 {
        if i % 20 == 10 {
            consumer.client().force_reconnect().await.expect("force reconnect");
        }
        sent.insert(publisher.publish(Change::resource(format!("test://r/{i}"))).await.expect("publish").event_id);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    let mut seen = HashSet::new();
    let deadline = Instant::now() + TEST_TIMEOUT;
    while !sent.is_subset(&seen) {
        assert!(Instant::now() < deadline, "missing {} events", sent.difference(&seen).count());
        seen.insert(next_event(&mut stream).await.event_id);
    }
    eventually("the consumer reconnected twice", WAIT, async || {
        consumer.counters().reconnects.load(Ordering::Relaxed) >= 2
    })
    .await;
    assert_eq!(consumer.counters().gaps.load(Ordering::Relaxed), 0);
    assert!(consumer.status().is_connected());
    cleanup(&admin, &base).await;
}

#[tokio::test]
async fn jetstream_reports_history_discarded_by_retention() {
    let Some(admin) = admin().await else { return };
    let mut base = options("retention", "consumer", NatsMode::JetStream);
    base.max_messages = 5;
    let bus = NatsBus::connect(base.clone()).await.expect("connect");
    let mut epoch = 0;
    for i in 0..20 {
        epoch = bus.publish(Change::resource(format!("test://old/{i}"))).await.expect("publish").epoch;
    }
    // Resume as a node that handled up to version 3: 4..=15 were discarded, 16..=20 remain.
    let mut stream = bus.subscribe_after(epoch, 3).await.expect("subscribe");
    assert_eq!(next_item(&mut stream).await, BusItem::Gap(GapReason::HistoryTrimmed));
    for expected in 16..=20 {
        assert_eq!(next_event(&mut stream).await.version, expected);
    }
    let live = bus.publish(Change::list(EventKind::ToolsListChanged)).await.expect("publish");
    assert_eq!(next_event(&mut stream).await.event_id, live.event_id);
    assert_eq!(bus.counters().gaps.load(Ordering::Relaxed), 1);
    cleanup(&admin, &base).await;
}

#[tokio::test]
async fn a_deleted_stream_is_recreated_by_the_next_publish_and_consumers_report_the_new_epoch() {
    let Some(admin) = admin().await else { return };
    let base = options("deleted", "consumer", NatsMode::JetStream);
    let consumer = NatsBus::connect(base.clone()).await.expect("connect");
    let publisher = NatsBus::connect(as_node(&base, "publisher")).await.expect("connect");
    let mut stream = consumer.subscribe().await.expect("subscribe");
    let before = publisher.publish(Change::list(EventKind::ToolsListChanged)).await.expect("publish");
    assert_eq!(next_event(&mut stream).await.event_id, before.event_id);

    admin.delete_stream(&base.stream_name).await.expect("delete stream");
    // The publisher finds no stream, recreates it and publishes: no error reaches the caller.
    let after = publisher.publish(Change::list(EventKind::PromptsListChanged)).await.expect("publish recovers");
    assert_ne!(after.epoch, before.epoch, "a recreated stream is a new epoch");
    assert_eq!(next_item(&mut stream).await, BusItem::Gap(GapReason::EpochChanged));
    let got = next_event(&mut stream).await;
    assert_eq!((got.event_id, got.epoch, got.version), (after.event_id, after.epoch, after.version));
    assert!(consumer.status().is_connected());
    cleanup(&admin, &base).await;
}

#[tokio::test]
async fn a_deleted_stream_is_recreated_by_an_idle_consumer_which_reports_the_gap() {
    let Some(admin) = admin().await else { return };
    let mut base = options("deleted_idle", "consumer", NatsMode::JetStream);
    base.health_interval = Duration::from_millis(200);
    let consumer = NatsBus::connect(base.clone()).await.expect("connect");
    let mut stream = consumer.subscribe().await.expect("subscribe");
    let before = consumer.publish(Change::list(EventKind::ToolsListChanged)).await.expect("publish");
    next_event(&mut stream).await;
    admin.delete_stream(&base.stream_name).await.expect("delete stream");
    // Nobody publishes; the consumer notices, recreates the stream and reports the gap.
    assert_eq!(next_item(&mut stream).await, BusItem::Gap(GapReason::EpochChanged));
    let info = admin.get_stream(&base.stream_name).await.expect("the stream exists again");
    assert_eq!(info.cached_info().state.messages, 0);
    let after = consumer.publish(Change::list(EventKind::ToolsListChanged)).await.expect("publish");
    assert_ne!(after.epoch, before.epoch, "the publisher learnt the new epoch");
    assert_eq!(next_event(&mut stream).await.event_id, after.event_id);
    // The consumer's gap covered the old stream: the publisher, whose last ack was in it, does
    // not also count a rollback of the new one (which every consumer would report again).
    let quiet = tokio::time::timeout(base.health_interval * 5, futures_util::StreamExt::next(&mut stream)).await;
    assert!(quiet.is_err(), "nothing more after the event, got {:?}", quiet.ok().flatten());
    cleanup(&admin, &base).await;
}

#[tokio::test]
async fn resuming_after_an_epoch_that_is_gone_is_a_gap_then_the_whole_new_stream() {
    let Some(admin) = admin().await else { return };
    let base = options("old_epoch", "consumer", NatsMode::JetStream);
    let bus = NatsBus::connect(base.clone()).await.expect("connect");
    let first = bus.publish(Change::list(EventKind::ToolsListChanged)).await.expect("publish");
    let mut stream = bus.subscribe_after(first.epoch + 1, 1).await.expect("subscribe");
    assert_eq!(next_item(&mut stream).await, BusItem::Gap(GapReason::EpochChanged));
    assert_eq!(next_event(&mut stream).await.event_id, first.event_id);
    cleanup(&admin, &base).await;
}

#[tokio::test]
async fn core_reports_a_gap_after_a_reconnect() {
    let Some(_admin) = admin().await else { return };
    let base = options("core_reconnect", "consumer", NatsMode::Core);
    let bus = NatsBus::connect(base).await.expect("connect");
    let mut stream = bus.subscribe().await.expect("subscribe");
    bus.client().force_reconnect().await.expect("force reconnect");
    assert_eq!(next_item(&mut stream).await, BusItem::Gap(GapReason::Reconnected));
    eventually("the bus is connected", WAIT, async || bus.status().is_connected()).await;
    let sent = bus.publish(Change::list(EventKind::ToolsListChanged)).await.expect("publish");
    assert_eq!(next_event(&mut stream).await.event_id, sent.event_id);
}

#[tokio::test]
async fn an_unreachable_nats_fails_fast() {
    let mut options = NatsBusOptions::new("nats://127.0.0.1:1", "n");
    options.connect_timeout = Duration::from_millis(500);
    let started = Instant::now();
    let result = NatsBus::connect(options).await;
    assert!(matches!(result, Err(mcp_fleet_bus::BusError::Unavailable(_))), "{:?}", result.err());
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn jetstream_counts_and_skips_an_undecodable_message() {
    let Some(admin) = admin().await else { return };
    let options = options("garbage", "consumer", NatsMode::JetStream);
    let consumer = NatsBus::connect(options.clone()).await.expect("connect");
    let mut stream = consumer.subscribe().await.expect("subscribe");
    // A foreign message on one of the bus's subjects: it takes a stream sequence (so it is no
    // gap), but it is not an envelope.
    let subject = format!("{}._global.tools", options.subject_prefix);
    admin.publish(subject, "\u{1}not json".into()).await.expect("publish").await.expect("ack");
    let good = consumer.publish(Change::list(EventKind::ToolsListChanged)).await.expect("publish");

    assert_eq!(next_event(&mut stream).await.event_id, good.event_id);
    assert_eq!(consumer.counters().undecodable.load(Ordering::Relaxed), 1);
    assert_eq!(consumer.counters().gaps.load(Ordering::Relaxed), 0);
    cleanup(&admin, &options).await;
}
