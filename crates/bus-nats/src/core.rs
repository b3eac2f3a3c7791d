//! Core NATS mode: plain publish/subscribe, at-most-once.
//!
//! Nothing is stored, so nothing can be replayed: messages published while a node is
//! disconnected, or dropped because it was too slow, are lost. The task reports both as
//! gaps — [`GapReason::Reconnected`] after every reconnect, [`GapReason::SlowConsumer`] when
//! the client reports dropped messages — so the node invalidates conservatively.
//! Publishing and subscribing end with a round trip to the server (see `round_trip`), so a
//! publish that resolved after a subscribe resolved reaches that subscriber unless a gap is reported.
//! Epoch and versions belong to the publishing process: a random epoch chosen when the bus
//! connects and a counter, so versions increase within that epoch (per publisher) and are not
//! comparable across publishers.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::StreamExt;
use mcp_fleet_bus::{BusCounters, BusError, BusItem, BusStream, EventEnvelope, GapReason};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use crate::connection::ConnEvent;
use crate::options::NatsBusOptions;
use crate::subject::subject_for;
use crate::{CHANNEL_CAPACITY, backend_error, within};

/// Subject of the round-trip probe. Nobody answers it; the server's "no responders" reply
/// (nats-server 2.2+, headers on — the default) proves it processed everything this
/// connection sent before. `flush` alone only proves the bytes left this process.
const ROUND_TRIP_SUBJECT: &str = "_MCP_FLEET.round-trip";

/// Wait until the server has processed everything sent on this connection so far.
async fn round_trip(client: &async_nats::Client) -> Result<(), BusError> {
    match client.request(ROUND_TRIP_SUBJECT, Default::default()).await {
        Ok(_) => Ok(()),
        Err(err) if err.kind() == async_nats::RequestErrorKind::NoResponders => Ok(()),
        Err(err) => Err(backend_error(err)),
    }
}

/// Publish, then make a round trip, so the server has routed the message when this returns.
pub(crate) async fn publish(
    client: &async_nats::Client,
    options: &NatsBusOptions,
    epoch: u64,
    next_version: &AtomicU64,
    mut env: EventEnvelope,
) -> Result<EventEnvelope, BusError> {
    let subject = subject_for(&options.subject_prefix, &env.change());
    env.epoch = epoch;
    env.version = next_version.fetch_add(1, Ordering::Relaxed);
    let send = async {
        client.publish(subject, env.encode().into()).await.map_err(backend_error)?;
        round_trip(client).await
    };
    within(options.publish_timeout, send).await??;
    Ok(env)
}

/// Subscribe, then make a round trip, so the server has registered the interest when this
/// returns.
pub(crate) async fn subscribe(
    client: async_nats::Client,
    options: Arc<NatsBusOptions>,
    counters: Arc<BusCounters>,
    events: broadcast::Receiver<ConnEvent>,
) -> Result<BusStream, BusError> {
    let open = async {
        let subscriber = client.subscribe(options.subject_filter()).await.map_err(backend_error)?;
        round_trip(&client).await?;
        Ok::<_, BusError>(subscriber)
    };
    let subscriber = within(options.publish_timeout, open).await??;
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    let tail = CoreTail { tx, counters };
    tokio::spawn(tail.run(subscriber, events));
    Ok(Box::pin(ReceiverStream::new(rx)))
}

/// One core subscription's task; dropping its `Subscriber` unsubscribes.
struct CoreTail {
    tx: mpsc::Sender<BusItem>,
    counters: Arc<BusCounters>,
}

impl CoreTail {
    async fn run(self, mut subscriber: async_nats::Subscriber, mut events: broadcast::Receiver<ConnEvent>) {
        loop {
            let item = tokio::select! {
                _ = self.tx.closed() => return,
                message = subscriber.next() => match message {
                    Some(message) => self.decode(&message.payload),
                    None => return, // the client was closed
                },
                event = events.recv() => match event {
                    Ok(ConnEvent::Reconnected) => Some(self.gap(GapReason::Reconnected)),
                    Ok(ConnEvent::SlowConsumer) => Some(self.gap(GapReason::SlowConsumer)),
                    Err(broadcast::error::RecvError::Lagged(_)) => Some(self.gap(GapReason::Reconnected)),
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            };
            if let Some(item) = item
                && self.tx.send(item).await.is_err()
            {
                return;
            }
        }
    }

    fn decode(&self, payload: &[u8]) -> Option<BusItem> {
        match EventEnvelope::decode(payload) {
            Ok(env) => {
                BusCounters::bump(&self.counters.received);
                Some(BusItem::Event(env))
            }
            Err(err) => {
                BusCounters::bump(&self.counters.undecodable);
                tracing::warn!(error = %err, "nats bus: skipping undecodable message");
                None
            }
        }
    }

    fn gap(&self, reason: GapReason) -> BusItem {
        BusCounters::bump(&self.counters.gaps);
        BusItem::Gap(reason)
    }
}
