//! Which event stream an event goes to when the bus is split into shards (see
//! [`RedisBusOptions::shards`](crate::RedisBusOptions::shards)).
//!
//! - A **scoped** event goes to its scope's shard, so one tenant's events keep their order.
//! - An **unscoped event naming a URI** (a resource updated, a task's record) goes to that
//!   URI's shard.
//! - Anything else (a list changed for the whole fleet) goes to shard 0.
//!
//! The hash is FNV-1a (64-bit): tiny, stable across processes, versions and platforms — every
//! replica must pick the same shard — and good enough for spreading keys, which is all it does.

use mcp_fleet_bus::EventEnvelope;

/// The shard of `event` among `shards` (at least 1).
pub(crate) fn shard_of(event: &EventEnvelope, shards: usize) -> usize {
    if shards <= 1 {
        return 0;
    }
    let subject = match (&event.scope, &event.uri) {
        (Some(scope), _) => format!("s:{scope}"),
        (None, Some(uri)) => format!("u:{uri}"),
        (None, None) => return 0,
    };
    (fnv1a(subject.as_bytes()) % shards as u64) as usize
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
        assert_eq!(shard_of(&event(Change::resource("test://a").in_scope("t")), 1), 0);
        let a = shard_of(&event(Change::resource("test://a").in_scope("tenant-7")), 8);
        let b = shard_of(&event(Change::list(EventKind::ToolsListChanged).in_scope("tenant-7")), 8);
        assert_eq!(a, b, "one tenant, one shard: its events keep their order");
        let used: std::collections::BTreeSet<usize> =
            (0..64).map(|i| shard_of(&event(Change::resource(format!("test://r/{i}"))), 8)).collect();
        assert_eq!(used.len(), 8, "64 URIs use every one of 8 shards");
    }

    #[test]
    fn the_hash_is_fnv1a_so_every_replica_agrees() {
        // The published FNV-1a test vectors: a change here would split a fleet of mixed versions.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
