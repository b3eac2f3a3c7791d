//! [`Subscription`]: one open listen stream as the router sees it — its scope, honoured filter,
//! stamped id, pending set and the waker of the body that writes it.
//!
//! Delivery is: lock the pending set (uncontended: only this stream's writer and the router
//! touch it), mark, unlock, then make it written. A stream whose body hyper writes (h2c) is
//! woken, and the connection task polling the body writes everything pending in one buffer. A
//! stream written directly to its HTTP/1.1 socket (see `direct`) is written by whoever marked
//! it, right then, with one `try_write`: no queue, no task hop.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use tokio::time::Instant;

use atomic_waker::AtomicWaker;
use mcp_fleet_protocol::{RequestId, SubscriptionFilter};
use serde_json::Value;

use super::direct::DirectSocket;
use super::pending::PendingSet;
use super::stream::write_due;
use crate::metrics::Metrics;

/// One open listen stream.
#[derive(Debug)]
pub(crate) struct Subscription {
    /// Router-local key.
    pub(crate) key: u64,
    /// Tenant scope of the principal that opened it.
    pub(crate) scope: Option<String>,
    /// The binding of the principal that opened it (`crate::tasks::binding`): it hears only
    /// that principal's tasks.
    pub(crate) principal: String,
    /// The honoured filter.
    pub(crate) filter: SubscriptionFilter,
    /// The listen request's id (echoed in the completion result).
    pub(crate) request_id: RequestId,
    /// The id as compact JSON, spliced into every frame.
    pub(crate) id_json: Box<[u8]>,
    /// `serverInfo` of the server that opened it, for the completion result.
    pub(crate) server_info: Arc<Value>,
    /// When the router closes it gracefully (`ListenLimits::max_lifetime`).
    pub(crate) expires_at: Option<Instant>,
    state: Mutex<PendingSet>,
    /// The waker of the body that writes it, when hyper does.
    pub(crate) waker: AtomicWaker,
    /// Its socket, when it is written directly (set once, before anything is written).
    pub(crate) direct: OnceLock<DirectSocket>,
}

impl Subscription {
    pub(crate) fn new(
        key: u64,
        (scope, principal): (Option<String>, String),
        filter: SubscriptionFilter,
        request_id: RequestId,
        server_info: Arc<Value>,
        expires_at: Option<Instant>,
    ) -> Self {
        let id_json = request_id.to_json().into_bytes().into_boxed_slice();
        let (state, waker) = (Mutex::new(PendingSet::new(scope.is_some())), AtomicWaker::new());
        let direct = OnceLock::new();
        Subscription {
            key,
            scope,
            principal,
            filter,
            request_id,
            id_json,
            server_info,
            expires_at,
            state,
            waker,
            direct,
        }
    }

    /// Lock the pending set.
    pub(crate) fn state(&self) -> MutexGuard<'_, PendingSet> {
        // The pending set holds no invariant a panic could break halfway (each offer is one
        // map insert), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Change the pending set, waking the body that writes it; a directly written stream is not
    /// written yet: the caller calls [`flush`](Self::flush) once it holds no registry lock.
    /// Answers what `f` returned.
    pub(crate) fn mark<R>(&self, f: impl FnOnce(&mut PendingSet) -> R) -> R {
        let r = f(&mut self.state());
        if self.direct.get().is_none() {
            self.waker.wake();
        }
        r
    }

    /// Whether the router writes this stream itself (after [`mark`](Self::mark)).
    pub(crate) fn is_direct(&self) -> bool {
        self.direct.get().is_some()
    }

    /// Write what is due on a directly written stream now, as far as its socket takes it
    /// without waiting (the rest waits for the socket in the stream's own task).
    pub(crate) fn flush(&self, metrics: &Metrics) {
        if let Some(direct) = self.direct.get() {
            direct.flush(|buf| write_due(self, buf, metrics), false);
        }
    }
}
