//! [`EndableBus`]: a real bus whose subscription streams a test can end, or make panic while
//! the server's consumer polls them — the "consumer forced to end" fault. Everything else is
//! the wrapped backend's.

use std::sync::Arc;

use futures_util::StreamExt;
use mcp_fleet_bus::{BoxFuture, BusCounters, BusError, BusStatus, BusStream, EventEnvelope, ServerEventBus};
use tokio::sync::watch;

/// How a forced end happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The stream ends (`None`).
    End,
    /// Polling the stream panics, killing the task that polls it.
    Panic,
}

/// A bus wrapping another, whose current subscription streams end on [`EndableBus::force`].
pub struct EndableBus {
    inner: Arc<dyn ServerEventBus>,
    trigger: watch::Sender<Option<(u64, Ending)>>,
}

impl EndableBus {
    /// Wrap `inner`.
    pub fn new(inner: Arc<dyn ServerEventBus>) -> Arc<EndableBus> {
        Arc::new(EndableBus { inner, trigger: watch::channel(None).0 })
    }

    /// End every subscription stream opened so far, the way `ending` says.
    pub fn force(&self, ending: Ending) {
        self.trigger.send_modify(|t| {
            let generation = t.map_or(1, |(g, _)| g + 1);
            *t = Some((generation, ending));
        });
    }
}

impl ServerEventBus for EndableBus {
    fn publish_event(&self, event: EventEnvelope) -> BoxFuture<'_, Result<EventEnvelope, BusError>> {
        self.inner.publish_event(event)
    }

    fn subscribe(&self) -> BoxFuture<'_, Result<BusStream, BusError>> {
        Box::pin(async move {
            let mut trigger = self.trigger.subscribe();
            trigger.mark_unchanged();
            let inner = self.inner.subscribe().await?;
            let stream = futures_util::stream::unfold((inner, trigger), |(mut inner, mut trigger)| async move {
                tokio::select! {
                    item = inner.next() => item.map(|item| (item, (inner, trigger))),
                    _ = trigger.changed() => match *trigger.borrow() {
                        Some((_, Ending::Panic)) => panic!("forced consumer panic (fault test)"),
                        _ => None,
                    },
                }
            });
            Ok(Box::pin(stream) as BusStream)
        })
    }

    fn status(&self) -> BusStatus {
        self.inner.status()
    }

    fn node_id(&self) -> &str {
        self.inner.node_id()
    }

    fn counters(&self) -> Arc<BusCounters> {
        self.inner.counters()
    }

    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
}
