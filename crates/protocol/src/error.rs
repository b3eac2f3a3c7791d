//! JSON-RPC and MCP error codes, and the one error type that knows both its JSON-RPC body
//! and its HTTP status.
//!
//! Every rejection the server produces is an [`RpcError`]; the mapping from code to HTTP status
//! lives here and nowhere else (MCP 2026-07-28 §19), so the HTTP layer never guesses.

use http::StatusCode;
use serde_json::{Value, json};

/// The error codes a 2026-07-28 server emits (spec §19). Codes -32000…-32019 are legacy and
/// never produced, but for the experimental events extension's own (-32011 …, answered only to
/// its `events/*` methods); -32002 and -32042 are retired and MUST NOT be emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// -32700: the body is not JSON.
    ParseError,
    /// -32600: not a single valid JSON-RPC request or notification.
    InvalidRequest,
    /// -32601: unknown, removed or not-advertised method.
    MethodNotFound,
    /// -32602: invalid params (envelope, arguments, cursor, filter, unknown name).
    InvalidParams,
    /// -32603: server fault, or listen capacity reached.
    InternalError,
    /// -32020: a standard or `Mcp-Param-*` header is missing, malformed or differs from the body.
    HeaderMismatch,
    /// -32021: the request needs a client capability it did not declare.
    MissingRequiredClientCapability,
    /// -32022: the request names a protocol version this server does not serve.
    UnsupportedProtocolVersion,
    /// -32002: resource not found — the 2025 era's code, sent only to 2025-era clients
    /// (see [`crate::legacy::to_legacy_error`]).
    ResourceNotFound,
    /// -32011: the events extension's NotFound (`data.kind`: `"event"` or `"subscription"`).
    EventsNotFound,
    /// -32012: the events extension's Forbidden: no principal, or one not allowed this.
    EventsForbidden,
    /// -32013: the events extension's ResourceExhausted (`data.limit`, `data.max`).
    EventsResourceExhausted,
    /// -32014: the events extension's Unsupported (`data.feature`, and `value` or `reason`).
    EventsUnsupported,
    /// -32015: the events extension's CallbackEndpointError: a webhook's endpoint failed its
    /// verification or could not be reached (`data.reason`, a `lastError` category).
    EventsCallbackEndpointError,
}

impl ErrorCode {
    /// The numeric JSON-RPC code.
    pub fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::HeaderMismatch => -32020,
            ErrorCode::MissingRequiredClientCapability => -32021,
            ErrorCode::UnsupportedProtocolVersion => -32022,
            ErrorCode::ResourceNotFound => -32002,
            ErrorCode::EventsNotFound => -32011,
            ErrorCode::EventsForbidden => -32012,
            ErrorCode::EventsResourceExhausted => -32013,
            ErrorCode::EventsUnsupported => -32014,
            ErrorCode::EventsCallbackEndpointError => -32015,
        }
    }

    /// The HTTP status this code travels with when it is decided before dispatch.
    ///
    /// In-band errors raised while serving a method (unknown tool, bad cursor, …) use
    /// [`RpcError::in_band`], which overrides this with 200 (spec §19, §21.3).
    pub fn http_status(self) -> StatusCode {
        match self {
            ErrorCode::MethodNotFound => StatusCode::NOT_FOUND,
            ErrorCode::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::BAD_REQUEST,
        }
    }
}

/// A JSON-RPC error together with the HTTP status it is answered with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} ({code:?})")]
pub struct RpcError {
    /// The JSON-RPC error code.
    pub code: ErrorCode,
    /// One concise sentence.
    pub message: String,
    /// Optional structured detail (never secrets).
    pub data: Option<Value>,
    /// HTTP status for the response that carries this error.
    pub status: StatusCode,
}

