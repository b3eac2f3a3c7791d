//! Test support, enabled by the `testing` feature: one behaviour suite for every
//! [`ServerEventBus`] backend (memory, real Redis, real NATS), so all of them keep the same
//! contract; [`WrappedBus`], which injects faults into a real backend; and [`eventually`], the
//! one bounded wait every test of the workspace uses (the lowest crate they all depend on).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;

use crate::bus::{BusItem, BusStream, ServerEventBus};
use crate::envelope::{Change, EventKind};

/// Environment variable that turns a skipped broker test into a failure (CI sets it).
pub const REQUIRE_BROKERS: &str = "MCP_FLEET_REQUIRE_BROKERS";

/// The one policy for a broker a test cannot reach: fail when `MCP_FLEET_REQUIRE_BROKERS=1`,
/// else print `skipped: <name> not reachable at <url>` (the caller then returns).
pub fn skip_unreachable(name: &str, url: &str) {
    let why = format!("{name} not reachable at {url}");
    assert!(std::env::var(REQUIRE_BROKERS).as_deref() != Ok("1"), "{why} ({REQUIRE_BROKERS}=1)");
    println!("skipped: {why}");
}

/// How long a suite step waits for an event before failing.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(10);

/// What a backend promises beyond the core of the contract, so a backend with a documented
/// weaker mode (NATS core) runs the same suite without weakening it for the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SuiteOptions {
    /// Every publisher shares one epoch and versions increase in publish order across
    /// *different* publishers. `false` only for modes whose epoch and versions are per
    /// publisher (NATS core).
    pub versions_ordered_across_publishers: bool,
    /// Events carry their `(epoch, version)` position and arrive in publish order whatever
    /// they are about. `false` only for a sharded bus (Redis with `shards > 1`): its events are
    /// unpositioned (version 0) and keep their order per scope or URI only; the suite then
    /// checks each event arrives, not where.
    pub positioned: bool,
}

impl Default for SuiteOptions {
    /// The full contract.
    fn default() -> Self {
        SuiteOptions { versions_ordered_across_publishers: true, positioned: true }
    }
}

impl SuiteOptions {
    /// The contract of a sharded bus (see [`SuiteOptions::positioned`]).
    pub fn sharded() -> Self {
        SuiteOptions { versions_ordered_across_publishers: false, positioned: false }
    }
}

/// Run the shared suite. `make_node(i)` returns a bus handle for node `i`; all handles must
/// share one broker namespace that no other test uses.
pub async fn run_suite<F, Fut>(make_node: F)
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Arc<dyn ServerEventBus>>,
{
    run_suite_with(make_node, SuiteOptions::default()).await
}

/// [`run_suite`] for a backend mode that documents a weaker contract in `options`; every
/// other assertion is the same.
pub async fn run_suite_with<F, Fut>(make_node: F, options: SuiteOptions)
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Arc<dyn ServerEventBus>>,
{
    let nodes = [make_node(0).await, make_node(1).await, make_node(2).await];
    let mut streams = Vec::new();
    for node in &nodes {
        streams.push(node.subscribe().await.expect("subscribe"));
    }
    for node in &nodes {
        assert!(node.status().is_connected(), "{} reports {:?}", node.backend(), node.status());
    }

    // Publish on node 0: every node, including the publisher, receives it with the same id.
    let published = nodes[0].publish(Change::list(EventKind::ToolsListChanged)).await.expect("publish");
    assert_eq!(published.origin, nodes[0].node_id());
    assert_ne!(published.epoch, 0, "the backend assigns an epoch");
    assert!(published.epoch < crate::envelope::EPOCH_BOUND);
    for stream in &mut streams {
        let got = next_event(stream).await;
        assert_eq!(got.event_id, published.event_id);
        assert_eq!((got.epoch, got.version), (published.epoch, published.version));
        assert_eq!(got.kind, EventKind::ToolsListChanged);
    }
    // A backend that tells its position names one at or past what was published before asking.
    if let Some((epoch, version)) = nodes[1].position().await.expect("position") {
        assert_eq!(epoch, published.epoch, "{}: the position is in the current epoch", nodes[1].backend());
        assert!(version >= published.version, "{}: {version} is before {}", nodes[1].backend(), published.version);
    }

    if options.positioned {
        check_positions(&nodes, &mut streams, options).await;
    } else {
        check_unpositioned(&nodes, &mut streams).await;
    }
}

