//! [`SessionCache`]: the 2025-era session records this node read recently, so a request in a
//! busy session costs no keyspace read (on Redis, one round trip) per request.
//!
//! A record is served from here for at most
//! [`Era2025Options::session_cache_for`](crate::options::Era2025Options::session_cache_for)
//! after it was read (off by default), and only while it
//! needs no renewal. What changes a session elsewhere reaches this node on the bus and drops
//! its entry at once: a DELETE (`End`), a `resources/(un)subscribe`; a change made here
//! replaces it. So a session ended on another replica stops being served here within the bus's
//! delay; a log level set on another replica shows here within the cache's window at most.
//! Bounded: past `max` entries the oldest half is dropped.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::session::SessionRecord;

/// Recently read session records (see the module docs).
#[derive(Debug)]
pub(crate) struct SessionCache {
    entries: Mutex<HashMap<String, (SessionRecord, Instant)>>,
    fresh_for: Duration,
    max: usize,
}

impl SessionCache {
    /// A cache serving records for `fresh_for` (zero: never), holding at most `max`.
    pub(crate) fn new(fresh_for: Duration, max: usize) -> Self {
        SessionCache { entries: Mutex::default(), fresh_for, max: max.max(1) }
    }

    /// Session `id`'s record, if it was read here less than the window ago.
    pub(crate) fn get(&self, id: &str) -> Option<SessionRecord> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.get(id).filter(|(_, read)| read.elapsed() < self.fresh_for).map(|(record, _)| record.clone())
    }

    /// Remember `record` as session `id`'s, read now.
    pub(crate) fn put(&self, id: &str, record: &SessionRecord) {
        if self.fresh_for.is_zero() {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= self.max && !entries.contains_key(id) {
            let now = Instant::now();
            entries.retain(|_, (_, read)| now.duration_since(*read) < self.fresh_for);
            if entries.len() >= self.max {
                let mut ages: Vec<Instant> = entries.values().map(|(_, read)| *read).collect();
                ages.sort_unstable();
                let cut = ages[ages.len() / 2];
                entries.retain(|_, (_, read)| *read > cut);
            }
        }
        entries.insert(id.to_owned(), (record.clone(), Instant::now()));
    }

    /// Forget session `id` (it changed or ended somewhere).
    pub(crate) fn forget(&self, id: &str) {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> SessionRecord {
        SessionRecord::stateless("2025-11-25", None)
    }

    #[test]
    fn serves_within_the_window_and_forgets() {
        let cache = SessionCache::new(Duration::from_secs(60), 4);
        cache.put("a", &record());
        assert!(cache.get("a").is_some() && cache.get("b").is_none());
        cache.forget("a");
        assert!(cache.get("a").is_none());
        let off = SessionCache::new(Duration::ZERO, 4);
        off.put("a", &record());
        assert!(off.get("a").is_none(), "a zero window caches nothing");
    }

    #[test]
    fn stays_bounded() {
        let cache = SessionCache::new(Duration::from_secs(60), 4);
        for i in 0..20 {
            cache.put(&format!("s{i}"), &record());
        }
        assert!(cache.entries.lock().unwrap().len() <= 4);
        assert!(cache.get("s19").is_some(), "the newest stays");
    }
}
