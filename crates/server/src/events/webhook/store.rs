//! The webhook mode's state in the fleet's keyspace (the bus's one contract for shared state
//! with expiry), so every replica serves and delivers every subscription:
//!
//! - `s.<id>`: a [`SubscriptionRecord`] — its key, secret, expiry and delivery status;
//! - `index`: every live subscription's id and expiry (what each node reloads);
//! - `v.<digest of principal and url>`: a URL the principal's endpoint proved it wants;
//! - the slot set `q.<digest of principal>`: the principal's quota, one slot per subscription,
//!   expiring with it;
//! - in the deliveries' keyspace, `d.<id>.<digest of eventId>`: one delivery's claim — the
//!   replica holding it (a lease) while it is pending, then `done` for longer than any replica
//!   still watching it could wait.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::{BusError, Keyspace, ServerEventBus, now_ms};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::context::Principal;

/// The keyspace of subscriptions.
const SUBSCRIPTIONS: &str = "events-webhooks";
/// The keyspace of delivery claims.
const DELIVERIES: &str = "events-webhook-deliveries";
/// How long a finished delivery's mark stays, for the replicas still watching it.
const DONE_KEPT: Duration = Duration::from_secs(15 * 60);
/// Compare-and-set rounds before a contended write gives up.
const CAS_ROUNDS: usize = 16;

/// The principal as a subscription keeps it (deliveries run its `match` and `transform` hooks
/// as this caller on any replica).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredPrincipal {
    pub(crate) id: String,
    pub(crate) issuer: Option<String>,
    pub(crate) tenant: Option<String>,
    pub(crate) scopes: Vec<String>,
}

impl From<&Principal> for StoredPrincipal {
    fn from(p: &Principal) -> Self {
        StoredPrincipal {
            id: p.id.clone(),
            issuer: p.issuer.clone(),
            tenant: p.tenant.clone(),
            scopes: p.scopes.clone(),
        }
    }
}

impl From<&StoredPrincipal> for Principal {
    fn from(p: &StoredPrincipal) -> Self {
        Principal { id: p.id.clone(), issuer: p.issuer.clone(), tenant: p.tenant.clone(), scopes: p.scopes.clone() }
    }
}

/// One webhook subscription.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SubscriptionRecord {
    pub(crate) id: String,
    pub(crate) principal: StoredPrincipal,
    pub(crate) url: String,
    pub(crate) name: String,
    pub(crate) arguments: Map<String, Value>,
    /// The `whsec_` secret deliveries are signed with.
    pub(crate) secret: String,
    /// The secret it replaced, and until when (ms) deliveries are signed with it too.
    pub(crate) previous_secret: Option<(String, u64)>,
    pub(crate) expires_at_ms: u64,
    pub(crate) active: bool,
    pub(crate) last_delivery_ms: Option<u64>,
    pub(crate) last_error: Option<String>,
    pub(crate) failed_since_ms: Option<u64>,
}

/// A delivery's claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// A replica holds it (its lease is live).
    Held,
    /// Delivered, or given up.
    Finished,
}

/// The keyspaces of the webhook mode.
#[derive(Clone)]
pub(crate) struct WebhookStore {
    records: Arc<dyn Keyspace>,
    leases: Arc<dyn Keyspace>,
    finished: Arc<dyn Keyspace>,
}

impl WebhookStore {
    /// Open the keyspaces: records live `longest_ttl` past their last write, leases `lease`.
    pub(crate) async fn open(
        bus: &Arc<dyn ServerEventBus>,
        longest_ttl: Duration,
        lease: Duration,
    ) -> Result<WebhookStore, BusError> {
        let records = bus.keyspace(SUBSCRIPTIONS, longest_ttl + Duration::from_secs(60)).await?;
        let leases = bus.keyspace(DELIVERIES, lease).await?;
        let finished = bus.keyspace(DELIVERIES, DONE_KEPT.max(lease * 4)).await?;
        Ok(WebhookStore { records, leases, finished })
    }

    /// The live subscription `id`.
    pub(crate) async fn get(&self, id: &str) -> Result<Option<(SubscriptionRecord, u64)>, BusError> {
        let Some(record) = self.records.get(&format!("s.{id}")).await? else { return Ok(None) };
        let Ok(subscription) = serde_json::from_slice::<SubscriptionRecord>(&record.value) else { return Ok(None) };
        Ok((subscription.expires_at_ms > now_ms()).then_some((subscription, record.revision)))
    }

