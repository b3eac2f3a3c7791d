//! [`Report`]: the run's result as the `--json` document (schema `mcp-fleet-loadtest/1`,
//! documented in `loadtest/README.md`); [`table`](crate::table) renders it for people.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::args::Args;
use crate::hist::{Summary, encode, new_histogram, record};
use crate::metrics::NodeCounters;
use crate::plan::Plan;
use crate::publish::{PublishOutcome, Shape};
use crate::results::{LoaderResult, PhaseRequests, histogram};
use crate::verify::{FrameCounts, LostExample};

/// The JSON schema name and version.
pub const SCHEMA: &str = "mcp-fleet-loadtest/1";

/// Everything a run found.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: String,
    /// Start of the run, ms since the Unix epoch.
    pub started_at_ms: u64,
    /// What was asked for.
    pub inputs: Inputs,
    /// Per-phase figures.
    pub phases: Phases,
    /// The loss check.
    pub verify: VerifyReport,
    /// The nodes' CPU and memory (`--server-pid`).
    pub server: Option<ServerReport>,
    /// Each scraped node's counters.
    pub nodes: Vec<NodeReport>,
    /// The exact histograms behind the summaries, for charts (absent in older files).
    #[serde(default)]
    pub histograms: Histograms,
    /// Each accepted publish, in order, for charts over time (absent in older files).
    #[serde(default)]
    pub timeline: Vec<EventPoint>,
}

/// The run's latency histograms, exactly (HDR V2, base64; an empty string is an empty
/// histogram): what the `…Us` summaries were computed from.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Histograms {
    /// Sent → frame arrived, every delivery.
    pub delivery_latency_us: String,
    /// Per publish: sent → the last stream that got it.
    pub fanout_us: String,
    /// Sent → accepted, per publish.
    pub publish_latency_us: String,
    /// Per publish: sent → every client converged (`--relist`).
    pub convergence_us: String,
    /// Per (client, publish): sent → that client converged (`--relist`).
    pub client_convergence_us: String,
    /// Re-list page requests after changes (`--relist`).
    pub storm_request_us: String,
}

/// One accepted publish, for the charts over time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventPoint {
    /// Sequence number.
    pub seq: u64,
    /// When it was sent, µs after the event phase began.
    pub at_us: u64,
    /// Sent → accepted, µs.
    pub publish_us: u64,
    /// Frames matched to it.
    pub deliveries: u64,
    /// Sent → the last stream that got it, µs (none: no stream got it).
    pub last_stream_us: Option<u64>,
    /// Sent → every client converged, µs (`--relist`; none: not converged).
    pub converged_us: Option<u64>,
}

/// The run's inputs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Inputs {
    /// The clients' protocol era: `2026` (listen streams) or `2025` (session GET streams).
    /// Files written before `--era` existed are 2026's.
    #[serde(default = "era_2026")]
    pub era: String,
    /// MCP endpoints.
    pub urls: Vec<String>,
    /// `http1` or `h2c`.
    pub protocol: String,
    /// Listen streams per h2c connection (0 on HTTP/1.1).
    pub h2_streams_per_conn: usize,
    /// Listen streams.
    pub streams: usize,
    /// Loader processes (0: the coordinator itself).
    pub workers: usize,
    /// `admin` or `bus`.
    pub publish_via: String,
    /// Admin addresses, or the bus backend.
    pub publish_targets: Vec<String>,
    /// The load shape.
    pub shape: ShapeInput,
    /// Normalized mix weights by kind.
    pub mix: BTreeMap<String, f64>,
    /// URI population.
    pub uris: u32,
    /// URIs per stream.
    pub uris_per_stream: u32,
    /// Tenants.
    pub tenants: u32,
    /// Whether clients re-listed.
    pub relist: bool,
    /// Re-list requests in flight per loader.
    pub relist_concurrency: usize,
    /// Whether loss made the run fail.
    pub verify: bool,
    /// The change sequence's seed.
    pub seed: u64,
    /// Settle limit, ms.
    pub settle_ms: u64,
}

/// The load shape as given.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase", tag = "kind")]
pub enum ShapeInput {
    /// `--events N --interval-ms I`.
    Events {
        /// Events.
        events: usize,
        /// Pause, ms.
        interval_ms: u64,
    },
    /// `--rate R --duration S`.
    Rate {
        /// Events per second.
        rate: f64,
        /// Seconds.
        duration_secs: f64,
    },
    /// `--burst N`.
    Burst {
        /// Events.
        events: usize,
        /// Publishes in flight.
        concurrency: usize,
    },
}

