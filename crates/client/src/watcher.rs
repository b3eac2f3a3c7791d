//! [`CatalogWatcher`]: the task that keeps a host's list snapshots fresh the way MCP's
//! capability-rediscovery guidance asks — capabilities first, notifications as hints, and
//! verification that does not depend on them — all owned by a single task.
//!
//! - **Capabilities first.** `server/discover` says which lists announce their changes; only
//!   those are followed on the listen stream, and a list the acknowledgement does not honour
//!   (LSTN-4) is polled instead of waited for. No list announced: no listen stream at all.
//!   Capabilities are re-read after the discover result's `ttlMs` (bounded) and on every
//!   reconnect; when what is announced changes, the listen stream is reopened to match.
//! - **Refresh without notifications.** A [`RefreshHandle`] re-reads on demand; every list is
//!   re-verified periodically ([`VerifyPolicy`]: the server's `ttlMs`, bounded below and
//!   above); a reconnect re-reads everything and cancels reads begun on the old connection.
//! - **Errors by class** ([`ErrorClass`]): 401/403 stops the watcher and surfaces
//!   `unauthorized`; `-32601` changes mode (listen → poll; an unreadable list is given up);
//!   everything else keeps the snapshot and retries with backoff.
//! - **Staleness a host can see.** Each list's [`CatalogState`] is on a `watch` channel
//!   ([`CatalogWatcher::states`]), published only when freshness, revision or reason changed.
//! - Subscribed resources ([`CatalogWatcher::resource`]) are re-read on
//!   `notifications/resources/updated`, one read in flight per URI (single-flight with one
//!   dirty re-run, the list machine reused); bursts of `list_changed` can be debounced.
//!
//! The per-list logic is [`Rediscovery`]'s; this module is the driver that does the I/O.

mod options;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use futures_util::future::{AbortHandle, abortable};
use futures_util::stream::FuturesUnordered;
use mcp_fleet_protocol::SubscriptionFilter;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

pub use self::options::{VerifyPolicy, WatcherOptions};
use crate::capabilities::ServerCapabilities;
use crate::error::{ClientError, ErrorClass};
use crate::list::{ListKind, is_invalidated_by};
use crate::listen::{follow, follows};
use crate::listener::{ListenEvent, Listener};
use crate::message::{Notification, Target};
use crate::rediscovery::{Action, Rediscovery};
use crate::rpc::RpcClient;
use crate::snapshot::{FetchReport, RequestTiming, Snapshot, fetch_snapshot};
use crate::state::{CatalogState, Freshness};

/// The reason a list shows once credentials are refused.
pub const UNAUTHORIZED: &str = "unauthorized";

/// Sees every step of a [`CatalogWatcher`]; every method defaults to doing nothing. Called
/// from the watcher's task, so implementations must be quick and must not block.
pub trait Observer: Send {
    /// A listen stream was acknowledged (`reconnect`: not the first one) with the filter
    /// the server honours.
    fn on_connected(&mut self, _honoured: &SubscriptionFilter, _reconnect: bool) {}
    /// The listen stream ended (`error == None`: closed gracefully by the server).
    fn on_disconnected(&mut self, _error: Option<&ClientError>, _retry_in: Duration) {}
    /// A change notification arrived (before any fetch it triggers starts).
    fn on_notification(&mut self, _notification: &Notification) {}
    /// An unreadable listen message was dropped; the stream stays open.
    fn on_malformed_frame(&mut self, _reason: &str) {}
    /// A fetch of `kind` started; its snapshot will cover notification number `covers`.
    fn on_fetch_started(&mut self, _kind: ListKind, _covers: u64) {}
    /// A fetch of `kind` ended; on success its snapshot is now installed.
    fn on_fetch_finished(
        &mut self,
        _kind: ListKind,
        _covers: u64,
        _requests: &[RequestTiming],
        _outcome: Result<&Snapshot, &ClientError>,
    ) {
    }
}

/// An [`Observer`] that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoObserver;

impl Observer for NoObserver {}

/// The snapshot channel of one list: `None` until the first fetch succeeds; it changes only
/// when the revision does.
pub type SnapshotReceiver = watch::Receiver<Option<Arc<Snapshot>>>;

/// The state channel of one list (see [`CatalogState`]).
pub type StateReceiver = watch::Receiver<CatalogState>;

/// The contents channel of one subscribed resource: the last `resources/read` result.
pub type ResourceReceiver = watch::Receiver<Option<Arc<Value>>>;

