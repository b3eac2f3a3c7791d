//! [`Era2025Options`]: how a handler serves 2025-era clients, each setting with its default.

use std::time::Duration;

/// How 2025-era clients are served (see [`HandlerOptions::era2025`](crate::HandlerOptions::era2025)).
///
/// ```
/// use std::time::Duration;
/// use mcp_fleet_server::{HandlerOptions, options::Era2025Options};
/// let options = HandlerOptions::default()
///     .era2025(Era2025Options::default().session_ttl(Duration::from_secs(600)).max_streams(2_000));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Era2025Options {
    pub(crate) enabled: bool,
    pub(crate) sessions: bool,
    pub(crate) session_ttl: Duration,
    pub(crate) server_request_timeout: Duration,
    pub(crate) max_streams: usize,
    pub(crate) max_sessions_per_principal: usize,
    pub(crate) replay_events: usize,
    pub(crate) max_batch_messages: usize,
    pub(crate) max_sessions_per_address: usize,
    pub(crate) max_capabilities_bytes: usize,
    pub(crate) max_subscriptions_per_session: usize,
    pub(crate) session_cache_for: Duration,
}

impl Default for Era2025Options {
    fn default() -> Self {
        Era2025Options {
            enabled: true,
            sessions: true,
            session_ttl: Duration::from_secs(30 * 60),
            server_request_timeout: Duration::from_secs(300),
            max_streams: 10_000,
            max_sessions_per_principal: 100,
            replay_events: 4096,
            max_batch_messages: 64,
            max_sessions_per_address: 1_000,
            max_capabilities_bytes: 16 * 1024,
            max_subscriptions_per_session: 1_000,
            session_cache_for: Duration::ZERO,
        }
    }
}

impl Era2025Options {
    /// Refuse 2025-era traffic altogether (`-32022` naming the 2026 version), as a modern-only
    /// server does. Default: served.
    pub fn disabled() -> Self {
        Era2025Options { enabled: false, ..Self::default() }
    }

    /// Whether `initialize` opens a session in the fleet (the default). Without sessions every
    /// POST is served alone (version from its header, no client capabilities, no log level),
    /// GET and DELETE answer 405, and handlers cannot ask the client for input.
    pub fn sessions(mut self, on: bool) -> Self {
        self.sessions = on;
        self
    }

    /// How long an unused session lives (each request, and an open GET stream, renews it).
    /// Default 30 minutes.
    pub fn session_ttl(mut self, ttl: Duration) -> Self {
        self.session_ttl = ttl;
        self
    }

    /// How long a call waits for the client's answer to a sampling, elicitation or roots
    /// request before it fails. Default 5 minutes (elicitation waits for a person).
    pub fn server_request_timeout(mut self, timeout: Duration) -> Self {
        self.server_request_timeout = timeout;
        self
    }

    /// Most open GET streams on this node; past it a GET gets 503. Default 10 000.
    pub fn max_streams(mut self, streams: usize) -> Self {
        self.max_streams = streams;
        self
    }

    /// Most sessions one authenticated principal may hold across the fleet; past it
    /// `initialize` gets 429. Only live sessions count: one ended with DELETE, or expired
    /// unused (one session TTL after its last request), gives its slot back. Default 100.
    pub fn max_sessions_per_principal(mut self, sessions: usize) -> Self {
        self.max_sessions_per_principal = sessions;
        self
    }

    /// How many recent change events each node keeps for GET streams resumed with
    /// `Last-Event-ID` (on any replica): a resume within them replays what the client missed,
    /// an older one gets the gap invalidation. Default 4 096 (a few hundred KiB).
    pub fn replay_events(mut self, events: usize) -> Self {
        self.replay_events = events;
        self
    }

    /// Most messages in one 2025-03-26 JSON-RPC batch; a larger batch gets 413 with `-32600`
    /// before any of it is served. Each message of a batch also counts as one request against
    /// the per-principal rate limit. Default 64.
    pub fn max_batch_messages(mut self, messages: usize) -> Self {
        self.max_batch_messages = messages;
        self
    }

    /// Most sessions one client address may hold across the fleet when callers are anonymous
    /// (no authenticator; IPv6 counted by /64, loopback exempt with
    /// [`loopback_exempt_from_address_limit`](crate::HandlerOptions::loopback_exempt_from_address_limit));
    /// past it `initialize` gets 429. Behind a proxy every client has the proxy's address:
    /// raise it, or authenticate. Default 1 000.
    pub fn max_sessions_per_address(mut self, sessions: usize) -> Self {
        self.max_sessions_per_address = sessions;
        self
    }

    /// Largest `capabilities` plus `clientInfo` an `initialize` may carry, in bytes of JSON
    /// (the session record keeps them for the session's life, in the bus); past it `-32602`
    /// with 400. Default 16 KiB.
    pub fn max_capabilities_bytes(mut self, bytes: usize) -> Self {
        self.max_capabilities_bytes = bytes;
        self
    }

    /// Most resources one session may follow with `resources/subscribe` (each URI at most
    /// [`max_uri_bytes`](crate::HandlerOptions::max_uri_bytes) long); past it `-32602` in
    /// band. Default 1 000, as a listen's `resourceSubscriptions`.
    pub fn max_subscriptions_per_session(mut self, subscriptions: usize) -> Self {
        self.max_subscriptions_per_session = subscriptions;
        self
    }

    /// How long a node serves a session record it read without reading it again (default
    /// zero: read for every request, every change exact across replicas). A session ended or (un)subscribed elsewhere is
    /// dropped from it as soon as the bus says so; other changes made on another replica (a
    /// log level) show here within this window. On Redis each read is a round trip, which a
    /// busy session otherwise pays per request.
    ///
    /// ```
    /// use std::time::Duration;
    /// let era = mcp_fleet_server::options::Era2025Options::default().session_cache_for(Duration::from_millis(500));
    /// # drop(era);
    /// ```
    pub fn session_cache_for(mut self, window: Duration) -> Self {
        self.session_cache_for = window;
        self
    }

    pub(crate) fn validate(&self) -> Result<(), &'static str> {
        // A keyspace refuses a TTL past `MAX_TTL`, which opening the session store would take
        // for a bus without keyspaces and so serve the era without sessions, without a word.
        if self.session_ttl > mcp_fleet_bus::MAX_TTL || self.server_request_timeout > mcp_fleet_bus::MAX_TTL / 2 {
            return Err("legacy session_ttl must be at most a year, server_request_timeout at most half a year");
        }
        if self.session_ttl < Duration::from_secs(1)
            || self.server_request_timeout.is_zero()
            || self.max_streams == 0
            || self.max_batch_messages == 0
        {
            return Err(
                "legacy session_ttl must be at least 1 s; server_request_timeout, max_streams and max_batch_messages positive",
            );
        }
        if self.max_sessions_per_principal == 0
            || self.max_sessions_per_address == 0
            || self.max_capabilities_bytes == 0
            || self.max_subscriptions_per_session == 0
        {
            return Err(
                "legacy max_sessions_per_principal, max_sessions_per_address, max_capabilities_bytes and max_subscriptions_per_session must be positive",
            );
        }
        Ok(())
    }
}
