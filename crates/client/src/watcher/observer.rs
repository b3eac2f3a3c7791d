//! [`Observer`]: the hook a host (or a load tester) gives the watcher to see every step.

use std::time::Duration;

use mcp_fleet_protocol::SubscriptionFilter;

use crate::error::ClientError;
use crate::list::ListKind;
use crate::message::Notification;
use crate::snapshot::{RequestTiming, Snapshot};

/// Sees every step of a [`CatalogWatcher`](super::CatalogWatcher); every method defaults to doing nothing. Called
/// from the watcher's task, so implementations must be quick and must not block.
pub trait Observer: Send {
    /// A listen stream was acknowledged (`reconnect`: not the first one) with the filter
    /// the server honours.
    fn on_connected(&mut self, _honoured: &SubscriptionFilter, _reconnect: bool) {}
    /// The listen stream ended (`error == None`: closed gracefully by the server).
    fn on_disconnected(&mut self, _error: Option<&ClientError>, _retry_in: Duration) {}
    /// A change notification arrived (before any fetch it triggers starts).
    fn on_notification(&mut self, _notification: &Notification) {}
    /// An unreadable listen message was dropped; the stream stays open.
    fn on_malformed_frame(&mut self, _reason: &str) {}
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
