//! The Prometheus registry: every series the handler counts, registered once when its
//! [`Metrics`] are made (registering only clones the series' shared cells, so the registry
//! reads the live counts), and the scrape, which adds what is only known then — the catalog
//! revisions, the bus backend's counters and connection, the JWKS fetches — and encodes both
//! as OpenMetrics text, in the order the series always had.

use std::sync::Arc;

use mcp_fleet_bus::ServerEventBus;
use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::registry::Registry;

use super::Metrics;
use super::audit::AuditMetrics;
use super::collectors::ServedRevisions;
use super::collectors::{BusCollector, RevisionCollector};
use super::era2025::Era2025Metrics;
use super::tasks::TaskMetrics;
#[cfg(feature = "events")]
use super::webhooks::WebhookMetrics;

/// The prefix of every series' name.
const PREFIX: &str = "mcp_fleet";

/// A registry of `m`'s series, built once per [`Metrics`].
pub(super) fn register(m: &Metrics) -> Registry {
    let mut registry = Registry::with_prefix(PREFIX);
    register_listen_and_bus(&mut registry, m);
    register_http_and_fleet(&mut registry, m);
    register_audit(&mut registry, &m.audit);
    register_era2025(&mut registry, &m.era2025);
    register_tasks(&mut registry, &m.tasks);
    #[cfg(feature = "events")]
    register_webhooks(&mut registry, &m.webhooks);
    register_build_and_latency(&mut registry, m);
    registry
}

/// Encode `registry` (see [`register`]), then the series read at scrape time: `bus`'s
/// counters and whether this node hears the bus (`connected`, the consumer's health), the
/// catalog revisions it serves and the JWKS fetches, as OpenMetrics text.
pub(super) fn encode(
    registry: &Registry,
    bus: &Arc<dyn ServerEventBus>,
    connected: bool,
    catalogs: &ServedRevisions,
    jwks_fetches: Option<u64>,
) -> String {
    let mut scraped = Registry::with_prefix(PREFIX);
    if let Some(fetches) = jwks_fetches {
        scraped.register(
            "auth_jwks_fetches",
            "Fetches of the authorization server's JWKS (start, refresh, unknown kid)",
            ConstCounter::new(fetches),
        );
    }
    scraped.register_collector(Box::new(RevisionCollector(catalogs.clone())));
    scraped.register_collector(Box::new(BusCollector { counters: bus.counters(), connected }));
    let mut out = String::new();
    // Encoding into a String cannot fail. A registry encodes its series before its collectors:
    // the JWKS counter comes after every counted series, as it did in one registry.
    let _ = encode_registry(&mut out, registry).and_then(|()| encode_registry(&mut out, &scraped));
    let _ = encode_eof(&mut out);
    out
}

/// The listen path, the bus consumer and publishing (the outbox).
fn register_listen_and_bus(registry: &mut Registry, m: &Metrics) {
    registry.register("listen_streams_open", "Open subscriptions/listen streams", m.listen_open.clone());
    registry.register("listen_streams_opened", "Listen streams opened", m.listen_opened.clone());
    registry.register(
        "listen_streams_refused",
        "Listen requests refused: node_limit, principal_limit, or deaf (the node does not hear the bus)",
        m.listen_refused.clone(),
    );
    registry.register(
        "http_requests_rate_limited",
        "Requests refused with 429 by the per-principal rate limit",
        m.rate_limited.clone(),
    );
    registry.register(
        "tool_output_invalid",
        "Tool results refused with -32603 because structuredContent broke the tool's outputSchema",
        m.tool_output_invalid.clone(),
    );
    registry.register(
        "listen_frames_written",
        "Notification frames written to listen streams",
        m.frames_written.clone(),
    );
    registry.register("listen_coalesced", "Notifications coalesced into a pending one", m.coalesced.clone());
    registry.register("bus_events_delivered", "Bus events handed to the listen router", m.events_delivered.clone());
    registry.register("bus_duplicates_dropped", "Bus events dropped as duplicates", m.duplicates_dropped.clone());
    registry.register("bus_gaps", "Gaps detected (each triggers a conservative invalidation)", m.gaps.clone());
    registry.register(
        "bus_consumer_restarts",
        "Bus consumers found ended or dead and restarted",
        m.consumer_restarts.clone(),
    );
    registry.register(
        "bus_publish_failures",
        "Publishes the bus refused or did not answer in time",
        m.publish_failures.clone(),
    );
    registry.register("outbox_pending", "Catalog changes waiting for the bus to accept them", m.outbox_pending.clone());
    registry.register("outbox_retries", "Outbox publishes that failed and were queued again", m.outbox_retries.clone());
    registry.register(
        "outbox_dropped",
        "Catalog changes dropped because the outbox was full",
        m.outbox_dropped.clone(),
    );
}

/// HTTP requests, draining and the fleet.
fn register_http_and_fleet(registry: &mut Registry, m: &Metrics) {
    registry.register("http_requests", "HTTP requests answered, by JSON-RPC method and status", m.requests.clone());
    registry.register(
        "http_request_duration_seconds",
        "Request arrival to response head (listen: its ack), by JSON-RPC method",
        m.request_duration.clone(),
    );
    registry.register("drain_in_progress", "1 while the node drains after a shutdown", m.draining.clone());
    registry.register("fleet_members", "Live members of the fleet, this node included", m.fleet_members.clone());
    registry.register(
        "fleet_convergence_timeouts",
        "Catalog changes announced because the fleet did not converge in time",
        m.convergence_timeouts.clone(),
    );
}

