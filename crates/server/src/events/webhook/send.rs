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
mod tests;
