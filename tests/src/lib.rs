//! Test harness for end-to-end tests: start real nodes on 127.0.0.1:0 and talk to them with a
//! real HTTP client (hyper), over HTTP/1.1 or h2c. [`cluster`] runs fleets on real brokers;
//! [`idp`] is an OAuth identity provider for nodes that take bearer tokens; [`tasks`] and
//! [`tasks_spec`] drive the tasks extension, on one node and across a fleet.

/// The README's code is compiled as a doctest here (the crate that depends on everything), so
/// the embedding example cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

pub mod balancer;
pub mod cluster;
pub mod cluster_spec;
pub mod faults;
pub mod idp;
pub mod legacy;
pub mod proxy;
pub mod tasks;
pub mod tasks_spec;
pub mod webhooks;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_fleet_bus::ServerEventBus;
use mcp_fleet_protocol::sse::{SseDecoder, SseEvent};
use mcp_fleet_server::{HandlerOptions, McpHandler, McpServer, ServerFactory, create_mcp_handler};
use serde_json::{Value, json};

/// The workspace's one bounded wait and its default bound, from the bus crate's test support
/// (re-exported here for the crates whose tests build on this one).
pub use mcp_fleet_bus::testing::{WAIT, eventually};

/// A running node.
pub struct TestNode {
    /// Its handler.
    pub handler: McpHandler,
    /// Its address.
    pub addr: SocketAddr,
    serving: tokio::task::JoinHandle<()>,
}

impl TestNode {
    /// Start a node serving `factory` with `options` on an ephemeral loopback port.
    pub async fn start(factory: impl ServerFactory, options: HandlerOptions) -> TestNode {
        Self::serve(create_mcp_handler(factory, options).await.expect("handler")).await
    }

    /// Serve an already built `handler` on an ephemeral loopback port.
    pub async fn serve(handler: McpHandler) -> TestNode {
        Self::serve_on(tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind"), handler)
    }

    /// Serve `handler` on `listener`, bound beforehand by a test that needs the node's URL
    /// to build its options (an OAuth audience, say).
    pub fn serve_on(listener: tokio::net::TcpListener, handler: McpHandler) -> TestNode {
        let addr = listener.local_addr().expect("addr");
        let serving = tokio::spawn({
            let handler = handler.clone();
            async move { handler.serve(listener).await.expect("serve") }
        });
        TestNode { handler, addr, serving }
    }

    /// Start a node with `server` on a shared `bus`, as node `node_id`.
    pub async fn on_bus(server: McpServer, bus: Arc<dyn ServerEventBus>) -> TestNode {
        Self::start(server, HandlerOptions::default().bus(bus)).await
    }

    /// The MCP endpoint URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Shut down gracefully and wait for the serve loop.
    pub async fn shutdown(self) {
        self.handler.shutdown().await;
        let _ = tokio::time::timeout(WAIT, self.serving).await;
    }
}

/// A response with its status, headers and body bytes.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: StatusCode,
    /// Headers.
    pub headers: HeaderMap,
    /// Body.
    pub body: Bytes,
}

impl Reply {
    /// The body as JSON (panics with the body text if it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// Every JSON-RPC message of the body: the one JSON object, or each SSE `data:` event.
    pub fn messages(&self) -> Vec<Value> {
        let sse = self
            .headers
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        match (sse, self.body.is_empty()) {
            (true, _) => self.sse_messages(),
            (false, true) => Vec::new(),
            (false, false) => vec![self.json()],
        }
    }

    /// The SSE messages of the body, parsed as JSON.
    pub fn sse_messages(&self) -> Vec<Value> {
        let mut out = Vec::new();
        SseDecoder::new().feed(&self.body, &mut out);
        out.into_iter()
            .filter_map(|e| match e {
                SseEvent::Message(m) => Some(serde_json::from_str(&m).expect("SSE data is JSON")),
                SseEvent::Comment(_) => None,
            })
            .collect()
    }

    /// The JSON-RPC error code, if the body is a JSON-RPC error.
    pub fn error_code(&self) -> Option<i64> {
        self.json().get("error").and_then(|e| e.get("code")).and_then(Value::as_i64)
    }
}

/// The standard request `_meta` envelope.
pub fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}})
}

