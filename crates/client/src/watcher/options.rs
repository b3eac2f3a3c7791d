//! [`WatcherOptions`] and [`VerifyPolicy`]: what a [`CatalogWatcher`](super::CatalogWatcher)
//! follows and how often it re-verifies what it holds when no notification says so.

use std::time::Duration;

use mcp_fleet_protocol::SubscriptionFilter;

use crate::backoff::ReconnectPolicy;
use crate::list::ListKind;
use crate::listener::ListenerOptions;
use crate::snapshot::FetchOptions;

/// Options of a [`CatalogWatcher`](super::CatalogWatcher).
#[derive(Debug, Clone)]
pub struct WatcherOptions {
    /// What the listen stream follows besides the `list_changed` of every `relist` kind:
    /// its `resource_subscriptions` are read and re-read on each `resources/updated`.
    pub filter: SubscriptionFilter,
    /// The lists to keep snapshots of.
    pub relist: Vec<ListKind>,
    /// Reconnecting the listen stream.
    pub listener: ListenerOptions,
    /// Limits of each snapshot fetch.
    pub fetch: FetchOptions,
    /// Backoff between retries of a failed fetch (and of `server/discover`).
    pub retry: ReconnectPolicy,
    /// Read `server/discover` first and follow only what it announces. Default on; off
    /// follows every list on the listen stream without asking (the load tester, which
    /// measures the stream, turns it off).
    pub discover: bool,
    /// Read each of the filter's `resource_subscriptions` on (re)connect and re-read it on
    /// each `resources/updated` ([`CatalogWatcher::resource`](super::CatalogWatcher::resource)).
    /// Default on; off only counts the notifications (the load tester).
    pub read_resources: bool,
    /// Periodic re-verification.
    pub verify: VerifyPolicy,
    /// Wait this long after a `list_changed` before re-reading, collapsing a burst into
    /// one read. Default `None`: read at once (single-flight already bounds the reads).
    pub debounce: Option<Duration>,
}

impl Default for WatcherOptions {
    fn default() -> Self {
        WatcherOptions {
            filter: SubscriptionFilter::default(),
            relist: Vec::new(),
            listener: ListenerOptions::default(),
            fetch: FetchOptions::default(),
            retry: ReconnectPolicy::default(),
            discover: true,
            read_resources: true,
            verify: VerifyPolicy::default(),
            debounce: None,
        }
    }
}

/// How often a list is re-read without a notification. Notifications are not guaranteed
/// (the rediscovery guidance): a polled list is re-read when the server's `ttlMs` runs out,
/// bounded by `min` (a `ttlMs` of 0 must not become a busy loop) and `max`; a notified list
/// is re-read every `max`, as a safety net.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyPolicy {
    /// The shortest interval. Default 2 s.
    pub min: Duration,
    /// The longest interval, also the notified lists' safety net. Default 5 min.
    pub max: Duration,
    /// Re-verify lists whose changes are notified too. Default on.
    pub notified_lists: bool,
}

impl Default for VerifyPolicy {
    fn default() -> Self {
        VerifyPolicy { min: Duration::from_secs(2), max: Duration::from_secs(300), notified_lists: true }
    }
}

impl VerifyPolicy {
    /// No periodic verification at all: only notifications, reconnects and refreshes.
    pub const OFF: VerifyPolicy = VerifyPolicy { min: Duration::MAX, max: Duration::MAX, notified_lists: false };

    /// The wait before re-verifying a list whose server said `ttl_ms`; `None`: never.
    ///
    /// ```
    /// use std::time::Duration;
    /// let policy = mcp_fleet_client::VerifyPolicy::default();
    /// assert_eq!(policy.interval(Some(0), false), Some(Duration::from_secs(2)));
    /// assert_eq!(policy.interval(Some(60_000), false), Some(Duration::from_secs(60)));
    /// assert_eq!(policy.interval(Some(u64::MAX), false), Some(Duration::from_secs(300)));
    /// assert_eq!(policy.interval(Some(60_000), true), Some(Duration::from_secs(300)));
    /// ```
    pub fn interval(&self, ttl_ms: Option<u64>, notified: bool) -> Option<Duration> {
        let wait = match (notified, ttl_ms) {
            (true, _) if !self.notified_lists => return None,
            (true, _) | (false, None) => self.max,
            (false, Some(ttl)) => Duration::from_millis(ttl).clamp(self.min, self.max),
        };
        (wait != Duration::MAX).then_some(wait)
    }
}
