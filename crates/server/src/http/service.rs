//! The MCP endpoint as a function from HTTP request to response: step 0–2 HTTP checks
//! (path, Origin, authentication, method, Content-Type, body size), the protocol's validation
//! ladder, the server-side gates, and the choice of JSON or SSE for the answer. Each request
//! runs in a request span (see [`crate::trace`]) whose attributes are recorded as they become
//! known.

use std::sync::Arc;

use crate::context::NotificationReceiver;
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body::Body;
use mcp_fleet_protocol::jsonrpc::encode_result;
use mcp_fleet_protocol::validate::{Validated, validate_message};
use mcp_fleet_protocol::{Method as McpMethod, RequestId, RpcError, SUPPORTED_VERSIONS};
use tracing::{Instrument, Span};

use super::body::ResponseBody;
use super::call_body::CallBody;
use super::guard::origin_allowed;
use super::request_body::read_body;
use super::response::{
    Accepted, accepts_sse, error_response, http_error, is_json, json, plain, rate_limited, refused, sse_response,
    status_only,
};
use crate::auth::www_authenticate::insufficient_scope;
use crate::context::RequestContext;
use crate::listen::UNFOLLOWABLE;
use crate::methods::{CallFuture, CallResult, MethodRequest, Prepared, prepare, required_scopes};
use crate::shared::HandlerShared;
use crate::trace;

