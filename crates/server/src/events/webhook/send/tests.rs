//! Tests of one POST: signed, to checked addresses only, redirects and failures classified.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::*;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OK: &str = "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 18\r\n\r\n\
                  challenge-accepted";

/// A request the test receiver read.
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> &str {
        let found = self.headers.iter().find(|(key, _)| key == name);
        found.map_or("", |(_, value)| value.as_str())
    }
}

/// A listener on 127.0.0.1 that counts connections, records requests and answers each
/// with `reply` (raw bytes), or never answers if `reply` is `None`.
struct Receiver {
    port: u16,
    connections: Arc<AtomicUsize>,
    seen: mpsc::UnboundedReceiver<Seen>,
}

async fn receiver(reply: Option<String>) -> Receiver {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("local address").port();
    let connections = Arc::new(AtomicUsize::new(0));
    let (tx, seen) = mpsc::unbounded_channel();
    let counter = Arc::clone(&connections);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(answer(stream, reply.clone(), tx.clone()));
        }
    });
    Receiver { port, connections, seen }
}

async fn answer(mut stream: TcpStream, reply: Option<String>, tx: mpsc::UnboundedSender<Seen>) {
    if let Some(seen) = read_request(&mut stream).await {
        let _ = tx.send(seen);
    }
    match reply {
        Some(reply) => {
            let _ = stream.write_all(reply.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
        // Hold the connection open until the client gives up.
        None => while stream.read(&mut [0; 512]).await.is_ok_and(|n| n > 0) {},
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    loop {
        let mut chunk = [0; 4096];
        let n = stream.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut request = httparse::Request::new(&mut headers);
        let httparse::Status::Complete(head) = request.parse(&buf).ok()? else { continue };
        let path = request.path.unwrap_or_default().to_owned();
        let headers: Vec<(String, String)> = request
            .headers
            .iter()
            .map(|h| (h.name.to_ascii_lowercase(), String::from_utf8_lossy(h.value).into()))
            .collect();
        let length = headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
        let mut body = buf.split_off(head);
        while body.len() < length {
            let n = stream.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
            body.extend_from_slice(&chunk[..n]);
        }
        return Some(Seen { path, headers, body });
    }
}

/// A resolver answering `hooks.test` with whatever `answer` holds now.
fn switchable(answer: Arc<Mutex<Vec<IpAddr>>>, calls: Arc<AtomicUsize>) -> Resolver {
    Arc::new(move |host: String, port: u16| -> BoxFuture<'static, _> {
        calls.fetch_add(1, Ordering::SeqCst);
        let ips = answer.lock().expect("answer lock").clone();
        Box::pin(async move {
            if host != "hooks.test" {
                return Err(io::Error::new(io::ErrorKind::NotFound, host));
            }
            Ok(ips.into_iter().map(|ip| SocketAddr::new(ip, port)).collect())
        })
    })
}

fn sender_with(allowed: &[&str], resolver: Resolver, timeout: Duration) -> Sender {
    let allowed = allowed.iter().map(|n| n.parse().expect("network")).collect();
    let policy = SendPolicy { allowed, resolver, timeout, max_response_bytes: 9 };
    Sender::new(policy).expect("client")
}

fn sender(allowed: &[&str]) -> Sender {
    sender_with(allowed, system_resolver(), Duration::from_secs(5))
}

async fn post(sender: &Sender, url: &str) -> Outcome {
    let secret = Secret::parse(SECRET).expect("secret");
    let secrets = [&secret];
    let headers = Headers { msg_id: "msg_1", subscription_id: "sub_1", signature_secrets: &secrets };
    let url = Url::parse(url).expect("url");
    sender.post(&url, &headers, Bytes::from_static(br#"{"event":1}"#)).await
}

fn failed(outcome: Outcome) -> Failure {
    match outcome {
        Outcome::Failed(failure) => failure,
        Outcome::Delivered { .. } => panic!("delivered, expected a failure"),
    }
}

#[tokio::test]
async fn delivers_signed_to_an_allowed_address() {
    let mut hook = receiver(Some(OK.into())).await;
    let url = format!("http://127.0.0.1:{}/hook", hook.port);
    let outcome = post(&sender(&["127.0.0.0/8"]), &url).await;
    assert_eq!(outcome, Outcome::Delivered { body: Bytes::from_static(b"challenge") });
    let seen = hook.seen.recv().await.expect("a request");
    assert_eq!((seen.path.as_str(), seen.body.as_slice()), ("/hook", &br#"{"event":1}"#[..]));
    assert_eq!(seen.header("content-type"), "application/json");
    assert_eq!(seen.header("webhook-id"), "msg_1");
    assert_eq!(seen.header("x-mcp-subscription-id"), "sub_1");
    assert!(seen.header("user-agent").starts_with("mcp-fleet-webhooks/"));
    let timestamp: u64 = seen.header("webhook-timestamp").parse().expect("seconds");
    assert!(timestamp.abs_diff(unix_seconds()) < 60);
    let secret = Secret::parse(SECRET).expect("secret");
    let signature = seen.header("webhook-signature");
    assert!(sign::verify(&secret, "msg_1", timestamp, &seen.body, signature));
}

#[tokio::test]
async fn refuses_a_loopback_literal_without_connecting() {
    let hook = receiver(Some(OK.into())).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let resolver = switchable(Arc::new(Mutex::new(Vec::new())), Arc::clone(&calls));
    let sender = sender_with(&[], resolver, Duration::from_secs(5));
    for url in [format!("http://127.0.0.1:{}/hook", hook.port), format!("http://[::ffff:127.0.0.1]:{}/", hook.port)] {
        let failure = failed(post(&sender, &url).await);
        assert_eq!(failure, Failure::Refused(Refusal::Loopback));
        assert!(failure.retryable());
        assert_eq!((failure.category(), failure.label()), ("connection_refused", "refused_loopback"));
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(hook.connections.load(Ordering::SeqCst), 0);
    assert_eq!(calls.load(Ordering::SeqCst), 0, "an IP literal is not resolved");
}

#[tokio::test]
async fn checks_every_resolver_answer() {
    let mut hook = receiver(Some(OK.into())).await;
    let answer = Arc::new(Mutex::new(vec![IpAddr::from([127, 0, 0, 1])]));
    let calls = Arc::new(AtomicUsize::new(0));
    let resolver = switchable(Arc::clone(&answer), Arc::clone(&calls));
    let sender = sender_with(&["127.0.0.0/8"], resolver, Duration::from_secs(5));
    let url = format!("http://hooks.test:{}/hook", hook.port);
    assert!(matches!(post(&sender, &url).await, Outcome::Delivered { .. }));
    let seen = hook.seen.recv().await.expect("a request");
    assert_eq!(seen.header("host"), format!("hooks.test:{}", hook.port));
    // A mixed answer: only the allowed address is tried.
    *answer.lock().expect("answer lock") = vec![IpAddr::from([10, 0, 0, 7]), IpAddr::from([127, 0, 0, 1])];
    assert!(matches!(post(&sender, &url).await, Outcome::Delivered { .. }));
    // The name now points into the private network: refused before any connection.
    *answer.lock().expect("answer lock") = vec![IpAddr::from([10, 0, 0, 7])];
    assert_eq!(failed(post(&sender, &url).await), Failure::Refused(Refusal::Private));
    assert_eq!(hook.connections.load(Ordering::SeqCst), 2);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn never_follows_a_redirect() {
    let inner = receiver(Some(OK.into())).await;
    let reply =
        format!("HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{}/\r\ncontent-length: 0\r\n\r\n", inner.port);
    let outer = receiver(Some(reply)).await;
    let url = format!("http://127.0.0.1:{}/hook", outer.port);
    let failure = failed(post(&sender(&["127.0.0.0/8"]), &url).await);
    assert_eq!(failure, Failure::Redirect(302));
    assert!(failure.retryable());
    assert_eq!((failure.category(), failure.label()), ("connection_refused", "redirect"));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(inner.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn classifies_error_statuses() {
    let cases = [
        ("503 Service Unavailable", Failure::Http5xx(503), "http_5xx", true),
        ("413 Content Too Large", Failure::TooLarge, "http_4xx", false),
        ("404 Not Found", Failure::Http4xx(404), "http_4xx", true),
    ];
    for (status, expected, category, retryable) in cases {
        let reply = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
        let hook = receiver(Some(reply)).await;
        let url = format!("http://127.0.0.1:{}/", hook.port);
        let failure = failed(post(&sender(&["127.0.0.1"]), &url).await);
        assert_eq!(failure, expected);
        assert_eq!((failure.category(), failure.retryable()), (category, retryable));
    }
}

#[tokio::test]
async fn times_out_on_a_silent_receiver() {
    let hook = receiver(None).await;
    let sender = sender_with(&["127.0.0.1"], system_resolver(), Duration::from_millis(300));
    let url = format!("http://127.0.0.1:{}/", hook.port);
    let failure = failed(post(&sender, &url).await);
    assert_eq!((failure, failure.category()), (Failure::Timeout, "timeout"));
}

#[tokio::test]
async fn a_closed_port_is_connection_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("local address").port();
    drop(listener);
    let failure = failed(post(&sender(&["127.0.0.1"]), &format!("http://127.0.0.1:{port}/")).await);
    assert_eq!((failure, failure.category()), (Failure::ConnectionRefused, "connection_refused"));
}

#[tokio::test]
async fn a_peer_without_tls_is_a_tls_error() {
    let hook = receiver(Some("HTTP/1.1 400 Bad Request\r\n\r\n".into())).await;
    let url = format!("https://127.0.0.1:{}/", hook.port);
    let failure = failed(post(&sender(&["127.0.0.1"]), &url).await);
    assert_eq!((failure, failure.category()), (Failure::Tls, "tls_error"));
}

#[test]
fn labels_name_each_refusal() {
    assert_eq!(Failure::Refused(Refusal::Metadata).label(), "refused_metadata");
    assert_eq!(Failure::Refused(Refusal::LinkLocal).label(), "refused_link_local");
    assert_eq!(Failure::TooLarge.label(), "too_large");
}
