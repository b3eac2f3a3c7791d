//! [`ReloadStats`]: what the node exports about catalog reloads — successes, failures, the
//! latest error, the content hash being served and when it was applied. Shared as an `Arc`,
//! updated by the reloader, read by whoever renders metrics.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Suggested name of the counter of successful applies ([`ReloadStats::reloads`]).
pub const RELOADS_METRIC: &str = "mcp_fleet_catalog_reloads_total";
/// Suggested name of the counter of failed reloads ([`ReloadStats::failures`]).
pub const RELOAD_FAILURES_METRIC: &str = "mcp_fleet_catalog_reload_failures_total";

/// Reload counters. Counts are atomics; the two strings sit behind a `std` mutex that is held
/// only to copy a string, never across an `.await`.
///
/// ```
/// use mcp_fleet_catalog_file::ReloadStats;
/// let stats = ReloadStats::default();
/// assert_eq!((stats.reloads(), stats.failures()), (0, 0));
/// assert!(stats.last_error().is_none() && stats.last_success().is_none());
/// ```
#[derive(Debug, Default)]
pub struct ReloadStats {
    reloads: AtomicU64,
    failures: AtomicU64,
    last_attempt_ms: AtomicU64,
    last_success_ms: AtomicU64,
    last_error: Mutex<Option<String>>,
    last_hash: Mutex<Option<String>>,
}

impl ReloadStats {
    /// Successful applies, the first load included.
    pub fn reloads(&self) -> u64 {
        self.reloads.load(Ordering::Relaxed)
    }

    /// Failed reloads (unreadable, invalid or refused files). A file that stays invalid is
    /// counted once per explicit reload, and once in all by the watcher.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// The latest failure's one-line message; `None` once a later reload succeeds.
    pub fn last_error(&self) -> Option<String> {
        lock(&self.last_error).clone()
    }

    /// SHA-256 (hex) of the file content being served, once one was applied.
    pub fn last_hash(&self) -> Option<String> {
        lock(&self.last_hash).clone()
    }

    /// When a file was last applied.
    pub fn last_success(&self) -> Option<SystemTime> {
        time_of(self.last_success_ms.load(Ordering::Relaxed))
    }

    /// When a reload last reached a verdict (applied or failed).
    pub fn last_attempt(&self) -> Option<SystemTime> {
        time_of(self.last_attempt_ms.load(Ordering::Relaxed))
    }

    pub(crate) fn record_success(&self, hash: String) {
        let now = now_ms();
        *lock(&self.last_hash) = Some(hash);
        *lock(&self.last_error) = None;
        self.last_attempt_ms.store(now, Ordering::Relaxed);
        self.last_success_ms.store(now, Ordering::Relaxed);
        self.reloads.fetch_add(1, Ordering::Relaxed);
    }

    /// The file is back to the content being served: no error stands.
    pub(crate) fn clear_error(&self) {
        *lock(&self.last_error) = None;
    }

    pub(crate) fn record_failure(&self, error: String) {
        *lock(&self.last_error) = Some(error);
        self.last_attempt_ms.store(now_ms(), Ordering::Relaxed);
        self.failures.fetch_add(1, Ordering::Relaxed);
    }
}

fn lock(m: &Mutex<Option<String>>) -> std::sync::MutexGuard<'_, Option<String>> {
    // Poisoning needs a panic while holding the lock, which only assigns or clones a String;
    // the value is whole either way.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX).max(1)
}

fn time_of(ms: u64) -> Option<SystemTime> {
    (ms > 0).then(|| UNIX_EPOCH + Duration::from_millis(ms))
}
