//! Building responses: the one Accept parser (which media types a client takes), JSON and SSE
//! responses, JSON-RPC errors with their HTTP status, and the refusals the HTTP layer answers
//! itself (authentication, rate limits, bare statuses).

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use mcp_fleet_protocol::jsonrpc::encode_error;
use mcp_fleet_protocol::{RequestId, RpcError};

use super::body::ResponseBody;
use crate::auth::RetryAfter;

/// `application/json`, parameters allowed, compared case-insensitively on the parsed type.
pub(super) fn is_json(value: Option<&HeaderValue>) -> bool {
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
pub(super) struct Accepted {
    pub(super) json: bool,
    pub(super) sse: bool,
}

impl Accepted {
    /// Byte by byte: the header is short, but `str` splitting and Unicode trimming made this
    /// a visible share of a `tools/call`. A value that is not visible ASCII (what
    /// `HeaderValue::to_str` refuses) admits anything; inside one, the only whitespace left to
    /// trim is space and tab.
    pub(super) fn of(value: Option<&HeaderValue>) -> Accepted {
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
pub(super) fn refused(error: &crate::auth::AuthError) -> Response<ResponseBody> {
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

pub(super) fn plain(status: StatusCode, text: &'static str) -> Response<ResponseBody> {
    let mut resp = Response::new(ResponseBody::full(Bytes::from_static(text.as_bytes())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

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
