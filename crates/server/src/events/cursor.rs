//! Cursors: a subscription's position in the bus's history, opaque to the client.
//!
//! A position counts every tenant's occurrences, so it is never shown in the clear: it is
//! sealed ([`StateSigner::seal`]: encrypted and authenticated, a fresh nonce each time) with
//! the handler's `requestState` key ring — the same on every replica when configured — and
//! bound to the caller's tenant and the event type. A cursor another tenant wrote, of another
//! type, changed in a byte, or sealed with a key this replica does not hold opens to nothing;
//! the poll then answers `truncated: true` from what this node has, which is always correct.

use mcp_fleet_protocol::state::StateSigner;

use super::log::Position;

/// Seals and opens cursors.
#[derive(Debug, Clone)]
pub(crate) struct Cursors {
    ring: StateSigner,
}

impl Cursors {
    pub(crate) fn new(ring: StateSigner) -> Self {
        Cursors { ring }
    }

    /// The cursor of `position` for `tenant`'s subscriptions to `name`.
    pub(crate) fn write(&self, (epoch, version): Position, tenant: Option<&str>, name: &str) -> String {
        let mut plain = [0; 16];
        plain[..8].copy_from_slice(&epoch.to_be_bytes());
        plain[8..].copy_from_slice(&version.to_be_bytes());
        self.ring.seal(&plain, &binding(tenant, name), rand::random())
    }

    /// The position `cursor` names, if this fleet wrote it for `tenant` and `name`.
    pub(crate) fn read(&self, cursor: &str, tenant: Option<&str>, name: &str) -> Option<Position> {
        let plain: [u8; 16] = self.ring.open(cursor.trim(), &binding(tenant, name))?.try_into().ok()?;
        let (epoch, version) = plain.split_at(8);
        Some((u64::from_be_bytes(epoch.try_into().ok()?), u64::from_be_bytes(version.try_into().ok()?)))
    }
}

/// What a cursor is bound to: one tenant's (or the unscoped callers') subscriptions to one type.
fn binding(tenant: Option<&str>, name: &str) -> String {
    match tenant {
        Some(tenant) => format!("events-cursor\0t\0{tenant}\0{name}"),
        None => format!("events-cursor\0-\0{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_open_only_where_they_were_written() {
        let cursors = Cursors::new(StateSigner::new(&[3; 32]).unwrap());
        let c = cursors.write((7, 42), Some("acme"), "order.created");
        assert_eq!(cursors.read(&c, Some("acme"), "order.created"), Some((7, 42)));
        assert_eq!(cursors.read(&c, Some("globex"), "order.created"), None, "another tenant's");
        assert_eq!(cursors.read(&c, None, "order.created"), None);
        assert_eq!(cursors.read(&c, Some("acme"), "order.paid"), None, "another type's");
        assert_eq!(cursors.read("7-42", Some("acme"), "order.created"), None, "a guessed position");
        assert_ne!(c, cursors.write((7, 42), Some("acme"), "order.created"), "a fresh nonce each time");
        let other = Cursors::new(StateSigner::new(&[4; 32]).unwrap());
        assert_eq!(other.read(&c, Some("acme"), "order.created"), None, "another fleet's key");
    }
}
