//! [`OccurrenceLog`]: the occurrences this node heard from the bus, in bus order, bounded —
//! what a poll reads.
//!
//! Each entry keeps its position: the bus's `(epoch, version)` when the bus names one (the
//! same on every replica), else `(this log's own epoch, a local counter)` (a sharded bus).
//! The log is **complete above its floor**: every occurrence published after the floor's
//! position is in it, until it is evicted. The floor starts where the node's consumer started
//! (in the log's own history when the bus names no position: complete from its creation), rises
//! past each evicted entry, and after a gap rises to just below the next occurrence heard —
//! whatever came in between may be missing. A new epoch starts the log afresh.
//!
//! Polls waiting for something new wait on [`OccurrenceLog::arrived`].

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_fleet_bus::EventEnvelope;
use mcp_fleet_protocol::types::EventOccurrence;
use tokio::sync::Notify;

/// A position in the log's history: `(epoch, version)`.
pub(crate) type Position = (u64, u64);

/// One remembered occurrence.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) position: Position,
    /// The tenant it was emitted for (`None`: every caller may see it).
    pub(crate) scope: Option<String>,
    pub(crate) occurrence: Arc<EventOccurrence>,
    /// When it was emitted (ms since the Unix epoch), for `maxAgeMs`.
    pub(crate) emitted_at_ms: u64,
}

/// What a read found after a position.
#[derive(Debug, Default)]
pub(crate) struct After {
    /// The entries after it, oldest first.
    pub(crate) entries: Vec<Entry>,
    /// Entries between the position and these may be missing.
    pub(crate) truncated: bool,
    /// Where the entries start after: the position asked for, or when truncated the floor.
    pub(crate) from: Position,
    /// The newest position the log has seen (what a reader with nothing new resumes after).
    pub(crate) head: Position,
}

#[derive(Debug)]
struct Ring {
    entries: VecDeque<Entry>,
    /// Complete above this (see the module docs).
    floor: Position,
    /// The newest position seen.
    head: Position,
    /// A gap was reported: the next occurrence sets the floor below itself.
    gap: bool,
    /// This log's own epoch and counter, for occurrences the bus names no position for.
    local: Position,
}

/// The occurrences heard on this node (see the module docs).
#[derive(Debug)]
pub(crate) struct OccurrenceLog {
    ring: Mutex<Ring>,
    capacity: usize,
    /// Woken whenever an occurrence is recorded.
    pub(crate) arrived: Notify,
}

impl OccurrenceLog {
    /// A log remembering `capacity` occurrences (at least 1).
    pub(crate) fn new(capacity: usize) -> Self {
        let local = (mcp_fleet_bus::new_epoch(), 0);
        let ring = Ring { entries: VecDeque::new(), floor: local, head: local, gap: false, local };
        OccurrenceLog { ring: Mutex::new(ring), capacity: capacity.max(1), arrived: Notify::new() }
    }

    /// The consumer (re)subscribed when the bus stood at `position`: complete from there on.
    pub(crate) fn started_at(&self, position: Position) {
        let mut ring = self.lock();
        if position.0 != ring.head.0 {
            // The bus's history, or a new one of it: nothing before is comparable.
            ring.entries.clear();
            (ring.floor, ring.head, ring.gap) = (position, position, false);
        } else if ring.gap {
            (ring.floor, ring.gap) = (position, false);
            ring.head = ring.head.max(position);
        }
    }

    /// Events may have been missed: the floor rises to the next occurrence heard.
    pub(crate) fn gap(&self) {
        self.lock().gap = true;
    }

