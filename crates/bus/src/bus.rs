//! The [`ServerEventBus`] contract that every backend (memory, Redis, NATS) implements.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_core::Stream;

use crate::envelope::{Change, EventEnvelope};
use crate::interest::Subject;
use crate::keyspace::Keyspace;

/// A boxed, sendable future (the trait is used as `Arc<dyn ServerEventBus>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The stream of items one node receives from the bus.
pub type BusStream = Pin<Box<dyn Stream<Item = BusItem> + Send>>;

/// One item from the bus.
#[derive(Debug, Clone, PartialEq)]
pub enum BusItem {
    /// A change event.
    Event(EventEnvelope),
    /// Events may have been lost (trimmed history, long outage, slow consumer). The consumer
    /// must invalidate conservatively: notify every local subscription of everything it follows.
    Gap(GapReason),
}

/// Why a gap was reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GapReason {
    /// The position to resume from is no longer retained by the broker.
    HistoryTrimmed,
    /// The broker's history was lost and a new epoch began: a restart without persistence, a
    /// failover to a replica that had not caught up, a stream deleted and recreated.
    EpochChanged,
    /// The consumer stopped (its stream ended or its task died) and was started again; what
    /// was published meanwhile may not have been seen.
    ConsumerRestarted,
    /// The node lagged behind a bounded buffer and skipped `n` events.
    Lagged(u64),
    /// The connection was lost and resumption could not prove nothing was missed.
    Reconnected,
    /// The broker reported a slow consumer (messages dropped).
    SlowConsumer,
    /// The broker holds the missed events but repeatedly failed to deliver them (a damaged
    /// store); the consumer skipped past them.
    Unreadable,
}

/// Errors of bus operations.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BusError {
    /// The broker cannot be reached right now; the caller may retry.
    #[error("event bus unavailable: {0}")]
    Unavailable(String),
    /// The URL or options are invalid.
    #[error("invalid event bus configuration: {0}")]
    Config(String),
    /// The broker refused or failed the operation.
    #[error("event bus operation failed: {0}")]
    Backend(String),
    /// An operation (a publish, a keyspace call) did not complete in time.
    #[error("event bus operation timed out after {0:?}")]
    Timeout(std::time::Duration),
}

/// State of a backend's *consumer*, as reported by [`ServerEventBus::status`]: whether events
/// published now would reach this node. Publishing has its own answer — each publish succeeds
/// or fails — and is not part of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BusStatus {
    /// Connected and consuming.
    Connected,
    /// The consumer lost its connection (or found its subscription stalled) and is
    /// re-establishing it; events published meanwhile arrive on resumption, or a gap is
    /// reported.
    Reconnecting {
        /// Last error seen.
        last_error: String,
    },
    /// Shut down.
    Closed,
}

impl BusStatus {
    /// Whether the bus is connected.
    pub fn is_connected(&self) -> bool {
        matches!(self, BusStatus::Connected)
    }
}

/// Counters a backend keeps; the server exports them as metrics.
#[derive(Debug, Default)]
pub struct BusCounters {
    /// Events published through this node.
    pub published: AtomicU64,
    /// Events received from the broker.
    pub received: AtomicU64,
    /// Payloads that could not be decoded (logged and skipped).
    pub undecodable: AtomicU64,
    /// Gaps reported (each triggers a conservative invalidation).
    pub gaps: AtomicU64,
    /// Reconnections to the broker.
    pub reconnects: AtomicU64,
    /// Consumers re-created because they stalled or failed while the connection was up (a
    /// broker restart, a lost consumer), each resuming after the last delivered event.
    pub consumer_restarts: AtomicU64,
}

impl BusCounters {
    /// Increment one counter.
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// One live entry of the fleet's membership (see [`ServerEventBus::announce`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The node that announced it.
    pub node_id: String,
    /// What it announced (opaque to the bus; the server puts its catalog revisions there).
    pub payload: String,
    /// How long until it expires unless announced again.
    pub expires_in: std::time::Duration,
}

