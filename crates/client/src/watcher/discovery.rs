//! The capabilities step: `server/discover` before anything else (retried while transient),
//! each list's mode from what the server announces, the listen stream opened for those, and
//! the re-discover after the result's `ttlMs` or a reconnect, which reopens the stream when
//! the announced set changed.

use super::CatalogWatcher;
use super::lists::{Mode, WatchedList};
use super::observer::Observer;
use super::work::{Flow, Work, timer};
use crate::capabilities::ServerCapabilities;
use crate::error::{ClientError, ErrorClass};
use crate::listen::follow;
use crate::listener::Listener;

impl CatalogWatcher {
    /// `server/discover`, retried with backoff while transient; `None` when the credentials
    /// are refused (the lists then show it). Skipped (everything assumed announced) when
    /// [`WatcherOptions::discover`](super::WatcherOptions::discover) is off.
    pub(super) async fn capabilities(&mut self) -> Option<Option<ServerCapabilities>> {
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
    pub(super) fn start(&mut self, capabilities: Option<ServerCapabilities>, observer: &mut impl Observer) {
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

    pub(super) fn discover_now(&mut self) {
        let rpc = self.requests.clone();
        self.discover_generation += 1;
        self.work.push(Box::pin(async move { Work::Discovered(ServerCapabilities::discover(&rpc).await) }));
    }

    /// A re-read of the capabilities: if what is announced changed, the listen stream is
    /// reopened for the new set and lists that lost their notifications start polling.
    pub(super) fn on_discovered(
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
}
