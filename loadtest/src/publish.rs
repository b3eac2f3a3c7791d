//! Publishing changes: through a node's admin endpoint (`POST /admin/notify`, with its bearer
//! token) or straight onto the bus as a reloader on another pod would, in one of three load
//! shapes ([`Shape`]). Every accepted publish becomes a [`PublishRecord`] the loaders learn of
//! at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use hdrhistogram::Histogram;
use http::{Request, header};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_fleet_bus::{BusError, Change, EventKind, ServerEventBus};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::args::Args;
use crate::clock::Clock;
use crate::error::LoadtestError;
use crate::hist::{new_histogram, record};
use crate::plan::{Key, Plan, PlannedChange, tenant_name, uri};
use crate::verify::PublishRecord;

/// How long one publish may take.
pub const PUBLISH_TIMEOUT: Duration = Duration::from_secs(10);

/// Connect to the bus at `url` (any scheme `mcp-fleet-bus-connect` knows), publishing as
/// `node_id`, as a reloader on another pod would.
pub async fn connect_bus(url: &str, node_id: &str) -> Result<Arc<dyn ServerEventBus>, BusError> {
    mcp_fleet_bus_connect::connect(url, node_id).await
}

/// What the publisher said when it accepted a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepted {
    /// The bus epoch, if reported.
    pub epoch: Option<u64>,
    /// The assigned version.
    pub version: u64,
}

/// Where changes are published.
pub enum Publisher {
    /// Nodes' admin endpoints, round robin.
    Admin {
        /// hyper-util's pooled HTTP/1.1 client (keep-alive).
        client: Box<Client<HttpConnector, Full<Bytes>>>,
        /// `host:port` of each admin endpoint.
        targets: Vec<String>,
        /// Bearer token for `POST /admin/*`.
        token: Option<String>,
        /// The next target.
        next: AtomicUsize,
    },
    /// The bus itself.
    Bus(Arc<dyn ServerEventBus>),
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Publisher::Admin { targets, .. } => f.debug_struct("Admin").field("targets", targets).finish(),
            Publisher::Bus(bus) => f.debug_struct("Bus").field("backend", &bus.backend()).finish(),
        }
    }
}

impl Publisher {
    /// The publisher the command line asks for: `--bus`, else `--admin` (default
    /// 127.0.0.1:9090).
    pub async fn connect(args: &Args) -> Result<Publisher, LoadtestError> {
        if let Some(url) = &args.bus {
            return Ok(Publisher::Bus(connect_bus(url, &format!("loadtest-{}", std::process::id())).await?));
        }
        let targets = if args.admins.is_empty() { vec!["127.0.0.1:9090".to_owned()] } else { args.admins.clone() };
        Ok(Publisher::Admin {
            client: Box::new(Client::builder(TokioExecutor::new()).build_http()),
            targets,
            token: args.admin_token.clone(),
            next: AtomicUsize::new(0),
        })
    }

    /// `"admin"` or `"bus"`, and the targets, for the report.
    pub fn describe(&self) -> (&'static str, Vec<String>) {
        match self {
            Publisher::Admin { targets, .. } => ("admin", targets.clone()),
            Publisher::Bus(bus) => ("bus", vec![bus.backend().to_owned()]),
        }
    }

    /// Publish one change.
    pub async fn publish(&self, change: &PlannedChange) -> Result<Accepted, String> {
        let publish = async {
            match self {
                Publisher::Admin { client, targets, token, next } => {
                    let target = &targets[next.fetch_add(1, Ordering::Relaxed) % targets.len()];
                    admin_notify(client, target, token.as_deref(), change).await
                }
                Publisher::Bus(bus) => {
                    let envelope = bus.publish(bus_change(change)).await.map_err(|e| e.to_string())?;
                    Ok(Accepted { epoch: Some(envelope.epoch), version: envelope.version })
                }
            }
        };
        tokio::time::timeout(PUBLISH_TIMEOUT, publish)
            .await
            .map_err(|_| format!("timed out after {PUBLISH_TIMEOUT:?}"))?
    }
}

fn bus_change(change: &PlannedChange) -> Change {
    let c = match change.key {
        Key::Tools => Change::list(EventKind::ToolsListChanged),
        Key::Prompts => Change::list(EventKind::PromptsListChanged),
        Key::Resources => Change::list(EventKind::ResourcesListChanged),
        Key::Uri(n) => Change::resource(uri(n)),
    };
    match change.scope {
        Some(t) => c.in_scope(tenant_name(t)),
        None => c,
    }
}

/// The admin endpoint's request body for `change`.
pub fn notify_body(change: &PlannedChange) -> Value {
    let mut body = match change.key {
        Key::Tools => json!({"kind": "tools"}),
        Key::Prompts => json!({"kind": "prompts"}),
        Key::Resources => json!({"kind": "resources"}),
        Key::Uri(n) => json!({"kind": "resource", "uri": uri(n)}),
    };
    if let Some(t) = change.scope {
        body["scope"] = json!(tenant_name(t));
    }
    body
}

async fn admin_notify(
    client: &Client<HttpConnector, Full<Bytes>>,
    target: &str,
    token: Option<&str>,
    change: &PlannedChange,
) -> Result<Accepted, String> {
    let mut request =
        Request::post(format!("http://{target}/admin/notify")).header(header::CONTENT_TYPE, "application/json");
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = request.body(Full::new(Bytes::from(notify_body(change).to_string()))).map_err(|e| e.to_string())?;
    let response = client.request(request).await.map_err(|e| format!("{target}: {e}"))?;
    let status = response.status();
    let body = response.into_body().collect().await.map_err(|e| format!("{target}: {e}"))?.to_bytes();
    let reply: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    match reply["version"].as_u64() {
        Some(version) if status.is_success() => Ok(Accepted { epoch: reply["epoch"].as_u64(), version }),
        _ => Err(format!("{target} answered {status}: {}", String::from_utf8_lossy(&body))),
    }
}

