//! [`EventIntake`]: the one door every change event goes through on its way to this node's listen
//! streams — events from the bus consumer, and catalog changes announced locally before their
//! bus publish (see [`crate::notify`]).
//!
//! It drops duplicates (a [`DedupeWindow`] of event ids: at-least-once delivery, and the bus's
//! copy of an event this node already delivered locally), remembers the newest `(epoch,
//! version)` it delivered, and turns a gap into the router's conservative invalidation,
//! stamped with that position: "everything after this may have been missed".
//!
//! Each event delivered from the bus gets a delivery span linked to its publish
//! ([`crate::trace`]).

use std::sync::{Arc, Mutex, PoisonError};

use mcp_fleet_bus::{DedupeWindow, EventEnvelope, EventKind, GapReason};
use mcp_fleet_protocol::cursor::revision_hex;
use serde_json::{Value, json};

use super::router::ListenRouter;
use crate::metrics::Metrics;
use crate::trace;

/// The other listeners of this node's events, beside the router: the 2025 era's GET streams
/// and their replay history. The era's module implements it and the handler passes it in, so
/// the intake names nothing of that era.
pub(crate) trait SessionEvents: Send + Sync {
    /// Remember `event` for replay (before deduplication: the bus's copy brings the position).
    fn record(&self, event: &EventEnvelope, meta: &Value);
    /// Remember a converged catalog change for replay.
    fn record_catalog(&self, event: &EventEnvelope, meta: &Value);
    /// Deliver `event` to the session streams it concerns.
    fn deliver(&self, event: &EventEnvelope, meta: &Value);
    /// Events may have been missed: tell every session stream.
    fn invalidate_all(&self, meta: &Value);
    /// The consumer (re)subscribed when the bus stood at `position`: it hears every event after.
    fn started_at(&self, position: (u64, u64));
}

/// Where task events and gaps go: the tasks' loop (the tasks module implements it).
pub(crate) trait TaskEvents: Send + Sync {
    /// Task `id` changed on node `origin`.
    fn changed(&self, id: String, origin: String);
    /// Events may have been missed: every followed task is to be read again.
    fn refresh_all(&self);
}

/// Where occurrences of the events extension go: its log (the events module implements it).
pub(crate) trait OccurrenceEvents: Send + Sync {
    /// Remember an occurrence (already deduplicated).
    fn record(&self, event: &EventEnvelope);
    /// Events may have been missed.
    fn gap(&self);
    /// The consumer (re)subscribed when the bus stood at `position`.
    fn started_at(&self, position: (u64, u64));
}

/// The listeners of a node's events beside the router, passed in by the handler.
pub(crate) struct Listeners {
    /// 2025-era sessions' GET streams.
    pub(crate) sessions: Arc<dyn SessionEvents>,
    /// The tasks' loop.
    pub(crate) tasks: Arc<dyn TaskEvents>,
    /// The events extension's log, when it is on.
    pub(crate) occurrences: Option<Arc<dyn OccurrenceEvents>>,
}

/// Deduplicating, position-keeping entrance to the [`ListenRouter`].
pub(crate) struct EventIntake {
    router: ListenRouter,
    /// 2025-era sessions' GET streams hear the same events.
    sessions: Arc<dyn SessionEvents>,
    /// Task events go to the tasks' loop, and so do gaps.
    tasks: Arc<dyn TaskEvents>,
    /// Occurrences go to the events extension's log, and so do gaps.
    occurrences: Option<Arc<dyn OccurrenceEvents>>,
    metrics: Metrics,
    /// Std mutexes: uncontended (the consumer task, and the rare local announcement), never
    /// held across `.await`.
    dedupe: Mutex<DedupeWindow>,
    /// The newest `(epoch, version)` delivered from the bus.
    position: Mutex<Option<(u64, u64)>>,
}

impl EventIntake {
    /// An intake remembering `dedupe_window` event ids.
    pub(crate) fn new(router: ListenRouter, listeners: Listeners, metrics: Metrics, dedupe_window: usize) -> Self {
        let Listeners { sessions, tasks, occurrences } = listeners;
        EventIntake {
            router,
            sessions,
            tasks,
            occurrences,
            metrics,
            dedupe: Mutex::new(DedupeWindow::new(dedupe_window)),
            position: Mutex::new(None),
        }
    }

