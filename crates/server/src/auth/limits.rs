//! Per-principal limits: a request rate (token bucket) and a cap on open listen streams, keyed
//! by the authenticated principal's id, so one caller cannot starve the others on a replica.
//!
//! No HTTP here: the service asks [`PrincipalLimits::check_request`] and turns a
//! [`RetryAfter`] into `429 Too Many Requests` with a `Retry-After` header; the listen router
//! holds a [`StreamPermit`] for each open stream and answers a [`LimitReached`] its own way.
//! Callers without a principal share one key (`None`) for the rate, so with no authenticator
//! these limits are node-wide.
//!
//! Limits are per replica: N replicas admit up to N times the rate and streams of one
//! principal. Time is `tokio::time::Instant`, so tests drive it with paused time.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// A sustained request rate with a burst allowance (token bucket: `burst` tokens, refilled at
/// `per_second`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Tokens added per second (the sustained rate). Must be positive and finite.
    pub per_second: f64,
    /// Bucket size: how many requests may arrive at once after an idle period (at least 1).
    pub burst: u32,
}

/// A request refused by the rate limit: retry after this long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("rate limit reached; retry after {0:?}")]
pub(crate) struct RetryAfter(pub(crate) Duration);

impl RetryAfter {
    /// The `Retry-After` header value: whole seconds, rounded up, at least 1.
    pub(crate) fn header_secs(&self) -> u64 {
        let secs = self.0.as_secs() + u64::from(self.0.subsec_nanos() > 0);
        secs.max(1)
    }
}

/// A listen stream refused: the principal already holds the maximum number of streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("too many open streams for this principal (limit {limit})")]
pub(crate) struct LimitReached {
    /// The configured per-principal cap.
    pub(crate) limit: usize,
}

/// Per-principal request rate and stream limits. A cheap `Clone` handle around an `Arc`.
///
#[derive(Debug, Clone)]
pub(crate) struct PrincipalLimits {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    max_streams: usize,
    rate: Option<Rate>,
    /// Token buckets by principal (`None`: anonymous). A std mutex: every critical section is a
    /// few arithmetic operations (plus an occasional prune), never held across `.await`.
    buckets: Mutex<Buckets>,
    /// Open streams by principal; an entry is removed when its count drops to zero.
    streams: Mutex<HashMap<Option<Box<str>>, usize>>,
}

#[derive(Debug)]
struct Buckets {
    by_key: HashMap<Option<Box<str>>, Bucket>,
    last_prune: Instant,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

impl PrincipalLimits {
    /// Default cap on open listen streams per principal.
    pub(crate) const DEFAULT_MAX_STREAMS: usize = 100;

