//! [`HandlerOptions`]: everything a handler can be told, each with a production default, set
//! by chaining (`HandlerOptions::default().bus(bus).page_size(50)`) and checked once by
//! [`create_mcp_handler`](crate::create_mcp_handler).

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::ServerEventBus;

use super::Era2025Options;
use crate::auth::{Authenticator, LimitScope, PrincipalLimits, ProtectedResourceMetadata, Rate};
use crate::error::ServerError;
use crate::fleet::CatalogAnnouncePolicy;
use crate::identity::ExecutionIdentity;
use crate::listen::ListenLimits;
use crate::tasks::TaskOptions;

/// When a call's response is JSON or SSE (STRM-3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResponseMode {
    /// JSON unless the handler emits a notification before its result. The default.
    #[default]
    Auto,
    /// Always JSON; mid-call notifications are dropped.
    Json,
}

/// Options of [`create_mcp_handler`](crate::create_mcp_handler). Every limit has a production
/// default; each setter documents its own.
///
/// ```
/// use std::time::Duration;
/// use mcp_fleet_server::HandlerOptions;
/// let options = HandlerOptions::default()
///     .node_id("pod-a")
///     .page_size(50)
///     .max_streams(20_000)
///     .keepalive(Duration::from_secs(20))
///     .allowed_origins(["app.example.com"]);
/// ```
#[derive(Clone)]
pub struct HandlerOptions {
    pub(crate) bus: Option<Arc<dyn ServerEventBus>>,
    pub(crate) node_id: Option<String>,
    pub(crate) mcp_path: String,
    pub(crate) match_path: bool,
    pub(crate) page_size: usize,
    pub(crate) max_body_bytes: usize,
    pub(crate) listen: ListenLimits,
    pub(crate) allowed_origins: Option<Vec<String>>,
    pub(crate) allowed_hosts: Option<Vec<String>>,
    pub(crate) authenticator: Option<Arc<dyn Authenticator>>,
    pub(crate) protected_resource: Option<ProtectedResourceMetadata>,
    pub(crate) max_streams_per_principal: usize,
    pub(crate) rate_per_principal: Option<Rate>,
    pub(crate) limit_scope: LimitScope,
    pub(crate) response_mode: ResponseMode,
    pub(crate) shutdown_deadline: Duration,
    pub(crate) request_state_keys: Vec<Vec<u8>>,
    pub(crate) request_state_ttl: Duration,
    pub(crate) dedupe_window: usize,
    pub(crate) bus_down_grace: Duration,
    pub(crate) http2_max_concurrent_streams: u32,
    pub(crate) request_read_timeout: Duration,
    pub(crate) dead_peer_timeout: Option<Duration>,
    pub(crate) catalog_notifications: CatalogAnnouncePolicy,
    pub(crate) membership_ttl: Duration,
    pub(crate) convergence_timeout: Duration,
    pub(crate) era2025: Era2025Options,
    pub(crate) tasks: TaskOptions,
    pub(crate) extensions: crate::extensions::Extensions,
    /// Around every `tools/call`, the first outermost (see [`crate::intercept`]).
    pub(crate) interceptors: Arc<[Arc<dyn crate::intercept::CallInterceptor>]>,
    pub(crate) identity: Option<ExecutionIdentity>,
    pub(crate) audit: Option<crate::audit::AuditOptions>,
    pub(crate) identity_in_tools_revision: bool,
    pub(crate) direct_http1_listen: bool,
    pub(crate) watchers: Option<crate::watch::Watchers>,
    #[cfg(feature = "events")]
    pub(crate) events: Option<crate::events::Events>,
}

impl Default for HandlerOptions {
    fn default() -> Self {
        HandlerOptions {
            bus: None,
            node_id: None,
            mcp_path: "/mcp".into(),
            match_path: true,
            page_size: 100,
            max_body_bytes: 4 * 1024 * 1024,
            listen: ListenLimits::default(),
            allowed_origins: Some(vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()]),
            allowed_hosts: None,
            authenticator: None,
            protected_resource: None,
            max_streams_per_principal: PrincipalLimits::DEFAULT_MAX_STREAMS,
            rate_per_principal: None,
            limit_scope: LimitScope::Replica,
            response_mode: ResponseMode::Auto,
            shutdown_deadline: Duration::from_secs(10),
            request_state_keys: Vec::new(),
            request_state_ttl: Duration::from_secs(600),
            dedupe_window: mcp_fleet_bus::DEFAULT_DEDUPE_WINDOW,
            bus_down_grace: Duration::from_secs(30),
            http2_max_concurrent_streams: 200,
            request_read_timeout: Duration::from_secs(30),
            dead_peer_timeout: Some(Duration::from_secs(60)),
            catalog_notifications: CatalogAnnouncePolicy::default(),
            membership_ttl: Duration::from_secs(10),
            convergence_timeout: Duration::from_secs(60),
            era2025: Era2025Options::default(),
            extensions: crate::extensions::Extensions::default(),
            interceptors: Arc::new([]),
            tasks: TaskOptions::default(),
            identity: None,
            audit: None,
            identity_in_tools_revision: false,
            direct_http1_listen: true,
            watchers: None,
            #[cfg(feature = "events")]
            events: None,
        }
    }
}

