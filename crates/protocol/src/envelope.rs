//! The per-request `params._meta` envelope (spec digest §5): protocol version, client
//! capabilities, client info, log level and progress token, and the capability matching rule.
//!
//! 2026-07-28 is stateless: everything a request relies on travels in its own envelope, so this
//! module is the single place that reads it.

use serde_json::{Map, Value};

use crate::error::RpcError;

/// `_meta` key naming the request's protocol version.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key holding the request's client capabilities.
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key holding the optional client identity.
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key opting in to `notifications/message` at or above a level.
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key stamped on every message of a `subscriptions/listen` stream.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";
/// Result `_meta` key carrying the server's identity.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// Project-specific notification `_meta` key carrying the event's version and publish time.
pub const FLEET_EVENT_KEY: &str = "dev.mcp-fleet/event";
/// Project-specific result `_meta` key carrying catalog content revisions: `{"revision": …}` on
/// a list page, one per list on `server/discover`. Revisions are hex strings (64-bit content
/// hashes: identical on every replica serving the same list).
pub const CATALOG_KEY: &str = "dev.mcp-fleet/catalog";

/// Log levels in increasing severity (RFC 5424 names used by MCP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// debug
    Debug,
    /// info
    Info,
    /// notice
    Notice,
    /// warning
    Warning,
    /// error
    Error,
    /// critical
    Critical,
    /// alert
    Alert,
    /// emergency
    Emergency,
}

impl LogLevel {
    const ALL: [(&'static str, LogLevel); 8] = [
        ("debug", LogLevel::Debug),
        ("info", LogLevel::Info),
        ("notice", LogLevel::Notice),
        ("warning", LogLevel::Warning),
        ("error", LogLevel::Error),
        ("critical", LogLevel::Critical),
        ("alert", LogLevel::Alert),
        ("emergency", LogLevel::Emergency),
    ];

    /// Parse a wire name.
    pub fn parse(s: &str) -> Option<LogLevel> {
        Self::ALL.iter().find(|(n, _)| *n == s).map(|(_, l)| *l)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        Self::ALL.iter().find(|(_, l)| *l == self).map(|(n, _)| *n).unwrap_or("info")
    }
}

/// The validated envelope of one request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestMeta {
    /// The protocol version the request speaks.
    pub protocol_version: String,
    /// Client capabilities valid for this request only (an object; `{}` means none).
    pub client_capabilities: Map<String, Value>,
    /// Optional client identity, for logging only.
    pub client_info: Option<Value>,
    /// Opt-in to log notifications at or above this level.
    pub log_level: Option<LogLevel>,
    /// Opt-in to progress notifications (string or integer, echoed verbatim).
    pub progress_token: Option<Value>,
}

impl RequestMeta {
    /// Whether the request's `_meta` carries a protocol-version claim (the modern marker).
    pub fn has_claim(params: &Map<String, Value>) -> bool {
        params.get("_meta").and_then(Value::as_object).is_some_and(|m| m.contains_key(PROTOCOL_VERSION_KEY))
    }

    /// Read and validate the envelope (ladder step 6). Errors are 400 `-32602` naming the key.
    pub fn from_params(params: &Map<String, Value>) -> Result<RequestMeta, RpcError> {
        let meta = match params.get("_meta") {
            Some(Value::Object(m)) => m,
            Some(_) => return Err(RpcError::invalid_params("params._meta must be an object")),
            None => return Err(missing(PROTOCOL_VERSION_KEY)),
        };
        let protocol_version = match meta.get(PROTOCOL_VERSION_KEY) {
            Some(Value::String(v)) => v.clone(),
            Some(_) => return Err(ill_typed(PROTOCOL_VERSION_KEY, "a string")),
            None => return Err(missing(PROTOCOL_VERSION_KEY)),
        };
        let client_capabilities = match meta.get(CLIENT_CAPABILITIES_KEY) {
            Some(Value::Object(c)) => c.clone(),
            Some(_) => return Err(ill_typed(CLIENT_CAPABILITIES_KEY, "an object")),
            None => return Err(missing(CLIENT_CAPABILITIES_KEY)),
        };
        let client_info = match meta.get(CLIENT_INFO_KEY) {
            None => None,
            Some(info @ Value::Object(o))
                if o.get("name").is_some_and(Value::is_string) && o.get("version").is_some_and(Value::is_string) =>
            {
                Some(info.clone())
            }
            Some(_) => return Err(ill_typed(CLIENT_INFO_KEY, "an object with string name and version")),
        };
        let log_level = match meta.get(LOG_LEVEL_KEY) {
            None => None,
            Some(Value::String(s)) => {
                Some(LogLevel::parse(s).ok_or_else(|| ill_typed(LOG_LEVEL_KEY, "one of the eight log levels"))?)
            }
            Some(_) => return Err(ill_typed(LOG_LEVEL_KEY, "one of the eight log levels")),
        };
        let progress_token = match meta.get("progressToken") {
            None => None,
            Some(t @ (Value::String(_) | Value::Number(_))) => Some(t.clone()),
            Some(_) => return Err(ill_typed("progressToken", "a string or an integer")),
        };
        Ok(RequestMeta { protocol_version, client_capabilities, client_info, log_level, progress_token })
    }

