//! [`History`]: the recent change events this node heard from the bus, bounded, so a 2025-era
//! client resuming its GET stream with `Last-Event-ID` — on this replica or any other — gets what
//! it missed instead of a blanket invalidation.
//!
//! Every node hears every event of the bus in `(epoch, version)` order, so a position written
//! by one replica means the same on another. A GET stream's event ids are positions: each event
//! carries the position of the event it announces (events it does not follow are skipped by the
//! replay's filter, never lost), so a client that read up to an event resumes after it. The history keeps the last `capacity` events and the *floor* below which it is
//! incomplete: what was evicted, or everything before a gap or before this node started. A
//! resume from a position at or above the floor, in the same epoch, is answered with the
//! events after it (coalesced per list and URI, filtered by the session's scope and
//! subscriptions); anything else falls back to the gap rule.
//!
//! Catalog notifications decided by this node (the fleet converged: they are announced by each
//! node, not carried by the bus) have no bus position; the replay includes every one still in
//! the history — a spurious refresh is harmless, a missed one is not.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Mutex, PoisonError};

use mcp_fleet_bus::{EventEnvelope, EventKind};
use mcp_fleet_protocol::ListKind;
use serde_json::Value;

/// A position in the bus's history: `(epoch, version)`.
pub(crate) type Position = (u64, u64);

/// One remembered event.
#[derive(Debug, Clone)]
struct Entry {
    /// `None` for a catalog notification this node decided.
    position: Option<Position>,
    scope: Option<String>,
    kind: EventKind,
    uri: Option<String>,
    meta: Value,
}

#[derive(Debug, Default)]
struct Ring {
    entries: VecDeque<Entry>,
    /// Every event after this position is in `entries` (`None`: nothing can be replayed).
    floor: Option<Position>,
    /// The newest position heard.
    newest: Option<Position>,
}

/// What a resumed stream missed: the newest missed change of each announced list (by
/// [`ListKind::ANNOUNCED`] position), and of each subscribed URI, each with its meta and the
/// position it is written at — its own, or for a catalog notification without one the newest
/// position before it (never below the resume's).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Missed {
    pub(crate) lists: [Option<(Position, Value)>; 3],
    pub(crate) uris: BTreeMap<String, (Position, Value)>,
}

/// The node's recent history (a std mutex: one short critical section per event).
#[derive(Debug)]
pub(crate) struct History {
    ring: Mutex<Ring>,
    capacity: usize,
}

impl History {
    pub(crate) fn new(capacity: usize) -> Self {
        History { ring: Mutex::default(), capacity }
    }

    /// Remember an event from the bus (duplicates included: replaying one twice is harmless).
    /// A session's or task's event is not replayed, but moves the position on all the same: a
    /// stream opened after it primes there, not at a position before the history's floor.
    pub(crate) fn record(&self, event: &EventEnvelope, meta: &Value) {
        if event.version == 0 {
            return; // not a positioned change (a local announcement)
        }
        let position = (event.epoch, event.version);
        let mut ring = self.lock();
        if ring.newest.is_some_and(|(epoch, _)| epoch != event.epoch) {
            // A new epoch without a gap first: nothing before it can be replayed.
            *ring = Ring::default();
        }
        if ring.floor.is_none() {
            // Everything after the first event heard (since start or since a gap) is complete.
            ring.floor = Some(position);
        }
        ring.newest = ring.newest.max(Some(position));
        if !matches!(event.kind, EventKind::SessionChanged | EventKind::TaskChanged) {
            self.push(&mut ring, Entry { position: Some(position), ..entry(event, meta) });
        }
    }

    /// Remember a catalog notification this node announced.
    pub(crate) fn record_catalog(&self, event: &EventEnvelope, meta: &Value) {
        let mut ring = self.lock();
        self.push(&mut ring, Entry { position: None, ..entry(event, meta) });
    }

    /// The bus stood at `position` when this node subscribed: every event after it will be
    /// heard. Until one is, it is the newest position and the floor — a stream opened on a node
    /// that heard nothing yet primes there, and a resume from it is answered, not a false gap.
    pub(crate) fn started_at(&self, position: Position) {
        let mut ring = self.lock();
        if ring.newest.is_none() {
            (ring.newest, ring.floor) = (Some(position), Some(position));
        }
    }

    /// Events were lost: nothing before now can be replayed.
    pub(crate) fn gap(&self) {
        *self.lock() = Ring::default();
    }

    /// The newest position heard (the id of a stream opened now).
    pub(crate) fn newest(&self) -> Option<Position> {
        self.lock().newest
    }

