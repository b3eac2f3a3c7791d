//! Shards: a backend's event history split into several streams (Redis stream keys, JetStream
//! streams), so a broker spreads the bus over its primaries and a node reads only what its
//! streams follow. Two parts, shared by every sharded backend so all agree:
//!
//! - which shard an event goes to ([`shards_for`], [`shard_of`]) and which shards a
//!   [`Subject`] is read from ([`shards_of`]) — this file;
//! - [`Shards`] (`follow`): which shards every subscription of a node reads, started and stopped
//!   as the node gains and loses interest, through the backend's [`ShardReader`].
//!
//! An event goes to a shard by the [`Subject`] it is routed by:
//!
//! - a **scoped** event goes to its scope's shard, so one tenant's events keep their order;
//! - an **unscoped update of one resource** goes to that URI's shard;
//! - a **fleet-wide** event (a list change for everyone, a session's or a task's record) goes to
//!   shard 0, which every node always reads;
//! - a 2025 session's **(un)subscription** goes to its URI's shard (and its scope's, when the
//!   session has one), so on each it comes before the updates published after it: stored once
//!   per shard, the copies share an event id and consumers drop the second.
//!
//! The hash is FNV-1a (64-bit): tiny, stable across processes, versions and platforms — every
//! replica must pick the same shard — and good enough for spreading keys, which is all it does.

mod follow;

pub use follow::{ShardReader, Shards};

/// Which shards a node reads: a backend option (URL `routing=all|interest`).
///
/// ```
/// use mcp_fleet_bus::shard::Routing;
/// assert_eq!(Routing::default(), Routing::All);
/// assert_eq!("interest".parse::<Routing>(), Ok(Routing::Interest));
/// assert!("some".parse::<Routing>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Routing {
    /// Every shard: every node consumes every event.
    #[default]
    All,
    /// Shard 0 (fleet-wide events) and the shards of what the node's open streams follow.
    Interest,
}

impl std::str::FromStr for Routing {
    type Err = String;

    /// `all` or `interest`, as a URL parameter spells it.
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "all" => Ok(Routing::All),
            "interest" => Ok(Routing::Interest),
            other => Err(format!("routing must be all or interest, not {other:?}")),
        }
    }
}

use crate::envelope::EventEnvelope;
use crate::interest::Subject;

/// The shards `event` is stored in among `shards` (at least 1): one, but for a scoped
/// session's (un)subscription.
///
/// ```
/// use mcp_fleet_bus::{Change, EventEnvelope, EventKind, shard};
/// let fleet_wide = EventEnvelope::new(Change::list(EventKind::ToolsListChanged), "n");
/// assert_eq!(shard::shards_for(&fleet_wide, 8), [0]);
/// ```
pub fn shards_for(event: &EventEnvelope, shards: usize) -> Vec<usize> {
    let routed = Subject::routed_by(event);
    if routed.is_empty() {
        return vec![0];
    }
    let mut found: Vec<usize> = routed.iter().flat_map(|subject| shards_of(subject, shards)).collect();
    found.dedup();
    found
}

/// The first shard `event` is stored in.
///
/// ```
/// use mcp_fleet_bus::{Change, EventEnvelope, shard};
/// let update = EventEnvelope::new(Change::resource("file:///a").in_scope("t1"), "n");
/// assert_eq!(shard::shard_of(&update, 1), 0, "one shard holds everything");
/// ```
pub fn shard_of(event: &EventEnvelope, shards: usize) -> usize {
    shards_for(event, shards)[0]
}

/// The shards holding the events `subject` matches (beside shard 0's fleet-wide ones).
///
/// ```
/// use mcp_fleet_bus::{Change, EventEnvelope, EventKind, Subject, shard};
/// let scoped = EventEnvelope::new(Change::list(EventKind::ToolsListChanged).in_scope("t1"), "n");
/// assert_eq!(shard::shards_of(&Subject::Scope("t1".into()), 8), [shard::shard_of(&scoped, 8)]);
/// assert_eq!(shard::shards_of(&Subject::EveryUri, 4), [0, 1, 2, 3]);
/// ```
pub fn shards_of(subject: &Subject, shards: usize) -> Vec<usize> {
    let key = match subject {
        Subject::Scope(scope) => format!("s:{scope}"),
        Subject::Uri(uri) => format!("u:{uri}"),
        Subject::EveryUri => return (0..shards).collect(),
    };
    vec![(fnv1a(key.as_bytes()) % shards.max(1) as u64) as usize]
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use crate::envelope::{Change, EventKind, SessionOp};

    use super::*;

    fn event(change: Change) -> EventEnvelope {
        EventEnvelope::new(change, "n")
    }

    #[test]
    fn fleet_wide_changes_go_to_the_first_shard_and_subjects_spread() {
        assert_eq!(shard_of(&event(Change::list(EventKind::ToolsListChanged)), 8), 0);
        assert_eq!(shard_of(&event(Change::task("0123")), 8), 0, "a task's record reaches every node");
        assert_eq!(shard_of(&event(Change::resource("test://a").in_scope("t")), 1), 0);
        let a = shard_of(&event(Change::resource("test://a").in_scope("tenant-7")), 8);
        let b = shard_of(&event(Change::list(EventKind::ToolsListChanged).in_scope("tenant-7")), 8);
        assert_eq!(a, b, "one tenant, one shard: its events keep their order");
        assert_eq!(vec![a], shards_of(&Subject::Scope("tenant-7".into()), 8), "its followers read that shard");
        let used: std::collections::BTreeSet<usize> =
            (0..64).map(|i| shard_of(&event(Change::resource(format!("test://r/{i}"))), 8)).collect();
        assert_eq!(used.len(), 8, "64 URIs use every one of 8 shards");
        assert_eq!(shards_of(&Subject::EveryUri, 8).len(), 8);
        let subscribed = event(Change::session("s", SessionOp::Subscribe, Some("test://r/1".into())));
        assert_eq!(shards_for(&subscribed, 8), [shard_of(&event(Change::resource("test://r/1")), 8)]);
    }

    #[test]
    fn the_hash_is_fnv1a_so_every_replica_agrees() {
        // The published FNV-1a test vectors: a change here would split a fleet of mixed versions.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