/// The audit trail.
fn register_audit(registry: &mut Registry, a: &AuditMetrics) {
    registry.register("audit_records_written", "Audit records every sink took", a.written.clone());
    registry.register(
        "audit_records_dropped",
        "Audit records dropped because the queue to the sinks was full (a slow or stalled sink)",
        a.dropped.clone(),
    );
    registry.register("audit_sink_errors", "Audit sink writes or flushes that failed", a.sink_errors.clone());
}

/// The 2025 era's sessions and streams, and requests by protocol version.
fn register_era2025(registry: &mut Registry, l: &Era2025Metrics) {
    registry.register(
        "legacy_sessions_created",
        "2025-era sessions created by initialize on this node",
        l.sessions_created.clone(),
    );
    registry.register(
        "legacy_sessions_ended",
        "2025-era sessions ended by DELETE on this node",
        l.sessions_ended.clone(),
    );
    registry.register(
        "legacy_sessions_not_found",
        "Requests naming an unknown or ended session, or another principal's (404)",
        l.sessions_not_found.clone(),
    );
    registry.register("legacy_streams_open", "Open 2025-era GET streams", l.streams_open.clone());
    registry.register("legacy_streams_refused", "GET streams refused at the node's limit", l.streams_refused.clone());
    registry.register(
        "legacy_stream_resumes",
        "GET streams resumed with Last-Event-ID: replayed or invalidated",
        l.resumes.clone(),
    );
    registry.register("legacy_frames_written", "Notification events written to GET streams", l.frames_written.clone());
    registry.register(
        "legacy_server_requests",
        "Server-to-client requests sent to 2025-era clients",
        l.server_requests.clone(),
    );
    registry.register("protocol_requests", "Requests served, by protocol version", l.requests.clone());
}

/// The tasks extension.
fn register_tasks(registry: &mut Registry, t: &TaskMetrics) {
    registry.register("tasks_created", "Tasks created on this node", t.created.clone());
    registry.register("tasks", "This node's running tasks, by status (working, input_required)", t.running.clone());
    registry.register(
        "tasks_finished",
        "Tasks that reached a terminal status through this node, by status",
        t.finished.clone(),
    );
    registry.register("task_duration_seconds", "Task creation to terminal status, by status", t.duration.clone());
    registry.register(
        "task_requests_routed",
        "tasks/update and tasks/cancel served for a task running on another replica, by method",
        t.routed.clone(),
    );
    registry.register(
        "tasks_orphaned",
        "Tasks failed because their runner was gone: replica_lost, replica_restarted, runner_stopped, drained, expired",
        t.orphaned.clone(),
    );
}

/// The events extension's webhook deliveries.
#[cfg(feature = "events")]
fn register_webhooks(registry: &mut Registry, w: &WebhookMetrics) {
    registry.register("webhook_attempts", "Webhook delivery attempts, by outcome", w.attempts.clone());
    registry.register(
        "webhook_refused",
        "Webhook callbacks refused before connecting (address rules, redirects), by reason",
        w.refused.clone(),
    );
    registry.register("webhook_abandoned", "Webhook deliveries given up, by reason", w.abandoned.clone());
    registry.register(
        "webhook_taken_over",
        "Webhook deliveries claimed after the replica holding them stopped renewing its lease",
        w.taken_over.clone(),
    );
    registry.register("webhook_following", "Webhook deliveries this node follows now", w.following.clone());
}

/// Which code this node runs, and the latencies of the bus and the fan-out.
fn register_build_and_latency(registry: &mut Registry, m: &Metrics) {
    registry.register(
        "build_info",
        "Which code this node runs: version, commit, executable SHA-256, image (value 1)",
        m.build_info.clone(),
    );
    registry.register("bus_event_age_seconds", "Publish-to-router age of bus events", m.event_age.clone());
    registry.register(
        "listen_fanout_seconds",
        "Time to offer one event to every matching local listen stream and write the direct ones",
        m.listen_fanout.clone(),
    );
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mcp_fleet_bus::ServerEventBus;

    use super::super::{ListenRefusal, Metrics};

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

    #[test]
    fn a_scrape_reads_the_series_registered_at_start() {
        let bus: Arc<dyn ServerEventBus> = Arc::new(mcp_fleet_bus::MemoryBus::new());
        let metrics = Metrics::default();
        let scrape = |m: &Metrics| m.encode(&bus, true, &std::collections::BTreeMap::new(), None);
        let before = scrape(&metrics);
        assert_eq!(scrape(&metrics), before, "nothing counted, nothing changed");
        metrics.clone().listen_opened.inc();
        metrics.record_request("tools/call", http::StatusCode::OK, std::time::Duration::from_millis(1));
        let after = scrape(&metrics);
        assert!(after.contains("mcp_fleet_listen_streams_opened_total 1\n"), "{after}");
        assert!(after.contains("mcp_fleet_http_requests_total{method=\"tools/call\",status=\"200\"} 1\n"), "{after}");
        assert!(after.ends_with("# EOF\n") && after.matches("# EOF").count() == 1, "one end marker");
    }
}
