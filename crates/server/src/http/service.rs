//! The MCP endpoint as a function from HTTP request to response: step 0–2 HTTP checks
//! (path, Origin, authentication, method, Content-Type, body size), the protocol's validation
//! ladder, the server-side gates, and the choice of JSON or SSE for the answer. Each request
//! runs in a request span (see [`crate::trace`]) whose attributes are recorded as they become
//! known.

use std::sync::Arc;

use crate::context::NotificationReceiver;
use bytes::{Bytes, BytesMut};
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body::Body;
use http_body_util::BodyExt;
use mcp_fleet_protocol::jsonrpc::{encode_error, encode_result};
use mcp_fleet_protocol::validate::{Validated, validate_message};
use mcp_fleet_protocol::{Method as McpMethod, RequestId, RpcError, SUPPORTED_VERSIONS};
use tracing::{Instrument, Span};

use super::body::ResponseBody;
use super::call_body::CallBody;
use super::guard::origin_allowed;
use crate::auth::RetryAfter;
use crate::auth::www_authenticate::insufficient_scope;
use crate::context::RequestContext;
use crate::endpoint::McpHandler;
use crate::methods::{CallFuture, CallResult, MethodRequest, Prepared, prepare, required_scopes};
use crate::trace;

impl McpHandler {
    /// Answer one HTTP request to the MCP endpoint. Use it from your own hyper or tower
    /// service; [`McpHandler::serve`] uses it too.
    pub async fn handle<B>(&self, req: Request<B>) -> Response<ResponseBody>
    where
        B: Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let started = tokio::time::Instant::now();
        let span = trace::request_span(req.headers(), req.version());
        let (method, response) = self.answer(req, &span).await;
        trace::record_status(&span, response.status());
        self.shared.metrics.record_request(method, response.status(), started.elapsed());
        response
    }

    /// The response, and the method label it is counted under. `span` is entered only once the
    /// message is read: its parent may come from the message's `_meta`.
    async fn answer<B>(&self, req: Request<B>, span: &Span) -> (&'static str, Response<ResponseBody>)
    where
        B: Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = req.into_parts();
        if let Some(response) = self.protected_resource_metadata(&parts) {
            return (WELL_KNOWN, response);
        }
        let refused = |response: Response<ResponseBody>| {
            trace::record_refusal(span, response.status());
            (INVALID, response)
        };
        let principal = match self.admit(&parts).await {
            Ok(principal) => principal,
            Err(refusal) => return refused(*refusal),
        };
        let opts = &self.shared.options;
        if parts.method != Method::POST {
            let label = if parts.method == Method::GET { LEGACY_GET } else { LEGACY_DELETE };
            return (label, self.legacy(Arc::new(parts), principal, None).instrument(span.clone()).await);
        }
        let read =
            tokio::time::timeout(opts.request_read_timeout, read_body(body, opts.max_body_bytes, &parts.headers));
        let bytes = match read.await {
            Ok(Ok(b)) => b,
            Ok(Err(resp)) => return refused(*resp),
            Err(_) => {
                return refused(http_error(StatusCode::REQUEST_TIMEOUT, "The request body did not arrive in time"));
            }
        };
        let (id, message, meta) = match validate_message(&parts.headers, &bytes, SUPPORTED_VERSIONS) {
            Err(rej) => {
                trace::record_error(span, &rej.error);
                return (INVALID, error_response(rej.id.as_ref(), &rej.error));
            }
            Ok(Validated::Legacy(body)) if opts.legacy.enabled => {
                let label = legacy_label(&body);
                return (label, self.legacy(Arc::new(parts), principal, Some(body)).instrument(span.clone()).await);
            }
            Ok(Validated::Legacy(body)) => {
                // A modern-only endpoint: name the versions it serves (spec digest §6.2).
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
                return (INVALID, error_response(id.as_ref(), &error));
            }
            Ok(Validated::Notification(message)) => {
                trace::received(span, &parts.headers, &message, None);
                return ("notification", status_only(StatusCode::ACCEPTED));
            }
            Ok(Validated::Request { id, message, meta }) => (id, message, meta),
        };
        trace::received(span, &parts.headers, &message, Some(&meta.protocol_version));
        self.shared.metrics.record_modern_request();
        let label = method_label(&message.method);
        let sse_ok = accepts_sse(parts.headers.get(header::ACCEPT));
        let mut parts = parts;
        if message.method == McpMethod::SubscriptionsListen.as_str()
            && let Some(p) = &principal
        {
            // Fleet-wide stream quota: reserved here, where the keyspace can be awaited.
            match self.shared.limits.reserve_stream(&p.limit_key()).await {
                Ok(Some(slot)) => _ = parts.extensions.insert(crate::auth::ReservedStream::holding(slot)),
                Ok(None) => {}
                Err(reached) => {
                    let error = crate::auth::stream_quota_error(&self.shared.metrics, reached);
                    return (label, error_response(Some(&id), &error));
                }
            }
        }
        let ctx = RequestContext { principal, parts: Arc::new(parts) };
        let server = self.shared.factory.server(&ctx);
        let parts = ctx.parts.clone();
        let incoming = MethodRequest {
            shared: &self.shared,
            catalog: server.snapshot(),
            server,
            ctx,
            id: id.clone(),
            method: message.method,
            params: message.params,
            meta,
            headers: &parts.headers,
            legacy: false,
        };
        let dispatch = async move {
            match prepare(incoming) {
                Err(e) => {
                    trace::record_error(span, &e);
                    self.method_error(&id, &e)
                }
                Ok(Prepared::Immediate(result)) => json(StatusCode::OK, encode_result(&id, &result)),
                Ok(Prepared::Listen(body)) => sse_response(ResponseBody::listen(body)),
                Ok(Prepared::Call { future, notifications }) => {
                    run_call(id, future, notifications.filter(|_| sse_ok), span).await
                }
            }
        };
        (label, dispatch.instrument(span.clone()).await)
    }

    /// Steps 0–2 before the body is read: path (unless an outer router owns it), Origin/Host, authentication, method,
    /// Content-Type. `Ok` carries the principal, if an authenticator produced one.
    async fn admit(
        &self,
        parts: &http::request::Parts,
    ) -> Result<Option<crate::Principal>, Box<Response<ResponseBody>>> {
        let opts = &self.shared.options;
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
        if self.shared.limits.counts_requests() {
            let key = crate::auth::LimitGate::key(principal.as_ref(), parts);
            if let Err(wait) = self.shared.limits.check_request(&key, 1).await {
                self.shared.metrics.rate_limited.inc();
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
        let legacy = opts.legacy.enabled && !modern;
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

impl McpHandler {
    /// A 2025-era request's answer, its future boxed: it is several times the size of the
    /// rest of [`McpHandler::handle`]'s, and every request's future (which hyper moves into
    /// place per request) would otherwise be that large too. Not inlined, so the future is
    /// built in this function's stack frame, not in that of every request's poll.
    #[inline(never)]
    fn legacy(
        &self,
        parts: Arc<http::request::Parts>,
        principal: Option<crate::Principal>,
        body: Option<serde_json::Value>,
    ) -> futures_util::future::BoxFuture<'_, Response<ResponseBody>> {
        Box::pin(self.answer_legacy(parts, principal, body))
    }

    /// A method's error response; a tool's 403 carries its `insufficient_scope` challenge.
    fn method_error(&self, id: &RequestId, error: &RpcError) -> Response<ResponseBody> {
        let mut resp = error_response(Some(id), error);
        if let Some(scopes) = required_scopes(error) {
            let challenge = insufficient_scope(self.shared.challenge_base.as_deref(), &scopes);
            if let Ok(value) = HeaderValue::from_str(challenge.challenge()) {
                resp.headers_mut().insert(header::WWW_AUTHENTICATE, value);
            }
        }
        resp
    }

    /// The RFC 9728 document, when `parts` asks for it: served to anyone (no Origin check, no
    /// authentication — a client reads it to learn how to authenticate), GET only.
    fn protected_resource_metadata(&self, parts: &http::request::Parts) -> Option<Response<ResponseBody>> {
        let document = self.shared.options.protected_resource.as_ref()?.response_for(parts.uri.path())?;
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

async fn read_body<B>(body: B, limit: usize, headers: &http::HeaderMap) -> Result<Bytes, Box<Response<ResponseBody>>>
where
    B: Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let too_large = || {
        let err = RpcError::invalid_request(format!("Request body exceeds the limit of {limit} bytes"))
            .with_status(StatusCode::PAYLOAD_TOO_LARGE);
        Box::new(error_response(None, &err))
    };
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| super::h1::content_length(v.as_bytes()));
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    match collect_limited(body, limit).await {
        Ok(bytes) => Ok(bytes),
        Err(BodyReadError::TooLarge) => Err(too_large()),
        Err(BodyReadError::Failed(e)) => {
            Err(Box::new(http_error(StatusCode::BAD_REQUEST, &format!("Could not read the request body: {e}"))))
        }
    }
}

/// Why a request body could not be read whole.
#[derive(Debug)]
enum BodyReadError {
    /// It has more bytes than the limit.
    TooLarge,
    /// The connection failed or the body's framing was broken.
    Failed(Box<dyn std::error::Error + Send + Sync>),
}

/// A body's bytes, at most `limit` of them. A body that arrives as one data frame (what hyper
/// makes of a small request with a `Content-Length`, nearly every JSON-RPC message) is that
/// frame as it came: no list of frames and no copy, which `BodyExt::collect` makes for every
/// body. Several frames are joined; trailers are ignored.
async fn collect_limited<B>(body: B, limit: usize) -> Result<Bytes, BodyReadError>
where
    B: Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut body = std::pin::pin!(body);
    let mut first = Bytes::new();
    let mut joined: Option<BytesMut> = None;
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyReadError::Failed(e.into()))?;
        let Ok(data) = frame.into_data() else { continue };
        if data.is_empty() {
            continue;
        }
        len += data.len();
        if len > limit {
            return Err(BodyReadError::TooLarge);
        }
        match &mut joined {
            Some(all) => all.extend_from_slice(&data),
            None if first.is_empty() => first = data,
            None => {
                let mut all = BytesMut::with_capacity(len);
                all.extend_from_slice(&first);
                all.extend_from_slice(&data);
                joined = Some(all);
            }
        }
    }
    Ok(joined.map_or(first, BytesMut::freeze))
}

