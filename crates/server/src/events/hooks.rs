//! `on_subscribe` / `on_unsubscribe`: an event type's hooks, run **once across the fleet**
//! while anyone subscribes to a key — `(principal, name, arguments)` as the design keys poll
//! leases (the principal `null` on unauthenticated servers) — so an upstream watch runs once
//! however many replicas, modes and clients share it.
//!
//! Every holder of a key takes a slot in the key's slot set in the keyspace: a poll renews one
//! slot (`poll`) for [`Events::poll_lease`](super::Events::poll_lease) — poll has no goodbye,
//! so its subscription is a lease; a push stream holds its own while it is open; a webhook
//! subscription holds its id until it expires or is removed. The node that sees a key with no
//! runner takes the key's run lease and calls `on_subscribe`; it renews the lease while the
//! slot set has live members, and when it empties calls `on_unsubscribe` and lets go. If that
//! node dies its lease lapses, and the next holder anywhere calls `on_subscribe` again (the
//! design asks hooks to be idempotent for this).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use mcp_fleet_bus::{BusError, Keyspace, ServerEventBus};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::EventType;
use crate::context::Principal;

/// The keyspace of hook holders and runners.
const KEYSPACE: &str = "events-hooks";

/// One subscription key, as the hooks are given it.
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    /// Who subscribed (`None` on a server without authentication: every caller shares it).
    pub principal: Option<Principal>,
    /// The event type.
    pub name: String,
    /// The subscription's arguments.
    pub arguments: Map<String, Value>,
    /// The key's id (a digest of principal, name and canonical arguments): the same in
    /// `on_subscribe` and `on_unsubscribe`, on every replica.
    pub key: String,
}

/// `on_subscribe` or `on_unsubscribe` (see [`EventType::on_subscribe`]).
pub type SubscriptionHook = Arc<dyn Fn(Subscription) -> BoxFuture<'static, ()> + Send + Sync>;

impl Subscription {
    /// The key of `principal`'s subscriptions to `name` with `arguments`.
    pub(crate) fn new(principal: Option<&Principal>, name: &str, arguments: &Map<String, Value>) -> Subscription {
        let who = principal.map_or_else(|| "-".to_owned(), Principal::limit_key);
        let canonical = serde_json::to_string(&(who, name, super::webhook::canonical(arguments))).unwrap_or_default();
        let digest = Sha256::digest(canonical.as_bytes());
        let key = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        Subscription { principal: principal.cloned(), name: name.to_owned(), arguments: arguments.clone(), key }
    }
}

/// The hooks' state on one node.
pub(crate) struct Hooks {
    holders: Arc<dyn Keyspace>,
    runs: Arc<dyn Keyspace>,
    node: String,
    /// How often a runner looks at its key's holders (its lease lasts three times this).
    tick: Duration,
    /// Keys whose hooks this node runs.
    running: Mutex<HashSet<String>>,
}

impl Hooks {
    /// Open the keyspace: holders live up to `longest` unrenewed, run leases `tick * 3`.
    pub(crate) async fn open(
        bus: &Arc<dyn ServerEventBus>,
        longest: Duration,
        tick: Duration,
    ) -> Result<Hooks, BusError> {
        let holders = bus.keyspace(KEYSPACE, longest.max(tick * 3)).await?;
        let runs = bus.keyspace(KEYSPACE, tick * 3).await?;
        Ok(Hooks { holders, runs, node: bus.node_id().to_owned(), tick, running: Mutex::default() })
    }

    /// `member` holds `subscription` for `ttl`; the hooks start if nobody runs them.
    pub(crate) async fn hold(
        self: &Arc<Self>,
        event_type: &EventType,
        subscription: Subscription,
        member: &str,
        ttl: Duration,
    ) {
        if !event_type.has_hooks() {
            return;
        }
        let slots = format!("h.{}", subscription.key);
        if let Err(error) = self.holders.hold_slot(&slots, member, ttl, usize::MAX).await {
            tracing::warn!(%error, "subscription hooks: holder not recorded");
            return;
        }
        self.ensure_running(event_type, subscription).await;
    }

    /// `member` no longer holds the key `key`.
    pub(crate) async fn release(&self, key: &str, member: &str) {
        if let Err(error) = self.holders.release_slot(&format!("h.{key}"), member).await {
            tracing::debug!(%error, "subscription hooks: holder not released (it expires)");
        }
    }

    /// Call `on_subscribe` and watch the key, unless a runner (here or elsewhere) does.
    async fn ensure_running(self: &Arc<Self>, event_type: &EventType, subscription: Subscription) {
        if self.running().contains(&subscription.key) {
            return;
        }
        let run = format!("r.{}", subscription.key);
        let Ok(Some(revision)) = self.runs.create(&run, self.node.as_bytes().to_vec()).await else { return };
        if !self.running().insert(subscription.key.clone()) {
            return;
        }
        if let Some(hook) = &event_type.on_subscribe {
            hook(subscription.clone()).await;
        }
        tokio::spawn(self.clone().watch(subscription, revision, event_type.on_unsubscribe.clone()));
    }

    /// Renew the run lease while the key has holders; then `on_unsubscribe`.
    async fn watch(self: Arc<Self>, subscription: Subscription, mut revision: u64, last: Option<SubscriptionHook>) {
        let (slots, run) = (format!("h.{}", subscription.key), format!("r.{}", subscription.key));
        loop {
            tokio::time::sleep(self.tick).await;
            if let Ok(0) = self.holders.live_slots(&slots).await {
                if let Some(hook) = &last {
                    hook(subscription.clone()).await;
                }
                let _ = self.runs.delete(&run).await;
                break;
            }
            match self.runs.compare_and_set(&run, revision, self.node.as_bytes().to_vec()).await {
                Ok(Some(renewed)) => revision = renewed,
                Ok(None) => break, // lapsed: another node runs the hooks now
                Err(error) => tracing::debug!(%error, "subscription hooks: run lease not renewed"),
            }
        }
        self.running().remove(&subscription.key);
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks").field("node", &self.node).field("tick", &self.tick).finish_non_exhaustive()
    }
}

/// A push stream's hold on its key: renewed while the stream is open, released when dropped.
pub(crate) struct StreamHold {
    renew: tokio::task::JoinHandle<()>,
    hooks: Arc<Hooks>,
    key: String,
    member: String,
}

impl StreamHold {
    /// Hold `subscription` for a stream until the returned value is dropped.
    pub(crate) fn start(hooks: &Arc<Hooks>, event_type: &EventType, subscription: Subscription) -> Option<StreamHold> {
        if !event_type.has_hooks() {
            return None;
        }
        let member = format!("s-{:016x}{:016x}", rand::random::<u64>(), rand::random::<u64>());
        let (key, ttl) = (subscription.key.clone(), hooks.tick * 3);
        let renew = tokio::spawn({
            let (hooks, event_type, member) = (hooks.clone(), event_type.clone(), member.clone());
            async move {
                loop {
                    hooks.hold(&event_type, subscription.clone(), &member, ttl).await;
                    tokio::time::sleep(hooks.tick).await;
                }
            }
        });
        Some(StreamHold { renew, hooks: hooks.clone(), key, member })
    }
}

impl Drop for StreamHold {
    fn drop(&mut self) {
        self.renew.abort();
        let (hooks, key, member) =
            (self.hooks.clone(), std::mem::take(&mut self.key), std::mem::take(&mut self.member));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { hooks.release(&key, &member).await });
        }
    }
}
