//! Which event stream an event goes to when the bus is split into shards (see
//! [`RedisBusOptions::shards`](crate::RedisBusOptions::shards)), by the [`Subject`] it is
//! routed by:
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

use mcp_fleet_bus::{EventEnvelope, Subject};

/// The shards `event` is stored in among `shards` (at least 1): one, but for a scoped
/// session's (un)subscription.
pub(crate) fn shards_for(event: &EventEnvelope, shards: usize) -> Vec<usize> {
    let routed = Subject::routed_by(event);
    if routed.is_empty() {
        return vec![0];
    }
    let mut found: Vec<usize> = routed.iter().flat_map(|subject| shards_of(subject, shards)).collect();
    found.dedup();
    found
}

/// The first shard `event` is stored in.
pub(crate) fn shard_of(event: &EventEnvelope, shards: usize) -> usize {
    shards_for(event, shards)[0]
}

/// The shards holding the events `subject` matches (beside shard 0's fleet-wide ones).
pub(crate) fn shards_of(subject: &Subject, shards: usize) -> Vec<usize> {
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
    use mcp_fleet_bus::{Change, EventKind};

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
        let subscribed = event(Change::session("s", mcp_fleet_bus::SessionOp::Subscribe, Some("test://r/1".into())));
        assert_eq!(shards_for(&subscribed, 8), [shard_of(&event(Change::resource("test://r/1")), 8)]);
    }

    #[test]
    fn the_hash_is_fnv1a_so_every_replica_agrees() {
        // The published FNV-1a test vectors: a change here would split a fleet of mixed versions.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
