//! The 2025 era of MCP over Streamable HTTP (revisions 2025-03-26, 2025-06-18, 2025-11-25), as
//! pure rules: the versions served and their negotiation, the messages a legacy client posts
//! (requests, notifications, responses to server-to-client requests, and 2025-03-26 batches),
//! the session and version headers, and the shape of era-pure results.
//!
//! The server's `legacy` module does the I/O (sessions in the fleet, the GET stream, relaying
//! replies); everything it decides from bytes alone lives here, testable without a socket.

use http::HeaderMap;
use serde_json::{Map, Value};

use crate::envelope::SERVER_INFO_KEY;
use crate::error::{ErrorCode, RpcError};
use crate::headers::{PROTOCOL_VERSION_HEADER, header_text};
use crate::jsonrpc::{Rejection, RequestId};
use crate::validate::ASSUMED_LEGACY_VERSION;

/// The 2025-era revisions this server speaks, newest first.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// The session header (`Mcp-Session-Id`), case-insensitive like every HTTP header name.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// The only revision that allowed JSON-RPC batches.
const BATCH_VERSION: &str = "2025-03-26";

/// Version negotiation of `initialize` (2025-11-25 lifecycle): the client's version when it is
/// one we speak, else our newest; the client then decides whether it can go on.
///
/// ```
/// use mcp_fleet_protocol::legacy::negotiate;
/// assert_eq!(negotiate("2025-06-18"), "2025-06-18");
/// assert_eq!(negotiate("2024-11-05"), "2025-11-25");
/// ```
pub fn negotiate(requested: &str) -> &'static str {
    LEGACY_VERSIONS.iter().find(|v| **v == requested).copied().unwrap_or(LEGACY_VERSIONS[0])
}

/// The version a legacy request speaks by its `MCP-Protocol-Version` header: the header's
/// value, or `2025-03-26` when there is none (2025-06-18 §"Protocol Version Header"). A value we
/// do not speak is 400 `-32600` ("the server MUST respond with 400 Bad Request").
pub fn header_version(headers: &HeaderMap) -> Result<&str, RpcError> {
    match header_text(headers, PROTOCOL_VERSION_HEADER)? {
        None => Ok(ASSUMED_LEGACY_VERSION),
        Some(v) if LEGACY_VERSIONS.contains(&v) => Ok(v),
        Some(v) => Err(RpcError::invalid_request(format!(
            "Unsupported MCP-Protocol-Version {v:?}; this endpoint speaks {} (and 2026-07-28 through params._meta)",
            LEGACY_VERSIONS.join(", ")
        ))
        .with_status(http::StatusCode::BAD_REQUEST)),
    }
}

/// One message a legacy client posted.
#[derive(Debug, Clone, PartialEq)]
pub enum LegacyMessage {
    /// A request: answered.
    Request {
        /// Its id.
        id: RequestId,
        /// The method.
        method: String,
        /// Its params (empty when absent).
        params: Map<String, Value>,
    },
    /// A notification: accepted (202).
    Notification {
        /// The method.
        method: String,
        /// Its params.
        params: Map<String, Value>,
    },
    /// The client's answer to a server-to-client request.
    Response {
        /// The id the server gave its request.
        id: RequestId,
        /// `Ok(result)` or `Err(error object)`.
        outcome: Result<Value, Value>,
    },
}

impl LegacyMessage {
    /// Whether this is the `initialize` request.
    pub fn is_initialize(&self) -> bool {
        matches!(self, LegacyMessage::Request { method, .. } if method == "initialize")
    }
}

/// A legacy POST body: one message, or (2025-03-26 only) a batch of them.
#[derive(Debug, Clone, PartialEq)]
pub struct LegacyBody {
    /// The messages, in order.
    pub messages: Vec<LegacyMessage>,
    /// Whether they came as a JSON array.
    pub batch: bool,
}

impl LegacyBody {
    /// The requests among the messages.
    pub fn requests(&self) -> impl Iterator<Item = (&RequestId, &str, &Map<String, Value>)> {
        self.messages.iter().filter_map(|m| match m {
            LegacyMessage::Request { id, method, params } => Some((id, method.as_str(), params)),
            _ => None,
        })
    }
}