impl HandlerShared {
    /// Answer one HTTP request to the MCP endpoint (what `McpHandler::handle` does).
    pub(crate) async fn handle<B>(self: &Arc<Self>, req: Request<B>) -> Response<ResponseBody>
    where
        B: Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let started = tokio::time::Instant::now();
        let span = trace::request_span(req.headers(), req.version());
        let (method, response) = self.answer(req, &span).await;
        trace::record_status(&span, response.status());
        self.metrics.record_request(method, response.status(), started.elapsed());
        response
    }

    /// The response, and the method label it is counted under. `span` is entered only once the
    /// message is read: its parent may come from the message's `_meta`.
    async fn answer<B>(self: &Arc<Self>, req: Request<B>, span: &Span) -> (&'static str, Response<ResponseBody>)
    where
        B: Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = req.into_parts();
        if let Some(response) = self.protected_resource_metadata(&parts) {
            return (WELL_KNOWN, response);
        }
        let principal = match self.admit(&parts).await {
            Ok(principal) => principal,
            Err(refusal) => return refused_in(span, *refusal),
        };
        if parts.method != Method::POST {
            let label = if parts.method == Method::GET { LEGACY_GET } else { LEGACY_DELETE };
            return (label, self.era2025(Arc::new(parts), principal, None).instrument(span.clone()).await);
        }
        let bytes = match self.read(&parts, body).await {
            Ok(bytes) => bytes,
            Err(refusal) => return refused_in(span, *refusal),
        };
        let (id, message, meta) = match validate_message(&parts.headers, &bytes, SUPPORTED_VERSIONS) {
            Err(rej) => {
                trace::record_error(span, &rej.error);
                return (INVALID, error_response(rej.id.as_ref(), &rej.error));
            }
            Ok(Validated::Legacy(body)) if self.options.era2025.enabled => {
                let label = legacy_label(&body);
                return (label, self.era2025(Arc::new(parts), principal, Some(body)).instrument(span.clone()).await);
            }
            Ok(Validated::Legacy(body)) => return modern_only(&parts, &body),
            Ok(Validated::Notification(message)) => {
                trace::received(span, &parts.headers, &message, None);
                return ("notification", status_only(StatusCode::ACCEPTED));
            }
            Ok(Validated::Request { id, message, meta }) => (id, message, meta),
        };
        trace::received(span, &parts.headers, &message, Some(&meta.protocol_version));
        self.metrics.record_modern_request();
        self.dispatch(parts, principal, (id, message, meta), span).await
    }

    /// The request's body, read within the size limit and the read timeout.
    async fn read<B>(&self, parts: &http::request::Parts, body: B) -> Result<Bytes, Box<Response<ResponseBody>>>
    where
        B: Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let opts = &self.options;
        let read = read_body(body, opts.max_body_bytes, &parts.headers);
        match tokio::time::timeout(opts.request_read_timeout, read).await {
            Ok(read) => read,
            Err(_) => Err(Box::new(http_error(StatusCode::REQUEST_TIMEOUT, "The request body did not arrive in time"))),
        }
    }

    /// Serve a validated 2026-07-28 request: reserve a listen stream's fleet-wide slot, build
    /// the request's context and server, and answer what the method prepares.
    async fn dispatch(
        &self,
        mut parts: http::request::Parts,
        principal: Option<crate::context::Principal>,
        (id, message, meta): (
            RequestId,
            mcp_fleet_protocol::jsonrpc::Message,
            mcp_fleet_protocol::envelope::RequestMeta,
        ),
        span: &Span,
    ) -> (&'static str, Response<ResponseBody>) {
        let label = method_label(&message.method);
        let sse_ok = accepts_sse(parts.headers.get(header::ACCEPT));
        let opens_stream = [McpMethod::SubscriptionsListen, McpMethod::EventsStream].map(McpMethod::as_str);
        if opens_stream.contains(&message.method.as_str())
            && let Some(p) = &principal
            && let Err(refusal) = self.reserve_stream(&mut parts, p, &id).await
        {
            return (label, refusal);
        }
        let ctx = RequestContext { principal, parts: Arc::new(parts) };
        let server = self.factory.server(&ctx);
        let parts = ctx.parts.clone();
        let incoming = MethodRequest {
            shared: self,
            catalog: server.snapshot(),
            server,
            ctx,
            id: id.clone(),
            method: message.method,
            params: message.params,
            meta,
            headers: &parts.headers,
            era2025: false,
        };
        let dispatch = async move {
            match prepare(incoming) {
                Err(e) => {
                    trace::record_error(span, &e);
                    self.method_error(&id, &e)
                }
                Ok(Prepared::Immediate(result)) => json(StatusCode::OK, encode_result(&id, &result)),
                Ok(Prepared::Listen(mut body)) => match body.follow().await {
                    Ok(()) => sse_response(ResponseBody::listen(body)),
                    Err(e) => {
                        tracing::warn!(error = %e, "the bus could not start reading what a listen stream follows");
                        let error = RpcError::internal(UNFOLLOWABLE);
                        trace::record_error(span, &error);
                        self.method_error(&id, &error)
                    }
                },
                Ok(Prepared::Call { future, notifications }) => {
                    run_call(id, future, notifications.filter(|_| sse_ok), span).await
                }
            }
        };
        (label, dispatch.instrument(span.clone()).await)
    }

    /// The principal's fleet-wide stream quota, reserved here, where the keyspace can be
    /// awaited; the slot travels with the request to the stream that holds it.
    async fn reserve_stream(
        &self,
        parts: &mut http::request::Parts,
        principal: &crate::context::Principal,
        id: &RequestId,
    ) -> Result<(), Response<ResponseBody>> {
        match self.limits.reserve_stream(&principal.limit_key()).await {
            Ok(Some(slot)) => _ = parts.extensions.insert(crate::auth::ReservedStream::holding(slot)),
            Ok(None) => {}
            Err(reached) => {
                let error = crate::auth::stream_quota_error(&self.metrics, reached);
                return Err(error_response(Some(id), &error));
            }
        }
        Ok(())
    }

    /// Steps 0–2 before the body is read: path (unless an outer router owns it), Origin/Host, authentication, method,
    /// Content-Type. `Ok` carries the principal, if an authenticator produced one.
    async fn admit(
        &self,
        parts: &http::request::Parts,
    ) -> Result<Option<crate::context::Principal>, Box<Response<ResponseBody>>> {
        let opts = &self.options;
        if opts.match_path && parts.uri.path() != opts.mcp_path {
            return Err(Box::new(plain(StatusCode::NOT_FOUND, "Not Found")));
        }
        if !origin_allowed(parts, opts.allowed_origins.as_deref(), opts.allowed_hosts.as_deref()) {
            return Err(Box::new(http_error(StatusCode::FORBIDDEN, "Origin or Host not allowed")));
        }
        let principal = match &opts.authenticator {
            None => None,
            Some(authenticator) => Some(authenticator.authenticate(parts).await.map_err(|e| Box::new(refused(&e)))?),
        };
        if self.limits.counts_requests() {
            let key = crate::auth::LimitGate::key(principal.as_ref(), parts);
            if let Err(wait) = self.limits.check_request(&key, 1).await {
                self.metrics.rate_limited.inc();
                return Err(Box::new(rate_limited(wait)));
            }
        }
        // GET and DELETE belong to the 2025 era's sessions; a request naming a 2026 version
        // has no stream to open nor session to end.
        let modern = parts
            .headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| mcp_fleet_protocol::validate::is_modern(v.trim()));
        let legacy = opts.era2025.enabled && !modern;
        if parts.method != Method::POST && !(legacy && matches!(parts.method, Method::GET | Method::DELETE)) {
            let allow = if legacy { "POST, GET, DELETE" } else { "POST" };
            let mut resp = http_error(StatusCode::METHOD_NOT_ALLOWED, "Only POST is allowed on the MCP endpoint");
            resp.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
            return Err(Box::new(resp));
        }
        if parts.method != Method::POST {
            // A 2025-era session's GET stream or DELETE: no body, no Content-Type.
            return Ok(principal);
        }
        let accept = Accepted::of(parts.headers.get(header::ACCEPT));
        if !accept.json && !accept.sse {
            return Err(Box::new(http_error(
                StatusCode::NOT_ACCEPTABLE,
                "Accept must allow application/json or text/event-stream",
            )));
        }
        if !is_json(parts.headers.get(header::CONTENT_TYPE)) {
            return Err(Box::new(http_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Content-Type must be application/json",
            )));
        }
        Ok(principal)
    }
}

