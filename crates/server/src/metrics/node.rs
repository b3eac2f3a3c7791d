//! [`Metrics`], the handler's series: the listen path (open streams, frames written,
//! coalesced notifications), the bus consumer (events, duplicates dropped, gaps and the
//! conservative invalidations they trigger, restarts), publishing (failures, the outbox of
//! catalog changes), HTTP requests and the fleet, with the groups of the other eras and
//! extensions beside it; how the hot path counts, and the series created at zero. Their
//! registration and encoding are `registry.rs`'s.

use std::sync::Arc;

use mcp_fleet_bus::ServerEventBus;
use mcp_fleet_protocol::Method as McpMethod;
use mcp_fleet_protocol::tasks::TaskStatus;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::audit::AuditMetrics;
use super::collectors::ServedRevisions;
use super::era2025::Era2025Metrics;
use super::labels::{BuildLabels, ListenRefusal, MethodLabel, ReasonLabel, RequestLabels, StatusLabel, VersionLabel};
use super::registry;
use super::tasks::TaskMetrics;
#[cfg(feature = "events")]
use super::webhooks::WebhookMetrics;

/// The handler's metrics. Cheap to clone (counters are `Arc`s inside).
#[derive(Debug, Clone)]
pub(crate) struct Metrics {
    /// Open listen streams.
    pub(crate) listen_open: Gauge,
    /// Listen streams opened since start.
    pub(crate) listen_opened: Counter,
    /// Listen requests refused, by reason (see [`ListenRefusal`]).
    pub(crate) listen_refused: Family<ReasonLabel, Counter>,
    /// Requests refused with 429 by the per-principal rate limit.
    pub(crate) rate_limited: Counter,
    /// Tool results whose `structuredContent` broke the tool's `outputSchema` (answered
    /// `-32603`: a handler bug, never sent on).
    pub(crate) tool_output_invalid: Counter,
    /// Notification frames written to listen streams.
    pub(crate) frames_written: Counter,
    /// Notifications coalesced into a pending one (slow readers).
    pub(crate) coalesced: Counter,
    /// Bus events delivered to the listen router.
    pub(crate) events_delivered: Counter,
    /// Bus events dropped as duplicates.
    pub(crate) duplicates_dropped: Counter,
    /// Gaps reported by the bus, or by the supervisor after restarting the consumer.
    pub(crate) gaps: Counter,
    /// Times the supervisor found the bus consumer ended or dead and started it again.
    pub(crate) consumer_restarts: Counter,
    /// Publishes the bus refused or did not answer in time (explicit and outbox).
    pub(crate) publish_failures: Counter,
    /// Catalog changes waiting in the outbox for the bus to accept them.
    pub(crate) outbox_pending: Gauge,
    /// Outbox publish attempts that failed and were queued again.
    pub(crate) outbox_retries: Counter,
    /// Catalog changes dropped because the outbox was full.
    pub(crate) outbox_dropped: Counter,
    /// HTTP requests answered, by JSON-RPC method and HTTP status.
    pub(crate) requests: Family<RequestLabels, Counter>,
    /// Time from a request's arrival to its response head (for a listen stream: its ack; for
    /// an SSE call: its first notification), by JSON-RPC method, in seconds.
    pub(crate) request_duration: Family<MethodLabel, Histogram>,
    /// 1 while the handler drains (after `shutdown()`).
    pub(crate) draining: Gauge,
    /// Live members of the fleet, this node included.
    pub(crate) fleet_members: Gauge,
    /// Catalog changes announced because the fleet did not converge in time.
    pub(crate) convergence_timeouts: Counter,
    /// Age of bus events when this node's router handled them (publish time on the origin
    /// node → now; includes clock skew between nodes), in seconds.
    pub(crate) event_age: Histogram,
    /// How long the router took to offer one event to every matching local stream and write it
    /// to the directly written ones (the write pass of the thread that took the event; with
    /// several workers and many streams, the other workers write their shares beside it,
    /// untimed), in seconds.
    pub(crate) listen_fanout: Histogram,
    /// The 2025 era's sessions and GET streams.
    pub(crate) era2025: Era2025Metrics,
    /// The tasks extension.
    pub(crate) tasks: TaskMetrics,
    /// The events extension's webhook deliveries.
    #[cfg(feature = "events")]
    pub(crate) webhooks: WebhookMetrics,
    /// `build_info{version, commit, exe_sha256, image} 1`: which code this node runs.
    pub(crate) build_info: Family<BuildLabels, Gauge>,
    /// The audit trail (see `crate::audit`).
    pub(crate) audit: AuditMetrics,
    /// The series the hot path counts in, looked up once instead of per request.
    hot: Arc<HotSeries>,
    /// Every series above, registered once (see `registry.rs`); shared by the clones.
    registry: Arc<Registry>,
}

