//! [`RpcClient`]: one JSON-RPC request per POST, with the 2026-07-28 `_meta` envelope and the
//! standard headers (`MCP-Protocol-Version`, `Mcp-Method`), read back as JSON or as the
//! request's own SSE stream.
//!
//! It knows nothing about listen streams or lists; [`listen`](crate::listen) and
//! [`snapshot`](crate::snapshot) build on [`RpcClient::post`] and [`RpcClient::call`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use mcp_fleet_protocol::envelope::{CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY};
use mcp_fleet_protocol::headers::{METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER};
use mcp_fleet_protocol::sse::{SseDecoder, SseEvent};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::endpoint::Endpoint;
use crate::error::ClientError;
use crate::session::{LEGACY_VERSION, SESSION_HEADER, Session};
use crate::transport::Transport;

/// The protocol revision this client speaks.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// Largest response body [`RpcClient::call`] reads. Default pages are far smaller; the cap
/// keeps a broken server from exhausting memory.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// Sends JSON-RPC requests to one endpoint. Cheap to clone; clones share the transport, the
/// request-id counter and the gate.
#[derive(Debug, Clone)]
pub struct RpcClient {
    transport: Transport,
    endpoint: Arc<Endpoint>,
    timeout: Duration,
    gate: Option<Arc<Semaphore>>,
    ids: Arc<AtomicU64>,
    /// `Some`: speak the 2025 era through this session (see [`crate::session`]).
    session: Option<Arc<Session>>,
}

impl RpcClient {
    /// A client for `endpoint` over `transport`, with a 10 s timeout per call.
    pub fn new(transport: Transport, endpoint: Endpoint) -> RpcClient {
        RpcClient {
            transport,
            endpoint: Arc::new(endpoint),
            timeout: Duration::from_secs(10),
            gate: None,
            ids: Arc::new(AtomicU64::new(1)),
            session: None,
        }
    }

    /// The same client speaking the 2025 era (revision 2025-11-25): requests go in a session
    /// it initializes on first use (and again after the server forgets it), without the
    /// 2026 `_meta` envelope and headers. Clones share the session.
    ///
    /// ```
    /// use mcp_fleet_client::{Endpoint, RpcClient, Transport};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let rpc = RpcClient::new(Transport::http1(), Endpoint::parse("http://127.0.0.1:9/mcp").unwrap()).era_2025();
    /// assert!(rpc.session().is_some_and(|s| s.id().is_none()), "initialized on first use");
    /// # });
    /// ```
    pub fn era_2025(mut self) -> RpcClient {
        self.session = Some(Arc::default());
        self
    }

    /// The same client over another transport. Clones share the request ids and, in the
    /// 2025 era, the session: a host can hold its GET stream on one connection pool and
    /// send its requests through another, all in one session.
    pub fn with_transport(mut self, transport: Transport) -> RpcClient {
        self.transport = transport;
        self
    }

    /// The 2025-era session, when this client speaks that era.
    pub fn session(&self) -> Option<&Session> {
        self.session.as_deref()
    }

    /// The same client with another timeout for [`RpcClient::call`] (whole request and body).
    pub fn with_timeout(mut self, timeout: Duration) -> RpcClient {
        self.timeout = timeout;
        self
    }

