//! [`Rediscovery`]: the state machine an MCP host runs per list to keep its snapshot fresh.
//!
//! A plain synchronous struct — no I/O, no clock — driven by a task
//! ([`CatalogWatcher`](crate::CatalogWatcher)) that does the fetching and the waiting:
//!
//! - Every `list_changed` (and every (re)connect of the listen stream, since notifications
//!   sent while the client was away are lost) is *heard* and numbered.
//! - Re-listing is **single-flight**: while a fetch runs, further notifications only mark the
//!   list dirty; when the fetch ends, **one** re-run covers all of them.
//! - A fetch that started after notification *n* was heard *covers* *n*: its snapshot
//!   reflects that change. The installed snapshot's coverage only grows.
//! - A failed fetch **keeps the previous snapshot** and is retried with backoff (sooner if
//!   another notification arrives).

/// What the driver must do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing for now.
    Idle,
    /// Start a fetch; its snapshot will cover every notification up to `covers`.
    Fetch {
        /// The number of the newest notification heard when the fetch starts.
        covers: u64,
    },
    /// Call [`Rediscovery::on_retry_due`] with `token` after the backoff for `failures`
    /// consecutive failures.
    Retry {
        /// Consecutive failed fetches so far (the backoff exponent).
        failures: u32,
        /// Identifies this retry; a stale token is ignored.
        token: u64,
    },
}

/// The rediscovery state of one list, holding its current snapshot `T`.
#[derive(Debug, Clone)]
pub struct Rediscovery<T> {
    heard: u64,
    in_flight: Option<u64>,
    dirty: bool,
    snapshot: Option<T>,
    covered: u64,
    failures: u32,
    retry_token: Option<u64>,
    tokens: u64,
}

impl<T> Default for Rediscovery<T> {
    fn default() -> Self {
        Rediscovery {
            heard: 0,
            in_flight: None,
            dirty: false,
            snapshot: None,
            covered: 0,
            failures: 0,
            retry_token: None,
            tokens: 0,
        }
    }
}

impl<T> Rediscovery<T> {
    /// A list with no snapshot and nothing heard.
    pub fn new() -> Self {
        Self::default()
    }

    /// A `list_changed` for this list was heard, or the listen stream (re)connected.
    ///
    /// ```
    /// use mcp_fleet_client::rediscovery::{Action, Rediscovery};
    /// let mut list = Rediscovery::<Vec<String>>::new();
    /// assert_eq!(list.on_change(), Action::Fetch { covers: 1 });
    /// assert_eq!(list.on_change(), Action::Idle); // single-flight: marked dirty
    /// assert_eq!(list.on_fetched(1, vec!["a".into()]), Action::Fetch { covers: 2 }); // one re-run
    /// assert_eq!(list.on_fetched(2, vec!["a".into(), "b".into()]), Action::Idle);
    /// assert_eq!(list.snapshot().map(Vec::len), Some(2));
    /// ```
    pub fn on_change(&mut self) -> Action {
        self.heard += 1;
        if self.in_flight.is_some() {
            self.dirty = true;
            return Action::Idle;
        }
        self.start()
    }

    /// The fetch that covers `covers` succeeded with `snapshot`: install it.
    pub fn on_fetched(&mut self, covers: u64, snapshot: T) -> Action {
        if self.in_flight != Some(covers) {
            return Action::Idle;
        }
        self.in_flight = None;
        self.failures = 0;
        if covers >= self.covered {
            self.snapshot = Some(snapshot);
            self.covered = covers;
        }
        self.rerun_if_dirty()
    }

    /// The fetch that covers `covers` failed: keep the previous snapshot; re-run at once if a
    /// notification arrived meanwhile, else retry after a backoff.
    pub fn on_fetch_failed(&mut self, covers: u64) -> Action {
        if self.in_flight != Some(covers) {
            return Action::Idle;
        }
        self.in_flight = None;
        self.failures = self.failures.saturating_add(1);
        if self.dirty {
            return self.rerun_if_dirty();
        }
        self.tokens += 1;
        self.retry_token = Some(self.tokens);
        Action::Retry { failures: self.failures, token: self.tokens }
    }

    /// The backoff of retry `token` elapsed: fetch again if still stale and idle.
    pub fn on_retry_due(&mut self, token: u64) -> Action {
        if self.retry_token != Some(token) || self.in_flight.is_some() || !self.is_stale() {
            return Action::Idle;
        }
        self.start()
    }

    /// The connection the running fetch (if any) uses is gone — a reconnect: forget that
    /// fetch and start one at once covering everything heard, the reconnect included. The
    /// old fetch's result, should it still arrive, is ignored.
    ///
    /// ```
    /// use mcp_fleet_client::rediscovery::{Action, Rediscovery};
    /// let mut list = Rediscovery::<u32>::new();
    /// assert_eq!(list.on_change(), Action::Fetch { covers: 1 });
    /// assert_eq!(list.restart(), Action::Fetch { covers: 2 });
    /// assert_eq!(list.on_fetched(1, 10), Action::Idle); // the cancelled fetch
    /// assert_eq!(list.snapshot(), None);
    /// ```
    pub fn restart(&mut self) -> Action {
        self.heard += 1;
        self.start()
    }

    /// Stop re-reading this list (it cannot be read: unauthorized, or the method is gone):
    /// no fetch is in flight any more and pending retries are void. The snapshot is kept.
    pub fn abandon(&mut self) {
        self.in_flight = None;
        self.dirty = false;
        self.retry_token = None;
    }

    /// The installed snapshot (kept across failed fetches).
    pub fn snapshot(&self) -> Option<&T> {
        self.snapshot.as_ref()
    }

    /// Notifications heard so far (also the number of the newest one).
    pub fn heard(&self) -> u64 {
        self.heard
    }

    /// The newest notification the installed snapshot covers (0: none).
    pub fn covered(&self) -> u64 {
        self.covered
    }

    /// Whether a notification was heard that the installed snapshot does not cover.
    pub fn is_stale(&self) -> bool {
        self.heard > self.covered
    }

    /// Whether a fetch is running.
    pub fn is_fetching(&self) -> bool {
        self.in_flight.is_some()
    }

    /// Consecutive failed fetches.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    fn rerun_if_dirty(&mut self) -> Action {
        if !self.dirty {
            return Action::Idle;
        }
        self.start()
    }

    fn start(&mut self) -> Action {
        self.dirty = false;
        self.retry_token = None;
        self.in_flight = Some(self.heard);
        Action::Fetch { covers: self.heard }
    }
}

#[cfg(test)]
mod tests;
