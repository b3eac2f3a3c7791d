//! The `http` tool's call: POST the arguments as JSON, answer with the response body as text
//! content — and as `structuredContent` too when the body is a JSON object (MCP requires
//! structured content to be an object).
//!
//! Everything that goes wrong on the way — no connection, a timeout, a non-2xx status, an
//! oversized or non-UTF-8 body — is a tool *execution* error (`isError: true`) that the model
//! can read, never a protocol error: the call itself was fine, the backend was not. The
//! message names the tool, not the URL (clients need not learn internal addresses); the log
//! line has the URL, redacted.
//!
//! Redirects: none is followed by default — a backend (or whoever answers in its name) that
//! says 307 to another host would otherwise receive the arguments again and every custom
//! header (reqwest drops only `Authorization` and `Cookie` across hosts; an `X-Api-Key`
//! would go along). A 3xx is then the tool's error result. `redirects = "same-origin"` follows
//! up to [`MAX_REDIRECTS`] within the URL's scheme, host and port, and stops at any other.
//!
//! The caller's identity travels only in the headers `forward_identity` names: the
//! principal's subject and tenant, absent when the call has no principal.

use std::error::Error as _;

use mcp_fleet_server::Principal;
use mcp_fleet_server::bus::redact::redact_url;
use mcp_fleet_server::types::{CallToolResult, Content};
use reqwest::Client;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::redirect::Policy;
use serde_json::{Map, Value};

use crate::catalog::{HttpTarget, IdentityHeaders};
use crate::error::CatalogError;
use crate::format::Redirects;

/// Most redirects a `same-origin` tool follows in one call.
pub(crate) const MAX_REDIRECTS: usize = 5;

/// The largest response body read (1 MiB): the body becomes a tool result a model reads, and a
/// runaway backend must not grow the node's memory without bound.
pub(crate) const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// How much of a failed response's body the error message quotes.
const ERROR_BODY_CHARS: usize = 512;

/// One client per redirect policy a catalog's `http` tools use: shared connection pools.
/// Timeouts are set per request, from each tool's `timeout_ms`.
#[derive(Clone, Default)]
pub(crate) struct Clients {
    no_redirects: Option<Client>,
    same_origin: Option<Client>,
}

impl Clients {
    /// The clients the `targets` need (none for none).
    pub(crate) fn for_targets<'a>(targets: impl Iterator<Item = &'a HttpTarget>) -> Result<Clients, CatalogError> {
        let mut clients = Clients::default();
        for target in targets {
            let slot = match target.redirects {
                Redirects::None => &mut clients.no_redirects,
                Redirects::SameOrigin => &mut clients.same_origin,
            };
            if slot.is_none() {
                *slot = Some(client(target.redirects)?);
            }
        }
        Ok(clients)
    }

    /// The client for `target`, if [`for_targets`](Self::for_targets) saw it.
    pub(crate) fn get(&self, target: &HttpTarget) -> Option<&Client> {
        match target.redirects {
            Redirects::None => self.no_redirects.as_ref(),
            Redirects::SameOrigin => self.same_origin.as_ref(),
        }
    }
}

fn client(redirects: Redirects) -> Result<Client, CatalogError> {
    let policy = match redirects {
        Redirects::None => Policy::none(),
        Redirects::SameOrigin => Policy::custom(|attempt| {
            let from = attempt.previous().first().map(reqwest::Url::origin);
            if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else if from.as_ref() == Some(&attempt.url().origin()) {
                attempt.follow()
            } else {
                attempt.stop()
            }
        }),
    };
    Client::builder()
        .user_agent(concat!("mcp-fleet/", env!("CARGO_PKG_VERSION")))
        .redirect(policy)
        .build()
        .map_err(|e| CatalogError::HttpClient(chain(&e)))
}

/// Call `target` for the tool `tool` with `arguments` on behalf of `caller`; every failure is
/// an `isError` result.
pub(crate) async fn forward(
    client: &Client,
    target: &HttpTarget,
    tool: &str,
    arguments: Map<String, Value>,
    caller: Option<&Principal>,
) -> CallToolResult {
    match exchange(client, target, arguments, caller).await {
        Ok(result) => result,
        Err(message) => {
            tracing::warn!(tool, url = %redact_url(target.url.as_str()), "http tool failed: {message}");
            CallToolResult::error(format!("tool {tool:?}: {message}"))
        }
    }
}

/// The identity headers for `caller` (none without a caller).
fn identity_headers(identity: &IdentityHeaders, caller: Option<&Principal>) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    let Some(caller) = caller else { return Ok(headers) };
    let fields = [(&identity.subject, Some(caller.id.as_str())), (&identity.tenant, caller.scope.as_deref())];
    for (name, value) in fields {
        if let (Some(name), Some(value)) = (name, value) {
            let value = HeaderValue::from_str(value)
                .map_err(|_| format!("the caller's identity cannot travel in the {name} header"))?;
            headers.insert(name.clone(), value);
        }
    }
    Ok(headers)
}

/// The request and its answer; `Err` is the message of an execution error.
async fn exchange(
    client: &Client,
    target: &HttpTarget,
    arguments: Map<String, Value>,
    caller: Option<&Principal>,
) -> Result<CallToolResult, String> {
    let body = Value::Object(arguments).to_string();
    let mut response = client
        .post(target.url.clone())
        .timeout(target.timeout)
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/plain;q=0.9, */*;q=0.5")
        .headers(target.headers.clone())
        .headers(identity_headers(&target.identity, caller)?)
        .body(body)
        .send()
        .await
        .map_err(|e| failure(e, target))?;
    let status = response.status();
    if !status.is_success() {
        let body = read_body(&mut response, target).await.unwrap_or_default();
        let quoted = String::from_utf8_lossy(&body).chars().take(ERROR_BODY_CHARS).collect::<String>();
        return Err(format!("the endpoint answered {status}: {}", crate::parse::one_line(&quoted)));
    }
    let body = read_body(&mut response, target).await?;
    let text = String::from_utf8(body).map_err(|_| "the endpoint's answer is not UTF-8 text".to_owned())?;
    let structured = match serde_json::from_str::<Value>(&text) {
        Ok(object @ Value::Object(_)) => Some(object),
        _ => None,
    };
    Ok(CallToolResult {
        content: vec![Content::text(text)],
        structured_content: structured,
        ..CallToolResult::default()
    })
}

/// The body, up to [`MAX_RESPONSE_BYTES`].
async fn read_body(response: &mut reqwest::Response, target: &HttpTarget) -> Result<Vec<u8>, String> {
    let too_large = || format!("the endpoint's answer is larger than {MAX_RESPONSE_BYTES} bytes");
    if response.content_length().is_some_and(|n| n > MAX_RESPONSE_BYTES as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| failure(e, target))? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// What a transport error means for the model.
fn failure(e: reqwest::Error, target: &HttpTarget) -> String {
    if e.is_timeout() {
        format!("the endpoint did not answer within {} ms (timed out)", target.timeout.as_millis())
    } else {
        format!("cannot reach the endpoint: {}", chain(&e.without_url()))
    }
}

/// An error and its sources on one line (reqwest's own message says little: "error sending
/// request"; the cause — connection refused, DNS — is in the chain).
fn chain(e: &reqwest::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}
