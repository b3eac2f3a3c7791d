//! [`ClientError`]: every way talking to an MCP endpoint can fail, one enum for the crate.
//!
//! The variants separate what a caller reacts to differently; [`ClientError::class`] folds
//! them into the three [`ErrorClass`]es a host acts on, each with one action: stop and
//! surface (`unauthorized`), change mode (a method the server no longer has), or retry with
//! backoff (everything transient).

use std::time::Duration;

use serde_json::Value;

/// A boxed error from a response body or another source this crate does not name.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a request, a listen stream or a snapshot failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The endpoint URL cannot be used (not `http://host:port/path`, or a bad header value).
    #[error("invalid endpoint {url:?}: {reason}")]
    InvalidEndpoint {
        /// The URL or header as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No TCP connection could be opened.
    #[error("could not connect to {addr}: {source}")]
    Connect {
        /// `host:port` dialled.
        addr: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The HTTP connection failed (reset, closed, protocol error).
    #[error("HTTP connection error: {0}")]
    Http(#[from] hyper::Error),
    /// hyper-util's pooled client failed (connecting or sending).
    #[error("HTTP client error: {0}")]
    Pool(#[from] hyper_util::client::legacy::Error),
    /// Reading the response body failed.
    #[error("response body error: {0}")]
    Body(BoxError),
    /// The server refused the credentials (401) or the permission (403). Retrying with the
    /// same token cannot help: the host must get a new one.
    #[error("unauthorized (HTTP {status}): {challenge}")]
    Unauthorized {
        /// 401 or 403.
        status: http::StatusCode,
        /// The `WWW-Authenticate` challenge, empty when the server sent none.
        challenge: String,
    },
    /// A fetched list cannot replace the previous one: duplicate names, a malformed entry.
    #[error("invalid {list}: {reason}")]
    InvalidList {
        /// The list method.
        list: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The server answered with an HTTP status this client cannot use.
    #[error("HTTP {status}: {body}")]
    Status {
        /// The status.
        status: http::StatusCode,
        /// The start of the body, for the operator.
        body: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("JSON-RPC error {code}: {message}")]
    Rpc {
        /// The error code (e.g. `-32602`).
        code: i64,
        /// The error message.
        message: String,
        /// The error's `data`, if any.
        data: Option<Value>,
    },
    /// The server's answer breaks the protocol (not JSON, no ack first, a page without its
    /// list, …).
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// A paginated list kept changing while it was being read.
    #[error("{list} changed during pagination {restarts} times in a row")]
    Unstable {
        /// The list method.
        list: &'static str,
        /// How often pagination restarted from the first page.
        restarts: u32,
    },
    /// An operation did not finish in time.
    #[error("{what} timed out after {after:?}")]
    Timeout {
        /// What timed out.
        what: &'static str,
        /// The limit.
        after: Duration,
    },
    /// A listen stream ended without the server's completion result, or went silent for
    /// longer than the idle timeout.
    #[error("listen stream lost: {0}")]
    StreamLost(&'static str),
}

/// What a host does about an error (see [`ClientError::class`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// 401/403: stop every request with these credentials and surface `unauthorized`.
    Unauthorized,
    /// `-32601`: the server does not (or no longer) answer this method — change mode (poll
    /// instead of listening; give up on a list that cannot be read) instead of retrying.
    MethodNotFound,
    /// Anything else: the connection, a timeout, a server error, a list changing underneath,
    /// a bad answer — keep what is held and retry with backoff.
    Transient,
}

impl ClientError {
    /// The error for a 401/403 response head, `None` for any other status.
    pub fn from_auth_refusal(parts: &http::response::Parts) -> Option<ClientError> {
        if !matches!(parts.status, http::StatusCode::UNAUTHORIZED | http::StatusCode::FORBIDDEN) {
            return None;
        }
        let challenge = parts.headers.get(http::header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok());
        Some(ClientError::Unauthorized { status: parts.status, challenge: challenge.unwrap_or_default().to_owned() })
    }

    /// Which action this error calls for.
    ///
    /// ```
    /// use mcp_fleet_client::{ClientError, ErrorClass};
    /// let gone = ClientError::Rpc { code: -32601, message: "Method not found".into(), data: None };
    /// assert_eq!(gone.class(), ErrorClass::MethodNotFound);
    /// assert_eq!(ClientError::StreamLost("eof").class(), ErrorClass::Transient);
    /// ```
    pub fn class(&self) -> ErrorClass {
        match self {
            ClientError::Unauthorized { .. } => ErrorClass::Unauthorized,
            ClientError::Rpc { code: -32601, .. } => ErrorClass::MethodNotFound,
            _ => ErrorClass::Transient,
        }
    }

    /// The JSON-RPC error code, when the server answered with one.
    pub fn rpc_code(&self) -> Option<i64> {
        match self {
            ClientError::Rpc { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether the server could not be reached at all (no connection, the connection
    /// broke, no answer in time, the stream went away): a host shows its lists
    /// `unavailable` rather than `stale`.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            ClientError::Connect { .. }
                | ClientError::Http(_)
                | ClientError::Pool(_)
                | ClientError::Body(_)
                | ClientError::Timeout { .. }
                | ClientError::StreamLost(_)
        )
    }

    /// Whether this is the server's "cursor from an older revision" refusal (`-32602` with
    /// `data.reason == "stale_cursor"`): the list changed, restart from the first page.
    pub fn is_stale_cursor(&self) -> bool {
        match self {
            ClientError::Rpc { code: -32602, data: Some(data), .. } => data["reason"] == "stale_cursor",
            _ => false,
        }
    }

    /// A short stable label for counting errors by kind (`connect`, `http`, `status`, `rpc`,
    /// `protocol`, `unstable`, `timeout`, `stream-lost`, `endpoint`, `body`, `unauthorized`,
    /// `invalid-list`).
    pub fn kind(&self) -> &'static str {
        match self {
            ClientError::InvalidEndpoint { .. } => "endpoint",
            ClientError::Connect { .. } => "connect",
            ClientError::Http(_) | ClientError::Pool(_) => "http",
            ClientError::Body(_) => "body",
            ClientError::Status { .. } => "status",
            ClientError::Unauthorized { .. } => "unauthorized",
            ClientError::InvalidList { .. } => "invalid-list",
            ClientError::Rpc { .. } => "rpc",
            ClientError::Protocol(_) => "protocol",
            ClientError::Unstable { .. } => "unstable",
            ClientError::Timeout { .. } => "timeout",
            ClientError::StreamLost(_) => "stream-lost",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_the_servers_stale_cursor_refusal_only() {
        let stale = ClientError::Rpc {
            code: -32602,
            message: "Cursor is from an older catalog revision".into(),
            data: Some(serde_json::json!({"reason": "stale_cursor"})),
        };
        assert!(stale.is_stale_cursor());
        let other = ClientError::Rpc { code: -32602, message: "Invalid cursor".into(), data: None };
        assert!(!other.is_stale_cursor());
        assert_eq!(other.rpc_code(), Some(-32602));
        assert_eq!(ClientError::StreamLost("eof").kind(), "stream-lost");
    }
}
