//! [`create_mcp_handler`]: builds an [`McpHandler`] from a server factory and options, connects
//! it to the event bus, and starts the background tasks: the supervised bus consumer and its
//! health monitor, the outbox publisher, and the keepalive tick.
//!
//! The handler is transport-glue-free state; `http` serves it with hyper and `shutdown` ends
//! it gracefully.

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::{MemoryBus, ServerEventBus};
use tokio::sync::watch;

use crate::catalog::McpServer;
use crate::context::{Principal, RequestContext};
use crate::error::ServerError;
use crate::listen::consumer::{self, ConsumerParts};
use crate::listen::{BusHealth, BusHealthState, Fanout, ListenLimits, ListenRouter};
use crate::metrics::Metrics;
use crate::notify::{Notifier, Outbox};

/// Produces the server definition to serve for one request. Must be cheap: return a clone of
/// an `Arc`-backed [`McpServer`], not a freshly built one.
pub trait ServerFactory: Send + Sync + 'static {
    /// The server for this request.
    fn server(&self, ctx: &RequestContext) -> McpServer;

    /// Called once by [`create_mcp_handler`] with the handler's notifier. An [`McpServer`]
    /// passed directly attaches it so its registration handles publish change events.
    fn attach(&self, _notifier: &Notifier) {}
}

impl ServerFactory for McpServer {
    fn server(&self, _ctx: &RequestContext) -> McpServer {
        self.clone()
    }

    fn attach(&self, notifier: &Notifier) {
        self.publish_changes_to(notifier.clone());
    }
}

impl<F> ServerFactory for F
where
    F: Fn(&RequestContext) -> McpServer + Send + Sync + 'static,
{
    fn server(&self, ctx: &RequestContext) -> McpServer {
        self(ctx)
    }
}

/// A request the authenticator refused: answered 401 with this `WWW-Authenticate` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unauthorized {
    /// The `WWW-Authenticate` challenge, e.g. `Bearer resource_metadata="…"`.
    pub www_authenticate: String,
}

/// Turns request headers into a principal, or refuses the request.
pub type Authenticator = Arc<dyn Fn(&http::request::Parts) -> Result<Principal, Unauthorized> + Send + Sync>;

/// When a call's response is JSON or SSE (STRM-3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResponseMode {
    /// JSON unless the handler emits a notification before its result. The default.
    #[default]
    Auto,
    /// Always JSON; mid-call notifications are dropped.
    Json,
}

/// Options of [`create_mcp_handler`]. Every limit has a production default.
#[derive(Clone)]
pub struct HandlerOptions {
    /// The event bus; default: [`HandlerOptions::bus_url`], else a fresh [`MemoryBus`].
    pub bus: Option<Arc<dyn ServerEventBus>>,
    /// Bus URL connected by [`create_mcp_handler`] when `bus` is `None` (`memory://`,
    /// `redis://…`, `nats://…`; see [`connect_bus`](crate::connect_bus)).
    pub bus_url: Option<String>,
    /// This node's id on the bus. Default: `HOSTNAME-pid`.
    pub node_id: Option<String>,
    /// How long [`create_mcp_handler`] keeps retrying an unreachable `bus_url` before it fails.
    /// Default 30 s.
    pub bus_connect_patience: Duration,
    /// Path of the MCP endpoint. Default `/mcp`.
    pub mcp_path: String,
    /// Items per page of every list. Default 100.
    pub page_size: usize,
    /// Largest accepted request body; larger gets 413. Default 4 MiB.
    pub max_body_bytes: usize,
    /// Listen stream limits and keepalive.
    pub listen: ListenLimits,
    /// Allowed `Origin` hostnames (port-agnostic); a request with another Origin gets 403.
    /// `None` disables the check. Default: `localhost`, `127.0.0.1`, `[::1]`.
    pub allowed_origins: Option<Vec<String>>,
    /// Allowed `Host` hostnames; `None` (the default) disables the check.
    pub allowed_hosts: Option<Vec<String>>,
    /// Authenticator hook; `None` (the default) serves everyone anonymously.
    pub authenticator: Option<Authenticator>,
    /// JSON or SSE per call.
    pub response_mode: ResponseMode,
    /// How long `shutdown()` waits for connections to drain. Default 10 s.
    pub shutdown_deadline: Duration,
    /// HMAC key for MRTR `requestState` (≥ 32 bytes, the same on every replica); `None` means
    /// handlers' state travels unsigned and must be harmless if tampered with.
    pub request_state_key: Option<Vec<u8>>,
    /// Lifetime of signed `requestState`. Default 600 s.
    pub request_state_ttl: Duration,
    /// Event ids remembered to drop duplicates. Default 4096.
    pub dedupe_window: usize,
    /// How long the node may fail to hear the bus (its consumer disconnected or stopped)
    /// before it refuses new listen streams and closes the open ones — with their completion
    /// result, so clients reconnect to a replica that hears it — until it hears again. A
    /// readiness probe should follow the same rule ([`McpHandler::bus_health`]). Default 30 s.
    pub bus_down_grace: Duration,
    /// Concurrent streams (requests and listen streams) per HTTP/2 connection. Default 200.
    pub http2_max_concurrent_streams: u32,
    /// How long a client may take to send its request headers, then its body (each); past it
    /// the connection is closed (headers) or the request gets 408 (body). Default 30 s.
    pub request_read_timeout: Duration,
    /// Close connections whose peer stopped acknowledging data for this long (a vanished
    /// client would otherwise hold its listen slot until the kernel gives up, ~15 min): sets
    /// TCP keepalive and `TCP_USER_TIMEOUT`, and HTTP/2 pings. Default 60 s; `None` disables.
    pub dead_peer_timeout: Option<Duration>,
}

