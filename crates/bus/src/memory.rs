//! The in-memory bus: the embedded default for a single node (and for tests).
//!
//! Versions come from a counter; fan-out uses a bounded `tokio::sync::broadcast` channel whose
//! capacity is the most events a slow consumer may fall behind by. A consumer that lags past
//! it gets a [`GapReason::Lagged`] instead of silently missing events. The epoch is chosen
//! when the bus is created: its history lives exactly as long as the process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use futures_util::stream;
use tokio::sync::broadcast;

use crate::bus::{BoxFuture, BusCounters, BusError, BusItem, BusStatus, BusStream, GapReason, Member, ServerEventBus};
use crate::envelope::EventEnvelope;

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
        let inner =
            Inner { sender, epoch: crate::envelope::new_epoch(), counters: Arc::default(), members: Mutex::default() };
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

    #[tokio::test]
    async fn passes_the_shared_bus_suite() {
        let bus = MemoryBus::new();
        testing::run_suite(|i| {
            let bus = bus.as_node(&format!("node-{i}"));
            async move { Arc::new(bus) as Arc<dyn ServerEventBus> }
        })
        .await;
    }

    #[tokio::test]
    async fn passes_the_membership_suite() {
        let bus = MemoryBus::new();
        testing::run_membership_suite(
            |i| {
                let bus = bus.as_node(&format!("node-{i}"));
                async move { Arc::new(bus) as Arc<dyn ServerEventBus> }
            },
            Duration::from_millis(300),
        )
        .await;
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
