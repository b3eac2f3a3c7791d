//! [`create_mcp_handler`]: builds an [`McpHandler`] from a server factory and options, and
//! starts its background tasks — the supervised bus consumer and its health monitor, the
//! outbox publisher, the listen tick, the tasks' loop. They stop when the handler shuts down or
//! when the last clone of the handler is dropped.
//!
//! The handler wraps the state its requests share (`crate::shared`); the HTTP side answers
//! with that state, `serving` exposes it (`serve`, `handle`, the `Service`s) and `drain` ends
//! it gracefully.

use std::sync::Arc;

use mcp_fleet_bus::{MemoryBus, ServerEventBus};
use tokio::sync::watch;

use crate::audit::{AuditOrigin, AuditTrail};
use crate::auth::www_authenticate::resource_metadata_base;
use crate::auth::{LimitGate, PrincipalLimits};
use crate::era2025::{Era2025State, SessionStreams};
use crate::error::ServerError;
use crate::factory::ServerFactory;
use crate::fleet::{FleetStatus, FleetTiming, FleetWatch};
use crate::identity::{ExecutionIdentity, RevisionSalt};
use crate::listen::supervisor::{self, ConsumerParts};
use crate::listen::{
    BusHealth, BusHealthState, EventIntake, ListenRouter, Listeners, SessionEvents, TaskEvents, keepalive, monitor,
};
use crate::metrics::Metrics;
use crate::notify::{Notifier, NotifierCore, Outbox};
use crate::options::HandlerOptions;
use crate::request_state::StateCodec;
use crate::services::Services;
use crate::shared::HandlerShared;
use crate::shutdown::{CutNames, ShutdownTrigger};
use crate::task_handle::TaskHandle;
use crate::tasks::{TaskParts, TaskSignals, Tasks};
use crate::watch::Watches;

/// An MCP endpoint: serve it with [`McpHandler::serve`] or call [`McpHandler::handle`] from
/// your own hyper service. Cheap to clone.
#[derive(Clone)]
pub struct McpHandler {
    pub(crate) shared: Arc<HandlerShared>,
}

/// Build a handler: subscribe to the bus (so this node hears every change published from now
/// on), attach the factory's notifier, and start the background tasks.
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
    options.validate()?;
    let bus = match &options.bus {
        Some(bus) => bus.clone(),
        None => Arc::new(MemoryBus::new().as_node(&options.resolved_node_id())),
    };
    let alone = options.bus.is_none();
    let state_codec = StateCodec::try_new(&options.request_state_keys, options.request_state_ttl, alone)?;
    let metrics = Metrics::default();
    let identity =
        Arc::new(options.identity.clone().unwrap_or_else(|| ExecutionIdentity::minted(env!("CARGO_PKG_VERSION"))));
    metrics.set_build_info(&identity);
    let revision_salt = RevisionSalt::of(&identity, options.identity_in_tools_revision);
    let wiring = Wiring::new(&options, &bus, &metrics, &identity, revision_salt, state_codec.ring().clone());
    let events = bus.subscribe().await?;
    let era2025 = Era2025State::open(&options.era2025, &bus, wiring.session_streams.clone()).await?;
    let origin = AuditOrigin::new(&options.resolved_node_id(), &identity);
    let audit = AuditTrail::open(options.audit.as_ref(), origin, metrics.audit.clone());
    let tasks = Tasks::open(&options.tasks, wiring.task_parts(&bus, &metrics, &options, &audit)).await?;
    factory.attach(&wiring.notifier)?;
    let limits = limit_gate(&options, &bus, &wiring.fleet).await;
    let watches = match options.watchers.clone() {
        Some(watchers) => Some(Watches::open(&bus, watchers, wiring.notifier.clone()).await?),
        None => None,
    };
    let sink = watches.clone().map(|w| w as Arc<dyn crate::listen::InterestSink>);
    let challenge_base = options.protected_resource.as_ref().map(|m| resource_metadata_base(&m.metadata_url()));
    let mut extensions = options.extensions.clone();
    if tasks.is_some() {
        extensions.register(crate::tasks::extension());
    }
    #[cfg(feature = "events")]
    if let Some(events) = &wiring.events {
        if let Err(error) = events.open_shared(&bus, metrics.webhooks.clone()).await {
            tracing::warn!(%error, "no keyspace on this bus: the events extension runs without webhooks and hooks");
        }
        extensions.register(crate::events::extension(events.webhooks.get().is_some()));
    }
    let services = Services {
        extensions,
        options,
        router: wiring.router.clone(),
        interest: crate::listen::Interest::new(bus.clone(), sink),
        tasks: tasks.clone(),
        metrics,
        state_codec: Arc::new(state_codec),
        cut_names: CutNames::new(&identity.epoch, bus.node_id()),
        identity,
        revision_salt,
        audit,
        limits,
        #[cfg(feature = "events")]
        events: wiring.events.clone(),
        shutdown: ShutdownTrigger::new(),
    };
    let shared = Arc::new(HandlerShared {
        services,
        factory: Box::new(factory),
        bus,
        notifier: wiring.notifier.clone(),
        fleet: wiring.fleet.clone(),
        intake: wiring.intake.clone(),
        era2025,
        health: Arc::new(BusHealth::new(wiring.bus_down_grace)),
        challenge_base,
        serving: watch::channel(0).0,
        farewells: std::sync::Mutex::default(),
    });
    wiring.start(&shared, tasks, events, watches);
    Ok(McpHandler { shared })
}

