//! [`Probe`]: the load tester's [`Observer`] on one simulated client. It turns every
//! watcher step into measurements: the stream's verifier, its lists' convergence record,
//! the loader's delivery table and request figures.
//!
//! Called on the client's own task: each call takes the stream's own (uncontended) slot lock
//! and, for change frames, the loader's delivery lock — never both at once, never across an
//! `.await`. The same probe measures 2026 listen streams (driven by a `CatalogWatcher`) and
//! 2025 GET streams (driven by a [`LegacyClient`](crate::legacy::LegacyClient)).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mcp_fleet_client::{
    ClientError, EventStamp, ListKind, Notification, Observer, RequestTiming, Snapshot, SubscriptionFilter, Target,
};
use tokio::sync::OwnedSemaphorePermit;

use crate::loader::LoaderShared;
use crate::plan::{Key, parse_uri};

/// Measures one simulated client.
#[derive(Debug)]
pub struct Probe {
    shared: Arc<LoaderShared>,
    slot: usize,
    tenant: Option<u32>,
    lists: Vec<ListKind>,
    opening: Option<(Instant, OwnedSemaphorePermit)>,
    connected: bool,
    ready: bool,
    /// Start of each list's fetch in flight (single-flight: at most one per list).
    fetch_started: Vec<(ListKind, Instant)>,
}

impl Probe {
    /// A probe for local slot `slot`, holding an open permit until the client is ready.
    pub fn new(shared: Arc<LoaderShared>, slot: usize, lists: Vec<ListKind>, permit: OwnedSemaphorePermit) -> Probe {
        let tenant = shared.with_slot(slot, |s| s.tenant);
        Probe {
            shared,
            slot,
            tenant,
            lists,
            opening: Some((Instant::now(), permit)),
            connected: false,
            ready: false,
            fetch_started: Vec::new(),
        }
    }

    /// Ready = acknowledged and, when re-listing, holding a snapshot of every list.
    fn check_ready(&mut self) {
        if self.ready || !self.connected {
            return;
        }
        if !self.lists.is_empty() && !self.shared.with_slot(self.slot, |s| s.lists.has_all_snapshots()) {
            return;
        }
        self.ready = true;
        self.opening = None; // releases the open permit
        self.shared.counters.ready.fetch_add(1, Ordering::Relaxed);
    }

    fn key_of(target: &Target) -> Option<Key> {
        match target {
            Target::List(kind) => Some(Key::of_list(*kind)),
            Target::Resource(uri) => parse_uri(uri).map(Key::Uri),
        }
    }
}

impl Observer for Probe {
    fn on_connected(&mut self, honoured: &SubscriptionFilter, reconnect: bool) {
        let at_us = self.shared.clock.now_us();
        if !reconnect && let Some((started, _)) = &self.opening {
            self.shared.record_open(started.elapsed());
        }
        if self.lists.iter().any(|k| !mcp_fleet_client::listen::follows(honoured, *k)) {
            self.shared.counters.unhonoured.fetch_add(1, Ordering::Relaxed);
        }
        self.shared.with_slot(self.slot, |s| {
            s.verifier.on_connected(at_us);
            s.lists.on_connected(at_us);
        });
        if reconnect {
            self.shared.counters.reconnects.fetch_add(1, Ordering::Relaxed);
        }
        self.connected = true;
        self.check_ready();
    }

    fn on_disconnected(&mut self, error: Option<&ClientError>, _retry_in: Duration) {
        let kind = error.map_or("graceful", ClientError::kind);
        if !self.connected {
            self.shared.counters.open_failures.fetch_add(1, Ordering::Relaxed);
        }
        self.shared.count_disconnect(kind);
    }

    fn on_notification(&mut self, notification: &Notification) {
        let at_us = self.shared.clock.now_us();
        self.shared.counters.frames.fetch_add(1, Ordering::Relaxed);
        let Some(key) = Self::key_of(&notification.target) else {
            self.shared.with_slot(self.slot, |s| s.verifier.on_frame(Key::Uri(u32::MAX), notification.stamp, at_us));
            return;
        };
        self.shared.with_slot(self.slot, |s| {
            s.verifier.on_frame(key, notification.stamp, at_us);
            if let Target::List(kind) = notification.target {
                s.lists.on_notification(kind, notification.stamp, at_us);
            }
        });
        match notification.stamp {
            EventStamp::Change { epoch, version, .. } => self.shared.on_delivery(epoch, version, at_us, self.tenant),
            EventStamp::Unstamped => self.shared.on_unstamped(self.slot, key, at_us, self.tenant),
            EventStamp::Gap { .. } => {}
        }
    }

    fn on_fetch_started(&mut self, kind: ListKind, covers: u64) {
        self.fetch_started.retain(|(k, _)| *k != kind);
        self.fetch_started.push((kind, Instant::now()));
        self.shared.with_slot(self.slot, |s| s.lists.on_fetch_started(kind, covers));
    }

    fn on_fetch_finished(
        &mut self,
        kind: ListKind,
        _covers: u64,
        requests: &[RequestTiming],
        outcome: Result<&Snapshot, &ClientError>,
    ) {
        let now = Instant::now();
        let at_us = self.shared.clock.at_us(now);
        let started =
            self.fetch_started.iter().position(|(k, _)| *k == kind).map(|i| self.fetch_started.swap_remove(i).1);
        let took = started.map(|t| now.duration_since(t)).unwrap_or_default();
        self.shared.record_fetch(requests, took, outcome.as_ref().err().map(|e| e.kind()), at_us);
        let revision = outcome.ok().map(|s| s.revision.value.as_str());
        self.shared.with_slot(self.slot, |s| s.lists.on_fetch_finished(kind, revision, at_us));
        self.check_ready();
    }
}