/// Method label of requests refused before a method could be read.
const INVALID: &str = "invalid";

/// A refusal before the request is served, recorded on its span.
fn refused_in(span: &Span, response: Response<ResponseBody>) -> (&'static str, Response<ResponseBody>) {
    trace::record_refusal(span, response.status());
    (INVALID, response)
}

/// A 2025-era message on a modern-only endpoint: a notification is accepted and dropped; a
/// request is told which versions this endpoint serves.
fn modern_only(parts: &http::request::Parts, body: &serde_json::Value) -> (&'static str, Response<ResponseBody>) {
    let id = body.get("id").and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
    if body.get("method").is_some() && id.is_none() {
        return ("notification", status_only(StatusCode::ACCEPTED));
    }
    let requested = body
        .pointer("/params/protocolVersion")
        .and_then(serde_json::Value::as_str)
        .or_else(|| parts.headers.get("mcp-protocol-version").and_then(|v| v.to_str().ok()))
        .unwrap_or(mcp_fleet_protocol::validate::ASSUMED_LEGACY_VERSION);
    let error = RpcError::unsupported_version(SUPPORTED_VERSIONS, requested);
    (INVALID, error_response(id.as_ref(), &error))
}

/// Method labels of 2025-era session GET streams and DELETEs.
const LEGACY_GET: &str = "legacy/stream";
const LEGACY_DELETE: &str = "legacy/delete";

