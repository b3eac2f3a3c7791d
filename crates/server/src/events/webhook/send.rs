//! One webhook delivery: a signed POST that connects only where the SSRF policy allows.
//!
//! Owns the HTTP client and its guard rails: no proxy, no redirects (a `3xx` is a failure, so
//! an allowed host cannot bounce a delivery inward), a timeout on the whole exchange, a cap on
//! the response body read, and a resolver that checks every address before reqwest may
//! connect to it ([`CheckedResolver`]). The name is resolved once, by that resolver, and the
//! connection goes to exactly the addresses it let through, so a DNS answer cannot change
//! between the check and the connect (rebinding); the `Host` header and TLS SNI still carry
//! the hostname. An IP-literal URL never reaches a resolver, so [`Sender::post`] checks it.
//!
//! The outcome is classified into the design's `lastError` categories and metric labels.
//! Retries, backoff, and which secrets sign are the caller's; the signature is `sign`'s, the
//! address policy `ssrf`'s.

use std::error::Error as StdError;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use futures_util::future::BoxFuture;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::CONTENT_TYPE;
use reqwest::{Response, Url};

use super::sign::{self, Secret};
use super::ssrf::{Network, Refusal, refusal};

/// Resolves a host name and port to socket addresses, for
/// [`Webhooks::resolver`](crate::events::Webhooks::resolver): tests (and embedders with a DNS
/// of their own) plug in an answer that changes; the system's resolver is the default. It is
/// called with port 0: the connector puts the URL's port (or the scheme's) on every address.
/// Every address it answers is checked before anything connects.
///
/// ```
/// use std::sync::Arc;
/// use mcp_fleet_server::events::{Resolver, Webhooks};
/// let resolver: Resolver = Arc::new(|_host, port| {
///     Box::pin(async move { Ok(vec![std::net::SocketAddr::from(([93, 184, 215, 14], port))]) })
/// });
/// let webhooks = Webhooks::new().resolver(resolver);
/// # drop(webhooks);
/// ```
pub type Resolver = Arc<dyn Fn(String, u16) -> BoxFuture<'static, io::Result<Vec<SocketAddr>>> + Send + Sync>;

/// The operating system's resolver (`getaddrinfo` on tokio's blocking pool).
pub(crate) fn system_resolver() -> Resolver {
    Arc::new(|host: String, port: u16| -> BoxFuture<'static, _> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host.as_str(), port)).await?.collect()) })
    })
}

/// The `User-Agent` of every delivery, so a receiver's logs say what called it.
const USER_AGENT: &str = concat!("mcp-fleet-webhooks/", env!("CARGO_PKG_VERSION"));

/// How a [`Sender`] delivers.
pub(crate) struct SendPolicy {
    /// Networks a delivery may reach even though they are not globally reachable (the
    /// operator's receivers in a private network). Empty by default: public addresses only.
    pub(crate) allowed: Vec<Network>,
    /// How host names are resolved; every answer is checked before use.
    pub(crate) resolver: Resolver,
    /// The deadline of one whole delivery: connecting, TLS, sending, and reading the answer.
    /// It is also the connect timeout, which the connector shares among a host's addresses.
    pub(crate) timeout: Duration,
    /// The most bytes of a `2xx` answer's body kept (read for the verification challenge);
    /// the rest is not read.
    pub(crate) max_response_bytes: usize,
}

/// The headers that identify and sign one delivery.
pub(crate) struct Headers<'a> {
    /// `webhook-id`: the same for every attempt of one message, so receivers can dedupe.
    pub(crate) msg_id: &'a str,
    /// `x-mcp-subscription-id`: the subscription the message belongs to.
    pub(crate) subscription_id: &'a str,
    /// The secrets `webhook-signature` is computed with: one, or two while rotating.
    pub(crate) signature_secrets: &'a [&'a Secret],
}

/// What became of one POST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The receiver answered `2xx`.
    Delivered {
        /// The start of the answer's body, at most `max_response_bytes` (what was read before
        /// the body ended or failed: the status already said the message was accepted).
        body: Bytes,
    },
    /// It did not.
    Failed(Failure),
}

/// Why a POST failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// No connection: refused, reset, unreachable, a name that does not resolve, or an
    /// answer that is not HTTP.
    ConnectionRefused,
    /// The delivery's deadline passed (connecting or waiting for the answer).
    Timeout,
    /// The TLS handshake failed (certificate, protocol, or a peer that does not speak TLS).
    Tls,
    /// A `4xx` answer other than `413`.
    Http4xx(u16),
    /// A `5xx` answer (or any status outside `2xx`–`4xx`).
    Http5xx(u16),
    /// A `3xx` answer: redirects are never followed.
    Redirect(u16),
    /// Every address of the host is one deliveries may not reach.
    Refused(Refusal),
    /// `413 Content Too Large`: the receiver will never take this message.
    TooLarge,
}

