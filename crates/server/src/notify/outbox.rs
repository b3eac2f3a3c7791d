//! [`Outbox`]: catalog-driven changes on their way to the bus, retried until it accepts them.
//!
//! An entry is keyed by what the change touches — kind, scope and URI — so a burst of edits to
//! one list while the bus is down leaves one pending event, the newest. The outbox holds at
//! most [`OUTBOX_CAPACITY`] keys; past it the oldest is dropped (logged and counted:
//! `mcp_fleet_outbox_dropped_total`), which can only happen with that many distinct scopes or
//! URIs changing during one outage. One task publishes: it takes every pending entry, publishes
//! each, puts back the ones that failed (unless a newer change for the key arrived meanwhile)
//! and waits with exponential backoff before the next round. On shutdown it makes one last
//! round and logs what it could not publish.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_fleet_bus::{Backoff, EventEnvelope, EventKind, ServerEventBus};
use tokio::sync::Notify;

use crate::metrics::Metrics;
use crate::shutdown::Shutdown;

/// Most distinct keys the outbox holds.
pub(crate) const OUTBOX_CAPACITY: usize = 10_000;
/// First retry delay after a failed round (doubles up to the max).
const RETRY_MIN: Duration = Duration::from_millis(100);
/// Longest retry delay.
const RETRY_MAX: Duration = Duration::from_secs(5);

/// What an entry coalesces on.
type Key = (EventKind, Option<String>, Option<String>);

fn key(event: &EventEnvelope) -> Key {
    (event.kind, event.scope.clone(), event.uri.clone())
}

/// Pending events in arrival order; a newer event for a key replaces the older one.
#[derive(Default)]
struct Pending {
    next: u64,
    /// Key → (arrival number, event).
    entries: HashMap<Key, (u64, EventEnvelope)>,
}

/// The pending catalog-driven events and the wake-up of their publishing task.
pub(crate) struct Outbox {
    /// A std mutex: held only to insert or take entries, never across `.await`.
    pending: Mutex<Pending>,
    wake: Notify,
    metrics: Metrics,
}

impl Outbox {
    pub(crate) fn new(metrics: Metrics) -> Self {
        Outbox { pending: Mutex::default(), wake: Notify::new(), metrics }
    }

    /// Queue `event` for publishing, replacing a pending one with the same key.
    pub(crate) fn push(&self, event: EventEnvelope) {
        self.insert(event, None);
        self.wake.notify_one();
    }

    /// Insert `event`; with `only_if_older_than: Some(n)` (a failed entry going back), only if
    /// nothing newer than arrival `n` took its key meanwhile.
    fn insert(&self, event: EventEnvelope, only_if_older_than: Option<u64>) {
        let mut pending = self.lock();
        let k = key(&event);
        if let (Some(n), Some((current, _))) = (only_if_older_than, pending.entries.get(&k))
            && *current > n
        {
            return;
        }
        if !pending.entries.contains_key(&k) && pending.entries.len() >= OUTBOX_CAPACITY {
            evict_oldest(&mut pending);
            self.metrics.outbox_dropped.inc();
        }
        let n = only_if_older_than.unwrap_or_else(|| {
            pending.next += 1;
            pending.next
        });
        pending.entries.insert(k, (n, event));
        self.metrics.outbox_pending.set(pending.entries.len() as i64);
    }