/// The load shape of the event phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// `n` events, one every `interval` (each waits for the previous to be accepted).
    Events {
        /// Events.
        n: usize,
        /// Pause between them.
        interval: Duration,
    },
    /// `rate` events per second for `duration`.
    Rate {
        /// Events per second.
        rate: f64,
        /// How long.
        duration: Duration,
    },
    /// `n` events at once (bounded by the publish concurrency).
    Burst {
        /// Events.
        n: usize,
    },
}

impl Shape {
    /// The shape the command line asks for.
    pub fn from_args(args: &Args) -> Result<Shape, LoadtestError> {
        match (args.rate, args.duration, args.burst) {
            (Some(rate), Some(secs), None) if rate > 0.0 && secs > 0.0 => {
                Ok(Shape::Rate { rate, duration: Duration::from_secs_f64(secs) })
            }
            (Some(_), _, _) => Err(LoadtestError::Usage("--rate and --duration must both be > 0".into())),
            (None, _, Some(n)) => Ok(Shape::Burst { n }),
            (None, _, None) => Ok(Shape::Events { n: args.events, interval: Duration::from_millis(args.interval_ms) }),
        }
    }

    /// Publishes this shape makes.
    pub fn total(&self) -> u64 {
        match *self {
            Shape::Events { n, .. } | Shape::Burst { n } => n as u64,
            Shape::Rate { rate, duration } => (rate * duration.as_secs_f64()).round() as u64,
        }
    }
}

/// What the event phase published.
#[derive(Debug)]
pub struct PublishOutcome {
    /// Accepted publishes, by sequence number.
    pub records: Vec<PublishRecord>,
    /// Failed publishes.
    pub failed: u64,
    /// The first few failures' messages.
    pub errors: Vec<String>,
    /// Sent → accepted, µs.
    pub latency: Histogram<u64>,
    /// Start and end of the phase (µs since the Unix epoch).
    pub started_us: u64,
    /// End of the phase.
    pub ended_us: u64,
}

/// Publish `shape`'s changes (drawn from `plan`), telling `accepted` of each record at once.
pub async fn run_shape(
    shape: Shape,
    publisher: Arc<Publisher>,
    plan: &Plan,
    clock: Clock,
    concurrency: usize,
    accepted: mpsc::UnboundedSender<PublishRecord>,
) -> PublishOutcome {
    let started_us = clock.now_us();
    let gate = Arc::new(Semaphore::new(if matches!(shape, Shape::Events { .. }) { 1 } else { concurrency.max(1) }));
    let mut tick = match shape {
        Shape::Rate { rate, .. } => Some(tokio::time::interval(Duration::from_secs_f64(1.0 / rate))),
        _ => None,
    };
    let mut running = JoinSet::new();
    for seq in 0..shape.total() {
        if let Some(tick) = &mut tick {
            tick.tick().await;
        }
        // The gate is never closed.
        let Ok(permit) = gate.clone().acquire_owned().await else { break };
        let (publisher, change, accepted) = (publisher.clone(), plan.change(seq), accepted.clone());
        running.spawn(async move {
            let sent_us = clock.now_us();
            let result = publisher.publish(&change).await;
            let accepted_us = clock.now_us();
            drop(permit);
            let outcome = result.map(|a| PublishRecord {
                seq,
                key: change.key,
                scope: change.scope,
                epoch: a.epoch,
                version: a.version,
                sent_us,
                accepted_us,
            });
            if let Ok(record) = &outcome {
                let _ = accepted.send(*record);
            }
            outcome
        });
        if let Shape::Events { interval, .. } = shape {
            // Sequential: wait for this publish, then pause.
            let _ = gate.acquire().await;
            tokio::time::sleep(interval).await;
        }
    }
    let mut outcome = PublishOutcome {
        records: Vec::new(),
        failed: 0,
        errors: Vec::new(),
        latency: new_histogram(),
        started_us,
        ended_us: 0,
    };
    while let Some(done) = running.join_next().await {
        match done {
            Ok(Ok(r)) => {
                record(&mut outcome.latency, r.accepted_us.saturating_sub(r.sent_us));
                outcome.records.push(r);
            }
            Ok(Err(e)) => {
                outcome.failed += 1;
                if outcome.errors.len() < 5 {
                    outcome.errors.push(e);
                }
            }
            Err(e) => outcome.errors.push(format!("publish task failed: {e}")),
        }
    }
    outcome.records.sort_by_key(|r| r.seq);
    outcome.ended_us = clock.now_us();
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn shapes_and_admin_bodies_follow_the_command_line() {
        let args = Args::parse_from(["lt", "--rate", "50", "--duration", "2"]);
        assert_eq!(Shape::from_args(&args).unwrap().total(), 100);
        let args = Args::parse_from(["lt", "--burst", "7"]);
        assert_eq!(Shape::from_args(&args).unwrap(), Shape::Burst { n: 7 });
        let args = Args::parse_from(["lt", "--events", "3", "--interval-ms", "5"]);
        assert_eq!(Shape::from_args(&args).unwrap(), Shape::Events { n: 3, interval: Duration::from_millis(5) });
        let body = notify_body(&PlannedChange { key: Key::Uri(4), scope: Some(1) });
        assert_eq!(body, json!({"kind": "resource", "uri": "loadtest://item/4", "scope": "tenant-1"}));
    }
}
