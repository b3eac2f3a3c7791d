//! [`Webhooks`]: the webhook mode's settings — TTLs granted, limits, which callbacks are
//! allowed, how deliveries are retried, leased and suspended.

use std::time::Duration;

use super::send::Resolver;
use super::ssrf::Network;

/// Default TTL granted when the client suggests none ([`Webhooks::ttl`]).
pub const DEFAULT_TTL: Duration = Duration::from_secs(10 * 60);
/// Default longest TTL granted ([`Webhooks::ttl`]).
pub const DEFAULT_MAX_TTL: Duration = Duration::from_secs(60 * 60);
/// Default shortest TTL granted, whatever the client suggests ([`Webhooks::ttl`]).
pub const DEFAULT_MIN_TTL: Duration = Duration::from_secs(10);
/// Default most webhook subscriptions per principal ([`Webhooks::max_per_principal`]).
pub const DEFAULT_MAX_PER_PRINCIPAL: usize = 100;
/// Default most webhook subscriptions in the fleet ([`Webhooks::max_subscriptions`]).
pub const DEFAULT_MAX_SUBSCRIPTIONS: usize = 10_000;

/// The webhook mode (`events/subscribe`), given to
/// [`Events::webhooks`](crate::events::Events::webhooks). Every event type is then delivered
/// by webhook too.
///
/// Callbacks must be `https` and, at every delivery, resolve to globally routable addresses
/// only (no loopback, private, link-local or metadata address; the address checked is the one
/// connected to; redirects are never followed). Before the first delivery to a principal's
/// URL the endpoint must echo a verification challenge, unless the URL is
/// [trusted](Webhooks::trust_url_prefix).
///
/// ```
/// use std::time::Duration;
/// use mcp_fleet_server::events::{Events, Webhooks};
/// let webhooks = Webhooks::new()
///     .ttl(Duration::from_secs(60), Duration::from_secs(600), Duration::from_secs(3600))
///     .max_per_principal(20);
/// let events = Events::new().webhooks(webhooks);
/// # drop(events);
/// ```
#[derive(Clone)]
pub struct Webhooks {
    pub(crate) min_ttl: Duration,
    pub(crate) default_ttl: Duration,
    pub(crate) max_ttl: Duration,
    pub(crate) max_per_principal: usize,
    pub(crate) max_subscriptions: usize,
    pub(crate) allow_http: bool,
    pub(crate) allowed_networks: Vec<Network>,
    pub(crate) trusted_prefixes: Vec<String>,
    pub(crate) resolver: Option<Resolver>,
    pub(crate) timeout: Duration,
    pub(crate) retry: (Duration, Duration),
    pub(crate) suspend_after: Duration,
    pub(crate) give_up_after: Duration,
    pub(crate) lease: Duration,
    pub(crate) refresh_every: Duration,
    pub(crate) max_following: usize,
    pub(crate) max_concurrent: usize,
    pub(crate) rotation_grace: Duration,
}

impl Default for Webhooks {
    fn default() -> Self {
        Webhooks {
            min_ttl: DEFAULT_MIN_TTL,
            default_ttl: DEFAULT_TTL,
            max_ttl: DEFAULT_MAX_TTL,
            max_per_principal: DEFAULT_MAX_PER_PRINCIPAL,
            max_subscriptions: DEFAULT_MAX_SUBSCRIPTIONS,
            allow_http: false,
            allowed_networks: Vec::new(),
            trusted_prefixes: Vec::new(),
            resolver: None,
            timeout: Duration::from_secs(10),
            retry: (Duration::from_millis(500), Duration::from_secs(30)),
            suspend_after: Duration::from_secs(5 * 60),
            give_up_after: Duration::from_secs(60 * 60),
            lease: Duration::from_secs(10),
            refresh_every: Duration::from_secs(2),
            max_following: 100_000,
            max_concurrent: 256,
            rotation_grace: Duration::from_secs(5 * 60),
        }
    }
}

impl Webhooks {
    /// Every setting at its default.
    pub fn new() -> Webhooks {
        Webhooks::default()
    }

    /// The TTLs granted: a suggestion is clamped to `[min, max]`, no suggestion gets
    /// `default` (also clamped). No expiry (`ttlMs: null`) is never granted: it gets `max`.
    pub fn ttl(mut self, min: Duration, default: Duration, max: Duration) -> Webhooks {
        self.max_ttl = max.clamp(Duration::from_millis(1), mcp_fleet_bus::MAX_TTL / 2);
        self.min_ttl = min.min(self.max_ttl);
        self.default_ttl = default.clamp(self.min_ttl, self.max_ttl);
        self
    }

