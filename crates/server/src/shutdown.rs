//! Graceful shutdown: one signal stops the accept loops, every listen stream writes its
//! completion result and ends (an open SSE stream would otherwise keep the drain from ever
//! finishing), background tasks stop — the fleet's leave and the outbox's final round awaited,
//! since the runtime ends right after — running tasks (of the tasks extension) are waited for,
//! and the whole drain has a deadline.

use std::sync::PoisonError;
use std::time::Duration;

use crate::handler::McpHandler;

impl McpHandler {
    /// Stop serving: refuse new listens, close every listen stream with its completion result,
    /// stop accepting, and wait (up to the shutdown deadline) for connections to drain, for
    /// this node to leave the fleet's membership and for the outbox's last publish round.
    pub async fn shutdown(&self) {
        self.shared.metrics.draining.set(1);
        self.shared.router.close_all();
        self.shared.legacy.streams.close_all();
        if let Some(tasks) = &self.shared.tasks {
            // Before this node leaves the membership, so no replica counts its tasks orphaned.
            tasks.begin_drain(self.shared.options.shutdown_deadline).await;
        }
        let _ = self.shared.shutdown.send(true);
        let mut serving = self.shared.serving.subscribe();
        // The `Ref` it answers is not `Send`: drop it at once (the join holds outputs).
        let drained = async {
            let _ = serving.wait_for(|n| *n == 0).await;
        };
        // Serve loops apply the deadline themselves; this bound only guards a stuck loop.
        let deadline = tokio::time::Instant::now() + self.shared.options.shutdown_deadline + Duration::from_secs(1);
        // Running tasks get the same deadline; those still running then fail, saying so.
        let tasks = async {
            if let Some(tasks) = &self.shared.tasks {
                tasks.drain(self.shared.options.shutdown_deadline).await;
            }
        };
        if tokio::time::timeout_at(deadline, futures_util::future::join(drained, tasks)).await.is_err() {
            tracing::warn!("serve loops did not finish draining in time");
        }
        let farewells = std::mem::take(&mut *self.shared.farewells.lock().unwrap_or_else(PoisonError::into_inner));
        for task in farewells {
            // Each ends on the signal (after one last bounded round of I/O).
            if tokio::time::timeout_at(deadline, task).await.is_err() {
                tracing::warn!("the fleet's leave or the outbox's last round did not finish by the shutdown deadline");
            }
        }
    }
}

impl McpHandler {
    /// Whether [`McpHandler::shutdown`] was called: the node drains and should not be ready.
    pub fn is_draining(&self) -> bool {
        *self.shared.shutdown.borrow()
    }
}

/// Resolves once the shutdown signal is set (or its sender is gone).
pub(crate) async fn signalled(rx: &mut tokio::sync::watch::Receiver<bool>) {
    // The guard `wait_for` returns is not `Send`; drop it here so callers' futures stay `Send`.
    let _ = rx.wait_for(|s| *s).await;
}
