//! The HTTP side of the 2025 era: `POST` (the handshake, notifications, the client's answers to
//! our requests, requests and 2025-03-26 batches), `GET` (the session's stream) and `DELETE`
//! (the end of the session), each after the endpoint's own checks (path, Origin, authentication,
//! rate limit, body size).
//!
//! Session errors are HTTP errors, as 2025-era clients expect: a missing `Mcp-Session-Id` is 400,
//! an unknown or ended one 404 (the client then initializes again), and so is another
//! principal's (issuer, tenant and subject are compared: a 404 does not tell a caller that a
//! session it does not own exists).
//! Every JSON-RPC error of a request is answered in-band with HTTP 200.

use std::sync::Arc;

use http::{HeaderValue, Method, Response, StatusCode, header};
use mcp_fleet_bus::SessionOp;
use mcp_fleet_bus::{Change, EventEnvelope};
use mcp_fleet_protocol::envelope::LogLevel;
use mcp_fleet_protocol::jsonrpc::{encode_error, encode_result};
use mcp_fleet_protocol::legacy::{
    LEGACY_VERSIONS, LegacyMessage, SESSION_HEADER, header_version, negotiate, parse_body,
};
use mcp_fleet_protocol::{RequestId, RpcError};
use serde_json::{Map, Value, json};

use super::call::{Answered, SessionCall};
use crate::context::{Principal, RequestContext};
use crate::era2025::relay::Delivered;
use crate::era2025::session::SessionRecord;
use crate::era2025::stream::StreamRefused;
use crate::http::{ResponseBody, accepts_sse, error_response, http_error, json_response, sse_response, status_only};
use crate::metrics::VersionLabel;
use crate::shared::HandlerShared;

/// A refusal answered before any request is served.
pub(super) type Refusal = Box<Response<ResponseBody>>;

/// The session a request belongs to: its id (`None` when served without sessions) and record.
struct Session {
    id: Option<String>,
    record: SessionRecord,
}

impl HandlerShared {
    /// Answer a 2025-era request: `body` is the parsed POST body (`None` for GET and DELETE).
    pub(crate) async fn answer_legacy(
        self: &Arc<Self>,
        parts: Arc<http::request::Parts>,
        principal: Option<Principal>,
        body: Option<Value>,
    ) -> Response<ResponseBody> {
        let result = match (&parts.method, body) {
            (&Method::POST, Some(body)) => self.legacy_post(parts, principal, body).await,
            (&Method::GET, _) => self.legacy_get(&parts, principal.as_ref()).await,
            (&Method::DELETE, _) => self.legacy_delete(&parts, principal.as_ref()).await,
            _ => Err(Box::new(http_error(StatusCode::METHOD_NOT_ALLOWED, "Method not allowed"))),
        };
        result.unwrap_or_else(|refusal| *refusal)
    }