/// `application/json`, parameters allowed, compared case-insensitively on the parsed type.
fn is_json(value: Option<&HeaderValue>) -> bool {
    let Some(media) = value.and_then(|v| v.to_str().ok()) else { return false };
    media.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// Whether an `Accept` header admits an SSE response (`text/event-stream`), for a call or a
/// 2025-era session: [`Accepted`]'s rule.
pub(crate) fn accepts_sse(value: Option<&HeaderValue>) -> bool {
    Accepted::of(value).sse
}

/// What an `Accept` header admits of the endpoint's two media types, read in one pass — the
/// endpoint's one Accept parser. A media type is admitted by `*/*`, by its `type/*` or by
/// itself, case-insensitively; an absent or unreadable header admits anything. Parameters and
/// quality values are not weighed (HTTP-6: be lenient).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Accepted {
    json: bool,
    sse: bool,
}

impl Accepted {
    /// Byte by byte: the header is short, but `str` splitting and Unicode trimming made this
    /// a visible share of a `tools/call`. A value that is not visible ASCII (what
    /// `HeaderValue::to_str` refuses) admits anything; inside one, the only whitespace left to
    /// trim is space and tab.
    fn of(value: Option<&HeaderValue>) -> Accepted {
        const ANY: Accepted = Accepted { json: true, sse: true };
        let Some(accept) = value.map(HeaderValue::as_bytes) else { return ANY };
        // What the spec tells clients to send, and nearly all do: one comparison.
        if accept == b"application/json, text/event-stream" {
            return ANY;
        }
        if !accept.iter().all(|&b| b == b'\t' || (b' '..=b'~').contains(&b)) {
            return ANY;
        }
        let mut seen = Accepted { json: false, sse: false };
        for range in accept.split(|&b| b == b',') {
            let t = range.split(|&b| b == b';').next().unwrap_or_default().trim_ascii();
            if t == b"*/*" {
                return ANY;
            }
            let (family, subtype) = match t.iter().position(|&b| b == b'/') {
                Some(slash) => (&t[..slash], &t[slash + 1..]),
                None => (t, &b""[..]),
            };
            let any = subtype == b"*";
            if family.eq_ignore_ascii_case(b"application") && (any || subtype.eq_ignore_ascii_case(b"json")) {
                seen.json = true;
            } else if family.eq_ignore_ascii_case(b"text") && (any || subtype.eq_ignore_ascii_case(b"event-stream")) {
                seen.sse = true;
            }
        }
        seen
    }
}

