//! Operational metrics in the Prometheus/OpenMetrics text format (prometheus-client).
//!
//! Counters for the listen path (open streams, frames written, coalesced notifications), the
//! bus consumer (events, duplicates dropped, gaps and the conservative invalidations they
//! trigger, restarts), publishing (failures, the outbox of catalog changes), plus the bus
//! backend's own counters read at scrape time.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mcp_fleet_bus::{BusCounters, ServerEventBus};

use crate::fleet::CatalogRevisions;
use mcp_fleet_protocol::Method as McpMethod;
use mcp_fleet_protocol::tasks::TaskStatus;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

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
    pub(crate) legacy: LegacyMetrics,
    /// The tasks extension.
    pub(crate) tasks: TaskMetrics,
    /// `build_info{version, commit, exe_sha256, image} 1`: which code this node runs.
    pub(crate) build_info: Family<BuildLabels, Gauge>,
    /// The audit trail (see `crate::audit`).
    pub(crate) audit: AuditMetrics,
    /// The series the hot path counts in, looked up once instead of per request.
    hot: Arc<HotSeries>,
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

/// Metrics of the audit trail.
#[derive(Debug, Clone, Default)]
pub(crate) struct AuditMetrics {
    /// Records every sink took.
    pub(crate) written: Counter,
    /// Records dropped because the queue to the sinks was full (a slow or stalled sink).
    pub(crate) dropped: Counter,
    /// Writes or flushes a sink failed.
    pub(crate) sink_errors: Counter,
}

/// Labels of [`Metrics::build_info`] (absent values are empty strings).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct BuildLabels {
    pub(crate) version: String,
    pub(crate) commit: String,
    pub(crate) exe_sha256: String,
    pub(crate) image: String,
}

/// Metrics of the tasks extension (see `crate::tasks`).
#[derive(Debug, Clone)]
pub(crate) struct TaskMetrics {
    /// Tasks created on this node.
    pub(crate) created: Counter,
    /// This node's running tasks, by status (`working`, `input_required`).
    running: Family<StatusLabel, Gauge>,
    /// Tasks that reached a terminal status through this node, by status.
    finished: Family<StatusLabel, Counter>,
    /// Creation to terminal status, by status, in seconds.
    duration: Family<StatusLabel, Histogram>,
    /// `tasks/update` and `tasks/cancel` served here for a task running on another replica
    /// (which the change reached through the bus), by method.
    routed: Family<MethodLabel, Counter>,
    /// Tasks failed because their runner was gone, by reason.
    orphaned: Family<ReasonLabel, Counter>,
}

impl Default for TaskMetrics {
    fn default() -> Self {
        TaskMetrics {
            created: Counter::default(),
            running: Family::default(),
            finished: Family::default(),
            // 10 ms … ~23 h.
            duration: Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.01, 3.0, 16))),
            routed: Family::default(),
            orphaned: Family::default(),
        }
    }
}

/// Label of the task metrics by status.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct StatusLabel {
    pub(crate) status: &'static str,
}

impl TaskMetrics {
    /// A task reached `status` after `took`.
    pub(crate) fn finished(&self, status: TaskStatus, took: std::time::Duration) {
        let label = StatusLabel { status: status.as_str() };
        self.finished.get_or_create(&label).inc();
        self.duration.get_or_create(&label).observe(took.as_secs_f64());
    }

    /// A task was failed because its runner was gone (`reason`).
    pub(crate) fn orphaned(&self, reason: &'static str) {
        self.orphaned.get_or_create(&ReasonLabel { reason }).inc();
    }

    /// A `method` for a task running elsewhere was served here.
    pub(crate) fn routed(&self, method: &'static str) {
        self.routed.get_or_create(&MethodLabel { method }).inc();
    }

    /// One running task of this node, counted under `status` until dropped.
    pub(crate) fn active(&self, status: TaskStatus) -> ActiveTask {
        let gauge = self.running.get_or_create(&StatusLabel { status: status.as_str() }).clone();
        gauge.inc();
        ActiveTask { metrics: self.clone(), gauge }
    }
}

/// A running task in [`TaskMetrics`]'s gauge of its status (see [`TaskMetrics::active`]).
pub(crate) struct ActiveTask {
    metrics: TaskMetrics,
    gauge: Gauge,
}

impl ActiveTask {
    /// It moved to `status`.
    pub(crate) fn set(&mut self, status: TaskStatus) {
        self.gauge.dec();
        self.gauge = self.metrics.running.get_or_create(&StatusLabel { status: status.as_str() }).clone();
        self.gauge.inc();
    }
}

