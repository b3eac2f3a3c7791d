//! One re-listed list: its [`Mode`], its [`WatchedList`] (the [`Rediscovery`] machine, the
//! channels a host reads, the timers), and reading it — fetch, install, verify, debounce,
//! retry — and publishing its freshness.

use std::sync::Arc;
use std::time::SystemTime;

use futures_util::future::{AbortHandle, abortable};
use tokio::sync::watch;

use super::CatalogWatcher;
use super::observer::Observer;
use super::work::{Flow, Work, timer};
use crate::error::{ClientError, ErrorClass};
use crate::list::ListKind;
use crate::rediscovery::{Action, Rediscovery};
use crate::snapshot::{FetchReport, Snapshot, fetch_snapshot};
use crate::state::{CatalogState, Freshness};

/// How a list learns of its changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// The listen stream delivers its `list_changed` (advertised and honoured).
    Notified,
    /// No notifications: verified at the server's `ttlMs` (bounded).
    Polled,
    /// Not read any more (its method is gone).
    Gone,
}

pub(super) struct WatchedList {
    pub(super) kind: ListKind,
    pub(super) state: Rediscovery<Arc<Snapshot>>,
    pub(super) published: watch::Sender<Option<Arc<Snapshot>>>,
    pub(super) status: watch::Sender<CatalogState>,
    pub(super) mode: Mode,
    /// Cancels the running fetch (a reconnect, a stop).
    pub(super) running: Option<AbortHandle>,
    /// The running fetch is a periodic verification: do not show `refreshing` for it.
    pub(super) quiet: bool,
    /// Identifies the pending verification timer; older timers are ignored.
    pub(super) verify_generation: u64,
    /// Cancels the pending verification timer when a newer one replaces it (else every
    /// install would leave a timer sleeping for up to `VerifyPolicy::max`).
    pub(super) verify_timer: Option<AbortHandle>,
    /// A debounce timer is pending.
    pub(super) debouncing: bool,
}

impl WatchedList {
    pub(super) fn new(kind: ListKind) -> WatchedList {
        WatchedList {
            kind,
            state: Rediscovery::new(),
            published: watch::channel(None).0,
            status: watch::channel(CatalogState::new(kind)).0,
            mode: Mode::Notified,
            running: None,
            quiet: false,
            verify_generation: 0,
            verify_timer: None,
            debouncing: false,
        }
    }

    /// Set freshness and reason (unless the running read is a quiet verification), waking
    /// hosts only if that changed anything.
    pub(super) fn publish(&mut self, freshness: Freshness, reason: Option<String>) {
        if self.quiet && freshness == Freshness::Refreshing {
            return;
        }
        self.status.send_if_modified(|state| {
            let before = state.clone();
            state.freshness = freshness;
            state.reason = reason;
            state.differs_from(&before)
        });
    }
}

impl CatalogWatcher {
    pub(super) fn on_fetched(
        &mut self,
        list: usize,
        covers: u64,
        report: FetchReport,
        observer: &mut impl Observer,
    ) -> Flow {
        let entry = &mut self.lists[list];
        entry.running = None;
        entry.quiet = false;
        observer.on_fetch_finished(entry.kind, covers, &report.requests, report.outcome.as_ref());
        let action = match report.outcome {
            Ok(snapshot) => {
                let snapshot = Arc::new(snapshot);
                let action = entry.state.on_fetched(covers, snapshot.clone());
                self.installed(list, snapshot);
                action
            }
            Err(error) => match error.class() {
                ErrorClass::Unauthorized => return Flow::Unauthorized,
                ErrorClass::MethodNotFound => {
                    entry.mode = Mode::Gone;
                    entry.state.abandon();
                    let reason = format!("method not found: {}", entry.kind.method().as_str());
                    entry.publish(Freshness::Unavailable, Some(reason));
                    return Flow::Continue;
                }
                ErrorClass::Transient => {
                    let action = entry.state.on_fetch_failed(covers);
                    self.publish_failure(list, &error);
                    action
                }
            },
        };
        self.apply(list, action, observer);
        Flow::Continue
    }

