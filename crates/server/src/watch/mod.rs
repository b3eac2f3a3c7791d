//! Watchers: work that runs on **one node of the fleet while anyone, anywhere, listens** to a
//! subject — a resource URI some stream subscribed to, or a tenant (scope) with an open
//! stream — so a server watches an upstream source (a file, a queue, a database's change
//! feed) only while someone would hear what it finds, and only once for the whole fleet.
//!
//! A [`Watchers`] set in [`HandlerOptions::watchers`](crate::HandlerOptions::watchers) is
//! called with a [`Watch`] when the fleet's first stream following a subject opens, and that
//! watch [`ends`](Watch::ended) when the last one anywhere closes. The watcher publishes what
//! it finds with [`Watch::notify`], which reaches every matching stream on every node.
//!
//! ```
//! use std::time::Duration;
//! use mcp_fleet_server::HandlerOptions;
//! use mcp_fleet_server::bus::Subject;
//! use mcp_fleet_server::watch::{Watch, Watchers};
//!
//! async fn follow_upstream(watch: Watch) {
//!     let Subject::Uri(uri) = watch.subject().clone() else { return };
//!     let mut poll = tokio::time::interval(Duration::from_secs(5));
//!     loop {
//!         tokio::select! {
//!             () = watch.ended() => return, // nobody listens any more
//!             _ = poll.tick() => {
//!                 // … if the upstream copy of `uri` changed:
//!                 let _ = watch.notify().resource_updated(uri.clone()).await;
//!             }
//!         }
//!     }
//! }
//!
//! let options = HandlerOptions::default().watchers(Watchers::new(follow_upstream));
//! ```
//!
//! # How the fleet agrees
//!
//! Through the bus's keyspace (`watches`), so on every backend with one (memory, Redis, NATS
//! JetStream; core NATS has none, and a handler given watchers there fails to start):
//!
//! - every node with a stream following a subject holds a slot of the subject's slot set,
//!   renewed every third of the [lease](Watchers::lease) while the stream is open and given
//!   back when the node's last such stream closes;
//! - the node that creates the subject's lease record runs the watch and renews the lease
//!   while any slot is live (its own or another node's); when none is, it deletes the lease
//!   and ends the watch.
//!
//! So a watch starts at once on the node whose stream was first (or within a third of the
//! lease, when that stream opened just as the watch was ending); it ends at once when that
//! node's own last stream closes the fleet's last, and within a third of the lease when the
//! last stream was on another node. A node that dies gives its slots and its leases back by
//! expiry: another node still following the subject takes the lease over within a lease and
//! starts the watch anew there. A node that cannot renew its lease for a whole lease (cut off
//! from the bus) ends its watch, so two nodes run one watch at once at most while one of them
//! is paused longer than a lease. Shutting down ends the node's watches and gives everything
//! back first.
//!
//! A 2025-era session counts through its GET stream: by its tenant, and by each URI it is
//! subscribed to (`resources/subscribe` on any node) while the stream is open — without an
//! open GET stream it would hear nothing, so it is no listener.

mod registry;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use mcp_fleet_bus::Subject;
use tokio::sync::watch;

use crate::notify::Notifier;

pub(crate) use registry::Watches;

/// How long a node's hold on a subject, and a watch's lease, last unrenewed.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15);

/// The code run while the fleet listens to a subject, and how long its lease lasts.
///
/// ```
/// use std::time::Duration;
/// use mcp_fleet_server::watch::{Watch, Watchers};
/// let watchers = Watchers::new(|watch: Watch| async move { watch.ended().await })
///     .lease(Duration::from_secs(30));
/// assert_eq!(watchers.lease_duration(), Duration::from_secs(30));
/// ```
#[derive(Clone)]
pub struct Watchers {
    pub(crate) start: Arc<dyn Fn(Watch) -> BoxFuture<'static, ()> + Send + Sync>,
    pub(crate) lease: Duration,
}

impl Watchers {
    /// Run `watcher` for every subject the fleet starts listening to, on one node, until it
    /// returns (it should return soon after [`Watch::ended`] resolves).
    pub fn new<F, Fut>(watcher: F) -> Self
    where
        F: Fn(Watch) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Watchers { start: Arc::new(move |watch| Box::pin(watcher(watch))), lease: DEFAULT_LEASE }
    }

    /// How long a hold or a lease lasts unrenewed ([`DEFAULT_LEASE`]); each is renewed every
    /// third of it. Shorter takes a dead node's watches over sooner, at more bus writes: one
    /// per followed subject per renewal on every node following it. Kept within 300 ms..1 h.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.clamp(Duration::from_millis(300), Duration::from_secs(3600));
        self
    }

    /// The lease in force.
    pub fn lease_duration(&self) -> Duration {
        self.lease
    }
}

impl std::fmt::Debug for Watchers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watchers").field("lease", &self.lease).finish_non_exhaustive()
    }
}

/// One watch: the subject the fleet listens to, a notifier for what the watcher finds, and
/// the signal that nobody listens any more.
///
/// ```
/// # async fn run(watch: mcp_fleet_server::watch::Watch) {
/// if let mcp_fleet_server::bus::Subject::Scope(tenant) = watch.subject() {
///     let _ = watch.notify().tools_changed().await; // reaches `tenant`'s streams
/// }
/// watch.ended().await;
/// # }
/// ```
pub struct Watch {
    subject: Subject,
    notifier: Notifier,
    ended: watch::Receiver<bool>,
}

impl Watch {
    pub(crate) fn new(subject: Subject, notifier: &Notifier, ended: watch::Receiver<bool>) -> Self {
        let notifier = match &subject {
            Subject::Scope(tenant) => notifier.tenant(tenant.clone()),
            Subject::Uri(_) | Subject::EveryUri => notifier.clone(),
        };
        Watch { subject, notifier, ended }
    }

    /// What the fleet listens to: [`Subject::Uri`] or [`Subject::Scope`].
    pub fn subject(&self) -> &Subject {
        &self.subject
    }

    /// The handler's notifier — scoped to the tenant when the subject is a scope.
    pub fn notify(&self) -> &Notifier {
        &self.notifier
    }

    /// Resolves when the watch ends: the fleet's last stream following the subject closed,
    /// this node lost the lease, or the handler shuts down.
    pub async fn ended(&self) {
        let mut ended = self.ended.clone();
        // A dropped sender (the registry gone with its handler) ends the watch too.
        let _ = ended.wait_for(|ended| *ended).await;
    }

    /// Whether [`Watch::ended`] has resolved.
    pub fn is_ended(&self) -> bool {
        *self.ended.borrow() || self.ended.has_changed().is_err()
    }
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch").field("subject", &self.subject).field("ended", &self.is_ended()).finish()
    }
}
