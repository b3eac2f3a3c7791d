//! [`LegacyClient`]: the simulated client of `--era 2025` — what a 2025-11-25 host does to hear
//! a server's changes: `initialize` (the node answers with `Mcp-Session-Id`, the session lives
//! in the bus's keyspace), `notifications/initialized`, `resources/subscribe` for each URI it
//! follows, then the session's `GET` stream (`Accept: text/event-stream`), whose SSE events
//! carry ids.
//!
//! It stays connected like the 2026 [`Listener`](mcp_fleet_client::Listener): when the server
//! closes the stream, it breaks, or it stays silent past the idle timeout, the client reopens
//! it with `Last-Event-ID` (the node then announces every list and subscribed URI again: the
//! gap rule); a 404 (the session ended or expired) starts a new session. It reports through
//! the same [`Observer`] as the 2026 client, so the [`Probe`](crate::probe::Probe) measures
//! both eras alike: *connected* is the GET stream's response head (the node registers the
//! stream before it answers, so nothing published afterwards is missed), a *notification* is
//! each `list_changed` or `resources/updated` event. A 2025 notification carries no
//! `_meta["dev.mcp-fleet/event"]` stamp unless the node adds one; unstamped ones are matched
//! to publishes by time (see [`deliveries`](crate::deliveries)).

use std::future::Future;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use mcp_fleet_client::{
    ClientError, Endpoint, ListKind, ListenMessage, ListenerOptions, Observer, SubscriptionFilter, Transport,
};
use mcp_fleet_protocol::sse::{SseDecoder, SseEvent};
use serde_json::{Value, json};

/// The revision the client speaks.
pub const VERSION: &str = "2025-11-25";

/// The session header (2025-11-25 §Session Management).
pub const SESSION_HEADER: &str = "mcp-session-id";

/// Largest reply to a handshake request the client reads.
const MAX_REPLY_BYTES: usize = 1 << 20;

/// How a [`LegacyClient`] behaves.
#[derive(Debug, Clone, Default)]
pub struct LegacyOptions {
    /// URIs to `resources/subscribe` after each `initialize`.
    pub uris: Vec<String>,
    /// Backoff and idle timeout as for a listen stream; `open_timeout` limits each handshake
    /// request and the GET stream's response head.
    pub listener: ListenerOptions,
}

/// One 2025-era client: a session and its GET stream, kept open.
#[derive(Debug)]
pub struct LegacyClient {
    /// GET streams go here.
    stream_transport: Transport,
    /// Handshake requests go here (the same transport over h2c).
    request_transport: Transport,
    endpoint: Endpoint,
    options: LegacyOptions,
    session: Option<String>,
    last_event_id: Option<String>,
    connected_before: bool,
    failures: u32,
    next_id: u64,
}

impl LegacyClient {
    /// A client of `endpoint`: GET streams through `stream_transport`, the handshake through
    /// `request_transport`. It connects when [`LegacyClient::run`] starts.
    pub fn new(
        stream_transport: Transport,
        request_transport: Transport,
        endpoint: Endpoint,
        options: LegacyOptions,
    ) -> LegacyClient {
        LegacyClient {
            stream_transport,
            request_transport,
            endpoint,
            options,
            session: None,
            last_event_id: None,
            connected_before: false,
            failures: 0,
            next_id: 1,
        }
    }

    /// Run until `stop` resolves, reporting to `observer`; returns the observer.
    pub async fn run<O: Observer>(mut self, mut observer: O, stop: impl Future<Output = ()>) -> O {
        tokio::select! {
            () = stop => {}
            () = self.drive(&mut observer) => {}
        }
        observer
    }

    /// Open, read, reopen — forever.
    async fn drive(&mut self, observer: &mut impl Observer) {
        loop {
            let (error, opened_at) = self.connect_and_read(observer).await;
            if matches!(&error, Some(ClientError::Status { status: StatusCode::NOT_FOUND, .. })) {
                // The session ended or expired: the next attempt initializes a new one.
                self.session = None;
                self.last_event_id = None;
            }
            let stable = opened_at.is_some_and(|t| t.elapsed() >= self.options.listener.reconnect.stable_after);
            if error.is_none() || stable {
                self.failures = 0;
            }
            let retry_in = self.options.listener.reconnect.delay(self.failures);
            if error.is_some() {
                self.failures = self.failures.saturating_add(1);
            }
            observer.on_disconnected(error.as_ref(), retry_in);
            tokio::time::sleep(retry_in).await;
        }
    }