/// Per-phase figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Phases {
    /// Opening the streams (and the first listing with `--relist`).
    pub open: OpenPhase,
    /// Publishing and delivering.
    pub events: EventsPhase,
    /// Re-listing (`--relist` only).
    pub relist: Option<RelistPhase>,
}

/// Opening the streams.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenPhase {
    /// Streams asked for.
    pub streams: u64,
    /// Streams acknowledged.
    pub opened: u64,
    /// Listen attempts that failed before a first acknowledgement.
    pub failures: u64,
    /// Acknowledgements not honouring a followed list.
    pub unhonoured: u64,
    /// Until every stream was ready, ms.
    pub duration_ms: f64,
    /// Open permit → acknowledgement, µs.
    pub latency_us: Summary,
}

/// Publishing and delivering.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventsPhase {
    /// Publishes accepted.
    pub published: u64,
    /// Publishes that failed.
    pub publish_failed: u64,
    /// The first few failures.
    pub publish_errors: Vec<String>,
    /// First send → last acceptance, ms.
    pub duration_ms: f64,
    /// Last acceptance → every stream covered (or the settle limit), ms.
    pub settle_ms: f64,
    /// Sent → accepted, µs.
    pub publish_latency_us: Summary,
    /// Frames matched to a publish.
    pub deliveries: u64,
    /// Sent → frame arrived, µs.
    pub delivery_latency_us: Summary,
    /// Per publish: sent → the last stream that got exactly that version, µs.
    pub fanout_us: Summary,
    /// Streams that lost nothing.
    pub streams_complete: u64,
    /// Frames matching no publish of this run.
    pub unmatched_frames: u64,
}

/// Re-list traffic of one phase, summarized.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPhase {
    /// Page requests.
    pub requests: u64,
    /// Failed page requests.
    pub errors: u64,
    /// Whole-list fetches.
    pub fetches: u64,
    /// Failed fetches (previous snapshot kept).
    pub fetch_errors: u64,
    /// Failed fetches by error kind.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Page requests per second between the first and the last one.
    pub rate_per_sec: f64,
    /// Page request latency, µs.
    pub request_latency_us: Summary,
    /// Whole-fetch latency, µs.
    pub fetch_latency_us: Summary,
}

/// Re-listing clients.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelistPhase {
    /// Each client's first listing.
    pub initial: RequestPhase,
    /// The storm after changes.
    pub storm: RequestPhase,
    /// Per publish: sent → every client holds a snapshot fetched after hearing it, µs.
    pub convergence_us: Summary,
    /// Per (client, publish): sent → that client converged, µs.
    pub client_convergence_us: Summary,
    /// (client, publish) pairs that never converged.
    pub unconverged: u64,
    /// Final snapshot revisions per list: revision → clients.
    pub revisions: BTreeMap<String, BTreeMap<String, u64>>,
}

/// The loss check.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    /// Whether `--verify` was given (figures are computed either way).
    pub enabled: bool,
    /// Whether nothing was lost, no epoch changed without a gap, no frame came for a key the
    /// stream does not follow and none for another tenant's change.
    pub passed: bool,
    /// (stream, publish) pairs checked.
    pub checked: u64,
    /// Pairs lost.
    pub lost: u64,
    /// Pairs covered only by a gap frame.
    pub covered_by_gap: u64,
    /// Pairs covered only by a reconnect.
    pub covered_by_reconnect: u64,
    /// Frames of a change scoped to another tenant than their stream's (a scope leak).
    pub misrouted: u64,
    /// Frame counters.
    #[serde(flatten)]
    pub counts: FrameCounts,
    /// Listen disconnects by error kind.
    pub disconnects: BTreeMap<String, u64>,
    /// Up to ten lost pairs.
    pub examples: Vec<LostExample>,
}

/// The nodes' own cost (`--server-pid`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerReport {
    /// The pids.
    pub pids: Vec<u32>,
    /// CPU during the event phase and settle, ms (10 ms ticks).
    pub cpu_ms: u64,
    /// That CPU per frame received by the loaders, µs.
    pub cpu_per_delivery_us: f64,
    /// RSS before the streams opened, KiB (summed).
    pub rss_kb_before: u64,
    /// RSS with every stream open, KiB (summed).
    pub rss_kb_open: u64,
    /// (open − before) / streams, bytes.
    pub rss_per_stream_bytes: f64,
}

/// One node's counters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeReport {
    /// `host:port` scraped.
    pub address: String,
    /// Before the event phase.
    pub before: Option<NodeCounters>,
    /// After settling.
    pub after: Option<NodeCounters>,
    /// after − before.
    pub delta: Option<NodeCounters>,
    /// Why a scrape failed.
    pub error: Option<String>,
}

