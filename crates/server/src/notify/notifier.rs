//! [`Notifier`]: how application code announces changes to every listen stream in the fleet
//! (see the [module docs](crate::notify) for the two paths). Both open a publish span and
//! stamp its trace context into the envelope, so deliveries on every node link to it
//! ([`crate::trace`]).

use std::sync::Arc;

use mcp_fleet_bus::{Change, EventEnvelope, EventKind, ServerEventBus};
use mcp_fleet_protocol::ListKind;
use tracing::Instrument;

use super::outbox::Outbox;
use crate::error::ServerError;
use crate::fleet::{CatalogAnnouncePolicy, Catalogued, FleetWatch, list_event};
use crate::listen::EventIntake;
use crate::metrics::Metrics;
use crate::trace;

/// Publishes change events, globally or for one tenant. Cheap to clone.
///
/// ```
/// use mcp_fleet_server::{create_mcp_handler, HandlerOptions, McpServer};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let handler = create_mcp_handler(McpServer::builder("demo", "1").build(), HandlerOptions::default()).await.unwrap();
/// let notify = handler.notify();
/// let event = notify.resource_updated("file:///config.toml").await.unwrap();
/// assert!(event.version > 0);
/// notify.tenant("tenant-a").tools_changed().await.unwrap(); // only tenant-a's streams hear this
/// # });
/// ```
#[derive(Clone)]
pub struct Notifier {
    core: Arc<NotifierCore>,
    scope: Option<String>,
}

/// What every clone of a handler's notifier shares.
pub(crate) struct NotifierCore {
    pub(crate) bus: Arc<dyn ServerEventBus>,
    pub(crate) metrics: Metrics,
    pub(crate) intake: Arc<EventIntake>,
    pub(crate) outbox: Arc<Outbox>,
    pub(crate) fleet: Arc<FleetWatch>,
}

impl Notifier {
    /// The handler's global notifier.
    pub(crate) fn new(core: NotifierCore) -> Self {
        Notifier { core: Arc::new(core), scope: None }
    }

    /// The same notifier restricted to one tenant: its events reach only the listen streams of
    /// principals acting for `tenant` (the event's `scope` on the bus).
    pub fn tenant(&self, tenant: impl Into<String>) -> Notifier {
        Notifier { core: self.core.clone(), scope: Some(tenant.into()) }
    }

    /// `notifications/tools/list_changed` to every stream that asked for it.
    pub async fn tools_changed(&self) -> Result<EventEnvelope, ServerError> {
        self.publish_kind(EventKind::ToolsListChanged, None).await
    }

    /// `notifications/prompts/list_changed` to every stream that asked for it.
    pub async fn prompts_changed(&self) -> Result<EventEnvelope, ServerError> {
        self.publish_kind(EventKind::PromptsListChanged, None).await
    }

    /// `notifications/resources/list_changed` to every stream that asked for it.
    pub async fn resources_changed(&self) -> Result<EventEnvelope, ServerError> {
        self.publish_kind(EventKind::ResourcesListChanged, None).await
    }

    /// `notifications/resources/updated` to every stream subscribed to `uri`.
    pub async fn resource_updated(&self, uri: impl Into<String>) -> Result<EventEnvelope, ServerError> {
        self.publish_kind(EventKind::ResourceUpdated, Some(uri.into())).await
    }

    /// Publish any change. A scoped notifier publishes in its scope only: a change without a
    /// scope gets it, a change naming another scope is refused.
    pub async fn publish(&self, change: Change) -> Result<EventEnvelope, ServerError> {
        let change = self.scoped(change)?;
        let mut event = EventEnvelope::new(change, self.core.bus.node_id());
        let span = trace::publish_span(&event);
        trace::stamp(&span, &mut event);
        self.core.bus.publish_event(event).instrument(span.clone()).await.map_err(|err| {
            trace::record_publish_error(&span, &err);
            self.core.metrics.publish_failures.inc();
            ServerError::Bus(err)
        })
    }

    async fn publish_kind(&self, kind: EventKind, uri: Option<String>) -> Result<EventEnvelope, ServerError> {
        self.publish(Change { scope: self.scope.clone(), kind, uri, session: None }).await
    }

    /// Serve `catalog` as this notifier's scope's catalog in the fleet's membership.
    pub(crate) fn register_catalog(&self, catalog: Box<dyn Catalogued>) {
        self.core.fleet.register(self.scope.as_deref(), catalog);
    }

    /// A catalog-driven change of `list`. With [`CatalogAnnouncePolicy::FleetConverged`] the
    /// fleet's membership announces the new revision and its convergence notifies; with
    /// [`CatalogAnnouncePolicy::Immediate`] this node's streams hear it now and the outbox
    /// publishes it (retried until the bus accepts it).
    pub(crate) fn announce(&self, list: ListKind) {
        if self.core.fleet.mode() == CatalogAnnouncePolicy::FleetConverged {
            self.core.fleet.catalog_changed();
            return;
        }
        let change = Change { scope: self.scope.clone(), kind: list_event(list), uri: None, session: None };
        let mut event = EventEnvelope::new(change, self.core.bus.node_id());
        let span = trace::publish_span(&event);
        trace::stamp(&span, &mut event);
        let _publishing = span.enter();
        self.core.intake.deliver_local(&event);
        self.core.outbox.push(event);
    }

    /// Whether `other` belongs to the same handler as this notifier.
    pub(crate) fn is_same_handler(&self, other: &Notifier) -> bool {
        Arc::ptr_eq(&self.core, &other.core)
    }

    fn scoped(&self, mut change: Change) -> Result<Change, ServerError> {
        match (&self.scope, &change.scope) {
            (Some(mine), Some(theirs)) if mine != theirs => Err(ServerError::Definition(format!(
                "a notifier scoped to {mine:?} cannot publish a change for scope {theirs:?}"
            ))),
            (Some(mine), None) => {
                change.scope = Some(mine.clone());
                Ok(change)
            }
            _ => Ok(change),
        }
    }
}
