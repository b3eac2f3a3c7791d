//! Webhook delivery of the events extension (`events/subscribe`), fleet-wide.
//!
//! - `config`: [`Webhooks`], the mode's settings.
//! - `store`: subscriptions, their index and quotas, and delivery claims in the keyspace.
//! - `subscribe`: `events/subscribe` and `events/unsubscribe`.
//! - `deliver`: the dispatcher that matches each occurrence of the log against the
//!   subscriptions, and the follow loop of one delivery — claimed, POSTed, retried, finished.
//! - `send`, `sign`, `ssrf`: one POST, signed per Standard Webhooks, to checked addresses only.
//!
//! **Once per subscription across the fleet.** Every replica hears every occurrence and knows
//! every subscription, so every replica follows every delivery: the first to claim it (a lease
//! in the keyspace) POSTs and retries it, renewing the lease, and marks it finished; the others
//! look again when a lease could have lapsed, and take over a delivery whose replica died. A
//! replica killed after the endpoint accepted a POST but before it marked it finished makes the
//! one duplicate this allows (the receiver dedupes by `webhook-id`).

mod config;
mod deliver;
pub(crate) mod send;
pub(crate) mod sign;
pub(crate) mod ssrf;
mod store;
mod subscribe;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use mcp_fleet_bus::{BusError, ServerEventBus};
use serde_json::{Map, Value};

pub use config::{
    DEFAULT_MAX_PER_PRINCIPAL, DEFAULT_MAX_SUBSCRIPTIONS, DEFAULT_MAX_TTL, DEFAULT_MIN_TTL, DEFAULT_TTL, Webhooks,
};
pub use send::Resolver;
pub use ssrf::{Network, NetworkParseError};

use super::cursor::Cursors;
use super::log::Position;
use crate::context::{Principal, RequestContext};
use crate::metrics::WebhookMetrics;
pub(crate) use store::canonical;
use store::{SubscriptionRecord, WebhookStore};

/// One subscription as this node delivers it (what does not change while it lives).
#[derive(Debug)]
pub(crate) struct Subscriber {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) arguments: Map<String, Value>,
    /// The subscriber, as the `match` and `transform` hooks see it.
    pub(crate) ctx: RequestContext,
    expires_at_ms: AtomicU64,
}

impl Subscriber {
    fn tenant(&self) -> Option<&str> {
        self.ctx.principal.as_ref().and_then(|p| p.tenant.as_deref())
    }
}

/// The subscriptions this node knows, by id.
#[derive(Debug, Default)]
struct Registry {
    subscribers: RwLock<HashMap<String, Arc<Subscriber>>>,
}

impl Registry {
    fn insert(&self, record: &SubscriptionRecord) -> Arc<Subscriber> {
        let parts = http::Request::new(()).into_parts().0;
        let subscriber = Arc::new(Subscriber {
            id: record.id.clone(),
            name: record.name.clone(),
            arguments: record.arguments.clone(),
            ctx: RequestContext { principal: Some(Principal::from(&record.principal)), parts: Arc::new(parts) },
            expires_at_ms: AtomicU64::new(record.expires_at_ms),
        });
        self.write().insert(record.id.clone(), subscriber.clone());
        subscriber
    }

    fn remove(&self, id: &str) {
        self.write().remove(id);
    }

    fn renew(&self, id: &str, expires_at_ms: u64) {
        if let Some(s) = self.read().get(id) {
            s.expires_at_ms.store(expires_at_ms, Ordering::Relaxed);
        }
    }

    /// The live subscriptions to `name`.
    fn to(&self, name: &str, now_ms: u64) -> Vec<Arc<Subscriber>> {
        let subscribers = self.read();
        subscribers
            .values()
            .filter(|s| s.name == name && s.expires_at_ms.load(Ordering::Relaxed) > now_ms)
            .cloned()
            .collect()
    }

    fn ids(&self) -> HashSet<String> {
        self.read().keys().cloned().collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<Subscriber>>> {
        self.subscribers.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Arc<Subscriber>>> {
        self.subscribers.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The webhook mode on one node.
pub(crate) struct WebhookRuntime {
    config: Webhooks,
    store: WebhookStore,
    sender: send::Sender,
    registry: Registry,
    cursors: Cursors,
    metrics: WebhookMetrics,
    node: String,
    /// The deliveries this node follows, by claim key.
    following: Mutex<HashSet<String>>,
    /// Per subscription, the positions of the deliveries followed here (for the watermark).
    pending: Mutex<HashMap<String, BTreeSet<Position>>>,
    /// How far the dispatcher has read the log.
    head: Mutex<Position>,
    /// POSTs in flight on this node.
    in_flight: tokio::sync::Semaphore,
    /// The node's drain signal, once the dispatcher runs.
    stop: std::sync::OnceLock<crate::shutdown::Shutdown>,
}

impl WebhookRuntime {
    /// The mode of `config` on this node of `bus`.
    pub(crate) async fn open(
        config: Webhooks,
        bus: &Arc<dyn ServerEventBus>,
        cursors: Cursors,
        metrics: WebhookMetrics,
    ) -> Result<WebhookRuntime, BusError> {
        let store = WebhookStore::open(bus, config.max_ttl, config.lease).await?;
        let policy = send::SendPolicy {
            allowed: config.allowed_networks.clone(),
            resolver: config.resolver.clone().unwrap_or_else(send::system_resolver),
            timeout: config.timeout,
            max_response_bytes: 4096,
        };
        let sender = send::Sender::new(policy).map_err(BusError::Config)?;
        let in_flight = tokio::sync::Semaphore::new(config.max_concurrent);
        Ok(WebhookRuntime {
            config,
            store,
            sender,
            registry: Registry::default(),
            cursors,
            metrics,
            node: bus.node_id().to_owned(),
            following: Mutex::default(),
            pending: Mutex::default(),
            head: Mutex::default(),
            in_flight,
            stop: std::sync::OnceLock::new(),
        })
    }

    /// The cursor a client may persist for subscription `id`: before the oldest delivery this
    /// node still follows for it, else where the dispatcher has read to.
    pub(crate) fn watermark(&self, id: &str, tenant: Option<&str>, name: &str) -> String {
        let oldest =
            self.pending.lock().unwrap_or_else(PoisonError::into_inner).get(id).and_then(|p| p.first().copied());
        let position = match oldest {
            Some((epoch, version)) => (epoch, version.saturating_sub(1)),
            None => *self.head.lock().unwrap_or_else(PoisonError::into_inner),
        };
        self.cursors.write(position, tenant, name)
    }
}

impl std::fmt::Debug for WebhookRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookRuntime").field("config", &self.config).finish_non_exhaustive()
    }
}