    /// At most `max_streams_per_principal` open listen streams per principal (default
    /// [`PrincipalLimits::DEFAULT_MAX_STREAMS`]), and requests at `rate` per principal (`None`: no
    /// rate limit). A non-positive or non-finite rate disables the rate limit; a burst of 0
    /// counts as 1.
    pub(crate) fn new(max_streams_per_principal: usize, rate: Option<Rate>) -> Self {
        let rate = rate
            .filter(|r| r.per_second.is_finite() && r.per_second > 0.0)
            .map(|r| Rate { per_second: r.per_second, burst: r.burst.max(1) });
        PrincipalLimits {
            inner: Arc::new(Inner {
                max_streams: max_streams_per_principal,
                rate,
                buckets: Mutex::new(Buckets { by_key: HashMap::new(), last_prune: Instant::now() }),
                streams: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Whether a request rate is set (else [`PrincipalLimits::check_requests`] admits all).
    pub(crate) fn limits_rate(&self) -> bool {
        self.inner.rate.is_some()
    }

    /// Take one request token for `principal` (`None`: anonymous), or say how long to wait.
    #[cfg(test)]
    pub(crate) fn check_request(&self, principal: Option<&str>) -> Result<(), RetryAfter> {
        self.check_requests(principal, 1)
    }

    /// Take `count` request tokens at once for `principal` (`None`: anonymous; a 2025-03-26
    /// batch counts as its messages), all or none — a refusal takes nothing — or say how long
    /// to wait.
    pub(crate) fn check_requests(&self, principal: Option<&str>, count: u32) -> Result<(), RetryAfter> {
        let Some(rate) = self.inner.rate else { return Ok(()) };
        let now = Instant::now();
        let mut buckets = lock(&self.inner.buckets);
        buckets.prune_if_due(rate, now);
        let full = Bucket { tokens: f64::from(rate.burst), updated: now };
        let bucket = buckets.by_key.entry(principal.map(Box::from)).or_insert(full);
        bucket.take(rate, now, f64::from(count))
    }

    /// Reserve one listen-stream slot for `principal` (`None`: anonymous); the slot is freed
    /// when the returned permit is dropped.
    pub(crate) fn acquire_stream(&self, principal: Option<&str>) -> Result<StreamPermit, LimitReached> {
        let key: Option<Box<str>> = principal.map(Box::from);
        let mut streams = lock(&self.inner.streams);
        let open = streams.entry(key.clone()).or_insert(0);
        if *open >= self.inner.max_streams {
            if *open == 0 {
                // Only when the cap is 0: do not leave an empty entry behind.
                streams.remove(&key);
            }
            return Err(LimitReached { limit: self.inner.max_streams });
        }
        *open += 1;
        drop(streams);
        Ok(StreamPermit { limits: self.inner.clone(), key })
    }

    /// Open streams held by `principal` right now.
    #[cfg(test)]
    pub(crate) fn open_streams(&self, principal: Option<&str>) -> usize {
        let key: Option<Box<str>> = principal.map(Box::from);
        lock(&self.inner.streams).get(&key).copied().unwrap_or(0)
    }

    /// Principals with a rate-limit bucket in memory (idle ones are pruned).
    #[cfg(test)]
    pub(crate) fn tracked_principals(&self) -> usize {
        lock(&self.inner.buckets).by_key.len()
    }
}

impl Default for PrincipalLimits {
    /// [`PrincipalLimits::DEFAULT_MAX_STREAMS`] streams, no rate limit.
    fn default() -> Self {
        PrincipalLimits::new(Self::DEFAULT_MAX_STREAMS, None)
    }
}

impl Buckets {
    /// Drop the buckets that have refilled completely: a fresh bucket is identical, so nothing
    /// is lost, and memory stays bounded by the principals active within one refill period.
    /// Runs at most once per refill period (at least once a second), so its cost is amortised.
    fn prune_if_due(&mut self, rate: Rate, now: Instant) {
        let refill = refill_period(rate);
        if now.duration_since(self.last_prune) < refill {
            return;
        }
        self.last_prune = now;
        self.by_key.retain(|_, bucket| now.duration_since(bucket.updated) < refill);
    }
}

impl Bucket {
    fn take(&mut self, rate: Rate, now: Instant, count: f64) -> Result<(), RetryAfter> {
        let elapsed = now.duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * rate.per_second).min(f64::from(rate.burst));
        self.updated = now;
        if self.tokens >= count {
            self.tokens -= count;
            return Ok(());
        }
        // More than the burst never fits: the wait is then until the bucket is full.
        let wait = (count.min(f64::from(rate.burst)) - self.tokens) / rate.per_second;
        Err(RetryAfter(Duration::try_from_secs_f64(wait).unwrap_or(Duration::MAX)))
    }
}

/// How long an empty bucket takes to fill (at least a second, so pruning stays rare).
fn refill_period(rate: Rate) -> Duration {
    let secs = f64::from(rate.burst) / rate.per_second;
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX).max(Duration::from_secs(1))
}

/// One open listen stream counted against its principal; dropping it frees the slot.
#[derive(Debug)]
pub(crate) struct StreamPermit {
    limits: Arc<Inner>,
    key: Option<Box<str>>,
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut streams = lock(&self.limits.streams);
        // `take` moves the key out (the permit is going away); `None` is the anonymous key.
        if let Entry::Occupied(mut open) = streams.entry(self.key.take()) {
            *open.get_mut() = open.get().saturating_sub(1);
            if *open.get() == 0 {
                open.remove();
            }
        }
    }
}

/// Lock, ignoring poisoning: the maps hold plain counters that a panicking holder cannot
/// leave half-updated in a way that matters (at worst one count is off by one).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
