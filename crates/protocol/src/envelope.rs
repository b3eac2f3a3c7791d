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
    /// Copies what it reads; [`RequestMeta::take_from_params`] moves it instead.
    pub fn from_params(params: &Map<String, Value>) -> Result<RequestMeta, RpcError> {
        let mut copy = Map::new();
        if let Some(meta) = params.get("_meta") {
            copy.insert("_meta".to_owned(), meta.clone());
        }
        RequestMeta::take_from_params(&mut copy)
    }

    /// [`RequestMeta::from_params`], moving the envelope's members out of `params._meta`
    /// rather than copying them (what a request's handler needs is the envelope, not the
    /// `_meta` it came in). Other `_meta` members (a trace context, say) stay; a `_meta` left
    /// empty is removed. On an error (the request is refused) what is left of `params._meta`
    /// is unspecified.
    pub fn take_from_params(params: &mut Map<String, Value>) -> Result<RequestMeta, RpcError> {
        let meta = match params.get_mut("_meta") {
            Some(Value::Object(m)) => m,
            Some(_) => return Err(RpcError::invalid_params("params._meta must be an object")),
            None => return Err(missing(PROTOCOL_VERSION_KEY)),
        };
        // One pass over the members, each envelope key to its slot and the rest kept: a
        // lookup and a removal per key (long keys sharing a 24-byte prefix) cost more than the
        // whole pass.
        let mut envelope = Envelope::default();
        let mut rest = Map::new();
        for (key, value) in std::mem::take(meta) {
            match key.as_str() {
                PROTOCOL_VERSION_KEY => envelope.protocol_version = Some(value),
                CLIENT_CAPABILITIES_KEY => envelope.client_capabilities = Some(value),
                CLIENT_INFO_KEY => envelope.client_info = Some(value),
                LOG_LEVEL_KEY => envelope.log_level = Some(value),
                PROGRESS_TOKEN_KEY => envelope.progress_token = Some(value),
                _ => _ = rest.insert(key, value),
            }
        }
        let read = envelope.read()?;
        if rest.is_empty() {
            params.remove("_meta");
        } else {
            *meta = rest;
        }
        Ok(read)
    }

    /// What part of `required` (a `ClientCapabilities`-shaped object) this request did not
    /// declare, or `None` when everything is declared.
    pub fn missing_capabilities(&self, required: &Value) -> Option<Value> {
        missing_caps(&self.client_capabilities, required)
    }
}

/// `_meta` key of a request's progress token.
const PROGRESS_TOKEN_KEY: &str = "progressToken";

/// The envelope's members as found in `_meta`, before they are checked.
#[derive(Default)]
struct Envelope {
    protocol_version: Option<Value>,
    client_capabilities: Option<Value>,
    client_info: Option<Value>,
    log_level: Option<Value>,
    progress_token: Option<Value>,
}

impl Envelope {
    /// Each member checked in turn, the first missing or ill-typed one the error.
    fn read(self) -> Result<RequestMeta, RpcError> {
        let protocol_version = match self.protocol_version {
            Some(Value::String(v)) => v,
            Some(_) => return Err(ill_typed(PROTOCOL_VERSION_KEY, "a string")),
            None => return Err(missing(PROTOCOL_VERSION_KEY)),
        };
        let client_capabilities = match self.client_capabilities {
            Some(Value::Object(c)) => c,
            Some(_) => return Err(ill_typed(CLIENT_CAPABILITIES_KEY, "an object")),
            None => return Err(missing(CLIENT_CAPABILITIES_KEY)),
        };
        let client_info = match self.client_info {
            None => None,
            Some(info) if is_client_info(&info) => Some(info),
            Some(_) => return Err(ill_typed(CLIENT_INFO_KEY, "an object with string name and version")),
        };
        let log_level = match &self.log_level {
            None => None,
            Some(Value::String(s)) => {
                Some(LogLevel::parse(s).ok_or_else(|| ill_typed(LOG_LEVEL_KEY, "one of the eight log levels"))?)
            }
            Some(_) => return Err(ill_typed(LOG_LEVEL_KEY, "one of the eight log levels")),
        };
        let progress_token = match self.progress_token {
            None => None,
            Some(t @ (Value::String(_) | Value::Number(_))) => Some(t),
            Some(_) => return Err(ill_typed(PROGRESS_TOKEN_KEY, "a string or an integer")),
        };
        Ok(RequestMeta { protocol_version, client_capabilities, client_info, log_level, progress_token })
    }
}

/// An object with string `name` and `version`.
fn is_client_info(info: &Value) -> bool {
    info.get("name").is_some_and(Value::is_string) && info.get("version").is_some_and(Value::is_string)
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
    fn taking_moves_the_envelope_and_leaves_the_rest_of_meta() {
        let full = json!({
            PROTOCOL_VERSION_KEY: "2026-07-28",
            CLIENT_CAPABILITIES_KEY: {"sampling": {}},
            CLIENT_INFO_KEY: {"name": "c", "version": "1"},
            LOG_LEVEL_KEY: "warning",
            "progressToken": "p",
            "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        });
        let mut taken = params(full.clone());
        let m = RequestMeta::take_from_params(&mut taken).unwrap();
        assert_eq!(m, RequestMeta::from_params(&params(full)).unwrap());
        assert_eq!(
            Value::Object(taken),
            json!({"_meta": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}})
        );

        let mut only_envelope = params(json!({PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}}));
        only_envelope.insert("name".into(), json!("echo"));
        RequestMeta::take_from_params(&mut only_envelope).unwrap();
        assert_eq!(Value::Object(only_envelope), json!({"name": "echo"}), "an emptied _meta is removed");

        let mut refused =
            params(json!({PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}, "progressToken": []}));
        let e = RequestMeta::take_from_params(&mut refused).unwrap_err();
        assert!(e.message.contains("progressToken"), "{}", e.message);
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
