//! The `http` tool's call: POST the arguments as JSON, answer with the response body as text
//! content — and as `structuredContent` too when the body is a JSON object (MCP requires
//! structured content to be an object).
//!
//! Everything that goes wrong on the way — no connection, a timeout, a non-2xx status, an
//! oversized or non-UTF-8 body — is a tool *execution* error (`isError: true`) that the model
//! can read, never a protocol error: the call itself was fine, the backend was not. The
//! message names the tool, not the URL (clients need not learn internal addresses); the log
//! line has the URL.

use std::error::Error as _;

use mcp_fleet_server::types::{CallToolResult, Content};
use reqwest::Client;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::{Map, Value};

use crate::catalog::HttpTarget;
use crate::error::CatalogError;

/// The largest response body read (1 MiB): the body becomes a tool result a model reads, and a
/// runaway backend must not grow the node's memory without bound.
pub(crate) const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// How much of a failed response's body the error message quotes.
const ERROR_BODY_CHARS: usize = 512;

/// One client for a catalog's `http` tools: a shared connection pool. Timeouts are set per
/// request, from each tool's `timeout_ms`.
pub(crate) fn client() -> Result<Client, CatalogError> {
    Client::builder()
        .user_agent(concat!("mcp-fleet/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| CatalogError::HttpClient(chain(&e)))
}

/// Call `target` for the tool `tool` with `arguments`; every failure is an `isError` result.
pub(crate) async fn forward(
    client: &Client,
    target: &HttpTarget,
    tool: &str,
    arguments: Map<String, Value>,
) -> CallToolResult {
    match exchange(client, target, arguments).await {
        Ok(result) => result,
        Err(message) => {
            tracing::warn!(tool, url = %target.url, "http tool failed: {message}");
            CallToolResult::error(format!("tool {tool:?}: {message}"))
        }
    }
}

/// The request and its answer; `Err` is the message of an execution error.
async fn exchange(
    client: &Client,
    target: &HttpTarget,
    arguments: Map<String, Value>,
) -> Result<CallToolResult, String> {
    let body = Value::Object(arguments).to_string();
    let mut response = client
        .post(target.url.clone())
        .timeout(target.timeout)
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/plain;q=0.9, */*;q=0.5")
        .headers(target.headers.clone())
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
    Ok(CallToolResult { content: vec![Content::text(text)], structured_content: structured, is_error: false })
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