    /// Remember `event`'s occurrence `occurrence`.
    pub(crate) fn record(&self, event: &EventEnvelope, occurrence: EventOccurrence) {
        {
            let mut ring = self.lock();
            let position = match event.version {
                0 => {
                    ring.local.1 += 1;
                    ring.local
                }
                version => (event.epoch, version),
            };
            if position.0 != ring.head.0 || ring.gap {
                // A new history (nothing of the old one is comparable), or events missed: the
                // log is complete from this occurrence on.
                if position.0 != ring.head.0 {
                    ring.entries.clear();
                }
                (ring.floor, ring.gap) = ((position.0, position.1 - 1), false);
            }
            if position <= ring.head && position.0 == ring.head.0 {
                return; // a replay of what the log holds
            }
            ring.head = position;
            let entry = Entry {
                position,
                scope: event.scope.clone(),
                occurrence: Arc::new(occurrence),
                emitted_at_ms: event.published_at_ms,
            };
            ring.entries.push_back(entry);
            if ring.entries.len() > self.capacity
                && let Some(evicted) = ring.entries.pop_front()
            {
                // Never below a floor a gap raised higher.
                ring.floor = ring.floor.max(evicted.position);
            }
        }
        self.arrived.notify_waiters();
    }

    /// The entries after `position` (`None`: from now on, nothing), and whether some may be
    /// missing: the position is of another epoch, or below the floor.
    pub(crate) fn after(&self, position: Option<Position>) -> After {
        let ring = self.lock();
        let Some(position) = position else { return After { head: ring.head, from: ring.head, ..After::default() } };
        let complete = ring.floor.0 == position.0 && ring.floor.1 <= position.1;
        let entries = ring.entries.iter().filter(|e| !complete || e.position > position).cloned().collect();
        let from = if complete { position } else { ring.floor };
        After { entries, truncated: !complete, head: ring.head, from }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ring> {
        // Updated in place by short critical sections that do not panic.
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_fleet_bus::{Change, EventKind};

    fn event(epoch: u64, version: u64) -> EventEnvelope {
        let mut e = EventEnvelope::new(Change::list(EventKind::Occurred), "n");
        (e.epoch, e.version) = (epoch, version);
        e
    }

    fn occurrence(id: &str) -> EventOccurrence {
        let data = serde_json::json!({});
        EventOccurrence { event_id: id.into(), name: "n".into(), timestamp: "t".into(), data, cursor: None }
    }

    fn ids(after: &After) -> Vec<&str> {
        after.entries.iter().map(|e| e.occurrence.event_id.as_str()).collect()
    }

    #[test]
    fn complete_from_where_the_consumer_started() {
        let log = OccurrenceLog::new(10);
        log.started_at((7, 3));
        log.record(&event(7, 5), occurrence("a"));
        log.record(&event(7, 6), occurrence("b"));
        let read = log.after(Some((7, 3)));
        assert_eq!((ids(&read), read.truncated, read.head), (vec!["a", "b"], false, (7, 6)));
        assert_eq!(ids(&log.after(Some((7, 5)))), ["b"]);
        assert!(log.after(Some((7, 2))).truncated, "before the node started: unknown");
        assert!(log.after(Some((8, 9))).truncated, "another epoch");
        assert!(log.after(None).entries.is_empty(), "null: from now on");
    }

    #[test]
    fn eviction_and_gaps_raise_the_floor() {
        let log = OccurrenceLog::new(2);
        log.started_at((1, 0));
        for (v, id) in [(1, "a"), (2, "b"), (3, "c")] {
            log.record(&event(1, v), occurrence(id));
        }
        assert!(log.after(Some((1, 0))).truncated, "a was evicted");
        assert!(!log.after(Some((1, 1))).truncated);
        log.gap();
        log.record(&event(1, 9), occurrence("d"));
        let read = log.after(Some((1, 3)));
        assert!(read.truncated, "4..8 may be missing");
        assert!(!log.after(Some((1, 8))).truncated);
        log.record(&event(1, 9), occurrence("d"));
        assert_eq!(ids(&log.after(Some((1, 8)))), ["d"], "a replay is kept once");
    }

    #[test]
    fn unpositioned_occurrences_get_local_positions() {
        let log = OccurrenceLog::new(5);
        let before = log.after(None).head;
        log.record(&event(0, 0), occurrence("a"));
        log.record(&event(0, 0), occurrence("b"));
        let start = log.after(Some(before));
        assert_eq!((ids(&start), start.truncated), (vec!["a", "b"], false), "complete from its creation");
    }
}
