//! Publishing in JetStream mode: the version is the stream sequence the stream acknowledged,
//! the epoch the stream's creation time.
//!
//! - Each message carries `Nats-Msg-Id: <event id>`, so a publish retried after a lost ack is
//!   stored once (within the stream's duplicate window) and acknowledged with the first
//!   sequence; beyond the window the consumers' dedupe drops the copy.
//! - When no stream captures the subject (deleted by an operator, lost with a single-replica
//!   volume), the publisher recreates it and publishes again: publishing recovers by itself,
//!   on whichever node publishes first.
//! - The epoch is cached; it is read again when this publisher created the stream, when a
//!   sequence lower than one it saw before comes back (the stream restarted at 1), and when
//!   the consumer of this bus found a new one (they share the cell). A recreation by another
//!   node between two publishes of this one, with the new stream already past this
//!   publisher's highest sequence, is seen a watch interval later (when the consumer notices);
//!   until then the returned epoch is the old one — the consumers, which report the gap, are
//!   never wrong about it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::{Context, publish::PublishAck};
use mcp_fleet_bus::{BusError, EventEnvelope};

use super::stream::relocate;
use crate::options::NatsBusOptions;
use crate::subject::subject_for;
use crate::{backend_error, within};

/// Publishes events and keeps the epoch they are stamped with.
pub(crate) struct Publisher {
    js: Context,
    options: Arc<NatsBusOptions>,
    /// The stream's epoch as last seen by this bus (shared with its consumers).
    epoch: Arc<AtomicU64>,
    /// The highest sequence acknowledged to this publisher in the current epoch.
    highest: AtomicU64,
}

impl Publisher {
    /// A publisher starting at `epoch` (read when the bus connected).
    pub(crate) fn new(js: Context, options: Arc<NatsBusOptions>, epoch: Arc<AtomicU64>) -> Self {
        Publisher { js, options, epoch, highest: AtomicU64::new(0) }
    }

    /// Publish `env`; resolves with its epoch and version once the stream acknowledged it.
    pub(crate) async fn publish(&self, mut env: EventEnvelope) -> Result<EventEnvelope, BusError> {
        let subject = subject_for(&self.options.subject_prefix, &env.change());
        let payload = bytes::Bytes::from(env.encode());
        let ack = match self.send(&subject, &env.event_id, payload.clone()).await {
            Err(SendError::NoStream) => {
                self.recreate_stream().await?;
                self.send(&subject, &env.event_id, payload).await.map_err(SendError::into_bus_error)?
            }
            other => other.map_err(SendError::into_bus_error)?,
        };
        let previous = self.highest.fetch_max(ack.sequence, Ordering::SeqCst);
        if ack.sequence <= previous && !ack.duplicate {
            // A new message at or below a sequence seen before: the stream was recreated.
            // Learn its epoch and start counting anew.
            self.refresh_epoch().await;
            self.highest.store(ack.sequence, Ordering::SeqCst);
        }
        env.epoch = self.epoch.load(Ordering::SeqCst);
        env.version = ack.sequence;
        Ok(env)
    }

    async fn send(&self, subject: &str, event_id: &str, payload: bytes::Bytes) -> Result<PublishAck, SendError> {
        let publish = async {
            let message = PublishMessage::build().message_id(event_id).payload(payload);
            let ack = self.js.send_publish(subject.to_owned(), message).await.map_err(SendError::from_publish)?;
            ack.await.map_err(SendError::from_publish)
        };
        within(self.options.publish_timeout, publish).await.map_err(SendError::Bus)?
    }

    /// Create the missing stream and adopt its (new) epoch.
    async fn recreate_stream(&self) -> Result<(), BusError> {
        let (state, _) = relocate(&self.js, &self.options).await?;
        self.adopt(state.epoch);
        self.highest.store(0, Ordering::SeqCst);
        Ok(())
    }

    /// Read the stream's epoch again (a failure keeps the cached one: the next publish retries).
    async fn refresh_epoch(&self) {
        match relocate(&self.js, &self.options).await {
            Ok((state, _)) => self.adopt(state.epoch),
            Err(err) => tracing::warn!(error = %err, "nats bus: could not re-read the stream's epoch"),
        }
    }

    fn adopt(&self, epoch: u64) {
        self.epoch.store(epoch, Ordering::SeqCst);
    }
}

/// Why one publish attempt failed.
enum SendError {
    /// No stream captures the subject.
    NoStream,
    /// Anything else.
    Bus(BusError),
}

impl SendError {
    fn from_publish(err: async_nats::jetstream::context::PublishError) -> SendError {
        match err.kind() {
            PublishErrorKind::StreamNotFound => SendError::NoStream,
            _ => SendError::Bus(backend_error(err)),
        }
    }

    fn into_bus_error(self) -> BusError {
        match self {
            SendError::NoStream => BusError::Backend("no jetstream stream captures the event subjects".into()),
            SendError::Bus(err) => err,
        }
    }
}
