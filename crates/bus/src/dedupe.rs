//! A bounded window of recently delivered event ids, so an event that arrives twice
//! (at-least-once delivery, a replay after reconnect) is delivered once.
//!
//! Bounded on purpose: a duplicate older than the window gets through, which is harmless —
//! a change notification twice means one spurious refresh, never a lost change.

use std::collections::{HashSet, VecDeque};

/// Default number of remembered ids.
pub const DEFAULT_DEDUPE_WINDOW: usize = 4096;

/// Remembers the last `capacity` event ids.
#[derive(Debug)]
pub struct DedupeWindow {
    capacity: usize,
    order: VecDeque<String>,
    seen: HashSet<String>,
}

impl DedupeWindow {
    /// A window remembering `capacity` ids (at least 1).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        DedupeWindow { capacity, order: VecDeque::with_capacity(capacity), seen: HashSet::with_capacity(capacity) }
    }

    /// Record `id`; returns `false` if it was already in the window (a duplicate).
    pub fn first_sighting(&mut self, id: &str) -> bool {
        if self.seen.contains(id) {
            return false;
        }
        if self.order.len() == self.capacity
            && let Some(old) = self.order.pop_front()
        {
            self.seen.remove(&old);
        }
        self.order.push_back(id.to_owned());
        self.seen.insert(id.to_owned());
        true
    }
}

impl Default for DedupeWindow {
    fn default() -> Self {
        Self::new(DEFAULT_DEDUPE_WINDOW)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_duplicates_within_the_window_only() {
        let mut w = DedupeWindow::new(2);
        assert!(w.first_sighting("a"));
        assert!(!w.first_sighting("a"));
        assert!(w.first_sighting("b"));
        assert!(w.first_sighting("c")); // evicts "a"
        assert!(w.first_sighting("a"));
        assert!(!w.first_sighting("c"));
    }

    #[test]
    fn any_sequence_delivers_each_id_at_least_once_and_never_twice_in_a_row() {
        // A small exhaustive property check: every id's first sighting passes, and an id
        // repeated immediately never does, for all sequences over 3 ids up to length 6.
        fn walk(seq: &mut Vec<u8>, depth: usize) {
            let mut w = DedupeWindow::new(2);
            let mut passed = HashSet::new();
            for (i, id) in seq.iter().enumerate() {
                let key = id.to_string();
                let ok = w.first_sighting(&key);
                if !passed.contains(id) {
                    assert!(ok, "first sighting of {id} in {seq:?} was dropped");
                }
                if i > 0 && seq[i - 1] == *id {
                    assert!(!ok, "immediate repeat in {seq:?} passed");
                }
                if ok {
                    passed.insert(*id);
                }
            }
            if depth == 0 {
                return;
            }
            for id in 0..3 {
                seq.push(id);
                walk(seq, depth - 1);
                seq.pop();
            }
        }
        walk(&mut Vec::new(), 6);
    }

    proptest::proptest! {
        /// Model-based: the window agrees with its definition over a log of deliveries — an id
        /// is dropped exactly when it is among the last `capacity` ids delivered — and holds
        /// at most `capacity` ids (256 cases; `PROPTEST_CASES` raises it).
        #[test]
        fn agrees_with_the_last_capacity_deliveries(
            capacity in 0usize..6,
            ids in proptest::collection::vec(0u8..10, 0..200),
        ) {
            let mut window = DedupeWindow::new(capacity);
            let mut delivered: Vec<String> = Vec::new();
            for id in ids {
                let id = format!("ev-{id}");
                let recent = &delivered[delivered.len().saturating_sub(capacity.max(1))..];
                let expected = !recent.contains(&id);
                proptest::prop_assert_eq!(window.first_sighting(&id), expected, "{} after {:?}", id, recent);
                if expected {
                    delivered.push(id);
                }
                proptest::prop_assert!(window.order.len() <= capacity.max(1));
                proptest::prop_assert_eq!(window.order.len(), window.seen.len());
            }
        }
    }
}