impl Failure {
    /// The design's `lastError` category: `connection_refused`, `timeout`, `tls_error`,
    /// `http_4xx` or `http_5xx`. A redirect and a refused address count as no connection.
    pub(crate) fn category(&self) -> &'static str {
        match self {
            Failure::ConnectionRefused | Failure::Redirect(_) | Failure::Refused(_) => "connection_refused",
            Failure::Timeout => "timeout",
            Failure::Tls => "tls_error",
            Failure::Http4xx(_) | Failure::TooLarge => "http_4xx",
            Failure::Http5xx(_) => "http_5xx",
        }
    }

    /// Whether another attempt may succeed. Only `413` is final; a refused address is
    /// retried because the name may resolve elsewhere later.
    pub(crate) fn retryable(&self) -> bool {
        !matches!(self, Failure::TooLarge)
    }

    /// The failure as a metrics label, finer than [`Failure::category`]: `redirect`,
    /// `too_large`, `refused_<reason>` are told apart.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Failure::ConnectionRefused => "connection_refused",
            Failure::Timeout => "timeout",
            Failure::Tls => "tls_error",
            Failure::Http4xx(_) => "http_4xx",
            Failure::Http5xx(_) => "http_5xx",
            Failure::Redirect(_) => "redirect",
            Failure::TooLarge => "too_large",
            Failure::Refused(refusal) => match refusal {
                Refusal::Loopback => "refused_loopback",
                Refusal::Private => "refused_private",
                Refusal::LinkLocal => "refused_link_local",
                Refusal::Metadata => "refused_metadata",
                Refusal::Unspecified => "refused_unspecified",
                Refusal::Shared => "refused_shared",
                Refusal::Multicast => "refused_multicast",
                Refusal::Reserved => "refused_reserved",
            },
        }
    }

    /// The failure a non-`2xx` status means.
    fn from_status(status: u16) -> Failure {
        match status {
            300..=399 => Failure::Redirect(status),
            413 => Failure::TooLarge,
            400..=499 => Failure::Http4xx(status),
            _ => Failure::Http5xx(status),
        }
    }

    /// The failure a reqwest error means: a refusal by [`CheckedResolver`] or a rustls error
    /// anywhere in its chain of causes, else a timeout, else no connection.
    fn from_error(error: &reqwest::Error) -> Failure {
        let mut cause: Option<&(dyn StdError + 'static)> = Some(error);
        while let Some(current) = cause {
            if let Some(Refused(refusal)) = current.downcast_ref::<Refused>() {
                return Failure::Refused(*refusal);
            }
            if current.is::<rustls::Error>() {
                return Failure::Tls;
            }
            cause = next_cause(current);
        }
        if error.is_timeout() { Failure::Timeout } else { Failure::ConnectionRefused }
    }
}

/// Sends webhook POSTs under one [`SendPolicy`]. Cheap to clone. No connection is kept for
/// the next POST: each one resolves its host and checks the addresses again (the design asks
/// for the check at delivery time), at the cost of a new connection per delivery.
#[derive(Debug, Clone)]
pub(crate) struct Sender {
    /// The client: no proxy, no redirects, [`CheckedResolver`] as its resolver.
    client: reqwest::Client,
    /// The policy's allow-list, for IP-literal URLs (the resolver holds the same list).
    allowed: Arc<[Network]>,
    /// See [`SendPolicy::max_response_bytes`].
    max_response_bytes: usize,
}

impl Sender {
    /// A sender under `policy`. Fails only if the TLS client cannot be built (for instance,
    /// the system's root certificates are unreadable).
    pub(crate) fn new(policy: SendPolicy) -> Result<Sender, String> {
        let allowed: Arc<[Network]> = policy.allowed.into();
        let resolver = CheckedResolver { resolver: policy.resolver, allowed: Arc::clone(&allowed) };
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(policy.timeout)
            .connect_timeout(policy.timeout)
            .user_agent(USER_AGENT)
            .dns_resolver(Arc::new(resolver))
            .pool_max_idle_per_host(0)
            .build()
            .map_err(|error| format!("cannot build the webhook HTTP client: {error}"))?;
        Ok(Sender { client, allowed, max_response_bytes: policy.max_response_bytes })
    }

