//! What one 2025-era caller may make the fleet hold, checked before it is stored (a session
//! record lives in the bus for the session's life and is rewritten by every change):
//!
//! - `initialize`: its `capabilities` and `clientInfo` together at most
//!   [`max_capabilities_bytes`](crate::options::Era2025Options::max_capabilities_bytes) of JSON (past it
//!   `-32602` with 400), and one of the caller's session slots — an authenticated principal's
//!   ([`max_sessions_per_principal`](crate::options::Era2025Options::max_sessions_per_principal)), or
//!   an anonymous caller's client address's
//!   ([`max_sessions_per_address`](crate::options::Era2025Options::max_sessions_per_address); IPv6 by
//!   /64, loopback exempt as for listen streams, none when the address is unknown); past it 429.
//! - `resources/subscribe` and `unsubscribe`: a URI at most the listen streams' `max_uri_bytes`
//!   long, and at most
//!   [`max_subscriptions_per_session`](crate::options::Era2025Options::max_subscriptions_per_session)
//!   URIs per session (`-32602`, in band).
//!
//! Sessions are `post`'s; the store and its slot sets `session`'s.

use http::StatusCode;
use mcp_fleet_bus::BusError;
use mcp_fleet_protocol::{RequestId, RpcError};
use serde_json::{Map, Value};

use super::post::{Refusal, store_unreachable};
use crate::context::{ClientAddr, Principal};
use crate::era2025::session::{SessionLimit, SessionRecord, SessionStore, new_session_id};
use crate::http::error_response;
use crate::shared::HandlerShared;

impl HandlerShared {
    /// Refuse an `initialize` whose `capabilities` and `clientInfo` are larger than the limit.
    pub(super) fn check_client_params(&self, params: &Map<String, Value>) -> Result<(), RpcError> {
        let limit = self.options.era2025.max_capabilities_bytes;
        let bytes: usize = ["capabilities", "clientInfo"].iter().filter_map(|k| params.get(*k)).map(json_len).sum();
        if bytes > limit {
            return Err(RpcError::invalid_params(format!(
                "params.capabilities and params.clientInfo hold {bytes} bytes of JSON; the limit is {limit}"
            )));
        }
        Ok(())
    }

    /// Store `record` as a new session of the caller's, after taking one of its session slots
    /// for it (the quota key noted in the record: the slot is renewed with it and given back
    /// when it ends); its id, or the refusal.
    pub(super) async fn open_session(
        &self,
        store: &SessionStore,
        parts: &http::request::Parts,
        principal: Option<&Principal>,
        record: &mut SessionRecord,
        id: &RequestId,
    ) -> Result<String, Refusal> {
        let unreachable = |e: BusError| Box::new(store_unreachable(&e));
        loop {
            let session = new_session_id();
            match self.take_session_slot(store, parts, principal, &session).await.map_err(unreachable)? {
                Ok(quota) => record.quota = quota,
                Err(limit) => {
                    let error = RpcError::invalid_request(limit.to_string()).with_status(StatusCode::TOO_MANY_REQUESTS);
                    return Err(Box::new(error_response(Some(id), &error)));
                }
            }
            let created = store.create(&session, record).await;
            if let Ok(true) = created {
                return Ok(session);
            }
            if let Some(quota) = &record.quota
                && let Err(e) = store.release(quota, &session).await
            {
                tracing::warn!(error = %e, "a session slot was not given back; it lapses at its expiry");
            }
            // `Ok(false)`: a 128-bit collision; draw again.
            created.map_err(unreachable)?;
        }
    }

    /// The quota key new session `session` counts under, once its slot is taken; `Ok(Ok(None))`
    /// when no quota applies (an anonymous caller on loopback, or of unknown address).
    async fn take_session_slot(
        &self,
        store: &SessionStore,
        parts: &http::request::Parts,
        principal: Option<&Principal>,
        session: &str,
    ) -> Result<Result<Option<String>, SessionLimit>, BusError> {
        let legacy = &self.options.era2025;
        let loopback_exempt = self.options.listen.budget.loopback_exempt;
        let (key, limit, who) = match (principal, parts.extensions.get::<ClientAddr>()) {
            (Some(principal), _) => (principal.limit_key(), legacy.max_sessions_per_principal, "principal"),
            (None, Some(ClientAddr(addr))) if !(loopback_exempt && addr.ip().is_loopback()) => {
                (crate::auth::LimitGate::key(None, parts), legacy.max_sessions_per_address, "client address")
            }
            (None, _) => return Ok(Ok(None)),
        };
        let taken = store.admit(&key, session, limit).await?;
        Ok(taken.map(|()| Some(key)).map_err(|limit| SessionLimit { who, limit }))
    }

    /// Refuse a subscription change naming a URI longer than the listen streams allow, or
    /// (`subscribe`) one more URI than a session may follow.
    pub(super) fn check_subscription(
        &self,
        record: &SessionRecord,
        uri: &str,
        subscribe: bool,
    ) -> Result<(), RpcError> {
        let options = &self.options;
        let longest = options.listen.budget.max_uri_bytes;
        if uri.len() > longest {
            let message = format!("params.uri is {} bytes long; the limit is {longest}", uri.len());
            return Err(RpcError::invalid_params(message).in_band());
        }
        let most = options.era2025.max_subscriptions_per_session;
        if subscribe && record.subscriptions.len() >= most && !record.subscriptions.contains(uri) {
            let message = format!("This session follows {most} resources, its limit; unsubscribe from one first");
            return Err(RpcError::invalid_params(message).in_band());
        }
        Ok(())
    }
}

/// How many bytes `value` takes as JSON, without writing it anywhere.
fn json_len(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // A `Value` always serializes, and the counter never fails.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_len_is_the_length_of_the_json() {
        for value in
            [json!({}), json!({"sampling": {}, "roots": {"listChanged": true}}), json!("é\n"), json!([1, null])]
        {
            assert_eq!(json_len(&value), serde_json::to_vec(&value).unwrap().len(), "{value}");
        }
    }
}