/// Scopes and URIs survive the trip; versions increase in publish order; a burst arrives
/// complete and in order.
async fn check_positions(nodes: &[Arc<dyn ServerEventBus>; 3], streams: &mut [BusStream], options: SuiteOptions) {
    let a = nodes[1].publish(Change::resource("test://a").in_scope("tenant-a")).await.expect("publish");
    let b = nodes[2].publish(Change::list(EventKind::PromptsListChanged)).await.expect("publish");
    if options.versions_ordered_across_publishers {
        assert_eq!(a.epoch, b.epoch, "one epoch for every publisher");
        assert!(b.version > a.version, "versions must be monotonic: {} then {}", a.version, b.version);
    }
    for stream in streams.iter_mut() {
        let first = next_event(stream).await;
        assert_eq!((first.scope.as_deref(), first.uri.as_deref()), (Some("tenant-a"), Some("test://a")));
        let second = next_event(stream).await;
        assert_eq!(second.kind, EventKind::PromptsListChanged);
        if options.versions_ordered_across_publishers {
            assert!(second.version > first.version);
        }
    }

    // A burst arrives complete and in order.
    let mut ids = Vec::new();
    let mut last_version_by_node = [0u64; 3];
    for i in 0..50 {
        let sent = nodes[i % 3].publish(Change::resource(format!("test://burst/{i}"))).await.expect("publish");
        // Every mode keeps versions increasing per publisher.
        assert!(sent.version > last_version_by_node[i % 3], "versions must increase per publisher");
        last_version_by_node[i % 3] = sent.version;
        ids.push(sent.event_id);
    }
    for stream in streams.iter_mut() {
        for id in &ids {
            assert_eq!(&next_event(stream).await.event_id, id);
        }
    }
}

/// A sharded bus: scopes and URIs survive the trip, every event of a burst over many URIs
/// arrives exactly once per node (in any order across URIs), and one scope's events in order.
async fn check_unpositioned(nodes: &[Arc<dyn ServerEventBus>; 3], streams: &mut [BusStream]) {
    let mut ids = std::collections::BTreeSet::new();
    let mut scoped = Vec::new();
    for i in 0..50 {
        let sent = nodes[i % 3].publish(Change::resource(format!("test://burst/{i}"))).await.expect("publish");
        assert_eq!(sent.version, 0, "a sharded bus's events are unpositioned");
        ids.insert(sent.event_id);
        let change = Change::resource(format!("test://t/{i}")).in_scope("tenant-a");
        scoped.push(nodes[i % 3].publish(change).await.expect("publish").event_id);
    }
    for stream in streams.iter_mut() {
        let (mut seen, mut seen_scoped) = (std::collections::BTreeSet::new(), Vec::new());
        while seen.len() + seen_scoped.len() < ids.len() + scoped.len() {
            let got = next_event(stream).await;
            if got.scope.as_deref() == Some("tenant-a") {
                seen_scoped.push(got.event_id);
            } else {
                assert!(seen.insert(got.event_id.clone()), "{} arrived twice", got.event_id);
            }
        }
        assert_eq!(seen, ids, "every unscoped event arrives");
        assert_eq!(seen_scoped, scoped, "one scope's events arrive in publish order");
    }
    check_occurrences_positioned(nodes, streams).await;
}

/// On a sharded bus too, occurrences of the events extension (all on the first shard) carry
/// that shard's position, the same on every node, after the one it names before them.
async fn check_occurrences_positioned(nodes: &[Arc<dyn ServerEventBus>; 3], streams: &mut [BusStream]) {
    let before = nodes[1].occurrence_position().await.expect("position").expect("occurrences are positioned");
    let mut sent = Vec::new();
    for i in 0..6 {
        let event = crate::EventEnvelope::occurrence(&format!("occ-{i}"), "{}".into(), Some("tenant-b".into()), "n");
        let published = nodes[i % 3].publish_event(event).await.expect("publish");
        assert_ne!(published.version, 0, "an occurrence is positioned");
        sent.push((published.event_id, published.epoch, published.version));
    }
    assert!(sent.windows(2).all(|w| w[0].2 < w[1].2) && sent[0].1 == before.0 && sent[0].2 > before.1);
    for stream in streams.iter_mut() {
        let mut got = Vec::new();
        while got.len() < sent.len() {
            let e = next_event(stream).await;
            if e.kind == EventKind::Occurred {
                got.push((e.event_id, e.epoch, e.version));
            }
        }
        assert_eq!(got, sent, "every node hears them at the positions they were published at");
    }
}