impl HandlerOptions {
    /// Run `interceptor` around every `tools/call` (after the framework's checks, around the
    /// handler and its output check); the first registered is the outermost. See
    /// [`CallInterceptor`](crate::intercept::CallInterceptor) and the shipped
    /// [`ResultCache`](crate::intercept::ResultCache).
    pub fn intercept(mut self, interceptor: impl crate::intercept::CallInterceptor) -> Self {
        let mut all = self.interceptors.to_vec();
        all.push(Arc::new(interceptor));
        self.interceptors = all.into();
        self
    }

    /// Advertise an extension that code around the catalog implements (a layer over the
    /// handler, say) in `server/discover`'s `capabilities.extensions`; it wins over the server
    /// definition's of the same id. The tasks extension is added by the handler itself when
    /// [`tasks`](HandlerOptions::tasks) are on.
    pub fn extension(mut self, extension: crate::extensions::Extension) -> Self {
        self.extensions.register(extension);
        self
    }

    /// The event bus change events travel on. Default: a fresh in-process
    /// [`MemoryBus`](mcp_fleet_bus::MemoryBus) (one node). For Redis or NATS, connect one with
    /// `mcp-fleet-bus-connect` (or the backend crates) and pass it here.
    pub fn bus(mut self, bus: Arc<dyn ServerEventBus>) -> Self {
        self.bus = Some(bus);
        self
    }

    /// Which code answers ([`ExecutionIdentity::observe`]): shown in `server/discover`, in
    /// this node's membership record and as the `build_info` metric. Default: a fresh epoch
    /// and this crate's version, no executable digest.
    pub fn identity(mut self, identity: ExecutionIdentity) -> Self {
        self.identity = Some(identity);
        self
    }

    /// Keep an audit trail of every `tools/call`, `prompts/get`, `resources/read` and task
    /// transition (see [`AuditOptions`](crate::audit::AuditOptions)). Default: off.
    pub fn audit(mut self, audit: crate::audit::AuditOptions) -> Self {
        self.audit = Some(audit);
        self
    }

    /// Fold the build identity (the executable's digest, else version and commit) into the
    /// tools list's revision, so a rollout that keeps the catalog identical still changes the
    /// revision and is announced once the fleet has converged on it — for hosts that bind
    /// approvals to code, not only to definitions. Every replica of one build still agrees.
    /// Default: `false` (the revision is the catalog's content alone).
    pub fn identity_in_tools_revision(mut self, on: bool) -> Self {
        self.identity_in_tools_revision = on;
        self
    }

    /// This node's id on the bus. Default: `HOSTNAME-pid`.
    pub fn node_id(mut self, id: impl Into<String>) -> Self {
        self.node_id = Some(id.into());
        self
    }

    /// Path of the MCP endpoint. Default `/mcp`.
    pub fn mcp_path(mut self, path: impl Into<String>) -> Self {
        self.mcp_path = path.into();
        self
    }

    /// Whether the handler answers 404 to a request whose path is not
    /// [`mcp_path`](Self::mcp_path). Default `true`, which [`McpHandler::serve`] relies on.
    /// Turn it off when an outer router owns the path: axum's `nest_service("/mcp", handler)`
    /// hands the handler the rest of the path (`/`), which would otherwise get 404. The
    /// protected-resource metadata is still answered at its well-known paths if the router
    /// sends those here.
    ///
    /// [`McpHandler::serve`]: crate::McpHandler::serve
    pub fn match_path(mut self, on: bool) -> Self {
        self.match_path = on;
        self
    }

    /// Items per page of every list. Default 100.
    pub fn page_size(mut self, items: usize) -> Self {
        self.page_size = items;
        self
    }

    /// JSON or SSE per call. Default [`ResponseMode::Auto`].
    pub fn response_mode(mut self, mode: ResponseMode) -> Self {
        self.response_mode = mode;
        self
    }

