//! [`ListenBudget`]: what one listen may hold before it is acknowledged — a cap on each URI's
//! length, on the subscription bytes (its URIs and task ids) of one stream and of one principal,
//! and, when callers are
//! anonymous (no authenticator), on the streams of one client address — and, optionally, that
//! every subscribed URI names a resource of the catalog or matches one of its templates.
//!
//! Why: the router keeps every subscribed URI for as long as its stream lives (in the filter and
//! in its URI index), so a stream of 1 000 URIs of 4 KiB holds about 8 MiB, and a few dozen of
//! them from one caller fill a pod; without an authenticator one client could also take every
//! stream slot of the node. All of it is checked before the ack (LSTN-5 registers first; a
//! refusal is the listen's JSON-RPC error instead) and counted in
//! `mcp_fleet_listen_streams_refused_total{reason}`. The byte and address budgets are this
//! node's (memory is per node); the per-principal stream quota is `auth::limits`'.
//!
//! A sync struct with std mutexes held for a map update, never across `.await`; a
//! [`BudgetPermit`] returns what its stream took when the stream ends.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use http::StatusCode;
use mcp_fleet_protocol::{RpcError, SubscriptionFilter};
use serde_json::json;

use crate::context::address_key;
use crate::metrics::{ListenRefusal, Metrics};

/// The limits (set through [`HandlerOptions`](crate::HandlerOptions), which documents each
/// and its default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BudgetLimits {
    pub(crate) max_uri_bytes: usize,
    pub(crate) max_bytes_per_stream: usize,
    pub(crate) max_bytes_per_principal: usize,
    pub(crate) max_streams_per_address: usize,
    pub(crate) loopback_exempt: bool,
    pub(crate) uris_must_exist: bool,
}

impl Default for BudgetLimits {
    fn default() -> Self {
        BudgetLimits {
            max_uri_bytes: 2048,
            max_bytes_per_stream: 128 * 1024,
            max_bytes_per_principal: 4 * 1024 * 1024,
            max_streams_per_address: 1_000,
            loopback_exempt: true,
            uris_must_exist: false,
        }
    }
}

/// Who opens a listen stream, as far as its budget goes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Opener<'a> {
    /// An authenticated principal, by its limit key.
    Principal(&'a str),
    /// An anonymous caller (no authenticator) from this address, if known.
    Anonymous(Option<IpAddr>),
}

/// Subscription bytes by principal and anonymous streams by address. A cheap `Clone` handle.
#[derive(Clone)]
pub(crate) struct ListenBudget {
    inner: Arc<Inner>,
}

struct Inner {
    limits: BudgetLimits,
    metrics: Metrics,
    bytes: Mutex<HashMap<Box<str>, usize>>,
    streams: Mutex<HashMap<IpAddr, usize>>,
}

/// What one open stream took from the budget; dropping it gives it back.
pub(crate) struct BudgetPermit {
    inner: Arc<Inner>,
    taken: Taken,
}

enum Taken {
    Nothing,
    Bytes(Box<str>, usize),
    Stream(IpAddr),
}

impl std::fmt::Debug for BudgetPermit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BudgetPermit")
    }
}

impl ListenBudget {
    pub(crate) fn new(limits: BudgetLimits, metrics: Metrics) -> Self {
        let inner = Inner { limits, metrics, bytes: Mutex::default(), streams: Mutex::default() };
        ListenBudget { inner: Arc::new(inner) }
    }

    /// Count a listen refused for `refusal` and hand its `error` back.
    pub(crate) fn refuse(&self, refusal: ListenRefusal, error: RpcError) -> RpcError {
        self.inner.metrics.listen_refused(refusal);
        error
    }

