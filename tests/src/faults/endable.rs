//! [`EndableBus`]: a real bus whose subscription streams a test can end, or make panic while
//! the server's consumer polls them — the "consumer forced to end" fault (built on the bus
//! crate's [`WrappedBus`]).

use std::sync::Arc;

use futures_util::StreamExt;
use mcp_fleet_bus::testing::WrappedBus;
use mcp_fleet_bus::{BusStream, ServerEventBus};
use tokio::sync::watch;

/// How a forced end happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The stream ends (`None`).
    End,
    /// Polling the stream panics, killing the task that polls it.
    Panic,
}

/// The switch that ends an [`EndableBus`]'s current streams.
pub struct EndableBus {
    trigger: watch::Sender<Option<(u64, Ending)>>,
}

impl EndableBus {
    /// Wrap `inner`: the bus to hand to a node, and the switch.
    pub fn new(inner: Arc<dyn ServerEventBus>) -> (Arc<dyn ServerEventBus>, Arc<EndableBus>) {
        let trigger = watch::channel(None).0;
        let switch = Arc::new(EndableBus { trigger: trigger.clone() });
        let bus = WrappedBus::new(inner).mapping_streams(move |stream| endable(stream, trigger.subscribe()));
        (Arc::new(bus), switch)
    }

    /// End every subscription stream opened so far, the way `ending` says.
    pub fn force(&self, ending: Ending) {
        self.trigger.send_modify(|t| {
            let generation = t.map_or(1, |(g, _)| g + 1);
            *t = Some((generation, ending));
        });
    }
}

/// `stream`, until the trigger fires after this point.
fn endable(stream: BusStream, mut trigger: watch::Receiver<Option<(u64, Ending)>>) -> BusStream {
    trigger.mark_unchanged();
    let stream = futures_util::stream::unfold((stream, trigger), |(mut inner, mut trigger)| async move {
        tokio::select! {
            item = inner.next() => item.map(|item| (item, (inner, trigger))),
            _ = trigger.changed() => match *trigger.borrow() {
                Some((_, Ending::Panic)) => panic!("forced consumer panic (fault test)"),
                _ => None,
            },
        }
    });
    Box::pin(stream)
}
