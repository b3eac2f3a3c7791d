//! The issuer's signing keys: fetched from its JWKS (the configured URL, or the `jwks_uri` of
//! its authorization-server metadata), cached, and refetched when a token names a key the
//! cache does not hold (the issuer rotated its keys).
//!
//! Fetches are rate-limited: at most one per `refetch_interval` (default 30 s), failed ones
//! included, so tokens with made-up `kid`s or an issuer outage cannot turn into one fetch per
//! request. Concurrent misses share one fetch. A fetch runs in its own task, so a caller that
//! goes away does not cancel it for the others. A failed fetch keeps the keys already held;
//! a successful one replaces them all (a key the issuer withdrew stops being trusted), and a
//! set older than the refresh age is refreshed in the background. A set older than the hard
//! maximum age (no fetch succeeded for that long) is not used at all: tokens are refused until
//! the issuer answers again — fail closed, rather than trusting keys it may have withdrawn.

mod keyset;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};
use reqwest::{Client, Url};
use tokio::time::Instant;

pub(crate) use keyset::KeySet;

use crate::bearer::config::is_fetchable;

/// Largest JWKS or metadata document accepted.
const MAX_DOCUMENT_BYTES: usize = 512 * 1024;

/// A JWKS or metadata fetch that failed. Messages name the URL and the cause, never a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwksError {
    /// The request failed (connect, TLS, timeout, redirect refused).
    #[error("fetching {url}: {reason}")]
    Fetch {
        /// What was fetched.
        url: String,
        /// Why it failed.
        reason: String,
    },
    /// A status other than 2xx.
    #[error("fetching {url}: HTTP {status}")]
    Status {
        /// What was fetched.
        url: String,
        /// The status code.
        status: u16,
    },
    /// Not the JSON document expected, or larger than the limit.
    #[error("{url}: {reason}")]
    Document {
        /// What was fetched.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No metadata document of the issuer could be used (RFC 8414 §3, OIDC Discovery §4).
    #[error("no usable authorization-server metadata for issuer {issuer}")]
    Discovery {
        /// The configured issuer.
        issuer: String,
    },
    /// No fetch now: one was attempted less than the refetch interval ago, and no keys are held.
    #[error("a JWKS fetch was attempted less than the refetch interval ago")]
    RateLimited,
    /// The fetch task panicked or was cancelled (runtime shutting down).
    #[error("the JWKS fetch task ended abnormally")]
    Aborted,
}

/// Where the JWKS comes from.
#[derive(Debug, Clone)]
pub(crate) enum JwksSource {
    /// A configured URL.
    Url(Url),
    /// The `jwks_uri` of the issuer's metadata.
    Discover {
        /// The issuer identifier, exactly as configured.
        issuer: String,
    },
}

/// How old a fetched key set may get: past `refresh` it is refetched in the background, past
/// `hard` it is no longer used.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyAges {
    pub(crate) refresh: Duration,
    pub(crate) hard: Duration,
}

/// The keys held, and when they were fetched.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) keys: KeySet,
    fetched_at: Instant,
}

#[cfg(test)]
impl Loaded {
    /// A key set fetched now, for tests.
    pub(crate) fn now(keys: KeySet) -> Arc<Loaded> {
        Arc::new(Loaded { keys, fetched_at: Instant::now() })
    }
}

type SharedFetch = Shared<BoxFuture<'static, Result<Arc<Loaded>, JwksError>>>;

/// The key cache. A cheap `Clone` handle around an `Arc`.
#[derive(Debug, Clone)]
pub(crate) struct JwksCache {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    source: JwksSource,
    client: Client,
    refetch_interval: Duration,
    ages: KeyAges,
    /// The current key set; swapped whole by a successful fetch, read lock-free per request.
    keys: ArcSwapOption<Loaded>,
    /// The rate limit and the fetch in flight. A std mutex held for a few instructions, never
    /// across `.await` (waiters await a clone of the shared fetch after releasing it).
    fetch: Mutex<FetchState>,
    /// The `jwks_uri` found by discovery, forgotten when a fetch from it fails.
    discovered: Mutex<Option<Url>>,
    /// JWKS fetch attempts since start.
    fetches: AtomicU64,
}

#[derive(Debug, Default)]
struct FetchState {
    last_attempt: Option<Instant>,
    in_flight: Option<SharedFetch>,
}

/// Why no key was found for a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeyError {
    /// No key with that `kid` (or no unique key for a token without one): worth a refetch; the
    /// final answer if still so after one.
    Unknown,
    /// The key exists but cannot verify this algorithm (wrong type, curve or declared `alg`).
    Mismatch,
    /// No key set has been fetched yet and fetching failed.
    Unavailable,
}

impl JwksCache {
    pub(crate) fn new(source: JwksSource, client: Client, refetch_interval: Duration, ages: KeyAges) -> Self {
        JwksCache {
            inner: Arc::new(Inner {
                source,
                client,
                refetch_interval,
                ages,
                keys: ArcSwapOption::empty(),
                fetch: Mutex::new(FetchState::default()),
                discovered: Mutex::new(None),
                fetches: AtomicU64::new(0),
            }),
        }
    }