/// How change events reach this node's streams, built before the handler's shared state:
/// the listen router, the 2025 sessions' streams, the tasks' signals, the intake in front of
/// them, the outbox, the fleet's watch and the notifier over all of that.
struct Wiring {
    router: ListenRouter,
    session_streams: SessionStreams,
    task_signals: TaskSignals,
    task_events: tokio::sync::mpsc::Receiver<crate::tasks::TaskSignal>,
    intake: Arc<EventIntake>,
    outbox: Arc<Outbox>,
    fleet: Arc<FleetWatch>,
    notifier: Notifier,
    /// How long the bus may be unheard before streams are refused (the health tracker's).
    bus_down_grace: std::time::Duration,
    /// The events extension, when the options declare it.
    #[cfg(feature = "events")]
    events: Option<Arc<crate::events::poll::EventsRuntime>>,
}

impl Wiring {
    fn new(
        options: &HandlerOptions,
        bus: &Arc<dyn ServerEventBus>,
        metrics: &Metrics,
        identity: &Arc<ExecutionIdentity>,
        salt: RevisionSalt,
        ring: mcp_fleet_protocol::state::StateSigner,
    ) -> Self {
        let router = ListenRouter::new(options.listen, metrics.clone());
        #[cfg(feature = "events")]
        let events = options.events.clone().map(|e| Arc::new(crate::events::poll::EventsRuntime::new(e, ring.clone())));
        let era = &options.era2025;
        let session_streams =
            SessionStreams::new(era.max_streams, era.replay_events, ring, metrics.clone(), era.session_cache_for);
        let (task_signals, task_events) = TaskSignals::new();
        let listeners = Listeners {
            sessions: Arc::new(session_streams.clone()) as Arc<dyn SessionEvents>,
            tasks: Arc::new(task_signals.clone()) as Arc<dyn TaskEvents>,
            #[cfg(feature = "events")]
            occurrences: events.clone().map(|e| e as Arc<dyn crate::listen::OccurrenceEvents>),
            #[cfg(not(feature = "events"))]
            occurrences: None,
        };
        let intake = Arc::new(EventIntake::new(router.clone(), listeners, metrics.clone(), options.dedupe_window));
        let outbox = Arc::new(Outbox::new(metrics.clone()));
        let timing = FleetTiming { ttl: options.membership_ttl, convergence_timeout: options.convergence_timeout };
        let fleet = FleetWatch::new(
            bus.clone(),
            options.catalog_notifications,
            timing,
            intake.clone(),
            router.clone(),
            metrics.clone(),
            identity.clone(),
        );
        let fleet = Arc::new(fleet.salted(salt));
        let notifier = Notifier::new(NotifierCore {
            bus: bus.clone(),
            metrics: metrics.clone(),
            intake: intake.clone(),
            outbox: outbox.clone(),
            fleet: fleet.clone(),
        });
        let bus_down_grace = options.bus_down_grace;
        Wiring {
            router,
            session_streams,
            task_signals,
            task_events,
            intake,
            outbox,
            fleet,
            notifier,
            bus_down_grace,
            #[cfg(feature = "events")]
            events,
        }
    }

    /// What the task store needs of the node.
    fn task_parts(
        &self,
        bus: &Arc<dyn ServerEventBus>,
        metrics: &Metrics,
        options: &HandlerOptions,
        audit: &AuditTrail,
    ) -> TaskParts {
        TaskParts {
            bus: bus.clone(),
            router: self.router.clone(),
            signals: self.task_signals.clone(),
            fleet: self.fleet.clone(),
            metrics: metrics.clone(),
            membership_ttl: options.membership_ttl,
            audit: audit.clone(),
        }
    }

    /// Start the background tasks — the 2025 sessions' upkeep, the tasks' loop, the bus
    /// consumer and its health monitor, the outbox, the fleet's watch, the listen tick — each
    /// stopping on the drain signal; the outbox's and the fleet's last rounds are awaited by
    /// `shutdown()` (its farewells).
    fn start(
        self,
        shared: &Arc<HandlerShared>,
        tasks: Option<Arc<Tasks>>,
        events: mcp_fleet_bus::BusStream,
        watches: Option<Arc<Watches>>,
    ) {
        let stop = || shared.shutdown.subscribe();
        let (keepalive, ttl) = (shared.options.listen.keepalive, shared.options.era2025.session_ttl);
        tokio::spawn(crate::era2025::maintain(&shared.era2025, keepalive, ttl, stop()));
        if let Some(tasks) = tasks {
            tokio::spawn(tasks.follow(self.task_signals, self.task_events, stop()));
        }
        let (bus, health, metrics) = (shared.bus.clone(), shared.health.clone(), shared.metrics.clone());
        let parts =
            ConsumerParts { bus: bus.clone(), intake: self.intake, health: health.clone(), metrics, stop: stop() };
        tokio::spawn(supervisor::run(parts, events));
        tokio::spawn(monitor::run(bus.clone(), health, self.router.clone(), stop()));
        let farewells = [tokio::spawn(self.outbox.run(bus, stop())), tokio::spawn(self.fleet.run(stop()))];
        let watches = watches.map(|w| tokio::spawn(w.run(stop())));
        shared
            .farewells
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(farewells.into_iter().chain(watches));
        #[cfg(feature = "events")]
        if let Some(events) = &self.events
            && let Some(webhooks) = events.webhooks.get()
        {
            tokio::spawn(webhooks.clone().dispatch(events.clone(), stop()));
            tokio::spawn(webhooks.clone().reload(stop()));
        }
        if let Some(every) = shared.options.listen.tick_interval() {
            let keepalives = !shared.options.listen.keepalive.is_zero();
            tokio::spawn(keepalive::run(self.router, every, keepalives, stop()));
        }
    }
}

