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
//! - **Rollbacks.** A stream can lose its tail but keep its creation time (a restored volume
//!   snapshot, `nats stream restore`, a crash before fsync): acknowledged events are gone and
//!   their sequences are reused. The publisher keeps the newest event acknowledged to it (its
//!   sequence and id); when a sequence at or below it comes back, and at the first ack after
//!   the client reconnected (a rollback needs a server restart), it reads the stream: one
//!   that ends before that sequence, or holds another event there, was rolled back. A rollback
//!   is counted in a cell the consumers share, and each reports a gap: a consumer that never
//!   read past the restored end has no other sign of it (one that had detects it itself).
//!   The consumers do not wait for this publisher's next publish: each time they read the
//!   stream's state they compare its end with the newest event acknowledged here (the cell
//!   [`Publisher::tip`]), and a stream ending before it is a gap at once.
//!   Two acks that merely crossed, or a reconnect that lost nothing, read the stream once and
//!   count nothing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::{Context, publish::PublishAck};
use mcp_fleet_bus::{BusError, EventEnvelope};

use super::stream::{holds_another, relocate};
use crate::options::NatsBusOptions;
use crate::subject::subject_for;
use crate::{backend_error, within};

/// Publishes events and keeps the epoch they are stamped with.
pub(crate) struct Publisher {
    js: Context,
    options: Arc<NatsBusOptions>,
    /// The stream's epoch as last seen by this bus (shared with its consumers).
    epoch: Arc<AtomicU64>,
    client: async_nats::Client,
    /// The newest event acknowledged to this publisher in the current epoch (shared with the
    /// consumers, which compare it with the stream's end). A std mutex: replaced whole, never
    /// held across `.await`.
    tip: Arc<Mutex<Tip>>,
    /// Rollbacks of the stream found so far (shared with the consumers, which report each as a
    /// gap).
    rollbacks: Arc<AtomicU64>,
}

impl Publisher {
    /// A publisher starting at `epoch` (read when the bus connected).
    pub(crate) fn new(js: Context, options: Arc<NatsBusOptions>, epoch: Arc<AtomicU64>) -> Self {
        let client = js.client();
        Publisher { js, options, epoch, client, tip: Arc::default(), rollbacks: Arc::default() }
    }

    /// The cell holding the newest event acknowledged to this publisher, for the consumers.
    pub(crate) fn tip(&self) -> Arc<Mutex<Tip>> {
        self.tip.clone()
    }

    /// The cell counting rollbacks of the stream, for the consumers.
    pub(crate) fn rollbacks(&self) -> Arc<AtomicU64> {
        self.rollbacks.clone()
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
        let mut newest = Tip {
            epoch: self.epoch.load(Ordering::SeqCst),
            sequence: ack.sequence,
            event_id: env.event_id.clone(),
            connects: self.client.statistics().connects.load(Ordering::Relaxed),
        };
        let (previous, suspect) = {
            let mut tip = self.lock_tip();
            let previous = tip.clone();
            let went_back = newest.sequence <= previous.sequence && !ack.duplicate;
            let reconnected = previous.sequence > 0 && previous.connects != newest.connects;
            if !went_back && !reconnected && newest.sequence > previous.sequence {
                *tip = newest.clone();
            }
            (previous, went_back || reconnected)
        };
        if suspect {
            // The stream was recreated, or rolled back, or two acks crossed, or the client
            // merely reconnected. Learn which, and start counting anew.
            self.check_stream(&previous).await;
            newest.epoch = self.epoch.load(Ordering::SeqCst);
            *self.lock_tip() = newest;
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
        *self.lock_tip() = Tip::default();
        Ok(())
    }

    /// Read the stream's epoch again (a failure keeps the cached one: the next publish
    /// retries), and in the same epoch count a rollback when the stream lost `tip`.
    ///
    /// A `tip` of another epoch is no rollback: its stream was replaced, which whoever found it
    /// reported as a gap (a consumer that re-created the stream also set the shared epoch this
    /// publisher reads, so the epochs below may already agree).
    async fn check_stream(&self, tip: &Tip) {
        let state = match relocate(&self.js, &self.options).await {
            Ok((state, _)) => state,
            Err(err) => return tracing::warn!(error = %err, "nats bus: could not re-read the stream's epoch"),
        };
        if state.epoch != self.epoch.load(Ordering::SeqCst) {
            return self.adopt(state.epoch);
        }
        if tip.epoch != state.epoch {
            return;
        }
        if state.last_sequence < tip.sequence
            || holds_another(&self.js, &self.options, tip.sequence, &tip.event_id).await
        {
            tracing::warn!(stream = %self.options.stream_name, acknowledged = tip.sequence, end = state.last_sequence, "nats bus: the stream was rolled back within its epoch; acknowledged events are lost");
            self.rollbacks.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn lock_tip(&self) -> std::sync::MutexGuard<'_, Tip> {
        // Replaced whole; a panic cannot leave it half-written.
        self.tip.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn adopt(&self, epoch: u64) {
        self.epoch.store(epoch, Ordering::SeqCst);
    }
}

/// The newest event acknowledged to the publisher.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tip {
    /// The epoch the publisher stamped it with.
    pub(crate) epoch: u64,
    /// Its stream sequence (0: none yet in this epoch).
    pub(crate) sequence: u64,
    /// Its event id (its `Nats-Msg-Id`).
    pub(crate) event_id: String,
    /// The client's connection count when it was acknowledged.
    connects: u64,
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