    /// The key to verify a token signed with `alg` by the key `kid`, and the key set it is of
    /// (a token verified with it is trusted while that set [is current](Self::is_current)).
    pub(crate) async fn key_for(
        &self,
        kid: Option<&str>,
        alg: jsonwebtoken::Algorithm,
    ) -> Result<(Arc<jsonwebtoken::DecodingKey>, Arc<Loaded>), KeyError> {
        if let Some(loaded) = self.usable_keys() {
            let found = loaded.keys.find(kid, alg).map(|key| (key, loaded.clone()));
            if found.is_ok() && loaded.fetched_at.elapsed() >= self.inner.ages.refresh {
                // Fire and forget: the fetch runs in its own task; this request goes on with
                // the keys it has.
                drop(self.join_or_start_fetch());
            }
            if !matches!(found, Err(KeyError::Unknown)) {
                return found;
            }
        }
        let fetched = match self.join_or_start_fetch() {
            Some(fetch) => fetch.await.ok(),
            None => None,
        };
        // Whether this caller fetched, joined, or was rate-limited: look at the newest set.
        let loaded = fetched.or_else(|| self.usable_keys()).ok_or(KeyError::Unavailable)?;
        loaded.keys.find(kid, alg).map(|key| (key, loaded))
    }

    /// Whether `keys` is still the key set in use: not replaced by a fetch since (a key the
    /// issuer withdrew is gone from the new one), nor past the hard maximum age. Past the
    /// refresh age it starts the background refetch, as [`key_for`](Self::key_for) does, so
    /// remembered tokens do not keep an old key set from being refreshed.
    pub(crate) fn is_current(&self, keys: &Arc<Loaded>) -> bool {
        let Some(current) = self.usable_keys().filter(|current| Arc::ptr_eq(current, keys)) else { return false };
        if current.fetched_at.elapsed() >= self.inner.ages.refresh {
            // Fire and forget, rate-limited like every fetch.
            drop(self.join_or_start_fetch());
        }
        true
    }

    /// The key set held, unless it is past the hard maximum age (then none is: fail closed).
    fn usable_keys(&self) -> Option<Arc<Loaded>> {
        let loaded = self.inner.keys.load_full()?;
        if loaded.fetched_at.elapsed() < self.inner.ages.hard {
            return Some(loaded);
        }
        tracing::debug!(age = ?loaded.fetched_at.elapsed(), "the cached JWKS is past jwks_hard_max_age");
        None
    }

    /// Fetch the keys now (at startup, say), unless a fetch is in flight (then wait for it) or
    /// the rate limit forbids it (then report the keys held, or `RateLimited` if none).
    pub(crate) async fn refresh(&self) -> Result<usize, JwksError> {
        match self.join_or_start_fetch() {
            Some(fetch) => fetch.await.map(|loaded| loaded.keys.len()),
            None => self.usable_keys().map(|l| l.keys.len()).ok_or(JwksError::RateLimited),
        }
    }

    /// JWKS fetch attempts since start.
    pub(crate) fn fetches(&self) -> u64 {
        self.inner.fetches.load(Ordering::Relaxed)
    }

    /// The fetch in flight, or a new one if the rate limit allows; `None` when it does not.
    fn join_or_start_fetch(&self) -> Option<SharedFetch> {
        let mut state = lock(&self.inner.fetch);
        if let Some(fetch) = &state.in_flight
            && fetch.peek().is_none()
        {
            return Some(fetch.clone());
        }
        let now = Instant::now();
        if state.last_attempt.is_some_and(|last| now.duration_since(last) < self.inner.refetch_interval) {
            return None;
        }
        state.last_attempt = Some(now);
        let fetch = self.spawn_fetch();
        state.in_flight = Some(fetch.clone());
        Some(fetch)
    }

    /// Start a fetch in its own task (inline if there is no runtime, driven by its waiters).
    fn spawn_fetch(&self) -> SharedFetch {
        let inner = self.inner.clone();
        let run = async move { inner.fetch_and_store().await };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let task = runtime.spawn(run);
                async move { task.await.unwrap_or(Err(JwksError::Aborted)) }.boxed().shared()
            }
            Err(_) => run.boxed().shared(),
        }
    }
}

impl Inner {
    async fn fetch_and_store(&self) -> Result<Arc<Loaded>, JwksError> {
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let result = self.fetch_keys().await;
        match &result {
            Ok(loaded) => {
                tracing::debug!(keys = loaded.keys.len(), "fetched the issuer's JWKS");
                self.keys.store(Some(loaded.clone()));
            }
            Err(error) if self.keys.load().as_ref().is_some_and(|l| l.fetched_at.elapsed() >= self.ages.hard) => {
                tracing::warn!(%error, "JWKS fetch failed and the cached keys are past jwks_hard_max_age: refusing tokens");
                *lock(&self.discovered) = None;
            }
            Err(error) => {
                tracing::warn!(%error, "JWKS fetch failed; keeping the keys already held");
                *lock(&self.discovered) = None;
            }
        }
        result
    }

