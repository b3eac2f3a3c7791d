//! [`Interest`]: what this node's open streams follow, told to the bus, so a bus that routes
//! by interest (Redis split into shards with `routing=interest`) reads only what they need.
//!
//! Each stream holds an [`InterestGuard`]: its subjects (its tenant's scope, the URIs it
//! subscribed to), gained before its ack is written — so every event published after the ack
//! reaches this node — and lost when it is dropped. A 2025 session's stream follows every URI:
//! its subscriptions change while it is open, announced by events that would race a gain.
//! On a bus that consumes everything (the default) a stream holds no guard at all, unless a
//! consumer above wants to know what the node's streams follow ([`InterestSink`]: the fleet's
//! watches) — then its guard tells that consumer too.

use std::collections::BTreeSet;
use std::sync::Arc;

use mcp_fleet_bus::{BusError, ServerEventBus, Subject};
use mcp_fleet_protocol::SubscriptionFilter;

/// What a stream whose gain failed is answered (the bus cannot read its shards right now).
pub(crate) const UNFOLLOWABLE: &str =
    "This replica cannot follow the fleet's events for this stream right now; reconnect to another replica";

/// Told what this node's streams follow, as they open and close (the fleet's watches).
pub(crate) trait InterestSink: Send + Sync {
    /// A stream gained `subjects` (before its ack is written).
    fn gained(&self, subjects: &[Subject]);
    /// A stream that gained `subjects` closed.
    fn lost(&self, subjects: &[Subject]);
}

/// The bus, as far as telling it what streams follow goes, and the sink also told. Cheap to
/// clone.
#[derive(Clone)]
pub(crate) struct Interest {
    bus: Arc<dyn ServerEventBus>,
    sink: Option<Arc<dyn InterestSink>>,
}

/// One stream's subjects: gained by [`InterestGuard::gain`], lost on drop.
pub(crate) struct InterestGuard {
    bus: Option<Arc<dyn ServerEventBus>>,
    sink: Option<Arc<dyn InterestSink>>,
    subjects: Vec<Subject>,
    gained: bool,
}

impl Interest {
    pub(crate) fn new(bus: Arc<dyn ServerEventBus>, sink: Option<Arc<dyn InterestSink>>) -> Self {
        Interest { bus, sink }
    }

    /// A listen stream of `scope` (its tenant) with `filter`; `None` when neither the bus nor
    /// a sink needs to know, or the stream follows only fleet-wide events.
    pub(crate) fn listen(&self, scope: Option<&str>, filter: &SubscriptionFilter) -> Option<Box<InterestGuard>> {
        let scoped = scope.map(|s| Subject::Scope(s.to_owned()));
        let uris = filter.resource_subscriptions.iter().map(|uri| Subject::Uri(uri.clone()));
        self.guard(scoped.into_iter().chain(uris).collect())
    }

    /// A 2025 session's GET stream of `scope`; `None` when neither the bus nor a sink needs
    /// to know.
    pub(crate) fn session_stream(&self, scope: Option<&str>) -> Option<Box<InterestGuard>> {
        let scoped = scope.map(|s| Subject::Scope(s.to_owned()));
        self.guard(scoped.into_iter().chain([Subject::EveryUri]).collect())
    }

    /// What a 2025 session's stream subscribes to, URI by URI, for the sink; `None` without one.
    pub(crate) fn session_uris(&self) -> Option<FollowedUris> {
        self.sink.clone().map(|sink| FollowedUris { sink, told: BTreeSet::new() })
    }

    fn guard(&self, subjects: Vec<Subject>) -> Option<Box<InterestGuard>> {
        let bus = self.bus.routes_by_interest().then(|| self.bus.clone());
        let needed = (bus.is_some() || self.sink.is_some()) && !subjects.is_empty();
        needed.then(|| Box::new(InterestGuard { bus, sink: self.sink.clone(), subjects, gained: false }))
    }
}

/// The URIs a 2025 session's GET stream is subscribed to, told to the sink as they change
/// (the bus is told every URI once, by the stream's guard) and lost when dropped.
pub(crate) struct FollowedUris {
    sink: Arc<dyn InterestSink>,
    told: BTreeSet<String>,
}