/// A conformant request body: `params` plus the envelope.
pub fn request(id: Value, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// An MCP HTTP client.
#[derive(Clone)]
pub struct McpClient {
    client: Client<HttpConnector, Full<Bytes>>,
    url: String,
}

impl McpClient {
    /// An HTTP/1.1 client for `url`.
    pub fn new(url: String) -> Self {
        McpClient { client: Client::builder(TokioExecutor::new()).build_http(), url }
    }

    /// An h2c (HTTP/2 prior knowledge) client for `url`.
    pub fn h2c(url: String) -> Self {
        McpClient { client: Client::builder(TokioExecutor::new()).http2_only(true).build_http(), url }
    }

    /// Standard headers for a body (`Mcp-Name` from `params.name`/`params.uri`/`params.taskId`
    /// when relevant).
    pub fn standard_headers(body: &Value) -> Vec<(String, String)> {
        let method = body["method"].as_str().unwrap_or_default().to_owned();
        let mut h = vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "application/json, text/event-stream".into()),
            ("mcp-protocol-version".into(), "2026-07-28".into()),
            ("mcp-method".into(), method.clone()),
        ];
        let name = match method.as_str() {
            "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
            "resources/read" => body["params"]["uri"].as_str(),
            "tasks/get" | "tasks/update" | "tasks/cancel" => body["params"]["taskId"].as_str(),
            _ => None,
        };
        if let Some(name) = name {
            h.push(("mcp-name".into(), name.to_owned()));
        }
        h
    }

    /// Send raw bytes with exactly `headers`, using `method`.
    pub async fn send_raw(
        &self,
        method: &str,
        headers: &[(String, String)],
        body: impl Into<Bytes>,
    ) -> http::Response<Incoming> {
        self.try_send_raw(method, headers, body).await.unwrap_or_else(|e| panic!("response: {e}"))
    }

    /// [`McpClient::send_raw`], answering why when the request fails on the way or gets no
    /// answer in time.
    pub async fn try_send_raw(
        &self,
        method: &str,
        headers: &[(String, String)],
        body: impl Into<Bytes>,
    ) -> Result<http::Response<Incoming>, String> {
        let mut req = Request::builder().method(method).uri(&self.url);
        for (k, v) in headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let req = req.body(Full::new(body.into())).expect("request");
        match tokio::time::timeout(WAIT, self.client.request(req)).await {
            Ok(answer) => answer.map_err(|e| format!("{e:?}")),
            Err(_) => Err(format!("no response in {WAIT:?}")),
        }
    }

    /// [`McpClient::listen`], as a reconnecting client sends it: `None` when the request
    /// fails on the way (a connection the node closed as it was reused) or gets no answer in
    /// time, for the caller to try again.
    pub async fn try_listen(&self, id: Value, notifications: Value) -> Option<ListenStream> {
        let body = request(id, "subscriptions/listen", json!({"notifications": notifications}));
        let bytes = serde_json::to_vec(&body).expect("json");
        self.try_send_raw("POST", &Self::standard_headers(&body), bytes).await.ok().map(ListenStream::from_response)
    }

    /// POST a JSON body with the standard headers and read the whole reply.
    pub async fn post(&self, body: &Value) -> Reply {
        self.post_with(body, &Self::standard_headers(body)).await
    }

    /// POST a JSON body with `headers` and read the whole reply.
    pub async fn post_with(&self, body: &Value, headers: &[(String, String)]) -> Reply {
        let resp = self.send_raw("POST", headers, serde_json::to_vec(body).expect("json")).await;
        read_all(resp).await
    }

    /// Call `method` with `params` (envelope added) and return the JSON-RPC `result`.
    pub async fn result(&self, method: &str, params: Value) -> Value {
        let reply = self.post(&request(json!(1), method, params)).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", String::from_utf8_lossy(&reply.body));
        let body = reply.json();
        body.get("result").cloned().unwrap_or_else(|| panic!("no result: {body}"))
    }

    /// Open a listen stream with `notifications` as its filter.
    pub async fn listen(&self, id: Value, notifications: Value) -> ListenStream {
        let body = request(id, "subscriptions/listen", json!({"notifications": notifications}));
        let resp =
            self.send_raw("POST", &Self::standard_headers(&body), serde_json::to_vec(&body).expect("json")).await;
        ListenStream {
            status: resp.status(),
            headers: resp.headers().clone(),
            body: resp.into_body(),
            decoder: SseDecoder::new(),
            queued: Vec::new(),
        }
    }
}

