//! [`Emitter`]: `handler.events().emit(name, payload)` — an occurrence of a declared type,
//! from any node, through the bus to every replica's log.

use std::sync::Arc;

use mcp_fleet_bus::{BusError, EventEnvelope, ServerEventBus, new_event_id, now_ms};
use mcp_fleet_protocol::types::EventOccurrence;
use serde::Serialize;

use super::Events;

/// Why an emit was refused.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    /// No event type of that name is declared ([`Events::event`]).
    #[error("no event type {0:?} is declared")]
    Undeclared(String),
    /// The payload did not serialize to a JSON object.
    #[error("the payload of an occurrence must be a JSON object: {0}")]
    Payload(String),
    /// The payload is larger than [`Events::max_payload_bytes`].
    #[error("the occurrence is {size} bytes, over the limit of {max}")]
    TooLarge {
        /// Its encoded size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// The bus did not take it (retry, or report).
    #[error(transparent)]
    Bus(#[from] BusError),
}

/// Emits occurrences of the handler's declared event types (see
/// [`McpHandler::events`](crate::McpHandler::events)).
///
/// ```no_run
/// # async fn run(handler: mcp_fleet_server::McpHandler) -> Result<(), mcp_fleet_server::events::EmitError> {
/// #[derive(serde::Serialize)]
/// struct Deployed { version: String }
/// let sent = handler.events().emit("deploy.finished", &Deployed { version: "1.4.2".into() }).await?;
/// handler.events().tenant("acme").emit_with_id("deploy.finished", "upstream-881", &Deployed { version: "2".into() }).await?;
/// # let _ = sent; Ok(()) }
/// ```
#[derive(Clone)]
pub struct Emitter {
    bus: Arc<dyn ServerEventBus>,
    events: Arc<Events>,
    tenant: Option<String>,
}

impl Emitter {
    pub(crate) fn new(bus: Arc<dyn ServerEventBus>, events: Arc<Events>) -> Self {
        Emitter { bus, events, tenant: None }
    }

    /// The same emitter, for `tenant`'s subscriptions only (callers acting for that tenant).
    pub fn tenant(&self, tenant: impl Into<String>) -> Emitter {
        Emitter { tenant: Some(tenant.into()), ..self.clone() }
    }

    /// Emit an occurrence of `name` carrying `payload`, with a generated `eventId`; resolves
    /// with the occurrence once the bus took it.
    pub async fn emit(&self, name: &str, payload: &impl Serialize) -> Result<EventOccurrence, EmitError> {
        self.emit_with_id(name, new_event_id(), payload).await
    }

    /// [`emit`](Self::emit) with the occurrence's own id (an upstream's stable one): an id
    /// emitted twice within the nodes' dedupe window is logged once.
    pub async fn emit_with_id(
        &self,
        name: &str,
        event_id: impl Into<String>,
        payload: &impl Serialize,
    ) -> Result<EventOccurrence, EmitError> {
        if self.events.get(name).is_none() {
            return Err(EmitError::Undeclared(name.to_owned()));
        }
        let data = serde_json::to_value(payload).map_err(|e| EmitError::Payload(e.to_string()))?;
        if !data.is_object() {
            return Err(EmitError::Payload(format!("got {data}")));
        }
        let timestamp = mcp_fleet_protocol::tasks::iso8601(now_ms());
        let occurrence =
            EventOccurrence { event_id: event_id.into(), name: name.to_owned(), timestamp, data, cursor: None };
        // Serializing a struct of strings and a JSON value cannot fail.
        let encoded = serde_json::to_string(&occurrence).unwrap_or_default();
        let max = self.events.max_payload_bytes;
        if encoded.len() > max {
            return Err(EmitError::TooLarge { size: encoded.len(), max });
        }
        let envelope =
            EventEnvelope::occurrence(&occurrence.event_id, encoded, self.tenant.clone(), self.bus.node_id());
        self.bus.publish_event(envelope).await?;
        Ok(occurrence)
    }
}

impl std::fmt::Debug for Emitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emitter").field("tenant", &self.tenant).finish_non_exhaustive()
    }
}
