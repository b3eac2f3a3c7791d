//! A [`ServerEventBus`] on a Redis stream, for fleets that already run Redis.
//!
//! - [`options`]: [`RedisBusOptions`] and their defaults.
//! - [`bus`]: [`RedisBus`] — publishing and starting consumers.
//! - `tail`: the per-subscription task that reads the stream and reconnects.
//! - `cursor`: a consumer's position and the gap rule.
//! - `scripts`: the atomic Lua scripts (publish, baseline).
//!
//! # Delivery
//!
//! Every event is one stream entry `{v: version, e: envelope}` appended by a Lua script that
//! also increments `<stream>:version`, so versions are contiguous and follow stream order.
//! A consumer delivers every entry appended after its `subscribe` resolved, at least once,
//! in version order, resuming after its last id across reconnects. When entries it had not
//! read were trimmed away (`MAXLEN ~`, `XTRIM`, a deleted stream), it reports
//! [`GapReason::HistoryTrimmed`](mcp_fleet_bus::GapReason::HistoryTrimmed) before the next
//! event. The stream key must be written by this bus only.
//!
//! ```no_run
//! use mcp_fleet_bus::{Change, EventKind, ServerEventBus};
//! # async fn run() -> Result<(), mcp_fleet_bus::BusError> {
//! let bus = mcp_fleet_bus_redis::connect("redis://127.0.0.1:6379/0", "node-a").await?;
//! let _events = bus.subscribe().await?;
//! let sent = bus.publish(Change::list(EventKind::ToolsListChanged)).await?;
//! assert!(sent.version > 0);
//! # Ok(())
//! # }
//! ```

pub mod bus;
mod cursor;
pub mod options;
mod scripts;
mod status;
mod tail;

use std::sync::Arc;

use mcp_fleet_bus::{BusError, ServerEventBus};

pub use bus::RedisBus;
pub use options::RedisBusOptions;

/// Connect to `url` (`redis://`, `rediss://`, with user, password and db as redis-rs parses
/// them; `stream` and `maxlen` as in [`RedisBusOptions::from_url`]), publishing as `node_id`.
pub async fn connect(url: &str, node_id: &str) -> Result<Arc<dyn ServerEventBus>, BusError> {
    let bus = RedisBus::connect(RedisBusOptions::from_url(url, node_id)?).await?;
    Ok(Arc::new(bus))
}

/// Map a redis-rs error: connection trouble is [`BusError::Unavailable`] (retryable), the
/// rest [`BusError::Backend`].
pub(crate) fn to_bus_error(err: redis::RedisError) -> BusError {
    if err.is_io_error() || err.is_connection_dropped() || err.is_connection_refusal() || err.is_timeout() {
        BusError::Unavailable(err.to_string())
    } else {
        BusError::Backend(err.to_string())
    }
}