/// The membership part of the contract, for every backend: each node sees every live member
/// with its latest payload, a leave removes a member at once, and a member that stops
/// announcing expires after the TTL (`ttl` should be short, e.g. 1–2 s: the suite waits for it).
pub async fn run_membership_suite<F, Fut>(make_node: F, ttl: Duration)
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Arc<dyn ServerEventBus>>,
{
    let nodes = [make_node(0).await, make_node(1).await, make_node(2).await];
    for (i, node) in nodes.iter().enumerate() {
        node.announce(format!("first-{i}"), ttl).await.expect("announce");
    }
    let payloads = ["first-0", "second-1", "first-2"];
    let mut expected: Vec<(String, String)> =
        nodes.iter().zip(payloads).map(|(n, p)| (n.node_id().to_owned(), p.to_owned())).collect();
    expected.sort();
    // Announcements may travel asynchronously (a watched bucket, heartbeats on a subject):
    // keep announcing, as the heartbeat does, until every node sees the latest of each.
    let agreed = Awaiting::new(format!("every node sees {expected:?}"));
    eventually(&agreed, STEP_TIMEOUT, async || {
        for (node, payload) in nodes.iter().zip(payloads) {
            node.announce(payload.to_owned(), ttl).await.expect("announce again");
        }
        for node in &nodes {
            let mut seen: Vec<(String, String)> =
                node.members().await.expect("members").into_iter().map(|m| (m.node_id, m.payload)).collect();
            seen.sort();
            if seen != expected {
                agreed.saw(format_args!("{} sees {seen:?}", node.backend()));
                return false;
            }
        }
        true
    })
    .await;
    nodes[2].leave().await.expect("leave");
    let left = nodes[2].node_id().to_owned();
    // A leave must not just be waited out: it shows well before the TTL would expire it.
    eventually("a leave is seen well before the TTL", ttl / 2, async || {
        let members = nodes[0].members().await.expect("members");
        assert!(members.iter().all(|m| m.expires_in <= ttl));
        members.iter().all(|m| m.node_id != left)
    })
    .await;
    // Node 0 keeps announcing; node 1 goes silent and must expire.
    let expired = Awaiting::new("the silent member expires");
    eventually(&expired, ttl * 3 + STEP_TIMEOUT, async || {
        nodes[0].announce("alive".into(), ttl).await.expect("heartbeat");
        let ids: Vec<String> = nodes[0].members().await.expect("members").into_iter().map(|m| m.node_id).collect();
        expired.saw(&ids);
        ids == [nodes[0].node_id().to_owned()]
    })
    .await;
    nodes[0].leave().await.expect("leave");
}

/// The keyspace names [`run_keyspace_suite`] opens (for a test's cleanup).
pub const KEYSPACE_SUITE_NAMES: [&str; 4] = ["suite", "suite-other", "suite-expiry", "suite-ttls"];

/// How a backend expires keys, for [`run_keyspace_suite`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyspaceSuiteOptions {
    /// The TTL of the keyspace whose expiry is tested: short, as the suite waits for it, but
    /// not below the backend's granularity (memory and Redis: 300 ms; NATS JetStream: 1 s).
    pub ttl: Duration,
    /// How late past its TTL a key may still be read (the backend's granularity).
    pub expiry_slack: Duration,
}

/// The [`Keyspace`](crate::Keyspace) contract, for every backend: records, create-if-absent,
/// compare-and-set on revisions, delete, counters (also under concurrent increments from two
/// nodes), records shared between nodes, expiry and its renewal by every kind of write, and
/// invalid keys and names. `make_node(i)` returns a bus handle for node `i`; both handles must
/// share one broker namespace that no other test uses. The suite opens the keyspaces of
/// [`KEYSPACE_SUITE_NAMES`].
pub async fn run_keyspace_suite<F, Fut>(make_node: F, options: KeyspaceSuiteOptions)
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Arc<dyn ServerEventBus>>,
{
    let nodes = [make_node(0).await, make_node(1).await];
    let long = Duration::from_secs(60);
    let [name, other_name, expiry_name, ttls_name] = KEYSPACE_SUITE_NAMES;
    let a = nodes[0].keyspace(name, long).await.expect("open a keyspace");
    let b = nodes[1].keyspace(name, long).await.expect("open it on another node");
    assert_eq!(a.ttl(), long);

    keyspace_records(&*a, &*b).await;
    keyspace_counters(&a, &b).await;
    keyspace_slots(&*a, &*b).await;

    let other = nodes[0].keyspace(other_name, long).await.expect("open another keyspace");
    assert_eq!(other.get("k").await.expect("get"), None, "keyspaces do not share records");
    other.put("k", b"elsewhere".to_vec()).await.expect("put");
    assert_eq!(b.get("k").await.expect("get").map(|r| r.value), Some(b"again".to_vec()));

    for bad in ["", "a b", "a*", "a:b", ".a", "a.", "a..b", "{a}"] {
        assert_config(a.get(bad).await, bad);
        assert_config(a.create(bad, Vec::new()).await, bad);
        assert_config(a.put(bad, Vec::new()).await, bad);
        assert_config(a.compare_and_set(bad, 1, Vec::new()).await, bad);
        assert_config(a.delete(bad).await, bad);
        assert_config(a.increment(bad, 1).await, bad);
    }
    assert_config(a.get(&"k".repeat(crate::keyspace::MAX_KEY_LEN + 1)).await, "a long key");
    for bad in ["", "a.b", "a b", "a:b", "a*"] {
        assert_config(nodes[0].keyspace(bad, long).await, bad);
    }
    assert_config(nodes[0].keyspace(name, Duration::ZERO).await, "a zero TTL");

    keyspace_expiry(&nodes, expiry_name, options).await;
    keyspace_slot_expiry(&nodes, expiry_name, options).await;
    keyspace_ttl_per_writer(&nodes, ttls_name, options).await;
}

