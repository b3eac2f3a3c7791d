//! The fleet's event bus: the [`ServerEventBus`] trait, the [`EventEnvelope`] it carries, and
//! the in-memory backend. Redis and NATS backends live in their own crates
//! (`mcp-fleet-bus-redis`, `mcp-fleet-bus-nats`) and implement the same trait.
//!
//! The bus only *sources* change events; turning them into MCP notifications (filtering,
//! subscription-id stamping, coalescing) is the server's listen router's job.
//!
//! - [`envelope`]: [`Change`], [`EventEnvelope`] and its versioned wire encoding.
//! - [`bus`]: the trait, its delivery contract, status and counters.
//! - [`memory`][]: [`MemoryBus`].
//! - [`keyspace`]: [`Keyspace`], the fleet's shared state with expiry (records, compare-and-set,
//!   counters).
//! - [`dedupe`]: [`DedupeWindow`], which makes duplicates harmless.
//! - [`status`]: [`StatusCell`], the consumer state backends share with their tasks.
//! - [`backoff`]: [`Backoff`], the delays of every retry loop.
//! - [`redact`]: secrets out of bus URLs and whatever prints them ([`redact_url`](redact::redact_url),
//!   [`SecretUrl`](redact::SecretUrl), [`Redacted`](redact::Redacted)).
//!
//! ```
//! use mcp_fleet_bus::{Change, EventKind, MemoryBus, ServerEventBus};
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let bus = MemoryBus::new();
//! let mut events = bus.subscribe().await.unwrap();
//! let sent = bus.publish(Change::list(EventKind::ToolsListChanged)).await.unwrap();
//! # use futures_util::StreamExt;
//! let Some(mcp_fleet_bus::BusItem::Event(got)) = events.next().await else { panic!() };
//! assert_eq!(got.event_id, sent.event_id);
//! # });
//! ```

pub mod backoff;
pub mod bus;
pub mod dedupe;
pub mod envelope;
pub mod keyspace;
pub mod memory;
pub mod redact;
pub mod status;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use backoff::Backoff;
pub use bus::{BoxFuture, BusCounters, BusError, BusItem, BusStatus, BusStream, GapReason, Member, ServerEventBus};
pub use dedupe::DedupeWindow;
pub use envelope::{Change, EventEnvelope, EventKind};
pub use keyspace::{Keyspace, Record};
pub use memory::MemoryBus;
pub use status::StatusCell;
