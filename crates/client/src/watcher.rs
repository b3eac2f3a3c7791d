//! [`CatalogWatcher`]: the task that keeps a host's list snapshots fresh — one listen stream
//! ([`Listener`]), one [`Rediscovery`] state machine per followed list, and the fetches they
//! ask for, all owned by a single task.
//!
//! Hosts read the snapshots through `watch` channels ([`CatalogWatcher::snapshots`]); an
//! [`Observer`] sees every step (the load tester measures through it). Each list re-lists
//! single-flight with one dirty re-run; a reconnect re-lists everything, since notifications
//! sent while the stream was down are lost.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::Value;
use tokio::sync::watch;

use crate::backoff::ReconnectPolicy;
use crate::error::ClientError;
use crate::list::ListKind;
use crate::listen::ListenFilter;
use crate::listener::{ListenEvent, Listener, ListenerOptions};
use crate::message::{Notification, Target};
use crate::rediscovery::{Action, Rediscovery};
use crate::rpc::RpcClient;
use crate::snapshot::{FetchOptions, FetchReport, RequestTiming, Snapshot, fetch_snapshot};

/// Sees every step of a [`CatalogWatcher`]; every method defaults to doing nothing. Called
/// from the watcher's task, so implementations must be quick and must not block.
pub trait Observer: Send {
    /// A listen stream was acknowledged (`reconnect`: not the first one).
    fn on_connected(&mut self, _honoured: &Value, _reconnect: bool) {}
    /// The listen stream ended (`error == None`: closed gracefully by the server).
    fn on_disconnected(&mut self, _error: Option<&ClientError>, _retry_in: Duration) {}
    /// A change notification arrived (before any fetch it triggers starts).
    fn on_notification(&mut self, _notification: &Notification) {}
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

/// Options of a [`CatalogWatcher`].
#[derive(Debug, Clone, Default)]
pub struct WatcherOptions {
    /// What the listen stream follows, besides the `list_changed` of every `relist` kind.
    pub filter: ListenFilter,
    /// The lists to keep snapshots of (re-listed on connect and on each `list_changed`).
    pub relist: Vec<ListKind>,
    /// Reconnecting the listen stream.
    pub listener: ListenerOptions,
    /// Limits of each snapshot fetch.
    pub fetch: FetchOptions,
    /// Backoff between retries of a failed fetch.
    pub retry: ReconnectPolicy,
}

/// The snapshot channel of one list: `None` until the first fetch succeeds.
pub type SnapshotReceiver = watch::Receiver<Option<Arc<Snapshot>>>;

struct WatchedList {
    kind: ListKind,
    state: Rediscovery<Arc<Snapshot>>,
    published: watch::Sender<Option<Arc<Snapshot>>>,
}

type WorkFuture = Pin<Box<dyn Future<Output = Work> + Send>>;

/// Work finished in the background of the watcher's task.
enum Work {
    Fetched { list: usize, covers: u64, report: FetchReport },
    RetryDue { list: usize, token: u64 },
}

/// What one turn of the loop got.
enum Step {
    Stop,
    Listen(ListenEvent),
    Work(Work),
}

/// Keeps snapshots of a set of lists fresh, driven by one listen stream.
///
/// ```no_run
/// use mcp_fleet_client::{CatalogWatcher, Endpoint, ListKind, NoObserver, RpcClient, Transport, WatcherOptions};
/// # async fn run() -> Result<(), mcp_fleet_client::ClientError> {
/// let rpc = RpcClient::new(Transport::http1(), Endpoint::parse("http://127.0.0.1:8080/mcp")?);
/// let options = WatcherOptions { relist: vec![ListKind::Tools], ..Default::default() };
/// let watcher = CatalogWatcher::new(rpc.clone(), rpc, options);
/// let mut tools = watcher.snapshots(ListKind::Tools).expect("followed");
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// tokio::spawn(watcher.run(NoObserver, async { let _ = stopped.await; }));
/// tools.changed().await.ok();
/// println!("{} tools", tools.borrow().as_ref().map_or(0, |s| s.items.len()));
/// drop(stop);
/// # Ok(())
/// # }
/// ```
pub struct CatalogWatcher {
    listener: Listener,
    requests: RpcClient,
    lists: Vec<WatchedList>,
    fetch: FetchOptions,
    retry: ReconnectPolicy,
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
        let mut filter = options.filter;
        let mut lists: Vec<WatchedList> = Vec::new();
        for kind in options.relist {
            if lists.iter().any(|l| l.kind == kind) {
                continue;
            }
            filter.follow(kind);
            let (published, _) = watch::channel(None);
            lists.push(WatchedList { kind, state: Rediscovery::new(), published });
        }
        CatalogWatcher {
            listener: Listener::new(listen, filter, options.listener),
            requests,
            lists,
            fetch: options.fetch,
            retry: options.retry,
        }
    }

