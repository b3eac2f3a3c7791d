//! The webhook receiver of `events-bench`: one loopback listener (hyper, HTTP/1.1, every
//! answer `connection: close`, since the sender opens a fresh connection per delivery anyway)
//! serving any number of hooks, one per path (`/hook/<i>`), each with its own `whsec_` secret.
//! It answers verification challenges, checks every POST's Standard Webhooks signature with
//! its own HMAC-SHA256 (independent of the server's code), refuses a bad one with 401, and
//! hands each verified delivery's body to the caller. Counts connections, POSTs and what it
//! refused.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use hmac::{Hmac, Mac};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::net::{TcpSocket, TcpStream};

/// What is done with each verified delivery: its hook's index and its body (the occurrence).
pub type OnDelivery = Arc<dyn Fn(usize, Value) + Send + Sync>;

/// Connections waiting to be accepted: a burst of fresh connections from three nodes (each
/// up to its `max_concurrent` POSTs in flight) must not overflow it.
const BACKLOG: u32 = 4096;
/// Largest request body read (an occurrence is a few hundred bytes).
const MAX_BODY: usize = 64 * 1024;
/// A `webhook-timestamp` further than this from now is counted stale (Standard Webhooks'
/// usual tolerance).
const TOLERANCE_SECS: u64 = 300;

/// One hook: its secret, and the subscription id its deliveries must carry once known.
struct Hook {
    secret: String,
    key: Vec<u8>,
    subscription: OnceLock<String>,
}

/// What the receiver counted so far.
#[derive(Debug, Default)]
pub struct Counts {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Requests served (verifications and deliveries, valid or not).
    pub requests: AtomicU64,
    /// Verification challenges answered.
    pub verifications: AtomicU64,
    /// Requests refused for a signature that did not verify (401).
    pub invalid_signatures: AtomicU64,
    /// Signed deliveries whose `x-mcp-subscription-id` was not the hook's subscription.
    pub wrong_subscription: AtomicU64,
    /// Signed requests whose `webhook-timestamp` was missing or over 5 minutes off.
    pub stale_timestamps: AtomicU64,
    /// Requests to no hook's path, or with a body that is not JSON (400/404).
    pub malformed: AtomicU64,
}

struct State {
    hooks: Vec<Hook>,
    counts: Counts,
    on_delivery: OnDelivery,
}

/// The receiver; stops accepting when dropped.
pub struct Receiver {
    addr: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    /// Listen on an ephemeral loopback port for `hooks` hooks, each with a fresh secret;
    /// every verified delivery goes to `on_delivery`.
    pub fn start(hooks: usize, on_delivery: OnDelivery) -> std::io::Result<Receiver> {
        let socket = TcpSocket::new_v4()?;
        socket.bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        let listener = socket.listen(BACKLOG)?;
        let addr = listener.local_addr()?;
        let hooks = (0..hooks).map(|_| hook(new_secret())).collect();
        let state = Arc::new(State { hooks, counts: Counts::default(), on_delivery });
        let task = tokio::spawn({
            let state = state.clone();
            async move {
                loop {
                    match listener.accept().await {
                        Ok((stream, _)) => {
                            state.counts.connections.fetch_add(1, Ordering::Relaxed);
                            tokio::spawn(serve(stream, state.clone()));
                        }
                        // Out of descriptors for a moment: let some connections close.
                        Err(_) => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
                    }
                }
            }
        });
        Ok(Receiver { addr, state, task })
    }

    /// Hook `i`'s URL, `http://127.0.0.1:<port>/hook/<i>`.
    pub fn url(&self, i: usize) -> String {
        format!("http://{}/hook/{i}", self.addr)
    }

    /// Hook `i`'s `whsec_` secret.
    pub fn secret(&self, i: usize) -> &str {
        self.state.hooks.get(i).map_or("", |h| h.secret.as_str())
    }

    /// From now on, deliveries to hook `i` must carry subscription `id` (a first call wins).
    pub fn expect_subscription(&self, i: usize, id: String) {
        if let Some(hook) = self.state.hooks.get(i) {
            let _ = hook.subscription.set(id);
        }
    }

    /// What it counted so far.
    pub fn counts(&self) -> &Counts {
        &self.state.counts
    }
}