/// A fleet-wide channel of change events.
///
/// Contract every backend keeps:
/// - **Delivery**: at-least-once to every node whose [`subscribe`](Self::subscribe) future has
///   resolved, for every event whose [`publish`](Self::publish) future resolved `Ok` afterwards —
///   or, when that cannot be guaranteed (trimmed history, lost history, a long outage), a
///   [`BusItem::Gap`] delivered after the loss. Never silence: a broker restart, a failover or
///   a lost stream ends in delivery or in a gap. A backend may document a weaker mode (NATS
///   core) explicitly.
/// - **Duplicates** share an `event_id` and are harmless: consumers drop them with a
///   [`DedupeWindow`](crate::DedupeWindow) and coalesce per subscription.
/// - **Ordering**: events carry `(epoch, version)` (see [`EventEnvelope`](crate::EventEnvelope)); a node receives
///   the events of one epoch in version order, and reports a gap before the first event of a
///   new epoch.
///   A backend split into independent streams (Redis with `shards > 1`) has no single order:
///   its events carry version 0 (*unpositioned*, which consumers never replay by position),
///   keep their order per scope or URI, and [`position`](Self::position) answers `None` — all
///   but the events extension's occurrences, which travel on the first shard and keep its
///   position ([`occurrence_position`](Self::occurrence_position)).
/// - **Publishing** resolves once the broker accepted the event, with its assigned epoch and
///   version; it fails with [`BusError`] (never hangs forever) while the broker is unreachable.
/// - **Status** is the consumer's: [`BusStatus::Connected`] means events published now reach
///   this node.
pub trait ServerEventBus: Send + Sync + 'static {
    /// Publish `event` (built with [`EventEnvelope::new`], so its id is chosen by the caller:
    /// a node can deliver locally first and recognise the bus's copy as a duplicate); resolves
    /// with the envelope as the fleet will see it, epoch and version assigned.
    fn publish_event(&self, event: EventEnvelope) -> BoxFuture<'_, Result<EventEnvelope, BusError>>;

    /// Publish a change as a new event from this node.
    fn publish(&self, change: Change) -> BoxFuture<'_, Result<EventEnvelope, BusError>> {
        self.publish_event(EventEnvelope::new(change, self.node_id()))
    }

    /// Start consuming; resolves once the node is registered with the broker, so every event
    /// published after it resolves is delivered (or a gap reported). The stream ends only when
    /// the bus is closed; the server restarts a consumer whose stream ends anyway.
    fn subscribe(&self) -> BoxFuture<'_, Result<BusStream, BusError>>;

    /// Current state of this bus's consumer.
    fn status(&self) -> BusStatus;

    /// A stream of this node now follows `subjects`: resolves once every event published from
    /// then on that one of them [matches](Subject::matches) reaches every subscription of this
    /// bus. Counted: each `gain` is undone by one [`lose`](Self::lose) of the same subjects.
    ///
    /// A backend that **routes by interest** consumes fleet-wide events always and a routed
    /// one only while some gained subject matches it (it may take more: it routes by shard).
    /// The default consumes everything, so it has nothing to do.
    fn gain(&self, subjects: &[Subject]) -> BoxFuture<'_, Result<(), BusError>> {
        let _ = subjects;
        Box::pin(async { Ok(()) })
    }

    /// Whether this bus routes by interest (see [`gain`](Self::gain)): when it does not, a
    /// node need not tell it anything.
    fn routes_by_interest(&self) -> bool {
        false
    }

    /// Undo one [`gain`](Self::gain) of `subjects` (the stream closed). Never blocks: a
    /// backend stops reading what nobody follows any more in the background.
    fn lose(&self, subjects: &[Subject]) {
        let _ = subjects;
    }

    /// Where the bus's history stands: the `(epoch, version)` of the newest event published,
    /// `(epoch, 0)` before any. A node whose [`subscribe`](Self::subscribe) resolved before
    /// asking hears every event after it, so it can name a position before it heard anything.
    /// `None` when the backend cannot tell (the default).
    fn position(&self) -> BoxFuture<'_, Result<Option<(u64, u64)>, BusError>> {
        Box::pin(async { Ok(None) })
    }

    /// [`position`](Self::position) of the events extension's occurrences
    /// ([`EventKind::Occurred`](crate::EventKind::Occurred)): they all travel on the first
    /// shard, so a bus split into shards, which names no position for its other events, still
    /// names theirs (and its consumers hand them over with that shard's version). The default
    /// is [`position`](Self::position).
    fn occurrence_position(&self) -> BoxFuture<'_, Result<Option<(u64, u64)>, BusError>> {
        self.position()
    }

    /// Announce this node as a member of the fleet with `payload`, replacing its previous
    /// announcement; it expires after `ttl` unless announced again (a heartbeat). Every node of
    /// the fleet sees it in [`members`](Self::members). Backends: a map (memory), a hash with
    /// server-clock expiry (Redis), a key-value bucket with a TTL (NATS JetStream) or heartbeats
    /// on a subject (NATS core). Every node must use the same `ttl`.
    fn announce(&self, payload: String, ttl: std::time::Duration) -> BoxFuture<'_, Result<(), BusError>>;

    /// Every live member, this node included.
    fn members(&self) -> BoxFuture<'_, Result<Vec<Member>, BusError>>;

    /// Withdraw this node's announcement (a graceful leave: others need not wait for its TTL).
    fn leave(&self) -> BoxFuture<'_, Result<(), BusError>>;

    /// Open the keyspace `name` with `ttl` on this bus's broker (see [`Keyspace`](crate::Keyspace) for
    /// the contract): the fleet's shared state with expiry. Every node opening the same name
    /// shares its records; every node must give the same `ttl`.
    fn keyspace(&self, name: &str, ttl: std::time::Duration) -> BoxFuture<'_, Result<Arc<dyn Keyspace>, BusError>>;

    /// This node's id (the `origin` of events it publishes).
    fn node_id(&self) -> &str;

    /// The backend's counters.
    fn counters(&self) -> Arc<BusCounters>;

    /// A short backend name for logs and metrics (`memory`, `redis`, `nats`).
    fn backend(&self) -> &'static str;
}
