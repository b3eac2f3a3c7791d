//! A 2025-era wire probe for the protocol-level tests of the legacy layer: raw requests with
//! exactly the headers a 2025 client sends (`MCP-Protocol-Version`, `Mcp-Session-Id`), so a test
//! can also send what no well-behaved client would (another session's id, a stale one, a POST
//! to the replica of its choice). Behaviour with real clients is tested against the registries'
//! SDKs (`crates/node/tests/legacy_clients.rs`) and the official conformance suite.

use http::StatusCode;
use serde_json::{Value, json};

use crate::{ListenStream, McpClient, Reply};

/// The revision the probe speaks.
pub const VERSION: &str = "2025-11-25";

/// One 2025-era session, as seen from the client side; it may talk to any node.
#[derive(Debug, Clone)]
pub struct LegacySession {
    /// The `Mcp-Session-Id` the server gave.
    pub id: String,
    /// Extra headers sent with every request (an `Authorization`, say).
    pub extra: Vec<(String, String)>,
}

/// Headers of a 2025-era POST.
pub fn headers(session: Option<&str>, extra: &[(String, String)]) -> Vec<(String, String)> {
    let mut h = vec![
        ("content-type".into(), "application/json".into()),
        ("accept".into(), "application/json, text/event-stream".into()),
        ("mcp-protocol-version".into(), VERSION.into()),
    ];
    if let Some(id) = session {
        h.push(("mcp-session-id".into(), id.to_owned()));
    }
    h.extend_from_slice(extra);
    h
}

/// An `initialize` request body.
pub fn initialize_body(capabilities: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION,
        "capabilities": capabilities,
        "clientInfo": {"name": "legacy-probe", "version": "1.0.0"}
    }})
}

/// `initialize` on `client` (no session yet): the reply.
pub async fn initialize_raw(client: &McpClient, capabilities: Value, extra: &[(String, String)]) -> Reply {
    client.post_with(&initialize_body(capabilities), &headers(None, extra)).await
}

impl LegacySession {
    /// Initialize on `client` and send `notifications/initialized`.
    pub async fn open(client: &McpClient, capabilities: Value) -> LegacySession {
        Self::open_with(client, capabilities, Vec::new()).await
    }

    /// The same, sending `extra` headers with every request.
    pub async fn open_with(client: &McpClient, capabilities: Value, extra: Vec<(String, String)>) -> LegacySession {
        let reply = initialize_raw(client, capabilities, &extra).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", String::from_utf8_lossy(&reply.body));
        let id = reply.headers["mcp-session-id"].to_str().expect("ASCII session id").to_owned();
        let session = LegacySession { id, extra };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(session.post(client, &initialized).await.status, StatusCode::ACCEPTED);
        session
    }

    /// POST `body` in this session.
    pub async fn post(&self, client: &McpClient, body: &Value) -> Reply {
        client.post_with(body, &headers(Some(&self.id), &self.extra)).await
    }

    /// Call `method` and return its `result` (panics on an error).
    pub async fn result(&self, client: &McpClient, method: &str, params: Value) -> Value {
        let reply = self.post(client, &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", String::from_utf8_lossy(&reply.body));
        let messages = reply.messages();
        let last = messages.last().cloned().unwrap_or(Value::Null);
        last.get("result").cloned().unwrap_or_else(|| panic!("no result: {last}"))
    }

    /// Open the session's GET stream on `client` (with `Last-Event-ID` when resuming).
    pub async fn stream(&self, client: &McpClient, last_event_id: Option<&str>) -> ListenStream {
        let mut h = vec![
            ("accept".into(), "text/event-stream".into()),
            ("mcp-protocol-version".into(), VERSION.into()),
            ("mcp-session-id".into(), self.id.clone()),
        ];
        if let Some(last) = last_event_id {
            h.push(("last-event-id".into(), last.to_owned()));
        }
        h.extend_from_slice(&self.extra);
        ListenStream::from_response(client.send_raw("GET", &h, bytes::Bytes::new()).await)
    }

    /// DELETE the session on `client`: the status.
    pub async fn delete(&self, client: &McpClient) -> StatusCode {
        let mut h = vec![("mcp-protocol-version".into(), VERSION.into()), ("mcp-session-id".into(), self.id.clone())];
        h.extend_from_slice(&self.extra);
        client.send_raw("DELETE", &h, bytes::Bytes::new()).await.status()
    }
}