impl Default for HandlerOptions {
    fn default() -> Self {
        HandlerOptions {
            bus: None,
            bus_url: None,
            node_id: None,
            bus_connect_patience: Duration::from_secs(30),
            mcp_path: "/mcp".into(),
            page_size: 100,
            max_body_bytes: 4 * 1024 * 1024,
            listen: ListenLimits::default(),
            allowed_origins: Some(vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()]),
            allowed_hosts: None,
            authenticator: None,
            response_mode: ResponseMode::Auto,
            shutdown_deadline: Duration::from_secs(10),
            request_state_key: None,
            request_state_ttl: Duration::from_secs(600),
            dedupe_window: mcp_fleet_bus::dedupe::DEFAULT_DEDUPE_WINDOW,
            bus_down_grace: Duration::from_secs(30),
            http2_max_concurrent_streams: 200,
            request_read_timeout: Duration::from_secs(30),
            dead_peer_timeout: Some(Duration::from_secs(60)),
        }
    }
}

impl HandlerOptions {
    /// This node's id: the configured one, else `HOSTNAME-pid`.
    pub fn node_id(&self) -> String {
        self.node_id.clone().unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "node".into());
            format!("{host}-{}", std::process::id())
        })
    }

    /// Use `bus` for change events.
    pub fn bus(mut self, bus: Arc<dyn ServerEventBus>) -> Self {
        self.bus = Some(bus);
        self
    }
}

/// Shared state of one handler.
pub(crate) struct HandlerShared {
    pub(crate) factory: Box<dyn ServerFactory>,
    pub(crate) options: HandlerOptions,
    pub(crate) bus: Arc<dyn ServerEventBus>,
    pub(crate) notifier: Notifier,
    pub(crate) router: ListenRouter,
    pub(crate) health: Arc<BusHealth>,
    pub(crate) metrics: Metrics,
    pub(crate) state_codec: Option<crate::methods::state::StateCodec>,
    /// Flips to `true` once on shutdown; serve loops and background tasks watch it.
    pub(crate) shutdown: watch::Sender<bool>,
    /// Number of running serve loops; `shutdown()` waits for it to reach zero.
    pub(crate) serving: watch::Sender<usize>,
}

/// An MCP endpoint: serve it with [`McpHandler::serve`] or call [`McpHandler::handle`] from
/// your own hyper service. Cheap to clone.
#[derive(Clone)]
pub struct McpHandler {
    pub(crate) shared: Arc<HandlerShared>,
}