impl RpcError {
    /// An error with the code's default HTTP status.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), data: None, status: code.http_status() }
    }

    /// Attach structured `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// Override the HTTP status.
    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// Mark the error as in-band: answered with HTTP 200 (errors raised while serving a method).
    pub fn in_band(self) -> Self {
        self.with_status(StatusCode::OK)
    }

    /// The status an error gets when a handler's call produced it: in-band (HTTP 200), except
    /// a missing client capability (MRTR-3: an `input_required` asking for a capability the
    /// client never declared), which keeps its 400 while nothing has been sent yet.
    pub fn from_handler(self) -> Self {
        match self.code {
            ErrorCode::MissingRequiredClientCapability => {
                let status = self.code.http_status();
                self.with_status(status)
            }
            _ => self.in_band(),
        }
    }

    /// -32700 with HTTP 400.
    pub fn parse_error(detail: impl std::fmt::Display) -> Self {
        Self::new(ErrorCode::ParseError, format!("Parse error: {detail}"))
    }

    /// -32600 with HTTP 400.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message)
    }

    /// -32601 with HTTP 404.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(ErrorCode::MethodNotFound, format!("Method not found: {method}"))
    }

    /// -32602 with HTTP 400 (envelope errors); chain [`RpcError::in_band`] for in-band ones.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParams, message)
    }

    /// -32603, in-band (HTTP 200).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InternalError, message).in_band()
    }

    /// -32020 naming the header and, when known, both values.
    pub fn header_mismatch(header: &str, header_value: Option<&str>, body_value: Option<&str>) -> Self {
        let message = match (header_value, body_value) {
            (None, _) => format!("Missing required header {header}"),
            (Some(h), Some(b)) => format!("Header {header} value {h:?} does not match body value {b:?}"),
            (Some(h), None) => format!("Header {header} has an invalid value {h:?}"),
        };
        Self::new(ErrorCode::HeaderMismatch, message)
            .with_data(json!({"mismatch": {"header": header, "headerValue": header_value, "body": body_value}}))
    }

    /// -32021 with `data.requiredCapabilities` = just the missing capabilities (an object).
    pub fn missing_capability(required: Value) -> Self {
        Self::new(ErrorCode::MissingRequiredClientCapability, "Missing required client capability")
            .with_data(json!({"requiredCapabilities": required}))
    }

    /// -32022 with the supported list and the requested version echoed.
    pub fn unsupported_version(supported: &[&str], requested: &str) -> Self {
        Self::new(ErrorCode::UnsupportedProtocolVersion, "Unsupported protocol version")
            .with_data(json!({"supported": supported, "requested": requested}))
    }

    /// The JSON-RPC `error` object.
    pub fn to_error_object(&self) -> Value {
        let mut obj = json!({"code": self.code.code(), "message": self.message});
        if let Some(data) = &self.data {
            obj["data"] = data.clone();
        }
        obj
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_spec_numbers_and_statuses() {
        assert_eq!(ErrorCode::HeaderMismatch.code(), -32020);
        assert_eq!(ErrorCode::MissingRequiredClientCapability.code(), -32021);
        assert_eq!(ErrorCode::UnsupportedProtocolVersion.code(), -32022);
        assert_eq!(ErrorCode::MethodNotFound.http_status(), StatusCode::NOT_FOUND);
        assert_eq!(ErrorCode::InvalidParams.http_status(), StatusCode::BAD_REQUEST);
        assert_eq!(RpcError::internal("x").status, StatusCode::OK);
        assert_eq!(RpcError::invalid_params("x").from_handler().status, StatusCode::OK);
        let missing = RpcError::missing_capability(json!({"sampling": {}})).in_band();
        assert_eq!(missing.from_handler().status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn unsupported_version_echoes_requested() {
        let err = RpcError::unsupported_version(&["2026-07-28"], "v999.0.0");
        let obj = err.to_error_object();
        assert_eq!(obj["code"], -32022);
        assert_eq!(obj["data"]["requested"], "v999.0.0");
        assert_eq!(obj["data"]["supported"][0], "2026-07-28");
    }
}
