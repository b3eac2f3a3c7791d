//! The in-memory bus: the embedded default for a single node (and for tests).
//!
//! Versions come from a counter; fan-out uses a bounded `tokio::sync::broadcast` channel whose
//! capacity is the most events a slow consumer may fall behind by. A consumer that lags past
//! it gets a [`GapReason::Lagged`] instead of silently missing events. The epoch is chosen
//! when the bus is created: its history lives exactly as long as the process.
//!
//! Its keyspaces ([`ServerEventBus::keyspace`]) live in `keyspace`, shared by every clone.

mod keyspace;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use futures_util::stream;
use tokio::sync::broadcast;

use crate::bus::{BoxFuture, BusCounters, BusError, BusItem, BusStatus, BusStream, GapReason, Member, ServerEventBus};
use crate::envelope::EventEnvelope;
use crate::keyspace::{Keyspace, check_open};

/// Default broadcast capacity: how many events a lagging consumer may fall behind.
pub const DEFAULT_MEMORY_CAPACITY: usize = 4096;

/// An in-process [`ServerEventBus`]. Cheap to clone; clones share one channel, so several
/// handlers in one process (as in tests) behave like several nodes on one broker.
#[derive(Clone)]
pub struct MemoryBus {
    inner: Arc<Inner>,
    node_id: Arc<str>,
}

struct Inner {
    /// Held while a version is assigned *and* the event sent, so concurrent publishers'
    /// events reach every consumer in version order. A std mutex: never held across `.await`.
    sender: Mutex<Sender>,
    epoch: u64,
    counters: Arc<BusCounters>,
    /// Membership: node id → (payload, expiry). A std mutex, held only to read or replace.
    members: Mutex<HashMap<String, (String, Instant)>>,
    /// Keyspaces by name, shared by every clone.
    keyspaces: keyspace::Keyspaces,
}

struct Sender {
    channel: broadcast::Sender<EventEnvelope>,
    next_version: u64,
}

impl MemoryBus {
    /// A bus with the default capacity.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_MEMORY_CAPACITY)
    }

    /// A bus whose consumers may lag `capacity` events before a gap is reported.
    pub fn with_capacity(capacity: usize) -> Self {
        let (channel, _) = broadcast::channel(capacity.max(1));
        let sender = Mutex::new(Sender { channel, next_version: 1 });
        let inner = Inner {
            sender,
            epoch: crate::envelope::new_epoch(),
            counters: Arc::default(),
            members: Mutex::default(),
            keyspaces: keyspace::Keyspaces::default(),
        };
        MemoryBus { inner: Arc::new(inner), node_id: "memory-node".into() }
    }

    /// Another handle on the same channel that publishes as a different node.
    pub fn as_node(&self, node_id: &str) -> MemoryBus {
        MemoryBus { inner: self.inner.clone(), node_id: node_id.into() }
    }
}

impl Default for MemoryBus {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerEventBus for MemoryBus {
    fn publish_event(&self, mut env: EventEnvelope) -> BoxFuture<'_, Result<EventEnvelope, BusError>> {
        env.epoch = self.inner.epoch;
        {
            let mut sender = self.inner.sender.lock().unwrap_or_else(PoisonError::into_inner);
            env.version = sender.next_version;
            sender.next_version += 1;
            // No receiver yet is fine: nobody is listening, nothing is lost.
            let _ = sender.channel.send(env.clone());
        }
        BusCounters::bump(&self.inner.counters.published);
        Box::pin(async move { Ok(env) })
    }

