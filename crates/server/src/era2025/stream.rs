//! [`SessionStreams`]: the GET streams of 2025-era sessions open on this node, and the
//! [`SessionStreamBody`] that writes one.
//!
//! A GET stream hears what the session follows — every list change, and `resources/updated`
//! for the URIs it subscribed — from change events published on any node, through the same
//! intake as listen streams (deduplicated, gap-aware). Like a listen stream it coalesces: at
//! most one pending notification per list and per URI, so a slow reader costs bounded memory
//! and the last notification it reads is newer than every change it missed. Each notification
//! carries the event's place in the bus's history (or the gap marker) under
//! `_meta["dev.mcp-fleet/event"]`, serialized once per event, as on listen streams — on a
//! scoped principal's session without the bus's position (see `crate::listen`'s `tenant`).
//!
//! Session events ([`EventKind::SessionChanged`]) end streams, stop cancelled calls running
//! here, wake calls whose client answered on another node, and keep each stream's
//! subscriptions current
//! wherever `resources/subscribe` was served: they travel the bus in order with the resource
//! updates, so an update published after a subscription was acknowledged is never filtered out
//! by a stream that has not heard of it yet. Every event written carries an SSE id — its
//! position in the bus's history, which means the same on every replica, sealed for a scoped
//! principal's session ([`EventIds`]), each its own and written in order — and a stream opens
//! with a priming event (an id, no data) at the position before everything it writes, so a
//! client can resume even before its first notification, and misses nothing by doing so. A client reconnecting with `Last-Event-ID` (to any replica) gets what it missed
//! from that node's [`History`], or, when the history cannot tell, a notification for every list
//! and every subscribed URI: the gap rule — never silence.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, RwLock};

use atomic_waker::AtomicWaker;
use mcp_fleet_bus::SessionOp;
use mcp_fleet_bus::{EventEnvelope, EventKind};
use mcp_fleet_protocol::methods::RESOURCE_UPDATED;
use mcp_fleet_protocol::state::StateSigner;
use mcp_fleet_protocol::{ListKind, sse};
use serde_json::{Value, json};

use super::calls::RunningCalls;
use super::event_id::EventIds;
use super::history::{History, Position};
use super::relay::Wakeups;
use super::session_cache::SessionCache;
use super::stream_body::SessionStreamBody;
use super::stream_pending::{Pending, gap_frames, keep_newer, notification, subscription};
use crate::listen::{DirectSocket, FollowedUris, Renderings, tenant_meta};
use crate::metrics::{Metrics, ReasonLabel};

/// One open GET stream.
pub(crate) struct SessionStream {
    pub(super) key: u64,
    session: String,
    scope: Option<String>,
    pending: Mutex<Pending>,
    /// The waker of the body that writes it, when hyper does.
    pub(super) waker: AtomicWaker,
    /// Its socket, when it is written directly (HTTP/1.1; set once, before anything is written).
    pub(super) direct: OnceLock<DirectSocket>,
}

impl SessionStream {
    fn state(&self) -> MutexGuard<'_, Pending> {
        // Each change is one field update; a panic cannot leave the set half-changed.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Change the pending set, then have it written: wake the body hyper polls, or write it to
    /// the socket now (under the registry's read lock: GET streams are few next to listen ones).
    fn update(&self, streams: &SessionStreams, change: impl FnOnce(&mut Pending)) {
        change(&mut self.state());
        match self.direct.get() {
            Some(direct) => direct.flush(|buf| streams.write_due(self, buf), false),
            None => self.waker.wake(),
        }
    }

    /// Whether an event in `scope` reaches this stream (global events reach everyone).
    fn hears(&self, scope: Option<&str>) -> bool {
        scope.is_none() || scope == self.scope.as_deref()
    }

    /// Whether its principal has a scope: it gets the tenant rendering of every event.
    fn is_scoped(&self) -> bool {
        self.scope.is_some()
    }
}

/// Why a GET stream was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StreamRefused {
    /// The node's limit of GET streams is reached.
    #[error("This replica holds its limit of {0} session streams; retry on another replica")]
    Limit(usize),
    /// The node is shutting down.
    #[error("This replica is shutting down; reconnect to another replica")]
    Closing,
}