/// Asks a running [`CatalogWatcher`] to re-read its lists now. Cheap to clone.
#[derive(Debug, Clone)]
pub struct RefreshHandle {
    // Unbounded: a request is a few bytes and the watcher drains them at once; a bounded
    // channel would make a host's refresh wait on the watcher's task.
    tx: mpsc::UnboundedSender<Option<ListKind>>,
}

impl RefreshHandle {
    /// Re-read every list; `false` once the watcher has ended.
    pub fn refresh(&self) -> bool {
        self.tx.send(None).is_ok()
    }

    /// Re-read one list; `false` once the watcher has ended.
    pub fn refresh_list(&self, kind: ListKind) -> bool {
        self.tx.send(Some(kind)).is_ok()
    }
}

/// How a list learns of its changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The listen stream delivers its `list_changed` (advertised and honoured).
    Notified,
    /// No notifications: verified at the server's `ttlMs` (bounded).
    Polled,
    /// Not read any more (its method is gone).
    Gone,
}

struct WatchedList {
    kind: ListKind,
    state: Rediscovery<Arc<Snapshot>>,
    published: watch::Sender<Option<Arc<Snapshot>>>,
    status: watch::Sender<CatalogState>,
    mode: Mode,
    /// Cancels the running fetch (a reconnect, a stop).
    running: Option<AbortHandle>,
    /// The running fetch is a periodic verification: do not show `refreshing` for it.
    quiet: bool,
    /// Identifies the pending verification timer; older timers are ignored.
    verify_generation: u64,
    /// Cancels the pending verification timer when a newer one replaces it (else every
    /// install would leave a timer sleeping for up to `VerifyPolicy::max`).
    verify_timer: Option<AbortHandle>,
    /// A debounce timer is pending.
    debouncing: bool,
}

struct WatchedResource {
    uri: String,
    state: Rediscovery<Arc<Value>>,
    published: watch::Sender<Option<Arc<Value>>>,
}

type WorkFuture = Pin<Box<dyn Future<Output = Work> + Send>>;

/// Work finished in the background of the watcher's task.
enum Work {
    Fetched {
        list: usize,
        covers: u64,
        report: FetchReport,
    },
    /// A fetch was aborted (its connection was replaced) or a timer replaced: nothing to do.
    Cancelled,
    DiscoverDue {
        generation: u64,
    },
    Discovered(Result<ServerCapabilities, ClientError>),
    RetryDue {
        list: usize,
        token: u64,
    },
    VerifyDue {
        list: usize,
        generation: u64,
    },
    DebounceDue {
        list: usize,
    },
    Read {
        resource: usize,
        covers: u64,
        outcome: Result<Value, ClientError>,
    },
    ReadRetryDue {
        resource: usize,
        token: u64,
    },
}

/// What one turn of the loop got.
enum Step {
    Stop,
    Listen(ListenEvent),
    Work(Work),
    Refresh(Option<ListKind>),
}

/// Whether the loop goes on after a step.
#[derive(PartialEq, Eq)]
enum Flow {
    Continue,
    /// Credentials were refused: every list shows `unauthorized`, nothing is retried.
    Unauthorized,
}

/// Keeps snapshots of a set of lists fresh (see the module docs).
///
/// ```no_run
/// use mcp_fleet_client::{CatalogWatcher, Endpoint, ListKind, NoObserver, RpcClient, Transport, WatcherOptions};
/// # async fn run() -> Result<(), mcp_fleet_client::ClientError> {
/// let rpc = RpcClient::new(Transport::http1(), Endpoint::parse("http://127.0.0.1:8080/mcp")?);
/// let options = WatcherOptions { relist: vec![ListKind::Tools], ..Default::default() };
/// let watcher = CatalogWatcher::new(rpc.clone(), rpc, options);
/// let mut tools = watcher.states(ListKind::Tools).expect("followed");
/// let refresh = watcher.refresh_handle();
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// tokio::spawn(watcher.run(NoObserver, async { let _ = stopped.await; }));
/// tools.changed().await.ok();
/// println!("{}", tools.borrow().to_json());
/// refresh.refresh();
/// drop(stop);
/// # Ok(())
/// # }
/// ```
pub struct CatalogWatcher {
    listen: RpcClient,
    // Boxed, with the options: a load tester holds thousands of idle watchers.
    listener: Option<Box<Listener>>,
    requests: RpcClient,
    lists: Vec<WatchedList>,
    resources: Vec<WatchedResource>,
    options: Box<WatcherOptions>,
    commands: mpsc::UnboundedReceiver<Option<ListKind>>,
    refresh: RefreshHandle,
    work: FuturesUnordered<WorkFuture>,
    /// What `server/discover` last said (`None`: not asked, or not yet).
    capabilities: Option<ServerCapabilities>,
    /// Identifies the pending re-discover timer; older timers are ignored.
    discover_generation: u64,
    /// Cancels the pending re-discover timer when it is replaced.
    discover_timer: Option<AbortHandle>,
}

