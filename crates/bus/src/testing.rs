//! One behaviour suite for every [`ServerEventBus`] backend (memory, real Redis, real NATS),
//! so all of them keep the same contract. Enabled by the `testing` feature.

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
}

impl Default for SuiteOptions {
    /// The full contract.
    fn default() -> Self {
        SuiteOptions { versions_ordered_across_publishers: true }
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

    // Scopes and URIs survive the trip; versions increase in publish order.
    let a = nodes[1].publish(Change::resource("test://a").in_scope("tenant-a")).await.expect("publish");
    let b = nodes[2].publish(Change::list(EventKind::PromptsListChanged)).await.expect("publish");
    if options.versions_ordered_across_publishers {
        assert_eq!(a.epoch, b.epoch, "one epoch for every publisher");
        assert!(b.version > a.version, "versions must be monotonic: {} then {}", a.version, b.version);
    }
    for stream in &mut streams {
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
    for stream in &mut streams {
        for id in &ids {
            assert_eq!(&next_event(stream).await.event_id, id);
        }
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
    let deadline = tokio::time::Instant::now() + STEP_TIMEOUT;
    'converge: loop {
        for (node, payload) in nodes.iter().zip(payloads) {
            node.announce(payload.to_owned(), ttl).await.expect("announce again");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut all_agree = true;
        for node in &nodes {
            let mut seen: Vec<(String, String)> =
                node.members().await.expect("members").into_iter().map(|m| (m.node_id, m.payload)).collect();
            seen.sort();
            all_agree &= seen == expected;
            assert!(tokio::time::Instant::now() < deadline, "{} sees {seen:?}, not {expected:?}", node.backend());
        }
        if all_agree {
            break 'converge;
        }
    }
    nodes[2].leave().await.expect("leave");
    let left = nodes[2].node_id().to_owned();
    // A leave must not just be waited out: it shows well before the TTL would expire it.
    let deadline = tokio::time::Instant::now() + ttl / 2;
    loop {
        let members = nodes[0].members().await.expect("members");
        assert!(members.iter().all(|m| m.expires_in <= ttl));
        if members.iter().all(|m| m.node_id != left) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "a leave is seen well before the TTL");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Node 0 keeps announcing; node 1 goes silent and must expire.
    let deadline = tokio::time::Instant::now() + ttl * 3 + STEP_TIMEOUT;
    loop {
        nodes[0].announce("alive".into(), ttl).await.expect("heartbeat");
        let ids: Vec<String> = nodes[0].members().await.expect("members").into_iter().map(|m| m.node_id).collect();
        if ids == [nodes[0].node_id().to_owned()] {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "a silent member did not expire: {ids:?}");
        tokio::time::sleep(ttl / 4).await;
    }
    nodes[0].leave().await.expect("leave");
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

/// Wait (up to 5 s) until `condition` holds, polling every 10 ms.
pub async fn wait_until(condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "condition not reached in time");
        tokio::time::sleep(Duration::from_millis(10)).await;
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
