//! The fleet's event bus: the [`ServerEventBus`] trait, the [`EventEnvelope`] it carries, and
//! the in-memory backend. Redis and NATS backends live in their own crates
//! (`mcp-fleet-bus-redis`, `mcp-fleet-bus-nats`) and implement the same trait.
//!
//! The bus only *sources* change events; turning them into MCP notifications (filtering,
//! subscription-id stamping, coalescing) is the server's listen router's job.
//!
//! Every item has one path: the crate root, or `redact` / `shard` / `testing` for the three
//! helper modules. Inside, by file:
//!
//! - `envelope`: [`Change`], [`EventEnvelope`] and its versioned wire encoding.
//! - `bus`: the [`ServerEventBus`] trait, its delivery contract, status and counters.
//! - `memory`: [`MemoryBus`].
//! - `keyspace`: [`Keyspace`], the fleet's shared state with expiry (records, compare-and-set,
//!   counters), and the key checks every backend applies.
//! - `dedupe`: [`DedupeWindow`], which makes duplicates harmless.
//! - `status`: [`StatusCell`], the consumer state backends share with their tasks.
//! - `backoff`: [`Backoff`], the delays of every retry loop.
//! - [`shard`]: a history split into shards — which shard an event goes to, and
//!   [`Shards`](shard::Shards), which a node reads as its streams gain and lose interest.
//! - [`redact`]: secrets out of bus URLs and whatever prints them ([`redact_url`](redact::redact_url),
//!   [`SecretUrl`](redact::SecretUrl), [`Redacted`](redact::Redacted)).
//! - `testing` (cargo feature `testing`): the behaviour suite every backend runs, a bus
//!   wrapper that injects faults, and the one wait helper every test uses.
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

mod backoff;
mod bus;
mod dedupe;
mod envelope;
mod interest;
mod keyspace;
mod memory;
pub mod redact;
pub mod shard;
mod status;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use backoff::Backoff;
pub use bus::{BoxFuture, BusCounters, BusError, BusItem, BusStatus, BusStream, GapReason, Member, ServerEventBus};
pub use dedupe::{DEFAULT_DEDUPE_WINDOW, DedupeWindow};
pub use envelope::{
    Change, DecodeError, ENVELOPE_FORMAT, EPOCH_BOUND, EventEnvelope, EventKind, SessionEvent, SessionOp, new_epoch,
    new_event_id, now_ms,
};
pub use interest::Subject;
pub use keyspace::{
    Keyspace, MAX_KEY_LEN, MAX_TTL, Record, add_to_counter, check_key, check_name, check_open, check_slot,
    parse_counter,
};
pub use memory::{DEFAULT_MEMORY_CAPACITY, MemoryBus};
pub use status::StatusCell;