    /// POSTs `body` to `url` as one attempt of a message. The timestamp and the signature
    /// are made now, so each retry carries fresh ones (Standard Webhooks receivers reject
    /// old timestamps).
    pub(crate) async fn post(&self, url: &Url, headers: &Headers<'_>, body: Bytes) -> Outcome {
        if let Some(refused) = ip_literal(url).and_then(|ip| refusal(ip, &self.allowed)) {
            return Outcome::Failed(Failure::Refused(refused));
        }
        let timestamp = unix_seconds();
        let signature = sign::signature_header(headers.signature_secrets, headers.msg_id, timestamp, &body);
        let request = self
            .client
            .post(url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header("webhook-id", headers.msg_id)
            .header("webhook-timestamp", timestamp)
            .header("webhook-signature", signature)
            .header("x-mcp-subscription-id", headers.subscription_id)
            .body(body);
        match request.send().await {
            Ok(response) => self.outcome(response).await,
            Err(error) => Outcome::Failed(Failure::from_error(&error)),
        }
    }

    /// The outcome of an answer: a failure unless `2xx`, else delivered with the start of the
    /// body. A `3xx` is never followed.
    async fn outcome(&self, mut response: Response) -> Outcome {
        let status = response.status();
        if !status.is_success() {
            return Outcome::Failed(Failure::from_status(status.as_u16()));
        }
        let mut body = BytesMut::new();
        while body.len() < self.max_response_bytes {
            match response.chunk().await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                // The status already accepted the message; a body cut short only means a
                // challenge answer will not match.
                Ok(None) | Err(_) => break,
            }
        }
        body.truncate(self.max_response_bytes);
        Outcome::Delivered { body: body.freeze() }
    }
}

/// The error under `error`. An `io::Error`'s `source()` skips the error it wraps (it is the
/// wrapped error's own source), so step into that one instead: tokio-rustls reports a TLS
/// failure as an `io::Error` around a `rustls::Error`, itself inside another `io::Error`.
fn next_cause<'a>(error: &'a (dyn StdError + 'static)) -> Option<&'a (dyn StdError + 'static)> {
    let wrapped = error.downcast_ref::<io::Error>().and_then(io::Error::get_ref);
    match wrapped {
        Some(inner) => Some(inner),
        None => error.source(),
    }
}

/// The address of an IP-literal URL (`http://10.0.0.1/`, `http://[::1]/`), which the
/// connector uses without resolving.
fn ip_literal(url: &Url) -> Option<IpAddr> {
    let host = url.host_str()?;
    let host = host.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')).unwrap_or(host);
    host.parse().ok()
}

/// Now, in Unix seconds (0 if the clock is before 1970).
fn unix_seconds() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs())
}

/// The error [`CheckedResolver`] fails with when it refused every address; found again in
/// the reqwest error's causes by [`Failure::from_error`].
#[derive(Debug, thiserror::Error)]
#[error("every address of the host is refused ({})", .0.label())]
struct Refused(Refusal);

/// reqwest's resolver: asks the policy's [`Resolver`] and hands on only the addresses
/// [`refusal`] accepts, so the connector connects to nothing else.
struct CheckedResolver {
    /// Where answers come from.
    resolver: Resolver,
    /// The policy's allow-list.
    allowed: Arc<[Network]>,
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let lookup = (self.resolver)(name.as_str().to_owned(), 0);
        let allowed = Arc::clone(&self.allowed);
        Box::pin(async move {
            let addrs = screen(lookup.await?, &allowed)?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The addresses of `answer` a delivery may connect to, with port 0 so the URL's port is
/// used. If there are none, the error is the first refusal ([`Refused`]), or "not found"
/// for an empty answer.
fn screen(answer: Vec<SocketAddr>, allowed: &[Network]) -> Result<Vec<SocketAddr>, Box<dyn StdError + Send + Sync>> {
    let mut first_refusal = None;
    let mut accepted = Vec::with_capacity(answer.len());
    for mut addr in answer {
        match refusal(addr.ip(), allowed) {
            None => {
                addr.set_port(0);
                accepted.push(addr);
            }
            Some(refused) => {
                tracing::debug!(address = %addr.ip(), reason = refused.label(), "webhook address refused");
                first_refusal.get_or_insert(refused);
            }
        }
    }
    match first_refusal {
        _ if !accepted.is_empty() => Ok(accepted),
        Some(refused) => Err(Box::new(Refused(refused))),
        None => Err(Box::new(io::Error::new(io::ErrorKind::NotFound, "the name resolved to no addresses"))),
    }
}

#[cfg(test)]
mod tests {
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
            let length =
                headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
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
        for url in [format!("http://127.0.0.1:{}/hook", hook.port), format!("http://[::ffff:127.0.0.1]:{}/", hook.port)]
        {
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
}