    /// A snapshot was installed (or re-confirmed): publish it and schedule its verification.
    fn installed(&mut self, list: usize, fetched: Arc<Snapshot>) {
        let entry = &mut self.lists[list];
        // What the state machine holds (a fetch covering less than the installed one is
        // not installed).
        let snapshot = entry.state.snapshot().cloned().unwrap_or(fetched);
        entry.published.send_if_modified(|held| {
            let changed = held.as_ref().map(|s| &s.revision) != Some(&snapshot.revision);
            *held = Some(snapshot.clone());
            changed
        });
        let shown = entry.state.snapshot().cloned();
        let freshness = if entry.state.is_stale() { Freshness::Refreshing } else { Freshness::Fresh };
        entry.status.send_if_modified(|state| {
            let before = state.clone();
            state.snapshot = shown;
            state.fetched_at = Some(SystemTime::now());
            state.freshness = freshness;
            state.reason = (freshness == Freshness::Refreshing).then(|| "changed while reading".into());
            state.differs_from(&before)
        });
        let interval = self.options.verify.interval(snapshot.ttl_ms, entry.mode == Mode::Notified);
        if let Some(interval) = interval {
            entry.verify_generation += 1;
            let (due, handle) = timer(interval, Work::VerifyDue { list, generation: entry.verify_generation });
            if let Some(replaced) = entry.verify_timer.replace(handle) {
                replaced.abort();
            }
            self.work.push(due);
        }
    }

    /// A periodic verification is due: re-read quietly (no `refreshing` shown) unless a read
    /// is already running or a newer timer replaced this one.
    pub(super) fn on_verify_due(&mut self, list: usize, generation: u64, observer: &mut impl Observer) {
        let entry = &mut self.lists[list];
        if entry.verify_generation != generation || entry.mode == Mode::Gone || entry.state.is_fetching() {
            return;
        }
        entry.quiet = true;
        let action = entry.state.on_change();
        self.apply(list, action, observer);
    }

    /// A `list_changed` for `list`: re-read now, or after the debounce window (bursts in the
    /// window collapse into one read).
    pub(super) fn debounced(&mut self, list: usize, observer: &mut impl Observer) {
        let Some(window) = self.options.debounce else { return self.heard(list, "list_changed", observer) };
        let entry = &mut self.lists[list];
        if entry.mode == Mode::Gone || entry.debouncing {
            return;
        }
        entry.debouncing = true;
        self.work.push(Box::pin(async move {
            tokio::time::sleep(window).await;
            Work::DebounceDue { list }
        }));
    }

    /// A change was heard for `list` (`why`): read it (single-flight) and show `refreshing`.
    pub(super) fn heard(&mut self, list: usize, why: &str, observer: &mut impl Observer) {
        let entry = &mut self.lists[list];
        if entry.mode == Mode::Gone {
            return;
        }
        entry.quiet = false;
        let action = entry.state.on_change();
        entry.publish(Freshness::Refreshing, Some(why.to_owned()));
        self.apply(list, action, observer);
    }

    /// The listen stream reconnected: cancel the read begun on the old connection and read
    /// again from the first page. The re-read is a verification (nothing says the list
    /// changed), so it is quiet: a reconnect that finds the same revision wakes no host, one
    /// after an outage moves `unavailable` straight to `fresh`.
    pub(super) fn restart(&mut self, list: usize, observer: &mut impl Observer) {
        let entry = &mut self.lists[list];
        if let Some(running) = entry.running.take() {
            running.abort();
        }
        entry.quiet = true;
        let action = entry.state.restart();
        self.apply(list, action, observer);
    }

    pub(super) fn apply(&mut self, list: usize, action: Action, observer: &mut impl Observer) {
        let kind = self.lists[list].kind;
        match action {
            Action::Idle => {}
            Action::Fetch { covers } => {
                observer.on_fetch_started(kind, covers);
                let (rpc, options) = (self.requests.clone(), self.options.fetch);
                let (fetch, handle) = abortable(async move { fetch_snapshot(&rpc, kind, options).await });
                self.lists[list].running = Some(handle);
                self.work.push(Box::pin(async move {
                    match fetch.await {
                        Ok(report) => Work::Fetched { list, covers, report },
                        Err(_aborted) => Work::Cancelled,
                    }
                }));
            }
            Action::Retry { failures, token } => {
                let delay = self.options.retry.delay(failures.saturating_sub(1));
                self.work.push(Box::pin(async move {
                    tokio::time::sleep(delay).await;
                    Work::RetryDue { list, token }
                }));
            }
        }
    }

    /// Show a failed read or a lost connection: `unavailable` when the server cannot be
    /// reached or nothing is held yet, else `stale`; the snapshot is kept either way.
    pub(super) fn publish_failure(&mut self, list: usize, error: &ClientError) {
        let entry = &mut self.lists[list];
        if entry.mode == Mode::Gone {
            return;
        }
        let held = entry.state.snapshot().is_some();
        let freshness = if error.is_unreachable() || !held { Freshness::Unavailable } else { Freshness::Stale };
        entry.publish(freshness, Some(error.to_string()));
    }
}