    async fn legacy_post(
        self: &Arc<Self>,
        parts: Arc<http::request::Parts>,
        principal: Option<Principal>,
        body: Value,
    ) -> Result<Response<ResponseBody>, Refusal> {
        let version = request_version(&parts)?;
        if let Value::Array(batch) = &body {
            self.admit_batch(&parts, principal.as_ref(), batch.len()).await?;
        }
        if body.get("method").and_then(Value::as_str) == Some("initialize") {
            return self.initialize(&parts, principal.as_ref(), body, version).await;
        }
        let session = self.session_of(&parts, principal.as_ref(), version).await?;
        let parsed = parse_body(body, &session.record.version)
            .map_err(|rej| Box::new(error_response(rej.id.as_ref(), &rej.error)))?;
        let mut refused_answers = Vec::new();
        for message in &parsed.messages {
            match message {
                LegacyMessage::Notification { method, params } if method == "notifications/cancelled" => {
                    self.cancel(&session, params).await;
                }
                LegacyMessage::Notification { method, .. } => {
                    tracing::debug!(method, "2025-era notification accepted");
                }
                LegacyMessage::Response { id, outcome } => {
                    if let Err(why) = self.relay_answer(&session, id, outcome.clone()).await {
                        refused_answers.push(why);
                    }
                }
                LegacyMessage::Request { .. } => {}
            }
        }
        let sse_ok = accepts_sse(parts.headers.get(header::ACCEPT));
        let ctx = RequestContext { principal, parts };
        let requests: Vec<_> =
            parsed.requests().map(|(id, method, params)| (id.clone(), method.to_owned(), params.clone())).collect();
        if requests.is_empty() {
            return Ok(match refused_answers.first() {
                None => status_only(StatusCode::ACCEPTED),
                Some(why) => error_response(None, &RpcError::invalid_request(why.clone())),
            });
        }
        self.count_version(&session.record.version);
        if !parsed.batch {
            let (id, method, params) = requests.into_iter().next().expect("one request: checked non-empty above");
            return Ok(match self.legacy_request(&session, ctx, id, method, params, sse_ok).await {
                Answered::Json(bytes) => json_response(StatusCode::OK, bytes),
                Answered::Stream(body) => sse_response(ResponseBody::channel(body)),
            });
        }
        // A batch is answered as one JSON array (no SSE: its answers come together).
        let mut answers = Vec::with_capacity(requests.len());
        for (id, method, params) in requests {
            if let Answered::Json(bytes) = self.legacy_request(&session, ctx.clone(), id, method, params, false).await {
                answers.push(bytes);
            }
        }
        Ok(json_response(StatusCode::OK, join_array(&answers)))
    }