    /// The snapshots of `kind` as they are installed; `None` if `kind` is not re-listed.
    pub fn snapshots(&self, kind: ListKind) -> Option<SnapshotReceiver> {
        self.lists.iter().find(|l| l.kind == kind).map(|l| l.published.subscribe())
    }

    /// Run until `stop` resolves, reporting to `observer`; returns the observer.
    pub async fn run<O: Observer>(mut self, mut observer: O, stop: impl Future<Output = ()>) -> O {
        let mut work: FuturesUnordered<WorkFuture> = FuturesUnordered::new();
        tokio::pin!(stop);
        loop {
            let step = tokio::select! {
                biased;
                () = &mut stop => Step::Stop,
                Some(done) = work.next() => Step::Work(done),
                event = self.listener.next_event() => Step::Listen(event),
            };
            match step {
                Step::Stop => return observer,
                Step::Listen(event) => self.on_listen(event, &mut observer, &mut work),
                Step::Work(done) => self.on_work(done, &mut observer, &mut work),
            }
        }
    }

    fn on_listen(&mut self, event: ListenEvent, observer: &mut impl Observer, work: &mut FuturesUnordered<WorkFuture>) {
        match event {
            ListenEvent::Connected { honoured, reconnect } => {
                observer.on_connected(&honoured, reconnect);
                for list in 0..self.lists.len() {
                    let action = self.lists[list].state.on_change();
                    self.apply(list, action, observer, work);
                }
            }
            ListenEvent::Changed(notification) => {
                observer.on_notification(&notification);
                let Target::List(notified) = notification.target else { return };
                for list in 0..self.lists.len() {
                    if self.lists[list].kind.is_invalidated_by(notified) {
                        let action = self.lists[list].state.on_change();
                        self.apply(list, action, observer, work);
                    }
                }
            }
            ListenEvent::Disconnected { error, retry_in } => observer.on_disconnected(error.as_ref(), retry_in),
        }
    }

    fn on_work(&mut self, done: Work, observer: &mut impl Observer, work: &mut FuturesUnordered<WorkFuture>) {
        let (list, action) = match done {
            Work::Fetched { list, covers, report } => {
                let entry = &mut self.lists[list];
                let action = match report.outcome {
                    Ok(snapshot) => {
                        observer.on_fetch_finished(entry.kind, covers, &report.requests, Ok(&snapshot));
                        let snapshot = Arc::new(snapshot);
                        let action = entry.state.on_fetched(covers, snapshot.clone());
                        entry.published.send_replace(Some(snapshot));
                        action
                    }
                    Err(error) => {
                        observer.on_fetch_finished(entry.kind, covers, &report.requests, Err(&error));
                        entry.state.on_fetch_failed(covers)
                    }
                };
                (list, action)
            }
            Work::RetryDue { list, token } => (list, self.lists[list].state.on_retry_due(token)),
        };
        self.apply(list, action, observer, work);
    }

    fn apply(
        &self,
        list: usize,
        action: Action,
        observer: &mut impl Observer,
        work: &mut FuturesUnordered<WorkFuture>,
    ) {
        let kind = self.lists[list].kind;
        match action {
            Action::Idle => {}
            Action::Fetch { covers } => {
                observer.on_fetch_started(kind, covers);
                let (rpc, options) = (self.requests.clone(), self.fetch);
                work.push(Box::pin(async move {
                    let report = fetch_snapshot(&rpc, kind, options).await;
                    Work::Fetched { list, covers, report }
                }));
            }
            Action::Retry { failures, token } => {
                let delay = self.retry.delay(failures.saturating_sub(1));
                work.push(Box::pin(async move {
                    tokio::time::sleep(delay).await;
                    Work::RetryDue { list, token }
                }));
            }
        }
    }
}
