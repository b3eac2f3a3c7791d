//! Sessions of the 2025 era in the fleet: the [`SessionRecord`] a session's requests are served
//! by, stored through a bus [`Keyspace`] so that any replica can serve any request, with idle
//! expiry (the keyspace TTL) and compare-and-set updates (two replicas changing one session at
//! once never lose either change).

use std::collections::BTreeSet;
use std::sync::Arc;

use mcp_fleet_bus::{BusError, Keyspace};
use mcp_fleet_protocol::envelope::{LogLevel, RequestMeta};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::context::Principal;

/// Everything a session's later requests need, whichever replica serves them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SessionRecord {
    /// The negotiated protocol version.
    #[serde(rename = "v")]
    pub(crate) version: String,
    /// The client's capabilities from `initialize`.
    #[serde(rename = "c", default)]
    pub(crate) capabilities: Map<String, Value>,
    /// The client's `clientInfo`.
    #[serde(rename = "i", default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_info: Option<Value>,
    /// The level set with `logging/setLevel` (no log messages before one is set).
    #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
    pub(crate) log_level: Option<String>,
    /// URIs subscribed with `resources/subscribe`.
    #[serde(rename = "s", default, skip_serializing_if = "BTreeSet::is_empty")]
    pub(crate) subscriptions: BTreeSet<String>,
    /// Who created the session — its issuer, tenant and subject together
    /// ([`Principal::limit_key`]): only that caller may use it, as with tasks. One subject in
    /// two tenants (per-organisation tokens of one identity) is two callers. A record of an
    /// older release (bound by subject alone, under `p`) belongs to no one: its client gets
    /// 404 and initializes again.
    #[serde(rename = "o", default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<String>,
    /// The session-quota key its slot was taken under (the owner's, or an anonymous caller's
    /// address): renewed with the record, given back when it is ended; `None` when it took
    /// none.
    #[serde(rename = "q", default, skip_serializing_if = "Option::is_none")]
    pub(crate) quota: Option<String>,
    /// When the record was last written (ms since the epoch): requests renew it past a
    /// quarter of the TTL.
    #[serde(rename = "w", default)]
    pub(crate) written_ms: u64,
}

impl SessionRecord {
    /// A new session for `principal` speaking `version`.
    pub(crate) fn new(version: &str, params: &Map<String, Value>, principal: Option<&Principal>) -> Self {
        SessionRecord {
            version: version.to_owned(),
            capabilities: params.get("capabilities").and_then(Value::as_object).cloned().unwrap_or_default(),
            client_info: params.get("clientInfo").filter(|v| v.is_object()).cloned(),
            log_level: None,
            subscriptions: BTreeSet::new(),
            owner: principal.map(Principal::limit_key),
            quota: None,
            written_ms: mcp_fleet_bus::now_ms(),
        }
    }

    /// The record of a request served without a session (stateless mode).
    pub(crate) fn stateless(version: &str, principal: Option<&Principal>) -> Self {
        SessionRecord::new(version, &Map::new(), principal)
    }

    /// The 2026-style envelope the shared methods are served with: this session's version,
    /// capabilities, client info and log level, and the request's own progress token.
    pub(crate) fn meta(&self, params: &Map<String, Value>) -> RequestMeta {
        let progress_token = params
            .get("_meta")
            .and_then(|m| m.get("progressToken"))
            .filter(|t| t.is_string() || t.is_number())
            .cloned();
        RequestMeta {
            protocol_version: self.version.clone(),
            client_capabilities: self.capabilities.clone(),
            client_info: self.client_info.clone(),
            log_level: self.log_level.as_deref().and_then(LogLevel::parse),
            progress_token,
        }
    }

    /// Whether `principal` may use this session: the one that created it (same issuer, tenant
    /// and subject), and no other.
    pub(crate) fn belongs_to(&self, principal: Option<&Principal>) -> bool {
        self.owner == principal.map(Principal::limit_key)
    }
}

