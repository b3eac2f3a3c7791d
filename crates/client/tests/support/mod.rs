//! Real in-process nodes for the client's tests, and [`Front`]: a thin HTTP layer in front
//! of a node's own [`McpHandler::handle`] that lets a test make the node behave like another
//! server — rewrite its JSON answers (drop `listChanged`, corrupt a page), answer a method
//! with `-32601`, hold a request, cut the listen streams, slip a malformed frame into them,
//! run a hook before a request (change the catalog mid-pagination) — and counts requests by
//! method. Everything else is the node's real answer.

#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::{Request, Response};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, BodyStream, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use mcp_fleet_client::{
    CatalogState, CatalogWatcher, Endpoint, Freshness, ListKind, Observer, ReconnectPolicy, RpcClient, StateReceiver,
    Transport, VerifyPolicy, WatcherOptions,
};
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_server::{HandlerOptions, McpHandler, McpServer, create_mcp_handler};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, watch};

/// How long any awaited condition may take.
pub use mcp_fleet_bus::testing::WAIT;

type Body = UnsyncBoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;
/// Rewrites a JSON answer to `method`.
pub type Rewrite = Arc<dyn Fn(&str, &mut Value) + Send + Sync>;
/// Runs before a request to `method` (with its body) is forwarded.
pub type Hook = Arc<dyn Fn(&str, &Value) + Send + Sync>;

/// A server with tools `tool-0` … `tool-{n-1}`.
pub fn server_with_tools(n: usize) -> McpServer {
    let server = McpServer::builder("client-test", "0.0.1").build();
    for i in 0..n {
        add_tool(&server, &format!("tool-{i}"));
    }
    server
}

/// Register tool `name`.
pub fn add_tool(server: &McpServer, name: &str) -> mcp_fleet_server::catalog::EntryHandle {
    server.tool(Tool::new(name, "A test tool"), |_call| async move { Ok(CallToolResult::text("ok")) })
}

/// A handler for `server` with `page_size` items a page.
pub async fn handler(server: McpServer, page_size: usize) -> McpHandler {
    handler_with(server, HandlerOptions::default().page_size(page_size)).await
}

/// A handler for `server` with `options`.
pub async fn handler_with(server: McpServer, options: HandlerOptions) -> McpHandler {
    create_mcp_handler(server, options).await.expect("handler")
}

/// Serve `handler` directly on an ephemeral port; its URL.
pub async fn serve(handler: &McpHandler) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    serve_on(listener, handler)
}

/// Serve `handler` on `listener`; its URL.
pub fn serve_on(listener: tokio::net::TcpListener, handler: &McpHandler) -> String {
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    tokio::spawn({
        let handler = handler.clone();
        async move { handler.serve(listener).await }
    });
    url
}

/// A node serving tools `tool-0` … `tool-{n-1}` (100 a page) behind a [`Front`].
pub async fn fronted(tools: usize) -> (McpServer, McpHandler, Front) {
    let server = server_with_tools(tools);
    let node = handler(server.clone(), 100).await;
    let front = Front::start(&node).await;
    (server, node, front)
}

/// A node serving `tool-0` with the `cache` hints, behind a [`Front`].
pub async fn fronted_with(cache: mcp_fleet_server::catalog::CachePolicy) -> (McpServer, McpHandler, Front) {
    let server = McpServer::builder("client-test", "0.0.1").cache_policy(cache).build();
    add_tool(&server, "tool-0");
    let node = handler(server.clone(), 100).await;
    let front = Front::start(&node).await;
    (server, node, front)
}

/// What a [`Front`] does besides forwarding.
#[derive(Default)]
struct Behaviour {
    rewrite: Option<Rewrite>,
    hook: Option<Hook>,
    gone: Vec<String>,
    hold: Option<(String, Arc<Semaphore>)>,
    garbage_after_ack: bool,
    ack_honours_nothing: bool,
}

/// A node behind a test-controlled layer.
#[derive(Clone)]
pub struct Front {
    /// The node's URL through the front.
    pub url: String,
    behaviour: Arc<Mutex<Behaviour>>,
    counts: Arc<Mutex<HashMap<String, usize>>>,
    cut: watch::Sender<u64>,
}