    /// The same client, holding a permit of `gate` for each [`RpcClient::call`]: bounds the
    /// calls in flight across every client sharing the semaphore (e.g. many simulated hosts
    /// in one process sharing a file-descriptor budget). Default: unbounded.
    pub fn with_gate(mut self, gate: Arc<Semaphore>) -> RpcClient {
        self.gate = Some(gate);
        self
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// A fresh request id, unique among this client's requests.
    pub fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// POST `method` with `params` (the envelope is added) and return the response head; the
    /// body streams. No timeout: listen streams are long-lived. In the 2025 era the request
    /// names the session, if there is one yet (it does not initialize one).
    pub async fn post(&self, id: &Value, method: &str, params: Value) -> Result<Response<Incoming>, ClientError> {
        let mut builder = Request::post(self.endpoint.uri().clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream");
        let body = match &self.session {
            None => {
                if let Some(name) = name_header(method, &params) {
                    builder = builder.header(NAME_HEADER, name);
                }
                builder = builder.header(PROTOCOL_VERSION_HEADER, PROTOCOL_VERSION).header(METHOD_HEADER, method);
                request_body(id, method, params)
            }
            Some(session) => {
                builder = session_headers(builder, session);
                legacy_body(Some(id), method, params)
            }
        };
        self.send(builder, body).await
    }

    /// GET the 2025-era session's stream (`Accept: text/event-stream`).
    pub async fn get_stream(&self) -> Result<Response<Incoming>, ClientError> {
        let mut builder = Request::get(self.endpoint.uri().clone()).header(header::ACCEPT, "text/event-stream");
        if let Some(session) = &self.session {
            builder = session_headers(builder, session);
        }
        self.send(builder, Vec::new()).await
    }

    /// Send a built request with the endpoint's own headers.
    async fn send(
        &self,
        mut builder: http::request::Builder,
        body: Vec<u8>,
    ) -> Result<Response<Incoming>, ClientError> {
        for (name, value) in self.endpoint.headers() {
            builder = builder.header(name, value);
        }
        let request = builder.body(Full::new(Bytes::from(body))).map_err(|e| ClientError::InvalidEndpoint {
            url: self.endpoint.uri().to_string(),
            reason: e.to_string(),
        })?;
        self.transport.send(request).await
    }

    /// In the 2025 era, a session: the one held, or a new one (`initialize`, then
    /// `notifications/initialized`). Returns the `initialize` result. Without a session
    /// (2026 era) it returns `Null` and does nothing.
    pub async fn ensure_session(&self) -> Result<Value, ClientError> {
        let Some(session) = &self.session else { return Ok(Value::Null) };
        if let (Some(_), Some(result)) = (session.id(), session.initialize_result()) {
            return Ok(result);
        }
        session.clear();
        let id = json!(self.next_id());
        let params = json!({
            "protocolVersion": LEGACY_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "mcp-fleet-client", "version": env!("CARGO_PKG_VERSION")},
        });
        let response = self.post(&id, "initialize", params).await?;
        let minted = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let result = read_response(response, &id).await?;
        let minted = minted.ok_or_else(|| {
            ClientError::Protocol("initialize answered without Mcp-Session-Id: no session, no GET stream".into())
        })?;
        session.set(minted, result.clone());
        let mut builder = Request::post(self.endpoint.uri().clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream");
        builder = session_headers(builder, session);
        let initialized = self.send(builder, legacy_body(None, "notifications/initialized", json!({}))).await?;
        if let Some(refused) = ClientError::from_auth_refusal(&initialized.into_parts().0) {
            return Err(refused);
        }
        Ok(result)
    }

    /// Call `method` with `params` and return its `result` (a JSON-RPC error becomes
    /// [`ClientError::Rpc`]). Accepts a JSON body or an SSE stream ending with the response.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let _permit = match &self.gate {
            // The gate is never closed: acquiring only fails on a closed semaphore.
            Some(gate) => gate.acquire().await.ok(),
            None => None,
        };
        let call = async {
            match self.call_once(method, params.clone()).await {
                // 2025 era: the server forgot the session; start a new one and try again once.
                Err(ClientError::Status { status: http::StatusCode::NOT_FOUND, .. }) if self.session.is_some() => {
                    if let Some(session) = &self.session {
                        session.clear();
                    }
                    self.call_once(method, params).await
                }
                other => other,
            }
        };
        tokio::time::timeout(self.timeout, call)
            .await
            .map_err(|_| ClientError::Timeout { what: "request", after: self.timeout })?
    }
}

impl RpcClient {
    async fn call_once(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.ensure_session().await?;
        let id = json!(self.next_id());
        let response = self.post(&id, method, params).await?;
        if self.session.is_some() && response.status() == http::StatusCode::NOT_FOUND {
            // 2025-11-25: a 404 for a request naming a session means the session is gone
            // (whatever JSON-RPC error the body carries); `call` starts a new one.
            return Err(ClientError::Status { status: http::StatusCode::NOT_FOUND, body: "session not found".into() });
        }
        read_response(response, &id).await
    }
}

/// The 2025 era's headers: its protocol version and the session, once there is one.
fn session_headers(mut builder: http::request::Builder, session: &Session) -> http::request::Builder {
    builder = builder.header(PROTOCOL_VERSION_HEADER, LEGACY_VERSION);
    if let Some(id) = session.id() {
        builder = builder.header(SESSION_HEADER, id);
    }
    builder
}

/// A 2025-era message: `params` as given, no envelope; `id: None` makes a notification.
fn legacy_body(id: Option<&Value>, method: &str, params: Value) -> Vec<u8> {
    let mut message = json!({"jsonrpc": "2.0", "method": method, "params": params});
    if let Some(id) = id {
        message["id"] = id.clone();
    }
    // Serializing a Value cannot fail.
    serde_json::to_vec(&message).unwrap_or_default()
}