impl Drop for ActiveTask {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

/// Metrics of 2025-era clients (see `crate::legacy`).
#[derive(Debug, Clone, Default)]
pub(crate) struct LegacyMetrics {
    /// Sessions created by `initialize` on this node.
    pub(crate) sessions_created: Counter,
    /// Sessions ended by DELETE on this node.
    pub(crate) sessions_ended: Counter,
    /// Requests naming an unknown or ended session, or another principal's (answered 404).
    pub(crate) sessions_not_found: Counter,
    /// Open GET streams.
    pub(crate) streams_open: Gauge,
    /// GET streams refused at the node's limit.
    pub(crate) streams_refused: Counter,
    /// GET streams opened with `Last-Event-ID`: `replayed` from the history, or `invalidated`
    /// (the history could not tell: the gap rule).
    pub(crate) resumes: Family<ReasonLabel, Counter>,
    /// Notification events written to GET streams.
    pub(crate) frames_written: Counter,
    /// Server-to-client requests sent (sampling, elicitation, roots).
    pub(crate) server_requests: Counter,
    /// Requests served, by the protocol version they speak.
    pub(crate) requests: Family<VersionLabel, Counter>,
}

/// Label of [`LegacyMetrics::requests`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct VersionLabel {
    pub(crate) version: &'static str,
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
            legacy: LegacyMetrics::default(),
            tasks: TaskMetrics::default(),
            build_info: Family::default(),
            audit: AuditMetrics::default(),
            hot: Arc::default(),
        }
        .with_known_labels()
    }
}

/// Why a listen request was refused: the router's (`deaf`, `node_limit`), the auth gate's
/// (`principal_limit`) and the byte and address budgets' (`listen/budget.rs`). The one
/// spelling of each reason, at the refusal sites and in `listen_streams_refused{reason}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListenRefusal {
    /// The node does not hear the bus.
    Deaf,
    /// The node's `max_streams`.
    NodeLimit,
    /// The principal's `max_streams_per_principal`.
    PrincipalLimit,
    /// A subscribed URI longer than `max_uri_bytes`.
    UriTooLong,
    /// A followed task id that is not one this server could have minted.
    BadTaskId,
    /// A subscribed URI naming nothing (`listen_uris_must_exist`).
    UnknownUri,
    /// The stream's `max_subscription_bytes_per_stream`.
    StreamBytes,
    /// The principal's `max_subscription_bytes_per_principal`.
    PrincipalBytes,
    /// An anonymous address's `max_streams_per_address`.
    AddressLimit,
}

impl ListenRefusal {
    /// Every reason, for the series known in advance.
    const ALL: [ListenRefusal; 9] = [
        ListenRefusal::Deaf,
        ListenRefusal::NodeLimit,
        ListenRefusal::PrincipalLimit,
        ListenRefusal::UriTooLong,
        ListenRefusal::BadTaskId,
        ListenRefusal::UnknownUri,
        ListenRefusal::StreamBytes,
        ListenRefusal::PrincipalBytes,
        ListenRefusal::AddressLimit,
    ];

    /// The `reason` label.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ListenRefusal::Deaf => "deaf",
            ListenRefusal::NodeLimit => "node_limit",
            ListenRefusal::PrincipalLimit => "principal_limit",
            ListenRefusal::UriTooLong => "uri_too_long",
            ListenRefusal::BadTaskId => "bad_task_id",
            ListenRefusal::UnknownUri => "unknown_uri",
            ListenRefusal::StreamBytes => "stream_bytes",
            ListenRefusal::PrincipalBytes => "principal_bytes",
            ListenRefusal::AddressLimit => "address_limit",
        }
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
            drop(self.legacy.resumes.get_or_create(&ReasonLabel { reason }));
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
        for why in crate::tasks::Orphaned::ALL {
            drop(t.orphaned.get_or_create(&ReasonLabel { reason: why.label() }));
        }
        self
    }
}

/// Label of [`Metrics::listen_refused`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct ReasonLabel {
    pub(crate) reason: &'static str,
}

/// Labels of [`Metrics::request_duration`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct MethodLabel {
    /// The JSON-RPC method (as in [`RequestLabels::method`]).
    pub(crate) method: &'static str,
}