/// Each key lives by the TTL of the handle that wrote it last: a node opening the keyspace
/// with a shorter TTL (a rolling deploy that shortens it) neither shortens the keys the others
/// write nor lengthens its own.
async fn keyspace_ttl_per_writer(nodes: &[Arc<dyn ServerEventBus>; 2], name: &str, options: KeyspaceSuiteOptions) {
    let KeyspaceSuiteOptions { ttl, expiry_slack: slack } = options;
    let long = nodes[0].keyspace(name, Duration::from_secs(60)).await.expect("open with a long TTL");
    let short = nodes[1].keyspace(name, ttl).await.expect("open it with a short one on another node");
    long.put("long", b"kept".to_vec()).await.expect("put");
    short.put("short", b"brief".to_vec()).await.expect("put");
    let counted = long.increment("count", 1).await.expect("increment");
    assert_eq!(counted, 1);
    tokio::time::sleep(ttl + slack + Duration::from_millis(50)).await;
    for reader in [&long, &short] {
        assert_eq!(reader.get("short").await.expect("get"), None, "the short handle's key expired");
        let kept = reader.get("long").await.expect("get").map(|r| r.value);
        assert_eq!(kept, Some(b"kept".to_vec()), "the long handle's key outlives the short TTL");
    }
    assert_eq!(short.increment("count", 1).await.expect("increment"), 2, "a long-lived counter counts on");
    assert!(short.create("short", Vec::new()).await.expect("create").is_some(), "an expired key is created anew");
    for key in ["long", "short", "count"] {
        long.delete(key).await.expect("delete");
    }
}

/// Slot sets: taken up to the limit, renewed whatever the limit, released, apart from records
/// and from other sets; what is refused.
async fn keyspace_slots(a: &dyn crate::Keyspace, b: &dyn crate::Keyspace) {
    let ttl = Duration::from_secs(30);
    assert!(a.hold_slot("q", "m1", ttl, 1).await.expect("hold"), "a free slot is taken");
    assert!(!b.hold_slot("q", "m2", ttl, 1).await.expect("hold"), "the set is full");
    assert!(b.hold_slot("q", "m1", ttl, 1).await.expect("hold"), "a held slot is renewed");
    assert!(b.hold_slot("q", "m1", ttl, 0).await.expect("hold"), "whatever the limit");
    assert!(!a.hold_slot("q", "m3", ttl, 0).await.expect("hold"), "a limit of zero takes nothing");
    assert!(a.hold_slot("q2", "m2", ttl, 1).await.expect("hold"), "another set has its own slots");
    let record = a.put("q", b"record".to_vec()).await.expect("put");
    assert!(!b.hold_slot("q", "m2", ttl, 1).await.expect("hold"), "a record does not change a set");
    assert_eq!(b.get("q").await.expect("get").map(|r| r.revision), Some(record), "nor a set a record");

    assert!(b.release_slot("q", "m1").await.expect("release"), "a held slot is given back");
    assert!(!a.release_slot("q", "m1").await.expect("release"), "once");
    assert!(!a.release_slot("absent", "m1").await.expect("release"), "an absent set holds nothing");
    assert!(b.hold_slot("q", "m2", ttl, 1).await.expect("hold"), "the slot given back is free");
    assert!(a.hold_slot("q", "m3", ttl, usize::MAX).await.expect("hold"), "no limit");
    assert!(!a.hold_slot("q", "m4", ttl, 2).await.expect("hold"), "two held");
    assert_eq!(b.live_slots("q").await.expect("count"), 2, "both counted, on either node");
    for member in ["m2", "m3"] {
        assert!(a.release_slot("q", member).await.expect("release"));
    }
    assert_eq!(b.live_slots("q").await.expect("count"), 0, "given back");
    assert_eq!(a.live_slots("never").await.expect("count"), 0, "a set never held");

    assert_config(a.hold_slot("q", "m", Duration::ZERO, 1).await, "a zero slot TTL");
    assert_config(a.hold_slot("q", "m", a.ttl() + Duration::from_millis(1), 1).await, "past the keyspace TTL");
    for bad in ["", "a b", "a*", ".a", "{a}"] {
        assert_config(a.hold_slot("q", bad, ttl, 1).await, bad);
        assert_config(a.hold_slot(bad, "m", ttl, 1).await, bad);
        assert_config(a.release_slot("q", bad).await, bad);
        assert_config(a.release_slot(bad, "m").await, bad);
        assert_config(a.live_slots(bad).await, bad);
    }
}