/// Raw figures the coordinator gathered, for [`Report::build`].
#[derive(Debug)]
pub struct Gathered {
    /// Run start, µs since the Unix epoch.
    pub started_us: u64,
    /// Until every stream was ready, µs.
    pub open_us: u64,
    /// Last acceptance → settled, µs.
    pub settle_us: u64,
    /// The event phase.
    pub published: PublishOutcome,
    /// Every loader's result, merged.
    pub result: LoaderResult,
    /// The server's figures.
    pub server: Option<ServerReport>,
    /// The nodes' counters.
    pub nodes: Vec<NodeReport>,
    /// How publishing was done.
    pub publisher: (&'static str, Vec<String>),
}

impl Report {
    /// Assemble the report.
    pub fn build(args: &Args, plan: &Plan, shape: Shape, g: Gathered) -> Report {
        let r = &g.result;
        let timeline = timeline(&g.published, r);
        let mut fanout = new_histogram();
        let mut convergence = new_histogram();
        for point in &timeline {
            if let Some(us) = point.last_stream_us {
                record(&mut fanout, us);
            }
            if let Some(us) = point.converged_us {
                record(&mut convergence, us);
            }
        }
        let lost = r.verdict.lost;
        let passed =
            lost == 0 && r.counts.epoch_changes_without_gap == 0 && r.counts.unexpected == 0 && r.misrouted == 0;
        let relist = args.relist.then(|| RelistPhase {
            initial: request_phase(&r.initial),
            storm: request_phase(&r.relist),
            convergence_us: Summary::of(&convergence),
            client_convergence_us: summary(&r.client_convergence),
            unconverged: r.convergence.iter().map(|c| c.unconverged).sum(),
            revisions: r.revisions.clone(),
        });
        Report {
            schema: SCHEMA.to_owned(),
            started_at_ms: g.started_us / 1000,
            inputs: inputs(args, plan, shape, g.publisher),
            phases: Phases {
                open: OpenPhase {
                    streams: r.streams,
                    opened: r.opened,
                    failures: r.open_failures,
                    unhonoured: r.unhonoured,
                    duration_ms: g.open_us as f64 / 1000.0,
                    latency_us: summary(&r.open_latency),
                },
                events: EventsPhase {
                    published: g.published.records.len() as u64,
                    publish_failed: g.published.failed,
                    publish_errors: g.published.errors.clone(),
                    duration_ms: g.published.ended_us.saturating_sub(g.published.started_us) as f64 / 1000.0,
                    settle_ms: g.settle_us as f64 / 1000.0,
                    publish_latency_us: Summary::of(&g.published.latency),
                    deliveries: histogram(&r.delivery_latency).map(|h| h.len()).unwrap_or_default(),
                    delivery_latency_us: summary(&r.delivery_latency),
                    fanout_us: Summary::of(&fanout),
                    streams_complete: r.streams_complete,
                    unmatched_frames: r.unmatched_frames,
                },
                relist,
            },
            verify: VerifyReport {
                enabled: args.verify,
                passed,
                checked: r.verdict.checked,
                lost,
                covered_by_gap: r.verdict.covered_by_gap,
                covered_by_reconnect: r.verdict.covered_by_reconnect,
                misrouted: r.misrouted,
                counts: r.counts,
                disconnects: r.disconnects.clone(),
                examples: r.verdict.examples.clone(),
            },
            server: g.server,
            nodes: g.nodes,
            histograms: Histograms {
                delivery_latency_us: r.delivery_latency.clone(),
                fanout_us: encode(&fanout),
                publish_latency_us: encode(&g.published.latency),
                convergence_us: if args.relist { encode(&convergence) } else { String::new() },
                client_convergence_us: r.client_convergence.clone(),
                storm_request_us: r.relist.latency.clone(),
            },
            timeline,
        }
    }

    /// Read a report that [`write_json`](Report::write_json) wrote (schema [`SCHEMA`]).
    pub fn read_json(path: &std::path::Path) -> Result<Report, crate::error::LoadtestError> {
        let what = || format!("reading {}", path.display());
        let bytes = std::fs::read(path).map_err(crate::error::LoadtestError::io(what()))?;
        let report: Report = serde_json::from_slice(&bytes).map_err(|e| {
            crate::error::LoadtestError::Usage(format!("{}: not a load-test report: {e}", path.display()))
        })?;
        if report.schema != SCHEMA {
            return Err(crate::error::LoadtestError::Usage(format!(
                "{}: schema {:?}, expected {SCHEMA:?}",
                path.display(),
                report.schema
            )));
        }
        Ok(report)
    }