    /// HMAC key for MRTR `requestState` (at least 32 bytes, the same on every replica): a ring
    /// of this one key (see [`request_state_keys`](Self::request_state_keys)). Default: none —
    /// state is signed with a random per-process key (a warning at start), so a retry that
    /// lands on another replica is refused with a `-32602` naming the missing shared key. The
    /// ring also seals the SSE ids of scoped principals' 2025-era GET streams: without a shared
    /// key, such a stream resumed on another replica starts with the gap invalidation.
    pub fn request_state_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.request_state_keys = vec![key.into()];
        self
    }

    /// The `requestState` key ring for rotation: the first key signs, every key verifies
    /// (tokens name their key's id, a fingerprint of it). Rotate by putting the new key first
    /// on every replica, then drop the old one once `request_state_ttl` has passed. Each at
    /// least 32 bytes, each once. Empty: the default (a per-process key).
    pub fn request_state_keys<K: Into<Vec<u8>>>(mut self, keys: impl IntoIterator<Item = K>) -> Self {
        self.request_state_keys = keys.into_iter().map(Into::into).collect();
        self
    }

    /// Lifetime of signed `requestState`. Default 600 s.
    pub fn request_state_ttl(mut self, ttl: Duration) -> Self {
        self.request_state_ttl = ttl;
        self
    }

    /// Event ids remembered to drop duplicates. Default 4 096.
    pub fn dedupe_window(mut self, ids: usize) -> Self {
        self.dedupe_window = ids;
        self
    }

    /// How long the node may fail to hear the bus (its consumer disconnected or stopped) before
    /// it refuses new listen streams and closes the open ones — with their completion result, so
    /// clients reconnect to a replica that hears it — until it hears again. A readiness probe
    /// should follow the same rule ([`McpHandler::bus_health`](crate::McpHandler::bus_health)).
    /// Default 30 s.
    pub fn bus_down_grace(mut self, grace: Duration) -> Self {
        self.bus_down_grace = grace;
        self
    }

    /// How catalog changes reach listen streams (see `notify` (see the crate doc)). Default
    /// [`CatalogAnnouncePolicy::FleetConverged`].
    pub fn catalog_notifications(mut self, mode: CatalogAnnouncePolicy) -> Self {
        self.catalog_notifications = mode;
        self
    }

    /// How long a node of the fleet may stay silent before the others count it gone (it
    /// announces itself every fifth of it). Every node must use the same. Default 10 s.
    pub fn membership_ttl(mut self, ttl: Duration) -> Self {
        self.membership_ttl = ttl;
        self
    }

    /// How long the fleet may disagree on a catalog revision before listen streams are told of
    /// the change anyway (with a warning naming the laggards, and again once it agrees).
    /// Default 60 s.
    pub fn convergence_timeout(mut self, timeout: Duration) -> Self {
        self.convergence_timeout = timeout;
        self
    }

    /// How 2025-era clients (`initialize`, `Mcp-Session-Id`, the GET stream) are served.
    /// Default: served, with sessions in the fleet's keyspace (see [`Era2025Options`]).
    pub fn era2025(mut self, era2025: Era2025Options) -> Self {
        self.era2025 = era2025;
        self
    }

    /// The tasks extension: its TTL, polling hint, bounds and timing (see [`TaskOptions`]);
    /// [`TaskOptions::disabled`] turns it off. Default: on, with the defaults.
    pub fn tasks(mut self, tasks: TaskOptions) -> Self {
        self.tasks = tasks;
        self
    }

    /// Run a watcher on one node of the fleet for every subject someone listens to, until
    /// nobody does (see [`crate::watch`]). Default: none.
    ///
    /// ```
    /// use mcp_fleet_server::HandlerOptions;
    /// use mcp_fleet_server::watch::{Watch, Watchers};
    /// let options = HandlerOptions::default().watchers(Watchers::new(|watch: Watch| async move {
    ///     watch.ended().await;
    /// }));
    /// ```
    pub fn watchers(mut self, watchers: crate::watch::Watchers) -> Self {
        self.watchers = Some(watchers);
        self
    }

    /// Serve the events extension (cargo feature `events`, experimental) with `events`' declared
    /// types: advertised as [`events::EXTENSION_ID`](crate::events::EXTENSION_ID),
    /// `events/list` and `events/poll` answered on every replica, occurrences emitted through
    /// [`McpHandler::events`](crate::McpHandler::events). See [`crate::events`].
    ///
    /// ```
    /// use mcp_fleet_server::HandlerOptions;
    /// use mcp_fleet_server::events::Events;
    /// let options = HandlerOptions::default().events(Events::new().history(1_000));
    /// # drop(options);
    /// ```
    #[cfg(feature = "events")]
    pub fn events(mut self, events: crate::events::Events) -> Self {
        self.events = Some(events);
        self
    }

    /// This node's id: the configured one, else `HOSTNAME-pid`.
    pub(crate) fn resolved_node_id(&self) -> String {
        self.node_id.clone().unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "node".into());
            format!("{host}-{}", std::process::id())
        })
    }

    /// Refuse settings no handler can run with, naming the option.
    pub(crate) fn validate(&self) -> Result<(), ServerError> {
        let invalid = |what: &str| Err(ServerError::Options(what.to_owned()));
        if !self.mcp_path.starts_with('/') {
            return invalid("mcp_path must start with '/'");
        }
        if self.page_size == 0 || self.max_body_bytes == 0 || self.dedupe_window == 0 {
            return invalid("page_size, max_body_bytes and dedupe_window must be positive");
        }
        if self.listen.max_streams == 0 || self.listen.max_uris_per_listen == 0 || self.max_streams_per_principal == 0 {
            return invalid("max_streams, max_uris_per_listen and max_streams_per_principal must be positive");
        }
        let budget = &self.listen.budget;
        if [
            budget.max_uri_bytes,
            budget.max_bytes_per_stream,
            budget.max_bytes_per_principal,
            budget.max_streams_per_address,
        ]
        .contains(&0)
        {
            return invalid(
                "max_uri_bytes, max_subscription_bytes_per_stream, max_subscription_bytes_per_principal and \
                 max_streams_per_address must be positive",
            );
        }
        if self.rate_per_principal.is_some_and(|r| !(r.per_second.is_finite() && r.per_second > 0.0)) {
            return invalid("rate_per_principal must be a positive, finite rate");
        }
        if self.http2_max_concurrent_streams == 0 || self.request_read_timeout.is_zero() {
            return invalid("http2_max_concurrent_streams and request_read_timeout must be positive");
        }
        if self.shutdown_deadline.is_zero() || self.request_state_ttl.is_zero() {
            return invalid("shutdown_deadline and request_state_ttl must be positive");
        }
        if self.membership_ttl < Duration::from_millis(500) || self.convergence_timeout.is_zero() {
            return invalid("membership_ttl must be at least 500 ms and convergence_timeout positive");
        }
        self.era2025.validate().map_err(|what| ServerError::Options(what.to_owned()))?;
        self.tasks.validate().map_err(|what| ServerError::Options(what.to_owned()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_each_bad_setting_is_named() {
        assert!(HandlerOptions::default().validate().is_ok());
        let cases = [
            (HandlerOptions::default().mcp_path("mcp"), "mcp_path"),
            (HandlerOptions::default().page_size(0), "page_size"),
            (HandlerOptions::default().max_streams(0), "max_streams"),
            (HandlerOptions::default().max_streams_per_principal(0), "max_streams_per_principal"),
            (
                HandlerOptions::default().rate_per_principal(Some(Rate { per_second: 0.0, burst: 1 })),
                "rate_per_principal",
            ),
            (HandlerOptions::default().shutdown_deadline(Duration::ZERO), "shutdown_deadline"),
        ];
        for (options, named) in cases {
            let err = options.validate().expect_err(named).to_string();
            assert!(err.contains(named), "{err}");
        }
    }

    #[tokio::test]
    async fn a_ttl_the_store_cannot_keep_is_refused_not_turned_into_a_bus_without_keyspaces() {
        let year = mcp_fleet_bus::MAX_TTL;
        for (options, named) in [
            (HandlerOptions::default().tasks(TaskOptions::default().ttl(year - Duration::from_secs(30))), "tasks.ttl"),
            (HandlerOptions::default().tasks(TaskOptions::default().ttl(year)), "tasks.ttl"),
            (HandlerOptions::default().era2025(Era2025Options::default().session_ttl(year * 2)), "session_ttl"),
        ] {
            let err = options.validate().expect_err(named).to_string();
            assert!(err.contains(named), "{err}");
        }
        let longest = HandlerOptions::default().tasks(TaskOptions::default().ttl(year - Duration::from_secs(60)));
        let longest = longest.era2025(Era2025Options::default().session_ttl(year));
        let server = crate::McpServer::builder("s", "1").build();
        let handler = crate::create_mcp_handler(server, longest).await.expect("the longest TTLs are valid");
        assert!(handler.shared.tasks.is_some(), "tasks stay on");
        assert!(handler.shared.era2025.sessions.is_some(), "sessions stay on");
        handler.shutdown().await;
    }
}