    async fn fetch_keys(&self) -> Result<Arc<Loaded>, JwksError> {
        let url = self.jwks_url().await?;
        let body = get_document(&self.client, &url).await?;
        let keys = KeySet::from_jwks(&body).map_err(|reason| JwksError::Document { url: url.to_string(), reason })?;
        if keys.is_empty() {
            tracing::warn!(%url, "the issuer's JWKS holds no usable signing key");
        }
        Ok(Arc::new(Loaded { keys, fetched_at: Instant::now() }))
    }

    async fn jwks_url(&self) -> Result<Url, JwksError> {
        let issuer = match &self.source {
            JwksSource::Url(url) => return Ok(url.clone()),
            JwksSource::Discover { issuer } => issuer,
        };
        if let Some(url) = lock(&self.discovered).clone() {
            return Ok(url);
        }
        let url = discover_jwks_url(&self.client, issuer).await?;
        *lock(&self.discovered) = Some(url.clone());
        Ok(url)
    }
}

/// The metadata URLs to try for `issuer`, in MCP's order (authorization, "Authorization
/// Server Metadata Discovery"): with a path, RFC 8414 path insertion, then OIDC path
/// insertion, then OIDC path appending; without one, RFC 8414 then OIDC. A terminating `/` is
/// removed first (RFC 8414 §3.1).
pub(crate) fn metadata_urls(issuer: &Url) -> Vec<String> {
    let origin = issuer.origin().ascii_serialization();
    let path = issuer.path().trim_end_matches('/');
    let mut urls = vec![format!("{origin}/.well-known/oauth-authorization-server{path}")];
    urls.push(format!("{origin}/.well-known/openid-configuration{path}"));
    if !path.is_empty() {
        urls.push(format!("{origin}{path}/.well-known/openid-configuration"));
    }
    urls
}

/// The `jwks_uri` of the first metadata document whose `issuer` is identical to ours (RFC
/// 8414 §3.3 / OIDC Discovery §4.3: otherwise the document MUST NOT be used).
async fn discover_jwks_url(client: &Client, issuer: &str) -> Result<Url, JwksError> {
    let discovery_failed = || JwksError::Discovery { issuer: issuer.to_owned() };
    let issuer_url = Url::parse(issuer).map_err(|_| discovery_failed())?;
    for candidate in metadata_urls(&issuer_url) {
        let Ok(url) = Url::parse(&candidate) else { continue };
        let document = match get_document(client, &url).await {
            Ok(body) => body,
            Err(error) => {
                tracing::debug!(%error, "authorization-server metadata not found here");
                continue;
            }
        };
        match jwks_uri_of(&document, issuer) {
            Ok(jwks_uri) => return Ok(jwks_uri),
            Err(reason) => tracing::warn!(%url, reason, "authorization-server metadata ignored"),
        }
    }
    Err(discovery_failed())
}

/// The `jwks_uri` of a metadata document, if it is for `issuer` and the URI is fetchable.
fn jwks_uri_of(document: &[u8], issuer: &str) -> Result<Url, &'static str> {
    #[derive(serde::Deserialize)]
    struct Metadata {
        issuer: String,
        jwks_uri: Option<String>,
    }
    let metadata: Metadata = serde_json::from_slice(document).map_err(|_| "not a metadata document")?;
    if metadata.issuer != issuer {
        return Err("its issuer differs from the configured one");
    }
    let jwks_uri = metadata.jwks_uri.ok_or("no jwks_uri")?;
    let url = Url::parse(&jwks_uri).map_err(|_| "jwks_uri is not a URL")?;
    is_fetchable(&url).then_some(url).ok_or("jwks_uri is not https")
}

/// GET `url`, expecting 2xx and at most [`MAX_DOCUMENT_BYTES`].
async fn get_document(client: &Client, url: &Url) -> Result<Vec<u8>, JwksError> {
    let fetch_error =
        |e: reqwest::Error| JwksError::Fetch { url: url.to_string(), reason: e.without_url().to_string() };
    let mut response =
        client.get(url.clone()).header(http::header::ACCEPT, "application/json").send().await.map_err(fetch_error)?;
    let status = response.status();
    if !status.is_success() {
        return Err(JwksError::Status { url: url.to_string(), status: status.as_u16() });
    }
    let too_large =
        || JwksError::Document { url: url.to_string(), reason: format!("larger than {MAX_DOCUMENT_BYTES} bytes") };
    if response.content_length().is_some_and(|len| len > MAX_DOCUMENT_BYTES as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(fetch_error)? {
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Lock, ignoring poisoning: the guarded values (an instant, a URL, a future handle) are
/// always whole.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