    /// One attempt: a session if there is none, the GET stream, and its events until it ends.
    /// Answers why it ended (`None`: the server closed it) and when it opened.
    async fn connect_and_read(&mut self, observer: &mut impl Observer) -> (Option<ClientError>, Option<Instant>) {
        if self.session.is_none()
            && let Err(e) = self.handshake().await
        {
            return (Some(e), None);
        }
        let response = match self.open_stream().await {
            Ok(response) => response,
            Err(e) => return (Some(e), None),
        };
        let opened_at = Instant::now();
        observer.on_connected(&honoured(), self.connected_before);
        self.connected_before = true;
        (self.read_stream(response.into_body(), observer).await.err(), Some(opened_at))
    }

    /// `initialize`, `notifications/initialized`, and a `resources/subscribe` per URI.
    async fn handshake(&mut self) -> Result<(), ClientError> {
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "mcp-fleet-loadtest", "version": env!("CARGO_PKG_VERSION")},
        }});
        let response = self.post(&initialize).await?;
        let session = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
        self.reply(response, &json!(0)).await?;
        let session = session.ok_or_else(|| {
            ClientError::Protocol(
                "initialize answered without Mcp-Session-Id: the node serves no sessions, so no GET stream".into(),
            )
        })?;
        self.session = Some(session);
        self.last_event_id = None;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = self.post(&initialized).await?;
        let status = response.status();
        if !status.is_success() {
            let body = read_limited(response, self.options.listener.open_timeout).await.unwrap_or_default();
            return Err(ClientError::Status { status, body: snippet(&body) });
        }
        for uri in self.options.uris.clone() {
            let id = json!(self.next_id);
            self.next_id += 1;
            let subscribe =
                json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": {"uri": uri}});
            let response = self.post(&subscribe).await?;
            self.reply(response, &id).await?;
        }
        Ok(())
    }

    /// POST one message in the session (if any).
    async fn post(&self, message: &Value) -> Result<Response<Incoming>, ClientError> {
        let builder = self
            .request(Method::POST)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream");
        let request = builder.body(Full::new(Bytes::from(message.to_string()))).map_err(|e| self.invalid(e))?;
        self.send(&self.request_transport, request).await
    }

    /// GET the session's stream (resuming after the last event id seen, if any).
    async fn open_stream(&self) -> Result<Response<Incoming>, ClientError> {
        let mut builder = self.request(Method::GET).header(header::ACCEPT, "text/event-stream");
        if let Some(last) = &self.last_event_id {
            builder = builder.header("last-event-id", last);
        }
        let request = builder.body(Full::new(Bytes::new())).map_err(|e| self.invalid(e))?;
        let response = self.send(&self.stream_transport, request).await?;
        let status = response.status();
        let is_sse = response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        if status != StatusCode::OK || !is_sse {
            let body = read_limited(response, self.options.listener.open_timeout).await.unwrap_or_default();
            return Err(ClientError::Status { status, body: snippet(&body) });
        }
        Ok(response)
    }

    /// A request with the era's headers, the session and the endpoint's own headers.
    fn request(&self, method: Method) -> http::request::Builder {
        let mut builder =
            Request::builder().method(method).uri(self.endpoint.uri().clone()).header("mcp-protocol-version", VERSION);
        if let Some(session) = &self.session {
            builder = builder.header(SESSION_HEADER, session);
        }
        for (name, value) in self.endpoint.headers() {
            builder = builder.header(name, value);
        }
        builder
    }

    async fn send(
        &self,
        transport: &Transport,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, ClientError> {
        let after = self.options.listener.open_timeout;
        tokio::time::timeout(after, transport.send(request))
            .await
            .map_err(|_| ClientError::Timeout { what: "2025-era request", after })?
    }

    fn invalid(&self, e: http::Error) -> ClientError {
        ClientError::InvalidEndpoint { url: self.endpoint.uri().to_string(), reason: e.to_string() }
    }

    /// The result of the reply to request `id` (JSON, or SSE ending with it).
    async fn reply(&self, response: Response<Incoming>, id: &Value) -> Result<Value, ClientError> {
        let status = response.status();
        let is_sse = response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let body = read_limited(response, self.options.listener.open_timeout).await?;
        result_of(&body, status, is_sse, id)
    }

    /// Read the stream's events until it ends (`Ok`: the server closed it), breaks, or stays
    /// silent past the idle timeout.
    async fn read_stream(&mut self, mut body: Incoming, observer: &mut impl Observer) -> Result<(), ClientError> {
        let mut decoder = EventDecoder::default();
        let mut events = Vec::new();
        let mut last_activity = Instant::now();
        loop {
            let frame = match self.options.listener.idle_timeout {
                None => body.frame().await,
                Some(idle) => match tokio::time::timeout_at((last_activity + idle).into(), body.frame()).await {
                    Ok(frame) => frame,
                    Err(_) => return Err(ClientError::StreamLost("no bytes within the idle timeout")),
                },
            };
            let Some(frame) = frame else { return Ok(()) };
            let frame = frame.map_err(|e| ClientError::Body(e.into()))?;
            last_activity = Instant::now();
            let Ok(data) = frame.into_data() else { continue };
            decoder.feed(&data, &mut events);
            for event in events.drain(..) {
                if let Some(id) = event.id {
                    self.last_event_id = Some(id);
                }
                // A data-less event (the node's priming event: an id to resume from) says nothing.
                if let Some(data) = event.data.filter(|d| !d.trim().is_empty())
                    && let ListenMessage::Changed(notification) = ListenMessage::parse(&data)?
                {
                    observer.on_notification(&notification);
                }
            }
        }
    }
}

