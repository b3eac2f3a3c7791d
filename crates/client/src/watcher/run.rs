//! [`CatalogWatcher`] itself: its state, its public API (the channels a host reads, the
//! refresh handle) and the loop of [`CatalogWatcher::run`], which hands each step to
//! `events.rs`; and what credentials refused do to every list. The steps' handling lives in
//! the sibling files.

use std::future::Future;

use futures_util::StreamExt;
use futures_util::future::AbortHandle;
use futures_util::stream::FuturesUnordered;
use tokio::sync::mpsc;

use super::handles::{RefreshHandle, ResourceReceiver, SnapshotReceiver, StateReceiver};
use super::lists::{Mode, WatchedList};
use super::observer::Observer;
use super::options::WatcherOptions;
use super::resources::WatchedResource;
use super::work::{Flow, Step, WorkFuture, next_event};
use crate::capabilities::ServerCapabilities;
use crate::list::ListKind;
use crate::listener::Listener;
use crate::rpc::RpcClient;
use crate::state::Freshness;

/// The reason a list shows once credentials are refused.
pub const UNAUTHORIZED: &str = "unauthorized";

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
    pub(super) listen: RpcClient,
    // Boxed, with the options: a load tester holds thousands of idle watchers.
    pub(super) listener: Option<Box<Listener>>,
    pub(super) requests: RpcClient,
    pub(super) lists: Vec<WatchedList>,
    pub(super) resources: Vec<WatchedResource>,
    pub(super) options: Box<WatcherOptions>,
    pub(super) commands: mpsc::UnboundedReceiver<Option<ListKind>>,
    pub(super) refresh: RefreshHandle,
    pub(super) work: FuturesUnordered<WorkFuture>,
    /// What `server/discover` last said (`None`: not asked, or not yet).
    pub(super) capabilities: Option<ServerCapabilities>,
    /// Identifies the pending re-discover timer; older timers are ignored.
    pub(super) discover_generation: u64,
    /// Cancels the pending re-discover timer when it is replaced.
    pub(super) discover_timer: Option<AbortHandle>,
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

    /// The [`CatalogState`](crate::CatalogState) of `kind`; `None` if `kind` is not re-listed.
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

    /// Credentials were refused: cancel everything and show every list `unauthorized`.
    pub(super) fn stop_unauthorized(&mut self) {
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