/// Slot expiry: a slot nobody renews is free again after its TTL (never before, at most
/// `expiry_slack` late), a renewed one stays, and an expired one is not live to release.
async fn keyspace_slot_expiry(nodes: &[Arc<dyn ServerEventBus>; 2], name: &str, options: KeyspaceSuiteOptions) {
    use tokio::time::Instant;
    let KeyspaceSuiteOptions { ttl, expiry_slack: slack } = options;
    let a = nodes[0].keyspace(name, ttl).await.expect("open a short keyspace");
    let b = nodes[1].keyspace(name, ttl).await.expect("open it on another node");
    let tick = Duration::from_millis(2);

    let start = Instant::now();
    assert!(a.hold_slot("quota", "s1", ttl, 2).await.expect("hold"));
    let s1_written = Instant::now();
    assert!(a.hold_slot("quota", "s2", ttl, 2).await.expect("hold"));
    assert!(!b.hold_slot("quota", "s3", ttl, 2).await.expect("hold"), "both slots held");
    // Renew s2 (alternating nodes) until s1's slot is free.
    for round in 0u32.. {
        tokio::time::sleep(ttl / 5).await;
        let (writer, other) = if round.is_multiple_of(2) { (&a, &b) } else { (&b, &a) };
        assert!(writer.hold_slot("quota", "s2", ttl, 2).await.expect("renew"), "a renewed slot stays held");
        let attempt = Instant::now();
        if other.hold_slot("quota", "s3", ttl, 2).await.expect("hold") {
            assert!(Instant::now() - start + tick >= ttl, "s1's slot freed early, {:?} after", Instant::now() - start);
            break;
        }
        let late = attempt.saturating_duration_since(s1_written);
        assert!(late <= ttl + slack, "s1's slot still held {late:?} after it was taken (ttl {ttl:?})");
    }
    assert!(!a.hold_slot("quota", "s4", ttl, 2).await.expect("hold"), "s2 (renewed) and s3 hold both");
    // Nobody renews them any more: both free up.
    tokio::time::sleep(ttl + slack + tick).await;
    assert_eq!(a.live_slots("quota").await.expect("count"), 0, "expired slots are not counted");
    assert!(!b.release_slot("quota", "s2").await.expect("release"), "an expired slot is not live");
    assert!(b.hold_slot("quota", "s4", ttl, 2).await.expect("hold"));
    assert!(a.hold_slot("quota", "s5", ttl, 2).await.expect("hold"), "the expired slots are free");
    for member in ["s4", "s5"] {
        assert!(a.release_slot("quota", member).await.expect("release"));
    }
}

/// Records: absent keys, create, put, compare-and-set, delete, create again, opaque values.
async fn keyspace_records(a: &dyn crate::Keyspace, b: &dyn crate::Keyspace) {
    use crate::Record;
    assert_eq!(a.get("k").await.expect("get"), None);
    assert!(!a.delete("k").await.expect("delete"), "an absent key was not live");
    assert_eq!(a.compare_and_set("k", 1, b"x".to_vec()).await.expect("cas"), None);
    assert_eq!(a.get("k").await.expect("get"), None, "a failed compare-and-set creates nothing");

    let r1 = a.create("k", b"one".to_vec()).await.expect("create").expect("an absent key is created");
    assert_eq!(b.create("k", b"two".to_vec()).await.expect("create"), None, "it exists now");
    assert_eq!(b.get("k").await.expect("get"), Some(Record { value: b"one".to_vec(), revision: r1 }));

    let r2 = b.put("k", b"two".to_vec()).await.expect("put");
    assert!(r2 > r1, "revisions increase: {r1} then {r2}");
    assert_eq!(a.get("k").await.expect("get"), Some(Record { value: b"two".to_vec(), revision: r2 }));

    let r3 = a.compare_and_set("k", r2, b"three".to_vec()).await.expect("cas").expect("the current revision");
    assert!(r3 > r2, "revisions increase: {r2} then {r3}");
    assert_eq!(b.compare_and_set("k", r2, b"stale".to_vec()).await.expect("cas"), None, "a stale revision");
    assert_eq!(b.compare_and_set("k", r1, b"stale".to_vec()).await.expect("cas"), None, "an older one");
    assert_eq!(b.get("k").await.expect("get"), Some(Record { value: b"three".to_vec(), revision: r3 }));

    assert!(b.delete("k").await.expect("delete"), "a live key was live");
    assert!(!a.delete("k").await.expect("delete"), "and is not any more");
    assert_eq!(a.get("k").await.expect("get"), None);
    assert_eq!(a.compare_and_set("k", r3, b"gone".to_vec()).await.expect("cas"), None, "a deleted key");
    assert_eq!(a.get("k").await.expect("get"), None);

    let r4 = a.create("k", b"again".to_vec()).await.expect("create").expect("a deleted key is created anew");
    assert!(![r1, r2, r3].contains(&r4), "a key created anew does not repeat a revision it had: {r4}");
    assert_eq!(b.compare_and_set("k", r3, b"stale".to_vec()).await.expect("cas"), None, "the old revision");
    assert_eq!(b.get("k").await.expect("get"), Some(Record { value: b"again".to_vec(), revision: r4 }));

    let fresh = b.put("fresh", Vec::new()).await.expect("put creates");
    assert_eq!(a.get("fresh").await.expect("get"), Some(Record { value: Vec::new(), revision: fresh }));
    let bytes = vec![0, 255, b'\n', 0x80, b'"'];
    let r = a.put("bytes", bytes.clone()).await.expect("put");
    assert_eq!(b.get("bytes").await.expect("get"), Some(Record { value: bytes, revision: r }), "opaque bytes");
    let long_key = "k".repeat(crate::keyspace::MAX_KEY_LEN);
    b.put(&long_key, b"v".to_vec()).await.expect("the longest key");
    assert!(a.delete(&long_key).await.expect("delete"));
}

