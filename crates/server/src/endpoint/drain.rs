//! Graceful shutdown: one signal ([`crate::shutdown`]) stops the accept loops, every listen
//! stream writes its completion result and ends (an open SSE stream would otherwise keep the
//! drain from ever finishing), background tasks stop — the fleet's leave and the outbox's final
//! round awaited, since the runtime ends right after — running tasks (of the tasks extension)
//! are waited for, and the whole drain has a deadline.
//!
//! A call still running at the deadline is not cut by a connection reset: `methods::cut`
//! ends it with a `-32603` naming the execution epoch that ends (`data.reason: "drained"`,
//! `data.epoch`, `data.node`), written before the connections are aborted. The framework never
//! retries a call on another replica: whether to retry (the call may have had effects) is the
//! client's decision, and the error tells it which code was interrupted.

use std::sync::PoisonError;
use std::time::Duration;

use super::handler::McpHandler;
use crate::shared::ANSWER_GRACE;

impl McpHandler {
    /// Stop serving: refuse new listens, close every listen stream with its completion result,
    /// stop accepting, and wait (up to the shutdown deadline) for connections to drain, for
    /// this node to leave the fleet's membership and for the outbox's last publish round. Calls
    /// still running at the deadline end with an error naming this process's epoch.
    pub async fn shutdown(&self) {
        let shared = &self.shared;
        let deadline = tokio::time::Instant::now() + shared.options.shutdown_deadline;
        shared.metrics.draining.set(1);
        shared.router.close_all();
        shared.era2025.streams.close_all();
        if let Some(tasks) = &shared.tasks {
            // Before this node leaves the membership, so no replica counts its tasks orphaned.
            tasks.begin_drain(shared.options.shutdown_deadline).await;
        }
        shared.shutdown.begin(deadline);
        let mut serving = shared.serving.subscribe();
        // The `Ref` it answers is not `Send`: drop it at once (the join holds outputs).
        let drained = async {
            let _ = serving.wait_for(|n| *n == 0).await;
        };
        // Serve loops apply the deadline themselves; this bound only guards a stuck loop.
        let bound = deadline + ANSWER_GRACE + Duration::from_secs(1);
        // Running tasks get the same deadline; those still running then fail, saying so.
        let tasks = async {
            if let Some(tasks) = &shared.tasks {
                tasks.drain(shared.options.shutdown_deadline).await;
            }
        };
        if tokio::time::timeout_at(bound, futures_util::future::join(drained, tasks)).await.is_err() {
            tracing::warn!("serve loops did not finish draining in time");
        }
        let farewells = std::mem::take(&mut *shared.farewells.lock().unwrap_or_else(PoisonError::into_inner));
        for task in farewells {
            // Each ends on the signal (after one last bounded round of I/O).
            if tokio::time::timeout_at(bound, task).await.is_err() {
                tracing::warn!("the fleet's leave or the outbox's last round did not finish by the shutdown deadline");
            }
        }
        shared.audit.flush(ANSWER_GRACE).await;
    }

    /// Whether [`McpHandler::shutdown`] was called: the node drains and should not be ready.
    pub fn is_draining(&self) -> bool {
        self.shared.shutdown.is_shutdown()
    }
}