    /// Most live subscriptions of one principal (default [`DEFAULT_MAX_PER_PRINCIPAL`]); one
    /// more is refused with `-32013`.
    pub fn max_per_principal(mut self, max: usize) -> Webhooks {
        self.max_per_principal = max;
        self
    }

    /// Most live subscriptions in the fleet (default [`DEFAULT_MAX_SUBSCRIPTIONS`]).
    pub fn max_subscriptions(mut self, max: usize) -> Webhooks {
        self.max_subscriptions = max;
        self
    }

    /// Accept `http://` callbacks (tests, a private network behind TLS termination); off by
    /// default, as the design requires `https`.
    pub fn allow_http(mut self, allow: bool) -> Webhooks {
        self.allow_http = allow;
        self
    }

    /// Let deliveries connect to addresses in `network` although they are not globally
    /// routable (a private deployment's own receivers, tests on loopback).
    pub fn allow_network(mut self, network: Network) -> Webhooks {
        self.allowed_networks.push(network);
        self
    }

    /// Callback URLs starting with `prefix` need no verification handshake (the operator
    /// vouches for them). The address rules still apply at every delivery.
    pub fn trust_url_prefix(mut self, prefix: impl Into<String>) -> Webhooks {
        self.trusted_prefixes.push(prefix.into());
        self
    }

    /// Resolve callback hosts with `resolver` instead of the system's (tests; a DNS of one's
    /// own). Its answers are checked like the system's.
    pub fn resolver(mut self, resolver: Resolver) -> Webhooks {
        self.resolver = Some(resolver);
        self
    }

    /// Longest one POST may take, connecting included (default 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Webhooks {
        self.timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// A failed delivery is retried after `first`, doubling up to `max` (defaults 500 ms and
    /// 30 s).
    pub fn retry_backoff(mut self, first: Duration, max: Duration) -> Webhooks {
        let first = first.max(Duration::from_millis(1));
        self.retry = (first, max.max(first));
        self
    }

    /// After failing for this long without a success, a subscription's deliveries are suspended
    /// until its next refresh (default 5 min).
    pub fn suspend_after(mut self, after: Duration) -> Webhooks {
        self.suspend_after = after;
        self
    }

    /// A delivery still failing this long after its occurrence is given up (default 1 h).
    pub fn give_up_after(mut self, after: Duration) -> Webhooks {
        self.give_up_after = after;
        self
    }

    /// How long a replica's claim on a delivery lasts unrenewed (default 10 s): a replica that
    /// dies holding it is replaced by another within about twice this.
    pub fn lease(mut self, lease: Duration) -> Webhooks {
        self.lease = lease.max(Duration::from_millis(100));
        self
    }

    /// How often each node reloads the fleet's subscriptions (default 2 s).
    pub fn refresh_every(mut self, every: Duration) -> Webhooks {
        self.refresh_every = every.max(Duration::from_millis(10));
        self
    }

    /// Most deliveries one node follows at once, its own and the ones it watches (default
    /// 100,000); past it, occurrences are left to the other replicas and counted.
    pub fn max_following(mut self, max: usize) -> Webhooks {
        self.max_following = max.max(1);
        self
    }

    /// Most POSTs one node has in flight (default 256).
    pub fn max_concurrent(mut self, max: usize) -> Webhooks {
        self.max_concurrent = max.max(1);
        self
    }

    /// After a secret is replaced, deliveries are signed with both for this long (default
    /// 5 min).
    pub fn rotation_grace(mut self, grace: Duration) -> Webhooks {
        self.rotation_grace = grace;
        self
    }

    /// The TTL granted for a suggestion (`None`: none given; `Some(None)`: no expiry asked).
    pub(crate) fn grant(&self, suggested: Option<Option<u64>>) -> Duration {
        match suggested {
            None => self.default_ttl,
            Some(None) => self.max_ttl,
            Some(Some(ms)) => Duration::from_millis(ms).clamp(self.min_ttl, self.max_ttl),
        }
    }

    /// Whether `url` is trusted (no verification handshake).
    pub(crate) fn trusted(&self, url: &str) -> bool {
        self.trusted_prefixes.iter().any(|prefix| url.starts_with(prefix.as_str()))
    }
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhooks")
            .field("ttl", &(self.min_ttl, self.default_ttl, self.max_ttl))
            .field("max_per_principal", &self.max_per_principal)
            .field("allow_http", &self.allow_http)
            .field("allowed_networks", &self.allowed_networks)
            .field("trusted_prefixes", &self.trusted_prefixes)
            .finish_non_exhaustive()
    }
}