/// Counters: from absent, negative deltas, what `get` reads, values `put` stored, refusals,
/// and concurrent increments from two nodes.
async fn keyspace_counters(a: &Arc<dyn crate::Keyspace>, b: &Arc<dyn crate::Keyspace>) {
    assert_eq!(a.increment("n", 5).await.expect("increment"), 5, "an absent counter counts from zero");
    assert_eq!(b.increment("n", -7).await.expect("increment"), -2);
    let read = a.get("n").await.expect("get").expect("a counter is a record");
    assert_eq!(read.value, b"-2", "a counter reads as decimal ASCII");
    assert_eq!(a.compare_and_set("n", read.revision, b"40".to_vec()).await.expect("cas").map(|_| ()), Some(()));
    assert_eq!(b.increment("n", 2).await.expect("increment"), 42, "a stored decimal is a counter");
    assert_eq!(a.increment("n", 0).await.expect("increment"), 42);

    for (key, value) in [("text", &b"abc"[..]), ("padded", b" 1"), ("max", b"9223372036854775807")] {
        a.put(key, value.to_vec()).await.expect("put");
        let delta = if key == "max" { 1 } else { 0 };
        let refused = b.increment(key, delta).await;
        assert!(matches!(refused, Err(crate::BusError::Backend(_))), "{key}: {refused:?}");
        assert_eq!(a.get(key).await.expect("get").map(|r| r.value), Some(value.to_vec()), "{key} unchanged");
    }
    assert_eq!(a.increment("min", i64::MIN).await.expect("increment"), i64::MIN);
    assert!(matches!(b.increment("min", -1).await, Err(crate::BusError::Backend(_))));

    increment_at_once(a, b, "hits", 40).await;
    assert_eq!(b.get("hits").await.expect("get").map(|r| r.value), Some(b"40".to_vec()));
    // A hot counter (a fleet-wide rate window under load): none given up on contention.
    increment_at_once(a, b, "hot", 2000).await;
}

/// Increment the counter `key` by one `times` times at once, alternating the nodes: every
/// increment counts and sees its own value.
async fn increment_at_once(a: &Arc<dyn crate::Keyspace>, b: &Arc<dyn crate::Keyspace>, key: &'static str, times: i64) {
    let tasks: Vec<_> = (0..times)
        .map(|i| {
            let ks = if i % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move { ks.increment(key, 1).await })
        })
        .collect();
    let mut seen = Vec::new();
    for task in tasks {
        seen.push(task.await.expect("the task ran").expect("a contended increment counts"));
    }
    seen.sort_unstable();
    assert_eq!(seen, (1..=times).collect::<Vec<i64>>(), "{key}: every increment saw its own value");
}

/// When a write started and ended (the broker applied it in between).
#[derive(Clone, Copy)]
struct Written {
    start: tokio::time::Instant,
    end: tokio::time::Instant,
}