    /// Deliver an event from the bus (unless it is a duplicate).
    pub(crate) fn deliver(&self, event: &EventEnvelope) {
        if event.kind == EventKind::Occurred {
            return self.deliver_occurrence(event);
        }
        let meta = json!({"epoch": event.epoch, "version": event.version, "publishedAtMs": event.published_at_ms});
        // Before deduplication: an event delivered here first (locally, without a position)
        // gets its position from the bus's copy.
        self.sessions.record(event, &meta);
        if !self.first_sighting(&event.event_id) {
            self.metrics.duplicates_dropped.inc();
            return;
        }
        let span = trace::delivery_span(event);
        let _delivering = span.enter();
        *self.position.lock().unwrap_or_else(PoisonError::into_inner) = Some((event.epoch, event.version));
        if let (EventKind::TaskChanged, Some(id)) = (event.kind, &event.uri) {
            self.tasks.changed(id.clone(), event.origin.clone());
            return;
        }
        let streams = self.router.deliver(event, &meta);
        self.sessions.deliver(event, &meta);
        trace::record_delivered(&span, streams);
    }

    /// An occurrence goes to the events extension's log only (once).
    fn deliver_occurrence(&self, event: &EventEnvelope) {
        if !self.first_sighting(&event.event_id) {
            self.metrics.duplicates_dropped.inc();
            return;
        }
        *self.position.lock().unwrap_or_else(PoisonError::into_inner) = Some((event.epoch, event.version));
        if let Some(occurrences) = &self.occurrences {
            occurrences.record(event);
        }
    }

    /// Deliver a change this node is about to publish, before the bus has it (no epoch or
    /// version yet); the bus's copy will be dropped as a duplicate.
    pub(crate) fn deliver_local(&self, event: &EventEnvelope) {
        if self.first_sighting(&event.event_id) {
            let meta = json!({"local": true, "publishedAtMs": event.published_at_ms});
            self.router.deliver(event, &meta);
            self.sessions.deliver(event, &meta);
        }
    }

    /// Tell this node's streams that a catalog list changed: the fleet now serves `revision`
    /// (`converged`), or it did not agree in time and this is the majority's.
    pub(crate) fn deliver_catalog(&self, event: &EventEnvelope, revision: u64, converged: bool) {
        let meta =
            json!({"revision": revision_hex(revision), "converged": converged, "publishedAtMs": event.published_at_ms});
        self.router.deliver(event, &meta);
        self.sessions.record_catalog(event, &meta);
        self.sessions.deliver(event, &meta);
    }

    /// The consumer (re)subscribed when the bus stood at `position`.
    pub(crate) fn started_at(&self, position: (u64, u64)) {
        self.sessions.started_at(position);
        if let Some(occurrences) = &self.occurrences {
            occurrences.started_at(position);
        }
    }

    /// The consumer (re)subscribed when the occurrences' shard stood at `position` (a split
    /// bus, whose other events have none).
    pub(crate) fn occurrences_started_at(&self, position: (u64, u64)) {
        if let Some(occurrences) = &self.occurrences {
            occurrences.started_at(position);
        }
    }

    /// Events may have been missed: invalidate every stream conservatively.
    pub(crate) fn gap(&self, reason: &GapReason) {
        tracing::warn!(?reason, "event bus gap: invalidating every listen stream");
        self.metrics.gaps.inc();
        let meta = self.gap_meta();
        self.router.invalidate_all(&meta);
        self.sessions.invalidate_all(&meta);
        self.tasks.refresh_all();
        if let Some(occurrences) = &self.occurrences {
            occurrences.gap();
        }
    }

    /// `{"gap": true, "epoch": …, "lastVersion": …}` (the position only once one is known).
    fn gap_meta(&self) -> Value {
        match *self.position.lock().unwrap_or_else(PoisonError::into_inner) {
            Some((epoch, version)) => json!({"gap": true, "epoch": epoch, "lastVersion": version}),
            None => json!({"gap": true}),
        }
    }

    fn first_sighting(&self, id: &str) -> bool {
        self.dedupe.lock().unwrap_or_else(PoisonError::into_inner).first_sighting(id)
    }
}
