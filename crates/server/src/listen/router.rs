//! [`ListenRouter`]: every open listen stream on this node, indexed by scope, list type and
//! URI, so delivering an event costs O(matching streams).
//!
//! The registry is sharded by stream key, each shard behind its own lock, so opening and
//! closing streams on one worker thread does not wait for a delivery marking another shard.
//! Delivering marks every matching stream in order (cheap: one pending-set insert each), then
//! writes the directly written ones outside every lock — split across the runtime's worker
//! threads when there are several, so the syscalls of one change spread over the cores.
//!
//! The router turns bus events into notifications: it serializes each event's frame once (once
//! more for the streams of scoped principals, without the bus's position: see `tenant`), finds
//! the matching subscriptions through the indexes, marks their pending sets and wakes them. It
//! also runs the keepalive tick, the conservative invalidation after a bus gap, and the graceful
//! close on shutdown.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use tokio::time::Instant;

use mcp_fleet_bus::{EventEnvelope, EventKind};
use mcp_fleet_protocol::methods::RESOURCE_UPDATED;
use mcp_fleet_protocol::sse::NotificationFrame;
use mcp_fleet_protocol::{ListKind, RequestId, RpcError, SubscriptionFilter};
use serde_json::Value;

use super::budget::ListenBudget;
use super::limits::ListenLimits;
use super::stream::ListenBody;
use super::subscription::Subscription;
use super::tenant::Renderings;
use crate::metrics::{ListenRefusal, Metrics};

type Subs = HashMap<u64, Arc<Subscription>>;
/// A stream an event reaches, and the frame it gets.
type Target = (Arc<Subscription>, Arc<NotificationFrame>);

/// Shards of the registry (a stream lives in shard `key % SHARDS`).
const SHARDS: usize = 16;
/// Below this many streams to write, one thread writes them all (a task hop costs more).
const PARALLEL_WRITES_FROM: usize = 512;

#[derive(Default)]
struct ScopeIndex {
    /// Indexed by [`ListKind::index`] (the templates slot stays empty).
    lists: [Subs; 4],
    uris: HashMap<Arc<str>, Subs>,
}

#[derive(Default)]
struct Registry {
    all: Subs,
    scopes: HashMap<Option<String>, ScopeIndex>,
    /// Streams following a task, by task id (the tasks extension; every scope: a task is
    /// delivered only to streams of its own principal).
    tasks: HashMap<Arc<str>, Subs>,
}

/// All listen streams of one handler. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ListenRouter {
    inner: Arc<RouterInner>,
}

struct RouterInner {
    /// Each read-locked to deliver, write-locked to (un)register; never held across `.await`.
    shards: [RwLock<Registry>; SHARDS],
    /// Streams registered, over every shard.
    open: AtomicUsize,
    next_key: AtomicU64,
    /// Shutting down: refuse new streams for good.
    closing: AtomicBool,
    /// The node has not heard the bus for longer than the grace period: refuse new streams
    /// until it does again (see `health`).
    deaf: AtomicBool,
    limits: ListenLimits,
    budget: ListenBudget,
    metrics: Metrics,
}

/// The list whose change `kind` announces (`None` for a resource update).
fn list_of(kind: EventKind) -> Option<ListKind> {
    match kind {
        EventKind::ToolsListChanged => Some(ListKind::Tools),
        EventKind::PromptsListChanged => Some(ListKind::Prompts),
        EventKind::ResourcesListChanged => Some(ListKind::Resources),
        EventKind::ResourceUpdated | EventKind::SessionChanged | EventKind::TaskChanged | EventKind::Occurred => None,
    }
}

/// The notification method of `kind`.
fn method(kind: EventKind) -> &'static str {
    list_of(kind).map_or(RESOURCE_UPDATED, ListKind::list_changed)
}

/// What builds the frame of `method` (about `uri`) from one rendering of the event's metadata.
fn frame_of<'a>(method: &'a str, uri: Option<&'a str>) -> impl Fn(&Value) -> Arc<NotificationFrame> + 'a {
    move |meta| Arc::new(NotificationFrame::new(method, uri, meta))
}

