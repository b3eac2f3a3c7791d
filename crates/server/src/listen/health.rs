//! [`BusHealth`]: whether this node hears the fleet's change events, as readiness, the
//! `mcp_fleet_bus_connected` gauge and the listen path see it.
//!
//! Two things must hold: the server's supervised consumer has a live bus stream, and the
//! backend reports its consumer connected ([`ServerEventBus::status`]). Publishing plays no
//! part — a failed publish is its own counter. The monitor ([`super::consumer`]) samples the
//! backend and records since when the node has been deaf; past the grace period the node
//! stops accepting listen streams and closes the open ones so clients reconnect to a replica
//! that hears the bus.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use mcp_fleet_bus::ServerEventBus;
use tokio::time::Instant;

/// A snapshot of the node's bus health.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BusHealthState {
    /// Change events published now reach this node.
    pub connected: bool,
    /// How long it has not been the case (`None` while connected).
    pub down_for: Option<Duration>,
    /// Down for longer than the grace period: listen streams are refused and closed, and the
    /// node should not be ready.
    pub past_grace: bool,
}

/// The consumer side's health, shared by the supervisor, the monitor and the request path.
#[derive(Debug)]
pub(crate) struct BusHealth {
    /// The supervisor has a live bus stream.
    supervised: AtomicBool,
    /// The backend's consumer status at the last sample.
    backend: AtomicBool,
    /// Since when the node is deaf (`None` while it hears). A std mutex: copied, never held
    /// across `.await`.
    down_since: Mutex<Option<Instant>>,
    /// How long deafness is tolerated before listen streams are refused and closed.
    grace: Duration,
}

impl BusHealth {
    /// Healthy, with `grace` as the tolerated deafness.
    pub(crate) fn new(grace: Duration) -> Self {
        BusHealth {
            supervised: AtomicBool::new(true),
            backend: AtomicBool::new(true),
            down_since: Mutex::new(None),
            grace,
        }
    }

    /// The supervisor gained (`true`) or lost its bus stream.
    pub(crate) fn set_supervised(&self, up: bool) {
        self.supervised.store(up, Ordering::SeqCst);
        self.update();
    }

    /// Sample the backend's consumer status.
    pub(crate) fn sample(&self, bus: &dyn ServerEventBus) {
        self.backend.store(bus.status().is_connected(), Ordering::SeqCst);
        self.update();
    }

    fn update(&self) {
        let up = self.supervised.load(Ordering::SeqCst) && self.backend.load(Ordering::SeqCst);
        let mut since = self.down_since.lock().unwrap_or_else(PoisonError::into_inner);
        match (up, *since) {
            (true, Some(_)) => *since = None,
            (false, None) => *since = Some(Instant::now()),
            _ => {}
        }
    }

    /// The current state.
    pub(crate) fn state(&self) -> BusHealthState {
        let since = *self.down_since.lock().unwrap_or_else(PoisonError::into_inner);
        let down_for = since.map(|s| s.elapsed());
        BusHealthState { connected: down_for.is_none(), down_for, past_grace: down_for.is_some_and(|d| d > self.grace) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn deafness_counts_from_the_first_failure_and_passes_the_grace_only_after_it() {
        let health = BusHealth::new(Duration::from_secs(30));
        assert!(health.state().connected);
        health.set_supervised(false);
        tokio::time::advance(Duration::from_secs(10)).await;
        health.set_supervised(false);
        let state = health.state();
        assert_eq!((state.connected, state.down_for, state.past_grace), (false, Some(Duration::from_secs(10)), false));
        tokio::time::advance(Duration::from_secs(21)).await;
        assert!(health.state().past_grace);
        health.set_supervised(true);
        assert_eq!(health.state(), BusHealthState { connected: true, down_for: None, past_grace: false });
    }
}
