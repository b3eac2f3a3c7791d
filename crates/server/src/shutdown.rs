//! Graceful shutdown: one signal stops the accept loops, every listen stream writes its
//! completion result and ends (an open SSE stream would otherwise keep the drain from ever
//! finishing), background tasks stop, and the whole drain has a deadline.

use crate::handler::McpHandler;

impl McpHandler {
    /// Stop serving: refuse new listens, close every listen stream with its completion result,
    /// stop accepting, and wait (up to the shutdown deadline) for connections to drain.
    pub async fn shutdown(&self) {
        self.shared.metrics.draining.set(1);
        self.shared.router.close_all();
        self.shared.legacy.streams.close_all();
        let _ = self.shared.shutdown.send(true);
        let mut serving = self.shared.serving.subscribe();
        let drained = serving.wait_for(|n| *n == 0);
        // Serve loops apply the deadline themselves; this bound only guards a stuck loop.
        let bound = self.shared.options.shutdown_deadline + std::time::Duration::from_secs(1);
        if tokio::time::timeout(bound, drained).await.is_err() {
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
