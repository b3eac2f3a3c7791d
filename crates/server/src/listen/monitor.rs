//! The health monitor: samples the backend's consumer status every [`MONITOR_INTERVAL`] into
//! [`BusHealth`] and, while the node has been deaf past its grace period, has the router refuse
//! and close listen streams until the node hears the bus again.

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::ServerEventBus;

use super::health::BusHealth;
use super::router::ListenRouter;
use crate::shutdown::Shutdown;

/// How often the monitor samples the backend's consumer status.
pub(crate) const MONITOR_INTERVAL: Duration = Duration::from_millis(250);

/// Sample the backend's consumer status, and refuse and close listen streams while the node
/// has been deaf past its grace period, until shutdown.
pub(crate) async fn run(
    bus: Arc<dyn ServerEventBus>,
    health: Arc<BusHealth>,
    router: ListenRouter,
    mut stop: Shutdown,
) {
    let mut interval = tokio::time::interval(MONITOR_INTERVAL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => {
                health.sample(bus.as_ref());
                router.set_deaf(health.state().past_grace);
            }
            _ = stop.recv() => return,
        }
    }
}
