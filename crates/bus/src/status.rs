//! [`StatusCell`]: a shared, cheap [`BusStatus`] that a backend's consumer tasks keep and its
//! [`ServerEventBus::status`](crate::ServerEventBus::status) reports.

use std::sync::{Arc, Mutex, PoisonError};

use crate::bus::BusStatus;

/// A cheap handle on a consumer's [`BusStatus`]. A std mutex, because it is held only to copy
/// or replace the value, never across an `.await`.
///
/// ```
/// use mcp_fleet_bus::{BusStatus, StatusCell};
/// let status = StatusCell::connected();
/// status.set_reconnecting("connection reset");
/// assert!(!status.get().is_connected());
/// status.set_connected();
/// assert_eq!(status.get(), BusStatus::Connected);
/// ```
#[derive(Debug, Clone)]
pub struct StatusCell(Arc<Mutex<BusStatus>>);

impl StatusCell {
    /// A cell starting as connected (a backend is built only after a successful connect).
    pub fn connected() -> Self {
        StatusCell(Arc::new(Mutex::new(BusStatus::Connected)))
    }

    /// The current state.
    pub fn get(&self) -> BusStatus {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Record that the consumer works.
    pub fn set_connected(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = BusStatus::Connected;
    }

    /// Record that it does not, and why.
    pub fn set_reconnecting(&self, error: impl ToString) {
        let status = BusStatus::Reconnecting { last_error: error.to_string() };
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = status;
    }
}