/// Whether `filter` asked for `list`'s change notifications.
fn follows(filter: &SubscriptionFilter, list: ListKind) -> bool {
    match list {
        ListKind::Tools => filter.tools_list_changed,
        ListKind::Prompts => filter.prompts_list_changed,
        ListKind::Resources => filter.resources_list_changed,
        ListKind::ResourceTemplates => false,
    }
}

/// Write what was just marked on the directly written streams among `marked` (outside every
/// registry lock: this is where the syscalls are), spread over the runtime's worker threads
/// when there are several and enough to write.
///
/// In key order, which is the order the streams registered in and so, nearly, the order their
/// sockets were accepted in: the kernel's per-socket memory (the fd table, the `file` and the
/// socket) is then walked in allocation order rather than at random, as a `HashMap` would
/// give it. Same run, 10,000 HTTP/1.1 streams: 5.6 instead of 6.8 µs of CPU per delivery
/// (BENCHMARKS.md). Already sorted input (what `deliver` passes) costs one pass.
fn write_all(mut marked: Vec<Arc<Subscription>>, metrics: &Metrics) {
    marked.sort_unstable_by_key(|sub| sub.key);
    if !writes_in_parallel(marked.len()) {
        marked.iter().for_each(|sub| sub.flush(metrics));
        return;
    }
    let per_worker = marked.len().div_ceil(workers());
    let mut parts = marked.chunks(per_worker).map(<[_]>::to_vec).collect::<Vec<_>>();
    let here = parts.pop().unwrap_or_default();
    for part in parts {
        let metrics = metrics.clone();
        tokio::spawn(async move { part.iter().for_each(|sub| sub.flush(&metrics)) });
    }
    here.iter().for_each(|sub| sub.flush(metrics));
}

/// The runtime's worker threads (1 outside a runtime).
fn workers() -> usize {
    tokio::runtime::Handle::try_current().map_or(1, |h| h.metrics().num_workers())
}

/// Whether `streams` writes are worth spreading over the runtime's workers.
fn writes_in_parallel(streams: usize) -> bool {
    streams >= PARALLEL_WRITES_FROM && workers() >= 2
}

impl ListenRouter {
    pub(crate) fn new(limits: ListenLimits, metrics: Metrics) -> Self {
        let inner = RouterInner {
            shards: Default::default(),
            open: AtomicUsize::new(0),
            next_key: AtomicU64::new(1),
            closing: AtomicBool::new(false),
            deaf: AtomicBool::new(false),
            limits,
            budget: ListenBudget::new(limits.budget, metrics.clone()),
            metrics,
        };
        ListenRouter { inner: Arc::new(inner) }
    }

    pub(crate) fn limits(&self) -> &ListenLimits {
        &self.inner.limits
    }

    /// What a listen may hold before its ack (checked by the method, held by the stream).
    pub(crate) fn budget(&self) -> &ListenBudget {
        &self.inner.budget
    }

