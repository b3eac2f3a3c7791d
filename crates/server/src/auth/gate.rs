//! [`LimitGate`]: the per-principal limits as the service and the listen method ask for them —
//! per replica ([`PrincipalLimits`], the cheap default) or fleet-wide ([`FleetLimits`], through
//! the bus's keyspace, falling back to the replica's own count while the keyspace errs).
//!
//! Keys: an authenticated principal counts under [`Principal::limit_key`] (issuer, tenant and
//! subject: two tenants' users with one `sub` are two callers); an anonymous caller under its
//! client address ([`address_key`]), so one client cannot spend everyone's budget; an anonymous
//! caller of unknown address (a service of your own that inserts no [`ClientAddr`]) under one
//! shared key.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::fleet_limits::{FleetLimits, FleetSlot};
use super::limits::{LimitReached, PrincipalLimits, RetryAfter, StreamPermit};
use crate::context::address_key;
use crate::context::{ClientAddr, Principal};
use crate::metrics::Metrics;

/// The 429 `-32603` of a principal past its stream quota, counted as `principal_limit`.
pub(crate) fn stream_quota_error(metrics: &Metrics, reached: LimitReached) -> mcp_fleet_protocol::RpcError {
    metrics.listen_refused(crate::metrics::ListenRefusal::PrincipalLimit);
    mcp_fleet_protocol::RpcError::internal(format!(
        "Too many open listen streams for this principal (limit {})",
        reached.limit
    ))
    .with_status(http::StatusCode::TOO_MANY_REQUESTS)
}

/// Where per-principal limits (`max_streams_per_principal`, `rate_per_principal`) are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LimitScope {
    /// On each replica, in memory: no round trip, but N replicas admit up to N times the
    /// limit. The default.
    #[default]
    Replica,
    /// Across the fleet, in the bus's keyspace (memory, Redis, NATS JetStream): one keyspace
    /// round trip per request when a rate is set, an increment plus one read per other member
    /// when a principal opens a listen stream. A crashed node's streams stop counting once its
    /// membership expires ([`FLEET_STREAM_LEASE`] at most). Falls back to the replica's own
    /// count while the keyspace errs, and on a bus without one (NATS core mode).
    Fleet,
}

/// How long the streams of a node that stopped renewing its counters keep counting.
pub const FLEET_STREAM_LEASE: Duration = Duration::from_secs(30);

/// A listen stream's slot in its principal's quota; dropping it gives the slot back.
#[derive(Debug)]
pub(crate) enum StreamSlot {
    /// Counted on this replica.
    Replica(#[allow(dead_code)] StreamPermit),
    /// Counted in the fleet's keyspace.
    Fleet(#[allow(dead_code)] FleetSlot),
}

/// A fleet-wide slot taken before the method ran, handed to it as a request extension (the
/// extension must be `Clone`; the slot is taken out once).
#[derive(Clone, Debug, Default)]
pub(crate) struct ReservedStream(Arc<Mutex<Option<StreamSlot>>>);

impl ReservedStream {
    /// An extension holding `slot`.
    pub(crate) fn holding(slot: StreamSlot) -> Self {
        ReservedStream(Arc::new(Mutex::new(Some(slot))))
    }

    /// The slot, once.
    pub(crate) fn take(&self) -> Option<StreamSlot> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// The per-principal limits of one handler.
#[derive(Clone)]
pub(crate) struct LimitGate {
    local: PrincipalLimits,
    fleet: Option<FleetLimits>,
}

impl LimitGate {
    pub(crate) fn new(local: PrincipalLimits, fleet: Option<FleetLimits>) -> Self {
        LimitGate { local, fleet }
    }

    /// The key a request counts under (see the module docs).
    pub(crate) fn key(principal: Option<&Principal>, parts: &http::request::Parts) -> String {
        match (principal, parts.extensions.get::<ClientAddr>()) {
            (Some(principal), _) => principal.limit_key(),
            (None, Some(addr)) => format!("address:{}", address_key(addr.0.ip())),
            (None, None) => "anonymous".to_owned(),
        }
    }

    /// Whether requests are counted at all: a fleet-wide limit, or a rate on this replica.
    /// When not, there is no key to build per request ([`LimitGate::key`] formats one).
    pub(crate) fn counts_requests(&self) -> bool {
        self.fleet.is_some() || self.local.limits_rate()
    }

    /// Take `count` request tokens for `key` (one per request; a 2025-03-26 batch takes one per
    /// message), or say how long to wait.
    pub(crate) async fn check_request(&self, key: &str, count: u32) -> Result<(), RetryAfter> {
        if let Some(fleet) = &self.fleet {
            match fleet.check_requests(key, count).await {
                Ok(verdict) => return verdict,
                Err(error) => tracing::warn!(%error, "fleet-wide rate limit unavailable; counting on this replica"),
            }
        }
        self.local.check_requests(Some(key), count)
    }

    /// In fleet mode, take `key`'s stream slot in the fleet; `Ok(None)` in replica mode (or
    /// while the keyspace errs): the method takes a slot on this replica instead.
    pub(crate) async fn reserve_stream(&self, key: &str) -> Result<Option<StreamSlot>, LimitReached> {
        let Some(fleet) = &self.fleet else { return Ok(None) };
        match fleet.acquire_stream(key).await {
            Ok(slot) => slot.map(|s| Some(StreamSlot::Fleet(s))),
            Err(error) => {
                tracing::warn!(%error, "fleet-wide stream quota unavailable; counting on this replica");
                Ok(None)
            }
        }
    }

    /// Take `key`'s stream slot on this replica.
    pub(crate) fn acquire_local(&self, key: &str) -> Result<StreamSlot, LimitReached> {
        self.local.acquire_stream(Some(key)).map(StreamSlot::Replica)
    }
}