pub(crate) fn json(status: StatusCode, body: Vec<u8>) -> Response<ResponseBody> {
    let mut resp = Response::new(ResponseBody::full(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

pub(crate) fn sse_response(body: ResponseBody) -> Response<ResponseBody> {
    let mut resp = Response::new(body);
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, no-transform"));
    // HTTP-10: disable proxy buffering.
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

/// A JSON-RPC error answered with the error's own HTTP status.
pub(crate) fn error_response(id: Option<&RequestId>, error: &RpcError) -> Response<ResponseBody> {
    json(error.status, encode_error(id, error))
}

/// An HTTP-level refusal with a JSON-RPC error body and no id (HTTP-2, HTTP-4, HTTP-5), of the
/// endpoint and of the 2025 era's sessions alike.
pub(crate) fn http_error(status: StatusCode, message: &str) -> Response<ResponseBody> {
    error_response(None, &RpcError::invalid_request(message).with_status(status))
}

/// 401 or 403 with the authenticator's `WWW-Authenticate` challenge.
fn refused(error: &crate::auth::AuthError) -> Response<ResponseBody> {
    let message = match error {
        crate::auth::AuthError::Unauthenticated { .. } => "Authentication required",
        crate::auth::AuthError::Forbidden { .. } => "Insufficient permissions for this request",
    };
    let mut resp = http_error(error.status(), message);
    if let Ok(value) = HeaderValue::from_str(error.challenge()) {
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    resp
}

/// 429 with `Retry-After` (whole seconds, at least 1) and a JSON-RPC error body.
pub(crate) fn rate_limited(wait: RetryAfter) -> Response<ResponseBody> {
    let secs = wait.header_secs();
    let message = format!("Request rate limit reached for this principal; retry after {secs} s");
    let mut resp = http_error(StatusCode::TOO_MANY_REQUESTS, &message);
    resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    resp
}

pub(crate) fn status_only(status: StatusCode) -> Response<ResponseBody> {
    let mut resp = Response::new(ResponseBody::empty());
    *resp.status_mut() = status;
    resp
}

fn plain(status: StatusCode, text: &'static str) -> Response<ResponseBody> {
    let mut resp = Response::new(ResponseBody::full(Bytes::from_static(text.as_bytes())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body of `frames` (`Err` for a failed read), through [`collect_limited`].
    fn collect(
        frames: Vec<Result<http_body::Frame<Bytes>, std::io::Error>>,
        limit: usize,
    ) -> Result<Bytes, BodyReadError> {
        let body = http_body_util::StreamBody::new(futures_util::stream::iter(frames));
        futures_util::FutureExt::now_or_never(collect_limited(body, limit)).expect("a ready body")
    }

    fn data(text: &'static str) -> Result<http_body::Frame<Bytes>, std::io::Error> {
        Ok(http_body::Frame::data(Bytes::from_static(text.as_bytes())))
    }

    #[test]
    fn a_body_of_one_frame_is_that_frame_and_more_frames_are_joined() {
        let frame = Bytes::from_static(b"{\"jsonrpc\":\"2.0\"}");
        let one = collect(vec![Ok(http_body::Frame::data(frame.clone()))], 100).expect("read");
        assert_eq!(one.as_ptr(), frame.as_ptr(), "the frame itself, not a copy");
        let trailers = http_body::Frame::trailers(http::HeaderMap::new());
        let three = collect(vec![data("ab"), data(""), data("cd"), Ok(trailers), data("e")], 100).expect("read");
        assert_eq!(&three[..], b"abcde");
        assert_eq!(&collect(vec![], 100).expect("read")[..], b"");
    }

    #[test]
    fn a_body_over_the_limit_is_refused_whether_in_one_frame_or_across_several() {
        assert!(matches!(collect(vec![data("abcdef")], 5), Err(BodyReadError::TooLarge)));
        assert!(matches!(collect(vec![data("abc"), data("def")], 5), Err(BodyReadError::TooLarge)));
        assert_eq!(&collect(vec![data("abc"), data("de")], 5).expect("exactly the limit")[..], b"abcde");
    }

    #[test]
    fn a_failed_read_is_reported_as_such() {
        let failed = collect(vec![data("ab"), Err(std::io::Error::other("connection reset"))], 100);
        match failed {
            Err(BodyReadError::Failed(e)) => assert!(e.to_string().contains("connection reset")),
            other => panic!("expected a failed read, got {other:?}"),
        }
    }

    /// The Accept rule written plainly, one media type at a time: the reference that
    /// [`Accepted::of`]'s byte-wise pass must agree with.
    fn accepts(value: Option<&HeaderValue>, media: &str) -> bool {
        let Some(accept) = value.and_then(|v| v.to_str().ok()) else { return true };
        let family = media.split('/').next().unwrap_or(media);
        accept.split(',').map(|t| t.split(';').next().unwrap_or("").trim()).any(|t| {
            t == "*/*"
                || t.eq_ignore_ascii_case(media)
                || t.strip_suffix("/*").is_some_and(|f| f.eq_ignore_ascii_case(family))
        })
    }

    #[test]
    fn one_pass_agrees_with_the_rule_for_each_media_type() {
        let headers = [
            "application/json, text/event-stream",
            "text/event-stream;q=0.9 , APPLICATION/JSON",
            "*/*",
            "application/*",
            "text/*; q=1",
            "text/html, image/png",
            "application/json/x, text/event-stream/*",
            "application",
            "",
            " , ;",
        ];
        for raw in headers {
            let value = HeaderValue::from_static(raw);
            let want = Accepted {
                json: accepts(Some(&value), "application/json"),
                sse: accepts(Some(&value), "text/event-stream"),
            };
            assert_eq!(Accepted::of(Some(&value)), want, "{raw:?}");
        }
        assert_eq!(Accepted::of(None), Accepted { json: true, sse: true });
    }
}