async fn read_all(resp: http::Response<Incoming>) -> Reply {
    let (parts, body) = resp.into_parts();
    let body = tokio::time::timeout(WAIT, body.collect()).await.expect("body in time").expect("body").to_bytes();
    Reply { status: parts.status, headers: parts.headers, body }
}

/// An open listen stream, read event by event.
pub struct ListenStream {
    /// HTTP status.
    pub status: StatusCode,
    /// Response headers.
    pub headers: HeaderMap,
    body: Incoming,
    decoder: SseDecoder,
    queued: Vec<SseEvent>,
}

impl ListenStream {
    /// Read `resp` as a listen stream.
    pub fn from_response(resp: http::Response<Incoming>) -> ListenStream {
        let (status, headers) = (resp.status(), resp.headers().clone());
        ListenStream { status, headers, body: resp.into_body(), decoder: SseDecoder::new(), queued: Vec::new() }
    }

    /// The newest SSE event id read (what a client resuming now sends as `Last-Event-ID`),
    /// counting events read from the socket but not yet returned.
    pub fn last_event_id(&self) -> Option<&str> {
        self.decoder.last_event_id()
    }

    /// The next SSE event (message or comment), or `None` at the end of the stream; panics
    /// after `timeout`.
    pub async fn next_event(&mut self, timeout: Duration) -> Option<SseEvent> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if !self.queued.is_empty() {
                return Some(self.queued.remove(0));
            }
            let frame = tokio::time::timeout_at(deadline, self.body.frame()).await.expect("event in time")?;
            if let Ok(data) = frame.expect("frame").into_data() {
                self.decoder.feed(&data, &mut self.queued);
            }
        }
    }

    /// The next JSON message (skipping comments) within `timeout`; `None` at the end of the
    /// stream or when the connection fails (a reader that must survive anything).
    pub async fn next_message_within(&mut self, timeout: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            while !self.queued.is_empty() {
                match self.queued.remove(0) {
                    // A priming event (an id and empty data) carries no message.
                    SseEvent::Message(m) if m.is_empty() => {}
                    SseEvent::Message(m) => return serde_json::from_str(&m).ok(),
                    SseEvent::Comment(_) => {}
                }
            }
            let frame = tokio::time::timeout_at(deadline, self.body.frame()).await.ok()??.ok()?;
            if let Ok(data) = frame.into_data() {
                self.decoder.feed(&data, &mut self.queued);
            }
        }
    }

    /// The next JSON message (skipping comments); `None` at the end of the stream.
    pub async fn next_message(&mut self) -> Option<Value> {
        loop {
            match self.next_event(WAIT).await? {
                // A priming event (an id and empty data) carries no message.
                SseEvent::Message(m) if m.is_empty() => continue,
                SseEvent::Message(m) => return Some(serde_json::from_str(&m).expect("JSON message")),
                SseEvent::Comment(_) => continue,
            }
        }
    }

    /// Assert that no message arrives within `quiet` (comments are allowed).
    pub async fn expect_silence(&mut self, quiet: Duration) {
        let deadline = tokio::time::Instant::now() + quiet;
        loop {
            if let Some(e) = self.queued.iter().find(|e| matches!(e, SseEvent::Message(m) if !m.is_empty())) {
                panic!("unexpected message: {e:?}");
            }
            self.queued.clear();
            match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Err(_) => return,
                Ok(None) => panic!("stream ended while expecting silence"),
                Ok(Some(frame)) => {
                    if let Ok(data) = frame.expect("frame").into_data() {
                        self.decoder.feed(&data, &mut self.queued);
                    }
                }
            }
        }
    }
}

/// A small catalog used by most tests: `echo`, `counter` with progress, one resource, one
/// template and one prompt.
pub fn test_server() -> McpServer {
    use mcp_fleet_server::types::*;
    let server = McpServer::builder("test-server", "0.0.1").build();
    server.tool(
        Tool::new("echo", "Echoes text")
            .input_schema(json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})),
        |call| async move { Ok(CallToolResult::text(call.arguments["text"].as_str().unwrap_or_default())) },
    );
    server.tool(Tool::new("counter", "Counts with progress"), |call| async move {
        for i in 1..=3 {
            call.ctx.progress(f64::from(i), Some(3.0), None).await;
        }
        Ok(CallToolResult::text("done"))
    });
    server.resource(Resource::new("test://a", "a", "Resource a", "text/plain"), |read| async move {
        Ok(vec![ResourceContents::text(read.uri, "text/plain", "A")])
    });
    server
}