/// A fresh `whsec_` secret (32 random bytes).
pub fn new_secret() -> String {
    format!("whsec_{}", STANDARD.encode(rand::random::<[u8; 32]>()))
}

fn hook(secret: String) -> Hook {
    let key = STANDARD.decode(secret.trim_start_matches("whsec_")).unwrap_or_default();
    Hook { secret, key, subscription: OnceLock::new() }
}

/// Serve one connection (one request: every answer closes it).
async fn serve(stream: TcpStream, state: Arc<State>) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |request| {
        let state = state.clone();
        async move { Ok::<_, std::convert::Infallible>(handle(&state, request).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    let _ = builder.keep_alive(false).serve_connection(TokioIo::new(stream), service).await;
}

/// The answer to one request.
async fn handle(state: &State, request: Request<Incoming>) -> Response<Full<Bytes>> {
    state.counts.requests.fetch_add(1, Ordering::Relaxed);
    let index = request.uri().path().strip_prefix("/hook/").and_then(|i| i.parse::<usize>().ok());
    let Some((index, hook)) = index.and_then(|i| Some((i, state.hooks.get(i)?))) else {
        state.counts.malformed.fetch_add(1, Ordering::Relaxed);
        return reply(StatusCode::NOT_FOUND, Bytes::new());
    };
    let (parts, body) = request.into_parts();
    let body = match http_body_util::Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return reply(StatusCode::BAD_REQUEST, Bytes::new()),
    };
    if !signed(&hook.key, &parts.headers, &body) {
        state.counts.invalid_signatures.fetch_add(1, Ordering::Relaxed);
        return reply(StatusCode::UNAUTHORIZED, Bytes::new());
    }
    if !fresh(&parts.headers) {
        state.counts.stale_timestamps.fetch_add(1, Ordering::Relaxed);
    }
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        state.counts.malformed.fetch_add(1, Ordering::Relaxed);
        return reply(StatusCode::BAD_REQUEST, Bytes::new());
    };
    if message["type"] == "verification" {
        state.counts.verifications.fetch_add(1, Ordering::Relaxed);
        let echo = json!({"challenge": message["challenge"]}).to_string();
        return reply(StatusCode::OK, Bytes::from(echo));
    }
    let carried = header(&parts.headers, "x-mcp-subscription-id");
    if hook.subscription.get().is_some_and(|id| id != carried) {
        state.counts.wrong_subscription.fetch_add(1, Ordering::Relaxed);
    }
    (state.on_delivery)(index, message);
    reply(StatusCode::OK, Bytes::new())
}

/// Whether any `v1,` signature of `webhook-signature` is the HMAC-SHA256 under `key` of
/// `<webhook-id>.<webhook-timestamp>.<body>`.
fn signed(key: &[u8], headers: &HeaderMap, body: &[u8]) -> bool {
    let (id, timestamp) = (header(headers, "webhook-id"), header(headers, "webhook-timestamp"));
    header(headers, "webhook-signature").split(' ').any(|signature| {
        let Some(given) = signature.strip_prefix("v1,").and_then(|b| STANDARD.decode(b).ok()) else { return false };
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else { return false };
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.as_bytes());
        mac.update(b".");
        mac.update(body);
        mac.verify_slice(&given).is_ok()
    })
}

/// Whether `webhook-timestamp` is within the tolerance of now.
fn fresh(headers: &HeaderMap) -> bool {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    header(headers, "webhook-timestamp").parse::<u64>().is_ok_and(|t| t.abs_diff(now) <= TOLERANCE_SECS)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

fn reply(status: StatusCode, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    headers.insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_under_its_key_only() {
        let key = hook(new_secret()).key;
        let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("any key length");
        mac.update(b"msg_1.1700000000.{\"a\":1}");
        let good = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
        let mut headers = HeaderMap::new();
        headers.insert("webhook-id", http::HeaderValue::from_static("msg_1"));
        headers.insert("webhook-timestamp", http::HeaderValue::from_static("1700000000"));
        headers.insert("webhook-signature", format!("v1,bm9wZQ== {good}").parse().expect("header"));
        assert!(signed(&key, &headers, b"{\"a\":1}"));
        assert!(!signed(&key, &headers, b"{\"a\":2}"));
        assert!(!signed(&hook(new_secret()).key, &headers, b"{\"a\":1}"));
    }
}