impl std::fmt::Debug for CatalogWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds: Vec<_> = self.lists.iter().map(|l| l.kind).collect();
        f.debug_struct("CatalogWatcher").field("listener", &self.listener).field("lists", &kinds).finish()
    }
}

impl CatalogWatcher {
    /// A watcher listening through `listen` and re-listing through `requests` (they may be
    /// the same client; separate ones let a tester bound re-list connections).
    pub fn new(listen: RpcClient, requests: RpcClient, options: WatcherOptions) -> CatalogWatcher {
        let mut lists: Vec<WatchedList> = Vec::new();
        for &kind in &options.relist {
            if lists.iter().all(|l| l.kind != kind) {
                lists.push(WatchedList::new(kind));
            }
        }
        let uris = if options.read_resources { options.filter.resource_subscriptions.as_slice() } else { &[] };
        let resources = uris.iter().map(|uri| WatchedResource::new(uri)).collect();
        let (tx, commands) = mpsc::unbounded_channel();
        CatalogWatcher {
            listen,
            listener: None,
            requests,
            lists,
            resources,
            options: Box::new(options),
            commands,
            refresh: RefreshHandle { tx },
            work: FuturesUnordered::new(),
            capabilities: None,
            discover_generation: 0,
            discover_timer: None,
        }
    }

    /// The snapshots of `kind` as they are installed; `None` if `kind` is not re-listed.
    pub fn snapshots(&self, kind: ListKind) -> Option<SnapshotReceiver> {
        self.lists.iter().find(|l| l.kind == kind).map(|l| l.published.subscribe())
    }

    /// The [`CatalogState`] of `kind`; `None` if `kind` is not re-listed.
    pub fn states(&self, kind: ListKind) -> Option<StateReceiver> {
        self.lists.iter().find(|l| l.kind == kind).map(|l| l.status.subscribe())
    }

    /// The contents of subscribed resource `uri` (one of the filter's
    /// `resource_subscriptions`), read on start and each reconnect and re-read on each
    /// `resources/updated` (a server without `resources.subscribe` sends none: then only on
    /// start and reconnect).
    pub fn resource(&self, uri: &str) -> Option<ResourceReceiver> {
        self.resources.iter().find(|r| r.uri == uri).map(|r| r.published.subscribe())
    }

    /// A handle asking the running watcher to re-read now.
    pub fn refresh_handle(&self) -> RefreshHandle {
        self.refresh.clone()
    }

    /// Run until `stop` resolves — or until the server refuses the credentials, which every
    /// list's state then shows as `unauthorized` — reporting to `observer`; returns the
    /// observer.
    pub async fn run<O: Observer>(mut self, mut observer: O, stop: impl Future<Output = ()>) -> O {
        tokio::pin!(stop);
        let capabilities = tokio::select! {
            biased;
            () = &mut stop => return observer,
            capabilities = self.capabilities() => capabilities,
        };
        let Some(capabilities) = capabilities else { return observer };
        self.start(capabilities, &mut observer);
        loop {
            let step = tokio::select! {
                biased;
                () = &mut stop => Step::Stop,
                Some(done) = self.work.next() => Step::Work(done),
                Some(command) = self.commands.recv() => Step::Refresh(command),
                event = next_event(&mut self.listener) => Step::Listen(event),
            };
            let flow = match step {
                Step::Stop => return observer,
                Step::Listen(event) => self.on_listen(event, &mut observer),
                Step::Work(done) => self.on_work(done, &mut observer),
                Step::Refresh(command) => self.on_refresh(command, &mut observer),
            };
            if flow == Flow::Unauthorized {
                self.stop_unauthorized();
                return observer;
            }
        }
    }