    /// Write `record` (created or replaced whatever was there).
    pub(crate) async fn put(&self, record: &SubscriptionRecord) -> Result<(), BusError> {
        self.records.put(&format!("s.{}", record.id), encode(record)).await.map(drop)
    }

    /// Change subscription `id` with `change` (read, changed, compared and set); `false` when
    /// it is gone.
    pub(crate) async fn update(&self, id: &str, change: impl Fn(&mut SubscriptionRecord)) -> Result<bool, BusError> {
        for _ in 0..CAS_ROUNDS {
            let Some((mut record, revision)) = self.get(id).await? else { return Ok(false) };
            let before = record.clone();
            change(&mut record);
            if record == before {
                return Ok(true);
            }
            if self.records.compare_and_set(&format!("s.{id}"), revision, encode(&record)).await?.is_some() {
                return Ok(true);
            }
        }
        Err(BusError::Backend(format!("subscription {id} kept changing under its update")))
    }

    /// Remove subscription `id` (its record, its index entry, its quota slot).
    pub(crate) async fn remove(&self, id: &str, principal: &Principal) -> Result<bool, BusError> {
        let live = self.records.delete(&format!("s.{id}")).await?;
        self.change_index(|index| {
            index.remove(id);
            Ok(())
        })
        .await?;
        self.records.release_slot(&quota_key(principal), id).await?;
        Ok(live)
    }

    /// Hold subscription `id`'s slot of `principal`'s quota until `expires_at_ms`; `false`
    /// when `max` others are live.
    pub(crate) async fn hold_quota(
        &self,
        principal: &Principal,
        id: &str,
        ttl: Duration,
        max: usize,
    ) -> Result<bool, BusError> {
        self.records.hold_slot(&quota_key(principal), id, ttl, max).await
    }

    /// Enter (or renew) `id` in the index until `expires_at_ms`; `false` when the index holds
    /// `max` other live subscriptions.
    pub(crate) async fn index(&self, id: &str, expires_at_ms: u64, max: usize) -> Result<bool, BusError> {
        let id = id.to_owned();
        self.change_index(move |index| {
            if !index.contains_key(&id) && index.len() >= max {
                return Err(());
            }
            index.insert(id.clone(), expires_at_ms);
            Ok(())
        })
        .await
    }

    /// Every live subscription's id and expiry.
    pub(crate) async fn ids(&self) -> Result<BTreeMap<String, u64>, BusError> {
        let now = now_ms();
        let index = self.records.get("index").await?;
        let mut ids: BTreeMap<String, u64> =
            index.and_then(|r| serde_json::from_slice(&r.value).ok()).unwrap_or_default();
        ids.retain(|_, expires| *expires > now);
        Ok(ids)
    }

    /// Apply `change` to the index (expired entries dropped first); `Ok(false)` when it refused.
    async fn change_index(
        &self,
        change: impl Fn(&mut BTreeMap<String, u64>) -> Result<(), ()>,
    ) -> Result<bool, BusError> {
        for _ in 0..CAS_ROUNDS {
            let current = self.records.get("index").await?;
            let mut index: BTreeMap<String, u64> =
                current.as_ref().and_then(|r| serde_json::from_slice(&r.value).ok()).unwrap_or_default();
            let now = now_ms();
            index.retain(|_, expires| *expires > now);
            if change(&mut index).is_err() {
                return Ok(false);
            }
            let value = serde_json::to_vec(&index).unwrap_or_default();
            let written = match current {
                Some(r) => self.records.compare_and_set("index", r.revision, value).await?.is_some(),
                None => self.records.create("index", value).await?.is_some(),
            };
            if written {
                return Ok(true);
            }
        }
        Err(BusError::Backend("the webhook index kept changing under its update".into()))
    }

    /// Whether `principal`'s endpoint at `url` proved it wants deliveries.
    pub(crate) async fn verified(&self, principal: &Principal, url: &str) -> Result<bool, BusError> {
        Ok(self.records.get(&verified_key(principal, url)).await?.is_some())
    }

    /// Remember that it did.
    pub(crate) async fn mark_verified(&self, principal: &Principal, url: &str) -> Result<(), BusError> {
        self.records.put(&verified_key(principal, url), Vec::new()).await.map(drop)
    }