    /// Admit a stream with the (honoured, deduplicated) `filter` for `opener`: its URIs and its
    /// task ids count alike against the byte budgets; `known` says whether a URI names a
    /// resource or matches a template (asked only with `uris_must_exist`).
    pub(crate) fn admit(
        &self,
        filter: &SubscriptionFilter,
        opener: Opener<'_>,
        known: impl Fn(&str) -> bool,
    ) -> Result<BudgetPermit, RpcError> {
        let limits = &self.inner.limits;
        let refuse = |refusal: ListenRefusal, error: RpcError| self.refuse(refusal, error);
        let uris = &filter.resource_subscriptions;
        if let Some(long) = uris.iter().find(|u| u.len() > limits.max_uri_bytes) {
            let message =
                format!("A subscribed URI is {} bytes long; the limit is {}", long.len(), limits.max_uri_bytes);
            return Err(refuse(ListenRefusal::UriTooLong, RpcError::invalid_params(message).in_band()));
        }
        let bytes: usize = uris.iter().chain(&filter.task_ids).map(String::len).sum();
        if bytes > limits.max_bytes_per_stream {
            let message = format!(
                "resourceSubscriptions and taskIds hold {bytes} bytes; the limit per stream is {}",
                limits.max_bytes_per_stream
            );
            return Err(refuse(ListenRefusal::StreamBytes, RpcError::invalid_params(message).in_band()));
        }
        if limits.uris_must_exist {
            let unknown: Vec<&String> = uris.iter().filter(|u| !known(u)).take(10).collect();
            if !unknown.is_empty() {
                let error = RpcError::invalid_params("Subscribed URIs must name a resource or match a template")
                    .with_data(json!({"unknownUris": unknown}))
                    .in_band();
                return Err(refuse(ListenRefusal::UnknownUri, error));
            }
        }
        let taken = match opener {
            Opener::Principal(key) => {
                self.take_bytes(key, bytes).map_err(|e| refuse(ListenRefusal::PrincipalBytes, e))?
            }
            Opener::Anonymous(Some(ip)) if !(limits.loopback_exempt && ip.is_loopback()) => {
                self.take_stream(address_key(ip)).map_err(|e| refuse(ListenRefusal::AddressLimit, e))?
            }
            Opener::Anonymous(_) => Taken::Nothing,
        };
        Ok(BudgetPermit { inner: self.inner.clone(), taken })
    }

    fn take_bytes(&self, key: &str, bytes: usize) -> Result<Taken, RpcError> {
        if bytes == 0 {
            return Ok(Taken::Nothing);
        }
        let limit = self.inner.limits.max_bytes_per_principal;
        let mut held = lock(&self.inner.bytes);
        let now = held.get(key).copied().unwrap_or(0);
        if now + bytes > limit {
            let message = format!(
                "This principal's listen streams would hold {} bytes of URIs and task ids (limit {limit})",
                now + bytes
            );
            return Err(RpcError::internal(message).with_status(StatusCode::TOO_MANY_REQUESTS));
        }
        held.insert(key.into(), now + bytes);
        Ok(Taken::Bytes(key.into(), bytes))
    }

    fn take_stream(&self, ip: IpAddr) -> Result<Taken, RpcError> {
        let limit = self.inner.limits.max_streams_per_address;
        let mut held = lock(&self.inner.streams);
        let open = held.entry(ip).or_insert(0);
        if *open >= limit {
            let message = format!("Too many open listen streams from this client address (limit {limit})");
            return Err(RpcError::internal(message).with_status(StatusCode::TOO_MANY_REQUESTS));
        }
        *open += 1;
        Ok(Taken::Stream(ip))
    }
}

impl Drop for BudgetPermit {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.taken, Taken::Nothing) {
            Taken::Nothing => {}
            Taken::Bytes(key, bytes) => release(&mut lock(&self.inner.bytes), key, bytes),
            Taken::Stream(ip) => release(&mut lock(&self.inner.streams), ip, 1),
        }
    }
}

/// Subtract `amount` from `key`'s count, removing the entry at zero (maps stay as large as
/// what is held).
fn release<K: Hash + Eq>(map: &mut HashMap<K, usize>, key: K, amount: usize) {
    if let Entry::Occupied(mut held) = map.entry(key) {
        *held.get_mut() = held.get().saturating_sub(amount);
        if *held.get() == 0 {
            held.remove();
        }
    }
}