    /// `server/discover`, retried with backoff while transient; `None` when the credentials
    /// are refused (the lists then show it). Skipped (everything assumed announced) when
    /// [`WatcherOptions::discover`] is off.
    async fn capabilities(&mut self) -> Option<Option<ServerCapabilities>> {
        if !self.options.discover {
            return Some(None);
        }
        let mut failures = 0;
        loop {
            let error = match ServerCapabilities::discover(&self.requests).await {
                Ok(capabilities) => return Some(Some(capabilities)),
                Err(e) => e,
            };
            if error.class() == ErrorClass::Unauthorized {
                self.stop_unauthorized();
                return None;
            }
            for list in 0..self.lists.len() {
                self.publish_failure(list, &error);
            }
            tokio::time::sleep(self.options.retry.delay(failures)).await;
            failures = failures.saturating_add(1);
        }
    }

    /// Decide each list's mode from the capabilities (`None`: not discovered, follow all)
    /// and open the listen stream for what is announced; polled lists are read right away.
    fn start(&mut self, capabilities: Option<ServerCapabilities>, observer: &mut impl Observer) {
        self.adopt(capabilities);
        for list in 0..self.lists.len() {
            if self.listener.is_none() || self.lists[list].mode == Mode::Polled {
                self.heard(list, "first read", observer);
            }
        }
        for resource in 0..self.resources.len() {
            let action = self.resources[resource].state.on_change();
            self.apply_read(resource, action);
        }
    }

    /// Set each list's mode from `capabilities` and (re)open the listen stream for the
    /// announced ones; schedule the next `server/discover` (capabilities may change too).
    fn adopt(&mut self, capabilities: Option<ServerCapabilities>) {
        let mut filter = self.options.filter.clone();
        if capabilities.is_some_and(|c| !c.resource_subscribe) {
            filter.resource_subscriptions.clear();
        }
        for list in &mut self.lists {
            if list.mode == Mode::Gone {
                continue;
            }
            list.mode = match capabilities {
                Some(c) if !c.announces(list.kind) => Mode::Polled,
                _ => Mode::Notified,
            };
            if list.mode == Mode::Notified {
                follow(&mut filter, list.kind);
            }
        }
        self.listener =
            (!filter.is_empty()).then(|| Box::new(Listener::new(self.listen.clone(), filter, self.options.listener)));
        if let Some(capabilities) = capabilities {
            self.capabilities = Some(capabilities);
            self.schedule_discover(capabilities.ttl_ms);
        }
    }

    /// The next `server/discover` after the discover result's own `ttlMs`, bounded like list
    /// verification.
    fn schedule_discover(&mut self, ttl_ms: Option<u64>) {
        let Some(interval) = self.options.verify.interval(ttl_ms, false) else { return };
        self.discover_generation += 1;
        let (due, handle) = timer(interval, Work::DiscoverDue { generation: self.discover_generation });
        if let Some(replaced) = self.discover_timer.replace(handle) {
            replaced.abort();
        }
        self.work.push(due);
    }

    fn discover_now(&mut self) {
        let rpc = self.requests.clone();
        self.discover_generation += 1;
        self.work.push(Box::pin(async move { Work::Discovered(ServerCapabilities::discover(&rpc).await) }));
    }

    /// A re-read of the capabilities: if what is announced changed, the listen stream is
    /// reopened for the new set and lists that lost their notifications start polling.
    fn on_discovered(
        &mut self,
        outcome: Result<ServerCapabilities, ClientError>,
        observer: &mut impl Observer,
    ) -> Flow {
        let capabilities = match outcome {
            Ok(capabilities) => capabilities,
            Err(error) if error.class() == ErrorClass::Unauthorized => return Flow::Unauthorized,
            Err(_) => {
                let ttl = self.capabilities.and_then(|c| c.ttl_ms);
                self.schedule_discover(ttl);
                return Flow::Continue;
            }
        };
        let announced = |c: Option<ServerCapabilities>, list: &WatchedList| c.is_none_or(|c| c.announces(list.kind));
        let changed = self.capabilities.map(|c| c.resource_subscribe) != Some(capabilities.resource_subscribe)
            || self.lists.iter().any(|l| announced(self.capabilities, l) != capabilities.announces(l.kind));
        if !changed {
            self.capabilities = Some(capabilities);
            self.schedule_discover(capabilities.ttl_ms);
            return Flow::Continue;
        }
        self.adopt(Some(capabilities));
        for list in 0..self.lists.len() {
            if self.lists[list].mode == Mode::Polled {
                self.heard(list, "capabilities changed", observer);
            }
        }
        Flow::Continue
    }