impl Front {
    /// Serve `handler` through a front on an ephemeral port.
    pub async fn start(handler: &McpHandler) -> Front {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
        let front = Front { url, behaviour: Arc::default(), counts: Arc::default(), cut: watch::channel(0).0 };
        let (node, this) = (handler.clone(), front.clone());
        let service = move |req: Request<Incoming>| {
            let (node, this) = (node.clone(), this.clone());
            async move { Ok::<_, Infallible>(this.answer(&node, req).await) }
        };
        tokio::spawn(mcp_fleet_server::serve_http(
            listener,
            service,
            std::future::pending::<()>(),
            Duration::from_secs(1),
        ));
        front
    }

    /// Rewrite every JSON answer with `rewrite(method, &mut answer)`.
    pub fn rewrite(&self, rewrite: impl Fn(&str, &mut Value) + Send + Sync + 'static) {
        self.behaviour.lock().expect("front").rewrite = Some(Arc::new(rewrite));
    }

    /// Run `hook(method, request)` before forwarding each request.
    pub fn hook(&self, hook: impl Fn(&str, &Value) + Send + Sync + 'static) {
        self.behaviour.lock().expect("front").hook = Some(Arc::new(hook));
    }

    /// Answer `method` with `-32601`, as a server without it does.
    pub fn remove_method(&self, method: &str) {
        self.behaviour.lock().expect("front").gone.push(method.to_owned());
    }

    /// Hold every request to `method` until a permit of the returned gate is added.
    pub fn hold(&self, method: &str) -> Arc<Semaphore> {
        let gate = Arc::new(Semaphore::new(0));
        self.behaviour.lock().expect("front").hold = Some((method.to_owned(), gate.clone()));
        gate
    }

    /// Stop holding requests (those already held stay held).
    pub fn release_all(&self) {
        self.behaviour.lock().expect("front").hold = None;
    }

    /// Slip an unparseable message into each listen stream right after its ack.
    pub fn garbage_after_ack(&self) {
        self.behaviour.lock().expect("front").garbage_after_ack = true;
    }

    /// Rewrite each listen ack to honour nothing (`"notifications":{}`), as a server that
    /// supports none of what was asked does (LSTN-4).
    pub fn ack_honours_nothing(&self) {
        self.behaviour.lock().expect("front").ack_honours_nothing = true;
    }

    /// End every open listen stream (as a broken connection does), without a completion.
    pub fn cut_streams(&self) {
        self.cut.send_modify(|n| *n += 1);
    }

    /// Requests seen for `method`.
    pub fn count(&self, method: &str) -> usize {
        self.counts.lock().expect("front").get(method).copied().unwrap_or(0)
    }

    async fn answer(&self, node: &McpHandler, req: Request<Incoming>) -> Response<Body> {
        let (parts, body) = req.into_parts();
        let bytes = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
        let message: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        *self.counts.lock().expect("front").entry(method.clone()).or_default() += 1;
        let (rewrite, hook, gone, hold, first_frame) = {
            let b = self.behaviour.lock().expect("front");
            let hold = b.hold.as_ref().filter(|(m, _)| *m == method).map(|(_, g)| g.clone());
            let first_frame = FirstFrame { garbage_after: b.garbage_after_ack, honour_nothing: b.ack_honours_nothing };
            (b.rewrite.clone(), b.hook.clone(), b.gone.contains(&method), hold, first_frame)
        };
        if let Some(hook) = hook {
            hook(&method, &message);
        }
        if let Some(gate) = hold {
            // The gate is never closed.
            let _ = gate.acquire().await.map(|p| p.forget());
        }
        if gone {
            let answer = json!({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}});
            return json_response(http::StatusCode::OK, &answer);
        }
        let response = node.handle(Request::from_parts(parts, Full::new(bytes))).await;
        let is_sse = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        if is_sse {
            return self.stream(response, first_frame);
        }
        let Some(rewrite) = rewrite else { return response.map(|b| b.map_err(|never| match never {}).boxed_unsync()) };
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
        let Ok(mut answer) = serde_json::from_slice::<Value>(&bytes) else {
            return Response::from_parts(parts, Full::new(bytes).map_err(|never| match never {}).boxed_unsync());
        };
        rewrite(&method, &mut answer);
        json_response(parts.status, &answer)
    }

    /// A listen stream passed through: cut on [`Front::cut_streams`], its first frame (the
    /// ack) rewritten or followed by garbage when asked.
    fn stream(&self, response: Response<mcp_fleet_server::ResponseBody>, ack: FirstFrame) -> Response<Body> {
        let mut cut = self.cut.subscribe();
        cut.mark_unchanged();
        let (parts, body) = response.into_parts();
        let frames = BodyStream::new(body).map(|f| f.map_err(|never| match never {}));
        let mut first = true;
        let frames = frames.flat_map(move |frame| {
            if !std::mem::take(&mut first) {
                return futures_util::stream::iter(vec![frame]);
            }
            let frame = match frame {
                Ok(f) if ack.honour_nothing => Ok(f.map_data(|data| honour_nothing(&data))),
                other => other,
            };
            let mut out = vec![frame];
            if ack.garbage_after {
                out.push(Ok(Frame::data(Bytes::from_static(b"event: message\ndata: {not json\n\n"))));
            }
            futures_util::stream::iter(out)
        });
        let ended = async move {
            let _ = cut.changed().await;
        };
        let frames = frames.take_until(Box::pin(ended)).map(|f: Result<Frame<Bytes>, Infallible>| {
            f.map_err(|never| -> Box<dyn std::error::Error + Send + Sync> { match never {} })
        });
        Response::from_parts(parts, BodyExt::boxed_unsync(StreamBody::new(frames)))
    }
}

