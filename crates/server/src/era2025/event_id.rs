//! [`EventIds`]: the SSE ids of GET streams, which a client sends back as `Last-Event-ID` to
//! resume on any replica.
//!
//! An id is the stream's position in the bus's history (see [`History`](super::history)), the
//! same on every replica. For an unscoped session it reads `<epoch>-<version>`. For a session of
//! a scoped principal that would be a counter of every tenant's events, so the position is
//! sealed instead ([`StateSigner::seal`]: encrypted and authenticated, with a fresh nonce each
//! time, bound to the tenant) with the `requestState` key ring, which is the same on every
//! replica when configured: a resume anywhere opens it and replays from that node's history. A
//! replica that cannot open it — another replica's per-process key, a key rotated out, another
//! tenant's id, a changed byte, or a plain `<epoch>-<version>` guessed by the client — gets no
//! position, and the stream starts with the gap rule's invalidation, which is always correct.

use mcp_fleet_protocol::state::StateSigner;

use super::history::{Position, parse_event_id};

/// Writes and reads the event ids of this node's GET streams.
#[derive(Debug, Clone)]
pub(crate) struct EventIds {
    /// The handler's `requestState` ring (its first key seals, every key opens).
    ring: StateSigner,
}

impl EventIds {
    pub(crate) fn new(ring: StateSigner) -> Self {
        EventIds { ring }
    }

    /// The id of `position` on a stream of `scope`.
    pub(crate) fn write(&self, (epoch, version): Position, scope: Option<&str>) -> String {
        let Some(scope) = scope else { return format!("{epoch}-{version}") };
        let mut plain = [0; 16];
        plain[..8].copy_from_slice(&epoch.to_be_bytes());
        plain[8..].copy_from_slice(&version.to_be_bytes());
        self.ring.seal(&plain, &binding(scope), rand::random())
    }

    /// The position `id` names on a stream of `scope`, if it is one this fleet wrote for it.
    pub(crate) fn read(&self, id: &str, scope: Option<&str>) -> Option<Position> {
        let Some(scope) = scope else { return parse_event_id(id) };
        let plain: [u8; 16] = self.ring.open(id.trim(), &binding(scope))?.try_into().ok()?;
        let (epoch, version) = plain.split_at(8);
        Some((u64::from_be_bytes(epoch.try_into().ok()?), u64::from_be_bytes(version.try_into().ok()?)))
    }
}

/// What a sealed id is bound to: GET-stream ids of one tenant.
fn binding(scope: &str) -> String {
    format!("legacy-event-id\0{scope}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(key: u8) -> EventIds {
        EventIds::new(StateSigner::new(&[key; 32]).unwrap())
    }

    #[test]
    fn unscoped_ids_are_positions_and_scoped_ones_are_sealed_for_their_tenant() {
        let ids = ids(1);
        assert_eq!(ids.write((7, 42), None), "7-42");
        assert_eq!(ids.read("7-42", None), Some((7, 42)));
        let sealed = ids.write((7, 42), Some("acme"));
        assert_eq!(parse_event_id(&sealed), None, "{sealed}");
        assert_ne!(sealed, ids.write((7, 42), Some("acme")), "a fresh nonce each time");
        assert_eq!(ids.read(&sealed, Some("acme")), Some((7, 42)));
        assert_eq!(ids.read(&sealed, Some("globex")), None, "another tenant's id");
        assert_eq!(ids.read(&sealed, None), None);
        assert_eq!(ids.read("7-42", Some("acme")), None, "a tenant cannot name a position");
        assert_eq!(self::ids(2).read(&sealed, Some("acme")), None, "another fleet's (or process's) key");
    }

    proptest::proptest! {
        /// Any position round-trips through its id on a stream of any scope (or none); an id
        /// sealed for one tenant reads as nothing for another, and made-up ids (any text, the
        /// client's own `Last-Event-ID`) never read as a position of a scoped stream.
        #[test]
        fn ids_round_trip_for_their_scope_only(
            position in proptest::prelude::any::<(u64, u64)>(),
            scope in proptest::option::of(".{0,12}"),
            made_up in ".{0,60}",
        ) {
            let ids = ids(1);
            let id = ids.write(position, scope.as_deref());
            proptest::prop_assert_eq!(ids.read(&id, scope.as_deref()), Some(position));
            let other = format!("{}-other", scope.as_deref().unwrap_or(""));
            proptest::prop_assert_eq!(ids.read(&id, Some(&other)), None);
            proptest::prop_assert_eq!(ids.read(&made_up, Some(&other)), None);
        }
    }
}
