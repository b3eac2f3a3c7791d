//! The in-memory [`Keyspace`]: what [`MemoryBus::keyspace`](crate::ServerEventBus::keyspace)
//! opens. Every clone of one [`MemoryBus`](crate::MemoryBus) (`as_node` included) shares the
//! records of a name: key → (value, revision, deadline), revisions from one counter per
//! keyspace that only grows (a deleted or expired key never gets its old revision back).
//!
//! Expired entries count as absent and are removed when touched, and all of them whenever the
//! map has doubled since the last sweep, so keys nobody reads again do not pile up. Slot sets
//! (key → member → deadline) are a map of their own, pruned when touched and swept the same
//! way. The TTL
//! belongs to the opened handle, as each Redis writer passes its own; the contract asks every
//! node for the same one anyway.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::bus::{BoxFuture, BusError};
use crate::keyspace::{Keyspace, Record, add_to_counter, check_key, check_slot, parse_counter};

/// The fewest entries a sweep of expired ones waits for.
pub(super) const MIN_SWEEP: usize = 64;

/// The keyspaces of one bus, by name. A std mutex: held only to look up or insert.
#[derive(Default)]
pub(super) struct Keyspaces(Mutex<HashMap<String, Arc<Shared>>>);

impl Keyspaces {
    /// The keyspace `name` (created empty on first use) with `ttl` for this handle's writes.
    pub(super) fn open(&self, name: &str, ttl: Duration) -> MemoryKeyspace {
        let mut all = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let shared = all.entry(name.to_owned()).or_default().clone();
        MemoryKeyspace { shared, ttl }
    }

    /// How many entries (live or not yet swept) the keyspace `name` holds.
    #[cfg(test)]
    pub(super) fn len(&self, name: &str) -> usize {
        let all = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        all.get(name).map_or(0, |shared| shared.state.lock().unwrap_or_else(PoisonError::into_inner).records.len())
    }
}

/// The records of one keyspace.
#[derive(Default)]
pub(super) struct Shared {
    /// A std mutex: every operation is one short critical section, never across `.await`.
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    records: HashMap<String, Entry>,
    /// The last revision given out (to any key).
    last_revision: u64,
    /// Sweep expired entries when the map reaches this size.
    sweep_at: usize,
    /// Slot sets: key → member → deadline.
    slots: HashMap<String, HashMap<String, Instant>>,
    /// Sweep expired slots when this many sets are held.
    slots_sweep_at: usize,
}

struct Entry {
    value: Vec<u8>,
    revision: u64,
    deadline: Instant,
}

impl State {
    /// The live entry under `key`, removing it if it expired.
    fn live(&mut self, key: &str, now: Instant) -> Option<&mut Entry> {
        if self.records.get(key).is_some_and(|entry| entry.deadline <= now) {
            self.records.remove(key);
        }
        self.records.get_mut(key)
    }

    /// Store `value` under `key` with the next revision, live for `ttl` from `now`.
    fn store(&mut self, key: &str, value: Vec<u8>, now: Instant, ttl: Duration) -> u64 {
        self.last_revision += 1;
        let revision = self.last_revision;
        // `check_open` caps the TTL at a year, so the deadline cannot overflow.
        let deadline = now + ttl;
        self.records.insert(key.to_owned(), Entry { value, revision, deadline });
        if self.records.len() >= self.sweep_at {
            self.records.retain(|_, entry| entry.deadline > now);
            self.sweep_at = (self.records.len() * 2).max(MIN_SWEEP);
        }
        revision
    }

    /// The slot set `key` without its expired members (created empty).
    fn live_slots(&mut self, key: &str, now: Instant) -> &mut HashMap<String, Instant> {
        if self.slots.len() >= self.slots_sweep_at {
            self.slots.retain(|_, set| {
                set.retain(|_, deadline| *deadline > now);
                !set.is_empty()
            });
            self.slots_sweep_at = (self.slots.len() * 2).max(MIN_SWEEP);
        }
        let set = self.slots.entry(key.to_owned()).or_default();
        set.retain(|_, deadline| *deadline > now);
        set
    }
}

/// One handle on a shared keyspace.
pub(super) struct MemoryKeyspace {
    shared: Arc<Shared>,
    ttl: Duration,
}

impl MemoryKeyspace {
    /// Run `op` on the state at one instant, after checking `key`; the answer is ready at once.
    fn with<'a, T: Send + 'a>(
        &'a self,
        key: &str,
        op: impl FnOnce(&mut State, Instant) -> Result<T, BusError>,
    ) -> BoxFuture<'a, Result<T, BusError>> {
        let result = check_key(key).and_then(|()| op(&mut self.lock(), Instant::now()));
        Box::pin(std::future::ready(result))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every operation leaves the state whole: an entry is inserted or removed in one call.
        self.shared.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Keyspace for MemoryKeyspace {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Record>, BusError>> {
        self.with(key, |state, now| {
            Ok(state.live(key, now).map(|entry| Record { value: entry.value.clone(), revision: entry.revision }))
        })
    }

    fn create<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<Option<u64>, BusError>> {
        self.with(key, |state, now| {
            Ok(match state.live(key, now) {
                Some(_) => None,
                None => Some(state.store(key, value, now, self.ttl)),
            })
        })
    }

    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<u64, BusError>> {
        self.with(key, |state, now| Ok(state.store(key, value, now, self.ttl)))
    }

    fn compare_and_set<'a>(
        &'a self,
        key: &'a str,
        expected: u64,
        value: Vec<u8>,
    ) -> BoxFuture<'a, Result<Option<u64>, BusError>> {
        self.with(key, |state, now| {
            Ok(match state.live(key, now) {
                Some(entry) if entry.revision == expected => Some(state.store(key, value, now, self.ttl)),
                _ => None,
            })
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, BusError>> {
        self.with(key, |state, now| Ok(state.live(key, now).is_some() && state.records.remove(key).is_some()))
    }

    fn increment<'a>(&'a self, key: &'a str, delta: i64) -> BoxFuture<'a, Result<i64, BusError>> {
        self.with(key, |state, now| {
            let current = match state.live(key, now) {
                Some(entry) => parse_counter(key, &entry.value)?,
                None => 0,
            };
            let next = add_to_counter(key, current, delta)?;
            state.store(key, next.to_string().into_bytes(), now, self.ttl);
            Ok(next)
        })
    }

    fn hold_slot<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
        ttl: Duration,
        limit: usize,
    ) -> BoxFuture<'a, Result<bool, BusError>> {
        self.with(key, |state, now| {
            check_slot(key, member, ttl, self.ttl)?;
            let set = state.live_slots(key, now);
            let held = set.contains_key(member) || set.len() < limit;
            if held {
                set.insert(member.to_owned(), now + ttl);
            } else if set.is_empty() {
                state.slots.remove(key);
            }
            Ok(held)
        })
    }

    fn release_slot<'a>(&'a self, key: &'a str, member: &'a str) -> BoxFuture<'a, Result<bool, BusError>> {
        self.with(key, |state, now| {
            check_key(member)?;
            let set = state.live_slots(key, now);
            let released = set.remove(member).is_some();
            if set.is_empty() {
                state.slots.remove(key);
            }
            Ok(released)
        })
    }

    fn live_slots<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<usize, BusError>> {
        self.with(key, |state, now| {
            let live = state.live_slots(key, now).len();
            if live == 0 {
                state.slots.remove(key);
            }
            Ok(live)
        })
    }

    fn ttl(&self) -> Duration {
        self.ttl
    }
}