/// Build a handler: connect the bus consumer (so this node hears every change published from
/// now on), and start the background tasks.
///
/// ```
/// use mcp_fleet_server::{create_mcp_handler, HandlerOptions, McpServer};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let server = McpServer::builder("demo", "1.0.0").build();
/// let handler = create_mcp_handler(server, HandlerOptions::default()).await.unwrap();
/// handler.notify().tools_changed().await.unwrap();
/// # });
/// ```
pub async fn create_mcp_handler(
    factory: impl ServerFactory,
    options: HandlerOptions,
) -> Result<McpHandler, ServerError> {
    let bus = match (&options.bus, &options.bus_url) {
        (Some(bus), _) => bus.clone(),
        (None, Some(url)) => {
            crate::bus_url::connect_bus_patiently(url, &options.node_id(), options.bus_connect_patience).await?
        }
        (None, None) => Arc::new(MemoryBus::new().as_node(&options.node_id())),
    };
    let state_codec = match &options.request_state_key {
        Some(key) => Some(crate::methods::state::StateCodec::new(key, options.request_state_ttl)?),
        None => None,
    };
    let metrics = Metrics::default();
    let router = ListenRouter::new(options.listen, metrics.clone());
    let fanout = Arc::new(Fanout::new(router.clone(), metrics.clone(), options.dedupe_window));
    let outbox = Arc::new(Outbox::new(metrics.clone()));
    let notifier = Notifier::new(crate::notify::NotifierCore {
        bus: bus.clone(),
        metrics: metrics.clone(),
        fanout: fanout.clone(),
        outbox: outbox.clone(),
    });
    let events = bus.subscribe().await?;
    factory.attach(&notifier);
    let (shutdown, _) = watch::channel(false);
    let health = Arc::new(BusHealth::new(options.bus_down_grace));
    let shared = Arc::new(HandlerShared {
        factory: Box::new(factory),
        options,
        bus: bus.clone(),
        notifier,
        router: router.clone(),
        health: health.clone(),
        metrics: metrics.clone(),
        state_codec,
        shutdown,
        serving: watch::channel(0).0,
    });
    let stop = || shared.shutdown.subscribe();
    let parts = ConsumerParts { bus: bus.clone(), fanout, health: health.clone(), metrics, stop: stop() };
    tokio::spawn(consumer::supervise(parts, events));
    tokio::spawn(consumer::monitor(bus.clone(), health, router.clone(), stop()));
    tokio::spawn(outbox.run(bus, stop()));
    if let Some(every) = shared.options.listen.tick_interval() {
        let keepalives = !shared.options.listen.keepalive.is_zero();
        tokio::spawn(tick(router, every, keepalives, stop()));
    }
    Ok(McpHandler { shared })
}

/// The listen router's periodic tick: keepalive comments and stream lifetimes.
async fn tick(router: ListenRouter, every: Duration, keepalives: bool, mut stop: watch::Receiver<bool>) {
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    interval.tick().await;
    loop {
        tokio::select! {
            _ = interval.tick() => router.tick(keepalives),
            _ = crate::shutdown::signalled(&mut stop) => return,
        }
    }
}

impl McpHandler {
    /// Publish change events (globally, or `.scope(tenant)`).
    pub fn notify(&self) -> Notifier {
        self.shared.notifier.clone()
    }

    /// The event bus this handler uses.
    pub fn bus(&self) -> Arc<dyn ServerEventBus> {
        self.shared.bus.clone()
    }

    /// Whether this node hears the fleet's change events: its bus consumer is running and
    /// connected. Past [`HandlerOptions::bus_down_grace`] of deafness the node refuses and
    /// closes listen streams; a readiness probe should report not-ready then too.
    pub fn bus_health(&self) -> BusHealthState {
        self.shared.health.state()
    }

    /// Open listen streams on this node.
    pub fn open_streams(&self) -> usize {
        self.shared.router.open_streams()
    }

    /// Metrics as OpenMetrics text.
    pub fn metrics_text(&self) -> String {
        self.shared.metrics.encode(&self.shared.bus, self.shared.health.state().connected)
    }

    /// The handler's options.
    pub fn options(&self) -> &HandlerOptions {
        &self.shared.options
    }
}