    /// What part of `required` (a `ClientCapabilities`-shaped object) this request did not
    /// declare, or `None` when everything is declared.
    pub fn missing_capabilities(&self, required: &Value) -> Option<Value> {
        missing_caps(&self.client_capabilities, required)
    }
}

/// The capability matching rule: a top-level key counts as declared if present; nested
/// requirements need the nested member too (`elicitation:{}` satisfies form, not url). A
/// declared member that is not an object declares none of its nested members.
fn missing_caps(declared: &Map<String, Value>, required: &Value) -> Option<Value> {
    let required = required.as_object()?;
    let mut missing = Map::new();
    for (key, req) in required {
        match declared.get(key) {
            None | Some(Value::Null) => {
                missing.insert(key.clone(), req.clone());
            }
            Some(have) => {
                let nested = match have {
                    Value::Object(have) => missing_caps(have, req),
                    _ => missing_caps(&Map::new(), req),
                };
                if let Some(nested) = nested {
                    missing.insert(key.clone(), nested);
                }
            }
        }
    }
    (!missing.is_empty()).then_some(Value::Object(missing))
}

fn missing(key: &str) -> RpcError {
    RpcError::invalid_params(format!("Missing required params._meta key {key:?}"))
}

fn ill_typed(key: &str, expected: &str) -> RpcError {
    RpcError::invalid_params(format!("params._meta key {key:?} must be {expected}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(meta: Value) -> Map<String, Value> {
        json!({"_meta": meta}).as_object().unwrap().clone()
    }

    #[test]
    fn reads_a_full_envelope() {
        let m = RequestMeta::from_params(&params(json!({
            PROTOCOL_VERSION_KEY: "2026-07-28",
            CLIENT_CAPABILITIES_KEY: {"sampling": {}},
            CLIENT_INFO_KEY: {"name": "c", "version": "1"},
            LOG_LEVEL_KEY: "warning",
            "progressToken": 5
        })))
        .unwrap();
        assert_eq!(m.protocol_version, "2026-07-28");
        assert_eq!(m.log_level, Some(LogLevel::Warning));
        assert_eq!(m.progress_token, Some(json!(5)));
    }

    #[test]
    fn names_the_missing_or_ill_typed_key() {
        let e = RequestMeta::from_params(&Map::new()).unwrap_err();
        assert!(e.message.contains(PROTOCOL_VERSION_KEY));
        let e = RequestMeta::from_params(&params(json!({PROTOCOL_VERSION_KEY: "2026-07-28"}))).unwrap_err();
        assert!(e.message.contains(CLIENT_CAPABILITIES_KEY));
        let e = RequestMeta::from_params(&params(
            json!({PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}, LOG_LEVEL_KEY: "loud"}),
        ))
        .unwrap_err();
        assert!(e.message.contains(LOG_LEVEL_KEY));
        assert_eq!(e.status, http::StatusCode::BAD_REQUEST);
    }

    #[test]
    fn capability_matching_follows_nesting() {
        let meta = RequestMeta {
            client_capabilities: json!({"elicitation": {}}).as_object().unwrap().clone(),
            ..Default::default()
        };
        assert_eq!(meta.missing_capabilities(&json!({"elicitation": {}})), None);
        assert_eq!(
            meta.missing_capabilities(&json!({"elicitation": {"url": {}}})),
            Some(json!({"elicitation": {"url": {}}}))
        );
        assert_eq!(meta.missing_capabilities(&json!({"sampling": {}})), Some(json!({"sampling": {}})));
    }
}