    /// What a stream of `scope` following `subscriptions` missed after `after`, or `None` when
    /// the history cannot tell (another epoch, or older than its floor).
    pub(crate) fn missed_since(
        &self,
        after: Position,
        scope: Option<&str>,
        subscriptions: &BTreeSet<String>,
    ) -> Option<Missed> {
        let ring = self.lock();
        let (epoch, floor) = ring.floor?;
        if after.0 != epoch || after.1 < floor {
            return None;
        }
        let mut missed = Missed::default();
        let hears = |s: &Option<String>| s.is_none() || s.as_deref() == scope;
        // Where the replay stands: every entry, followed or not, moves it on.
        let mut at = after;
        for e in &ring.entries {
            if let Some(position) = e.position {
                if position.1 <= after.1 {
                    continue;
                }
                at = at.max(position);
            }
            if !hears(&e.scope) {
                continue;
            }
            match (e.kind, &e.uri) {
                (EventKind::ResourceUpdated, Some(uri)) if subscriptions.contains(uri) => {
                    missed.uris.insert(uri.clone(), (at, e.meta.clone()));
                }
                (kind, _) => {
                    if let Some(slot) = ListKind::ANNOUNCED.iter().position(|l| crate::fleet::list_event(*l) == kind) {
                        missed.lists[slot] = Some((at, e.meta.clone()));
                    }
                }
            }
        }
        Some(missed)
    }

    fn push(&self, ring: &mut Ring, entry: Entry) {
        ring.entries.push_back(entry);
        while ring.entries.len() > self.capacity {
            if let Some(Entry { position: Some(evicted), .. }) = ring.entries.pop_front() {
                ring.floor = ring.floor.max(Some(evicted));
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ring> {
        // One push or read per critical section: a panic cannot leave the ring half-changed.
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn entry(event: &EventEnvelope, meta: &Value) -> Entry {
    Entry { position: None, scope: event.scope.clone(), kind: event.kind, uri: event.uri.clone(), meta: meta.clone() }
}

/// Parse a stream event id (`<epoch>-<version>`).
pub(crate) fn parse_event_id(id: &str) -> Option<Position> {
    let (epoch, version) = id.trim().split_once('-')?;
    Some((epoch.parse().ok()?, version.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_fleet_bus::Change;
    use serde_json::json;

    fn event(change: Change, epoch: u64, version: u64) -> EventEnvelope {
        let mut e = EventEnvelope::new(change, "n");
        (e.epoch, e.version) = (epoch, version);
        e
    }

    fn heard(h: &History, change: Change, version: u64) {
        h.record(&event(change, 7, version), &json!({"version": version}));
    }

    #[test]
    fn replays_what_came_after_the_position_filtered_and_coalesced() {
        let h = History::new(100);
        heard(&h, Change::list(EventKind::ToolsListChanged), 1);
        heard(&h, Change::list(EventKind::ToolsListChanged), 2);
        heard(&h, Change::resource("test://a"), 3);
        heard(&h, Change::resource("test://b"), 4);
        heard(&h, Change::list(EventKind::ToolsListChanged), 5);
        heard(&h, Change::list(EventKind::PromptsListChanged).in_scope("other"), 6);
        let subs = BTreeSet::from(["test://a".to_owned()]);
        let missed = h.missed_since((7, 2), Some("acme"), &subs).unwrap();
        assert_eq!(missed.lists[0], Some(((7, 5), json!({"version": 5}))), "the newest tools change");
        assert_eq!(missed.lists[1], None, "another tenant's change is not replayed");
        assert_eq!(missed.uris.keys().collect::<Vec<_>>(), ["test://a"]);
        assert_eq!(h.missed_since((7, 6), None, &subs).unwrap(), Missed::default(), "nothing after the newest");
        heard(&h, Change::session("s1", mcp_fleet_bus::SessionOp::End, None), 7);
        assert_eq!(h.newest(), Some((7, 7)), "a session's event moves the position on");
        assert_eq!(h.missed_since((7, 7), None, &subs).unwrap(), Missed::default(), "and is not replayed");
    }

    #[test]
    fn cannot_tell_across_epochs_below_the_floor_or_after_a_gap() {
        let h = History::new(2);
        for v in 10..=13 {
            heard(&h, Change::list(EventKind::ToolsListChanged), v);
        }
        let none = BTreeSet::new();
        assert!(h.missed_since((7, 10), None, &none).is_none(), "11 was evicted: a client at 10 missed it");
        assert!(h.missed_since((7, 11), None, &none).is_some(), "everything after 11 is kept");
        assert!(h.missed_since((8, 12), None, &none).is_none(), "another epoch");
        assert!(h.missed_since((7, 9), None, &none).is_none(), "before this node heard anything");
        h.gap();
        assert!(h.missed_since((7, 13), None, &none).is_none());
        assert_eq!(parse_event_id("7-13"), Some((7, 13)));
        assert_eq!(parse_event_id("junk"), None);
    }

    #[test]
    fn catalog_notifications_without_a_position_are_always_replayed() {
        let h = History::new(10);
        heard(&h, Change::list(EventKind::PromptsListChanged), 1);
        h.record_catalog(
            &EventEnvelope::new(Change::list(EventKind::ToolsListChanged), "n"),
            &json!({"revision": "ab"}),
        );
        heard(&h, Change::list(EventKind::PromptsListChanged), 2);
        let missed = h.missed_since((7, 2), None, &BTreeSet::new()).unwrap();
        assert_eq!(missed.lists[0], Some(((7, 2), json!({"revision": "ab"}))), "at the resume's position");
        assert_eq!(missed.lists[1], None);
    }
}
