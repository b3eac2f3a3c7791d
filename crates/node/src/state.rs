//! [`NodeState`]: what the admin endpoint knows about the node while it starts, serves and
//! drains — the handler once it exists (the bus may take a while to connect), and the
//! decisions the probes make from it.

use std::sync::{Arc, OnceLock};

use mcp_fleet_server::McpHandler;
use serde_json::{Value, json};

/// Shared between the startup sequence and the admin endpoint. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct NodeState {
    handler: Arc<OnceLock<McpHandler>>,
}

/// Why the node is not ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotReady {
    /// The bus is not connected yet: there is no handler.
    Starting,
    /// Shutting down.
    Draining,
    /// The bus consumer has been down longer than the grace period.
    BusDown,
}

impl NodeState {
    /// The handler is built: the node can serve.
    pub(crate) fn set_handler(&self, handler: McpHandler) {
        // Called once by the startup sequence; a second call would be a bug, and keeping the
        // first handler is the safe answer to it.
        let _ = self.handler.set(handler);
    }

    /// The handler, once built.
    pub(crate) fn handler(&self) -> Option<&McpHandler> {
        self.handler.get()
    }

    /// Readiness: serving, not draining, and hearing the bus (or deaf for less than the grace).
    pub(crate) fn readiness(&self) -> Result<(), NotReady> {
        let handler = self.handler().ok_or(NotReady::Starting)?;
        if handler.is_draining() {
            return Err(NotReady::Draining);
        }
        if handler.bus_health().past_grace {
            return Err(NotReady::BusDown);
        }
        Ok(())
    }

    /// The probes' JSON body.
    pub(crate) fn describe(&self) -> Value {
        let ready = self.readiness();
        let mut body = json!({"ready": ready.is_ok()});
        if let Err(why) = ready {
            body["reason"] = json!(format!("{why:?}"));
        }
        if let Some(handler) = self.handler() {
            let bus = handler.bus_health();
            body["busConnected"] = json!(bus.connected);
            body["busDownSecs"] = json!(bus.down_for.map(|d| d.as_secs_f64()));
            body["openStreams"] = json!(handler.open_streams());
        }
        body
    }
}