/// Every GET stream of this node. Cheap to clone.
#[derive(Clone)]
pub(crate) struct SessionStreams {
    inner: Arc<Inner>,
}

struct Inner {
    /// Session records read recently (see `session_cache`).
    session_cache: Arc<SessionCache>,
    /// Read-locked to deliver, write-locked to (un)register; never held across `.await`.
    streams: RwLock<HashMap<u64, Arc<SessionStream>>>,
    next_key: AtomicU64,
    closing: AtomicBool,
    max_streams: usize,
    metrics: Metrics,
    /// The sessions' calls running here, which a cancel event may stop.
    calls: RunningCalls,
    /// Calls waiting here for a client's answer, which an answered event wakes.
    wakeups: Wakeups,
    /// Recent events, for resumes.
    history: History,
    /// The streams' SSE ids (sealed for scoped principals).
    ids: EventIds,
    /// Runs once inside the next `open`, just before the stream is registered: what races it.
    #[cfg(test)]
    before_register: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl SessionStreams {
    /// Streams of this node: at most `max_streams`, resumable from the last `replay_events`
    /// events, their ids sealed with `ring` for scoped principals.
    pub(crate) fn new(
        max_streams: usize,
        replay_events: usize,
        ring: StateSigner,
        metrics: Metrics,
        session_cache_for: std::time::Duration,
    ) -> Self {
        let inner = Inner {
            session_cache: Arc::new(SessionCache::new(session_cache_for, max_streams.max(1024))),
            streams: RwLock::default(),
            next_key: AtomicU64::new(1),
            closing: AtomicBool::new(false),
            max_streams,
            metrics,
            calls: RunningCalls::default(),
            wakeups: Wakeups::default(),
            history: History::new(replay_events),
            ids: EventIds::new(ring),
            #[cfg(test)]
            before_register: Mutex::default(),
        };
        SessionStreams { inner: Arc::new(inner) }
    }

    /// The session records this node read recently, which the changes it hears invalidate.
    pub(crate) fn session_cache(&self) -> Arc<SessionCache> {
        self.inner.session_cache.clone()
    }

    /// The sessions' calls running on this node.
    pub(crate) fn calls(&self) -> &RunningCalls {
        &self.inner.calls
    }

    /// The calls waiting on this node for a client's answer.
    pub(crate) fn wakeups(&self) -> &Wakeups {
        &self.inner.wakeups
    }

    /// Open the GET stream of `session` (its current subscriptions given). A stream of the same
    /// session already open here ends: the client replaced it. With `last_event_id` (a resume)
    /// it starts with what the client missed since then, from the history — or, when the
    /// history cannot tell, the gap rule's invalidation of everything the session follows.
    ///
    /// The stream is registered before the history is read, so an event recorded meanwhile is
    /// delivered to it or replayed, never neither. Its subscriptions are the record's as read
    /// before (a subscription announced before the registration reaches no stream): the caller
    /// reads the record again and hands it to [`refresh_subscriptions`](Self::refresh_subscriptions).
    pub(crate) fn open(
        &self,
        session: &str,
        scope: Option<String>,
        subscriptions: BTreeSet<String>,
        last_event_id: Option<&str>,
        followed: Option<FollowedUris>,
    ) -> Result<SessionStreamBody, StreamRefused> {
        let key = self.inner.next_key.fetch_add(1, Ordering::Relaxed);
        // Where a fresh stream starts, read before it is registered: whatever is recorded from
        // here on is either delivered to it or replayed by `catch_up`.
        let start = self.inner.history.newest();
        let after = last_event_id.map(|id| self.inner.ids.read(id, scope.as_deref()));
        let journal = Some(Vec::new());
        let mut pending = Pending { subscriptions, position: start, journal, followed, ..Pending::default() };
        pending.sync_followed();
        let stream = Arc::new(SessionStream {
            key,
            session: session.to_owned(),
            scope,
            pending: Mutex::new(pending),
            waker: AtomicWaker::new(),
            direct: OnceLock::new(),
        });
        #[cfg(test)]
        self.racing_the_registration();
        {
            let mut streams = self.write();
            if self.inner.closing.load(Ordering::Acquire) {
                return Err(StreamRefused::Closing);
            }
            let mut replaced = 0;
            for old in streams.values().filter(|s| s.session == session) {
                old.update(self, |p| p.closing = true);
                replaced += 1;
            }
            if streams.len() - replaced >= self.inner.max_streams {
                self.inner.metrics.era2025.streams_refused.inc();
                return Err(StreamRefused::Limit(self.inner.max_streams));
            }
            streams.insert(key, stream.clone());
        }
        self.inner.metrics.era2025.streams_open.inc();
        let resumed = self.catch_up(&stream, start, after);
        if let Some(replayed) = resumed {
            let reason = if replayed { "replayed" } else { "invalidated" };
            self.inner.metrics.era2025.resumes.get_or_create(&ReasonLabel { reason }).inc();
        }
        Ok(SessionStreamBody { stream, streams: self.clone(), done: false, interest: None })
    }

    /// Give a just-registered stream what it missed: for a resume, what came after the
    /// client's position `after`; for a fresh stream, what was recorded since `start` (while
    /// it registered, before it could be delivered to it). Replayed from the history, or, when
    /// the history cannot tell, the gap rule's invalidation. Answers, for a resume, whether
    /// it was replayed. Nothing is written before this returns: the body is not polled yet.
    fn catch_up(
        &self,
        stream: &SessionStream,
        start: Option<Position>,
        after: Option<Option<Position>>,
    ) -> Option<bool> {
        let (history, scope) = (&self.inner.history, stream.scope.as_deref());
        let mut p = stream.state();
        let from = after.unwrap_or(start);
        let missed = from.and_then(|from| history.missed_since(from, scope, &p.subscriptions));
        let newest = history.newest();
        p.position = p.position.max(newest);
        let replayed = match (&missed, from) {
            (Some(missed), Some(from)) => {
                // The history keeps the fleet's rendering; a scoped principal's replay gets its tenant's.
                let render = |m: &Value| if scope.is_some() { tenant_meta(m) } else { m.clone() };
                for (slot, found) in missed.lists.iter().enumerate() {
                    let method = ListKind::ANNOUNCED[slot].list_changed();
                    if let Some((at, m)) = found {
                        keep_newer(&mut p.lists[slot], (Some(*at), notification(method, None, &render(m))));
                    }
                }
                for (uri, (at, m)) in &missed.uris {
                    let update = (Some(*at), notification(RESOURCE_UPDATED, Some(uri), &render(m)));
                    if p.uris.get(uri).is_none_or(|(held, _)| *held <= update.0) {
                        p.uris.insert(uri.clone(), update);
                    }
                }
                p.prime = Some(from);
                true
            }
            // A fresh stream on a node that had heard nothing when it started: what came since
            // cannot be named, nor can a fresh stream's position be unknown when it has.
            (None, None) if after.is_none() && newest.is_none() => {
                p.prime = Some((0, 0));
                return None;
            }
            _ => {
                let meta = if after.is_some() { json!({"gap": true, "resumed": true}) } else { json!({"gap": true}) };
                p.invalidate(&gap_frames(&meta), &meta);
                // Version 0 is below every history's floor: resuming from it is the gap rule
                // again, so an invalidation the client did not read is never skipped.
                p.prime = Some((newest.map_or(0, |(epoch, _)| epoch), 0));
                false
            }
        };
        after.map(|_| replayed)
    }

    /// Deliver one change event to the streams it concerns, with `meta` (the event's place in
    /// the bus's history; its tenant rendering on a scoped principal's stream) under the
    /// project `_meta` key.
    pub(crate) fn deliver(&self, event: &EventEnvelope, meta: &Value) {
        let scope = event.scope.as_deref();
        let frames = Renderings::new(meta);
        let position = (event.version > 0).then_some((event.epoch, event.version));
        let streams = self.read();
        match (event.kind, &event.session, &event.uri) {
            (EventKind::SessionChanged, Some(change), Some(id)) if change.op == SessionOp::Cancel => {
                self.inner.calls.cancel(&change.session, id);
            }
            (EventKind::SessionChanged, Some(change), Some(id)) if change.op == SessionOp::Answered => {
                self.inner.wakeups.wake(id);
            }
            (EventKind::SessionChanged, Some(change), uri) => {
                self.inner.session_cache.forget(&change.session);
                for stream in streams.values().filter(|s| s.session == change.session) {
                    stream.update(self, |p| match (change.op, uri) {
                        (op @ (SessionOp::Subscribe | SessionOp::Unsubscribe), Some(uri)) => {
                            subscription(p, op, uri);
                            p.sync_followed();
                            if let Some(journal) = &mut p.journal {
                                journal.push((op, uri.clone()));
                            }
                        }
                        (SessionOp::End, _) => p.closing = true,
                        _ => {}
                    });
                }
            }
            (EventKind::ResourceUpdated, _, Some(uri)) => {
                for stream in streams.values().filter(|s| s.hears(scope)) {
                    if stream.state().subscriptions.contains(uri) {
                        let update = frames.get(stream.is_scoped(), |m| notification(RESOURCE_UPDATED, Some(uri), m));
                        stream.update(self, |p| {
                            p.advance(position);
                            p.uris.insert(uri.clone(), (p.position, update));
                        });
                    }
                }
            }
            (kind, _, _) => {
                let Some(slot) = ListKind::ANNOUNCED.iter().position(|l| crate::fleet::list_event(*l) == kind) else {
                    return;
                };
                let method = ListKind::ANNOUNCED[slot].list_changed();
                for stream in streams.values().filter(|s| s.hears(scope)) {
                    let changed = frames.get(stream.is_scoped(), |m| notification(method, None, m));
                    stream.update(self, |p| {
                        p.advance(position);
                        p.lists[slot] = Some((p.position, changed));
                    });
                }
            }
        }
    }

    /// Remember an event from the bus for resumes (before deduplication: see [`History`]).
    pub(crate) fn record(&self, event: &EventEnvelope, meta: &Value) {
        self.inner.history.record(event, meta);
    }

    /// Remember a catalog notification this node announced, for resumes.
    pub(crate) fn record_catalog(&self, event: &EventEnvelope, meta: &Value) {
        self.inner.history.record_catalog(event, meta);
    }

    /// After a bus gap: every stream hears of every list and every subscribed URI, with
    /// `meta` (the gap marker; its tenant rendering on a scoped principal's stream), and the
    /// history restarts.
    pub(crate) fn invalidate_all(&self, meta: &Value) {
        self.inner.history.gap();
        let (lists, tenant) = (Renderings::new(meta), tenant_meta(meta));
        for stream in self.read().values() {
            let scoped = stream.is_scoped();
            let frames = lists.get(scoped, gap_frames);
            stream.update(self, |p| p.invalidate(&frames, if scoped { &tenant } else { meta }));
        }
    }

    /// Mark every stream for a keepalive comment (written only if it has nothing else to say).
    pub(crate) fn tick(&self) {
        for stream in self.read().values() {
            stream.update(self, |p| p.keepalive = true);
        }
    }

    /// The streams of `session` start noting the subscription changes they hear: its record
    /// is about to be read (see [`refresh_subscriptions`](Self::refresh_subscriptions)).
    pub(crate) fn begin_refresh(&self, session: &str) {
        for stream in self.read().values().filter(|s| s.session == session) {
            stream.state().journal.get_or_insert_with(Vec::new);
        }
    }

    /// The record of `session`, read since [`begin_refresh`](Self::begin_refresh) (or the
    /// stream's opening), subscribes to `found` (`None`: the read failed, keep what the
    /// streams have). A stream's subscriptions are only as current as the session events it
    /// heard — one lost (published before the stream was registered, or in a bus gap) would
    /// be lost for the stream's life; the record has it. The changes heard during the read
    /// are applied again over it, so a read that lagged them undoes none. A URI the stream did
    /// not follow gets a `resources/updated` at once: its updates may have been filtered out
    /// while the stream did not know it (a spurious one is harmless, a missed one is not).
    pub(crate) fn refresh_subscriptions(&self, session: &str, found: Option<BTreeSet<String>>) {
        let meta = json!({"gap": true});
        for stream in self.read().values().filter(|s| s.session == session) {
            stream.update(self, |p| {
                let journal = p.journal.take().unwrap_or_default();
                let Some(found) = &found else { return };
                let mut subscriptions = found.clone();
                for (op, uri) in journal {
                    if op == SessionOp::Subscribe {
                        subscriptions.insert(uri);
                    } else {
                        subscriptions.remove(&uri);
                    }
                }
                p.uris.retain(|uri, _| subscriptions.contains(uri));
                for uri in subscriptions.difference(&p.subscriptions) {
                    p.uris.insert(uri.clone(), (p.position, notification(RESOURCE_UPDATED, Some(uri), &meta)));
                }
                p.subscriptions = subscriptions;
                p.sync_followed();
            });
        }
    }

    /// The sessions of the open streams (for renewing them while their streams are open).
    pub(crate) fn sessions(&self) -> Vec<String> {
        self.read().values().map(|s| s.session.clone()).collect()
    }

    /// End the streams of `session` (it ended or expired).
    pub(crate) fn close_session(&self, session: &str) {
        for stream in self.read().values().filter(|s| s.session == session) {
            stream.update(self, |p| p.closing = true);
        }
    }

    /// Refuse new streams and end every open one (shutdown).
    pub(crate) fn close_all(&self) {
        let streams = self.write();
        self.inner.closing.store(true, Ordering::Release);
        for stream in streams.values() {
            stream.update(self, |p| p.closing = true);
        }
    }

    /// Open GET streams.
    pub(crate) fn open_streams(&self) -> usize {
        self.read().len()
    }

    /// Append everything due on `stream` to `buf`: its pending notifications (after the priming
    /// event, first time), or a keepalive comment when one is due and nothing else is. Answers
    /// whether the stream ends (it closes with nothing more).
    pub(super) fn write_due(&self, stream: &SessionStream, buf: &mut Vec<u8>) -> bool {
        let had = buf.len();
        let mut state = stream.state();
        let written = state.drain_into(buf, |at| self.inner.ids.write(at, stream.scope.as_deref()));
        if buf.len() == had && state.keepalive {
            buf.extend_from_slice(sse::KEEPALIVE);
        }
        state.keepalive = false;
        let closing = state.closing;
        drop(state);
        self.inner.metrics.era2025.frames_written.inc_by(written as u64);
        closing
    }

    /// Have `race` run inside the next `open`, just before its stream is registered.
    #[cfg(test)]
    fn before_register(&self, race: impl FnOnce() + Send + 'static) {
        *self.inner.before_register.lock().unwrap_or_else(PoisonError::into_inner) = Some(Box::new(race));
    }

    #[cfg(test)]
    fn racing_the_registration(&self) {
        let race = self.inner.before_register.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(race) = race {
            race();
        }
    }

    pub(super) fn unregister(&self, stream: &SessionStream) {
        if self.write().remove(&stream.key).is_some() {
            self.inner.metrics.era2025.streams_open.dec();
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<u64, Arc<SessionStream>>> {
        // Single map operations: a panic elsewhere cannot leave the map half-updated.
        self.inner.streams.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<u64, Arc<SessionStream>>> {
        self.inner.streams.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The intake's second listener: every event reaches the sessions' GET streams too.
impl crate::listen::SessionEvents for SessionStreams {
    fn record(&self, event: &EventEnvelope, meta: &Value) {
        SessionStreams::record(self, event, meta);
    }

    fn record_catalog(&self, event: &EventEnvelope, meta: &Value) {
        SessionStreams::record_catalog(self, event, meta);
    }

    fn deliver(&self, event: &EventEnvelope, meta: &Value) {
        SessionStreams::deliver(self, event, meta);
    }

    fn invalidate_all(&self, meta: &Value) {
        SessionStreams::invalidate_all(self, meta);
    }

    fn started_at(&self, position: Position) {
        self.inner.history.started_at(position);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body::Body;
    use mcp_fleet_bus::Change;
    use std::future::poll_fn;
    use std::pin::Pin;

    fn streams(max: usize) -> SessionStreams {
        SessionStreams::new(
            max,
            100,
            StateSigner::new(&[1; 32]).unwrap(),
            Metrics::default(),
            std::time::Duration::ZERO,
        )
    }

    /// An event as the bus delivers it: at `version` of epoch 7, recorded and delivered.
    fn hear(streams: &SessionStreams, change: Change, version: u64) {
        let mut e = EventEnvelope::new(change, "n");
        (e.epoch, e.version) = (7, version);
        let meta = json!({"epoch": 7, "version": version});
        streams.record(&e, &meta);
        streams.deliver(&e, &meta);
    }

    async fn next_text(body: &mut SessionStreamBody) -> String {
        let next = poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx));
        let frame = tokio::time::timeout(std::time::Duration::from_secs(5), next).await;
        let frame = frame.expect("the stream wrote nothing within 5 s").unwrap().unwrap();
        String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap()
    }

    #[tokio::test]
    async fn hears_lists_and_only_subscribed_uris_kept_current_by_session_events() {
        let streams = streams(10);
        let mut body = streams.open("s1", None, BTreeSet::new(), None, None).unwrap();
        assert_eq!(next_text(&mut body).await, "id: 0-0\ndata: \n\n", "the priming event comes first");
        hear(&streams, Change::resource("test://a"), 1);
        hear(&streams, Change::session("s1", SessionOp::Subscribe, Some("test://a".into())), 0);
        hear(&streams, Change::session("other", SessionOp::Subscribe, Some("test://b".into())), 0);
        hear(&streams, Change::resource("test://a"), 2);
        hear(&streams, Change::resource("test://b"), 3);
        hear(&streams, Change::list(EventKind::ToolsListChanged), 4);
        let text = next_text(&mut body).await;
        assert!(text.contains("notifications/tools/list_changed"), "{text}");
        assert_eq!(text.matches("notifications/resources/updated").count(), 1, "{text}");
        assert!(text.contains("test://a") && !text.contains("test://b"), "{text}");
        assert!(text.starts_with("id: 7-2\nevent: message\ndata: {"), "ids are positions: {text}");
        assert_eq!(ids_of(&text), ["7-2", "7-4"], "each its own, in order: {text}");
        assert!(text.contains(r#""_meta":{"dev.mcp-fleet/event":{"epoch":7,"version":4}}"#), "{text}");
        hear(&streams, Change::session("s1", SessionOp::End, None), 0);
        assert!(poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await.is_none());
    }

    #[tokio::test]
    async fn a_resume_replays_what_was_missed_and_an_unknown_position_gets_the_gap_rule() {
        let streams = streams(10);
        hear(&streams, Change::list(EventKind::ToolsListChanged), 1);
        hear(&streams, Change::resource("test://w"), 2);
        hear(&streams, Change::list(EventKind::PromptsListChanged).in_scope("other"), 3);
        let subs = BTreeSet::from(["test://w".to_owned()]);
        let ids = &streams.inner.ids;
        let after_1 = ids.write((7, 1), Some("acme"));
        let mut replayed = streams.open("s1", Some("acme".into()), subs.clone(), Some(&after_1), None).unwrap();
        let text = next_text(&mut replayed).await;
        let positions: Vec<_> = ids_of(&text).into_iter().map(|id| ids.read(id, Some("acme"))).collect();
        assert_eq!(positions, [Some((7, 1)), Some((7, 2))], "primed before the replay, then the update's own: {text}");
        assert!(text.contains("resources/updated") && text.contains("test://w"), "{text}");
        assert!(!text.contains("list_changed"), "nothing else was missed by acme: {text}");
        assert!(!text.contains("version"), "the tenant rendering of what was missed: {text}");

        let unknown = ids.write((9, 1), Some("acme"));
        let mut invalidated = streams.open("s2", Some("acme".into()), subs.clone(), Some(&unknown), None).unwrap();
        let text = next_text(&mut invalidated).await;
        for method in ["tools/list_changed", "prompts/list_changed", "resources/list_changed", "resources/updated"] {
            assert!(text.contains(method), "{method}: {text}");
        }
        let mut named = streams.open("s3", Some("acme".into()), subs, Some("7-1"), None).unwrap();
        assert!(next_text(&mut named).await.contains("prompts/list_changed"), "a tenant cannot name a position");
        hear(&streams, Change::list(EventKind::PromptsListChanged).in_scope("other"), 4);
        hear(&streams, Change::list(EventKind::ToolsListChanged).in_scope("acme"), 5);
        let text = next_text(&mut invalidated).await;
        assert!(text.contains("tools/list_changed") && !text.contains("prompts"), "{text}");
    }

    /// The id of the first event in `text`.
    fn id_of(text: &str) -> &str {
        text.strip_prefix("id: ").and_then(|t| t.split_once('\n')).map_or("", |(id, _)| id)
    }

    /// The ids of every event in `text`, in order.
    fn ids_of(text: &str) -> Vec<&str> {
        text.lines().filter_map(|l| l.strip_prefix("id: ")).collect()
    }

    /// Where `what` first appears in `text`.
    fn at(text: &str, what: &str) -> usize {
        text.find(what).unwrap_or_else(|| panic!("{what} missing: {text}"))
    }

    #[tokio::test]
    async fn each_event_carries_its_own_id_in_version_order_after_a_prime_before_the_replay() {
        let streams = streams(10);
        let subs = BTreeSet::from(["test://a".to_owned()]);
        hear(&streams, Change::list(EventKind::ToolsListChanged), 37);
        hear(&streams, Change::resource("test://a"), 38);
        hear(&streams, Change::list(EventKind::ToolsListChanged), 39);
        hear(&streams, Change::list(EventKind::PromptsListChanged), 40);
        let mut resumed = streams.open("s1", None, subs.clone(), Some("7-37"), None).unwrap();
        let text = next_text(&mut resumed).await;
        assert_eq!(ids_of(&text), ["7-37", "7-38", "7-39", "7-40"], "{text}");
        assert!(at(&text, "test://a") < at(&text, "tools/list_changed"), "{text}");
        assert!(at(&text, "tools/list_changed") < at(&text, "prompts/list_changed"), "{text}");
        // A client that read only the priming event, then lost its connection, misses nothing.
        let mut again = streams.open("s2", None, subs.clone(), Some(ids_of(&text)[0]), None).unwrap();
        assert_eq!(ids_of(&next_text(&mut again).await), ["7-37", "7-38", "7-39", "7-40"]);
        // Live events written in one go keep their own ids and their order too.
        hear(&streams, Change::resource("test://a"), 41);
        hear(&streams, Change::list(EventKind::ToolsListChanged), 42);
        let text = next_text(&mut again).await;
        assert_eq!(ids_of(&text), ["7-41", "7-42"], "{text}");
        assert!(at(&text, "test://a") < at(&text, "tools/list_changed"), "{text}");
        // A fresh stream primes at the newest position; an unknown one's prime resumes to the gap rule.
        let mut fresh = streams.open("s3", None, subs.clone(), None, None).unwrap();
        assert_eq!(next_text(&mut fresh).await, "id: 7-42\ndata: \n\n");
        let mut gap = streams.open("s4", None, subs.clone(), Some("7-1"), None).unwrap();
        let text = next_text(&mut gap).await;
        assert_eq!(ids_of(&text)[..2], ["7-0", "7-42"], "{text}");
        let mut gap_again = streams.open("s5", None, subs, Some("7-0"), None).unwrap();
        assert!(next_text(&mut gap_again).await.contains(r#""resumed":true"#));
    }

    #[tokio::test]
    async fn a_node_that_heard_nothing_yet_primes_at_the_bus_position_and_resumes_from_it() {
        let streams = streams(10);
        crate::listen::SessionEvents::started_at(&streams, (7, 40));
        let mut fresh = streams.open("s1", None, BTreeSet::new(), None, None).unwrap();
        assert_eq!(next_text(&mut fresh).await, "id: 7-40\ndata: \n\n", "not 0-0");
        hear(&streams, Change::list(EventKind::ToolsListChanged), 41);
        let mut resumed = streams.open("s2", None, BTreeSet::new(), Some("7-40"), None).unwrap();
        let text = next_text(&mut resumed).await;
        assert_eq!(ids_of(&text), ["7-40", "7-41"], "replayed, not a false gap: {text}");
        assert!(!text.contains("gap") && !text.contains("prompts"), "{text}");
    }

    #[tokio::test]
    async fn an_event_or_a_subscription_racing_the_opening_is_not_lost() {
        let streams = streams(10);
        hear(&streams, Change::list(EventKind::ToolsListChanged), 1);
        let racing = streams.clone();
        streams.before_register(move || {
            // Between the GET's read of the session record and the stream's registration.
            hear(&racing, Change::session("s1", SessionOp::Subscribe, Some("test://a".into())), 2);
            hear(&racing, Change::list(EventKind::PromptsListChanged), 3);
        });
        let mut body = streams.open("s1", None, BTreeSet::new(), None, None).unwrap();
        // What the GET reads of the record once its stream is registered.
        streams.begin_refresh("s1");
        streams.refresh_subscriptions("s1", Some(BTreeSet::from(["test://a".to_owned()])));
        hear(&streams, Change::resource("test://a"), 4);
        let text = next_text(&mut body).await;
        assert!(text.contains("prompts/list_changed"), "the event recorded meanwhile: {text}");
        assert!(text.contains(r#""uri":"test://a""#) && text.contains(r#""version":4"#), "{text}");
        assert_eq!(ids_of(&text)[..2], ["7-1", "7-3"], "{text}");
    }

    #[tokio::test]
    async fn a_renewal_refreshes_subscriptions_keeping_what_happened_during_its_read() {
        let streams = streams(10);
        let mut body = streams.open("s1", None, BTreeSet::from(["test://a".to_owned()]), None, None).unwrap();
        next_text(&mut body).await;
        // The renewal reads the record ({a, b}: b's subscribe event was lost); an unsubscribe of
        // a lands during that read.
        streams.begin_refresh("s1");
        hear(&streams, Change::session("s1", SessionOp::Unsubscribe, Some("test://a".into())), 1);
        streams.refresh_subscriptions("s1", Some(BTreeSet::from(["test://a".to_owned(), "test://b".to_owned()])));
        let text = next_text(&mut body).await;
        assert!(text.contains(r#""uri":"test://b""#) && text.contains(r#""gap":true"#), "b may have changed: {text}");
        hear(&streams, Change::resource("test://a"), 2);
        hear(&streams, Change::resource("test://b"), 3);
        let text = next_text(&mut body).await;
        assert!(text.contains(r#""uri":"test://b""#) && !text.contains("test://a"), "{text}");
    }

    #[tokio::test]
    async fn a_scoped_sessions_stream_shows_the_bus_position_neither_in_ids_nor_in_metadata() {
        let streams = streams(10);
        hear(&streams, Change::list(EventKind::ToolsListChanged), 1);
        let mut body = streams.open("s1", Some("acme".into()), BTreeSet::new(), None, None).unwrap();
        let prime = next_text(&mut body).await;
        assert_eq!(streams.inner.ids.read(id_of(&prime), Some("acme")), Some((7, 1)), "{prime}");
        assert!(!prime.contains("7-1"), "{prime}");
        hear(&streams, Change::list(EventKind::PromptsListChanged).in_scope("other"), 2);
        hear(&streams, Change::list(EventKind::ToolsListChanged).in_scope("acme"), 3);
        let text = next_text(&mut body).await;
        assert_eq!(streams.inner.ids.read(id_of(&text), Some("acme")), Some((7, 3)), "{text}");
        assert!(text.contains(r#""_meta":{"dev.mcp-fleet/event":{}}"#) && !text.contains("7-3"), "{text}");
        streams.invalidate_all(&json!({"gap": true, "epoch": 7, "lastVersion": 3}));
        let text = next_text(&mut body).await;
        assert!(text.contains(r#"{"gap":true}"#) && !text.contains("lastVersion"), "{text}");
    }

    #[tokio::test]
    async fn a_second_stream_of_a_session_replaces_the_first_and_the_limit_holds() {
        let streams = streams(1);
        let mut first = streams.open("s1", None, BTreeSet::new(), None, None).unwrap();
        next_text(&mut first).await;
        assert!(matches!(streams.open("s2", None, BTreeSet::new(), None, None), Err(StreamRefused::Limit(1))));
        let _second = streams.open("s1", None, BTreeSet::new(), None, None).expect("a replacement is not a new stream");
        assert!(poll_fn(|cx| Pin::new(&mut first).poll_frame(cx)).await.is_none(), "the replaced stream ends");
    }
}