/// Lock, ignoring poisoning: the maps hold plain counts, whole after every update.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(limits: BudgetLimits) -> ListenBudget {
        ListenBudget::new(limits, Metrics::default())
    }

    fn uris(n: usize, len: usize) -> SubscriptionFilter {
        SubscriptionFilter {
            resource_subscriptions: (0..n).map(|i| format!("{i:0len$}")).collect(),
            ..Default::default()
        }
    }

    fn nothing() -> SubscriptionFilter {
        SubscriptionFilter::default()
    }

    #[test]
    fn each_uri_and_each_stream_is_bounded_in_band() {
        let b = budget(BudgetLimits { max_uri_bytes: 8, max_bytes_per_stream: 20, ..BudgetLimits::default() });
        let long = b.admit(&uris(1, 9), Opener::Anonymous(None), |_| true).unwrap_err();
        assert_eq!((long.code, long.status), (mcp_fleet_protocol::ErrorCode::InvalidParams, StatusCode::OK));
        assert!(b.admit(&uris(3, 7), Opener::Anonymous(None), |_| true).is_err(), "21 bytes");
        assert!(b.admit(&uris(2, 8), Opener::Anonymous(None), |_| true).is_ok());
    }

    #[test]
    fn a_principals_bytes_are_shared_by_its_streams_and_given_back() {
        let b = budget(BudgetLimits { max_bytes_per_principal: 100, ..BudgetLimits::default() });
        let first = b.admit(&uris(6, 10), Opener::Principal("p"), |_| true).unwrap();
        let refused = b.admit(&uris(5, 10), Opener::Principal("p"), |_| true).unwrap_err();
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert!(b.admit(&uris(5, 10), Opener::Principal("q"), |_| true).is_ok(), "another principal");
        drop(first);
        assert!(b.admit(&uris(10, 10), Opener::Principal("p"), |_| true).is_ok());
        assert!(lock(&b.inner.bytes).get("q").is_none(), "released at zero");
    }

    #[test]
    fn task_ids_count_like_uris_against_both_byte_budgets() {
        let limits =
            BudgetLimits { max_bytes_per_stream: 100, max_bytes_per_principal: 140, ..BudgetLimits::default() };
        let b = budget(limits);
        let tasks =
            |n: usize| SubscriptionFilter { task_ids: (0..n).map(|i| format!("{i:032x}")).collect(), ..uris(1, 10) };
        let refused = b.admit(&tasks(3), Opener::Anonymous(None), |_| true).unwrap_err();
        assert!(refused.message.contains("106 bytes"), "{}", refused.message);
        let first = b.admit(&tasks(2), Opener::Principal("p"), |_| true).unwrap();
        let refused = b.admit(&tasks(2), Opener::Principal("p"), |_| true).unwrap_err();
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS, "74 + 74 bytes over 140");
        drop(first);
        assert!(b.admit(&tasks(2), Opener::Principal("p"), |_| true).is_ok());
    }

    #[test]
    fn anonymous_streams_are_counted_per_address_and_loopback_may_be_exempt() {
        let limits = BudgetLimits { max_streams_per_address: 2, ..BudgetLimits::default() };
        let b = budget(limits);
        let (a, c): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let held: Vec<_> = (0..2).map(|_| b.admit(&nothing(), Opener::Anonymous(Some(a)), |_| true).unwrap()).collect();
        assert_eq!(
            b.admit(&nothing(), Opener::Anonymous(Some(a)), |_| true).unwrap_err().status,
            StatusCode::TOO_MANY_REQUESTS
        );
        assert!(b.admit(&nothing(), Opener::Anonymous(Some(c)), |_| true).is_ok());
        drop(held);
        assert!(b.admit(&nothing(), Opener::Anonymous(Some(a)), |_| true).is_ok());
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let exempt: Vec<_> = (0..5).map(|_| b.admit(&nothing(), Opener::Anonymous(Some(local)), |_| true)).collect();
        assert!(exempt.iter().all(Result::is_ok));
        let strict = budget(BudgetLimits { loopback_exempt: false, ..limits });
        let _held: Vec<_> =
            (0..2).map(|_| strict.admit(&nothing(), Opener::Anonymous(Some(local)), |_| true)).collect();
        assert!(strict.admit(&nothing(), Opener::Anonymous(Some(local)), |_| true).is_err());
    }

    #[test]
    fn ipv6_clients_are_counted_by_their_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key("2001:db8:1:3::1".parse().unwrap()));
        assert_eq!(address_key("::ffff:10.0.0.1".parse().unwrap()), "10.0.0.1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn unknown_uris_are_refused_only_when_asked() {
        let open = budget(BudgetLimits::default());
        assert!(open.admit(&uris(1, 3), Opener::Anonymous(None), |_| false).is_ok());
        let strict = budget(BudgetLimits { uris_must_exist: true, ..BudgetLimits::default() });
        let filter = SubscriptionFilter { resource_subscriptions: vec!["a".into(), "b".into()], ..nothing() };
        let error = strict.admit(&filter, Opener::Anonymous(None), |u| u == "a").unwrap_err();
        assert_eq!(error.data, Some(json!({"unknownUris": ["b"]})));
    }
}