    /// Register a stream of `owner` (its tenant scope, and its principal's binding for tasks)
    /// *before* its ack is written (LSTN-5): the returned body starts with the ack, and anything
    /// delivered from now on is held in its pending set until then.
    pub(crate) fn register(
        &self,
        owner: (Option<String>, String),
        filter: SubscriptionFilter,
        request_id: RequestId,
        server_info: Arc<Value>,
    ) -> Result<ListenBody, RpcError> {
        let key = self.inner.next_key.fetch_add(1, Ordering::Relaxed);
        let expires_at = self.inner.limits.expiry(key, Instant::now());
        let sub = Arc::new(Subscription::new(key, owner, filter, request_id, server_info, expires_at));
        {
            let mut reg = self.write(key);
            // Checked under the shard's write lock; `close_all` takes every shard's to set the
            // flag: a stream is either registered before the close (and closed by it) or refused.
            if self.inner.closing.load(Ordering::Acquire) {
                return Err(RpcError::internal("Server is shutting down; reconnect to another replica"));
            }
            if self.inner.deaf.load(Ordering::Acquire) {
                self.inner.metrics.listen_refused(ListenRefusal::Deaf);
                return Err(RpcError::internal(
                    "This replica cannot receive the fleet's change events right now; reconnect to another replica",
                ));
            }
            if self.inner.open.fetch_add(1, Ordering::AcqRel) >= self.inner.limits.max_streams {
                self.inner.open.fetch_sub(1, Ordering::AcqRel);
                self.inner.metrics.listen_refused(ListenRefusal::NodeLimit);
                return Err(RpcError::internal("Subscription limit reached"));
            }
            reg.all.insert(key, sub.clone());
            let index = reg.scopes.entry(sub.scope.clone()).or_default();
            for list in ListKind::ANNOUNCED {
                if follows(&sub.filter, list) {
                    index.lists[list.index()].insert(key, sub.clone());
                }
            }
            for uri in &sub.filter.resource_subscriptions {
                index.uris.entry(Arc::from(uri.as_str())).or_default().insert(key, sub.clone());
            }
            for task in &sub.filter.task_ids {
                reg.tasks.entry(Arc::from(task.as_str())).or_default().insert(key, sub.clone());
            }
        }
        self.inner.metrics.listen_open.inc();
        self.inner.metrics.listen_opened.inc();
        Ok(ListenBody::new(sub, self.clone()))
    }

    /// Remove a stream (its body was dropped: client closed, or the stream ended).
    pub(crate) fn unregister(&self, sub: &Subscription) {
        let mut reg = self.write(sub.key);
        if reg.all.remove(&sub.key).is_none() {
            return;
        }
        self.inner.open.fetch_sub(1, Ordering::AcqRel);
        for task in &sub.filter.task_ids {
            if let Some(subs) = reg.tasks.get_mut(task.as_str()) {
                subs.remove(&sub.key);
                if subs.is_empty() {
                    reg.tasks.remove(task.as_str());
                }
            }
        }
        if let Some(index) = reg.scopes.get_mut(&sub.scope) {
            for s in &mut index.lists {
                s.remove(&sub.key);
            }
            for uri in &sub.filter.resource_subscriptions {
                if let Some(subs) = index.uris.get_mut(uri.as_str()) {
                    subs.remove(&sub.key);
                    if subs.is_empty() {
                        index.uris.remove(uri.as_str());
                    }
                }
            }
            if index.lists.iter().all(HashMap::is_empty) && index.uris.is_empty() {
                reg.scopes.remove(&sub.scope);
            }
        }
        drop(reg);
        self.inner.metrics.listen_open.dec();
    }

    /// Deliver one event to every matching local stream, with `meta` under the project
    /// `_meta` key (streams of a scoped principal: its tenant rendering, see `tenant`);
    /// returns how many streams were marked.
    pub(crate) fn deliver(&self, event: &EventEnvelope, meta: &Value) -> usize {
        if matches!(event.kind, EventKind::SessionChanged | EventKind::TaskChanged) {
            // A 2025-era session's business (see `crate::era2025`), or a task's, whose
            // notification carries the task as read from the store (see `deliver_task`).
            return 0;
        }
        let started = Instant::now();
        let uri: Option<Arc<str>> = event.uri.as_deref().map(Arc::from);
        let targets = self.targets(event, uri.as_ref(), meta);
        let marked = targets.len();
        let coalesced = self.mark_and_write(event.kind, uri.as_ref(), targets);
        self.inner.metrics.listen_fanout.observe(started.elapsed().as_secs_f64());
        self.inner.metrics.events_delivered.inc();
        let age_ms = mcp_fleet_bus::now_ms().saturating_sub(event.published_at_ms);
        self.inner.metrics.event_age.observe(age_ms as f64 / 1000.0);
        self.inner.metrics.coalesced.inc_by(coalesced);
        marked
    }