/// Series of [`Metrics::requests`], [`Metrics::request_duration`] and the modern version's
/// request counter, resolved out of their families on first use: a family lookup hashes the
/// labels and takes a lock, and every answered request would pay it three times. The series
/// are the families' own (a counter is an `Arc` inside), so the scrape shows the same numbers.
/// Lazily, so a method never answered gets no zero series.
#[derive(Debug, Default)]
struct HotSeries {
    /// `requests{method, status="200"}` and `request_duration{method}`, by [`McpMethod::ALL`]'s
    /// order.
    answered: [std::sync::OnceLock<(Counter, Histogram)>; McpMethod::ALL.len()],
    /// `legacy_requests{version="2026-07-28"}`.
    modern: std::sync::OnceLock<Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            listen_open: Gauge::default(),
            listen_opened: Counter::default(),
            listen_refused: Family::default(),
            rate_limited: Counter::default(),
            tool_output_invalid: Counter::default(),
            frames_written: Counter::default(),
            coalesced: Counter::default(),
            events_delivered: Counter::default(),
            duplicates_dropped: Counter::default(),
            gaps: Counter::default(),
            consumer_restarts: Counter::default(),
            publish_failures: Counter::default(),
            outbox_pending: Gauge::default(),
            outbox_retries: Counter::default(),
            outbox_dropped: Counter::default(),
            requests: Family::default(),
            // 100 µs … ~13 s.
            request_duration: Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.0001, 2.0, 18))),
            draining: Gauge::default(),
            fleet_members: Gauge::default(),
            convergence_timeouts: Counter::default(),
            // 0.5 ms … ~4 s.
            event_age: Histogram::new(exponential_buckets(0.0005, 2.0, 14)),
            // 0.1 ms … ~1.6 s.
            listen_fanout: Histogram::new(exponential_buckets(0.0001, 2.0, 15)),
            era2025: Era2025Metrics::default(),
            tasks: TaskMetrics::default(),
            #[cfg(feature = "events")]
            webhooks: WebhookMetrics::default(),
            build_info: Family::default(),
            audit: AuditMetrics::default(),
            hot: Arc::default(),
            registry: Arc::default(),
        }
        .with_known_labels()
        .registered()
    }
}

impl Metrics {
    /// Create every series whose labels are known in advance, at 0. A series that appears
    /// with its first increment loses that increment to `rate()` and `increase()`, and a
    /// dashboard panel or alert on it reads "no data" instead of 0 (Prometheus' advice:
    /// avoid missing metrics). Labels only traffic decides (method, status, version) still
    /// appear with their first request.
    fn with_known_labels(self) -> Self {
        // `get_or_create` makes the series; the read guard it returns is dropped at once.
        for refusal in ListenRefusal::ALL {
            drop(self.listen_refused.get_or_create(&ReasonLabel { reason: refusal.as_str() }));
        }
        for reason in ["replayed", "invalidated"] {
            drop(self.era2025.resumes.get_or_create(&ReasonLabel { reason }));
        }
        let t = &self.tasks;
        for status in TaskStatus::ALL {
            let label = StatusLabel { status: status.as_str() };
            if status.is_terminal() {
                drop(t.finished.get_or_create(&label));
                drop(t.duration.get_or_create(&label));
            } else {
                drop(t.running.get_or_create(&label));
            }
        }
        for method in ["tasks/update", "tasks/cancel"] {
            drop(t.routed.get_or_create(&MethodLabel { method }));
        }
        for reason in super::tasks::ORPHANED_REASONS {
            drop(t.orphaned.get_or_create(&ReasonLabel { reason }));
        }
        self
    }

    /// With its series registered, once: the registry holds clones of the same series.
    fn registered(mut self) -> Self {
        self.registry = Arc::new(registry::register(&self));
        self
    }
}

impl Metrics {
    /// Set `build_info` to `identity` (once, at start: the executable cannot change under a
    /// running process).
    pub(crate) fn set_build_info(&self, identity: &crate::identity::ExecutionIdentity) {
        let labels = BuildLabels {
            version: identity.version.clone(),
            commit: identity.commit.clone().unwrap_or_default(),
            exe_sha256: identity.exe_sha256.clone().unwrap_or_default(),
            image: identity.image.clone().unwrap_or_default(),
        };
        self.build_info.get_or_create(&labels).set(1);
    }

    /// Count one refused listen request.
    pub(crate) fn listen_refused(&self, refusal: ListenRefusal) {
        self.listen_refused.get_or_create(&ReasonLabel { reason: refusal.as_str() }).inc();
    }

    /// Count one answered request.
    pub(crate) fn record_request(&self, method: &'static str, status: http::StatusCode, took: std::time::Duration) {
        let took = took.as_secs_f64();
        if status == http::StatusCode::OK
            && let Some(at) = McpMethod::ALL.iter().position(|m| m.as_str() == method)
        {
            let (count, duration) = self.hot.answered[at].get_or_init(|| {
                let count = self.requests.get_or_create(&RequestLabels { method, status: 200 }).clone();
                (count, self.request_duration.get_or_create(&MethodLabel { method }).clone())
            });
            count.inc();
            duration.observe(took);
            return;
        }
        self.requests.get_or_create(&RequestLabels { method, status: status.as_u16() }).inc();
        self.request_duration.get_or_create(&MethodLabel { method }).observe(took);
    }

    /// Count one request of the 2026-07-28 era (in `legacy_requests{version}`, beside the
    /// 2025 versions').
    pub(crate) fn record_modern_request(&self) {
        let version = mcp_fleet_protocol::validate::FIRST_MODERN_VERSION;
        self.hot.modern.get_or_init(|| self.era2025.requests.get_or_create(&VersionLabel { version }).clone()).inc();
    }

    /// Encode every metric, including `bus`'s counters and whether this node hears the bus
    /// (`connected`, the consumer's health), as OpenMetrics text.
    pub(crate) fn encode(
        &self,
        bus: &Arc<dyn ServerEventBus>,
        connected: bool,
        catalogs: &ServedRevisions,
        jwks_fetches: Option<u64>,
    ) -> String {
        registry::encode(&self.registry, bus, connected, catalogs, jwks_fetches)
    }
}
