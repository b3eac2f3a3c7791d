//! The listen router's periodic tick: keepalive comments on idle streams, and the graceful
//! close of streams past their lifetime.

use std::time::Duration;

use super::router::ListenRouter;
use crate::shutdown::Shutdown;

/// Tick every `every` until shutdown; `keepalives` says whether idle streams get a comment.
pub(crate) async fn run(router: ListenRouter, every: Duration, keepalives: bool, mut stop: Shutdown) {
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    interval.tick().await;
    loop {
        tokio::select! {
            _ = interval.tick() => router.tick(keepalives),
            _ = stop.recv() => return,
        }
    }
}
