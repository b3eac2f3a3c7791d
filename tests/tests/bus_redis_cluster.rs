//! The Redis bus on a Redis Cluster (three masters, two replicas each, private processes on
//! free ports: see `mcp_fleet_tests::faults::redis_cluster`): the shared suites, split into
//! shards and not, and the cluster's own faults — a master killed and failed over, a slot
//! migrated while events flow, one shard's stream deleted. For each fault, every event a node
//! accepted reaches every subscriber, or a gap reaches it after the event was sent: a delivery
//! or a gap, never silence.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use mcp_fleet_bus::testing::{self, KeyspaceSuiteOptions, SuiteOptions};
use mcp_fleet_bus::{BoxFuture, BusItem, BusStream, Change, EventKind, ServerEventBus};
use mcp_fleet_bus_redis::{RedisBus, RedisBusOptions};
use mcp_fleet_tests::faults::procs::TempDir;
use mcp_fleet_tests::faults::redis_cluster::{RedisCluster, key_slot};
use tokio::time::Instant;

const STREAM: &str = "fleet";
/// How long an accepted event (or the gap covering it) may take to arrive, failovers included.
const DELIVERY_WAIT: Duration = Duration::from_secs(30);

/// A node's bus on the cluster at `url`, with timeouts short enough to see recovery quickly.
async fn bus(url: &str, stream: &str, node: usize, shards: usize) -> Arc<dyn ServerEventBus> {
    let url = format!("{url}?stream={stream}&shards={shards}");
    let mut options = RedisBusOptions::from_url(&url, &format!("node-{node}")).expect("cluster url");
    options.publish_timeout = Duration::from_secs(1);
    options.block_timeout = Duration::from_millis(500);
    options.reconnect_min = Duration::from_millis(50);
    options.reconnect_max = Duration::from_millis(500);
    Arc::new(RedisBus::connect(options).await.expect("connect to the private cluster"))
}

fn nodes(url: &str, stream: &str, shards: usize) -> impl Fn(usize) -> BoxFuture<'static, Arc<dyn ServerEventBus>> {
    let (url, stream) = (url.to_owned(), stream.to_owned());
    move |i| {
        let (url, stream) = (url.clone(), stream.clone());
        Box::pin(async move { bus(&url, &stream, i, shards).await })
    }
}

#[tokio::test]
async fn passes_the_shared_suites_on_a_cluster() {
    let dir = TempDir::new("redis-cluster-suites");
    let cluster = RedisCluster::start(dir.path()).await;
    let url = cluster.url();
    testing::run_suite_with(nodes(&url, "sharded", 8), SuiteOptions::sharded()).await;
    testing::run_suite(nodes(&url, "single", 1)).await;
    testing::run_membership_suite(nodes(&url, "members", 8), Duration::from_millis(800)).await;
    let ttl = KeyspaceSuiteOptions { ttl: Duration::from_millis(300), expiry_slack: Duration::from_millis(100) };
    testing::run_keyspace_suite(nodes(&url, "keyspace", 8), ttl).await;
    // Eight shards spread over the three masters.
    let mut masters = BTreeSet::new();
    for i in 0..8 {
        masters.insert(cluster.master_of(&format!("{{sharded#{i}}}")).await);
    }
    assert_eq!(masters.len(), 3, "the shards' slots land on every master");
}

/// What one subscriber received, stamped on arrival by a task that always reads.
#[derive(Default)]
struct Heard {
    events: BTreeSet<String>,
    gaps: Vec<Instant>,
}

fn record(mut stream: BusStream) -> Arc<Mutex<Heard>> {
    let heard = Arc::new(Mutex::new(Heard::default()));
    let sink = heard.clone();
    tokio::spawn(async move {
        while let Some(item) = stream.next().await {
            let mut heard = sink.lock().unwrap_or_else(PoisonError::into_inner);
            match item {
                BusItem::Event(event) => _ = heard.events.insert(event.event_id),
                BusItem::Gap(_) => heard.gaps.push(Instant::now()),
            }
        }
    });
    heard
}

/// An event a node accepted, and when its (successful) publish was started.
struct Sent {
    id: String,
    at: Instant,
}