/// The method label of a 2025-era POST body (`batch` for an array).
fn legacy_label(body: &serde_json::Value) -> &'static str {
    match body.get("method").and_then(serde_json::Value::as_str) {
        Some("initialize") => "initialize",
        Some("ping") => "ping",
        Some("logging/setLevel") => "logging/setLevel",
        Some("resources/subscribe") => "resources/subscribe",
        Some("resources/unsubscribe") => "resources/unsubscribe",
        Some(_) if body.get("id").is_none() => "notification",
        Some(m) => method_label(m),
        None if body.is_array() => "batch",
        None => "response",
    }
}

/// Method label of protected-resource metadata requests.
const WELL_KNOWN: &str = "oauth-protected-resource";

impl HandlerShared {
    /// A 2025-era request's answer, its future boxed: it is several times the size of the
    /// rest of [`McpHandler::handle`]'s, and every request's future (which hyper moves into
    /// place per request) would otherwise be that large too. Not inlined, so the future is
    /// built in this function's stack frame, not in that of every request's poll.
    #[inline(never)]
    fn era2025(
        self: &Arc<Self>,
        parts: Arc<http::request::Parts>,
        principal: Option<crate::context::Principal>,
        body: Option<serde_json::Value>,
    ) -> futures_util::future::BoxFuture<'_, Response<ResponseBody>> {
        Box::pin(self.answer_legacy(parts, principal, body))
    }

    /// A method's error response; a tool's 403 carries its `insufficient_scope` challenge.
    fn method_error(&self, id: &RequestId, error: &RpcError) -> Response<ResponseBody> {
        let mut resp = error_response(Some(id), error);
        if let Some(scopes) = required_scopes(error) {
            let challenge = insufficient_scope(self.challenge_base.as_deref(), &scopes);
            if let Ok(value) = HeaderValue::from_str(challenge.challenge()) {
                resp.headers_mut().insert(header::WWW_AUTHENTICATE, value);
            }
        }
        resp
    }

    /// The RFC 9728 document, when `parts` asks for it: served to anyone (no Origin check, no
    /// authentication — a client reads it to learn how to authenticate), GET only.
    fn protected_resource_metadata(&self, parts: &http::request::Parts) -> Option<Response<ResponseBody>> {
        let document = self.options.protected_resource.as_ref()?.response_for(parts.uri.path())?;
        if parts.method != Method::GET && parts.method != Method::HEAD {
            let mut resp = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
            resp.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return Some(resp);
        }
        let mut resp = json(StatusCode::OK, document.to_string().into_bytes());
        // Browser-based MCP clients fetch it cross-origin.
        resp.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        Some(resp)
    }
}

/// A bounded set of metric labels: the methods this server answers, else `other`.
fn method_label(method: &str) -> &'static str {
    McpMethod::parse(method).map_or("other", McpMethod::as_str)
}

/// Run a call: JSON if it finishes before emitting a notification, SSE from its first one.
async fn run_call(
    id: RequestId,
    mut future: CallFuture,
    notifications: Option<NotificationReceiver>,
    span: &Span,
) -> Response<ResponseBody> {
    let Some(mut rx) = notifications else { return call_json(&id, future.await, span) };
    tokio::select! {
        biased;
        Some(first) = rx.recv() => sse_response(ResponseBody::call(CallBody::new(id, future, rx, first))),
        result = &mut future => match rx.try_recv() {
            // Notifications emitted without yielding still go out, before the result.
            Ok(first) => {
                let done: CallFuture = Box::pin(std::future::ready(result));
                sse_response(ResponseBody::call(CallBody::new(id, done, rx, first)))
            }
            Err(_) => call_json(&id, result, span),
        },
    }
}

/// A finished call as JSON (its error's status was set by `RpcError::from_handler`), its
/// outcome recorded on the request span.
fn call_json(id: &RequestId, result: Result<CallResult, RpcError>, span: &Span) -> Response<ResponseBody> {
    match result {
        Ok(answer) => {
            trace::record_result(span, answer.is_tool_error());
            json(StatusCode::OK, answer.encode_response(id))
        }
        Err(e) => {
            trace::record_error(span, &e);
            error_response(Some(id), &e)
        }
    }
}