/// Shape a parsed legacy body. `version` is the revision the request speaks (its header, or the
/// session's): a batch is refused unless it is 2025-03-26, and an `initialize` may not be
/// batched (2025-03-26 §Lifecycle).
pub fn parse_body(value: Value, version: &str) -> Result<LegacyBody, Rejection> {
    match value {
        Value::Array(items) => {
            if version != BATCH_VERSION {
                return Err(Rejection::new(
                    None,
                    RpcError::invalid_request(format!("JSON-RPC batches are not part of protocol version {version}")),
                ));
            }
            if items.is_empty() {
                return Err(Rejection::new(None, RpcError::invalid_request("An empty batch is not a request")));
            }
            let messages = items.into_iter().map(parse_one).collect::<Result<Vec<_>, _>>()?;
            if messages.iter().any(LegacyMessage::is_initialize) {
                return Err(Rejection::new(None, RpcError::invalid_request("initialize must not be part of a batch")));
            }
            Ok(LegacyBody { messages, batch: true })
        }
        value => Ok(LegacyBody { messages: vec![parse_one(value)?], batch: false }),
    }
}

/// One message object.
fn parse_one(value: Value) -> Result<LegacyMessage, Rejection> {
    let Value::Object(mut obj) = value else {
        return Err(Rejection::new(None, RpcError::invalid_request("A JSON-RPC message must be an object")));
    };
    let id =
        match obj.get("id") {
            None => None,
            Some(v) => Some(serde_json::from_value::<RequestId>(v.clone()).ok().filter(valid_id).ok_or_else(|| {
                Rejection::new(None, RpcError::invalid_request("The id must be a string or an integer"))
            })?),
        };
    let reject = |id: &Option<RequestId>, msg: &str| Rejection::new(id.clone(), RpcError::invalid_request(msg));
    if obj.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err(reject(&id, "The jsonrpc member must be exactly \"2.0\""));
    }
    if !obj.contains_key("method") {
        let Some(id) = id else { return Err(reject(&None, "A response needs the id of the request it answers")) };
        let outcome = match (obj.remove("result"), obj.remove("error")) {
            (Some(result), None) => Ok(result),
            (None, Some(error)) if error.is_object() => Err(error),
            _ => return Err(reject(&Some(id), "A response has exactly one of result and error (an object)")),
        };
        return Ok(LegacyMessage::Response { id, outcome });
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) => m,
        _ => return Err(reject(&id, "The method member must be a string")),
    };
    let params = match obj.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p,
        Some(_) => return Err(reject(&id, "The params member must be an object")),
    };
    Ok(match id {
        Some(id) => LegacyMessage::Request { id, method, params },
        None => LegacyMessage::Notification { method, params },
    })
}

/// JSON-RPC ids are strings or integers (no fractions).
fn valid_id(id: &RequestId) -> bool {
    match id {
        RequestId::Number(n) => n.is_i64() || n.is_u64(),
        RequestId::String(_) => true,
    }
}

/// Make a 2026-07-28 result era-pure for a 2025 client: no `resultType`, `ttlMs`,
/// `cacheScope` or `_meta` server identity (the 2025 schema has none of them), and no empty
/// `_meta` left behind.
///
/// ```
/// use mcp_fleet_protocol::legacy::to_legacy_result;
/// let mut r = serde_json::json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
///     "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}});
/// to_legacy_result(&mut r);
/// assert_eq!(r, serde_json::json!({"tools": []}));
/// ```
pub fn to_legacy_result(result: &mut Value) {
    let Some(obj) = result.as_object_mut() else { return };
    for key in ["resultType", "ttlMs", "cacheScope"] {
        obj.remove(key);
    }
    if let Some(Value::Object(meta)) = obj.get_mut("_meta") {
        meta.remove(SERVER_INFO_KEY);
        if meta.is_empty() {
            obj.remove("_meta");
        }
    }
}

/// The error a 2025 client gets for `error`: JSON-RPC codes of that era (an unknown resource
/// is `-32002` there, with the same `data.uri`), and always HTTP 200 — a 2025 client reads
/// JSON-RPC errors from the body; a non-2xx status is a transport failure to it.
pub fn to_legacy_error(method: &str, error: RpcError) -> RpcError {
    let mut error = error.in_band();
    let unknown_resource = method == "resources/read"
        && error.code == ErrorCode::InvalidParams
        && error.data.as_ref().is_some_and(|d| d.get("uri").is_some());
    if unknown_resource {
        error.code = ErrorCode::ResourceNotFound;
    }
    error
}

#[cfg(test)]
mod tests;