    /// The streams `event` reaches, each with the frame it gets (its tenant's rendering of
    /// `meta`), in key order. Under the shard locks only the targets are collected; they are
    /// marked and written after ([`Self::mark_and_write`]), each stream once while its memory
    /// is hot.
    fn targets(&self, event: &EventEnvelope, uri: Option<&Arc<str>>, meta: &Value) -> Vec<Target> {
        let frames = Renderings::new(meta);
        let build = frame_of(method(event.kind), event.uri.as_deref());
        let mut targets: Vec<Target> = Vec::new();
        let mut collect = |scope: &Option<String>, index: &ScopeIndex| {
            let subs = match (list_of(event.kind), uri) {
                (Some(list), _) => Some(&index.lists[list.index()]),
                (None, Some(uri)) => index.uris.get(uri),
                (None, None) => None,
            };
            let Some(subs) = subs.filter(|t| !t.is_empty()) else { return };
            let frame = frames.get(scope.is_some(), &build);
            targets.extend(subs.values().map(|sub| (sub.clone(), frame.clone())));
        };
        let scope = event.scope.clone().map(Some);
        for shard in &self.inner.shards {
            let reg = read(shard);
            match &scope {
                // A global event reaches every scope; a scoped one only its own (tenant
                // isolation).
                None => reg.scopes.iter().for_each(|(scope, index)| collect(scope, index)),
                Some(scope) => {
                    if let Some(index) = reg.scopes.get(scope) {
                        collect(scope, index);
                    }
                }
            }
        }
        targets.sort_unstable_by_key(|(sub, _)| sub.key);
        targets
    }

    /// Offer each target its frame (an event of `kind`, about `uri` when it is a resource's)
    /// and write the direct sockets among them, in order or in parallel by their number (see
    /// `write_all`); returns how many offers replaced a frame still pending (coalesced).
    fn mark_and_write(&self, kind: EventKind, uri: Option<&Arc<str>>, targets: Vec<Target>) -> u64 {
        let write_now = !writes_in_parallel(targets.len());
        let mut coalesced = 0;
        let mut to_write = Vec::new();
        for (sub, frame) in targets {
            let replaced = sub.mark(|p| match (list_of(kind), uri) {
                (Some(list), _) => p.offer_list(list, frame),
                (None, Some(uri)) => p.offer_uri(uri.clone(), frame),
                (None, None) => false,
            });
            coalesced += u64::from(replaced);
            if !sub.is_direct() {
                continue;
            }
            if write_now {
                sub.flush(&self.inner.metrics);
            } else {
                to_write.push(sub);
            }
        }
        write_all(to_write, &self.inner.metrics);
        coalesced
    }

    /// Hand `frame` (a `notifications/tasks`) to the streams of `principal` that follow task
    /// `id`; returns how many were marked.
    pub(crate) fn deliver_task(&self, id: &str, principal: &str, frame: Arc<NotificationFrame>) -> usize {
        let task: Arc<str> = Arc::from(id);
        let mut marked = Vec::new();
        for shard in &self.inner.shards {
            let reg = read(shard);
            let Some(subs) = reg.tasks.get(id) else { continue };
            for sub in subs.values().filter(|s| s.principal == principal) {
                if sub.mark(|p| p.offer_task(task.clone(), frame.clone())) {
                    self.inner.metrics.coalesced.inc();
                }
                marked.push(sub.clone());
            }
        }
        let count = marked.len();
        write_all(marked, &self.inner.metrics);
        count
    }

    /// Whether a stream here follows task `id`.
    pub(crate) fn follows_task(&self, id: &str) -> bool {
        self.inner.shards.iter().any(|shard| read(shard).tasks.contains_key(id))
    }

    /// Every task a stream here follows.
    pub(crate) fn followed_tasks(&self) -> Vec<String> {
        let mut ids = std::collections::BTreeSet::new();
        for shard in &self.inner.shards {
            ids.extend(read(shard).tasks.keys().map(|id| id.to_string()));
        }
        ids.into_iter().collect()
    }