    fn on_listen(&mut self, event: ListenEvent, observer: &mut impl Observer) -> Flow {
        match event {
            ListenEvent::Connected { honoured, reconnect } => self.on_connected(&honoured, reconnect, observer),
            ListenEvent::Changed(notification) => self.on_notification(&notification, observer),
            ListenEvent::Malformed { reason } => observer.on_malformed_frame(&reason),
            ListenEvent::Disconnected { error, retry_in } => {
                observer.on_disconnected(error.as_ref(), retry_in);
                if let Some(error) = error {
                    return self.on_listen_failed(&error, observer);
                }
            }
        }
        Flow::Continue
    }

    /// A stream is open: lists it does not honour are polled; after a reconnect every list
    /// is re-read (notifications sent meanwhile are lost), cancelling reads begun on the old
    /// connection.
    fn on_connected(&mut self, honoured: &SubscriptionFilter, reconnect: bool, observer: &mut impl Observer) {
        observer.on_connected(honoured, reconnect);
        for list in 0..self.lists.len() {
            let entry = &mut self.lists[list];
            let was = entry.mode;
            if was == Mode::Notified && !follows(honoured, entry.kind) {
                entry.mode = Mode::Polled;
            }
            match (reconnect, was) {
                (_, Mode::Gone) => {}
                (true, _) => self.restart(list, observer),
                (false, Mode::Notified) => self.heard(list, "listening", observer),
                (false, Mode::Polled) => {}
            }
        }
        if reconnect && self.capabilities.is_some() {
            // The server behind the stream may have been replaced: ask what it supports now.
            self.discover_now();
        }
        if reconnect {
            for resource in 0..self.resources.len() {
                let action = self.resources[resource].state.on_change();
                self.apply_read(resource, action);
            }
        }
    }

    fn on_notification(&mut self, notification: &Notification, observer: &mut impl Observer) {
        observer.on_notification(notification);
        match &notification.target {
            Target::List(notified) => {
                for list in 0..self.lists.len() {
                    if is_invalidated_by(self.lists[list].kind, *notified) {
                        self.debounced(list, observer);
                    }
                }
            }
            Target::Resource(uri) => {
                if let Some(resource) = self.resources.iter().position(|r| &r.uri == uri) {
                    let action = self.resources[resource].state.on_change();
                    self.apply_read(resource, action);
                }
            }
        }
    }

    /// The listen stream failed: refused credentials stop everything; a server without
    /// `subscriptions/listen` turns every list to polling; a lost connection shows the lists
    /// `unavailable` (their snapshots kept) while the listener reconnects.
    fn on_listen_failed(&mut self, error: &ClientError, observer: &mut impl Observer) -> Flow {
        match error.class() {
            ErrorClass::Unauthorized => return Flow::Unauthorized,
            ErrorClass::MethodNotFound => {
                self.listener = None;
                for list in 0..self.lists.len() {
                    if self.lists[list].mode == Mode::Notified {
                        self.lists[list].mode = Mode::Polled;
                        self.heard(list, "polling: no subscriptions/listen", observer);
                    }
                }
            }
            ErrorClass::Transient if error.is_unreachable() => {
                for list in 0..self.lists.len() {
                    self.publish_failure(list, error);
                }
            }
            ErrorClass::Transient => {}
        }
        Flow::Continue
    }

    fn on_refresh(&mut self, command: Option<ListKind>, observer: &mut impl Observer) -> Flow {
        for list in 0..self.lists.len() {
            if command.is_none_or(|kind| kind == self.lists[list].kind) {
                self.heard(list, "refresh requested", observer);
            }
        }
        Flow::Continue
    }

    fn on_work(&mut self, done: Work, observer: &mut impl Observer) -> Flow {
        match done {
            Work::Fetched { list, covers, report } => return self.on_fetched(list, covers, report, observer),
            Work::Cancelled => {}
            Work::RetryDue { list, token } => {
                let action = self.lists[list].state.on_retry_due(token);
                self.apply(list, action, observer);
            }
            Work::VerifyDue { list, generation } => self.on_verify_due(list, generation, observer),
            Work::DebounceDue { list } => {
                self.lists[list].debouncing = false;
                self.heard(list, "list_changed", observer);
            }
            Work::Read { resource, covers, outcome } => return self.on_read(resource, covers, outcome),
            Work::DiscoverDue { generation } if generation == self.discover_generation => self.discover_now(),
            Work::DiscoverDue { .. } => {}
            Work::Discovered(outcome) => return self.on_discovered(outcome, observer),
            Work::ReadRetryDue { resource, token } => {
                let action = self.resources[resource].state.on_retry_due(token);
                self.apply_read(resource, action);
            }
        }
        Flow::Continue
    }