/// Expiry: a key written once is gone after the TTL (never before, at most `expiry_slack`
/// late) and can be created again; keys kept written (put, compare-and-set, increment) stay;
/// once nobody writes them they expire too.
async fn keyspace_expiry(nodes: &[Arc<dyn ServerEventBus>; 2], name: &str, options: KeyspaceSuiteOptions) {
    use tokio::time::Instant;
    let KeyspaceSuiteOptions { ttl, expiry_slack: slack } = options;
    let a = nodes[0].keyspace(name, ttl).await.expect("open a short keyspace");
    let b = nodes[1].keyspace(name, ttl).await.expect("open it on another node");
    // Clocks tick in milliseconds on a broker.
    let tick = Duration::from_millis(2);

    // Whether `key` is live, asserting the TTL against its last write: gone only if that write
    // started at least `ttl` before the read ended; live only if it ended at most `ttl + slack`
    // before the read started.
    let check = |key: &'static str, written: Written| {
        let reader = b.clone();
        async move {
            let read_start = Instant::now();
            let live = reader.get(key).await.expect("get").is_some();
            let since_start = Instant::now() - written.start;
            assert!(live || since_start + tick >= ttl, "{key} expired early, {since_start:?} after its write");
            let since_end = read_start.saturating_duration_since(written.end);
            assert!(!live || since_end <= ttl + slack, "{key} still live {since_end:?} after its write (ttl {ttl:?})");
            live
        }
    };
    let timed = |start: Instant| Written { start, end: Instant::now() };

    let start = Instant::now();
    let once = a.create("once", b"1".to_vec()).await.expect("create").expect("created");
    let once_written = timed(start);
    let start = Instant::now();
    let mut renewed = a.put("renewed", b"0".to_vec()).await.expect("put");
    let (first_write, mut renewed_written) = (timed(start), timed(start));
    let start = Instant::now();
    let mut count = a.increment("counter", 1).await.expect("increment");
    let mut counter_written = timed(start);

    // Keep writing two keys (alternating nodes and kinds of write) until the key written once
    // is gone and the others' first writes would have expired too.
    let mut once_gone = false;
    let mut round = 0u32;
    while !once_gone || first_write.end.elapsed() <= ttl + slack {
        tokio::time::sleep(ttl / 5).await;
        round += 1;
        let (writer, reader) = if round.is_multiple_of(2) { (&a, &b) } else { (&b, &a) };
        let value = round.to_string().into_bytes();
        let start = Instant::now();
        let swapped = match round % 3 {
            0 => Some(writer.put("renewed", value.clone()).await.expect("put")),
            _ => writer.compare_and_set("renewed", renewed, value.clone()).await.expect("cas"),
        };
        renewed = match swapped {
            Some(revision) => revision,
            // Only a round late by a whole TTL (a starved test) may find it expired.
            None => {
                assert!(start - renewed_written.start + tick >= ttl, "the key changed under a compare-and-set");
                writer.put("renewed", value).await.expect("put")
            }
        };
        renewed_written = timed(start);
        let start = Instant::now();
        let next = reader.increment("counter", 1).await.expect("increment");
        assert!(
            next == count + 1 || (next == 1 && start - counter_written.start + tick >= ttl),
            "{next} after {count}"
        );
        (count, counter_written) = (next, timed(start));
        once_gone = !check("once", once_written).await;
        check("renewed", renewed_written).await;
        check("counter", counter_written).await;
        assert!(first_write.start.elapsed() < (ttl + slack) * 4 + STEP_TIMEOUT, "the suite fell behind");
    }
    assert_eq!(a.compare_and_set("once", once, b"late".to_vec()).await.expect("cas"), None, "an expired key");
    let again = b.create("once", b"2".to_vec()).await.expect("create").expect("an expired key is created anew");
    assert_ne!(again, once, "a key created anew does not repeat its old revision");
    assert_eq!(b.compare_and_set("once", once, b"late".to_vec()).await.expect("cas"), None, "the old revision");

    // Nobody writes them any more: both expire.
    while check("renewed", renewed_written).await | check("counter", counter_written).await {
        tokio::time::sleep(ttl / 10).await;
    }
    assert!(a.create("renewed", Vec::new()).await.expect("create").is_some(), "expired, so created anew");
    assert_eq!(a.increment("counter", 1).await.expect("increment"), 1, "an expired counter counts from zero");
}

/// Assert that `result` is [`BusError::Config`](crate::BusError::Config).
fn assert_config<T>(result: Result<T, crate::BusError>, what: &str) {
    match result {
        Err(crate::BusError::Config(_)) => {}
        Err(other) => panic!("{what:?} is refused as configuration, not with {other:?}"),
        Ok(_) => panic!("{what:?} is refused"),
    }
}

/// The next event on `stream`, skipping nothing; fails on a gap or a timeout.
pub async fn next_event(stream: &mut BusStream) -> crate::EventEnvelope {
    match tokio::time::timeout(STEP_TIMEOUT, stream.next()).await {
        Ok(Some(BusItem::Event(e))) => e,
        Ok(Some(BusItem::Gap(reason))) => panic!("unexpected gap: {reason:?}"),
        Ok(None) => panic!("bus stream ended"),
        Err(_) => panic!("no event within {STEP_TIMEOUT:?}"),
    }
}

/// The next item on `stream` (event or gap); fails on a timeout or a closed stream.
pub async fn next_item(stream: &mut BusStream) -> BusItem {
    tokio::time::timeout(STEP_TIMEOUT, stream.next()).await.expect("an item in time").expect("stream open")
}

/// How long a test waits for a condition unless it says otherwise: generous, because it is
/// only reached when something is broken (a condition that holds ends the wait at once).
pub const WAIT: Duration = Duration::from_secs(10);

