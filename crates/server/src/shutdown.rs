//! [`Shutdown`]: the one drain signal every serve loop, background task and running call of a
//! handler listens to, and [`ShutdownTrigger`], its sending side (held by the handler).
//!
//! Shaped like mini-redis's `Shutdown` (`is_shutdown`, `recv`), over a `watch` channel so a
//! receiver made after the signal still sees it, plus the drain's deadline: [`Shutdown::cut`]
//! resolves when the deadline passes, which is when calls still running are ended with an error
//! naming the epoch that ends (see `endpoint::drain`). A receiver also resolves once the trigger is
//! dropped with the last handler clone, so background tasks never outlive their handler.
//!
//! This module depends on nothing else of the crate: the handler, the listen router, the
//! serve loops and the drain all depend on it, never the other way round.

use std::sync::Arc;

use tokio::sync::watch;
use tokio::time::Instant;

/// Where the handler is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Serving,
    /// Draining since `shutdown()`; calls still running at `deadline` are cut.
    Draining {
        deadline: Instant,
    },
}

/// The sending side: [`ShutdownTrigger::begin`] starts the drain, once.
#[derive(Debug)]
pub(crate) struct ShutdownTrigger {
    tx: watch::Sender<Phase>,
}

impl ShutdownTrigger {
    /// A trigger not yet pulled.
    pub(crate) fn new() -> Self {
        ShutdownTrigger { tx: watch::channel(Phase::Serving).0 }
    }

    /// Start draining; calls still running at `deadline` are cut. A second call keeps the first
    /// deadline.
    pub(crate) fn begin(&self, deadline: Instant) {
        self.tx.send_if_modified(|phase| match phase {
            Phase::Serving => {
                *phase = Phase::Draining { deadline };
                true
            }
            Phase::Draining { .. } => false,
        });
    }

    /// Whether the drain has begun.
    pub(crate) fn is_shutdown(&self) -> bool {
        *self.tx.borrow() != Phase::Serving
    }

    /// A receiver of the signal.
    pub(crate) fn subscribe(&self) -> Shutdown {
        Shutdown { rx: self.tx.subscribe() }
    }
}

/// One listener of the drain signal. Cheap to clone (a `watch` receiver).
#[derive(Debug, Clone)]
pub(crate) struct Shutdown {
    rx: watch::Receiver<Phase>,
}

impl Shutdown {
    /// Whether the drain has begun (or the handler is gone).
    pub(crate) fn is_shutdown(&self) -> bool {
        self.rx.has_changed().is_err() || *self.rx.borrow() != Phase::Serving
    }

    /// Resolves once the drain has begun, or the trigger is gone.
    pub(crate) async fn recv(&mut self) {
        // The guard `wait_for` returns is not `Send`: dropped here, so callers stay `Send`.
        let _ = self.rx.wait_for(|phase| *phase != Phase::Serving).await;
    }

    /// Resolves once the drain's deadline has passed (at once when the trigger is gone).
    pub(crate) async fn cut(&mut self) {
        let deadline = match self.rx.wait_for(|phase| *phase != Phase::Serving).await {
            Ok(phase) => match *phase {
                Phase::Draining { deadline } => deadline,
                Phase::Serving => return,
            },
            Err(_) => return,
        };
        tokio::time::sleep_until(deadline).await;
    }
}

/// What a cut call's error names: this process's execution epoch and its node id, built once
/// per handler and shared, so arming the cut on every call costs one reference count rather
/// than two string copies.
#[derive(Debug)]
pub(crate) struct CutNames {
    pub(crate) epoch: Box<str>,
    pub(crate) node: Box<str>,
}

impl CutNames {
    pub(crate) fn new(epoch: &str, node: &str) -> Arc<CutNames> {
        Arc::new(CutNames { epoch: epoch.into(), node: node.into() })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn receivers_hear_the_drain_then_its_deadline() {
        let trigger = ShutdownTrigger::new();
        let (mut early, mut cut) = (trigger.subscribe(), trigger.subscribe());
        assert!(!early.is_shutdown());
        let cutting = tokio::spawn(async move { cut.cut().await });
        trigger.begin(Instant::now() + Duration::from_secs(5));
        early.recv().await;
        assert!(early.is_shutdown() && trigger.is_shutdown());
        assert!(trigger.subscribe().is_shutdown(), "a later receiver sees it too");
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert!(!cutting.is_finished(), "not before the deadline");
        trigger.begin(Instant::now() + Duration::from_secs(60));
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(cutting.is_finished(), "at the first deadline");
    }

    #[tokio::test]
    async fn a_dropped_trigger_ends_every_receiver() {
        let trigger = ShutdownTrigger::new();
        let mut rx = trigger.subscribe();
        drop(trigger);
        rx.recv().await;
        rx.cut().await;
        assert!(rx.is_shutdown());
    }
}