    fn on_fetched(&mut self, list: usize, covers: u64, report: FetchReport, observer: &mut impl Observer) -> Flow {
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
    fn on_verify_due(&mut self, list: usize, generation: u64, observer: &mut impl Observer) {
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
    fn debounced(&mut self, list: usize, observer: &mut impl Observer) {
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
    fn heard(&mut self, list: usize, why: &str, observer: &mut impl Observer) {
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
    fn restart(&mut self, list: usize, observer: &mut impl Observer) {
        let entry = &mut self.lists[list];
        if let Some(running) = entry.running.take() {
            running.abort();
        }
        entry.quiet = true;
        let action = entry.state.restart();
        self.apply(list, action, observer);
    }

    fn apply(&mut self, list: usize, action: Action, observer: &mut impl Observer) {
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

    fn on_read(&mut self, resource: usize, covers: u64, outcome: Result<Value, ClientError>) -> Flow {
        let entry = &mut self.resources[resource];
        let action = match outcome {
            Ok(contents) => {
                let contents = Arc::new(contents);
                let action = entry.state.on_fetched(covers, contents.clone());
                entry.published.send_replace(Some(contents));
                action
            }
            Err(error) if error.class() == ErrorClass::Unauthorized => return Flow::Unauthorized,
            Err(error) if error.class() == ErrorClass::MethodNotFound => {
                entry.state.abandon();
                return Flow::Continue;
            }
            Err(_) => entry.state.on_fetch_failed(covers),
        };
        self.apply_read(resource, action);
        Flow::Continue
    }

    fn apply_read(&mut self, resource: usize, action: Action) {
        match action {
            Action::Idle => {}
            Action::Fetch { covers } => {
                let (rpc, uri) = (self.requests.clone(), self.resources[resource].uri.clone());
                self.work.push(Box::pin(async move {
                    let outcome = rpc.call("resources/read", json!({"uri": uri})).await;
                    Work::Read { resource, covers, outcome }
                }));
            }
            Action::Retry { failures, token } => {
                let delay = self.options.retry.delay(failures.saturating_sub(1));
                self.work.push(Box::pin(async move {
                    tokio::time::sleep(delay).await;
                    Work::ReadRetryDue { resource, token }
                }));
            }
        }
    }

    /// Show a failed read or a lost connection: `unavailable` when the server cannot be
    /// reached or nothing is held yet, else `stale`; the snapshot is kept either way.
    fn publish_failure(&mut self, list: usize, error: &ClientError) {
        let entry = &mut self.lists[list];
        if entry.mode == Mode::Gone {
            return;
        }
        let held = entry.state.snapshot().is_some();
        let freshness = if error.is_unreachable() || !held { Freshness::Unavailable } else { Freshness::Stale };
        entry.publish(freshness, Some(error.to_string()));
    }

    /// Credentials were refused: cancel everything and show every list `unauthorized`.
    fn stop_unauthorized(&mut self) {
        self.listener = None;
        self.work = FuturesUnordered::new();
        for entry in &mut self.lists {
            if let Some(running) = entry.running.take() {
                running.abort();
            }
            entry.state.abandon();
            entry.mode = Mode::Gone;
            entry.publish(Freshness::Unavailable, Some(UNAUTHORIZED.into()));
        }
    }
}

impl WatchedList {
    fn new(kind: ListKind) -> WatchedList {
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
    fn publish(&mut self, freshness: Freshness, reason: Option<String>) {
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

impl WatchedResource {
    fn new(uri: &str) -> WatchedResource {
        WatchedResource { uri: uri.to_owned(), state: Rediscovery::new(), published: watch::channel(None).0 }
    }
}

/// A timer yielding `work` after `after`, cancellable through the handle (then it yields
/// [`Work::Cancelled`] at once).
fn timer(after: Duration, work: Work) -> (WorkFuture, AbortHandle) {
    let (sleep, handle) = abortable(tokio::time::sleep(after));
    let due = Box::pin(async move {
        match sleep.await {
            Ok(()) => work,
            Err(_aborted) => Work::Cancelled,
        }
    });
    (due, handle)
}

/// The listener's next event; pending forever without a listener (polling only).
async fn next_event(listener: &mut Option<Box<Listener>>) -> ListenEvent {
    match listener {
        Some(listener) => listener.next_event().await,
        None => std::future::pending().await,
    }
}
