//! [`StatusCell`]: the connection state shared by the publisher and every tailing task.

use std::sync::{Arc, Mutex, PoisonError};

use mcp_fleet_bus::BusStatus;

/// A cheap handle on the current [`BusStatus`]. A std mutex, because it is held only to copy
/// or replace the value, never across an `.await`.
#[derive(Debug, Clone)]
pub(crate) struct StatusCell(Arc<Mutex<BusStatus>>);

impl StatusCell {
    /// A cell starting as connected (the bus is built only after a successful connect).
    pub(crate) fn connected() -> Self {
        StatusCell(Arc::new(Mutex::new(BusStatus::Connected)))
    }

    /// The current state.
    pub(crate) fn get(&self) -> BusStatus {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Record a successful round trip.
    pub(crate) fn set_connected(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = BusStatus::Connected;
    }

    /// Record a connection failure.
    pub(crate) fn set_reconnecting(&self, error: impl ToString) {
        let status = BusStatus::Reconnecting { last_error: error.to_string() };
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = status;
    }
}