    /// After a bus gap: every stream gets a notification for every type and URI it follows,
    /// with `meta` (the gap marker; its tenant rendering for a scoped principal's streams) — a
    /// spurious refresh is harmless, a missed one is not.
    pub(crate) fn invalidate_all(&self, meta: &Value) {
        let lists = ListKind::ANNOUNCED.map(|list| (list, Renderings::new(meta)));
        let mut uri_frames: HashMap<&str, (Arc<str>, Renderings<'_, Arc<NotificationFrame>>)> = HashMap::new();
        let mut all = Vec::with_capacity(self.open_streams());
        for shard in &self.inner.shards {
            all.extend(read(shard).all.values().cloned());
        }
        for sub in &all {
            let scoped = sub.scope.is_some();
            let followed = lists.iter().filter(|(list, _)| follows(&sub.filter, *list));
            let lists: Vec<_> = followed
                .map(|(list, frames)| (*list, frames.get(scoped, frame_of(list.list_changed(), None))))
                .collect();
            let uris: Vec<_> = sub
                .filter
                .resource_subscriptions
                .iter()
                .map(|u| {
                    let (uri, frames) =
                        uri_frames.entry(u.as_str()).or_insert_with(|| (Arc::from(u.as_str()), Renderings::new(meta)));
                    (uri.clone(), frames.get(scoped, frame_of(RESOURCE_UPDATED, Some(u))))
                })
                .collect();
            sub.mark(|p| {
                for (list, frame) in lists {
                    p.offer_list(list, frame);
                }
                for (uri, frame) in uris {
                    p.offer_uri(uri, frame);
                }
            });
        }
        write_all(all, &self.inner.metrics);
    }

    /// The periodic tick: mark every stream for a keepalive comment (written only if it has
    /// nothing else to say) when `keepalive`, and close the streams past their lifetime.
    pub(crate) fn tick(&self, keepalive: bool) {
        let now = Instant::now();
        let mut marked = Vec::new();
        for shard in &self.inner.shards {
            for sub in read(shard).all.values() {
                let expired = sub.expires_at.is_some_and(|at| now >= at);
                if keepalive || expired {
                    sub.mark(|p| {
                        p.keepalive |= keepalive;
                        p.closing |= expired;
                    });
                    marked.push(sub.clone());
                }
            }
        }
        write_all(marked, &self.inner.metrics);
    }

    /// Refuse new streams and ask every open one to write its completion result and end.
    pub(crate) fn close_all(&self) {
        self.refuse_and_close(&self.inner.closing);
    }

    /// The node went deaf past its grace period (`true`): refuse new streams and close the open
    /// ones, so clients reconnect to a replica that hears the bus; or it hears again (`false`):
    /// accept streams again.
    pub(crate) fn set_deaf(&self, deaf: bool) {
        if !deaf {
            self.inner.deaf.store(false, Ordering::Release);
        } else if !self.inner.deaf.load(Ordering::Acquire) {
            tracing::warn!(
                open = self.open_streams(),
                "the event bus is unreachable past the grace period: closing listen streams"
            );
            self.refuse_and_close(&self.inner.deaf);
        }
    }

    /// Set `flag` under every shard's write lock — `register` takes its shard's to check it, so
    /// a stream is either registered before (and closed here) or refused — and close every
    /// stream.
    fn refuse_and_close(&self, flag: &AtomicBool) {
        let shards = self.inner.shards.iter().map(write).collect::<Vec<_>>();
        flag.store(true, Ordering::Release);
        let all = shards.iter().flat_map(|reg| reg.all.values().cloned()).collect::<Vec<_>>();
        drop(shards);
        for sub in &all {
            sub.mark(|p| p.closing = true);
        }
        write_all(all, &self.inner.metrics);
    }

    /// Number of open streams.
    pub(crate) fn open_streams(&self) -> usize {
        self.inner.open.load(Ordering::Acquire)
    }

    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The shard of stream `key`, write-locked.
    fn write(&self, key: u64) -> std::sync::RwLockWriteGuard<'_, Registry> {
        write(&self.inner.shards[(key % SHARDS as u64) as usize])
    }
}

fn read(shard: &RwLock<Registry>) -> std::sync::RwLockReadGuard<'_, Registry> {
    // Registry updates are single map operations; a panic cannot leave it half-updated in a way
    // that matters more than losing the server, so use it even if poisoned.
    shard.read().unwrap_or_else(|p| p.into_inner())
}

fn write(shard: &RwLock<Registry>) -> std::sync::RwLockWriteGuard<'_, Registry> {
    shard.write().unwrap_or_else(|p| p.into_inner())
}
