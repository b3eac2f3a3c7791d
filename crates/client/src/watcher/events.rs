//! What the watcher does with each step of its loop: a listen event (connected, a
//! notification, a failure), a refresh command from a [`RefreshHandle`](super::RefreshHandle),
//! or background [`Work`] that finished.

use mcp_fleet_protocol::SubscriptionFilter;

use super::CatalogWatcher;
use super::lists::Mode;
use super::observer::Observer;
use super::work::{Flow, Work};
use crate::error::{ClientError, ErrorClass};
use crate::list::{ListKind, is_invalidated_by};
use crate::listen::follows;
use crate::listener::ListenEvent;
use crate::message::{Notification, Target};

impl CatalogWatcher {
    pub(super) fn on_listen(&mut self, event: ListenEvent, observer: &mut impl Observer) -> Flow {
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

    pub(super) fn on_refresh(&mut self, command: Option<ListKind>, observer: &mut impl Observer) -> Flow {
        for list in 0..self.lists.len() {
            if command.is_none_or(|kind| kind == self.lists[list].kind) {
                self.heard(list, "refresh requested", observer);
            }
        }
        Flow::Continue
    }

    pub(super) fn on_work(&mut self, done: Work, observer: &mut impl Observer) -> Flow {
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
}