/// Publish change `i` through `bus`, retrying until it is accepted: even ones a fleet-wide list
/// change (shard 0), odd ones about a URI of their own (spread over every shard).
async fn publish_until_accepted(bus: &Arc<dyn ServerEventBus>, i: usize) -> Sent {
    let deadline = Instant::now() + DELIVERY_WAIT;
    loop {
        let at = Instant::now();
        let change = if i.is_multiple_of(2) {
            Change::list(EventKind::ToolsListChanged)
        } else {
            Change::resource(format!("test://r/{i}"))
        };
        match bus.publish(change).await {
            Ok(event) => return Sent { id: event.event_id, at },
            Err(err) => assert!(Instant::now() < deadline, "publishing kept failing: {err}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every subscriber heard every sent event, or a gap after it was sent; returns the gaps heard.
async fn assert_delivered_or_gapped(heard: &[Arc<Mutex<Heard>>], sent: &[Sent]) -> usize {
    let deadline = Instant::now() + DELIVERY_WAIT;
    loop {
        let missing: Vec<(usize, &str)> = heard
            .iter()
            .enumerate()
            .flat_map(|(i, h)| {
                let h = h.lock().unwrap_or_else(PoisonError::into_inner);
                let lacks = |s: &&Sent| !h.events.contains(&s.id) && !h.gaps.iter().any(|g| *g > s.at);
                sent.iter().filter(lacks).map(|s| (i, s.id.as_str())).collect::<Vec<_>>()
            })
            .collect();
        if missing.is_empty() {
            return heard.iter().map(|h| h.lock().unwrap_or_else(PoisonError::into_inner).gaps.len()).sum();
        }
        assert!(
            Instant::now() < deadline,
            "{} accepted events neither delivered nor gapped: {missing:?}",
            missing.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Three nodes on eight shards, each subscribed; `fault` runs between the 20th and the 21st
/// of 60 events published round-robin (half on shard 0, half spread over every shard).
async fn across(cluster: &mut RedisCluster, fault: impl AsyncFnOnce(&mut RedisCluster)) -> usize {
    let url = cluster.url();
    let buses = [bus(&url, STREAM, 0, 8).await, bus(&url, STREAM, 1, 8).await, bus(&url, STREAM, 2, 8).await];
    let mut heard = Vec::new();
    for bus in &buses {
        heard.push(record(bus.subscribe().await.expect("subscribe")));
    }
    let mut sent = Vec::new();
    for i in 0..20 {
        sent.push(publish_until_accepted(&buses[i % 3], i).await);
    }
    fault(cluster).await;
    for i in 20..60 {
        sent.push(publish_until_accepted(&buses[i % 3], i).await);
    }
    assert_delivered_or_gapped(&heard, &sent).await
}

/// The master holding shard 0 crashes; a replica takes over with another replication id: the
/// shard's new epoch is a gap on every node, and every later event is delivered.
#[tokio::test]
async fn a_master_failed_over_is_a_gap_or_a_delivery() {
    let dir = TempDir::new("redis-cluster-failover");
    let mut cluster = RedisCluster::start(dir.path()).await;
    let gaps = across(&mut cluster, async |cluster| {
        let killed = cluster.kill_master_of(&format!("{{{STREAM}#0}}")).await;
        cluster.restart(killed).await;
    })
    .await;
    assert!(gaps >= 3, "every node reported the failed-over shard's new epoch ({gaps} gaps)");
}

/// Shard 0's slot moves to another master while events flow: `MOVED` and `ASK` are followed,
/// and the receiving master (another replication id) starts a new epoch there: a gap.
#[tokio::test]
async fn a_slot_migrated_mid_traffic_is_a_gap_or_a_delivery() {
    let dir = TempDir::new("redis-cluster-migrate");
    let mut cluster = RedisCluster::start(dir.path()).await;
    let key = format!("{{{STREAM}#0}}");
    let before = cluster.master_of(&key).await;
    let gaps = across(&mut cluster, async |cluster| {
        let to = cluster.migrate_slot_of(&format!("{{{STREAM}#0}}")).await;
        assert_ne!(to, before);
    })
    .await;
    assert_ne!(cluster.master_of(&key).await, before, "slot {} moved", key_slot(&key));
    assert!(gaps >= 3, "every node reported the migrated shard's new epoch ({gaps} gaps)");
}

/// Shard 0's stream is deleted under the nodes, and nothing is published for a while: each
/// node's idle check finds the stream behind its cursor — history it cannot vouch for — and
/// reports a gap; the shard goes on with the next publish. (Had a publish come first, the new
/// stream would continue the versions and nothing would be missing.)
#[tokio::test]
async fn one_shards_stream_deleted_is_a_gap_or_a_delivery() {
    let dir = TempDir::new("redis-cluster-delete");
    let mut cluster = RedisCluster::start(dir.path()).await;
    let gaps = across(&mut cluster, async |cluster| {
        let key = format!("{{{STREAM}#0}}");
        let mut admin = mcp_fleet_tests::faults::procs::redis_connect(cluster.master_of(&key).await)
            .await
            .expect("admin connection");
        let deleted: i64 = redis::cmd("DEL").arg(&key).query_async(&mut admin).await.expect("del");
        assert_eq!(deleted, 1, "shard 0's stream existed");
        tokio::time::sleep(Duration::from_millis(1500)).await;
    })
    .await;
    assert!(gaps >= 3, "every node reported the deleted history ({gaps} gaps)");
}