    /// Claim delivery `key` for `node`: its lease's revision, or what holds it.
    pub(crate) async fn claim(&self, key: &str, node: &str) -> Result<Result<u64, Claim>, BusError> {
        if let Some(revision) = self.leases.create(key, node.as_bytes().to_vec()).await? {
            return Ok(Ok(revision));
        }
        Ok(Err(self.claim_state(key).await?.unwrap_or(Claim::Held)))
    }

    /// What holds delivery `key` (`None`: nothing, it may be claimed).
    pub(crate) async fn claim_state(&self, key: &str) -> Result<Option<Claim>, BusError> {
        Ok(self.leases.get(key).await?.map(|r| if r.value == FINISHED { Claim::Finished } else { Claim::Held }))
    }

    /// Renew `node`'s lease on `key` (revision `revision`); its new revision, or `None` when
    /// the lease was lost.
    pub(crate) async fn renew(&self, key: &str, revision: u64, node: &str) -> Result<Option<u64>, BusError> {
        self.leases.compare_and_set(key, revision, node.as_bytes().to_vec()).await
    }

    /// Mark delivery `key` finished (delivered or given up), if `node` still holds it.
    pub(crate) async fn finish(&self, key: &str, revision: u64) -> Result<bool, BusError> {
        Ok(self.finished.compare_and_set(key, revision, FINISHED.to_vec()).await?.is_some())
    }
}

/// A finished delivery's mark (no node id is this).
const FINISHED: &[u8] = b"-done-";

/// The key of delivery of `event_id` to subscription `id`.
pub(crate) fn delivery_key(id: &str, event_id: &str) -> String {
    format!("d.{id}.{}", &hex(&Sha256::digest(event_id.as_bytes()))[..32])
}

/// The subscription id of the key `(principal, url, name, arguments)`: a digest of its
/// canonical form (arguments with their keys sorted, as `serde_json` keeps maps).
pub(crate) fn subscription_id(principal: &Principal, url: &str, name: &str, arguments: &Map<String, Value>) -> String {
    let canonical =
        serde_json::to_string(&(principal.limit_key(), url, name, canonical(arguments))).unwrap_or_default();
    format!("sub_{}", &hex(&Sha256::digest(canonical.as_bytes()))[..24])
}

/// `arguments` with every object's keys sorted (the key's canonical JSON).
pub(crate) fn canonical(arguments: &Map<String, Value>) -> Value {
    fn sort(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let sorted: BTreeMap<&String, Value> = map.iter().map(|(k, v)| (k, sort(v))).collect();
                serde_json::to_value(sorted).unwrap_or_default()
            }
            Value::Array(items) => Value::Array(items.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    sort(&Value::Object(arguments.clone()))
}

fn quota_key(principal: &Principal) -> String {
    format!("q.{}", &hex(&Sha256::digest(principal.limit_key().as_bytes()))[..32])
}

fn verified_key(principal: &Principal, url: &str) -> String {
    let key = serde_json::to_string(&(principal.limit_key(), url)).unwrap_or_default();
    format!("v.{}", &hex(&Sha256::digest(key.as_bytes()))[..32])
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn encode(record: &SubscriptionRecord) -> Vec<u8> {
    // A struct of strings, numbers and JSON values serializes.
    serde_json::to_vec(record).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_subscription_id_is_its_key_in_canonical_form() {
        let alice = Principal::new("alice", Some("acme".into()));
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        let a = subscription_id(&alice, "https://h/x", "n", &args(json!({"a": 1, "b": {"y": 2, "x": 1}})));
        let b = subscription_id(&alice, "https://h/x", "n", &args(json!({"b": {"x": 1, "y": 2}, "a": 1})));
        assert_eq!(a, b, "argument order does not matter");
        assert!(a.starts_with("sub_") && a.len() == 28);
        let bob = Principal::new("bob", Some("acme".into()));
        assert_ne!(a, subscription_id(&bob, "https://h/x", "n", &args(json!({"a": 1, "b": {"x": 1, "y": 2}}))));
        assert_ne!(a, subscription_id(&alice, "https://h/y", "n", &args(json!({"a": 1, "b": {"x": 1, "y": 2}}))));
    }
}