/// What a GET stream hears: every list (the era has no filter).
fn honoured() -> SubscriptionFilter {
    mcp_fleet_client::listen::filter_for(&ListKind::ALL)
}

/// A whole body of at most [`MAX_REPLY_BYTES`], within `after`.
async fn read_limited(response: Response<Incoming>, after: Duration) -> Result<Bytes, ClientError> {
    let collect = Limited::new(response.into_body(), MAX_REPLY_BYTES).collect();
    match tokio::time::timeout(after, collect).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) => Err(ClientError::Body(e)),
        Err(_) => Err(ClientError::Timeout { what: "2025-era reply", after }),
    }
}

/// The `result` of the reply to `id`: a JSON-RPC error, an HTTP error status or a reply
/// without a result is an error.
///
/// ```
/// use http::StatusCode;
/// use mcp_fleet_loadtest::legacy::result_of;
/// use serde_json::json;
/// let ok = br#"{"jsonrpc":"2.0","id":3,"result":{}}"#;
/// assert_eq!(result_of(ok, StatusCode::OK, false, &json!(3)).unwrap(), json!({}));
/// let sse = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"a\":1}}\n\n";
/// assert_eq!(result_of(sse, StatusCode::OK, true, &json!(3)).unwrap(), json!({"a": 1}));
/// let refused = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not found"}}"#;
/// assert!(result_of(refused, StatusCode::NOT_FOUND, false, &json!(3)).is_err());
/// ```
pub fn result_of(body: &[u8], status: StatusCode, is_sse: bool, id: &Value) -> Result<Value, ClientError> {
    let message = if is_sse {
        let mut events = Vec::new();
        SseDecoder::new().feed(body, &mut events);
        events.into_iter().find_map(|e| match e {
            SseEvent::Message(m) => serde_json::from_str::<Value>(&m).ok().filter(|m| m.get("id") == Some(id)),
            SseEvent::Comment(_) => None,
        })
    } else {
        serde_json::from_slice::<Value>(body).ok()
    };
    let status_error = || ClientError::Status { status, body: snippet(body) };
    let Some(mut message) = message else { return Err(status_error()) };
    if let Some(error) = message.get("error") {
        return Err(ClientError::Rpc {
            code: error["code"].as_i64().unwrap_or_default(),
            message: error["message"].as_str().unwrap_or_default().to_owned(),
            data: error.get("data").cloned(),
        });
    }
    if !status.is_success() {
        return Err(status_error());
    }
    message
        .get_mut("result")
        .map(Value::take)
        .ok_or_else(|| ClientError::Protocol(format!("reply without result: {message}")))
}

