//! JSON-RPC 2.0 framing for 2026-07-28: one request or notification per POST body.
//!
//! Parsing here covers steps 3 and 4 of the validation ladder (spec digest §3): the body is
//! JSON, and it is a single object with `jsonrpc: "2.0"`, a string `method` and a valid `id`
//! (or none). Batches and posted responses are rejected. Encoding produces compact one-line JSON,
//! which SSE framing and line-reading clients rely on.

mod body;

pub(crate) use body::{Body, Members};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::RpcError;

/// A JSON-RPC request id: a string or an integer, echoed with its JSON type intact.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id (kept as the exact JSON number).
    Number(serde_json::Number),
    /// A string id.
    String(String),
}

impl RequestId {
    /// The id as compact JSON text (e.g. `42` or `"a"`).
    pub fn to_json(&self) -> String {
        // Serializing a number or a string into a String cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The id as a JSON value.
    pub fn to_value(&self) -> Value {
        match self {
            RequestId::Number(n) => Value::Number(n.clone()),
            RequestId::String(s) => Value::String(s.clone()),
        }
    }

    fn from_value(value: &Value) -> Option<RequestId> {
        match value {
            Value::String(s) => Some(RequestId::String(s.clone())),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(RequestId::Number(n.clone())),
            _ => None,
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n.into())
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

/// A well-formed incoming message: a request when `id` is present, else a notification.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The request id, absent for notifications.
    pub id: Option<RequestId>,
    /// The method name.
    pub method: String,
    /// `params`, when present (always an object in a valid message).
    pub params: Map<String, Value>,
}

impl Message {
    /// Whether this is a request (has an id) rather than a notification.
    pub fn is_request(&self) -> bool {
        self.id.is_some()
    }
}

/// A rejection that knows which id (if any) to echo.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{error}")]
pub struct Rejection {
    /// The request id, when it could be read.
    pub id: Option<RequestId>,
    /// The error to answer with.
    pub error: RpcError,
}

impl Rejection {
    /// Pair an error with the id to echo.
    pub fn new(id: Option<RequestId>, error: RpcError) -> Self {
        Rejection { id, error }
    }
}

/// Parse and shape-check one POST body (ladder steps 3 and 4).
pub fn parse_message(body: &[u8]) -> Result<Message, Rejection> {
    message_from_value(parse_json(body)?)
}

/// Step 3 alone: the body is JSON (any JSON value).
pub fn parse_json(body: &[u8]) -> Result<Value, Rejection> {
    parse_as(body)
}

/// Step 3, keeping a message's members apart (see [`body`]): what [`validate_message`]
/// reads.
///
/// [`validate_message`]: crate::validate::validate_message
pub(crate) fn parse_body(body: &[u8]) -> Result<Body, Rejection> {
    parse_as(body)
}

/// Step 3 into `T`, a body that is not JSON refused with `-32700`.
fn parse_as<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Rejection> {
    serde_json::from_slice(body).map_err(|e| Rejection::new(None, RpcError::parse_error(e)))
}

/// Step 4 over an already parsed body: one request or notification object (see
/// [`parse_message`]).
pub fn message_from_value(value: Value) -> Result<Message, Rejection> {
    message_from_body(match value {
        Value::Object(obj) => Body::Object(Members::of(obj)),
        other => Body::Other(other),
    })
}

/// Step 4 over a body parsed by [`parse_body`].
pub(crate) fn message_from_body(body: Body) -> Result<Message, Rejection> {
    let m = match body {
        Body::Object(members) => members,
        Body::Other(Value::Array(_)) => {
            return Err(Rejection::new(
                None,
                RpcError::invalid_request("Batch requests are not supported in protocol version 2026-07-28"),
            ));
        }
        Body::Other(_) => {
            return Err(Rejection::new(None, RpcError::invalid_request("A JSON-RPC message must be an object")));
        }
    };
    let id =
        match &m.id {
            None => None,
            Some(v) => Some(RequestId::from_value(v).ok_or_else(|| {
                Rejection::new(None, RpcError::invalid_request("The id must be a string or an integer"))
            })?),
        };
    let reject = |msg: &str| Rejection::new(id.clone(), RpcError::invalid_request(msg));
    if m.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return Err(reject("The jsonrpc member must be exactly \"2.0\""));
    }
    if m.rest.contains_key("result") || m.rest.contains_key("error") {
        return Err(reject("JSON-RPC responses are not accepted by this server"));
    }
    let method = match m.method {
        Some(Value::String(m)) => m,
        Some(_) => return Err(reject("The method member must be a string")),
        None => return Err(reject("The method member is missing")),
    };
    let params = match m.params {
        None => Map::new(),
        Some(Value::Object(p)) => p,
        Some(_) => return Err(reject("The params member must be an object")),
    };
    Ok(Message { id, method, params })
}

/// Compact JSON bytes of `value`. Infallible by construction: a `serde_json::Value` has string
/// map keys and no custom serializer, so serializing it cannot fail — the empty fallback is
/// unreachable, kept only so no code path can panic.
pub fn value_bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// Encode a successful response as compact JSON.
pub fn encode_result(id: &RequestId, result: &Value) -> Vec<u8> {
    // Writing a Value into a Vec cannot fail.
    result_frame(id, 256, |out| _ = serde_json::to_writer(out, result))
}

/// Encode a successful response around a result object already written as JSON text.
pub fn encode_written_result(id: &RequestId, result: &[u8]) -> Vec<u8> {
    result_frame(id, result.len() + 48, |out| out.extend_from_slice(result))
}

/// `{"jsonrpc":"2.0","id":…,"result":…}`, the result written by `write`.
fn result_frame(id: &RequestId, capacity: usize, write: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    // Writing an id (a number or a string) into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, id);
    out.extend_from_slice(b",\"result\":");
    write(&mut out);
    out.push(b'}');
    out
}

/// Encode an error response as compact JSON; `id` is omitted when it could not be read.
pub fn encode_error(id: Option<&RequestId>, error: &RpcError) -> Vec<u8> {
    let mut obj = Map::new();
    obj.insert("jsonrpc".into(), Value::String("2.0".into()));
    if let Some(id) = id {
        obj.insert("id".into(), id.to_value());
    }
    obj.insert("error".into(), error.to_error_object());
    value_bytes(&Value::Object(obj))
}

/// Encode a notification as compact JSON.
pub fn encode_notification(method: &str, params: &Value) -> Vec<u8> {
    value_bytes(&serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn parses_request_and_keeps_id_type() {
        let m = parse_message(br#"{"jsonrpc":"2.0","id":"7","method":"tools/list","params":{}}"#).unwrap();
        assert_eq!(m.id, Some(RequestId::String("7".into())));
        let m = parse_message(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#).unwrap();
        assert_eq!(m.id.unwrap().to_json(), "7");
    }

    #[test]
    fn rejects_bad_shapes_with_specific_codes() {
        let cases: &[(&[u8], ErrorCode, bool)] = &[
            (b"{not json", ErrorCode::ParseError, false),
            (b"[]", ErrorCode::InvalidRequest, false),
            (br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#, ErrorCode::InvalidRequest, true),
            (br#"{"jsonrpc":"2.0","id":1,"result":{}}"#, ErrorCode::InvalidRequest, true),
            (br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#, ErrorCode::InvalidRequest, false),
            (br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#, ErrorCode::InvalidRequest, false),
            (br#"{"jsonrpc":"2.0","id":1,"method":5}"#, ErrorCode::InvalidRequest, true),
            (br#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#, ErrorCode::InvalidRequest, true),
        ];
        for (body, code, has_id) in cases {
            let rej = parse_message(body).unwrap_err();
            assert_eq!(rej.error.code, *code, "{}", String::from_utf8_lossy(body));
            assert_eq!(rej.id.is_some(), *has_id, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn encodes_compact_single_line() {
        let bytes = encode_result(&RequestId::from(3), &serde_json::json!({"a": [1, 2]}));
        assert_eq!(bytes, br#"{"jsonrpc":"2.0","id":3,"result":{"a":[1,2]}}"#);
        let err = encode_error(None, &RpcError::parse_error("eof"));
        assert!(!err.contains(&b'\n'));
        assert!(!String::from_utf8(err).unwrap().contains("\"id\""));
    }
}