/// Session ids are 128 random bits in lowercase hex: unguessable, visible ASCII (0x21–0x7E,
/// 2025-11-25 §Session Management), and a valid keyspace key.
pub(crate) fn new_session_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// Whether `id` could be one of ours (anything else is unknown without a round trip).
fn is_session_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Most attempts of one compare-and-set update before it reports contention.
const UPDATE_ATTEMPTS: usize = 16;

/// The fleet's session records (a cheap clone).
#[derive(Clone)]
pub(crate) struct SessionStore {
    keys: Arc<dyn Keyspace>,
    /// Records read recently, served without a keyspace read (see `session_cache`).
    cache: Arc<super::session_cache::SessionCache>,
    /// Sessions per quota key (a principal's [`Principal::limit_key`], as the session is bound,
    /// or an anonymous caller's address): a slot set per key, one slot per session id, taken on
    /// `initialize`, renewed whenever the record is written (so a slot outlives its record by a
    /// round trip at most), given back on DELETE. A session that expires unused gives its slot
    /// back when the slot expires: nothing outlives the session it counts.
    counts: Arc<dyn Keyspace>,
}

/// A caller (a principal, or an anonymous client address) at its limit of sessions.
#[derive(Debug, thiserror::Error)]
#[error("This {who} holds its limit of {limit} sessions; end one (DELETE) or retry later")]
pub(crate) struct SessionLimit {
    /// `principal` or `client address`.
    pub(crate) who: &'static str,
    pub(crate) limit: usize,
}

impl SessionStore {
    pub(crate) fn new(
        keys: Arc<dyn Keyspace>,
        counts: Arc<dyn Keyspace>,
        cache: Arc<super::session_cache::SessionCache>,
    ) -> Self {
        SessionStore { keys, cache, counts }
    }

    /// Take a slot for session `id` among the `limit` slots of quota key `quota` (fleet-wide);
    /// `Ok(Err(limit))` at the limit. The slot lives the session TTL unless renewed.
    pub(crate) async fn admit(&self, quota: &str, id: &str, limit: usize) -> Result<Result<(), usize>, BusError> {
        let held = self.counts.hold_slot(&principal_key(quota), id, self.counts.ttl(), limit).await?;
        Ok(if held { Ok(()) } else { Err(limit) })
    }

    /// Give back session `id`'s slot of quota key `quota` (the session ended).
    pub(crate) async fn release(&self, quota: &str, id: &str) -> Result<(), BusError> {
        self.counts.release_slot(&principal_key(quota), id).await.map(drop)
    }

    /// Renew the slot of session `id` as its record was just renewed (restoring it, whatever
    /// the count, if it was lost: the session is live). A failure is logged: the slot then
    /// lapses before its session, which lets one more session in, never fewer.
    async fn renew_slot(&self, id: &str, record: &SessionRecord) {
        let Some(quota) = &record.quota else { return };
        if let Err(e) = self.counts.hold_slot(&principal_key(quota), id, self.counts.ttl(), usize::MAX).await {
            tracing::warn!(error = %e, "a session slot was not renewed; it may lapse before its session");
        }
    }

    /// Store the new session `id` (drawn with [`new_session_id`]); `false` when the id is taken
    /// (a 128-bit collision: draw another).
    pub(crate) async fn create(&self, id: &str, record: &SessionRecord) -> Result<bool, BusError> {
        Ok(self.keys.create(id, encode(record)).await?.is_some())
    }

    /// The live session `id` and its revision, renewed when it was last written more than a
    /// quarter of the TTL ago (so an active session never expires, and most requests cost one
    /// read).
    pub(crate) async fn load(&self, id: &str) -> Result<Option<SessionRecord>, BusError> {
        if !is_session_id(id) {
            return Ok(None);
        }
        let now = mcp_fleet_bus::now_ms();
        let renew_after = (self.keys.ttl().as_millis() / 4) as u64;
        if let Some(record) = self.cache.get(id)
            && now.saturating_sub(record.written_ms) <= renew_after
        {
            return Ok(Some(record));
        }
        let Some(found) = self.keys.get(id).await? else { return Ok(None) };
        let Some(mut record) = decode(&found.value) else {
            tracing::warn!(session = id, "undecodable session record: treated as unknown");
            return Ok(None);
        };
        if now.saturating_sub(record.written_ms) > renew_after {
            record.written_ms = now;
            // Losing this race means another request just wrote (and so renewed) it.
            if self.keys.compare_and_set(id, found.revision, encode(&record)).await?.is_some() {
                self.renew_slot(id, &record).await;
            }
        }
        self.cache.put(id, &record);
        Ok(Some(record))
    }