/// The per-principal limits: per replica, or fleet-wide through the bus's keyspace (per
/// replica, with a warning, on a bus without one).
async fn limit_gate(options: &HandlerOptions, bus: &Arc<dyn ServerEventBus>, fleet: &Arc<FleetWatch>) -> LimitGate {
    let local = PrincipalLimits::new(options.max_streams_per_principal, options.rate_per_principal);
    if options.limit_scope != crate::auth::LimitScope::Fleet {
        return LimitGate::new(local, None);
    }
    let watch = Arc::downgrade(fleet);
    let members: crate::auth::Members = Arc::new(move || {
        watch.upgrade().map(|f| f.status().members.into_iter().map(|m| m.node_id).collect()).unwrap_or_default()
    });
    let settings = (options.max_streams_per_principal, options.rate_per_principal, crate::auth::FLEET_STREAM_LEASE);
    match crate::auth::FleetLimits::open(bus, settings, &options.resolved_node_id(), members).await {
        Ok(fleet) => LimitGate::new(local, Some(fleet)),
        Err(error) => {
            tracing::warn!(%error, "no keyspace for fleet-wide limits: per-principal limits count per replica");
            LimitGate::new(local, None)
        }
    }
}

impl McpHandler {
    /// Emit occurrences of the event types declared with
    /// [`HandlerOptions::events`](crate::HandlerOptions::events) (cargo feature `events`): from
    /// this node, through the bus, to every replica's polls. Without declared types every emit
    /// is refused as undeclared.
    ///
    /// ```no_run
    /// # async fn run(handler: mcp_fleet_server::McpHandler) -> Result<(), mcp_fleet_server::events::EmitError> {
    /// handler.events().emit("deploy.finished", &serde_json::json!({"version": "1.4.2"})).await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "events")]
    pub fn events(&self) -> crate::events::Emitter {
        let declared = self.shared.events.as_ref().map(|e| e.events.clone()).unwrap_or_default();
        crate::events::Emitter::new(self.shared.bus.clone(), declared)
    }

    /// A handle on task `id` of the fleet, to complete or fail it from outside its handler (a
    /// webhook, a job poller), on any replica; `None` when this handler serves no tasks. The
    /// handle does not check who created the task: keep ids you hand out to trusted code.
    pub fn task(&self, id: &str) -> Option<TaskHandle> {
        let tasks = self.shared.tasks.clone()?;
        Some(TaskHandle::new(tasks, id.to_owned()))
    }

    /// Publish change events (globally, or `.tenant(tenant)`).
    pub fn notify(&self) -> Notifier {
        self.shared.notifier.clone()
    }

    /// Whether this node hears the fleet's change events: its bus consumer is running and
    /// connected. Past the bus-down grace period of deafness the node refuses and closes listen
    /// streams; a readiness probe should report not-ready then too.
    pub fn bus_health(&self) -> BusHealthState {
        self.shared.health.state()
    }

    /// Open listen streams on this node.
    pub fn open_streams(&self) -> usize {
        self.shared.router.open_streams()
    }

    /// Open GET streams of 2025-era sessions on this node.
    pub fn open_session_streams(&self) -> usize {
        self.shared.era2025.streams.open_streams()
    }

    /// The fleet as this node sees it: members, their catalog revisions, and whether they
    /// agree on each list.
    pub fn fleet(&self) -> FleetStatus {
        self.shared.fleet.status()
    }

    /// Metrics as OpenMetrics text.
    pub fn metrics_text(&self) -> String {
        let connected = self.shared.health.state().connected;
        let served = self.shared.fleet.own_catalogs().into_iter().map(|(scope, r)| (scope, r.labelled())).collect();
        self.shared.metrics.encode(&self.shared.bus, connected, &served, self.jwks_fetches())
    }

    /// JWKS fetches of the authenticator, if it fetches keys (see
    /// [`Authenticator::jwks_fetches`](crate::auth::Authenticator::jwks_fetches)).
    fn jwks_fetches(&self) -> Option<u64> {
        self.shared.options.authenticator.as_ref()?.jwks_fetches()
    }
}