    /// Take every pending entry, oldest first.
    fn take_all(&self) -> Vec<(u64, EventEnvelope)> {
        let mut pending = self.lock();
        let mut all: Vec<_> = pending.entries.drain().map(|(_, entry)| entry).collect();
        self.metrics.outbox_pending.set(0);
        all.sort_by_key(|(n, _)| *n);
        all
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        // Entries are inserted and removed whole; a panic cannot leave one half-written.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Publish pending events on `bus` until shutdown (then one last round).
    pub(crate) async fn run(self: Arc<Self>, bus: Arc<dyn ServerEventBus>, mut stop: Shutdown) {
        let mut backoff = Backoff::new(RETRY_MIN, RETRY_MAX);
        loop {
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = stop.recv() => break,
            }
            while !self.publish_round(bus.as_ref()).await {
                tokio::select! {
                    _ = tokio::time::sleep(backoff.next_delay()) => {}
                    _ = stop.recv() => break,
                }
            }
            backoff.reset();
        }
        if !self.publish_round(bus.as_ref()).await {
            let left = self.lock().entries.len();
            tracing::error!(left, "shutting down with catalog changes the event bus never accepted");
        }
    }

    /// Publish everything pending once; `true` when nothing failed.
    async fn publish_round(&self, bus: &dyn ServerEventBus) -> bool {
        let mut all_ok = true;
        for (n, event) in self.take_all() {
            if let Err(err) = bus.publish_event(event.clone()).await {
                all_ok = false;
                self.metrics.publish_failures.inc();
                self.metrics.outbox_retries.inc();
                tracing::warn!(error = %err, kind = event.kind.as_str(), "catalog change not published yet; will retry");
                self.insert(event, Some(n));
            }
        }
        all_ok
    }
}

fn evict_oldest(pending: &mut Pending) {
    let oldest = pending.entries.iter().min_by_key(|(_, (n, _))| *n).map(|(k, _)| k.clone());
    if let Some(k) = oldest {
        tracing::error!(kind = k.0.as_str(), "outbox full: dropping its oldest pending catalog change");
        pending.entries.remove(&k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_fleet_bus::Change;

    fn event(kind: EventKind, scope: Option<&str>) -> EventEnvelope {
        let mut change = Change::list(kind);
        change.scope = scope.map(str::to_owned);
        EventEnvelope::new(change, "n")
    }

    #[test]
    fn coalesces_per_key_keeping_the_newest_and_keeps_arrival_order() {
        let outbox = Outbox::new(Metrics::default());
        let first_tools = event(EventKind::ToolsListChanged, None);
        outbox.push(first_tools);
        outbox.push(event(EventKind::PromptsListChanged, None));
        let newest_tools = event(EventKind::ToolsListChanged, None);
        outbox.push(newest_tools.clone());
        outbox.push(event(EventKind::ToolsListChanged, Some("t")));
        let taken = outbox.take_all();
        let kinds: Vec<_> = taken.iter().map(|(_, e)| (e.kind, e.scope.clone())).collect();
        assert_eq!(
            kinds,
            [
                (EventKind::PromptsListChanged, None),
                (EventKind::ToolsListChanged, None),
                (EventKind::ToolsListChanged, Some("t".into()))
            ]
        );
        assert_eq!(taken[1].1.event_id, newest_tools.event_id);
    }

    #[test]
    fn a_failed_entry_goes_back_only_if_nothing_newer_took_its_key() {
        let outbox = Outbox::new(Metrics::default());
        outbox.push(event(EventKind::ToolsListChanged, None));
        let (n, failed) = outbox.take_all().remove(0);
        let newer = event(EventKind::ToolsListChanged, None);
        outbox.push(newer.clone());
        outbox.insert(failed, Some(n));
        let left = outbox.take_all();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].1.event_id, newer.event_id);
    }

    #[test]
    fn past_capacity_the_oldest_key_is_dropped_and_counted() {
        let metrics = Metrics::default();
        let outbox = Outbox::new(metrics.clone());
        for i in 0..=OUTBOX_CAPACITY {
            outbox.push(EventEnvelope::new(Change::resource(format!("a://{i}")), "n"));
        }
        assert_eq!(metrics.outbox_dropped.get(), 1);
        let left = outbox.take_all();
        assert_eq!(left.len(), OUTBOX_CAPACITY);
        assert_eq!(left[0].1.uri.as_deref(), Some("a://1"), "a://0 was the oldest");
    }
}