/// The JSON body of a request: `params` plus the `_meta` envelope (META-1: protocol version
/// and client capabilities are required on every request).
pub fn request_body(id: &Value, method: &str, mut params: Value) -> Vec<u8> {
    if !params.is_object() {
        params = json!({});
    }
    params["_meta"] = json!({
        PROTOCOL_VERSION_KEY: PROTOCOL_VERSION,
        CLIENT_CAPABILITIES_KEY: {},
        CLIENT_INFO_KEY: {"name": "mcp-fleet-client", "version": env!("CARGO_PKG_VERSION")},
    });
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    // Serializing a Value cannot fail.
    serde_json::to_vec(&message).unwrap_or_default()
}

/// The `Mcp-Name` header a request needs (2026-07-28: the target of `tools/call` and
/// `prompts/get` by name, of `resources/read` by URI, mirrored so routers need not parse the
/// body). Sent only when it is visible ASCII: this client does not write the Base64 sentinel
/// form, so a name outside it goes without the header (and the server refuses the request).
fn name_header<'a>(method: &str, params: &'a Value) -> Option<&'a str> {
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return None,
    };
    params.get(field)?.as_str().filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_graphic()))
}

/// Read a whole response and extract the result for request `id`.
async fn read_response(response: Response<Incoming>, id: &Value) -> Result<Value, ClientError> {
    let (parts, body) = response.into_parts();
    if let Some(refused) = ClientError::from_auth_refusal(&parts) {
        return Err(refused);
    }
    let bytes = Limited::new(body, MAX_RESPONSE_BYTES).collect().await.map_err(ClientError::Body)?.to_bytes();
    let is_sse =
        parts.headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let message = if is_sse { response_in_sse(&bytes, id)? } else { parse_json(&bytes, parts.status)? };
    result_of(message, parts.status)
}

fn parse_json(bytes: &[u8], status: http::StatusCode) -> Result<Value, ClientError> {
    serde_json::from_slice(bytes).map_err(|_| ClientError::Status { status, body: snippet(bytes) })
}

/// The response to `id` among the messages of a request's SSE stream.
fn response_in_sse(bytes: &[u8], id: &Value) -> Result<Value, ClientError> {
    let mut events = Vec::new();
    SseDecoder::new().feed(bytes, &mut events);
    events
        .into_iter()
        .filter_map(|e| match e {
            SseEvent::Message(m) => serde_json::from_str::<Value>(&m).ok(),
            SseEvent::Comment(_) => None,
        })
        .find(|m| m.get("id") == Some(id))
        .ok_or_else(|| ClientError::Protocol("the SSE response ended without the JSON-RPC response".into()))
}

/// The `result` of a JSON-RPC response, or its error.
pub(crate) fn result_of(mut message: Value, status: http::StatusCode) -> Result<Value, ClientError> {
    if let Some(error) = message.get_mut("error") {
        return Err(ClientError::Rpc {
            code: error["code"].as_i64().unwrap_or_default(),
            message: error["message"].as_str().unwrap_or_default().to_owned(),
            data: error.get_mut("data").map(Value::take),
        });
    }
    if !status.is_success() {
        return Err(ClientError::Status { status, body: snippet(message.to_string().as_bytes()) });
    }
    match message.get_mut("result") {
        Some(result) => Ok(result.take()),
        None => Err(ClientError::Protocol(format!(
            "response without result or error: {}",
            snippet(message.to_string().as_bytes())
        ))),
    }
}

/// The first 200 bytes of a body, as text, for error messages.
pub(crate) fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]);
    text.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_body_carries_the_envelope_and_keeps_params() {
        let body = request_body(&json!(7), "tools/list", json!({"cursor": "abc"}));
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["params"]["cursor"], "abc");
        assert_eq!(v["params"]["_meta"][PROTOCOL_VERSION_KEY], PROTOCOL_VERSION);
        assert!(v["params"]["_meta"][CLIENT_CAPABILITIES_KEY].is_object());
    }

    #[test]
    fn finds_the_response_among_sse_messages_and_maps_errors() {
        let sse =
            b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n\
                    event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[]}}\n\n";
        let message = response_in_sse(sse, &json!(3)).unwrap();
        assert_eq!(result_of(message, http::StatusCode::OK).unwrap(), json!({"tools": []}));
        let error =
            json!({"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad","data":{"reason":"stale_cursor"}}});
        assert!(result_of(error, http::StatusCode::OK).unwrap_err().is_stale_cursor());
        assert!(response_in_sse(b"", &json!(3)).is_err());
    }
}