    /// Change session `id` with `change` (compare-and-set, retried on contention); answers the
    /// new record, or `None` if the session is gone.
    pub(crate) async fn update(
        &self,
        id: &str,
        change: impl Fn(&mut SessionRecord),
    ) -> Result<Option<SessionRecord>, BusError> {
        for _ in 0..UPDATE_ATTEMPTS {
            let Some(found) = self.keys.get(id).await? else { return Ok(None) };
            let Some(mut record) = decode(&found.value) else { return Ok(None) };
            change(&mut record);
            record.written_ms = mcp_fleet_bus::now_ms();
            if self.keys.compare_and_set(id, found.revision, encode(&record)).await?.is_some() {
                self.renew_slot(id, &record).await;
                self.cache.put(id, &record);
                return Ok(Some(record));
            }
        }
        Err(BusError::Backend(format!("session {id} kept changing under {UPDATE_ATTEMPTS} updates")))
    }

    /// End session `id` everywhere; answers whether it was live.
    pub(crate) async fn end(&self, id: &str) -> Result<bool, BusError> {
        if !is_session_id(id) {
            return Ok(false);
        }
        self.cache.forget(id);
        self.keys.delete(id).await
    }
}

/// A keyspace key for any principal id: `p.` and the hex SHA-256 of the id.
fn principal_key(principal: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(principal.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("p.{hex}")
}

fn encode(record: &SessionRecord) -> Vec<u8> {
    // A plain struct of strings, maps and sets always serializes.
    serde_json::to_vec(record).unwrap_or_default()
}

fn decode(bytes: &[u8]) -> Option<SessionRecord> {
    serde_json::from_slice(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_record_round_trips_and_serves_the_envelope() {
        let params = json!({"capabilities": {"sampling": {}}, "clientInfo": {"name": "c", "version": "1"}});
        let principal = Principal::new("alice", Some("acme".into()));
        let mut record = SessionRecord::new("2025-06-18", params.as_object().unwrap(), Some(&principal));
        record.log_level = Some("debug".into());
        record.subscriptions.insert("test://a".into());
        assert_eq!(decode(&encode(&record)).unwrap(), record);
        let meta = record.meta(json!({"_meta": {"progressToken": 7}}).as_object().unwrap());
        assert_eq!(meta.protocol_version, "2025-06-18");
        assert_eq!(meta.log_level, Some(LogLevel::Debug));
        assert_eq!(meta.progress_token, Some(json!(7)));
        assert!(meta.missing_capabilities(&json!({"sampling": {}})).is_none());
        assert!(record.belongs_to(Some(&principal)));
        assert!(!record.belongs_to(Some(&Principal::new("mallory", None))));
        assert!(!record.belongs_to(Some(&Principal::new("alice", Some("globex".into())))), "another tenant");
        assert!(!record.belongs_to(Some(&Principal::new("alice", None))));
        assert!(!record.belongs_to(None));
        let older = json!({"v": "2025-06-18", "p": "alice", "t": "acme"});
        assert!(!decode(older.to_string().as_bytes()).unwrap().belongs_to(Some(&principal)), "bound by sub alone");
    }

    #[test]
    fn session_ids_are_visible_ascii_and_recognised() {
        let id = new_session_id();
        assert!(is_session_id(&id) && id.bytes().all(|b| (0x21..=0x7e).contains(&b)));
        assert_ne!(id, new_session_id());
        assert!(!is_session_id("../etc") && !is_session_id(""));
        let key = principal_key("any string, even with spaces / and * stars");
        assert!(mcp_fleet_bus::check_key(&key).is_ok() && key.len() == 66);
    }
}
