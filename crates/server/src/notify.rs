//! [`Notifier`]: how application code announces changes to every listen stream in the fleet.
//!
//! `handler.notify().tools_changed()` publishes one event on the bus; every node (this one
//! included) receives it and its listen router delivers it to the matching local streams. The
//! futures resolve once the bus accepted the event, or fail with the bus error — a reloader can
//! retry instead of silently losing an invalidation.

use std::sync::Arc;

use mcp_fleet_bus::{Change, EventEnvelope, EventKind, ServerEventBus};

use crate::error::ServerError;

/// Publishes change events, globally or for one tenant scope. Cheap to clone.
///
/// ```
/// use mcp_fleet_server::{create_mcp_handler, HandlerOptions, McpServer};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let handler = create_mcp_handler(McpServer::builder("demo", "1").build(), HandlerOptions::default()).await.unwrap();
/// let notify = handler.notify();
/// let event = notify.resource_updated("file:///config.toml").await.unwrap();
/// assert!(event.version > 0);
/// notify.scope("tenant-a").tools_changed().await.unwrap(); // only tenant-a's streams hear this
/// # });
/// ```
#[derive(Clone)]
pub struct Notifier {
    bus: Arc<dyn ServerEventBus>,
    scope: Option<String>,
}

impl Notifier {
    /// A notifier publishing global events on `bus`.
    pub fn new(bus: Arc<dyn ServerEventBus>) -> Self {
        Notifier { bus, scope: None }
    }

    /// The same notifier restricted to one tenant: its events reach only listen streams whose
    /// principal has this scope.
    pub fn scope(&self, scope: impl Into<String>) -> Notifier {
        Notifier { bus: self.bus.clone(), scope: Some(scope.into()) }
    }

    /// `notifications/tools/list_changed` to every stream that asked for it.
    pub async fn tools_changed(&self) -> Result<EventEnvelope, ServerError> {
        self.publish_list_change(EventKind::ToolsListChanged).await
    }

    /// `notifications/prompts/list_changed` to every stream that asked for it.
    pub async fn prompts_changed(&self) -> Result<EventEnvelope, ServerError> {
        self.publish_list_change(EventKind::PromptsListChanged).await
    }

    /// `notifications/resources/list_changed` to every stream that asked for it.
    pub async fn resources_changed(&self) -> Result<EventEnvelope, ServerError> {
        self.publish_list_change(EventKind::ResourcesListChanged).await
    }

    /// `notifications/resources/updated` to every stream subscribed to `uri`.
    pub async fn resource_updated(&self, uri: impl Into<String>) -> Result<EventEnvelope, ServerError> {
        self.publish(Change { scope: self.scope.clone(), kind: EventKind::ResourceUpdated, uri: Some(uri.into()) })
            .await
    }

    /// Publish any change (its scope is used as given).
    pub async fn publish(&self, change: Change) -> Result<EventEnvelope, ServerError> {
        Ok(self.bus.publish(change).await?)
    }

    pub(crate) async fn publish_list_change(&self, kind: EventKind) -> Result<EventEnvelope, ServerError> {
        self.publish(Change { scope: self.scope.clone(), kind, uri: None }).await
    }
}
