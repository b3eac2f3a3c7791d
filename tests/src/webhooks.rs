//! A webhook receiver for the events extension's tests: a plain HTTP server that verifies every
//! delivery's Standard Webhooks signature (its own HMAC, independent of the server's code),
//! answers verification challenges, counts deliveries per `webhook-id`, and can be told to fail
//! (503) or redirect (302) for a while.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A fresh `whsec_` secret (32 random bytes).
pub fn new_secret() -> String {
    format!("whsec_{}", STANDARD.encode(rand::random::<[u8; 32]>()))
}

/// One delivery as received.
#[derive(Debug, Clone)]
pub struct Received {
    /// `webhook-id`.
    pub id: String,
    /// `x-mcp-subscription-id`.
    pub subscription: String,
    /// The body, parsed.
    pub body: Value,
    /// The signature verified under the receiver's secret.
    pub signed: bool,
    /// `webhook-timestamp` within five minutes of now.
    pub fresh: bool,
}

#[derive(Default)]
struct State {
    secret: Mutex<Vec<u8>>,
    received: Mutex<Vec<Received>>,
    connections: AtomicUsize,
    failing: AtomicBool,
    redirect_to: Mutex<Option<String>>,
    echo_challenges: AtomicBool,
    /// Milliseconds to wait before answering an accepted delivery.
    hold_ms: std::sync::atomic::AtomicU64,
}

/// The receiver (stops when dropped).
pub struct Receiver {
    /// Where it listens.
    pub addr: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    /// Listen on an ephemeral loopback port, verifying with `secret` (`whsec_…`).
    pub async fn start(secret: &str) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(State::default());
        state.echo_challenges.store(true, Ordering::SeqCst);
        *state.secret.lock().unwrap() = decode(secret);
        let task = tokio::spawn({
            let state = state.clone();
            async move {
                while let Ok((socket, _)) = listener.accept().await {
                    state.connections.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(serve(socket, state.clone()));
                }
            }
        });
        Receiver { addr, state, task }
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Answer 503 to deliveries while `failing`.
    pub fn fail(&self, failing: bool) {
        self.state.failing.store(failing, Ordering::SeqCst);
    }

    /// Answer deliveries with `302 Location: to`.
    pub fn redirect(&self, to: &str) {
        *self.state.redirect_to.lock().unwrap() = Some(to.to_owned());
    }

    /// Accept deliveries (record them) but answer only `after` later: a sender killed
    /// meanwhile never learns they were accepted.
    pub fn hold_answers(&self, after: Duration) {
        self.state.hold_ms.store(after.as_millis() as u64, Ordering::SeqCst);
    }

    /// Answer verification challenges with a wrong echo (`false`).
    pub fn echo_challenges(&self, echo: bool) {
        self.state.echo_challenges.store(echo, Ordering::SeqCst);
    }

    /// Every delivery accepted so far (verification requests included).
    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().unwrap().clone()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// How many times each event delivery's `webhook-id` was accepted.
    pub fn counts(&self) -> HashMap<String, usize> {
        let mut counts = HashMap::new();
        for r in self.received().iter().filter(|r| r.body.get("eventId").is_some()) {
            *counts.entry(r.id.clone()).or_default() += 1;
        }
        counts
    }

    /// Wait until `wanted` distinct events were accepted (panics after `within`).
    pub async fn await_events(&self, wanted: usize, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        while self.counts().len() < wanted {
            assert!(tokio::time::Instant::now() < deadline, "{} of {wanted} events delivered", self.counts().len());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn decode(secret: &str) -> Vec<u8> {
    STANDARD.decode(secret.trim_start_matches("whsec_")).expect("a whsec_ secret")
}

/// Serve one connection: read each request (headers, `content-length` body), answer it.
async fn serve(mut socket: TcpStream, state: Arc<State>) {
    let mut buf = Vec::new();
    loop {
        let Some((head_len, headers)) = read_head(&mut socket, &mut buf).await else { return };
        let length: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        while buf.len() < head_len + length {
            let mut chunk = [0u8; 8192];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = buf[head_len..head_len + length].to_vec();
        buf.drain(..head_len + length);
        let response = answer(&state, &headers, &body);
        let hold = state.hold_ms.load(Ordering::SeqCst);
        if hold > 0 && response.starts_with("HTTP/1.1 200") {
            tokio::time::sleep(Duration::from_millis(hold)).await;
        }
        if socket.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Read up to the end of a request's head: its length and its headers (lower-cased names).
async fn read_head(socket: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(usize, HashMap<String, String>)> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let headers = head
                .lines()
                .skip(1)
                .filter_map(|line| line.split_once(':'))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
                .collect();
            return Some((end + 4, headers));
        }
        let mut chunk = [0u8; 8192];
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The response to one delivery.
fn answer(state: &State, headers: &HashMap<String, String>, body: &[u8]) -> String {
    let header = |name: &str| headers.get(name).cloned().unwrap_or_default();
    let (id, timestamp) = (header("webhook-id"), header("webhook-timestamp"));
    let secret = state.secret.lock().unwrap().clone();
    let signed = header("webhook-signature").split(' ').any(|sig| {
        let mut mac = Hmac::<Sha256>::new_from_slice(&secret).expect("any key length");
        mac.update(format!("{id}.{timestamp}.").as_bytes());
        mac.update(body);
        sig.strip_prefix("v1,").and_then(|b| STANDARD.decode(b).ok()).is_some_and(|b| mac.verify_slice(&b).is_ok())
    });
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let fresh = timestamp.parse::<u64>().is_ok_and(|t| t.abs_diff(now) < 300);
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if parsed["type"] == "verification" {
        let challenge =
            if state.echo_challenges.load(Ordering::SeqCst) { parsed["challenge"].clone() } else { json!("no") };
        return reply("200 OK", &json!({"challenge": challenge}).to_string(), "");
    }
    if let Some(to) = state.redirect_to.lock().unwrap().clone() {
        return reply("302 Found", "", &format!("location: {to}\r\n"));
    }
    if state.failing.load(Ordering::SeqCst) {
        return reply("503 Service Unavailable", "", "");
    }
    let received = Received { id, subscription: header("x-mcp-subscription-id"), body: parsed, signed, fresh };
    state.received.lock().unwrap().push(received);
    reply("200 OK", "", "")
}

fn reply(status: &str, body: &str, extra: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\ncontent-type: application/json\r\n{extra}\r\n{body}",
        body.len()
    )
}