    /// `initialize`: negotiate the version, open the session in the fleet (unless stateless),
    /// and answer with its id in `Mcp-Session-Id`.
    async fn initialize(
        &self,
        parts: &http::request::Parts,
        principal: Option<&Principal>,
        body: Value,
        header_version: &str,
    ) -> Result<Response<ResponseBody>, Refusal> {
        let parsed =
            parse_body(body, header_version).map_err(|rej| Box::new(error_response(rej.id.as_ref(), &rej.error)))?;
        let Some(LegacyMessage::Request { id, params, .. }) = parsed.messages.into_iter().next() else {
            let error = RpcError::invalid_request("initialize must be a request");
            return Err(Box::new(error_response(None, &error)));
        };
        let Some(requested) = params.get("protocolVersion").and_then(Value::as_str) else {
            let error = RpcError::invalid_params("params.protocolVersion must be a string").in_band();
            return Ok(error_response(Some(&id), &error));
        };
        self.check_client_params(&params).map_err(|error| Box::new(error_response(Some(&id), &error)))?;
        let version = negotiate(requested);
        let mut record = SessionRecord::new(version, &params, principal);
        let session_id = match &self.era2025.sessions {
            Some(store) => Some(self.open_session(store, parts, principal, &mut record, &id).await?),
            None => None,
        };
        self.metrics.era2025.sessions_created.inc();
        self.count_version(version);
        let ctx = RequestContext { principal: principal.cloned(), parts: Arc::new(parts.clone()) };
        let server = self.factory.server(&ctx);
        let mut capabilities = crate::methods::discover::capabilities(&server.snapshot());
        // SEP-2133 negotiates extensions in `initialize`; the tasks extension is 2026-07-28's
        // only (see `crate::extensions`).
        let handlers = self.extensions.without(mcp_fleet_protocol::tasks::TASKS_EXTENSION);
        if let Some(extensions) =
            server.extensions().without(mcp_fleet_protocol::tasks::TASKS_EXTENSION).wire(&handlers)
        {
            capabilities["extensions"] = extensions;
        }
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": server.info().as_ref(),
        });
        if let Some(instructions) = server.instructions() {
            result["instructions"] = json!(instructions);
        }
        let mut response = json_response(StatusCode::OK, encode_result(&id, &result));
        if let Some(session_id) = session_id
            && let Ok(value) = HeaderValue::from_str(&session_id)
        {
            response.headers_mut().insert(SESSION_HEADER, value);
        }
        Ok(response)
    }

    /// Serve one request of `session`.
    async fn legacy_request(
        self: &Arc<Self>,
        session: &Session,
        ctx: RequestContext,
        id: RequestId,
        method: String,
        params: Map<String, Value>,
        sse_ok: bool,
    ) -> Answered {
        let answer = |result: Result<Value, RpcError>| {
            Answered::Json(match result {
                Ok(value) => encode_result(&id, &value),
                Err(error) => encode_error(Some(&id), &error.in_band()),
            })
        };
        match method.as_str() {
            "ping" => answer(Ok(json!({}))),
            "initialize" => answer(Err(RpcError::invalid_request("This session is already initialized"))),
            "logging/setLevel" => answer(self.set_level(session, &params).await),
            "resources/subscribe" => answer(self.subscription(session, &params, SessionOp::Subscribe).await),
            "resources/unsubscribe" => answer(self.subscription(session, &params, SessionOp::Unsubscribe).await),
            // Methods of the 2026 era only.
            "server/discover" | "subscriptions/listen" => answer(Err(RpcError::method_not_found(&method))),
            _ => {
                let call = SessionCall {
                    handler: self.clone(),
                    session: session.id.clone(),
                    record: session.record.clone(),
                    ctx,
                    id,
                    method,
                    params,
                    sse_ok,
                };
                call.answer().await
            }
        }
    }

    /// `logging/setLevel`: the session's level for every later call's log messages.
    async fn set_level(&self, session: &Session, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let level = params
            .get("level")
            .and_then(Value::as_str)
            .filter(|l| LogLevel::parse(l).is_some())
            .ok_or_else(|| RpcError::invalid_params("params.level must be one of the eight log levels"))?
            .to_owned();
        self.update_session(session, |r| r.log_level = Some(level.clone())).await?;
        Ok(json!({}))
    }

    /// `resources/subscribe` / `unsubscribe`: change the session's record, then tell the fleet
    /// (the session's GET stream may be open on any replica).
    async fn subscription(
        &self,
        session: &Session,
        params: &Map<String, Value>,
        op: SessionOp,
    ) -> Result<Value, RpcError> {
        let uri = params
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::invalid_params("params.uri must be a string"))?
            .to_owned();
        let Some(id) = &session.id else {
            return Err(RpcError::invalid_request("Resource subscriptions need a session (this endpoint serves none)"));
        };
        let subscribe = op == SessionOp::Subscribe;
        self.check_subscription(&session.record, &uri, subscribe)?;
        let most = self.options.era2025.max_subscriptions_per_session;
        self.update_session(session, |r| {
            // The limit again, on the record being written: a subscribe racing another on
            // another replica cannot take the session past it.
            if !subscribe {
                r.subscriptions.remove(&uri);
            } else if r.subscriptions.len() < most {
                r.subscriptions.insert(uri.clone());
            }
        })
        .await?;
        self.publish_session(Change::session(id.clone(), op, Some(uri))).await?;
        Ok(json!({}))
    }

    /// Deliver a session change to this node's streams now, then publish it to the fleet (the
    /// bus's copy is dropped here as a duplicate).
    async fn publish_session(&self, change: Change) -> Result<(), RpcError> {
        let event = EventEnvelope::new(change, self.bus.node_id());
        self.intake.deliver_local(&event);
        self.bus.publish_event(event).await.map(|_| ()).map_err(|e| {
            self.metrics.publish_failures.inc();
            RpcError::internal(format!("The change was saved but could not be announced to the fleet: {e}"))
        })
    }

    async fn update_session(&self, session: &Session, change: impl Fn(&mut SessionRecord)) -> Result<(), RpcError> {
        let (Some(store), Some(id)) = (&self.era2025.sessions, &session.id) else { return Ok(()) };
        match store.update(id, change).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(RpcError::invalid_request("The session ended")),
            Err(e) => Err(RpcError::internal(format!("The session store is unreachable: {e}"))),
        }
    }

    /// `notifications/cancelled`: stop the session's call, here or on the node running it.
    async fn cancel(&self, session: &Session, params: &Map<String, Value>) {
        let Some(session) = &session.id else { return };
        let Some(id) = params.get("requestId").and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok()) else {
            return;
        };
        if self.era2025.streams.calls().cancel(session, &id.to_json()) {
            return;
        }
        let change = Change::session(session.clone(), SessionOp::Cancel, Some(id.to_json()));
        if let Err(e) = self.publish_session(change).await {
            tracing::warn!(error = %e.message, "a cancellation could not reach the fleet");
        }
    }

    /// The client's answer to one of our requests.
    async fn relay_answer(
        &self,
        session: &Session,
        id: &RequestId,
        outcome: Result<Value, Value>,
    ) -> Result<(), String> {
        let (Some(relay), Some(session)) = (&self.era2025.relay, &session.id) else {
            return Err("This endpoint sent no request to answer (it serves no sessions)".into());
        };
        if relay.answer(session, id, outcome).await.map_err(|e| e.to_string())? == Delivered::Stored {
            let RequestId::String(raw) = id else { return Ok(()) };
            let change = Change::session(session.clone(), SessionOp::Answered, Some(raw.clone()));
            // Not fatal: the waiting call also looks for its answer once a second.
            if let Err(e) = self.publish_session(change).await {
                tracing::warn!(error = %e.message, "an answer's announcement did not reach the fleet");
            }
        }
        Ok(())
    }

    /// `GET`: the session's stream of change notifications.
    async fn legacy_get(
        &self,
        parts: &http::request::Parts,
        principal: Option<&Principal>,
    ) -> Result<Response<ResponseBody>, Refusal> {
        let Some(store) = &self.era2025.sessions else { return Err(Box::new(not_allowed())) };
        if !accepts_sse(parts.headers.get(header::ACCEPT)) {
            return Err(Box::new(http_error(StatusCode::NOT_ACCEPTABLE, "Accept must allow text/event-stream")));
        }
        let version = request_version(parts)?;
        let session = self.session_of(parts, principal, version).await?;
        let Some(id) = &session.id else { return Err(Box::new(not_allowed())) };
        let last_event_id = parts.headers.get("last-event-id").map(|v| v.to_str().unwrap_or(""));
        // The tenant is the caller's (which `session_of` checked is the session's own).
        let scope = principal.and_then(|p| p.tenant.clone());
        // Told to the bus before the stream registers: what is published from the response on
        // reaches this node.
        let mut interest = self.interest.session_stream(scope.as_deref());
        if let Some(guard) = interest.as_mut()
            && let Err(e) = guard.gain().await
        {
            tracing::warn!(error = %e, "the bus could not start reading what a session stream follows");
            let mut response = http_error(StatusCode::SERVICE_UNAVAILABLE, crate::listen::UNFOLLOWABLE);
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return Err(Box::new(response));
        }
        let streams = &self.era2025.streams;
        let followed = self.interest.session_uris();
        match streams.open(id, scope, session.record.subscriptions, last_event_id, followed) {
            Ok(body) => {
                // The record was read before the stream was registered: a subscription made
                // meanwhile was announced to no stream here. Read it again now that the
                // stream hears the announcements.
                let found = match store.load(id).await {
                    Ok(record) => record.map(|r| r.subscriptions),
                    Err(e) => {
                        tracing::warn!(error = %e, "re-reading a session's subscriptions failed; the renewal will");
                        None
                    }
                };
                streams.refresh_subscriptions(id, found);
                Ok(sse_response(ResponseBody::session_stream(body.following(interest))))
            }
            Err(refused @ (StreamRefused::Limit(_) | StreamRefused::Closing)) => {
                let mut response = http_error(StatusCode::SERVICE_UNAVAILABLE, &refused.to_string());
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                Err(Box::new(response))
            }
        }
    }

    /// `DELETE`: end the session on every replica.
    async fn legacy_delete(
        &self,
        parts: &http::request::Parts,
        principal: Option<&Principal>,
    ) -> Result<Response<ResponseBody>, Refusal> {
        let Some(store) = &self.era2025.sessions else { return Err(Box::new(not_allowed())) };
        let version = request_version(parts)?;
        let session = self.session_of(parts, principal, version).await?;
        let Some(id) = session.id.clone() else { return Err(Box::new(not_allowed())) };
        let ended = store.end(&id).await.map_err(|e| Box::new(store_unreachable(&e)))?;
        if let (true, Some(quota)) = (ended, &session.record.quota)
            && let Err(e) = store.release(quota, &id).await
        {
            tracing::warn!(error = %e, "a session slot was not given back; it lapses at its expiry");
        }
        self.metrics.era2025.sessions_ended.inc();
        if let Err(e) = self.publish_session(Change::session(id, SessionOp::End, None)).await {
            // The record is gone (404 everywhere); only an open stream elsewhere lingers until
            // its next renewal finds the session gone.
            tracing::warn!(error = %e.message, "session end not announced");
        }
        Ok(status_only(StatusCode::OK))
    }

    /// The session named by `Mcp-Session-Id`, or the refusal: 400 without one, 404 unknown,
    /// ended or another principal's, 503 when the store is unreachable.
    async fn session_of(
        &self,
        parts: &http::request::Parts,
        principal: Option<&Principal>,
        header_version: &str,
    ) -> Result<Session, Refusal> {
        let Some(store) = &self.era2025.sessions else {
            return Ok(Session { id: None, record: SessionRecord::stateless(header_version, principal) });
        };
        let Some(raw) = parts.headers.get(SESSION_HEADER) else {
            let message = "Bad Request: the Mcp-Session-Id header is required (send initialize first)";
            return Err(Box::new(http_error(StatusCode::BAD_REQUEST, message)));
        };
        let id = raw.to_str().unwrap_or("").trim().to_owned();
        let record = store.load(&id).await.map_err(|e| Box::new(store_unreachable(&e)))?;
        // Another principal's session is answered as an unknown one: the same 404, word for
        // word, so its existence is not confirmed to whoever holds its id.
        match record.filter(|record| record.belongs_to(principal)) {
            Some(record) => Ok(Session { id: Some(id), record }),
            None => {
                self.metrics.era2025.sessions_not_found.inc();
                Err(Box::new(http_error(
                    StatusCode::NOT_FOUND,
                    "Session not found: it ended or expired; send initialize to start a new one",
                )))
            }
        }
    }

    fn count_version(&self, version: &str) {
        let version = LEGACY_VERSIONS.iter().find(|v| **v == version).copied().unwrap_or("other");
        self.metrics.era2025.requests.get_or_create(&VersionLabel { version }).inc();
    }
}

/// The version a request speaks by its header, or the 400 for one we do not speak.
fn request_version(parts: &http::request::Parts) -> Result<&str, Refusal> {
    header_version(&parts.headers).map_err(|e| Box::new(error_response(None, &e)))
}

/// 405 for GET/DELETE when the endpoint serves no sessions.
fn not_allowed() -> Response<ResponseBody> {
    let mut response = http_error(StatusCode::METHOD_NOT_ALLOWED, "This endpoint serves no sessions: POST only");
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

pub(super) fn store_unreachable(error: &mcp_fleet_bus::BusError) -> Response<ResponseBody> {
    let mut response =
        http_error(StatusCode::SERVICE_UNAVAILABLE, &format!("The session store is unreachable: {error}"));
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// `[a,b,…]` from encoded messages.
fn join_array(items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = vec![b'['];
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item);
    }
    out.push(b']');
    out
}