impl FollowedUris {
    /// The stream's subscriptions are now `now`: tell the sink what it gained and lost.
    pub(crate) fn sync(&mut self, now: &BTreeSet<String>) {
        let uris = |set: std::collections::btree_set::Difference<'_, String>| -> Vec<Subject> {
            set.map(|uri| Subject::Uri(uri.clone())).collect()
        };
        let (gained, lost) = (uris(now.difference(&self.told)), uris(self.told.difference(now)));
        if !gained.is_empty() {
            self.sink.gained(&gained);
        }
        if !lost.is_empty() {
            self.sink.lost(&lost);
        }
        if !gained.is_empty() || !lost.is_empty() {
            self.told.clone_from(now);
        }
    }
}

impl Drop for FollowedUris {
    fn drop(&mut self) {
        self.sync(&BTreeSet::new());
    }
}

impl std::fmt::Debug for FollowedUris {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FollowedUris").field("told", &self.told).finish_non_exhaustive()
    }
}

impl InterestGuard {
    /// Tell the bus and the sink; resolves once what the stream follows reaches this node.
    pub(crate) async fn gain(&mut self) -> Result<(), BusError> {
        if !self.gained {
            if let Some(bus) = &self.bus {
                bus.gain(&self.subjects).await?;
            }
            if let Some(sink) = &self.sink {
                sink.gained(&self.subjects);
            }
            self.gained = true;
        }
        Ok(())
    }
}

impl Drop for InterestGuard {
    fn drop(&mut self) {
        if self.gained {
            if let Some(bus) = &self.bus {
                bus.lose(&self.subjects);
            }
            if let Some(sink) = &self.sink {
                sink.lost(&self.subjects);
            }
        }
    }
}

