//! [`ResultCache`]: the shipped interceptor — a tool's complete results kept for a while,
//! keyed by tool, arguments, catalog revision and caller.
//!
//! Keyed by the tool list's revision, a cached result never outlives the definition that
//! produced it. The tool's cache hint ([`ToolInvocation::cache_hint`], the spec's
//! `cacheScope`/`ttlMs` semantics) decides who may share an entry: a `public` result is one
//! entry for every caller; a `private` one — and one of a tool that said nothing (CACHE-6's
//! conservative default) — is keyed by the caller's authorization context (issuer and
//! subject; anonymous calls are one context), so it is never served across contexts
//! ("Caches MUST NOT be shared across authorization contexts", `CacheableResult.cacheScope`).
//! A hint's `ttlMs` shortens the cache's own ttl, and `0` ("immediately stale") keeps nothing.
//! Only complete, non-error results of first calls are kept: an `isError` result, an MRTR
//! `input_required` round and any call carrying `inputResponses` or `requestState` go
//! through. The store is a mutex over a map, held only to look up or insert (never across an
//! `.await`); when full, expired entries go first, then the oldest.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use mcp_fleet_protocol::types::{CacheScope, CallToolResult};
use tokio::time::Instant;

use super::chain::{CallAnswer, CallInterceptor, Next, ToolInvocation};
use crate::outcome::Outcome;

/// What a cached result is stored under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    tool: Arc<str>,
    /// Compact JSON of the arguments (serde_json keeps object keys sorted, so equal
    /// arguments are equal bytes).
    arguments: String,
    revision: u64,
    /// `issuer` and subject of the caller (empty for anonymous calls); `None` for a public
    /// result, which every caller shares.
    caller: Option<(Option<String>, String)>,
}

/// A kept result and when it was kept, with how long it may be served.
type Entry = (Instant, Duration, CallToolResult);

/// Caches tools' results for `ttl`, at most `capacity` of them.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use mcp_fleet_server::{HandlerOptions, intercept::ResultCache};
/// let cache = Arc::new(ResultCache::new(Duration::from_secs(30), 10_000));
/// let options = HandlerOptions::default().intercept(cache.clone());
/// # drop(options);
/// ```
pub struct ResultCache {
    ttl: Duration,
    capacity: usize,
    entries: Mutex<HashMap<Key, Entry>>,
}

impl ResultCache {
    /// A cache keeping each result for `ttl`, and at most `capacity` results.
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        ResultCache { ttl, capacity, entries: Mutex::default() }
    }

    /// Results held now (expired ones included until they are evicted).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        // A poisoned lock only means a panic mid-insert of a whole entry: the map is intact.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, key: &Key) -> Option<CallToolResult> {
        let entries = self.lock();
        entries.get(key).filter(|(at, ttl, _)| at.elapsed() < *ttl).map(|(_, _, result)| result.clone())
    }

    fn put(&self, key: Key, ttl: Duration, result: CallToolResult) {
        if self.capacity == 0 || ttl.is_zero() {
            return;
        }
        let mut entries = self.lock();
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            entries.retain(|_, (at, ttl, _)| at.elapsed() < *ttl);
            if entries.len() >= self.capacity
                && let Some(oldest) = entries.iter().min_by_key(|(_, (at, _, _))| *at).map(|(k, _)| k.clone())
            {
                entries.remove(&oldest);
            }
        }
        entries.insert(key, (Instant::now(), ttl, result));
    }

    /// How long a result of `invocation`'s tool may be served: the cache's ttl, shortened by
    /// the tool's hint (`0`: not at all).
    fn ttl_for(&self, invocation: &ToolInvocation) -> Duration {
        match invocation.cache_hint {
            Some(hint) => self.ttl.min(Duration::from_millis(hint.ttl_ms)),
            None => self.ttl,
        }
    }
}

/// The key of a call worth caching: `None` for MRTR retries.
fn key_of(invocation: &ToolInvocation) -> Option<Key> {
    let ctx = &invocation.call.ctx;
    if ctx.input_responses.is_some() || ctx.request_state.is_some() {
        return None;
    }
    let public = invocation.cache_hint.is_some_and(|hint| hint.scope == CacheScope::Public);
    let caller =
        (!public).then(|| ctx.principal.as_ref().map(|p| (p.issuer.clone(), p.id.clone())).unwrap_or_default());
    let arguments = serde_json::Value::Object(invocation.call.arguments.clone()).to_string();
    Some(Key { tool: invocation.tool.clone(), arguments, revision: invocation.revision, caller })
}

impl CallInterceptor for Arc<ResultCache> {
    fn intercept(&self, invocation: ToolInvocation, next: Next) -> BoxFuture<'static, CallAnswer> {
        let ttl = self.ttl_for(&invocation);
        let Some(key) = key_of(&invocation).filter(|_| !ttl.is_zero()) else { return next.run(invocation) };
        if let Some(hit) = self.get(&key) {
            return futures_util::future::ready(Ok(Outcome::Complete(hit))).boxed();
        }
        let cache = self.clone();
        next.run(invocation)
            .map(move |answer| {
                if let Ok(Outcome::Complete(result)) = &answer
                    && !result.is_error
                {
                    cache.put(key, ttl, result.clone());
                }
                answer
            })
            .boxed()
    }
}