/// Labels of [`Metrics::requests`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct RequestLabels {
    /// The JSON-RPC method (`other` for unknown ones, `invalid` before one could be read,
    /// `notification` for notifications).
    pub(crate) method: &'static str,
    /// The HTTP status.
    pub(crate) status: u16,
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
        self.hot.modern.get_or_init(|| self.legacy.requests.get_or_create(&VersionLabel { version }).clone()).inc();
    }

    /// Encode every metric, including `bus`'s counters and whether this node hears the bus
    /// (`connected`, the consumer's health), as OpenMetrics text.
    pub(crate) fn encode(
        &self,
        bus: &Arc<dyn ServerEventBus>,
        connected: bool,
        catalogs: &std::collections::BTreeMap<String, CatalogRevisions>,
        jwks_fetches: Option<u64>,
    ) -> String {
        let mut registry = Registry::with_prefix("mcp_fleet");
        let m = self.clone();
        registry.register("listen_streams_open", "Open subscriptions/listen streams", m.listen_open);
        registry.register("listen_streams_opened", "Listen streams opened", m.listen_opened);
        registry.register(
            "listen_streams_refused",
            "Listen requests refused: node_limit, principal_limit, or deaf (the node does not hear the bus)",
            m.listen_refused,
        );
        registry.register(
            "http_requests_rate_limited",
            "Requests refused with 429 by the per-principal rate limit",
            m.rate_limited,
        );
        registry.register(
            "tool_output_invalid",
            "Tool results refused with -32603 because structuredContent broke the tool's outputSchema",
            m.tool_output_invalid,
        );
        registry.register("listen_frames_written", "Notification frames written to listen streams", m.frames_written);
        registry.register("listen_coalesced", "Notifications coalesced into a pending one", m.coalesced);
        registry.register("bus_events_delivered", "Bus events handed to the listen router", m.events_delivered);
        registry.register("bus_duplicates_dropped", "Bus events dropped as duplicates", m.duplicates_dropped);
        registry.register("bus_gaps", "Gaps detected (each triggers a conservative invalidation)", m.gaps);
        registry.register(
            "bus_consumer_restarts",
            "Bus consumers found ended or dead and restarted",
            m.consumer_restarts,
        );
        registry.register(
            "bus_publish_failures",
            "Publishes the bus refused or did not answer in time",
            m.publish_failures,
        );
        registry.register("outbox_pending", "Catalog changes waiting for the bus to accept them", m.outbox_pending);
        registry.register("outbox_retries", "Outbox publishes that failed and were queued again", m.outbox_retries);
        registry.register("outbox_dropped", "Catalog changes dropped because the outbox was full", m.outbox_dropped);
        registry.register("http_requests", "HTTP requests answered, by JSON-RPC method and status", m.requests);
        registry.register(
            "http_request_duration_seconds",
            "Request arrival to response head (listen: its ack), by JSON-RPC method",
            m.request_duration,
        );
        registry.register("drain_in_progress", "1 while the node drains after a shutdown", m.draining);
        registry.register("fleet_members", "Live members of the fleet, this node included", m.fleet_members);
        registry.register(
            "fleet_convergence_timeouts",
            "Catalog changes announced because the fleet did not converge in time",
            m.convergence_timeouts,
        );
        let a = m.audit;
        registry.register("audit_records_written", "Audit records every sink took", a.written);
        registry.register(
            "audit_records_dropped",
            "Audit records dropped because the queue to the sinks was full (a slow or stalled sink)",
            a.dropped,
        );
        registry.register("audit_sink_errors", "Audit sink writes or flushes that failed", a.sink_errors);
        let l = m.legacy;
        registry.register(
            "legacy_sessions_created",
            "2025-era sessions created by initialize on this node",
            l.sessions_created,
        );
        registry.register("legacy_sessions_ended", "2025-era sessions ended by DELETE on this node", l.sessions_ended);
        registry.register(
            "legacy_sessions_not_found",
            "Requests naming an unknown or ended session, or another principal's (404)",
            l.sessions_not_found,
        );
        registry.register("legacy_streams_open", "Open 2025-era GET streams", l.streams_open);
        registry.register("legacy_streams_refused", "GET streams refused at the node's limit", l.streams_refused);
        registry.register(
            "legacy_stream_resumes",
            "GET streams resumed with Last-Event-ID: replayed or invalidated",
            l.resumes,
        );
        registry.register("legacy_frames_written", "Notification events written to GET streams", l.frames_written);
        registry.register(
            "legacy_server_requests",
            "Server-to-client requests sent to 2025-era clients",
            l.server_requests,
        );
        registry.register("protocol_requests", "Requests served, by protocol version", l.requests);
        let t = m.tasks;
        registry.register("tasks_created", "Tasks created on this node", t.created);
        registry.register("tasks", "This node's running tasks, by status (working, input_required)", t.running);
        registry.register(
            "tasks_finished",
            "Tasks that reached a terminal status through this node, by status",
            t.finished,
        );
        registry.register("task_duration_seconds", "Task creation to terminal status, by status", t.duration);
        registry.register(
            "task_requests_routed",
            "tasks/update and tasks/cancel served for a task running on another replica, by method",
            t.routed,
        );
        registry.register(
            "tasks_orphaned",
            "Tasks failed because their runner was gone: replica_lost, replica_restarted, runner_stopped, drained, expired",
            t.orphaned,
        );
        registry.register(
            "build_info",
            "Which code this node runs: version, commit, executable SHA-256, image (value 1)",
            m.build_info,
        );
        registry.register_collector(Box::new(RevisionCollector(catalogs.clone())));
        registry.register("bus_event_age_seconds", "Publish-to-router age of bus events", m.event_age);
        registry.register(
            "listen_fanout_seconds",
            "Time to offer one event to every matching local listen stream and write the direct ones",
            m.listen_fanout,
        );
        registry.register_collector(Box::new(BusCollector { counters: bus.counters(), connected }));
        if let Some(fetches) = jwks_fetches {
            registry.register(
                "auth_jwks_fetches",
                "Fetches of the authorization server's JWKS (start, refresh, unknown kid)",
                ConstCounter::new(fetches),
            );
        }
        let mut out = String::new();
        // Encoding into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}

/// `mcp_fleet_catalog_revision_info{scope, list, revision} 1`: which revision of each list
/// this node serves, so an operator sees which replica serves what.
#[derive(Debug)]
struct RevisionCollector(std::collections::BTreeMap<String, CatalogRevisions>);

impl Collector for RevisionCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let family = Family::<[(&'static str, String); 3], Gauge>::default();
        for (scope, revisions) in &self.0 {
            let lists = [
                ("tools", &revisions.tools),
                ("prompts", &revisions.prompts),
                ("resources", &revisions.resources),
                ("resourceTemplates", &revisions.resource_templates),
            ];
            for (list, revision) in lists {
                let labels = [("scope", scope.clone()), ("list", list.to_owned()), ("revision", revision.clone())];
                family.get_or_create(&labels).set(1);
            }
        }
        let help = "The content revision of each catalog list this node serves (value 1)";
        family.encode(encoder.encode_descriptor("catalog_revision_info", help, None, family.metric_type())?)
    }
}

#[derive(Debug)]
struct BusCollector {
    counters: Arc<BusCounters>,
    connected: bool,
}

impl Collector for BusCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let c = &self.counters;
        for (name, help, value) in [
            ("bus_published", "Events published through this node", &c.published),
            ("bus_received", "Events received from the broker", &c.received),
            ("bus_undecodable", "Broker payloads that could not be decoded", &c.undecodable),
            ("bus_backend_gaps", "Gaps reported by the backend", &c.gaps),
            ("bus_reconnects", "Reconnections to the broker", &c.reconnects),
            (
                "bus_backend_consumer_restarts",
                "Backend consumers re-created after a stall or failure",
                &c.consumer_restarts,
            ),
        ] {
            let counter = ConstCounter::new(value.load(Ordering::Relaxed));
            counter.encode(encoder.encode_descriptor(name, help, None, counter.metric_type())?)?;
        }
        let up = ConstGauge::new(i64::from(self.connected));
        up.encode(encoder.encode_descriptor(
            "bus_connected",
            "1 when this node's bus consumer is running and connected",
            None,
            up.metric_type(),
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_node_exports_its_known_series_at_zero() {
        let bus: Arc<dyn ServerEventBus> = Arc::new(mcp_fleet_bus::MemoryBus::new());
        let text = Metrics::default().encode(&bus, true, &std::collections::BTreeMap::new(), None);
        for refusal in ListenRefusal::ALL {
            let reason = refusal.as_str();
            let line = format!("mcp_fleet_listen_streams_refused_total{{reason=\"{reason}\"}} 0\n");
            assert!(text.contains(&line), "{line}");
        }
        for series in [
            "mcp_fleet_legacy_stream_resumes_total{reason=\"invalidated\"} 0\n",
            "mcp_fleet_tasks{status=\"input_required\"} 0\n",
            "mcp_fleet_tasks_finished_total{status=\"cancelled\"} 0\n",
            "mcp_fleet_task_duration_seconds_count{status=\"failed\"} 0\n",
            "mcp_fleet_task_requests_routed_total{method=\"tasks/cancel\"} 0\n",
            "mcp_fleet_tasks_orphaned_total{reason=\"replica_lost\"} 0\n",
            "mcp_fleet_audit_records_dropped_total 0\n",
        ] {
            assert!(text.contains(series), "{series}");
        }
        assert!(!text.contains("mcp_fleet_tasks{status=\"completed\"}"), "a terminal status is no running task");
    }
}
