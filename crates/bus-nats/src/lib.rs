//! A [`ServerEventBus`] on NATS, in one of two modes ([`NatsMode`]).
//!
//! - [`options`]: [`NatsBusOptions`], [`NatsMode`], [`NatsAuth`] and their defaults.
//! - [`bus`][]: [`NatsBus`].
//! - [`subject`]: event subjects `<prefix>.<scope token>.<kind>`.
//! - `connection`: connecting, credentials, connection events.
//! - `jetstream`, `core`: publishing and the consumer task of each mode (JetStream's split into
//!   shards, read all or by interest).
//! - `members`: fleet membership (a watched key-value bucket, or heartbeats in core mode).
//! - `keyspace`: the [`Keyspace`](mcp_fleet_bus::Keyspace) that
//!   [`ServerEventBus::keyspace`] opens: a key-value
//!   bucket per keyspace, each record with its writer's TTL (JetStream mode only).
//!
//! # Delivery
//!
//! **JetStream** (default): publishing resolves once the stream acknowledged the message; its
//! version is the stream sequence and its epoch the stream's creation time. A consumer
//! delivers every message stored after its `subscribe` resolved, at least once and in sequence
//! order, resuming from its last sequence across reconnects, server restarts and lost or
//! stalled consumers (it watches the stream while idle). When retention (max messages, max
//! age) discarded messages it had not read, it reports
//! [`GapReason::HistoryTrimmed`](mcp_fleet_bus::GapReason::HistoryTrimmed); when the stream
//! was deleted (and recreated — by whichever node notices first, publisher or consumer), it
//! reports [`GapReason::EpochChanged`](mcp_fleet_bus::GapReason::EpochChanged) and reads the
//! new stream from its start. Several servers in the URL and `replicas=3` give a stream that
//! survives the loss of one server of a cluster.
//!
//! **Shards and interest routing** (JetStream, [`NatsBusOptions::shards`] > 1). The bus is
//! split into that many streams, each with the rules above (its own sequences, epoch, gaps):
//! an event goes to the stream of its scope, or of its URI when unscoped, or to shard 0 when it
//! is about the whole fleet ([`mcp_fleet_bus::shard`], the same hash as the Redis backend's).
//! Order then holds per scope and per URI; events are unpositioned (version 0), all but the
//! events extension's occurrences (on shard 0, keeping its sequence). With
//! [`routing`](NatsBusOptions::routing) `=interest` a node reads shard 0 and only the shards
//! its streams follow a scope or URI on: a stream's [`gain`](ServerEventBus::gain) creates the
//! consumers it needs, positioned where their streams stand, before it resolves, and its
//! [`lose`](ServerEventBus::lose) deletes those nobody needs any more. Shards, not one
//! consumer per subject: nats-server before 2.10 takes one filter subject per consumer, and
//! streams of their own keep every gap rule as it is.
//!
//! **Core** (weaker, documented contract): at-most-once. Publishing resolves once the server
//! has the message (a flush round trip), but nothing is stored: a node that is disconnected
//! or too slow misses messages, and reports [`GapReason::Reconnected`](mcp_fleet_bus::GapReason::Reconnected)
//! or [`GapReason::SlowConsumer`](mcp_fleet_bus::GapReason::SlowConsumer) instead. Versions
//! and the epoch come from the publishing process, so they increase per publisher only.
//!
//! ```no_run
//! use mcp_fleet_bus::{Change, EventKind, ServerEventBus};
//! # async fn run() -> Result<(), mcp_fleet_bus::BusError> {
//! let bus = mcp_fleet_bus_nats::connect("nats://127.0.0.1:4222", "node-a").await?;
//! let _events = bus.subscribe().await?;
//! let sent = bus.publish(Change::list(EventKind::ToolsListChanged)).await?;
//! assert!(sent.version > 0);
//! # Ok(())
//! # }
//! ```

pub mod bus;
mod connection;
mod core;
mod jetstream;
mod keyspace;
mod members;
pub mod options;
pub mod subject;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::{BusError, ServerEventBus};

pub use bus::NatsBus;
pub use options::{NatsAuth, NatsBusOptions, NatsMode};

/// Items buffered between a consumer task and its subscriber. When the subscriber is slow
/// the task stops reading: JetStream keeps the messages; core NATS drops them and the client
/// reports a slow consumer, which becomes a gap.
const CHANNEL_CAPACITY: usize = 1024;

/// Connect to `url` (`nats://host:4222`, credentials in the URL allowed; query parameters as
/// in [`NatsBusOptions::from_url`]), publishing as `node_id`.
pub async fn connect(url: &str, node_id: &str) -> Result<Arc<dyn ServerEventBus>, BusError> {
    let bus = NatsBus::connect(NatsBusOptions::from_url(url, node_id)?).await?;
    Ok(Arc::new(bus))
}

/// Any async-nats error as a [`BusError::Backend`] (the bus turns it into `Unavailable` when
/// the connection is down).
fn backend_error(err: impl std::fmt::Display) -> BusError {
    BusError::Backend(err.to_string())
}

/// `err` as the caller should see it: a [`BusError::Backend`] while the connection is not up is
/// [`BusError::Unavailable`] (retryable).
fn unavailable_when_down(client: &async_nats::Client, err: BusError) -> BusError {
    match err {
        BusError::Backend(msg) if client.connection_state() != async_nats::connection::State::Connected => {
            BusError::Unavailable(msg)
        }
        err => err,
    }
}

/// Bound `future` by `timeout`.
async fn within<T>(timeout: Duration, future: impl Future<Output = T>) -> Result<T, BusError> {
    tokio::time::timeout(timeout, future).await.map_err(|_| BusError::Timeout(timeout))
}
