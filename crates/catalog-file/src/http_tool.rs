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
//!
//! Addresses: link-local and cloud metadata addresses are refused before any connection, on
//! the URL's host and on every address its name resolves to (`egress`), unless the
//! [`Confinement`](crate::Confinement) allows them.

use std::error::Error as _;
use std::sync::Arc;

use mcp_fleet_server::Principal;
use mcp_fleet_server::bus::redact::redact_url;
use mcp_fleet_server::types::{CallToolResult, Content};
use reqwest::Client;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::redirect::Policy;
use serde_json::{Map, Value};

use crate::catalog::{HttpTarget, IdentityHeaders};
use crate::egress::{AddressPolicy, GuardedResolver};
use crate::error::CatalogError;
use crate::format::Redirects;

/// Most redirects a `same-origin` tool follows in one call.
pub(crate) const MAX_REDIRECTS: usize = 5;

/// The largest response body read (1 MiB): the body becomes a tool result a model reads, and a
/// runaway backend must not grow the node's memory without bound.
pub(crate) const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// How much of a failed response's body the error message quotes.
const ERROR_BODY_CHARS: usize = 512;

/// A client and the addresses it refuses (its resolver enforces them on resolved names;
/// [`forward`] on the URL's literal host).
#[derive(Clone)]
pub(crate) struct GuardedClient {
    client: Client,
    policy: Arc<AddressPolicy>,
}

/// One client per redirect policy a catalog's `http` tools use: shared connection pools.
/// Timeouts are set per request, from each tool's `timeout_ms`.
#[derive(Clone, Default)]
pub(crate) struct Clients {
    no_redirects: Option<GuardedClient>,
    same_origin: Option<GuardedClient>,
}

impl Clients {
    /// The clients the `targets` need (none for none), refusing what `policy` refuses.
    pub(crate) fn for_targets<'a>(
        targets: impl Iterator<Item = &'a HttpTarget>,
        policy: &AddressPolicy,
    ) -> Result<Clients, CatalogError> {
        let mut clients = Clients::default();
        let policy = Arc::new(policy.clone());
        for target in targets {
            let slot = match target.redirects {
                Redirects::None => &mut clients.no_redirects,
                Redirects::SameOrigin => &mut clients.same_origin,
            };
            if slot.is_none() {
                let client = client(target.redirects, &policy)?;
                *slot = Some(GuardedClient { client, policy: Arc::clone(&policy) });
            }
        }
        Ok(clients)
    }

    /// The client for `target`, if [`for_targets`](Self::for_targets) saw it.
    pub(crate) fn get(&self, target: &HttpTarget) -> Option<&GuardedClient> {
        match target.redirects {
            Redirects::None => self.no_redirects.as_ref(),
            Redirects::SameOrigin => self.same_origin.as_ref(),
        }
    }
}

fn client(redirects: Redirects, policy: &Arc<AddressPolicy>) -> Result<Client, CatalogError> {
    let addresses = policy;
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
        // Every connection, a followed redirect's included, resolves through the guard.
        .dns_resolver(Arc::new(GuardedResolver::new(Arc::clone(addresses))))
        .build()
        .map_err(|e| CatalogError::HttpClient(chain(&e)))
}

/// Call `target` for the tool `tool` with `arguments` on behalf of `caller`; every failure is
/// an `isError` result.
pub(crate) async fn forward(
    client: &GuardedClient,
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
    let fields = [(&identity.subject, Some(caller.id.as_str())), (&identity.tenant, caller.tenant.as_deref())];
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
    GuardedClient { client, policy }: &GuardedClient,
    target: &HttpTarget,
    arguments: Map<String, Value>,
    caller: Option<&Principal>,
) -> Result<CallToolResult, String> {
    // An IP literal never reaches the resolver: checked here, before any connection.
    policy.check_url(&target.url).map_err(|refused| format!("cannot reach the endpoint: {refused}"))?;
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

#[cfg(test)]
mod tests {
    use std::net::IpAddr;
    use std::time::Duration;

    use super::*;

    /// A target at `url` (no redirects, no headers).
    fn target(url: &str) -> HttpTarget {
        HttpTarget {
            url: url.parse().expect("a URL"),
            timeout: Duration::from_secs(5),
            headers: HeaderMap::new(),
            redirects: Redirects::None,
            identity: IdentityHeaders::default(),
        }
    }

    #[tokio::test]
    async fn a_refused_address_is_refused_after_resolution_and_for_literals_before_connecting() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let loopback: [(IpAddr, u8); 2] = [(IpAddr::from([127, 0, 0, 0]), 8), ("::1".parse().expect("v6"), 128)];
        let policy = AddressPolicy::refusing(&loopback);
        // A name (through the resolver) and a literal (checked on the URL).
        for url in [format!("http://localhost:{port}/"), format!("http://127.0.0.1:{port}/")] {
            let target = target(&url);
            let clients = Clients::for_targets(std::iter::once(&target), &policy).expect("clients");
            let client = clients.get(&target).expect("a client");
            let result = forward(client, &target, "t", Map::new(), None).await;
            assert!(result.is_error, "{url}: {result:?}");
            assert!(format!("{:?}", result.content).contains("may not reach"), "{url}: {result:?}");
            let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
            assert!(accepted.is_err(), "{url}: nothing may connect to the listener");
        }
        // The same listener, allowed: the refusal above was the policy, not the address.
        let target = target(&format!("http://localhost:{port}/"));
        let clients = Clients::for_targets(std::iter::once(&target), &AddressPolicy::default()).expect("clients");
        let call = forward(clients.get(&target).expect("a client"), &target, "t", Map::new(), None);
        let (_, accepted) = tokio::join!(call, tokio::time::timeout(Duration::from_secs(5), listener.accept()));
        assert!(accepted.is_ok(), "the default policy lets loopback through");
    }
}