    /// Write the report as pretty JSON to `path`.
    pub fn write_json(&self, path: &std::path::Path) -> Result<(), crate::error::LoadtestError> {
        let json = serde_json::to_vec_pretty(self).map_err(|e| crate::error::LoadtestError::Usage(e.to_string()))?;
        std::fs::write(path, json).map_err(crate::error::LoadtestError::io(format!("writing {}", path.display())))
    }

    /// The process exit code: 1 if `--verify` was given and verification failed.
    pub fn exit_code(&self) -> i32 {
        if self.verify.enabled && !self.verify.passed { 1 } else { 0 }
    }
}

fn era_2026() -> String {
    crate::args::Era::V2026.as_str().to_owned()
}

/// Each accepted publish with what its streams and clients made of it, in send order.
fn timeline(published: &PublishOutcome, r: &LoaderResult) -> Vec<EventPoint> {
    let mut points: Vec<EventPoint> = published
        .records
        .iter()
        .map(|p| {
            let seq = p.seq as usize;
            let delivered = r.deliveries.get(seq).filter(|d| d.count > 0);
            let converged = r.convergence.get(seq).filter(|c| c.clients > 0 && c.last_us > 0);
            EventPoint {
                seq: p.seq,
                at_us: p.sent_us.saturating_sub(published.started_us),
                publish_us: p.accepted_us.saturating_sub(p.sent_us),
                deliveries: delivered.map(|d| d.count).unwrap_or_default(),
                last_stream_us: delivered.map(|d| d.last_us.saturating_sub(p.sent_us)),
                converged_us: converged.map(|c| c.last_us.saturating_sub(p.sent_us)),
            }
        })
        .collect();
    points.sort_by_key(|p| (p.at_us, p.seq));
    points
}

fn summary(encoded: &str) -> Summary {
    histogram(encoded).map(|h| Summary::of(&h)).unwrap_or_default()
}

fn request_phase(p: &PhaseRequests) -> RequestPhase {
    let secs = p.last_us.saturating_sub(p.first_us) as f64 / 1e6;
    RequestPhase {
        requests: p.requests,
        errors: p.errors,
        fetches: p.fetches,
        fetch_errors: p.fetch_errors,
        errors_by_kind: p.errors_by_kind.clone(),
        rate_per_sec: if secs > 0.0 { p.requests as f64 / secs } else { 0.0 },
        request_latency_us: summary(&p.latency),
        fetch_latency_us: summary(&p.fetch_latency),
    }
}

fn inputs(args: &Args, plan: &Plan, shape: Shape, publisher: (&'static str, Vec<String>)) -> Inputs {
    let shape = match shape {
        Shape::Events { n, interval } => ShapeInput::Events { events: n, interval_ms: interval.as_millis() as u64 },
        Shape::Rate { rate, duration } => ShapeInput::Rate { rate, duration_secs: duration.as_secs_f64() },
        Shape::Burst { n } => ShapeInput::Burst { events: n, concurrency: args.publish_concurrency },
    };
    Inputs {
        era: plan.era.as_str().to_owned(),
        urls: plan.urls.clone(),
        protocol: if args.h2_streams_per_conn == 0 { "http1" } else { "h2c" }.to_owned(),
        h2_streams_per_conn: args.h2_streams_per_conn,
        streams: plan.streams,
        workers: args.workers,
        publish_via: publisher.0.to_owned(),
        publish_targets: publisher.1,
        shape,
        mix: plan.mix.iter().map(|(k, w)| (k.as_str().to_owned(), *w)).collect(),
        uris: plan.uris,
        uris_per_stream: plan.uris_per_stream,
        tenants: plan.tenants,
        relist: args.relist,
        relist_concurrency: args.relist_concurrency,
        verify: args.verify,
        seed: plan.seed,
        settle_ms: args.settle_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::ShapeInput;

    #[test]
    fn shape_fields_are_camel_case_as_documented() {
        let events = serde_json::to_value(ShapeInput::Events { events: 3, interval_ms: 5 }).unwrap();
        assert_eq!(events, serde_json::json!({"kind": "events", "events": 3, "intervalMs": 5}));
        let rate = serde_json::to_value(ShapeInput::Rate { rate: 2.0, duration_secs: 1.5 }).unwrap();
        assert_eq!(rate, serde_json::json!({"kind": "rate", "rate": 2.0, "durationSecs": 1.5}));
    }
}
