//! Graceful shutdown: one signal stops the accept loops, every listen stream writes its
//! completion result and ends (an open SSE stream would otherwise keep the drain from ever
//! finishing), background tasks stop, running tasks (of the tasks extension) are waited for,
//! and the whole drain has a deadline.

use crate::handler::McpHandler;

impl McpHandler {
    /// Stop serving: refuse new listens, close every listen stream with its completion result,
    /// stop accepting, and wait (up to the shutdown deadline) for connections to drain.
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
        let bound = self.shared.options.shutdown_deadline + std::time::Duration::from_secs(1);
        // Running tasks get the same deadline; those still running then fail, saying so.
        let tasks = async {
            if let Some(tasks) = &self.shared.tasks {
                tasks.drain(self.shared.options.shutdown_deadline).await;
            }
        };
        if tokio::time::timeout(bound, futures_util::future::join(drained, tasks)).await.is_err() {
            tracing::warn!("serve loops did not finish draining in time");
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
