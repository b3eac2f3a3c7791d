//! A [`ServerEventBus`] on a Redis stream, for fleets that already run Redis.
//!
//! - [`options`]: [`RedisBusOptions`], [`RedisEndpoint`] (one server, Sentinel or a Cluster)
//!   and their defaults; `url` reads them from a URL.
//! - [`bus`]: [`RedisBus`] — publishing and starting consumers.
//! - `endpoint`: finding the current primary (directly, or by asking Sentinel), or the cluster;
//!   the connection both kinds share.
//! - `follow`: how one shard is tailed, for the bus crate's
//!   [`Shards`](mcp_fleet_bus::shard::Shards) — which decides which shards each subscription
//!   tails, started and stopped as streams come and go (interest routing), and which event
//!   stream an event goes to when the bus is split ([`mcp_fleet_bus::shard`]).
//! - `publisher`: the publishing connection, reconnected when a failure calls for it.
//! - `tail`: the per-subscription task that reads the stream, reconnects and notices lost history.
//! - `cursor`: a consumer's position and the gap rules.
//! - `scripts`: the atomic Lua scripts (publish, baseline, membership, keyspace writes) and the
//!   epoch rules.
//! - `keyspace`: the [`Keyspace`](mcp_fleet_bus::Keyspace) that
//!   [`ServerEventBus::keyspace`] opens: hashes with
//!   `PEXPIRE`, written by Lua scripts.
//!
//! # Delivery
//!
//! Every event is one stream entry `{v: version, ep: epoch, e: envelope}` appended by a Lua
//! script that also settles the epoch and increments the version counter, so within an epoch
//! versions are contiguous and follow stream order. A consumer delivers every entry appended
//! after its `subscribe` resolved, at least once, in version order, resuming after its last id
//! across reconnects. It reports a gap before the next event when entries it had not read are
//! gone: trimmed away (`MAXLEN ~`, `XTRIM`:
//! [`GapReason::HistoryTrimmed`](mcp_fleet_bus::GapReason::HistoryTrimmed)), or lost with the
//! server's data — a restart without persistence, a failover to a replica that had not caught
//! up, deleted keys: a new epoch,
//! [`GapReason::EpochChanged`](mcp_fleet_bus::GapReason::EpochChanged)). A consumer notices a
//! lost history right after reconnecting, or within the block time when idle. The stream key
//! must be written by this bus only; its counter and epoch keys share its hash slot, so
//! cluster-mode Redis holds all three on one shard.
//!
//! # Redis Cluster and shards
//!
//! `redis+cluster://h1:7000,h2:7001` connects through redis-rs's cluster client, which follows
//! `MOVED`, `ASK` and failovers. The bus splits its events over
//! [`shards`](RedisBusOptions::shards) streams (8 by default on a cluster), each with a hash tag
//! of its own and its own counter and epoch, so the masters share the load. An event goes to its
//! scope's shard, or its URI's, or shard 0 when it is about the whole fleet (see [`mcp_fleet_bus::shard`]); every
//! node tails every shard on its own connection. Each shard keeps the rules above — a failover
//! of the master holding it or a slot migration starts a new epoch there (the promoted or
//! receiving server has another replication id), which is a gap, never silence. What a split
//! bus gives up is one order for everything: order holds per scope or URI, its events carry
//! version 0 (unpositioned; the events extension's occurrences, all on shard 0, keep its
//! position) and [`ServerEventBus::position`] answers `None`, so a 2025 client
//! resuming with `Last-Event-ID` is answered by the gap rule (refresh what you follow) instead of
//! a replay. Membership and keyspaces stay at the unsharded stream key's slot.
//!
//! With [`routing`](RedisBusOptions::routing) `=interest` a node tails shard 0 and only the
//! shards its streams follow a scope or URI on (`follow`): a stream's
//! [`gain`](ServerEventBus::gain) starts the tails it needs from where their streams stand
//! before it resolves, its [`lose`](ServerEventBus::lose) stops those nobody needs any more.
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
mod endpoint;
mod follow;
mod keyspace;
pub mod options;
mod publisher;
mod scripts;
mod tail;
mod url;

use std::sync::Arc;

use mcp_fleet_bus::{BusError, ServerEventBus};

pub use bus::RedisBus;
pub use options::{RedisBusOptions, RedisEndpoint};

/// Connect to `url` (`redis://`, `rediss://`, with user, password and db as redis-rs parses
/// them, `redis+sentinel://…/MASTER_NAME` or `redis+cluster://h1:p1,h2:p2`; parameters as in
/// [`RedisBusOptions::from_url`]), publishing as `node_id`.
pub async fn connect(url: &str, node_id: &str) -> Result<Arc<dyn ServerEventBus>, BusError> {
    let bus = RedisBus::connect(RedisBusOptions::from_url(url, node_id)?).await?;
    Ok(Arc::new(bus))
}

/// Map a redis-rs error: trouble a reconnect can fix is [`BusError::Unavailable`] (retryable),
/// the rest [`BusError::Backend`].
pub(crate) fn to_bus_error(err: redis::RedisError) -> BusError {
    if is_reconnect_worthy(&err) { BusError::Unavailable(err.to_string()) } else { BusError::Backend(err.to_string()) }
}

/// Server error codes that mean "not the primary now, or not ready yet": after a failover the
/// old primary answers `READONLY`, a restarting one `LOADING`.
const RECONNECT_CODES: [&str; 5] = ["READONLY", "LOADING", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN"];

/// Whether a fresh connection (to the primary the endpoint names now) may succeed where this
/// one failed.
pub(crate) fn is_reconnect_worthy(err: &redis::RedisError) -> bool {
    err.is_io_error()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.is_timeout()
        || matches!(err.kind(), redis::ErrorKind::MasterNameNotFoundBySentinel)
        || err.code().is_some_and(|code| RECONNECT_CODES.contains(&code))
}