    fn position(&self) -> BoxFuture<'_, Result<Option<(u64, u64)>, BusError>> {
        let next = self.inner.sender.lock().unwrap_or_else(PoisonError::into_inner).next_version;
        let position = (self.inner.epoch, next - 1);
        Box::pin(async move { Ok(Some(position)) })
    }

    fn subscribe(&self) -> BoxFuture<'_, Result<BusStream, BusError>> {
        let receiver = self.inner.sender.lock().unwrap_or_else(PoisonError::into_inner).channel.subscribe();
        let counters = self.inner.counters.clone();
        let stream = stream::unfold((receiver, counters), |(mut rx, counters)| async move {
            let item = match rx.recv().await {
                Ok(env) => {
                    BusCounters::bump(&counters.received);
                    BusItem::Event(env)
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    BusCounters::bump(&counters.gaps);
                    BusItem::Gap(GapReason::Lagged(n))
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            Some((item, (rx, counters)))
        });
        Box::pin(async move { Ok(Box::pin(stream) as BusStream) })
    }

    fn status(&self) -> BusStatus {
        BusStatus::Connected
    }

    fn announce(&self, payload: String, ttl: Duration) -> BoxFuture<'_, Result<(), BusError>> {
        let mut members = self.inner.members.lock().unwrap_or_else(PoisonError::into_inner);
        members.insert(self.node_id.to_string(), (payload, Instant::now() + ttl));
        Box::pin(std::future::ready(Ok(())))
    }

    fn members(&self) -> BoxFuture<'_, Result<Vec<Member>, BusError>> {
        let now = Instant::now();
        let mut members = self.inner.members.lock().unwrap_or_else(PoisonError::into_inner);
        members.retain(|_, (_, expiry)| *expiry > now);
        let live = members
            .iter()
            .map(|(node, (payload, expiry))| Member {
                node_id: node.clone(),
                payload: payload.clone(),
                expires_in: *expiry - now,
            })
            .collect();
        Box::pin(std::future::ready(Ok(live)))
    }

    fn leave(&self) -> BoxFuture<'_, Result<(), BusError>> {
        self.inner.members.lock().unwrap_or_else(PoisonError::into_inner).remove(&*self.node_id);
        Box::pin(std::future::ready(Ok(())))
    }

    fn keyspace(&self, name: &str, ttl: Duration) -> BoxFuture<'_, Result<Arc<dyn Keyspace>, BusError>> {
        let opened =
            check_open(name, ttl).map(|()| Arc::new(self.inner.keyspaces.open(name, ttl)) as Arc<dyn Keyspace>);
        Box::pin(std::future::ready(opened))
    }

    fn node_id(&self) -> &str {
        &self.node_id
    }

    fn counters(&self) -> Arc<BusCounters> {
        self.inner.counters.clone()
    }

    fn backend(&self) -> &'static str {
        "memory"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;

    /// `make_node` for the shared suites: node `i` is `bus` as `node-<i>`.
    fn nodes(bus: &MemoryBus) -> impl Fn(usize) -> std::future::Ready<Arc<dyn ServerEventBus>> + '_ {
        move |i| std::future::ready(Arc::new(bus.as_node(&format!("node-{i}"))) as Arc<dyn ServerEventBus>)
    }

    #[tokio::test]
    async fn names_its_position_before_and_after_publishing() {
        let bus = MemoryBus::new();
        let epoch = bus.inner.epoch;
        assert_eq!(bus.position().await.unwrap(), Some((epoch, 0)));
        let published = bus.publish(crate::Change::list(crate::EventKind::ToolsListChanged)).await.unwrap();
        assert_eq!(bus.position().await.unwrap(), Some((epoch, published.version)));
    }

    #[tokio::test]
    async fn passes_the_shared_bus_suite() {
        testing::run_suite(nodes(&MemoryBus::new())).await;
    }

    #[tokio::test]
    async fn passes_the_membership_suite() {
        let bus = MemoryBus::new();
        testing::run_membership_suite(nodes(&bus), Duration::from_millis(300)).await;
    }

    #[tokio::test]
    async fn passes_the_keyspace_suite() {
        let bus = MemoryBus::new();
        testing::run_keyspace_suite(
            nodes(&bus),
            testing::KeyspaceSuiteOptions { ttl: Duration::from_millis(300), expiry_slack: Duration::from_millis(100) },
        )
        .await;
    }

    #[tokio::test]
    async fn separate_buses_keep_separate_keyspaces() {
        let (one, other) = (MemoryBus::new(), MemoryBus::new());
        let ttl = Duration::from_secs(60);
        one.keyspace("k", ttl).await.unwrap().put("a", b"1".to_vec()).await.unwrap();
        assert_eq!(other.keyspace("k", ttl).await.unwrap().get("a").await.unwrap(), None);
        let again = one.keyspace("k", ttl).await.unwrap().get("a").await.unwrap();
        assert_eq!(again.map(|r| r.value), Some(b"1".to_vec()), "the same name is the same records");
    }

    #[tokio::test(start_paused = true)]
    async fn expired_entries_are_swept_even_if_never_read_again() {
        let bus = MemoryBus::new();
        let ks = bus.keyspace("sweep", Duration::from_secs(1)).await.unwrap();
        for i in 0..keyspace::MIN_SWEEP {
            ks.put(&format!("old{i}"), Vec::new()).await.unwrap();
        }
        tokio::time::advance(Duration::from_secs(2)).await;
        // The map doubles since the last sweep (which found every entry live): the expired go.
        for i in 0..keyspace::MIN_SWEEP {
            ks.put(&format!("new{i}"), Vec::new()).await.unwrap();
        }
        assert_eq!(bus.inner.keyspaces.len("sweep"), keyspace::MIN_SWEEP, "only the live entries are left");
    }

    #[test]
    fn concurrent_publishers_deliver_in_version_order() {
        use futures_util::StreamExt;
        let bus = MemoryBus::new();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut stream = runtime.block_on(bus.subscribe()).unwrap();
        let publishers: Vec<_> = (0..4)
            .map(|i| {
                let bus = bus.as_node(&format!("p{i}"));
                std::thread::spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
                    for _ in 0..500 {
                        runtime.block_on(bus.publish(crate::Change::resource("a://x"))).unwrap();
                    }
                })
            })
            .collect();
        for p in publishers {
            p.join().unwrap();
        }
        runtime.block_on(async {
            let mut last = 0;
            for _ in 0..2000 {
                let Some(BusItem::Event(e)) = stream.next().await else { panic!("expected an event") };
                assert_eq!(e.version, last + 1, "versions arrive in order");
                last = e.version;
            }
        });
    }

    #[tokio::test]
    async fn a_lagging_consumer_gets_a_gap() {
        use futures_util::StreamExt;
        let bus = MemoryBus::with_capacity(2);
        let mut stream = bus.subscribe().await.unwrap();
        for _ in 0..5 {
            bus.publish(crate::Change::list(crate::EventKind::ToolsListChanged)).await.unwrap();
        }
        assert_eq!(stream.next().await, Some(BusItem::Gap(GapReason::Lagged(3))));
        assert!(matches!(stream.next().await, Some(BusItem::Event(_))));
    }
}