/// The first 200 bytes of a body, as text.
fn snippet(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned()
}

/// One SSE event of a GET stream: its id (if it has one) and its data (if any).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamEvent {
    /// The `id:` field.
    pub id: Option<String>,
    /// The `data:` lines, joined by `\n`.
    pub data: Option<String>,
}

/// An incremental SSE decoder that keeps event ids (the protocol crate's decoder drops them;
/// a 2025 client needs the last one to resume). Accepts any split of the bytes; comments
/// (keepalives) produce nothing.
#[derive(Debug, Default)]
pub struct EventDecoder {
    line: Vec<u8>,
    event: StreamEvent,
}

impl EventDecoder {
    /// Feed bytes; complete events are appended to `out`.
    ///
    /// ```
    /// use mcp_fleet_loadtest::legacy::{EventDecoder, StreamEvent};
    /// let mut decoder = EventDecoder::default();
    /// let mut out = Vec::new();
    /// decoder.feed(b": keepalive\n\nid: ab-0\nevent: message\ndata: {}\n\n", &mut out);
    /// assert_eq!(out, [StreamEvent { id: Some("ab-0".into()), data: Some("{}".into()) }]);
    /// ```
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) {
        for &b in bytes {
            if b == b'\n' {
                let line = std::mem::take(&mut self.line);
                self.finish_line(&line, out);
            } else {
                self.line.push(b);
            }
        }
    }

    fn finish_line(&mut self, line: &[u8], out: &mut Vec<StreamEvent>) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            let event = std::mem::take(&mut self.event);
            if event.id.is_some() || event.data.is_some() {
                out.push(event);
            }
            return;
        }
        if line.starts_with(b":") {
            return;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = text.split_once(':').unwrap_or((&text, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "data" => match &mut self.event.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.event.data = Some(value.to_owned()),
            },
            "id" => self.event.id = Some(value.to_owned()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decoder_keeps_ids_across_every_split() {
        let wire = b"id: 0f-7\r\nevent: message\r\ndata: {\"a\":1}\r\n\r\n: keepalive\n\nid: 0f-8\nevent: message\ndata: x\ndata: y\n\n";
        for split in 0..=wire.len() {
            let (mut decoder, mut out) = (EventDecoder::default(), Vec::new());
            decoder.feed(&wire[..split], &mut out);
            decoder.feed(&wire[split..], &mut out);
            assert_eq!(
                out,
                [
                    StreamEvent { id: Some("0f-7".into()), data: Some("{\"a\":1}".into()) },
                    StreamEvent { id: Some("0f-8".into()), data: Some("x\ny".into()) },
                ],
                "split at {split}"
            );
        }
    }

    #[test]
    fn a_priming_event_has_an_id_and_empty_data() {
        let (mut decoder, mut out) = (EventDecoder::default(), Vec::new());
        decoder.feed(b"id: 3-41\ndata: \n\nid: 3-42\n\n", &mut out);
        assert_eq!(
            out,
            [
                StreamEvent { id: Some("3-41".into()), data: Some(String::new()) },
                StreamEvent { id: Some("3-42".into()), data: None },
            ]
        );
    }

    #[test]
    fn replies_the_node_gives_and_the_refusals_it_makes() {
        let id = json!(4);
        let error = br#"{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"params.uri must be a string"}}"#;
        assert_eq!(result_of(error, StatusCode::OK, false, &id).unwrap_err().rpc_code(), Some(-32602));
        assert!(matches!(
            result_of(b"Bad Request", StatusCode::BAD_REQUEST, false, &id),
            Err(ClientError::Status { status: StatusCode::BAD_REQUEST, .. })
        ));
        let other = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n\n";
        assert!(result_of(other, StatusCode::OK, true, &id).is_err(), "the answer to another request is not ours");
        assert!(matches!(
            result_of(br#"{"jsonrpc":"2.0","id":4}"#, StatusCode::OK, false, &id),
            Err(ClientError::Protocol(_))
        ));
    }

    #[test]
    fn a_stream_hears_every_list() {
        let h = honoured();
        for kind in ListKind::ALL {
            assert!(mcp_fleet_client::listen::follows(&h, kind), "{kind:?}");
        }
    }
}