/// What to do to a listen stream's first frame.
#[derive(Clone, Copy)]
struct FirstFrame {
    garbage_after: bool,
    honour_nothing: bool,
}

/// The ack frame with its honoured filter emptied (the filter is flat: its object ends at
/// the first `}` after `"notifications":{`).
fn honour_nothing(frame: &Bytes) -> Bytes {
    let text = String::from_utf8_lossy(frame);
    let key = "\"notifications\":{";
    let Some(start) = text.find(key).map(|i| i + key.len()) else { return frame.clone() };
    let Some(end) = text[start..].find('}').map(|i| start + i) else { return frame.clone() };
    Bytes::from(format!("{}{}", &text[..start], &text[end..]))
}

fn json_response(status: http::StatusCode, answer: &Value) -> Response<Body> {
    let body = Full::new(Bytes::from(answer.to_string())).map_err(|never| match never {}).boxed_unsync();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

/// Drop `listChanged` from every capability of a discover answer.
pub fn without_list_changed(method: &str, answer: &mut Value) {
    if method == "server/discover" {
        for family in ["tools", "prompts", "resources"] {
            if let Some(caps) = answer["result"]["capabilities"][family].as_object_mut() {
                caps.remove("listChanged");
            }
        }
    }
}

/// A fast reconnect policy for tests.
pub fn quick() -> ReconnectPolicy {
    ReconnectPolicy { initial: Duration::from_millis(20), max: Duration::from_millis(200), ..Default::default() }
}

/// Watcher options for `lists` with fast retries and no periodic verification (tests that
/// want it set it).
pub fn options(lists: &[ListKind]) -> WatcherOptions {
    let mut options =
        WatcherOptions { relist: lists.to_vec(), retry: quick(), verify: VerifyPolicy::OFF, ..Default::default() };
    options.listener.reconnect = quick();
    options
}

/// An RPC client for `url` with a short timeout.
pub fn rpc(url: &str) -> RpcClient {
    RpcClient::new(Transport::http1(), Endpoint::parse(url).expect("url")).with_timeout(Duration::from_secs(2))
}

/// A running watcher: its task and the means to stop it.
pub struct Running {
    /// The watcher's task; ends when stopped or unauthorized.
    pub task: tokio::task::JoinHandle<()>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Running {
    /// Stop the watcher.
    pub fn stop(&mut self) {
        self.stop.take();
    }
}

/// Spawn `watcher` reporting to `observer`.
pub fn spawn(watcher: CatalogWatcher, observer: impl Observer + 'static) -> Running {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        watcher
            .run(observer, async {
                let _ = stopped.await;
            })
            .await;
    });
    Running { task, stop: Some(stop) }
}

/// Wait until `state` satisfies `done`; its value then.
pub async fn until(state: &mut StateReceiver, what: &str, done: impl FnMut(&CatalogState) -> bool) -> CatalogState {
    let seen = tokio::time::timeout(WAIT, async { state.wait_for(done).await.map(|s| s.clone()) }).await;
    match seen {
        Ok(Ok(seen)) => seen,
        Ok(Err(_closed)) => panic!("the watcher ended before {what}; last state {}", state.borrow().to_json()),
        Err(_) => panic!("timed out waiting for {what}; last state {}", state.borrow().to_json()),
    }
}

/// Wait until `state` is fresh with `n` items.
pub async fn until_fresh(state: &mut StateReceiver, n: usize) -> CatalogState {
    until(state, &format!("fresh with {n} items"), |s| {
        s.freshness == Freshness::Fresh && s.snapshot.as_ref().is_some_and(|s| s.items.len() == n)
    })
    .await
}