impl std::fmt::Debug for InterestGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterestGuard").field("subjects", &self.subjects).field("gained", &self.gained).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use mcp_fleet_bus::{BoxFuture, MemoryBus};
    use serde_json::json;

    use super::*;

    /// A bus that records gains and losses (routing is the backends' job; this is the count).
    struct Counting {
        inner: Arc<dyn ServerEventBus>,
        held: Mutex<Vec<Subject>>,
    }

    #[tokio::test]
    async fn a_stream_gains_its_scope_and_uris_and_loses_them_when_dropped() {
        let bus = Arc::new(Counting { inner: Arc::new(MemoryBus::new().as_node("n")), held: Mutex::default() });
        let interest = Interest::new(bus.clone(), None);
        let filter = SubscriptionFilter::from_params(
            json!({"notifications": {"resourceSubscriptions": ["file:///a"]}}).as_object().expect("object"),
            10,
        )
        .expect("filter");
        let mut guard = interest.listen(Some("t1"), &filter).expect("a routed stream");
        assert!(bus.held().is_empty(), "nothing is told before the gain");
        guard.gain().await.expect("gain");
        assert_eq!(bus.held(), [Subject::Scope("t1".into()), Subject::Uri("file:///a".into())]);
        let mut session = interest.session_stream(None).expect("a routed stream");
        session.gain().await.expect("gain");
        assert_eq!(bus.held().len(), 3);
        drop(guard);
        assert_eq!(bus.held(), [Subject::EveryUri]);
        drop(session);
        assert!(interest.listen(None, &SubscriptionFilter::default()).is_none(), "only fleet-wide events");
        let unrouted = Interest::new(Arc::new(MemoryBus::new()), None);
        assert!(unrouted.session_stream(Some("t")).is_none(), "a bus that consumes everything needs no guard");
    }

    /// A sink that counts what streams gained and lost.
    #[derive(Default)]
    struct Sink(Mutex<(Vec<Subject>, Vec<Subject>)>);

    impl InterestSink for Sink {
        fn gained(&self, subjects: &[Subject]) {
            self.0.lock().expect("sink").0.extend_from_slice(subjects);
        }
        fn lost(&self, subjects: &[Subject]) {
            self.0.lock().expect("sink").1.extend_from_slice(subjects);
        }
    }

    #[tokio::test]
    async fn a_sink_hears_streams_on_a_bus_that_consumes_everything() {
        let sink = Arc::new(Sink::default());
        let interest = Interest::new(Arc::new(MemoryBus::new()), Some(sink.clone()));
        let mut guard = interest.session_stream(Some("t")).expect("a guard for the sink");
        assert!(sink.0.lock().expect("sink").0.is_empty(), "nothing before the gain");
        guard.gain().await.expect("gain");
        guard.gain().await.expect("a second gain is the first's");
        assert_eq!(sink.0.lock().expect("sink").0, [Subject::Scope("t".into()), Subject::EveryUri]);
        drop(guard);
        assert_eq!(sink.0.lock().expect("sink").1.len(), 2, "lost when dropped");
        let never_gained = interest.listen(Some("t"), &SubscriptionFilter::default()).expect("a guard");
        drop(never_gained);
        assert_eq!(sink.0.lock().expect("sink").1.len(), 2, "a guard never gained loses nothing");

        let mut uris = interest.session_uris().expect("with a sink");
        let set = |uris: &[&str]| uris.iter().map(|u| (*u).to_owned()).collect::<BTreeSet<_>>();
        uris.sync(&set(&["a", "b"]));
        uris.sync(&set(&["b", "c"]));
        drop(uris);
        let (gained, lost) = sink.0.lock().expect("sink").clone();
        let uri = |u: &str| Subject::Uri(u.into());
        assert_eq!(gained[2..], [uri("a"), uri("b"), uri("c")]);
        assert_eq!(lost[2..], [uri("a"), uri("b"), uri("c")], "a lost when unsubscribed, the rest when dropped");
        assert!(Interest::new(Arc::new(MemoryBus::new()), None).session_uris().is_none());
    }

    impl Counting {
        fn held(&self) -> Vec<Subject> {
            self.held.lock().expect("held").clone()
        }
    }

    impl ServerEventBus for Counting {
        fn gain(&self, subjects: &[Subject]) -> BoxFuture<'_, Result<(), BusError>> {
            self.held.lock().expect("held").extend_from_slice(subjects);
            Box::pin(async { Ok(()) })
        }
        fn routes_by_interest(&self) -> bool {
            true
        }
        fn lose(&self, subjects: &[Subject]) {
            let mut held = self.held.lock().expect("held");
            for s in subjects {
                if let Some(at) = held.iter().position(|h| h == s) {
                    held.remove(at);
                }
            }
        }
        fn publish_event(
            &self,
            event: mcp_fleet_bus::EventEnvelope,
        ) -> BoxFuture<'_, Result<mcp_fleet_bus::EventEnvelope, BusError>> {
            self.inner.publish_event(event)
        }
        fn subscribe(&self) -> BoxFuture<'_, Result<mcp_fleet_bus::BusStream, BusError>> {
            self.inner.subscribe()
        }
        fn status(&self) -> mcp_fleet_bus::BusStatus {
            self.inner.status()
        }
        fn announce(&self, payload: String, ttl: std::time::Duration) -> BoxFuture<'_, Result<(), BusError>> {
            self.inner.announce(payload, ttl)
        }
        fn members(&self) -> BoxFuture<'_, Result<Vec<mcp_fleet_bus::Member>, BusError>> {
            self.inner.members()
        }
        fn leave(&self) -> BoxFuture<'_, Result<(), BusError>> {
            self.inner.leave()
        }
        fn keyspace(
            &self,
            name: &str,
            ttl: std::time::Duration,
        ) -> BoxFuture<'_, Result<Arc<dyn mcp_fleet_bus::Keyspace>, BusError>> {
            self.inner.keyspace(name, ttl)
        }
        fn node_id(&self) -> &str {
            self.inner.node_id()
        }
        fn counters(&self) -> Arc<mcp_fleet_bus::BusCounters> {
            self.inner.counters()
        }
        fn backend(&self) -> &'static str {
            "counting"
        }
    }
}
