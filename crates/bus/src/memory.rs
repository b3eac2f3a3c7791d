//! The in-memory bus: the embedded default for a single node (and for tests).
//!
//! Versions come from a counter; fan-out uses a bounded `tokio::sync::broadcast` channel whose
//! capacity is the most events a slow consumer may fall behind by. A consumer that lags past
//! it gets a [`GapReason::Lagged`] instead of silently missing events.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::stream;
use tokio::sync::broadcast;

use crate::bus::{BoxFuture, BusCounters, BusError, BusItem, BusStatus, BusStream, GapReason, ServerEventBus};
use crate::envelope::{Change, EventEnvelope};

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
    sender: broadcast::Sender<EventEnvelope>,
    next_version: AtomicU64,
    counters: Arc<BusCounters>,
}

impl MemoryBus {
    /// A bus with the default capacity.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_MEMORY_CAPACITY)
    }

    /// A bus whose consumers may lag `capacity` events before a gap is reported.
    pub fn with_capacity(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity.max(1));
        let inner = Inner { sender, next_version: AtomicU64::new(1), counters: Arc::default() };
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
    fn publish(&self, change: Change) -> BoxFuture<'_, Result<EventEnvelope, BusError>> {
        let mut env = EventEnvelope::new(change, &self.node_id);
        env.version = self.inner.next_version.fetch_add(1, Ordering::Relaxed);
        // No receiver yet is fine: nobody is listening, nothing is lost.
        let _ = self.inner.sender.send(env.clone());
        BusCounters::bump(&self.inner.counters.published);
        Box::pin(async move { Ok(env) })
    }

    fn subscribe(&self) -> BoxFuture<'_, Result<BusStream, BusError>> {
        let receiver = self.inner.sender.subscribe();
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
    async fn a_lagging_consumer_gets_a_gap() {
        use futures_util::StreamExt;
        let bus = MemoryBus::with_capacity(2);
        let mut stream = bus.subscribe().await.unwrap();
        for _ in 0..5 {
            bus.publish(Change::list(crate::EventKind::ToolsListChanged)).await.unwrap();
        }
        assert_eq!(stream.next().await, Some(BusItem::Gap(GapReason::Lagged(3))));
        assert!(matches!(stream.next().await, Some(BusItem::Event(_))));
    }
}