/// Poll `check` every 10 ms until it holds; after `within`, panic naming `what` ("timed out
/// after 10s waiting until {what}"). The one bounded wait of every test in the workspace.
///
/// `what` is formatted only when the wait fails, so a `Display` that reads the state under
/// test (the last error, say) reports it as it was at the deadline. Under paused tokio time
/// the polls advance the clock, and the deadline is in paused time too.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use mcp_fleet_bus::testing::{WAIT, eventually};
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let ready = AtomicBool::new(true);
/// eventually("the flag is set", WAIT, async || ready.load(Ordering::SeqCst)).await;
/// # });
/// ```
pub async fn eventually(what: impl std::fmt::Display, within: Duration, mut check: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + within;
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out after {within:?} waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// What an [`eventually`] waits for, with the last state its check saw: the failure message
/// reads "… waiting until {what} (last seen: {state})".
///
/// ```
/// use mcp_fleet_bus::testing::{Awaiting, WAIT, eventually};
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let members = Awaiting::new("two members");
/// eventually(&members, WAIT, async || {
///     let seen = vec!["a", "b"];
///     members.saw(&seen);
///     seen.len() == 2
/// })
/// .await;
/// assert_eq!(members.to_string(), r#"two members (last seen: ["a", "b"])"#);
/// # });
/// ```
pub struct Awaiting {
    what: String,
    /// Written by the check, read by the failure message: a std mutex, never held across an
    /// `.await`.
    last: std::sync::Mutex<Option<String>>,
}

impl Awaiting {
    /// A wait until `what`, nothing seen yet.
    pub fn new(what: impl Into<String>) -> Self {
        Awaiting { what: what.into(), last: std::sync::Mutex::new(None) }
    }

    /// Remember `state` as the last one the check saw.
    pub fn saw(&self, state: impl std::fmt::Debug) {
        *self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(format!("{state:?}"));
    }
}

impl std::fmt::Display for Awaiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
            Some(last) => write!(f, "{} (last seen: {last})", self.what),
            None => f.write_str(&self.what),
        }
    }
}

/// Maps each subscription stream of a [`WrappedBus`].
type StreamMap = Arc<dyn Fn(BusStream) -> BusStream + Send + Sync>;
/// Decides whether a publish of a [`WrappedBus`] fails (and how).
type PublishCheck = Arc<dyn Fn(&crate::EventEnvelope) -> Option<crate::BusError> + Send + Sync>;

/// A real backend wrapped to inject faults in tests: each subscription stream passes through a
/// function (end it, make it panic, count it), each publish may be failed. Everything else is
/// the wrapped backend's.
///
/// ```
/// use std::sync::Arc;
/// use mcp_fleet_bus::{BusError, Change, EventKind, MemoryBus, ServerEventBus, testing::WrappedBus};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let bus = WrappedBus::new(Arc::new(MemoryBus::new()))
///     .failing_publishes(|_| Some(BusError::Unavailable("down in this test".into())));
/// assert!(bus.publish(Change::list(EventKind::ToolsListChanged)).await.is_err());
/// # });
/// ```
#[derive(Clone)]
pub struct WrappedBus {
    inner: Arc<dyn ServerEventBus>,
    streams: StreamMap,
    publishes: PublishCheck,
}

impl WrappedBus {
    /// `inner`, unchanged until told otherwise.
    pub fn new(inner: Arc<dyn ServerEventBus>) -> Self {
        WrappedBus { inner, streams: Arc::new(|s| s), publishes: Arc::new(|_| None) }
    }

    /// Pass every subscription stream through `map`.
    pub fn mapping_streams(mut self, map: impl Fn(BusStream) -> BusStream + Send + Sync + 'static) -> Self {
        self.streams = Arc::new(map);
        self
    }

    /// Fail a publish with the error `check` returns for it (`None`: publish normally).
    pub fn failing_publishes(
        mut self,
        check: impl Fn(&crate::EventEnvelope) -> Option<crate::BusError> + Send + Sync + 'static,
    ) -> Self {
        self.publishes = Arc::new(check);
        self
    }
}

impl ServerEventBus for WrappedBus {
    fn publish_event(
        &self,
        event: crate::EventEnvelope,
    ) -> crate::BoxFuture<'_, Result<crate::EventEnvelope, crate::BusError>> {
        match (self.publishes)(&event) {
            Some(err) => Box::pin(std::future::ready(Err(err))),
            None => self.inner.publish_event(event),
        }
    }

    fn subscribe(&self) -> crate::BoxFuture<'_, Result<BusStream, crate::BusError>> {
        Box::pin(async move { Ok((self.streams)(self.inner.subscribe().await?)) })
    }

    fn status(&self) -> crate::BusStatus {
        self.inner.status()
    }

    fn announce(&self, payload: String, ttl: Duration) -> crate::BoxFuture<'_, Result<(), crate::BusError>> {
        self.inner.announce(payload, ttl)
    }

    fn members(&self) -> crate::BoxFuture<'_, Result<Vec<crate::Member>, crate::BusError>> {
        self.inner.members()
    }

    fn leave(&self) -> crate::BoxFuture<'_, Result<(), crate::BusError>> {
        self.inner.leave()
    }

    fn keyspace(
        &self,
        name: &str,
        ttl: Duration,
    ) -> crate::BoxFuture<'_, Result<Arc<dyn crate::Keyspace>, crate::BusError>> {
        self.inner.keyspace(name, ttl)
    }

    fn node_id(&self) -> &str {
        self.inner.node_id()
    }

    fn counters(&self) -> Arc<crate::BusCounters> {
        self.inner.counters()
    }

    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
}
